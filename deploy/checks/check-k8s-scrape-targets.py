#!/usr/bin/env python3
"""Which pods deploy/prometheus/prometheus-k8s.yml scrapes, decided by a real
Prometheus (Debian's `prometheus`) from the targets Kubernetes service
discovery would hand it.

Prometheus' Kubernetes SD, role `pod`, discovers every pod the API server
still lists, whatever its phase: a Job's pod that Succeeded (or Failed) stays
a target until the pod object is deleted, with `__meta_kubernetes_pod_phase`
telling its phase. Debian's Prometheus is built without Kubernetes SD, so
this check builds those discovered targets itself, from the pod templates of
the rendered overlays (cpu-small and gpu): one target per declared port of
every container and init container, with the pod role's meta labels (labels,
annotations, phase, readiness, container name/port/init). It hands them to
Prometheus through file_sd in place of `kubernetes_sd_configs` (every
relabelling rule of the file is kept as is), starts Prometheus, and reads
/api/v1/targets: which targets it keeps, with which job and namespace.

Expected, for every pod template of each overlay, in each phase:
  - Pending (init containers: the learner's pretraining) and Running: rank 0
    and the actors are scraped once each, job rlvr-learner / rlvr-actor,
    namespace and pod set; learner ranks > 0 never (they serve no /metrics);
  - Succeeded and Failed: never (a completed learner Job's pod would
    otherwise be `up == 0` forever: RlvrLearnerDown after every normal
    completion, RlvrLearnerAbsent never).
Usage: check-k8s-scrape-targets.py [PROMETHEUS_K8S_YML]
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
DEPLOY = os.path.dirname(HERE)
OVERLAYS = ["overlays/cpu-small", "overlays/gpu"]
PHASES = ["Pending", "Running", "Succeeded", "Failed"]


def fail(msg):
    print(f"FAIL {msg}")
    sys.exit(1)


def render(overlay):
    r = subprocess.run(["kubectl", "kustomize", os.path.join(DEPLOY, "k8s", overlay)],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail(f"kubectl kustomize deploy/k8s/{overlay}:\n{r.stderr}")
    js = ("const YAML=require('yaml');let t='';process.stdin.on('data',d=>t+=d);"
          "process.stdin.on('end',()=>console.log(JSON.stringify("
          "YAML.parseAllDocuments(t,{version:'1.1'}).map(d=>d.toJS()).filter(Boolean))));")
    r2 = subprocess.run(["node", "-e", js], input=r.stdout, capture_output=True, text=True,
                        timeout=60, cwd=HERE)
    if r2.returncode != 0:
        fail(f"cannot parse the rendered deploy/k8s/{overlay}:\n{r2.stderr}")
    return json.loads(r2.stdout)


def sanitize(name):
    """Label name as Kubernetes SD writes it (every invalid character -> _)."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", name)


def pod_templates(objs):
    """(controller kind, name, pod template, role) of every workload."""
    out = []
    for o in objs:
        kind = o.get("kind")
        if kind in ("Job", "Deployment", "StatefulSet"):
            tpl = o["spec"]["template"]
            labels = tpl.get("metadata", {}).get("labels", {})
            role = labels.get("rlvr.dev/learner-role") or labels.get("app.kubernetes.io/component", "")
            out.append((kind, o["metadata"]["name"], tpl, role))
    return out


