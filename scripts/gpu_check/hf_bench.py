#!/usr/bin/env python3
"""The transformers side of real_shape_bench: the same work on the same
machine, for rlvr/transformers ratios (run-checks prints them).

A Qwen2ForCausalLM with Qwen2.5-0.5B's shape (hidden 896, 24 layers, 14
heads, 2 KV heads, FFN 4864, vocab 151936, tied embeddings), random weights:
  - [matmul] torch.mm bfloat16 8192^3 (3 warm-ups, 10 timed), as the bench;
  - [train] one training step: float32 parameters under torch.autocast
    (bfloat16), completion log-probs (+ entropy, detached) of B rows of L
    tokens (P prompt), a token-mean loss, backward, clip_grad_norm_(1.0),
    torch.optim.AdamW (its default CUDA implementation); tokens/s;
  - [decode] model.generate with its KV cache in bfloat16 (sdpa attention),
    do_sample at T=1 (top_k 0, top_p 1), at each batch size: P-token prompts,
    exactly N new tokens (min_new_tokens = max_new_tokens = N; the output
    length is checked); tokens/s.
CUDA work is timed between torch.cuda.synchronize() calls.

  hf_bench.py [--device cuda] [--out result.json] [--layers 24] [--batch 8]
              [--seq 1024] [--prompt 128] [--steps 3] [--decode-batch 1,64,256]
              [--decode-prompt 128] [--decode-tokens 256] [--sections train,decode]

Needs torch and transformers (else "skipped", exit 77).
"""
import argparse
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checklib  # noqa: E402

VOCAB = 151936


def config(transformers, layers):
    kw = dict(vocab_size=VOCAB, hidden_size=896, intermediate_size=4864,
              num_hidden_layers=layers, num_attention_heads=14, num_key_value_heads=2,
              tie_word_embeddings=True, rms_norm_eps=1e-6, max_position_embeddings=32768,
              rope_theta=1000000.0, use_sliding_window=False, bos_token_id=151643,
              eos_token_id=151643, pad_token_id=151643)
    try:
        return transformers.Qwen2Config(**kw)
    except TypeError:  # A transformers that takes RoPE settings elsewhere.
        kw.pop("rope_theta")
        return transformers.Qwen2Config(**kw)


def build(torch, transformers, cfg, device, dtype):
    # Initialised directly on the device (fast); sdpa is transformers' default.
    with torch.device(device):
        model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa")
    return model.to(device=device, dtype=dtype)


def sync(torch, device):
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


def matmul_rate(torch, device, n=8192):
    dtype = torch.bfloat16 if str(device).startswith("cuda") else torch.float32
    x = torch.randn(n, n, device=device, dtype=dtype)
    y = torch.randn(n, n, device=device, dtype=dtype)
    for _ in range(3):
        torch.mm(x, y)
    sync(torch, device)
    t0 = time.perf_counter()
    for _ in range(10):
        torch.mm(x, y)
    sync(torch, device)
    return 2.0 * n ** 3 * 10 / (time.perf_counter() - t0)


