"""Shared pieces of the GPU kit's Python checks (scripts/gpu_check/*.py).

Every check prints one verdict line and writes a JSON object
{"check", "verdict", "reason", ...figures} for run-checks' report. Verdicts
and exit statuses: pass (0), fail (1), skipped (77, e.g. a Python package or
CUDA missing); a usage or setup error exits 2.
"""
import importlib
import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys

EXIT = {"pass": 0, "fail": 1, "skipped": 77}


def optional_import(name):
    """The module, or None when it cannot be imported (with the reason)."""
    try:
        return importlib.import_module(name), None
    except Exception as e:  # ImportError, or a broken install.
        return None, f"python package '{name}' is not importable ({type(e).__name__}: {e})"


def load_script(path, name):
    """A Python script without a .py suffix (scripts/hf-reference-score) as a
    module."""
    loader = importlib.machinery.SourceFileLoader(name, path)
    spec = importlib.util.spec_from_loader(name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def finish(out_path, result):
    """Writes result (a dict with check, verdict, reason) and exits."""
    verdict = result["verdict"]
    assert verdict in EXIT, verdict
    if out_path:
        os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
        with open(out_path, "w") as f:
            json.dump(result, f, indent=1, sort_keys=True)
            f.write("\n")
    line = f"{result['check']}: {verdict.upper()}"
    if result.get("reason"):
        line += f": {result['reason']}"
    print(line, flush=True)
    sys.exit(EXIT[verdict])


def run(cmd, **kwargs):
    """Runs cmd (a list), returns CompletedProcess; stdout/stderr captured."""
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          **kwargs)


def read_jsonl(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                rows.append(json.loads(line))
    return rows


def byte_to_unicode():
    """GPT-2's byte-level alphabet: byte b -> the character spelling it."""
    direct = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + \
        list(range(0xAE, 0x100))
    spelling = {b: b for b in direct}
    n = 256
    for b in range(256):
        if b not in spelling:
            spelling[b] = n
            n += 1
    return {b: chr(c) for b, c in spelling.items()}


def write_byte_tokenizer(model_dir):
    """A byte-level BPE tokenizer (256 byte tokens, <|bos|> = 256,
    <|endoftext|> = 257, no merges) in model_dir, so that rlvr's factory can
    resolve a fixture directory (which has none) whose sequences are given
    as ids."""
    vocab = {ch: b for b, ch in byte_to_unicode().items()}

    def special(i, text):
        return {"id": i, "content": text, "single_word": False, "lstrip": False,
                "rstrip": False, "normalized": False, "special": True}

    level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
             "use_regex": True}
    tok = {"version": "1.0", "truncation": None, "padding": None,
           "added_tokens": [special(256, "<|bos|>"), special(257, "<|endoftext|>")],
           "normalizer": None, "pre_tokenizer": level, "post_processor": None,
           "decoder": dict(level, add_prefix_space=True),
           "model": {"type": "BPE", "dropout": None, "unk_token": None,
                     "continuing_subword_prefix": "", "end_of_word_suffix": "",
                     "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                     "vocab": vocab, "merges": []}}
    with open(os.path.join(model_dir, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    with open(os.path.join(model_dir, "tokenizer_config.json"), "w") as f:
        json.dump({"bos_token": "<|bos|>", "eos_token": "<|endoftext|>",
                   "pad_token": "<|endoftext|>", "add_bos_token": True}, f, indent=2)
    with open(os.path.join(model_dir, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": 256, "eos_token_id": 257}, f, indent=2)


def torch_device_or_skip(torch, device):
    """None when `device` can be used, else the reason it cannot."""
    if device.startswith("cuda") and not torch.cuda.is_available():
        return "no CUDA: torch.cuda.is_available() is false"
    return None