def discovered(namespace, pod_name, ip, tpl, phase, ready, controller):
    """The target groups Kubernetes SD (role pod) gives for one pod."""
    meta = tpl.get("metadata", {})
    spec = tpl["spec"]
    common = {
        "__meta_kubernetes_namespace": namespace,
        "__meta_kubernetes_pod_name": pod_name,
        "__meta_kubernetes_pod_ip": ip,
        "__meta_kubernetes_pod_phase": phase,
        "__meta_kubernetes_pod_ready": "true" if ready else "false",
        "__meta_kubernetes_pod_node_name": "node-1",
        "__meta_kubernetes_pod_host_ip": "10.0.0.1",
        "__meta_kubernetes_pod_uid": f"uid-{pod_name}",
        "__meta_kubernetes_pod_controller_kind": controller[0],
        "__meta_kubernetes_pod_controller_name": controller[1],
    }
    for k, v in meta.get("labels", {}).items():
        common[f"__meta_kubernetes_pod_label_{sanitize(k)}"] = str(v)
        common[f"__meta_kubernetes_pod_labelpresent_{sanitize(k)}"] = "true"
    for k, v in meta.get("annotations", {}).items():
        common[f"__meta_kubernetes_pod_annotation_{sanitize(k)}"] = str(v)
        common[f"__meta_kubernetes_pod_annotationpresent_{sanitize(k)}"] = "true"
    groups = []
    for init, containers in ((True, spec.get("initContainers", [])), (False, spec.get("containers", []))):
        for c in containers:
            base = dict(common)
            base["__meta_kubernetes_pod_container_name"] = c["name"]
            base["__meta_kubernetes_pod_container_init"] = "true" if init else "false"
            base["__meta_kubernetes_pod_container_image"] = c.get("image", "")
            ports = c.get("ports", [])
            if not ports:  # one port-free target per container without ports
                groups.append({"targets": [ip], "labels": base})
            for p in ports:
                labels = dict(base)
                labels["__meta_kubernetes_pod_container_port_name"] = p.get("name", "")
                labels["__meta_kubernetes_pod_container_port_number"] = str(p["containerPort"])
                labels["__meta_kubernetes_pod_container_port_protocol"] = p.get("protocol", "TCP")
                groups.append({"targets": [f"{ip}:{p['containerPort']}"], "labels": labels})
    return groups


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main():
    config = sys.argv[1] if len(sys.argv) > 1 else os.path.join(DEPLOY, "prometheus", "prometheus-k8s.yml")
    for tool in ("prometheus", "kubectl", "node"):
        if shutil.which(tool) is None:
            fail(f"{tool} not found (scripts/install-deploy-tools)")
    # Pods: every workload template of each overlay, once per phase.
    pods = []  # (overlay, name, role, phase, ip)
    groups = []
    n = 0
    for overlay in OVERLAYS:
        ns = "ns-" + overlay.split("/")[-1]
        for kind, name, tpl, role in pod_templates(render(overlay)):
            for phase in PHASES:
                n += 1
                ip = f"10.1.{n // 250}.{n % 250 + 1}"
                pod = f"{name}-{phase.lower()}"
                pods.append((overlay, ns, pod, role, phase, ip))
                groups += discovered(ns, pod, ip, tpl, phase, phase == "Running", (kind, name))
    work = tempfile.mkdtemp(prefix="rlvr-k8s-targets-")
    prom = None
    try:
        with open(config) as f:
            text = f.read()
        new, count = re.subn(r"kubernetes_sd_configs:\n(\s+)- role: pod\n",
                             r"file_sd_configs:\n\1- files: [targets.json]\n\1  refresh_interval: 1s\n", text)
        if count != 1:
            fail(f"{config}: expected exactly one `kubernetes_sd_configs: - role: pod` block")
        new = re.sub(r"(?m)^rule_files:\n(?:\s+- .*\n)+", "", new)
        with open(os.path.join(work, "prometheus.yml"), "w") as f:
            f.write(new)
        with open(os.path.join(work, "targets.json"), "w") as f:
            json.dump(groups, f)
        port = free_port()
        prom = subprocess.Popen(["prometheus", f"--config.file={work}/prometheus.yml",
                                 f"--storage.tsdb.path={work}/data",
                                 f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                                stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "log"), "w"))
        url = f"http://127.0.0.1:{port}/api/v1/targets"
        # Discovery is done once the counts stop moving (identical targets
        # after relabelling are listed once, so they need not add up).
        deadline = time.monotonic() + 60
        data, last, since = None, None, time.monotonic()
        while time.monotonic() < deadline:
            if prom.poll() is not None:
                fail("prometheus exited:\n" + open(os.path.join(work, "log")).read())
            try:
                with urllib.request.urlopen(url, timeout=2) as r:
                    data = json.loads(r.read().decode())["data"]
                seen = (len(data["activeTargets"]), len(data["droppedTargets"]))
                if seen != last:
                    last, since = seen, time.monotonic()
                elif sum(seen) > 0 and time.monotonic() - since > 2:
                    break
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.2)
        if data is None:
            fail("no answer from prometheus' /api/v1/targets within 60 s")
        active = data["activeTargets"]
        problems = []
        for overlay, ns, pod, role, phase, ip in pods:
            mine = [t for t in active if t["discoveredLabels"].get("__meta_kubernetes_pod_name") == pod
                    and t["discoveredLabels"].get("__meta_kubernetes_namespace") == ns]
            urls = sorted({t["scrapeUrl"] for t in mine})
            want_job = {"rank0": "rlvr-learner", "actor": "rlvr-actor"}.get(role)
            where = f"{overlay} pod {pod} (role {role or '-'}, phase {phase})"
            if phase in ("Succeeded", "Failed"):
                if mine:
                    problems.append(f"{where} is scraped ({', '.join(urls)}): a pod that has ended serves "
                                    "nothing, so it is `up == 0` until the pod object is deleted "
                                    "(RlvrLearnerDown fires after every completed run); drop targets by "
                                    "__meta_kubernetes_pod_phase")
                continue
            if want_job is None:
                if mine:
                    problems.append(f"{where} is scraped ({', '.join(urls)}) but serves no /metrics")
                continue
            if len(urls) != 1:
                problems.append(f"{where}: expected one scrape target, found {urls}")
                continue
            labels = mine[0]["labels"]
            if labels.get("job") != want_job or labels.get("namespace") != ns or labels.get("pod") != pod:
                problems.append(f"{where}: labels {labels}, expected job={want_job} namespace={ns} pod={pod}")
        for p in problems:
            print(f"FAIL {p}")
        if problems:
            print(f"check-k8s-scrape-targets: {len(problems)} problem(s)")
            return 1
        kept = sum(1 for *_, phase, _ in pods if phase in ("Pending", "Running"))
        print(f"check-k8s-scrape-targets: {len(pods)} pods ({len(groups)} discovered targets) of "
              f"{', '.join(OVERLAYS)} in phases {'/'.join(PHASES)}: Prometheus keeps "
              f"{len({t['scrapeUrl'] for t in active})} scrape URLs, rank 0 and the actors while "
              "Pending or Running, nothing of Succeeded or Failed pods")
        return 0
    finally:
        if prom is not None and prom.poll() is None:
            prom.send_signal(signal.SIGTERM)
            try:
                prom.wait(10)
            except subprocess.TimeoutExpired:
                prom.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