def train(torch, transformers, cfg, device, args):
    model = build(torch, transformers, cfg, device, torch.float32)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6)
    gen = torch.Generator(device="cpu").manual_seed(0)
    ids = torch.randint(0, VOCAB, (args.batch, args.seq), generator=gen).to(device)
    p = args.prompt
    autocast = str(device).startswith("cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=autocast):
            logits = model(input_ids=ids).logits[:, p - 1:-1]
        logp = torch.log_softmax(logits.float(), -1)
        picked = logp.gather(-1, ids[:, p:].unsqueeze(-1)).squeeze(-1)
        with torch.no_grad():
            entropy = -(logp.exp() * logp).sum(-1)
        loss = -picked.mean()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return entropy

    sync(torch, device)
    t0 = time.perf_counter()
    step()
    sync(torch, device)
    warm = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(args.steps):
        step()
    sync(torch, device)
    s = (time.perf_counter() - t0) / args.steps
    tokens = args.batch * args.seq
    print(f"[train] transformers {transformers.__version__}: batch {args.batch} x {args.seq} "
          f"({p} prompt), autocast bf16 + AdamW: warm-up {warm:.2f} s, step {s:.3f} s: "
          f"{tokens / s:.1f} tokens/s", flush=True)
    return {"batch": args.batch, "seq": args.seq, "prompt": p, "steps": args.steps,
            "warmup_s": warm, "step_s": s, "tokens_per_s": tokens / s}


def decode(torch, transformers, cfg, device, args):
    dtype = torch.bfloat16 if str(device).startswith("cuda") else torch.float32
    model = build(torch, transformers, cfg, device, dtype).eval()
    out = []
    for b in [int(x) for x in args.decode_batch.split(",") if x]:
        gen = torch.Generator(device="cpu").manual_seed(b)
        ids = torch.randint(0, VOCAB, (b, args.decode_prompt), generator=gen).to(device)
        mask = torch.ones_like(ids)
        kw = dict(attention_mask=mask, do_sample=True, temperature=1.0, top_k=0, top_p=1.0,
                  use_cache=True, eos_token_id=cfg.eos_token_id, pad_token_id=cfg.pad_token_id)
        with torch.no_grad():
            model.generate(ids, max_new_tokens=2, min_new_tokens=2, **kw)  # Warm-up.
            sync(torch, device)
            t0 = time.perf_counter()
            res = model.generate(ids, max_new_tokens=args.decode_tokens,
                                 min_new_tokens=args.decode_tokens, **kw)
            sync(torch, device)
            s = time.perf_counter() - t0
        new = res.shape[1] - args.decode_prompt
        if new != args.decode_tokens:
            raise RuntimeError(f"generate made {new} new tokens, not {args.decode_tokens}")
        tokens = b * new
        print(f"[decode] transformers generate, batch {b}, prompt {args.decode_prompt}, "
              f"{new} new tokens, T=1: {s:.2f} s: {tokens / s:.1f} tokens/s", flush=True)
        out.append({"batch": b, "prompt": args.decode_prompt, "new_tokens": new, "seconds": s,
                    "tokens_per_s": tokens / s})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out")
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--decode-batch", default="1,64,256")
    ap.add_argument("--decode-prompt", type=int, default=128)
    ap.add_argument("--decode-tokens", type=int, default=256)
    ap.add_argument("--sections", default="matmul,train,decode")
    args = ap.parse_args()
    result = {"check": "hf_bench", "device": args.device, "layers": args.layers}
    torch, why = checklib.optional_import("torch")
    transformers, why_tf = checklib.optional_import("transformers") if torch else (None, None)
    skip = why or why_tf or checklib.torch_device_or_skip(torch, args.device)
    if skip:
        result.update(verdict="skipped", reason=skip)
        checklib.finish(args.out, result)
    result.update(torch_version=torch.__version__, transformers_version=transformers.__version__)
    if str(args.device).startswith("cuda"):
        result["device_name"] = torch.cuda.get_device_name(0)
    cfg = config(transformers, args.layers)
    torch.manual_seed(0)
    failures = []
    for section in ("matmul", "train", "decode"):
        if section not in args.sections:
            continue
        try:
            if section == "matmul":
                result["matmul_flops_per_s"] = matmul_rate(torch, args.device)
                print(f"[matmul] torch.mm 8192^3: {result['matmul_flops_per_s'] / 1e12:.1f} "
                      f"TFLOP/s", flush=True)
            elif section == "train":
                result["train"] = train(torch, transformers, cfg, args.device, args)
                if str(args.device).startswith("cuda"):
                    torch.cuda.empty_cache()  # The training model is gone.
            else:
                result["decode"] = decode(torch, transformers, cfg, args.device, args)
        except Exception as e:  # Keep the other sections' figures.
            traceback.print_exc()
            failures.append(f"{section}: {type(e).__name__}: {e}")
    if failures:
        result.update(verdict="fail", reason="; ".join(failures))
    else:
        result.update(verdict="pass", reason="measured (figures in the report)")
    checklib.finish(args.out, result)


if __name__ == "__main__":
    main()
