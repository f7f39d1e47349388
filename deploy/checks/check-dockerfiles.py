#!/usr/bin/env python3
"""Checks of deploy/docker/Dockerfile{,.cuda} that need no Docker (the
development machine has none, so the images are not built here).

Each Dockerfile:
  - builds through scripts/bootstrap (the developers' dependency list) and the
    `rlvr` CMake target whose binary is services/rlvr; runs as the non-root UID
    the Kubernetes manifests use; exposes the container ports they declare;
    copies only paths that exist;
  - derives its runtime packages from the binary's libraries, and that step
    fails loudly: it is run here, under /bin/sh as Docker runs RUN lines, on
    two probe binaries (a library no package owns; a library ldd cannot
    find), and must exit non-zero naming the library;
  - installs what the binary links: the packages owning the libraries `ldd`
    resolves for build/services/rlvr (RLVR_BINARY, or --binary), with their
    Depends closure, must be among what the runtime stage installs (packages
    it names, their dependencies, and the derived list, computed by running
    the Dockerfile's own derivation step on that binary).
The CUDA variant also: configures with -DRLVR_WITH_CUDA=ON and installs NCCL;
downloads the LibTorch line the GPU kit runs (GPU_KIT_LIBTORCH, CUDA
GPU_KIT_CUDA) for the CUDA version it installs; and that CUDA version
supports the build image's GCC as host compiler. For it, LibTorch's own
libraries (libtorch*, libc10*) and what only they need come from the
LibTorch archive, not from packages.
Stdlib only (plus ldd, readelf, dpkg-query and a C compiler).
Usage: check-dockerfiles.py [--binary PATH] [DOCKERFILE...]
"""
import functools
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# The LibTorch line the GPU kit builds and runs rlvr against (scripts/gpu-check
# on the lent GPU machine: PyTorch 2.11.0+cu130, docs/trainer.md).
GPU_KIT_LIBTORCH = "2.11"
GPU_KIT_CUDA = "13.0"
# Newest GCC each CUDA release supports as host compiler (NVIDIA's CUDA
# Installation Guide for Linux, "System Requirements" and host compiler
# support policy of each release).
CUDA_MAX_GCC = {
    (11, 6): 11, (11, 7): 11, (11, 8): 11,
    (12, 0): 12, (12, 1): 12, (12, 2): 12, (12, 3): 12,
    (12, 4): 13, (12, 5): 13, (12, 6): 13, (12, 8): 14, (12, 9): 14,
    (13, 0): 15, (13, 1): 15,
}
# The system GCC of base images.
DISTRO_GCC = {"debian:11": 10, "debian:12": 12, "debian:13": 14,
              "ubuntu:22.04": 11, "ubuntu22.04": 11, "ubuntu:24.04": 13, "ubuntu24.04": 13}


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)


def manifest_facts():
    uids, ports = set(), set()
    for path in glob.glob(os.path.join(ROOT, "deploy/k8s/base/*.yaml")):
        text = open(path).read()
        uids.update(re.findall(r"runAsUser:\s*(\d+)", text))
        ports.update(re.findall(r"containerPort:\s*(\d+)", text))
    return uids, ports


# ---- the binary's libraries and their packages --------------------------------

@functools.lru_cache(maxsize=None)
def ldd_map(binary):
    """soname -> resolved path (None when ldd cannot find it), whole closure."""
    r = run(["ldd", binary])
    if r.returncode != 0:
        raise RuntimeError(f"ldd {binary}: {r.stderr.strip() or r.stdout.strip()}")
    out = {}
    for line in r.stdout.splitlines():
        m = re.match(r"\s*(\S+)\s+=>\s+(not found|\S+)", line)
        if m:
            out[m.group(1)] = None if m.group(2) == "not found" else m.group(2)
        else:
            m = re.match(r"\s*(/\S+)\s+\(", line)
            if m:
                out[os.path.basename(m.group(1))] = m.group(1)
    return out


