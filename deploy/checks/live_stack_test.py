#!/usr/bin/env python3
"""Live deployment checks against a real `rlvr learner` and `rlvr actor`.

The learner runs exactly as the cpu-small overlay's Job runs it: the rendered
`pretrain` init container command and the learner container's command (the
shell that turns a stop on SIGTERM into exit 143) with its args, only paths
and ports mapped to a temporary directory and 127.0.0.1.
1. Pretrain, then the learner and a fast actor with a tiny async config
   (learner.max_policy_lag 2).
2. Scrapes both /metrics endpoints: `promtool check metrics` on each scrape,
   and every metric the dashboard and alert rules use must be exported with
   the contract's type (check-metric-names.mjs --scrape).
3. Starts Debian's `prometheus` with deploy/prometheus/prometheus.yml (scrape
   and evaluation interval shortened to 1 s, file_sd targets pointed at the
   live processes with namespace "rlvr-live") and the alert rules with their
   10-minute windows and `for:` shortened (30 s, 5 s); waits for samples, then
   evaluates every dashboard query ($namespace = rlvr-live) and every rule
   expression through /api/v1/query: any error fails, and so does a query
   with no data unless all its metrics are ones that legitimately have no
   series yet (labelled counters nothing has incremented). Prometheus' own
   rule evaluation must report every rule healthy.
4. Staleness: three more actors, slowed by SIGSTOP/SIGCONT (running 0.1 s of
   every 1.1 s) once connected, fall far more than the lag behind; the learner
   revokes their leases (or drops or rejects their groups as stale), about a
   third of the generation, and RlvrStalenessAboveLag (20%) must fire in the
   real Prometheus (the old p90-staleness condition is evaluated and logged).
5. Completion: SIGTERM to the learner's shell gives exit 143 and a
   checkpoint (a Job replaces the pod; it does not complete); the same command
   started again on the same run directory with --total_updates a few steps on
   resumes and exits 0 with the final checkpoint written, which the rendered
   Job (restartPolicy, podFailurePolicy, completions) counts as Complete.

Fails, naming it, when RLVR_BINARY is not an executable rlvr whose learner,
actor and pretrain commands answer --help. Bounded: gives up after RLVR_LIVE_DEADLINE_S
(default 200) seconds. Stdlib, kubectl and node only.
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
import threading
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
DEPLOY = os.path.dirname(HERE)
DEADLINE = time.monotonic() + float(os.environ.get("RLVR_LIVE_DEADLINE_S", "200"))

# Metric families that may have no series in a short healthy run: counters
# with a label that gets its first child on the first increment.
MAY_BE_EMPTY = {"rlvr_learner_groups_rejected_total", "rlvr_learner_groups_dropped_total"}

# A tiny job so that the learner updates within seconds on one core.
TINY_CONFIG = """\
model: {d_model: 32, n_layers: 1, n_heads: 2, d_ff: 64, max_seq_len: 24}
task: {train_size: 400, heldout_size: 40}
# Pretraining lasts a few seconds, so that its /metrics is scraped while it runs.
pretrain: {steps: 600, batch_size: 16}
sampling: {max_new_tokens: 4}
# The fast actor holds at most one update's worth of leases (groups_per_update),
# so that the staleness phase's slowed actors get leases too.
actor: {max_batch_prompts: 4, threads: 1}
# Asynchronous: groups up to two versions old are trained, older ones dropped;
# leases that could not be trained within that are revoked. With lag 2 the
# learner leases up to (lag + 1) * groups_per_update = 12 groups ahead, so the
# slowed actors can hold lag * groups_per_update = 8 without stalling updates.
# No per-actor rate limit: the groups that answer no live lease (the slowed
# actors' revoked ones) are the ones it meters, and its RATE_LIMITED answers
# would stand in for the STALE_VERSION ones this phase counts.
learner: {group_size: 4, max_policy_lag: 2, buffer_groups: 32, groups_per_update: 4,
          checkpoint_every: 0,
          threads: 1, lease_timeout_s: 120, max_groups_per_s: 0}
