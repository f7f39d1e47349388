#!/usr/bin/env python3
"""Writes OUT_DIR/report.md and OUT_DIR/report.json from what run-checks left
in OUT_DIR (results/*.status, results/*.json, results/ctest_gpu.xml,
results/bench_rlvr.jsonl, logs/*.log). Python standard library only.

  report.py OUT_DIR

Prints the verdict table; exits 1 when a check failed, else 0.
"""
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

# The targets at Qwen2.5-0.5B's shape on the GPU.
TARGET_TRAIN_MATMUL_FRACTION = 0.35
TARGET_DECODE64_VS_TRANSFORMERS = 3.0
TARGET_DECODE1_BANDWIDTH_FRACTION = 0.30

ORDER = ["ctest_gpu", "hf_tokenize", "hf_score", "system", "bench_rlvr", "bench_hf"]


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def read_json(path):
    text = read(path)
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def status(out, name):
    """(rc, seconds, limit) of a step, or None if it did not run."""
    text = read(os.path.join(out, "results", name + ".status"))
    if not text:
        return None
    rc, seconds, limit = (int(x) for x in text.split()[:3])
    return rc, seconds, limit


def tail(out, name, lines=5):
    text = read(os.path.join(out, "logs", name + ".log")) or ""
    return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:])


def timed_out(st):
    return st is not None and st[0] in (124, 137)


def ctest_check(out, st):
    """Verdict and details of the gpu-labelled tests from ctest's JUnit file
    and the "[figure]" lines of its log."""
    entry = {"name": "ctest_gpu"}
    xml = os.path.join(out, "results", "ctest_gpu.xml")
    tests = []
    if os.path.exists(xml):
        try:
            for case in ET.parse(xml).getroot().iter("testcase"):
                state = case.get("status") or "run"
                if case.find("failure") is not None or case.find("error") is not None:
                    state = "failed"
                elif case.find("skipped") is not None or state in ("notrun", "disabled"):
                    state = "skipped"
                elif state == "run":
                    state = "passed"
                # CTest appends gtest's "  # GetParam() = ..." to the name.
                name = (case.get("name") or "").split("  # GetParam()")[0]
                tests.append({"name": name, "status": state,
                              "seconds": float(case.get("time") or 0)})
        except ET.ParseError as e:
            entry["parse_error"] = str(e)
    log = read(os.path.join(out, "logs", "ctest_gpu.log")) or ""
    figures = {}
    for m in re.finditer(r"^(?:\d+: )?\[figure\] (\S+): (\S+)=(\S+)$", log, re.M):
        figures.setdefault(m.group(1), {})[m.group(2)] = float(m.group(3))
    count = {s: sum(1 for t in tests if t["status"] == s) for s in ("passed", "failed", "skipped")}
    entry.update(tests=tests, figures=figures, **count)
    if st is None:
        entry.update(verdict="fail", reason="did not run")
    elif timed_out(st):
        entry.update(verdict="fail", reason=f"timed out after {st[1]} s; {count}")
    elif count["failed"] or (st[0] != 0 and not tests):
        failed = [t["name"] for t in tests if t["status"] == "failed"]
        entry.update(verdict="fail", reason=f"{count['failed']} failed: {', '.join(failed[:8])}"
                     if failed else f"ctest exited {st[0]}: {tail(out, 'ctest_gpu')}")
    elif count["passed"]:
        entry.update(verdict="pass", reason=f"{count['passed']} passed, "
                                            f"{count['skipped']} skipped")
    else:
        no_cuda = "no CUDA" in log
        entry.update(verdict="skipped",
                     reason=("no CUDA: " if no_cuda else "") + f"all {count['skipped']} skipped")
    return entry


def python_check(out, name, st):
    result = read_json(os.path.join(out, "results", name + ".json"))
    entry = {"name": name}
    if st is None:
        entry.update(verdict="fail", reason="did not run")
    elif timed_out(st):
        entry.update(verdict="fail", reason=f"timed out after {st[1]} s: {tail(out, name)}")
    elif result is None:
        entry.update(verdict="fail", reason=f"exit {st[0]}, no result: {tail(out, name)}")
    else:
        entry.update(result)
        entry["name"] = name
    return entry


def system_check(out, st):
    entry = {"name": "system"}
    if st is None:
        entry.update(verdict="skipped",
                     reason="not provided (scripts/gpu_check/system-check does not exist)")
    elif timed_out(st):
        entry.update(verdict="fail", reason=f"timed out after {st[1]} s: {tail(out, 'system')}")
    else:
        verdict = {0: "pass", 77: "skipped"}.get(st[0], "fail")
        entry.update(verdict=verdict, reason=f"exit {st[0]}: {tail(out, 'system', 3)}")
        extra = read_json(os.path.join(out, "system", "result.json"))
        if extra:
            entry["result"] = extra
    return entry