@functools.lru_cache(maxsize=None)
def needed(path):
    r = run(["readelf", "-d", path])
    return tuple(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", r.stdout))


def owners(paths):
    """{path: package} for every path dpkg knows (one dpkg-query call)."""
    out = {}
    if not paths:
        return out
    r = run(["dpkg-query", "-S", *sorted(set(paths))])
    for line in r.stdout.splitlines():
        if line.startswith("diversion ") or ": " not in line:
            continue
        pkg, path = line.split(": ", 1)
        out[path] = pkg.split(",")[0].split(":")[0].strip()
    return out


# The libraries of a CUDA toolkit and NCCL. A build on a machine whose CUDA
# toolkit is not installed from packages (a wheel's, under /usr/local/cuda)
# links them with RLVR_WITH_CUDA=AUTO; the CPU image builds with it OFF and
# the CUDA image installs them from NVIDIA's repository, so where no local
# package owns them they are left out of the comparison (and out of the
# Dockerfile's derivation step run here, through a filtering `ldd`).
CUDA_LIB = re.compile(r"^lib(cuda|cudart|nccl|cublas|cublasLt|nvrtc|nvrtc-builtins|nvJitLink|cusparse|"
                      r"cusparseLt|cufft|curand|cusolver|nvToolsExt|cupti|cufile)\b")


def lib_packages(binary, skip=lambda soname: False):
    """({package: [libraries]}, [unowned], [left out]) of the libraries
    `binary` loads. Libraries for which skip(soname) is true are left out
    with what only they need (their dependencies are not followed)."""
    paths = ldd_map(binary)
    seen, todo, found, unowned = set(), list(needed(binary)), [], []
    paths = dict(paths)
    while todo:
        so = todo.pop()
        if so in seen or skip(so):
            continue
        seen.add(so)
        path = paths.get(so)
        if path is None:
            unowned.append(f"{so} (not found by ldd)")
            continue
        found.append((so, path))
        todo.extend(needed(path))
    # The dynamic loader is needed without being listed as NEEDED.
    found += [(so, p) for so, p in paths.items() if so.startswith("ld-linux") and p]
    own = owners([p for _, p in found] + [os.path.realpath(p) for _, p in found])
    pkgs, left_out = {}, []
    for so, path in found:
        pkg = own.get(path) or own.get(os.path.realpath(path))
        if pkg is not None:
            pkgs.setdefault(pkg, []).append(so)
        elif CUDA_LIB.match(so):
            left_out.append(so)
        else:
            unowned.append(f"{so} ({path})")
    return pkgs, unowned, left_out


def depends_closure(packages):
    """Installed packages reached through Depends/Pre-Depends (as apt installs
    them), from dpkg's status of this machine (Debian 12, as the images)."""
    installed = {}
    r = run(["dpkg-query", "-W", "-f=${Package}\t${Status}\t${Provides}\t${Pre-Depends}, ${Depends}\n"])
    provides = {}
    for line in r.stdout.splitlines():
        name, status, prov, deps = (line.split("\t") + ["", "", ""])[:4]
        if "install ok installed" not in status:
            continue
        installed[name] = deps
        for p in prov.split(","):
            p = p.strip().split(" ")[0]
            if p:
                provides.setdefault(p, []).append(name)
    out, todo = set(), [p for p in packages]
    while todo:
        p = todo.pop()
        if p in out:
            continue
        out.add(p)
        for group in installed.get(p, "").split(","):
            for alt in group.split("|"):
                name = alt.strip().split(" ")[0].split(":")[0]
                if not name:
                    continue
                for real in ([name] if name in installed else provides.get(name, [])):
                    if real not in out:
                        todo.append(real)
    return out


# ---- Dockerfile structure --------------------------------------------------------

def parse(path):
    text = open(path).read()
    joined = re.sub(r"\\\n", " ", text)
    lines = [l.strip() for l in joined.split("\n") if l.strip() and not l.strip().startswith("#")]
    args = {}
    for l in lines:
        m = re.match(r"ARG\s+(\w+)=(\S+)", l)
        if m and m.group(1) not in args:
            args[m.group(1)] = m.group(2)
    stages, cur = [], None
    for l in lines:
        if l.upper().startswith("FROM "):
            cur = {"from": l.split()[1], "lines": []}
            stages.append(cur)
        elif cur is not None:
            cur["lines"].append(l)
    return text, joined, lines, args, stages


def subst(s, args):
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args.get(m.group(1) or m.group(2), m.group(0)), s)