# Keep every group so that updates happen even while all rewards are equal.
batching: {dynamic_sampling: false, reward_balance: none}
eval: {every: 2, prompts: 20, pass_k: 2}
run: {total_updates: 100000}
"""


def log(msg):
    print(f"[live] {msg}", flush=True)


def left():
    return DEADLINE - time.monotonic()


def free_ports(n):
    """n distinct free ports (all held open while picking, so none repeats)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def http_get(url, timeout=2.0):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def require_binary(commands):
    """The absolute path of $RLVR_BINARY; fails unless it is executable and
    `rlvr <command> --help` exits 0 for each command."""
    binary = os.environ.get("RLVR_BINARY", "")
    if not binary or not os.access(binary, os.X_OK):
        fail(f"RLVR_BINARY ('{binary}') is not an executable rlvr binary (ctest sets it; build target rlvr)")
    binary = os.path.abspath(binary)
    for name in commands:
        try:
            r = subprocess.run([binary, name, "--help"], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired) as e:
            fail(f"`{binary} {name} --help` did not finish: {e}")
        if r.returncode != 0:
            fail(f"`{binary} {name} --help` exited {r.returncode}:\n{(r.stdout + r.stderr)[-2000:]}")
    return binary


class Proc:
    def __init__(self, name, argv, workdir, env=None):
        self.name = name
        self.log_path = os.path.join(workdir, f"{name}.log")
        self.log = open(self.log_path, "w")
        env = dict(os.environ, OMP_NUM_THREADS="1", **(env or {}))
        self.p = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, env=env,
                                  start_new_session=True)
        log(f"started {name} (pid {self.p.pid}): {' '.join(argv)}")

    def alive(self):
        return self.p.poll() is None

    def tail(self, n=25):
        self.log.flush()
        with open(self.log_path, errors="replace") as f:
            return "".join(f.readlines()[-n:])

    def wait(self, timeout):
        """Exit status, or None if still running after `timeout` seconds."""
        try:
            return self.p.wait(timeout=max(0.1, timeout))
        except subprocess.TimeoutExpired:
            return None

    def stop(self):
        if self.alive():
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.log.close()


# Known causes, recognised in the logs of a failed run.
HINTS = {
    "null context when constructing CivetServer":
        "prometheus-cpp's Exposer (civetweb) starts its worker threads with a ~100 KiB stack, "
        "smaller than the static TLS of a process that loads OpenBLAS, glog and NCCL "
        "(~122 KiB measured), so pthread_create fails with EINVAL; /metrics needs a server "
        "that does not use civetweb's thread stack size (see docs/deploy.md).",
}


def fail(msg, procs=()):
    print(f"FAIL {msg}", flush=True)
    for p in procs:
        tail = p.tail()
        print(f"--- last lines of {p.name} ({p.log_path}) ---\n{tail}", flush=True)
        for needle, hint in HINTS.items():
            if needle in tail:
                print(f"HINT ({p.name}): {hint}", flush=True)
    sys.exit(1)


def wait_for(what, check, procs, timeout=None):
    end = time.monotonic() + (timeout if timeout is not None else left())
    end = min(end, DEADLINE)
    while time.monotonic() < end:
        for p in procs:
            if not p.alive():
                fail(f"{p.name} exited with status {p.p.returncode} while waiting for {what}", procs)
        try:
            v = check()
            if v:
                return v
        except Exception:  # not up yet
            pass
        time.sleep(0.5)
    fail(f"timed out waiting for {what}", procs)


def prom_query(base, expr):
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    try:
        return json.loads(http_get(url, timeout=10))
    except urllib.error.HTTPError as e:
        return json.loads(e.read().decode())


def metric_names(expr):
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    e = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", " ", e)
    e = re.sub(r"\{[^}]*\}|\[[^\]]*\]", " ", e)
    names = set()
    for m in re.finditer(r"(?<![\w:.$])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?", e):
        if not m.group(2) and m.group(1).startswith("rlvr_"):
            names.add(re.sub(r"_(bucket|sum|count)$", "", m.group(1)))
    return names


def dashboard_exprs(path):
    with open(path) as f:
        dash = json.load(f)
    out = []

    def walk(panels):
        for p in panels or []:
            walk(p.get("panels"))
            for t in p.get("targets", []):
                out.append((f'panel "{p["title"]}" {t["refId"]}', t["expr"]))
    walk(dash["panels"])
    return out


