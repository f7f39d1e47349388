#!/usr/bin/env python3
"""Consistency checks of deploy/docker/Dockerfile{,.cuda} (Docker cannot run on
the development machine, so the images are not built here). Checks that each:
builds through scripts/bootstrap (the same dependency list as developers) and
the `rlvr` CMake target whose binary is services/rlvr; runs as the non-root
UID the Kubernetes manifests use (runAsUser); exposes the container ports the
manifests declare; copies only paths that exist; and that the CUDA variant
configures with -DRLVR_WITH_CUDA=ON and downloads the LibTorch release whose
version is that of Debian's libtorch-dev, which scripts/bootstrap installs and
the code is built and tested against (an API or ABI difference would show up
only in the image). Stdlib only.
Usage: check-dockerfiles.py [DOCKERFILE...]
"""
import glob
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def manifest_facts():
    uids, ports = set(), set()
    for path in glob.glob(os.path.join(ROOT, "deploy/k8s/base/*.yaml")):
        text = open(path).read()
        uids.update(re.findall(r"runAsUser:\s*(\d+)", text))
        ports.update(re.findall(r"containerPort:\s*(\d+)", text))
    return uids, ports


def debian_libtorch_version():
    """Upstream version of Debian's libtorch-dev (installed, else apt's candidate)."""
    version = ""
    try:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libtorch-dev"],
                           capture_output=True, text=True, timeout=30)
        version = r.stdout.strip() if r.returncode == 0 else ""
        if not version:
            r = subprocess.run(["apt-cache", "policy", "libtorch-dev"], capture_output=True,
                               text=True, timeout=30)
            m = re.search(r"Candidate:\s*(\S+)", r.stdout)
            version = m.group(1) if m and m.group(1) != "(none)" else ""
    except OSError:
        return ""
    m = re.match(r"(?:\d+:)?(\d+(?:\.\d+)+)", version)
    return m.group(1) if m else ""


def check(path, uids, ports):
    problems = []
    text = open(path).read()
    name = os.path.relpath(path, ROOT)
    joined = re.sub(r"\\\n", " ", text)
    instructions = [l.strip() for l in joined.split("\n") if l.strip() and not l.strip().startswith("#")]
    stages = [l for l in instructions if l.upper().startswith("FROM ")]
    if len(stages) < 2:
        problems.append("expected a multi-stage build (build + runtime)")
    if not any(re.match(r"FROM debian:12", s) for s in stages):
        problems.append("the build stage must be debian:12 (the bootstrap's distribution)")
    if "scripts/bootstrap" not in joined:
        problems.append("the build stage does not run scripts/bootstrap")
    if not re.search(r"--target rlvr\b", joined):
        problems.append("the build does not build the `rlvr` target")
    if "/build/services/rlvr" not in joined:
        problems.append("the binary is not taken from /build/services/rlvr")
    if not re.search(r"add_executable\(rlvr\b", open(os.path.join(ROOT, "services/CMakeLists.txt")).read()):
        problems.append("services/CMakeLists.txt no longer defines add_executable(rlvr)")
    users = [l.split()[1] for l in instructions if l.upper().startswith("USER ")]
    if not users:
        problems.append("no USER: the runtime stage would run as root")
    else:
        uid = users[-1].split(":")[0]
        if uid in ("0", "root") or (uids and uid not in uids):
            problems.append(f"USER {users[-1]} does not match the manifests' runAsUser {sorted(uids)}")
    exposed = set()
    for l in instructions:
        if l.upper().startswith("EXPOSE "):
            exposed.update(p.split("/")[0] for p in l.split()[1:])
    if not ports <= exposed:
        problems.append(f"EXPOSE lacks container ports of the manifests: {sorted(ports - exposed)}")
    for l in instructions:
        m = re.match(r"COPY\s+(?!--from)(.*)", l, re.I)
        if m:
            srcs = m.group(1).split()[:-1]
            for s in srcs:
                if s != "." and not glob.glob(os.path.join(ROOT, s)):
                    problems.append(f"COPY source {s} does not exist in the repository")
    entry = [l for l in instructions if l.upper().startswith("ENTRYPOINT")]
    if not entry or "/usr/local/bin/rlvr" not in entry[-1]:
        problems.append("ENTRYPOINT must be /usr/local/bin/rlvr (the manifests pass subcommands as args)")
    if name.endswith(".cuda"):
        if "-DRLVR_WITH_CUDA=ON" not in joined:
            problems.append("the CUDA image must configure with -DRLVR_WITH_CUDA=ON")
        if "nccl" not in joined.lower():
            problems.append("the CUDA image does not install NCCL")
        m = re.search(r"libtorch-[a-z0-9-]*?-(\d+\.\d+\.\d+)(?:%2B|\+)", joined)
        want = debian_libtorch_version()
        if not m:
            problems.append("no LibTorch download URL (libtorch-...-X.Y.Z+cuNNN.zip) found")
        elif not want:
            problems.append("cannot tell the version of Debian's libtorch-dev (dpkg-query / apt-cache)")
        elif m.group(1) != want:
            problems.append(f"downloads LibTorch {m.group(1)}, but the code is built and tested against "
                            f"Debian's libtorch-dev {want} (scripts/bootstrap): use the {want} CUDA build")
    else:
        if "-DRLVR_WITH_CUDA=OFF" not in joined:
            problems.append("the CPU image must configure with -DRLVR_WITH_CUDA=OFF")
    return [f"{name}: {p}" for p in problems]


def main():
    files = sys.argv[1:] or sorted(glob.glob(os.path.join(ROOT, "deploy/docker/Dockerfile*")))
    files = [f for f in files if not f.endswith(".dockerignore")]
    uids, ports = manifest_facts()
    problems = []
    for f in files:
        problems += check(f, uids, ports)
    for p in problems:
        print(f"FAIL {p}")
    if problems:
        print(f"check-dockerfiles: {len(problems)} problem(s)")
        return 1
    print(f"check-dockerfiles: {len(files)} Dockerfiles consistent with scripts/bootstrap, "
          f"services/CMakeLists.txt and the manifests (UID {sorted(uids)}, ports {sorted(ports)}); "
          "not built here (no Docker)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