def bench_check(out, st, device):
    entry = {"name": "bench_rlvr"}
    records = []
    text = read(os.path.join(out, "results", "bench_rlvr.jsonl")) or ""
    for line in text.split("\n"):
        try:
            records.append(json.loads(line))
        except ValueError:
            pass
    entry["records"] = records
    sections = {r.get("section") for r in records if not r.get("failed")}
    failed = [r["section"] for r in records if r.get("failed")]
    rehearsal = device != "cuda"
    if st is None:
        entry.update(verdict="fail", reason="did not run")
    elif st[0] == 3:
        entry.update(verdict="skipped", reason="no CUDA")
    elif timed_out(st):
        entry.update(verdict="fail", reason=f"timed out after {st[1]} s (figures so far kept)")
    elif st[0] != 0 or failed or not {"train", "decode"} <= sections:
        entry.update(verdict="fail", reason=f"exit {st[0]}, sections failed {failed}: "
                                            f"{tail(out, 'bench_rlvr')}")
    else:
        entry.update(verdict="pass", reason=("CPU rehearsal at a reduced size (not the targets' "
                                             "figures)" if rehearsal else "measured"))
    entry["rehearsal"] = rehearsal
    return entry


def figures(rlvr, hf):
    """The issue's figures and targets from the bench records."""
    by = {}
    for r in rlvr.get("records", []):
        if r.get("failed"):
            continue
        key = r["section"] if r["section"] != "decode" else f"decode{int(r['batch'])}"
        by[key] = r
    hf_decode = {int(d["batch"]): d for d in (hf.get("decode") or [])}
    out = {"rlvr": by, "transformers": {"train": hf.get("train"), "decode": hf_decode,
                                        "matmul_flops_per_s": hf.get("matmul_flops_per_s")}}
    ratios = {}
    if "train" in by and hf.get("train"):
        ratios["train_tokens_per_s"] = by["train"]["tokens_per_s"] / hf["train"]["tokens_per_s"]
    for b, d in hf_decode.items():
        if f"decode{b}" in by:
            ratios[f"decode_batch{b}_tokens_per_s"] = by[f"decode{b}"]["tokens_per_s"] / \
                d["tokens_per_s"]
    out["ratios"] = ratios
    targets = []

    def target(name, value, want, what):
        targets.append({"name": name, "value": value, "target": want, "what": what,
                        "met": None if value is None else value >= want})

    train = by.get("train")
    target("train_matmul_fraction", train and train["matmul_fraction"],
           TARGET_TRAIN_MATMUL_FRACTION,
           "training step model FLOP/s / measured bf16 matmul rate")
    target("decode64_vs_transformers", ratios.get("decode_batch64_tokens_per_s"),
           TARGET_DECODE64_VS_TRANSFORMERS, "decode tokens/s at batch 64, rlvr / transformers")
    d1 = by.get("decode1")
    target("decode1_bandwidth_fraction", d1 and d1["bandwidth_fraction"],
           TARGET_DECODE1_BANDWIDTH_FRACTION,
           "batch-1 decode tokens/s / (copy rate / weight bytes per token)")
    out["targets"] = targets
    return out


def fmt(x, digits=3):
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{digits}g}"
    return str(x)


