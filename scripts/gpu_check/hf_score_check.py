#!/usr/bin/env python3
"""`rlvr score` against Hugging Face transformers' forward on the HF fixtures.

For each fixture of tests/data/hf (scripts/make-hf-fixtures), scores its
expected.json sequences with `rlvr score --model DIR --device D --dtype
float32` and compares every next-token log-prob and greedy token with
  - transformers: AutoModelForCausalLM.from_pretrained(DIR) in float32 with
    eager attention on the same device (TF32 off) -- the verdict;
  - the float64 numpy forward of scripts/hf-reference-score and the committed
    float64 expected.json -- figures, and a failure if rlvr is off them.
Log-probs must agree within --tolerance (1e-4); greedy tokens must agree
except where the reference's top two are closer than the tolerance.

  hf_score_check.py --rlvr BUILD/rlvr [--device cuda] [--out result.json]
                    [--fixtures tests/data/hf] [--workdir DIR] [--tolerance 1e-4]

Needs numpy; torch and transformers for the verdict (without them the
check reports "skipped" after the numpy comparison).
"""
import argparse
import json
import math
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checklib  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURES = ["qwen2_f32_tied", "qwen3_f32_tied", "qwen3_bf16_untied_sharded",
            "llama_f32_tied_rope_llama3", "llama_bf16_untied_bias"]


def prepare(fixture_dir, work):
    """A copy of the fixture with a tokenizer (rlvr's factory needs one)."""
    os.makedirs(work, exist_ok=True)
    for name in os.listdir(fixture_dir):
        if name.endswith(".json") and name != "expected.json" or name.endswith(".safetensors"):
            shutil.copyfile(os.path.join(fixture_dir, name), os.path.join(work, name))
    checklib.write_byte_tokenizer(work)


def compare(rows, reference_logp, tol):
    """Max |log-prob difference| and greedy (checked, disagreements, first)
    of rlvr's rows against per-row reference log-prob matrices [L, V]."""
    import numpy as np
    worst, checked, bad, first = 0.0, 0, 0, ""
    for r, (row, logp) in enumerate(zip(rows, reference_logp)):
        ids = row["ids"]
        for t, lp in enumerate(row["logprobs"]):
            worst = max(worst, abs(lp - float(logp[t, ids[t + 1]])))
        for t, g in enumerate(row["greedy"]):
            top = np.argsort(logp[t])[-2:]
            checked += 1
            close = logp[t, top[1]] - logp[t, top[0]] < tol
            if g != top[1] and not (close and g == top[0]):
                bad += 1
                if not first:
                    first = f"sequence {r} position {t}: rlvr {g}, reference {int(top[1])}"
    return worst, checked, bad, first