def apt_literals(stage, args):
    """Package names the stage's `apt-get install` commands name literally."""
    pkgs = set()
    for l in stage["lines"]:
        if not l.upper().startswith("RUN "):
            continue
        for seg in re.split(r"&&|;|\|\|", subst(l[4:], args)):
            m = re.search(r"apt-get\s+install\s+(.*)", seg)
            if not m:
                continue
            for tok in m.group(1).split():
                if tok.startswith("-") or "$" in tok:
                    continue
                pkgs.add(tok.split("=")[0])
    return pkgs


def derivation(stages):
    """The build stage's RUN that derives runtime packages, and the file it writes."""
    for st in stages[:-1]:
        for l in st["lines"]:
            if l.upper().startswith("RUN ") and ("ldd" in l or "runtime-packages.sh" in l):
                m = re.search(r"(/out/[\w./-]+\.txt)", l)
                return l[4:], (m.group(1) if m else None)
    return None, None


def run_derivation(cmd, binary, work, leave_out=()):
    """Runs the Dockerfile's derivation step as Docker would (/bin/sh -c, in
    WORKDIR /src = the repository root), on `binary`; /out is `work`/out.
    Libraries named in `leave_out` are dropped from what `ldd` says."""
    out = os.path.join(work, "out")
    os.makedirs(out, exist_ok=True)
    shell = cmd.replace("/out/usr/local/bin/rlvr", binary).replace("/out/", out + "/")
    env = dict(os.environ)
    if leave_out:
        bindir = os.path.join(work, "bin")
        os.makedirs(bindir, exist_ok=True)
        real = shutil.which("ldd")
        pattern = "|".join(re.escape(s) for s in leave_out)
        with open(os.path.join(bindir, "ldd"), "w") as f:
            f.write(f"#!/bin/sh\n{real} \"$@\" | grep -Ev '^[[:space:]]*({pattern})[[:space:]]'\n")
        os.chmod(os.path.join(bindir, "ldd"), 0o755)
        env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    try:
        r = subprocess.run(["/bin/sh", "-c", shell], capture_output=True, text=True, cwd=ROOT,
                           timeout=600, env=env)
    except subprocess.TimeoutExpired as e:
        r = subprocess.CompletedProcess(e.cmd, 124, "", "the step did not finish within 600 s")
    return r, out


def probes(work):
    """Two probe binaries: one linking a library no package owns, one linking
    a library that is gone (ldd: not found)."""
    d = os.path.join(work, "probe")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "lib.c"), "w") as f:
        f.write("int rlvr_probe(void) { return 0; }\n")
    with open(os.path.join(d, "main.c"), "w") as f:
        f.write("int rlvr_probe(void);\nint main(void) { return rlvr_probe(); }\n")
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise RuntimeError("no C compiler (cc) to build the probe binaries")
    out = {}
    for name in ("unowned", "gone"):
        lib = os.path.join(d, name)
        os.makedirs(lib, exist_ok=True)
        r1 = run([cc, "-shared", "-fPIC", "-o", os.path.join(lib, f"librlvrprobe{name}.so"),
                  os.path.join(d, "lib.c")])
        r2 = run([cc, os.path.join(d, "main.c"), f"-L{lib}", f"-lrlvrprobe{name}",
                  f"-Wl,-rpath,{lib}", "-o", os.path.join(d, f"probe-{name}")])
        if r1.returncode or r2.returncode:
            raise RuntimeError(f"cannot build the probe binary: {r1.stderr}{r2.stderr}")
        out[name] = (os.path.join(d, f"probe-{name}"), f"librlvrprobe{name}.so")
    os.remove(os.path.join(d, "gone", "librlvrprobegone.so"))
    return out


