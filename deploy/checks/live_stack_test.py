#!/usr/bin/env python3
"""Live deployment checks against a real `rlvr learner` and `rlvr actor`.

1. Starts a learner and one actor on 127.0.0.1 (free ports) with a tiny config.
2. Scrapes both /metrics endpoints: `promtool check metrics` on each scrape,
   and every metric the dashboard and alert rules use must be exported with
   the contract's type (check-metric-names.mjs --scrape).
3. Starts Debian's `prometheus` with deploy/prometheus/prometheus.yml (scrape
   and evaluation interval shortened to 1 s, file_sd targets pointed at the
   live processes), waits for samples, then evaluates every dashboard query
   and every rule expression through /api/v1/query: any error fails, and so
   does a query with no data unless all its metrics are ones that legitimately
   have no series yet (labelled counters nothing has incremented). Prometheus'
   own rule evaluation must report every rule healthy.

Skips (exit 77) with a message when the rlvr binary or its learner/actor
commands are not built yet. Bounded: gives up after RLVR_LIVE_DEADLINE_S
(default 90) seconds. Stdlib only.
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
import urllib.parse
import urllib.request

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
DEPLOY = os.path.dirname(HERE)
DEADLINE = time.monotonic() + float(os.environ.get("RLVR_LIVE_DEADLINE_S", "90"))

# Metric families that may have no series in a short healthy run: counters
# with a label that gets its first child on the first increment.
MAY_BE_EMPTY = {"rlvr_learner_groups_rejected_total", "rlvr_learner_groups_dropped_total"}

# A tiny job so that the learner updates within seconds on one core.
TINY_CONFIG = """\
model: {d_model: 32, n_layers: 1, n_heads: 2, d_ff: 64, max_seq_len: 24}
task: {train_size: 400, heldout_size: 40}
pretrain: {steps: 20, batch_size: 16}
sampling: {max_new_tokens: 4}
actor: {group_size: 4, max_batch_prompts: 8, threads: 1}
learner: {buffer_groups: 16, groups_per_update: 4, checkpoint_every: 0, threads: 1}
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


def command_available(binary, name):
    try:
        r = subprocess.run([binary, name, "--help"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


class Proc:
    def __init__(self, name, argv, workdir):
        self.name = name
        self.log_path = os.path.join(workdir, f"{name}.log")
        self.log = open(self.log_path, "w")
        env = dict(os.environ, OMP_NUM_THREADS="1")
        self.p = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, env=env,
                                  start_new_session=True)
        log(f"started {name} (pid {self.p.pid}): {' '.join(argv)}")

    def alive(self):
        return self.p.poll() is None

    def tail(self, n=25):
        self.log.flush()
        with open(self.log_path, errors="replace") as f:
            return "".join(f.readlines()[-n:])

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


def main():
    binary = os.environ.get("RLVR_BINARY", "")
    if not binary or not os.access(binary, os.X_OK):
        print(f"SKIP: RLVR_BINARY ('{binary}') is not an executable rlvr binary; build target rlvr first")
        return SKIP
    for cmd in ("learner", "actor"):
        if not command_available(binary, cmd):
            print(f"SKIP: `rlvr {cmd}` is not built yet in {binary} (its --help does not succeed); "
                  "the live scrape and Prometheus end-to-end checks run once learner and actor exist")
            return SKIP
    for tool in ("prometheus", "promtool", "node"):
        if not shutil.which(tool):
            fail(f"{tool} not found: run scripts/install-deploy-tools")

    work = tempfile.mkdtemp(prefix="rlvr-live-")
    procs = []
    try:
        cfg = os.path.join(work, "config.yaml")
        with open(cfg, "w") as f:
            f.write(TINY_CONFIG)
        base = os.path.join(work, "base.rlvrw")
        sets = [f"--set=pretrain.checkpoint={base}"]
        if command_available(binary, "pretrain"):
            log("pretraining a tiny base policy")
            r = subprocess.run([binary, "pretrain", f"--config={cfg}"] + sets, capture_output=True,
                               text=True, timeout=max(5, left() - 60))
            if r.returncode != 0:
                fail(f"rlvr pretrain failed ({r.returncode}):\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
        grpc_port, lm_port, am_port, ah_port, pport = free_ports(5)
        learner = Proc("learner", [binary, "learner", f"--config={cfg}", *sets,
                                   f"--address=127.0.0.1:{grpc_port}", f"--metrics_port={lm_port}",
                                   f"--run_dir={os.path.join(work, 'run')}"], work)
        procs.append(learner)
        lurl = f"http://127.0.0.1:{lm_port}/metrics"
        wait_for("learner /metrics", lambda: "rlvr_learner_" in http_get(lurl), procs, timeout=30)
        actor = Proc("actor", [binary, "actor", f"--learner=127.0.0.1:{grpc_port}", f"--config={cfg}",
                               *sets, f"--metrics_port={am_port}", f"--health_port={ah_port}",
                               "--listen_address=127.0.0.1"], work)
        procs.append(actor)
        aurl = f"http://127.0.0.1:{am_port}/metrics"
        wait_for("actor /metrics", lambda: "rlvr_actor_" in http_get(aurl), procs, timeout=30)

        def learner_stepped():
            m = re.search(r"^rlvr_learner_step(?:\{[^}]*\})? ([0-9.e+]+)", http_get(lurl), re.M)
            return m and float(m.group(1)) >= 2
        wait_for("two learner updates", learner_stepped, procs)
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
        shutil.copytree(os.path.join(DEPLOY, "prometheus", "rules"), os.path.join(pdir, "rules"))
        os.makedirs(os.path.join(pdir, "file_sd"))
        with open(os.path.join(DEPLOY, "prometheus", "prometheus.yml")) as f:
            conf = f.read()
        conf = re.sub(r"(scrape_interval|evaluation_interval): \d+s", r"\1: 1s", conf)
        conf = re.sub(r"scrape_timeout: \d+s", "scrape_timeout: 1s", conf)
        conf = conf.replace("refresh_interval: 30s", "refresh_interval: 1s")
        with open(os.path.join(pdir, "prometheus.yml"), "w") as f:
            f.write(conf)
        for job, port in (("rlvr-learner", lm_port), ("rlvr-actor", am_port)):
            with open(os.path.join(pdir, "file_sd", f"{job}.json"), "w") as f:
                json.dump([{"targets": [f"127.0.0.1:{port}"]}], f)
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
            res = prom_query(pbase, 'up{job=~"rlvr-learner|rlvr-actor"} == 1')["data"]["result"]
            return len(res) == 2
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
            q = expr.replace("$__rate_interval", "15s")
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
        firing = [a["labels"]["alertname"] for a in
                  json.loads(http_get(f"{pbase}/api/v1/alerts"))["data"]["alerts"]
                  if a["state"] == "firing"]
        log(f"evaluated {len(exprs)} dashboard queries and {len(rules)} rule expressions; "
            f"{n_rules} rules loaded; firing alerts: {firing or 'none'}")
        if problems:
            for p in problems:
                print(f"FAIL {p}")
            fail(f"{len(problems)} query problem(s)")
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