def rule_exprs(path):
    """The `expr:` of each rule of a Prometheus rule file (block or inline)."""
    out, name, lines = [], None, open(path).read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"\s*-?\s*(alert|record):\s*(\S+)", line)
        if m:
            name = f"{m.group(1)} {m.group(2)}"
        m = re.match(r"(\s*)expr:\s*(.*)$", line)
        if m:
            indent, rest = len(m.group(1)), m.group(2).strip()
            if rest in ("|", ">", "|-", ">-"):
                body = []
                i += 1
                while i < len(lines) and (not lines[i].strip() or
                                          len(lines[i]) - len(lines[i].lstrip()) > indent):
                    body.append(lines[i].strip())
                    i += 1
                out.append((name, " ".join(b for b in body if b)))
                continue
            out.append((name, rest))
        i += 1
    return out


NAMESPACE = "rlvr-live"
# Staleness phase: actors slowed past the lag next to the fast one. Each runs
# SLOW_RUN_S of every SLOW_RUN_S + SLOW_STOP_S seconds (SIGSTOP/SIGCONT), far
# longer than lag + 1 updates (tens of ms here), so every lease it holds is
# revoked before it can send the group, and the learner grants it new ones
# while it is stopped (leases are pushed), which are revoked in turn. With
# SLOW_CAPACITY leases each (actor.max_batch_prompts) they hold 6 of the 8
# leases that lag 2 leaves beside the update being filled: about 6 revoked per
# 12 groups accepted, a third of the generation (measured: 0.31-0.32).
SLOW_ACTORS = 3
SLOW_CAPACITY = 2
SLOW_RUN_S = 0.1
SLOW_STOP_S = 1.0