# ---- the checks ------------------------------------------------------------------

def check(path, uids, ports, binary, work):
    problems = []
    text, joined, instructions, args, stages = parse(path)
    name = os.path.relpath(path, ROOT)
    cuda = name.endswith(".cuda")
    if len(stages) < 2:
        problems.append("expected a multi-stage build (build + runtime)")
        return [f"{name}: {p}" for p in problems]
    build_from = stages[0]["from"]
    if not re.match(r"debian:12", build_from):
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
            for s in m.group(1).split()[:-1]:
                if s != "." and not glob.glob(os.path.join(ROOT, s)):
                    problems.append(f"COPY source {s} does not exist in the repository")
    entry = [l for l in instructions if l.upper().startswith("ENTRYPOINT")]
    if not entry or "/usr/local/bin/rlvr" not in entry[-1]:
        problems.append("ENTRYPOINT must be /usr/local/bin/rlvr (the manifests pass subcommands as args)")

    if cuda:
        if "-DRLVR_WITH_CUDA=ON" not in joined:
            problems.append("the CUDA image must configure with -DRLVR_WITH_CUDA=ON")
        if "nccl" not in joined.lower():
            problems.append("the CUDA image does not install NCCL")
        expanded = subst(joined, args)
        m = re.search(r"libtorch-[a-z0-9-]*?-(\d+)\.(\d+)\.\d+(?:%2B|\+)cu(\d+)(\d)\.zip", expanded)
        toolkit = re.search(r"cuda-toolkit-(\d+)-(\d+)", expanded)
        if not m:
            problems.append("no LibTorch download URL (libtorch-...-X.Y.Z+cuNNN.zip) found")
        else:
            line = f"{m.group(1)}.{m.group(2)}"
            torch_cuda = f"{int(m.group(3))}.{m.group(4)}"
            if line != GPU_KIT_LIBTORCH or torch_cuda != GPU_KIT_CUDA:
                problems.append(f"downloads LibTorch {line} for CUDA {torch_cuda}, but the GPU kit runs rlvr on "
                                f"LibTorch {GPU_KIT_LIBTORCH} for CUDA {GPU_KIT_CUDA} (scripts/gpu-check): build "
                                "the image on the line that is built and tested on a GPU")
            if toolkit and f"{toolkit.group(1)}.{toolkit.group(2)}" != torch_cuda:
                problems.append(f"installs CUDA {toolkit.group(1)}.{toolkit.group(2)} but LibTorch built for CUDA {torch_cuda}")
        if not toolkit:
            problems.append("no cuda-toolkit-X-Y package installed in the build stage")
        else:
            ver = (int(toolkit.group(1)), int(toolkit.group(2)))
            gcc = next((g for k, g in DISTRO_GCC.items() if k in build_from), None)
            top = CUDA_MAX_GCC.get(ver)
            if gcc is None:
                problems.append(f"unknown GCC of the build image {build_from}")
            elif top is None:
                problems.append(f"CUDA {ver[0]}.{ver[1]}: host compiler support unknown to this check")
            elif gcc > top:
                problems.append(f"CUDA {ver[0]}.{ver[1]} supports host compilers up to GCC {top}, but "
                                f"{build_from} has GCC {gcc}: nvcc refuses it")
    elif "-DRLVR_WITH_CUDA=OFF" not in joined:
        problems.append("the CPU image must configure with -DRLVR_WITH_CUDA=OFF")

    # Runtime packages: derived from the binary, loudly.
    cmd, derived_file = derivation(stages)
    runtime = stages[-1]
    literal = apt_literals(runtime, args)
    installs_derived = bool(derived_file) and any(
        os.path.basename(derived_file) in l and ("xargs" in l or "cat " in l) for l in runtime["lines"])
    if cmd is None:
        problems.append("hard-codes its runtime packages: no build-stage step derives them from the "
                        "libraries the binary loads (ldd), so a library added to the build is missing "
                        "from the image and the container exits at start")
    else:
        cmd = subst(cmd, args)
        if not installs_derived:
            problems.append(f"the runtime stage does not install the derived list {derived_file}")
        for kind, (probe, lib) in probes(work).items():
            r, _ = run_derivation(cmd, probe, os.path.join(work, f"d-{kind}"))
            said = r.stdout + r.stderr
            if r.returncode == 0:
                problems.append(f"its runtime-package step exits 0 when a library has no package "
                                f"({lib}, {'not found by ldd' if kind == 'gone' else 'owned by no package'}) "
                                "under /bin/sh: the image would lack it and the container exit at start; "
                                "make the step fail, naming the library")
            elif lib not in said:
                problems.append(f"its runtime-package step fails on {lib} without naming it: {said.strip()[-300:]}")
    if binary is None:
        problems.append("no rlvr binary to compare with (build the rlvr target: RLVR_BINARY or --binary)")
        return [f"{name}: {p}" for p in problems]
    installed = set(literal)
    provided_by_zip = (lambda so: re.match(r"lib(torch|c10)", so) is not None) if cuda else (lambda so: False)
    pkgs, unowned, left_out = lib_packages(binary, provided_by_zip)
    if cmd is not None and installs_derived:
        r, out = run_derivation(cmd, binary, os.path.join(work, "d-real"), left_out)
        if r.returncode != 0:
            problems.append(f"its runtime-package step fails on {os.path.relpath(binary, ROOT)}: "
                            f"{(r.stdout + r.stderr).strip()[-500:]}")
        else:
            f = os.path.join(out, os.path.basename(derived_file))
            installed |= {l.strip() for l in open(f) if l.strip()}
    installed = depends_closure(installed)
    for u in unowned:
        problems.append(f"{os.path.relpath(binary, ROOT)} loads {u}, which no package provides")
    missing = {p: libs for p, libs in pkgs.items() if p not in installed}
    if missing:
        problems.append("the runtime stage does not install what the binary links: " + "; ".join(
            f"{p} ({', '.join(sorted(libs))})" for p, libs in sorted(missing.items())))
    return [f"{name}: {p}" for p in problems], len(pkgs)