def log_softmax64(z):
    import numpy as np
    z = np.asarray(z, dtype=np.float64)
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def transformers_logp(torch, transformers, model_dir, device, seqs):
    """Per sequence [L, V] float64 log-probs from transformers' float32
    forward (eager attention) on `device`, and the model's class name."""
    kwargs = dict(attn_implementation="eager")
    try:
        model = transformers.AutoModelForCausalLM.from_pretrained(
            model_dir, dtype=torch.float32, **kwargs)
    except TypeError:
        model = transformers.AutoModelForCausalLM.from_pretrained(
            model_dir, torch_dtype=torch.float32, **kwargs)
    model = model.to(device=device, dtype=torch.float32).eval()
    assert all(p.dtype == torch.float32 for p in model.parameters())
    out = []
    with torch.no_grad():
        for ids in seqs:
            x = torch.tensor([ids], dtype=torch.long, device=device)
            logits = model(input_ids=x).logits[0].to(torch.float64)
            out.append(torch.log_softmax(logits, -1).cpu().numpy())
    return out, type(model).__name__


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rlvr", required=True, help="the rlvr binary")
    ap.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu (both sides)")
    ap.add_argument("--out", help="result JSON")
    ap.add_argument("--fixtures", default=os.path.join(ROOT, "tests/data/hf"))
    ap.add_argument("--workdir", help="scratch directory (default: a temporary one)")
    ap.add_argument("--tolerance", type=float, default=1e-4)
    args = ap.parse_args()
    result = {"check": "hf_score", "device": args.device, "tolerance": args.tolerance,
              "fixtures": {}}

    np, why = checklib.optional_import("numpy")
    if np is None:
        result.update(verdict="skipped", reason=why)
        checklib.finish(args.out, result)
    torch, why_torch = checklib.optional_import("torch")
    transformers, why_tf = checklib.optional_import("transformers") if torch else (None, None)
    skip = why_torch or why_tf
    if torch is not None and not skip:
        skip = checklib.torch_device_or_skip(torch, args.device)
    if skip:
        skip = f"transformers' forward not run: {skip}"
    if torch is not None:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    if transformers is not None:
        result["transformers_version"] = transformers.__version__
    if torch is not None:
        result["torch_version"] = torch.__version__
    reference = checklib.load_script(os.path.join(ROOT, "scripts/hf-reference-score"),
                                     "hf_reference_score")

    work = args.workdir or tempfile.mkdtemp(prefix="rlvr-hf-score-")
    failures = []
    for name in FIXTURES:
        fixture_dir = os.path.join(args.fixtures, name)
        model_dir = os.path.join(work, name)
        prepare(fixture_dir, model_dir)
        with open(os.path.join(fixture_dir, "expected.json")) as f:
            expected = json.load(f)["sequences"]
        seqs = [s["ids"] for s in expected]
        ids_path = os.path.join(work, name + ".ids.jsonl")
        with open(ids_path, "w") as f:
            for ids in seqs:
                f.write(json.dumps({"ids": ids}) + "\n")
        p = checklib.run([args.rlvr, "score", "--model", model_dir, "--input", ids_path,
                          "--device", args.device, "--dtype", "float32"])
        entry = {"sequences": len(seqs)}
        result["fixtures"][name] = entry
        if p.returncode != 0:
            entry["rlvr_error"] = p.stderr.strip()[-2000:]
            failures.append(f"{name}: rlvr score exited {p.returncode}: {p.stderr.strip()[-300:]}")
            continue
        rows = [json.loads(line) for line in p.stdout.split("\n") if line.strip()]
        if [r["ids"] for r in rows] != seqs:
            failures.append(f"{name}: rlvr score returned other sequences")
            continue
        # The committed float64 reference (log-probs of the actual tokens).
        entry["rlvr_vs_expected_max_abs"] = max(
            (abs(a - b) for r, s in zip(rows, expected)
             for a, b in zip(r["logprobs"], s["logprobs"])), default=0.0)
        # The numpy float64 forward of scripts/hf-reference-score.
        with open(os.path.join(model_dir, "config.json")) as f:
            config = json.load(f)
        weights = reference.read_weights(model_dir)
        numpy_logp = [log_softmax64(reference.logits(config, weights, ids)) for ids in seqs]
        worst, checked, bad, first = compare(rows, numpy_logp, args.tolerance)
        entry.update(rlvr_vs_numpy_max_abs=worst, numpy_greedy_checked=checked,
                     numpy_greedy_disagreements=bad)
        if worst > args.tolerance or bad:
            failures.append(f"{name}: rlvr vs the float64 numpy forward: max |diff| {worst:.3g}"
                            + (f", greedy {first}" if bad else ""))
        if skip:
            continue
        hf_logp, cls = transformers_logp(torch, transformers, model_dir, args.device, seqs)
        worst, checked, bad, first = compare(rows, hf_logp, args.tolerance)
        entry.update(transformers_class=cls, rlvr_vs_transformers_max_abs=worst,
                     greedy_checked=checked, greedy_disagreements=bad,
                     transformers_vs_numpy_max_abs=max(
                         float(np.abs(a - b).max()) for a, b in zip(hf_logp, numpy_logp)))
        if worst > args.tolerance or bad:
            failures.append(f"{name}: rlvr vs transformers: max |diff| {worst:.3g}"
                            + (f", greedy {first}" if bad else "")
                            + f" (transformers vs the float64 numpy forward: "
                              f"{entry['transformers_vs_numpy_max_abs']:.3g})")
    if args.workdir is None:
        shutil.rmtree(work, ignore_errors=True)

    figures = result["fixtures"].values()
    worst_numpy = max((e.get("rlvr_vs_numpy_max_abs", math.nan) for e in figures), default=0)
    if failures:
        result.update(verdict="fail", reason="; ".join(failures))
    elif skip:
        result.update(verdict="skipped",
                      reason=f"{skip} (rlvr vs the float64 numpy forward agreed: max |diff| "
                             f"{worst_numpy:.3g})")
    else:
        worst_hf = max(e["rlvr_vs_transformers_max_abs"] for e in figures)
        greedy = sum(e["greedy_checked"] for e in figures)
        result.update(verdict="pass", max_abs_vs_transformers=worst_hf,
                      reason=f"{len(FIXTURES)} fixtures, "
                             f"{sum(e['sequences'] for e in figures)} sequences on {args.device}: "
                             f"max |rlvr - transformers| {worst_hf:.3g} (tolerance "
                             f"{args.tolerance:g}), {greedy} greedy tokens agree; vs float64 "
                             f"{worst_numpy:.3g}")
    checklib.finish(args.out, result)


if __name__ == "__main__":
    main()