def render_overlay(overlay):
    """The objects `kubectl kustomize` renders for deploy/k8s/<overlay>, as dicts."""
    r = subprocess.run(["kubectl", "kustomize", os.path.join(DEPLOY, "k8s", overlay)],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail(f"kubectl kustomize deploy/k8s/{overlay}:\n{r.stderr}")
    # YAML -> JSON with the yaml package deploy/checks already installs.
    js = ("const YAML=require('yaml');let t='';process.stdin.on('data',d=>t+=d);"
          "process.stdin.on('end',()=>console.log(JSON.stringify("
          "YAML.parseAllDocuments(t,{version:'1.1'}).map(d=>d.toJS()).filter(Boolean))));")
    r2 = subprocess.run(["node", "-e", js], input=r.stdout, capture_output=True, text=True,
                        timeout=60, cwd=HERE)
    if r2.returncode != 0:
        fail(f"cannot parse the rendered deploy/k8s/{overlay}:\n{r2.stderr}")
    return json.loads(r2.stdout)


def job_outcome(job, exit_code, disrupted=False):
    """What the Job controller does when the pod of `job` (rendered batch/v1
    Job, one container and completions 1) ends with `exit_code`: "complete",
    "replace" (a new pod, counted against backoffLimit or not), or "fail".
    Follows the documented rules: restartPolicy, podFailurePolicy rules in
    order (first match wins), backoffLimit."""
    spec = job["spec"]
    pod = spec["template"]["spec"]
    container = pod["containers"][0]["name"]
    if exit_code == 0:
        # All containers exited 0: the pod Succeeded, and with completions
        # (default 1) successful pods the Job is Complete.
        return "complete" if spec.get("completions", 1) == 1 else "one index complete"
    if pod.get("restartPolicy") == "OnFailure":
        return "restart in place"
    for rule in (spec.get("podFailurePolicy") or {}).get("rules", []):
        on_codes = rule.get("onExitCodes")
        if on_codes:
            if on_codes.get("containerName", container) != container:
                continue
            hit = exit_code in on_codes["values"]
            if on_codes["operator"] == "NotIn":
                hit = not hit
        else:
            hit = disrupted and any(c["type"] == "DisruptionTarget"
                                    for c in rule.get("onPodConditions", []))
        if hit:
            return {"FailJob": "fail", "Ignore": "replace (not counted)",
                    "Count": "replace"}[rule["action"]]
    return "replace" if spec.get("backoffLimit", 6) > 0 else "fail"


class ManifestLearner:
    """Runs the cpu-small Job's containers with paths and ports mapped."""

    def __init__(self, job, binary, work, cfg):
        self.job = job
        self.work = work
        self.data = os.path.join(work, "data")
        os.makedirs(os.path.join(self.data, "base"), exist_ok=True)
        self.bindir = os.path.join(work, "bin")
        os.makedirs(self.bindir, exist_ok=True)
        link = os.path.join(self.bindir, "rlvr")
        if not os.path.exists(link):
            os.symlink(binary, link)
        self.cfg = cfg
        (self.grpc_port, self.metrics_port, self.master_port) = free_ports(3)

    def _map(self, text):
        text = text.replace("/etc/rlvr/config.yaml", self.cfg).replace("/data/", self.data + "/")
        text = re.sub(r"^--address=.*", f"--address=127.0.0.1:{self.grpc_port}", text)
        text = re.sub(r"(^|\s)--metrics_port=\d+", rf"\g<1>--metrics_port={self.metrics_port}", text)
        return text.replace("--metrics_bind=0.0.0.0", "--metrics_bind=127.0.0.1")

    def _env(self, container):
        env = {"PATH": self.bindir + os.pathsep + os.environ.get("PATH", "")}
        for e in container.get("env", []):
            if "value" in e:
                env[e["name"]] = e["value"]
        env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(self.master_port), HOME=self.work,
                   POD_NAME="rlvr-learner-live")
        return env

    def pretrain(self):
        init = [c for c in self.job["spec"]["template"]["spec"].get("initContainers", [])
                if c["name"] == "pretrain"]
        if len(init) != 1:
            fail("the rendered learner Job has no `pretrain` init container")
        c = init[0]
        argv = [self._map(x) for x in c["command"] + c.get("args", [])]
        log(f"init container pretrain: {' '.join(argv)}")
        # While it pretrains, the pod's metrics port answers with the phase
        # (the target is up, not refused): scraped until the process ends.
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env=dict(os.environ, **self._env(c)))
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        phases = set()
        deadline = time.monotonic() + max(5, left() - 60)
        while p.poll() is None and time.monotonic() < deadline:
            try:
                for m in re.finditer(r'^rlvr_learner_phase\{phase="(\w+)"\} 1$', http_get(url), re.M):
                    phases.add(m.group(1))
            except OSError:
                pass
            time.sleep(0.05)
        if p.poll() is None:
            p.kill()
        out = p.communicate()[0]
        if p.returncode != 0:
            fail(f"the pretrain init container failed ({p.returncode}):\n{out[-3000:]}")
        if "pretraining" not in phases:
            fail(f"the pretrain init container's /metrics never said phase pretraining (saw {sorted(phases)})")
        log(f"init container pretrain: /metrics on port {self.metrics_port} said phase pretraining")

    def start(self, name, extra_args=()):
        c = self.job["spec"]["template"]["spec"]["containers"][0]
        argv = [self._map(x) for x in c["command"]] + [self._map(x) for x in c.get("args", [])]
        return Proc(name, argv + list(extra_args), self.work, env=self._env(c))

    def checkpoints(self):
        d = os.path.join(self.data, "run", "checkpoints")
        steps = []
        for n in os.listdir(d) if os.path.isdir(d) else []:
            m = re.fullmatch(r"ckpt-(\d+)", n)
            if m:
                steps.append(int(m.group(1)))
        return sorted(steps)


def scrape_value(url, name, labels=""):
    text = http_get(url)
    total, seen = 0.0, False
    for m in re.finditer(rf"^{name}(\{{[^}}]*\}})? ([0-9.e+-]+|NaN)$", text, re.M):
        if labels in (m.group(1) or ""):
            total += float(m.group(2))
            seen = True
    return total if seen else None