def markdown(report):
    env = report["env"]
    lines = [f"# rlvr GPU checks: {env.get('commit', '?')} on {env.get('gpu') or 'no GPU'}", "",
             f"{env.get('date', '?')}, host {env.get('host', '?')} ({env.get('cpus', '?')} CPUs, "
             f"load {env.get('load', '?')}), device {env.get('device', '?')}; "
             f"{report['summary']}", "",
             "| check | verdict | seconds | what |", "|---|---|---|---|"]
    for c in report["checks"]:
        reason = str(c.get("reason", "")).replace("|", "/").replace("\n", " ")
        lines.append(f"| {c['name']} | {c['verdict']} | {fmt(c.get('seconds'))} | {reason} |")
    ctest = next(c for c in report["checks"] if c["name"] == "ctest_gpu")
    if ctest.get("tests"):
        lines += ["", "## gpu-labelled tests", "", "| test | status | s |", "|---|---|---|"]
        for t in ctest["tests"]:
            lines.append(f"| {t['name']} | {t['status']} | {t['seconds']:.1f} |")
    if ctest.get("figures"):
        lines += ["", "### Figures the tests printed", ""]
        for test, figs in sorted(ctest["figures"].items()):
            lines.append(f"- {test}: " + ", ".join(f"{k}={fmt(v)}" for k, v in figs.items()))
    for name in ("hf_tokenize", "hf_score"):
        c = next(c for c in report["checks"] if c["name"] == name)
        detail = c.get("models") or c.get("fixtures")
        if detail:
            lines += ["", f"## {name}", ""]
            for k, v in detail.items():
                lines.append(f"- {k}: " + ", ".join(f"{a}={fmt(b)}" for a, b in v.items()
                                                    if not isinstance(b, (dict, list))))
    f = report["figures"]
    rl, hf = f["rlvr"], f["transformers"]
    lines += ["", "## Qwen2.5-0.5B shape, random weights" +
              (" (CPU rehearsal: reduced size, not the targets' figures)"
               if report["bench_rehearsal"] else ", bfloat16"), ""]
    if "matmul" in rl:
        lines.append(f"- matmul rate (rlvr bench, torch::mm n={int(rl['matmul']['n'])}): "
                     f"{rl['matmul']['flops_per_s'] / 1e12:.4g} TFLOP/s; transformers run: "
                     f"{fmt((hf.get('matmul_flops_per_s') or 0) / 1e12 or None, 4)} TFLOP/s")
    if "copy" in rl:
        lines.append(f"- copy rate (read + written): {rl['copy']['bytes_per_s'] / 1e9:.4g} GB/s")
    train, calls = rl.get("train", {}), [d.get("aten_calls_per_step") for k, d in rl.items()
                                            if k.startswith("decode")]
    calls = [c for c in calls if c is not None]
    if calls or "aten_calls_adamw" in train:
        lines.append("- ATen calls (each about a kernel launch on CUDA): per decode step "
                     f"{fmt(calls[0] if calls else None, 5)}; per training step forward + "
                     f"backward {fmt(train.get('aten_calls_forward_backward'), 6)}, "
                     f"clip_grad_norm_ {fmt(train.get('aten_calls_clip'), 6)}, "
                     f"AdamW {fmt(train.get('aten_calls_adamw'), 6)}")
    lines += ["", "| work | rlvr | transformers | rlvr / transformers |", "|---|---|---|---|"]
    if "train" in rl:
        t = rl["train"]
        ht = hf.get("train") or {}
        lines.append(f"| train step, batch {int(t['batch'])} x {int(t['seq'])} | "
                     f"{t['tokens_per_s']:.1f} tokens/s ({t['step_s']:.3g} s; "
                     f"{100 * t['matmul_fraction']:.1f}% of matmul rate) | "
                     f"{fmt(ht.get('tokens_per_s'), 5)} tokens/s | "
                     f"{fmt(f['ratios'].get('train_tokens_per_s'))} |")
    for key in sorted((k for k in rl if k.startswith("decode")), key=lambda k: int(k[6:])):
        d = rl[key]
        b = int(d["batch"])
        h = hf["decode"].get(b, {})
        lines.append(f"| decode batch {b}, prompt {int(d['prompt'])}, {int(d['new_tokens'])} new | "
                     f"{d['tokens_per_s']:.1f} tokens/s ({100 * d['bandwidth_fraction']:.2f}% of "
                     f"bandwidth limit; model alone {d['model_only_tokens_per_s']:.1f}) | "
                     f"{fmt(h.get('tokens_per_s'), 5)} tokens/s | "
                     f"{fmt(f['ratios'].get(f'decode_batch{b}_tokens_per_s'))} |")
    lines += ["", "| target | value | wanted | met |", "|---|---|---|---|"]
    for t in f["targets"]:
        met = "-" if t["met"] is None or report["bench_rehearsal"] else ("yes" if t["met"] else "NO")
        lines.append(f"| {t['what']} | {fmt(t['value'])} | >= {t['target']} | {met} |")
    lines += ["", "Logs: logs/<check>.log; raw results: results/.", ""]
    return "\n".join(lines)


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    out = sys.argv[1]
    env = {}
    for line in (read(os.path.join(out, "results", "env.txt")) or "").splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            env[k] = v
    device = env.get("device", "cpu")
    checks = []
    for name in ORDER:
        st = status(out, name)
        if os.path.exists(os.path.join(out, "results", name + ".skip")):
            checks.append({"name": name, "verdict": "skipped",
                           "reason": "not run (RLVR_CHECK_SKIP)"})
            continue
        if os.path.exists(os.path.join(out, "results", name + ".nobudget")):
            checks.append({"name": name, "verdict": "fail",
                           "reason": "not started: the run's time budget was spent"})
            continue
        if name == "ctest_gpu":
            c = ctest_check(out, st)
        elif name == "system":
            c = system_check(out, st)
        elif name == "bench_rlvr":
            c = bench_check(out, st, device)
        else:
            c = python_check(out, name, st)
        if st is not None:
            c.update(exit=st[0], seconds=st[1], limit=st[2])
        checks.append(c)
    rlvr = next(c for c in checks if c["name"] == "bench_rlvr")
    hf = next(c for c in checks if c["name"] == "bench_hf")
    counts = {v: sum(1 for c in checks if c["verdict"] == v) for v in ("pass", "fail", "skipped")}
    report = {"env": env, "checks": checks, "figures": figures(rlvr, hf),
              "bench_rehearsal": rlvr.get("rehearsal", True),
              "summary": f"{counts['pass']} passed, {counts['fail']} failed, "
                         f"{counts['skipped']} skipped"}
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump(report, f, indent=1, sort_keys=True)
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(markdown(report))
    for c in checks:
        print(f"{c['name']:12s} {c['verdict'].upper():8s} {c.get('reason', '')}")
    for t in report["figures"]["targets"]:
        state = "rehearsal" if report["bench_rehearsal"] or t["met"] is None else \
            ("met" if t["met"] else "MISSED")
        print(f"target {t['name']}: {fmt(t['value'])} (>= {t['target']}): {state}")
    print(f"run-checks: {report['summary']}; {os.path.join(out, 'report.md')}")
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