def main():
    argv = sys.argv[1:]
    binary = os.environ.get("RLVR_BINARY") or os.path.join(ROOT, "build", "services", "rlvr")
    if argv[:1] == ["--binary"]:
        binary, argv = argv[1], argv[2:]
    if not os.path.exists(binary):
        binary = None
    files = argv or sorted(glob.glob(os.path.join(ROOT, "deploy/docker/Dockerfile*")))
    files = [f for f in files if not f.endswith(".dockerignore") and not f.endswith(".sh")]
    uids, ports = manifest_facts()
    problems, counts = [], []
    work = tempfile.mkdtemp(prefix="rlvr-dockerfiles-")
    try:
        for f in files:
            res = check(f, uids, ports, binary, work)
            if isinstance(res, tuple):
                problems += res[0]
                counts.append(res[1])
            else:
                problems += res
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for p in problems:
        print(f"FAIL {p}")
    if problems:
        print(f"check-dockerfiles: {len(problems)} problem(s)")
        return 1
    print(f"check-dockerfiles: {len(files)} Dockerfiles consistent with scripts/bootstrap, "
          f"services/CMakeLists.txt and the manifests (UID {sorted(uids)}, ports {sorted(ports)}); "
          f"their runtime stages install the packages of every library {os.path.relpath(binary, ROOT)} "
          f"links ({', '.join(map(str, counts))} packages), and their derivation step fails on a library "
          "without a package; not built here (no Docker)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