def main():
    binary = require_binary(("learner", "actor", "pretrain"))
    for tool in ("prometheus", "promtool", "node", "kubectl"):
        if not shutil.which(tool):
            fail(f"{tool} not found: run scripts/install-deploy-tools")

    objs = render_overlay("overlays/cpu-small")
    jobs = [o for o in objs if o.get("kind") == "Job" and o["metadata"]["name"] == "rlvr-learner"]
    if len(jobs) != 1:
        fail("deploy/k8s/overlays/cpu-small renders no Job rlvr-learner (the learner must be a Job)")
    job = jobs[0]

    work = tempfile.mkdtemp(prefix="rlvr-live-")
    procs = []
    try:
        cfg = os.path.join(work, "config.yaml")
        with open(cfg, "w") as f:
            f.write(TINY_CONFIG)
        learner_run = ManifestLearner(job, binary, work, cfg)
        sets = [f"--set=pretrain.checkpoint={os.path.join(learner_run.data, 'base', 'base.rlvrw')}"]
        # --- 1. the Job's init container, then its learner container ----------
        learner_run.pretrain()
        learner = learner_run.start("learner")
        procs.append(learner)
        lm_port = learner_run.metrics_port
        grpc_port = learner_run.grpc_port
        am_port, ah_port, sm_port, sh_port, pport = free_ports(5)
        lurl = f"http://127.0.0.1:{lm_port}/metrics"
        wait_for("learner /metrics", lambda: "rlvr_learner_" in http_get(lurl), procs, timeout=60)
        actor = Proc("actor", [binary, "actor", f"--learner=127.0.0.1:{grpc_port}", f"--config={cfg}",
                               *sets, f"--metrics_port={am_port}", f"--health_port={ah_port}",
                               "--listen_address=127.0.0.1", "--actor_id=fast"], work)
        procs.append(actor)
        aurl = f"http://127.0.0.1:{am_port}/metrics"
        wait_for("actor /metrics", lambda: "rlvr_actor_" in http_get(aurl), procs, timeout=60)

        def learner_step():
            return scrape_value(lurl, "rlvr_learner_step") or 0
        wait_for("two learner updates", lambda: learner_step() >= 2, procs)
        log("learner has updated twice")

        # --- 2. real scrapes ---------------------------------------------------
        scrapes = []
        for name, url in (("learner", lurl), ("actor", aurl)):
            text = http_get(url)
            path = os.path.join(work, f"{name}.prom")
            with open(path, "w") as f:
                f.write(text)
            scrapes.append(path)
            r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                               text=True, timeout=30)
            # promtool exits 1 for lint findings and 2+ for unparsable input.
            if r.returncode not in (0, 1) or "error while linting" in (r.stdout + r.stderr):
                fail(f"promtool check metrics rejects the {name} scrape:\n{r.stdout}{r.stderr}", procs)
            lint = (r.stdout + r.stderr).strip()
            rlvr_lint = [l for l in lint.split("\n") if l.startswith("rlvr_")]
            if rlvr_lint:
                fail(f"promtool check metrics lint findings on rlvr metrics of the {name}:\n" +
                     "\n".join(rlvr_lint), procs)
            log(f"promtool check metrics: {name} scrape OK ({len(text.splitlines())} lines)"
                + (f"; non-rlvr lint: {lint}" if lint else ""))
        r = subprocess.run(["node", os.path.join(HERE, "check-metric-names.mjs"),
                            *sum((["--scrape", s] for s in scrapes), []),
                            os.path.join(DEPLOY, "grafana", "rlvr-dashboard.json"),
                            os.path.join(DEPLOY, "prometheus", "rules", "rlvr-alerts.yml")],
                           capture_output=True, text=True, timeout=60)
        print(r.stdout + r.stderr, end="")
        if r.returncode != 0:
            fail("metrics used by deploy/ are missing from the live scrape", procs)

        # --- 3. real Prometheus ------------------------------------------------
        pdir = os.path.join(work, "prometheus")
        os.makedirs(os.path.join(pdir, "rules"))
        os.makedirs(os.path.join(pdir, "file_sd"))
        with open(os.path.join(DEPLOY, "prometheus", "rules", "rlvr-alerts.yml")) as f:
            rules_text = f.read()
        # Same rules, windows a test can wait for: rate over 30 s, `for` 5 s.
        short = re.sub(r"\[10m\]", "[30s]", rules_text)
        short = re.sub(r"(?m)^(\s+for:) \d+m$", r"\1 5s", short)
        with open(os.path.join(pdir, "rules", "rlvr-alerts.yml"), "w") as f:
            f.write(short)
        with open(os.path.join(DEPLOY, "prometheus", "prometheus.yml")) as f:
            conf = f.read()
        conf = re.sub(r"(scrape_interval|evaluation_interval): \d+s", r"\1: 1s", conf)
        conf = re.sub(r"scrape_timeout: \d+s", "scrape_timeout: 1s", conf)
        conf = conf.replace("refresh_interval: 30s", "refresh_interval: 1s")
        with open(os.path.join(pdir, "prometheus.yml"), "w") as f:
            f.write(conf)

        def write_targets(actor_ports):
            for job_name, ports in (("rlvr-learner", [lm_port]), ("rlvr-actor", actor_ports)):
                tmp = os.path.join(pdir, "file_sd", f".{job_name}.json")
                with open(tmp, "w") as f:
                    json.dump([{"targets": [f"127.0.0.1:{p}" for p in ports],
                                "labels": {"namespace": NAMESPACE}}], f)
                os.replace(tmp, os.path.join(pdir, "file_sd", f"{job_name}.json"))
        write_targets([am_port])
        r = subprocess.run(["promtool", "check", "config", os.path.join(pdir, "prometheus.yml")],
                           capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            fail(f"promtool check config on the test copy:\n{r.stdout}{r.stderr}", procs)
        prom = Proc("prometheus", ["prometheus", f"--config.file={os.path.join(pdir, 'prometheus.yml')}",
                                   f"--storage.tsdb.path={os.path.join(pdir, 'data')}",
                                   f"--web.listen-address=127.0.0.1:{pport}", "--log.level=warn"], work)
        procs.append(prom)
        pbase = f"http://127.0.0.1:{pport}"
        wait_for("prometheus ready", lambda: "Ready" in http_get(f"{pbase}/-/ready"), procs, timeout=30)

        def both_up():
            res = prom_query(pbase, f'up{{job=~"rlvr-learner|rlvr-actor", namespace="{NAMESPACE}"}} == 1')
            return len(res["data"]["result"]) == 2
        wait_for("both targets up in Prometheus", both_up, procs, timeout=30)
        # Enough samples for rate() over the 15 s window the dashboard gets here.
        def enough_history():
            res = prom_query(pbase, "count_over_time(rlvr_learner_step[30s])")["data"]["result"]
            return res and float(res[0]["value"][1]) >= 8
        wait_for("8 scrapes of history", enough_history, procs, timeout=40)

        problems = []
        exprs = [("dashboard " + w, e) for w, e in dashboard_exprs(
            os.path.join(DEPLOY, "grafana", "rlvr-dashboard.json"))]
        rules = rule_exprs(os.path.join(DEPLOY, "prometheus", "rules", "rlvr-alerts.yml"))
        for where, expr in exprs:
            q = expr.replace("$__rate_interval", "15s").replace("$namespace", NAMESPACE)
            resp = prom_query(pbase, q)
            if resp.get("status") != "success":
                problems.append(f"{where}: error {resp.get('errorType')}: {resp.get('error')} in `{q}`")
                continue
            if not resp["data"]["result"] and not metric_names(q) & MAY_BE_EMPTY:
                problems.append(f"{where}: no data for `{q}`")
        for where, expr in rules:
            resp = prom_query(pbase, expr)
            if resp.get("status") != "success":
                problems.append(f"rule {where}: error {resp.get('errorType')}: {resp.get('error')}")
                continue
            # An alert condition is empty when healthy; its inputs must exist.
            for name in sorted(metric_names(expr) - MAY_BE_EMPTY):
                r2 = prom_query(pbase, f'count({{__name__=~"{name}(_bucket)?"}})')
                if not r2.get("data", {}).get("result"):
                    problems.append(f"rule {where}: input metric {name} has no series")
        rules_state = json.loads(http_get(f"{pbase}/api/v1/rules", timeout=10))
        n_rules = 0
        for g in rules_state["data"]["groups"]:
            for rule in g["rules"]:
                n_rules += 1
                if rule.get("health") not in ("ok", "unknown"):
                    problems.append(f"Prometheus reports rule {rule['name']} {rule.get('health')}: "
                                    f"{rule.get('lastError')}")

        def alerts():
            return [(a["labels"]["alertname"], a["state"], a["labels"].get("namespace", ""))
                    for a in json.loads(http_get(f"{pbase}/api/v1/alerts"))["data"]["alerts"]]
        log(f"evaluated {len(exprs)} dashboard queries and {len(rules)} rule expressions; "
            f"{n_rules} rules loaded; alerts: {alerts() or 'none'}")
        if problems:
            for p in problems:
                print(f"FAIL {p}")
            fail(f"{len(problems)} query problem(s)", procs)

        # --- 4. staleness: slowed actors, RlvrStalenessAboveLag fires --------
        val = lambda r: (r.get("data", {}).get("result") or [{"value": [0, "none"]}])[0]["value"][1]
        frac_q = f'rlvr:learner_stale_fraction:rate10m{{namespace="{NAMESPACE}"}}'
        log(f"before slowing: stale fraction (30 s) {val(prom_query(pbase, frac_q))}, "
            f"RlvrStalenessAboveLag {[a[1] for a in alerts() if a[0] == 'RlvrStalenessAboveLag'] or 'inactive'}")
        def waste_counts():
            """(wasted, generated) from the learner's counters, as the recording rule sums them."""
            get = lambda name, labels="": scrape_value(lurl, name, labels) or 0.0
            revoked = get("rlvr_learner_leases_revoked_total")
            wasted = (get("rlvr_learner_groups_dropped_total", 'reason="stale"') +
                      get("rlvr_learner_groups_rejected_total", 'reason="stale_version"') + revoked)
            return wasted, (get("rlvr_learner_groups_accepted_total") +
                            get("rlvr_learner_groups_rejected_total") + revoked)
        t_stale = time.monotonic()
        slow = []
        for i in range(SLOW_ACTORS):
            mport, hport = free_ports(2)
            slow.append(Proc(f"slow-actor-{i}", [
                binary, "actor", f"--learner=127.0.0.1:{grpc_port}", f"--config={cfg}", *sets,
                f"--metrics_port={mport}", f"--health_port={hport}", "--listen_address=127.0.0.1",
                f"--actor_id=slow-{i}", f"--set=actor.max_batch_prompts={SLOW_CAPACITY}"], work))
            slow[-1].metrics_port = mport
        procs.extend(slow)
        write_targets([am_port] + [p.metrics_port for p in slow])
        # Connected (and past their start-up) before they are slowed.
        wait_for(f"{SLOW_ACTORS} slowed actors connected",
                 lambda: (scrape_value(lurl, "rlvr_learner_actors_connected") or 0) >= 1 + SLOW_ACTORS,
                 procs, timeout=60)
        stop_throttle = threading.Event()

        def throttle():
            # Each slowed actor runs SLOW_RUN_S of every SLOW_RUN_S + SLOW_STOP_S
            # seconds: its leases are revoked long before it could send them.
            try:
                while not stop_throttle.is_set():
                    time.sleep(SLOW_RUN_S)
                    for p in slow:
                        if p.alive():
                            os.kill(p.p.pid, signal.SIGSTOP)
                    stop_throttle.wait(SLOW_STOP_S)
                    for p in slow:
                        if p.alive():
                            os.kill(p.p.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        thr = threading.Thread(target=throttle, daemon=True)
        thr.start()
        counts0 = waste_counts()
        stale_q = (f'(sum(rlvr_learner_groups_dropped_total{{reason="stale", namespace="{NAMESPACE}"}}) or vector(0)) '
                   f'+ (sum(rlvr_learner_groups_rejected_total{{reason="stale_version", namespace="{NAMESPACE}"}}) '
                   f'or vector(0)) '
                   f'+ (sum(rlvr_learner_leases_revoked_total{{namespace="{NAMESPACE}"}}) or vector(0))')
        firing = None
        end = min(DEADLINE - 45, time.monotonic() + 60)
        while time.monotonic() < end:
            for p in procs:
                if not p.alive():
                    fail(f"{p.name} exited with status {p.p.returncode} during the staleness phase", procs)
            st = [a for a in alerts() if a[0] == "RlvrStalenessAboveLag"]
            if any(s == "firing" for _, s, _ in st):
                firing = st
                break
            time.sleep(1)
        counts1 = waste_counts()
        stop_throttle.set()
        thr.join(timeout=SLOW_STOP_S + 5)
        for p in slow:
            if p.alive():
                os.kill(p.p.pid, signal.SIGCONT)  # so that it can stop
        frac = prom_query(pbase, frac_q)
        stale = prom_query(pbase, stale_q)
        p90 = prom_query(pbase, "histogram_quantile(0.9, sum by (le) "
                                f'(rate(rlvr_learner_staleness_versions_bucket{{namespace="{NAMESPACE}"}}[30s])))')
        d_wasted, d_generated = counts1[0] - counts0[0], counts1[1] - counts0[1]
        log(f"slowed phase, learner counters: {d_wasted:.0f} of {d_generated:.0f} groups wasted as stale "
            f"(revoked, dropped or rejected): {d_wasted / max(d_generated, 1):.3f}")
        log(f"staleness phase: {time.monotonic() - t_stale:.0f} s; stale groups + revoked leases {val(stale)}, stale "
            f"fraction (30 s) {val(frac)}, p90 staleness of trained groups {val(p90)}; "
            f"RlvrStalenessAboveLag: {firing or 'not firing'}")
        if not firing:
            # The slowed actors waste about 0.3 of the generation (0.28-0.30 in
            # the runs docs/deploy.md records); below the alert's 0.2 the
            # phase did not do what it exists for, and that is a failure too.
            fail("RlvrStalenessAboveLag did not fire while slowed actors fell behind the lag (stale fraction "
                 f"{val(frac)} in Prometheus, {d_wasted / max(d_generated, 1):.3f} from the learner's counters)", procs)
        lag = int(re.search(r"max_policy_lag: (\d+)", TINY_CONFIG).group(1))
        old = prom_query(pbase, "histogram_quantile(0.9, sum by (job, le) "
                                f"(rate(rlvr_learner_staleness_versions_bucket[30s]))) > {lag}")
        if old.get("data", {}).get("result"):
            log(f"note: the old p90-staleness condition was also true: {old['data']['result']}")
        else:
            log("the old condition (p90 staleness of trained groups > lag) stayed empty, as expected")
        for p in slow:
            p.stop()
            procs.remove(p)
        prom.stop()
        procs.remove(prom)

        # --- 5. completion: stop -> 143 + checkpoint; resume -> exit 0 --------
        step_before = learner_step()
        os.kill(learner.p.pid, signal.SIGTERM)   # kubelet signals the container's PID 1
        code = learner.wait(min(60, max(1, left())))
        if code is None:
            fail("the learner did not stop within 60 s of SIGTERM", procs)
        procs.remove(learner)
        learner.stop()
        ckpts = learner_run.checkpoints()
        log(f"SIGTERM at step {step_before:.0f}: exit {code}, checkpoints {ckpts}; "
            f"the Job would: {job_outcome(job, code)}")
        if code != 143:
            fail(f"after SIGTERM the learner container exited {code}, not 143: a Job would count a "
                 "stopped run as complete", [learner])
        if not ckpts:
            fail("no checkpoint after the graceful stop", [learner])
        if job_outcome(job, code) == "complete" or job_outcome(job, code, disrupted=True) == "complete":
            fail("the rendered Job would count a stopped learner as complete")
        target = ckpts[-1] + 2
        # Same gRPC port (the actor reconnects, as to a replaced pod), a fresh
        # metrics port (the old one may linger in TIME_WAIT).
        learner_run.metrics_port = free_ports(1)[0]
        learner2 = learner_run.start("learner-resumed", [f"--total_updates={target}"])
        procs.append(learner2)
        code = learner2.wait(max(1, left() - 5))
        procs.remove(learner2)
        learner2.stop()
        ckpts2 = learner_run.checkpoints()
        with open(learner2.log_path, errors="replace") as f:
            resumed = re.search(r"resumed at step (\d+)", f.read())
        outcome = job_outcome(job, code) if code is not None else "still running"
        log(f"restarted with --total_updates={target}: {resumed.group(0) if resumed else 'no resume line'}, "
            f"exit {code}, checkpoints {ckpts2}; the Job would: {outcome}")
        if code is None:
            fail(f"the resumed learner did not reach total_updates={target} in time", [learner2, actor])
        if code != 0:
            fail(f"the learner exited {code} at total_updates, not 0", [learner2, actor])
        if not resumed or int(resumed.group(1)) != ckpts[-1]:
            fail(f"the restarted learner did not resume from checkpoint {ckpts[-1]}", [learner2])
        if target not in ckpts2:
            fail(f"no final checkpoint ckpt-{target} after exit 0", [learner2])
        if outcome != "complete":
            fail(f"the rendered Job would not count exit 0 as complete: {outcome}")
        log("PASS")
        return 0
    finally:
        for p in reversed(procs):
            p.stop()
        if os.environ.get("RLVR_LIVE_KEEP"):
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
