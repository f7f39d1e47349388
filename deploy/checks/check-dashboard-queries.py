#!/usr/bin/env python3
"""Checks what the dashboard's queries return, beyond their types and names.

1. Every selector of an rlvr metric or `up` picks one run: it carries
   namespace="$namespace" (the dashboard variable), so two runs scraped by
   one Prometheus never merge into one line.
2. The "Since last update" panel, evaluated by the real `promtool test rules`
   (promql_expr_test) on the series a learner exports: empty while
   rlvr_learner_last_step_timestamp_seconds is still 0 (no update yet, the
   panel shows "no update yet"), the age in seconds after the first update,
   and one run's value unaffected by another run's learner.
Usage: check-dashboard-queries.py DASHBOARD.json. Exit 1 naming each problem.
"""
import json
import os
import re
import subprocess
import sys
import tempfile


def exprs(dash):
    out = []

    def walk(panels):
        for p in panels or []:
            walk(p.get("panels"))
            for t in p.get("targets", []):
                out.append((p["title"], t["refId"], t["expr"]))
    walk(dash["panels"])
    return out


def main():
    if len(sys.argv) != 2:
        print("usage: check-dashboard-queries.py DASHBOARD.json", file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        dash = json.load(f)
    problems = []
    names = [v.get("name") for v in dash.get("templating", {}).get("list", [])]
    if "namespace" not in names:
        problems.append("no dashboard variable `namespace` to pick a run")
    all_exprs = exprs(dash)
    for title, ref, expr in all_exprs:
        for m in re.finditer(r"\b(rlvr_[a-z_]+|up)\s*(\{[^}]*\})?", expr):
            sel = m.group(2) or ""
            if 'namespace="$namespace"' not in sel:
                problems.append(f'panel "{title}" {ref}: `{m.group(0)}` does not select namespace="$namespace" '
                                "(two runs in one Prometheus would merge)")
    since = [e for t, _, e in all_exprs if t == "Since last update"]
    if len(since) != 1:
        problems.append(f'expected one "Since last update" query, found {len(since)}')
    else:
        expr = since[0].replace("$namespace", "run-a")
        test = {
            "rule_files": [],
            "evaluation_interval": "1m",
            "tests": [
                {   # No update yet: the timestamp gauge is 0.
                    "interval": "1m",
                    "input_series": [
                        {"series": 'rlvr_learner_last_step_timestamp_seconds{namespace="run-a", job="rlvr-learner", instance="l:9090"}',
                         "values": "0x10"},
                        {"series": 'rlvr_learner_last_step_timestamp_seconds{namespace="run-b", job="rlvr-learner", instance="l:9090"}',
                         "values": "240x10"},
                    ],
                    "promql_expr_test": [{"expr": expr, "eval_time": "5m", "exp_samples": []}],
                },
                {   # Last update at t = 120 s, evaluated at t = 300 s: 180 s old.
                    "interval": "1m",
                    "input_series": [
                        {"series": 'rlvr_learner_last_step_timestamp_seconds{namespace="run-a", job="rlvr-learner", instance="l:9090"}',
                         "values": "0 60 120 120 120 120 120"},
                    ],
                    "promql_expr_test": [{"expr": expr, "eval_time": "5m",
                                          "exp_samples": [{"labels": "{}", "value": 180}]}],
                },
            ],
        }
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "since-last-update-test.yml")
            with open(path, "w") as f:
                json.dump(test, f, indent=1)  # JSON is YAML
            r = subprocess.run(["promtool", "test", "rules", path], capture_output=True, text=True,
                               timeout=60)
            if r.returncode != 0:
                problems.append(f'"Since last update" (`{expr}`) is wrong before or after the first update '
                                f"(promtool test rules):\n{r.stdout}{r.stderr}")
    for p in problems:
        print(f"FAIL {p}")
    if problems:
        print(f"check-dashboard-queries: {len(problems)} problem(s)")
        return 1
    print(f"check-dashboard-queries: {len(all_exprs)} queries select one run; "
          '"Since last update" is empty before the first update and the age after it')
    return 0


if __name__ == "__main__":
    sys.exit(main())
