#!/usr/bin/env python3
"""The alert unit tests feed the rules the series the code really exports.

For every `series:` of a promtool test file: its metric name must be in the
metric contract (deploy/checks/metrics-contract.txt; histograms as _bucket,
_sum, _count) or be Prometheus' `up`, and its labels other than the scrape's
own (job, instance, namespace, pod, rank, le) must be labels the contract
declares for it. A `reason` must be one the code produces:
rlvr_learner_groups_dropped_total's from learner/learner_metrics.cc and the
`label`s of proto/rlvr/v1/diagnostics.proto,
rlvr_learner_groups_rejected_total's from the RejectReason enum of
proto/rlvr/v1/session.proto (lower case, without REJECT_REASON_).
Every alert of the rule files must have a firing test (non-empty exp_alerts).
Usage: check-rule-tests.py TEST.yml... Exit 1 naming each problem.
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCRAPE_LABELS = {"job", "instance", "namespace", "pod", "rank", "le"}


def contract():
    out = {"up": (None, set())}
    for line in open(os.path.join(HERE, "metrics-contract.txt")):
        if line.startswith("#") or not line.strip():
            continue
        parts = line.split()
        labels = set(parts[2].split(",")) if len(parts) > 2 else set()
        out[parts[0]] = (parts[1], labels)
    return out


def reasons():
    # The ingest's reasons are added in learner_metrics.cc; the batcher's are
    # the `label`s of the update diagnostics exported to the family.
    cc = open(os.path.join(ROOT, "learner/learner_metrics.cc")).read()
    dropped = set(re.findall(
        r'"rlvr_learner_groups_dropped_total"\)\s*\.Add\(\{\{"reason",\s*"([a-z_]+)"\}\}\)', cc))
    diagnostics = open(os.path.join(ROOT, "proto/rlvr/v1/diagnostics.proto")).read()
    for option in re.findall(r"\{([^{}]*)\}", diagnostics):
        if re.search(r'metric:\s*"rlvr_learner_groups_dropped_total"', option):
            dropped.update(re.findall(r'label:\s*"reason=([a-z_]+)"', option))
    proto = open(os.path.join(ROOT, "proto/rlvr/v1/session.proto")).read()
    rejected = {m.lower() for m in re.findall(r"\bREJECT_REASON_([A-Z_]+)\s*=", proto)} - {"unspecified"}
    return {"rlvr_learner_groups_dropped_total": dropped, "rlvr_learner_groups_rejected_total": rejected}


def main():
    files = sys.argv[1:]
    if not files:
        print("usage: check-rule-tests.py TEST.yml...", file=sys.stderr)
        return 2
    known, why = contract(), reasons()
    problems, n_series, firing, alerts = [], 0, set(), set()
    for path in files:
        text = open(path).read()
        base = os.path.dirname(path)
        for rf in re.findall(r"(?m)^\s+-\s+(\S+\.ya?ml)\s*$", text.split("tests:")[0]):
            alerts |= set(re.findall(r"(?m)^\s+- alert:\s*(\S+)", open(os.path.join(base, rf)).read()))
        for m in re.finditer(r"series:\s*'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?'", text):
            n_series += 1
            name, sel = m.group(1), m.group(2) or ""
            base_name = re.sub(r"_(bucket|sum|count)$", "", name)
            entry = known.get(name) or (known.get(base_name) if base_name != name else None)
            if entry is None or (base_name != name and entry[0] != "histogram"):
                problems.append(f"{path}: series {name} is not exported by rlvr (not in metrics-contract.txt)")
                continue
            labels = dict(re.findall(r'(\w+)="([^"]*)"', sel))
            for k, v in labels.items():
                if k in SCRAPE_LABELS:
                    continue
                if k not in entry[1]:
                    problems.append(f"{path}: series {name} has label {k}, which rlvr does not export on it")
                elif k == "reason" and name in why and v not in why[name]:
                    problems.append(f'{path}: {name}{{reason="{v}"}}: rlvr exports reasons {sorted(why[name])}')
        # Alerts with a firing expectation: an alert_rule_test whose
        # exp_alerts is a non-empty list.
        for m in re.finditer(r"alertname:\s*(\S+)\s*\n\s*exp_alerts:\s*\n\s*-", text):
            firing.add(m.group(1))
    for a in sorted(alerts - firing):
        problems.append(f"alert {a} has no unit test in which it fires")
    for p in problems:
        print(f"FAIL {p}")
    if problems:
        print(f"check-rule-tests: {len(problems)} problem(s)")
        return 1
    print(f"check-rule-tests: {n_series} input series use exported metrics, labels and reasons; "
          f"all {len(alerts)} alerts fire in a test")
    return 0


if __name__ == "__main__":
    sys.exit(main())
