#!/usr/bin/env python3
"""Live check: a learner rank > 0 stops promptly on SIGTERM.

Runs the gpu overlay's two learner Jobs as rendered (rank 0's container, and
the worker Job's container with JOB_COMPLETION_INDEX=0, i.e. rank 1), with a
tiny config, WORLD_SIZE 2, Gloo on 127.0.0.1. With no actor, rank 0 waits for
groups and rank 1 waits in a collective for rank 0's next update: the state
in which Kubernetes' SIGTERM (pod deletion, preemption, JobSet restart) finds
a worker. The worker must exit within 10 s (its shell reports 143, so a Job
replaces it rather than counting it complete), long before the grace period
and learner.collective_timeout_s. Then rank 0 is stopped the same way.
Fails when RLVR_BINARY is not an rlvr whose learner answers --help. Stdlib, kubectl and node only.
"""
import os
import signal
import sys
import tempfile
import shutil
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import live_stack_test as live  # noqa: E402

CONFIG = """\
model: {d_model: 32, n_layers: 1, n_heads: 2, d_ff: 64, max_seq_len: 24}
task: {train_size: 400, heldout_size: 40}
eval: {prompts: 20}
learner: {groups_per_update: 4, buffer_groups: 16, threads: 1, collective_timeout_s: 60}
"""


def main():
    binary = live.require_binary(("learner",))
    objs = live.render_overlay("overlays/gpu")
    jobs = {o["metadata"]["name"]: o for o in objs if o.get("kind") == "Job"}
    if set(jobs) != {"rlvr-learner", "rlvr-learner-worker"}:
        live.fail(f"the gpu overlay renders Jobs {sorted(jobs)}, expected rlvr-learner and rlvr-learner-worker")
    work = tempfile.mkdtemp(prefix="rlvr-ranks-")
    procs = []
    try:
        cfg = os.path.join(work, "config.yaml")
        with open(cfg, "w") as f:
            f.write(CONFIG)
        rank0 = live.ManifestLearner(jobs["rlvr-learner"], binary, work, cfg)
        worker = live.ManifestLearner(jobs["rlvr-learner-worker"], binary, work, cfg)
        worker.master_port = rank0.master_port
        env = {"WORLD_SIZE": "2"}

        def start(ml, name, extra_env):
            c = ml.job["spec"]["template"]["spec"]["containers"][0]
            argv = [ml._map(x) for x in c["command"]] + [ml._map(x) for x in c.get("args", [])]
            e = ml._env(c)
            e.update(env)
            e.update(extra_env)
            return live.Proc(name, argv, work, env=e)
        p0 = start(rank0, "rank0", {})
        procs.append(p0)
        p1 = start(worker, "rank1", {"JOB_COMPLETION_INDEX": "0"})
        procs.append(p1)

        def ready():
            with open(p1.log_path, errors="replace") as f:
                return "learner rank 1 of 2 ready" in f.read()
        live.wait_for("rank 1 joined rank 0", ready, procs, timeout=min(90, live.left() - 20))
        time.sleep(1.0)  # rank 1 is now waiting in the first update's collective
        t = time.monotonic()
        os.kill(p1.p.pid, signal.SIGTERM)
        code = p1.wait(10)
        took = time.monotonic() - t
        live.log(f"rank 1: SIGTERM -> exit {code} after {took:.1f} s")
        if code is None:
            live.fail("rank 1 ignored SIGTERM for 10 s (it would be killed after the grace period)", [p1, p0])
        if code != 143:
            live.fail(f"rank 1's container exited {code} after SIGTERM, expected 143 (stopped, not complete)", [p1])
        with open(p1.log_path, errors="replace") as f:
            if "rank > 0 stops on signal" not in f.read():
                live.fail("rank 1 exited without its stop message", [p1])
        procs.remove(p1)
        p1.stop()
        os.kill(p0.p.pid, signal.SIGTERM)
        code0 = p0.wait(min(70, max(1, live.left())))
        live.log(f"rank 0: SIGTERM -> exit {code0}")
        if code0 is None:
            live.fail("rank 0 did not stop within 70 s of SIGTERM", [p0])
        live.log("PASS")
        return 0
    finally:
        for p in procs:
            p.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
