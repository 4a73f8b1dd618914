#!/usr/bin/env python3
"""The peer for the engine's prefill (time to first token): a Llama prefill written in plain PyTorch.

    python3 torch_prefill_bench.py [--model llama3-8b] [--prompts 512,4096,8192] [--runs 10] [--attention-only]

Runs on a GPU host with PyTorch (nothing is downloaded). Builds the model's weights at random on
the GPU as torch_decode_bench.py does (bf16, the Hugging Face layout: fused QKV and gate/up
nn.Linear weights [out, in], LlamaRMSNorm, RoPE, SwiGLU, the LM head), and times the prefill of a
prompt of P tokens at positions 0 .. P-1 in one eager pass (batch 1): per layer the cuBLAS GEMMs,
F.scaled_dot_product_attention(is_causal=True) with grouped-query heads (enable_gqa), and each
layer's keys and values written into a KV cache of P positions; then the final norm, the LM head of
the last position only and its argmax, as the engine's bench times its whole chunked prefill.
Prints the median over --runs runs (CUDA events around each, after 2 warm-up runs) per prompt, the
dense products' TFLOP/s, and one machine-readable line per prompt:

    torch-prefill model=llama3-8b prompt=4096 median_ms=129.8 runs=10 tflops=473.1 peak_gib=17.2 torch=2.11.0+cu130

--attention-only times F.scaled_dot_product_attention(is_causal=True, enable_gqa=True) alone on one layer's
queries, keys and values of P positions (random bf16), the peer of the example's prefill attention kernel
(`ar4j_llama_kernels_test --bench-prefill`: the same shapes and the same FLOP count, 4 * head_dim * heads *
P (P + 1) / 2 FLOPs), one line per prompt and backend:

    torch-attention model=llama3-8b prompt=P backend=NAME ms_per_layer=MS ms_32_layers=32*MS tflops=T

with PyTorch's own choice of backend (default), then each backend forced where it takes the inputs.

Exit codes: 0 done, 2 usage or no GPU.
"""

import argparse
import statistics
import sys

from torch_decode_bench import SHAPES

WARMUP_RUNS = 2


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(SHAPES), default="llama3-8b")
    parser.add_argument("--prompts", default="512,4096,8192", metavar="P[,P...]",
                        help="prompt lengths, each at most the model's max_position_embeddings (default 512,4096,8192)")
    parser.add_argument("--runs", type=int, default=10, metavar="N", help="timed runs per prompt (default 10)")
    parser.add_argument("--attention-only", action="store_true",
                        help="time the causal SDPA of one layer alone (the prefill attention kernel's peer)")
    args = parser.parse_args(argv)
    s = SHAPES[args.model]
    try:
        args.prompts = [int(p) for p in args.prompts.split(",")]
    except ValueError:
        parser.error(f"--prompts: a comma-separated list of lengths, got {args.prompts!r}")
    for p in args.prompts:
        if p < 1 or p > s["max_positions"]:
            parser.error(f"--prompts: {p} is outside 1..{s['max_positions']} for {args.model}")
    if args.runs < 1:
        parser.error(f"--runs must be at least 1, got {args.runs}")
    return args


def main(argv=None):
    args = parse_args(argv)
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        print(f"torch_prefill_bench: PyTorch is not importable here ({e}); run it with the GPU host's Python "
              f"(/opt/torch/.venv/bin/python3)", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("torch_prefill_bench: no CUDA GPU", file=sys.stderr)
        return 2
    if args.attention_only:
        return attention_only(args, torch, F)
    s = SHAPES[args.model]
    hidden, nh, nkv, hd = s["hidden"], s["heads"], s["kv_heads"], s["head_dim"]
    inter, vocab, eps = s["intermediate"], s["vocab"], s["eps"]
    dev, dt = torch.device("cuda"), torch.bfloat16
    torch.manual_seed(20261203)

    def weight(*shape):
        return (torch.randn(*shape, device=dev, dtype=torch.float32) * 0.02).to(dt)

    def norm_weight():
        return (1.0 + 0.1 * torch.randn(hidden, device=dev, dtype=torch.float32)).to(dt)

    layers = [dict(attn_norm=norm_weight(), wqkv=weight((nh + 2 * nkv) * hd, hidden), wo=weight(hidden, nh * hd),
                   mlp_norm=norm_weight(), wgu=weight(2 * inter, hidden), wdown=weight(hidden, inter))
              for _ in range(s["layers"])]
    embedding = weight(vocab, hidden)
    final_norm = norm_weight()
    lm_head = weight(vocab, hidden)
    inv_freq = 1.0 / (s["theta"] ** (torch.arange(0, hd, 2, device=dev, dtype=torch.int64).float() / hd))
    next_token = torch.zeros(1, device=dev, dtype=torch.int64)

    def rms_norm(x, w):
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
        return w * xf.to(x.dtype)

    def rotate_half(x):
        half = x.shape[-1] // 2
        return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

    def prefill(tokens, cos, sin, caches):
        p = tokens.shape[0]
        x = F.embedding(tokens, embedding)                                   # [P, hidden]
        for layer, (kc, vc) in zip(layers, caches):
            h = rms_norm(x, layer["attn_norm"])
            q, k, v = F.linear(h, layer["wqkv"]).split([nh * hd, nkv * hd, nkv * hd], dim=-1)
            q = q.view(p, nh, hd).transpose(0, 1)                            # [nh, P, hd]
            k = k.view(p, nkv, hd).transpose(0, 1)
            v = v.view(p, nkv, hd).transpose(0, 1)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            kc[:, :p].copy_(k)                                               # the KV cache of P positions
            vc[:, :p].copy_(v)
            o = F.scaled_dot_product_attention(q.unsqueeze(0), kc[:, :p].unsqueeze(0), vc[:, :p].unsqueeze(0),
                                               is_causal=True, enable_gqa=True)
            x = x + F.linear(o[0].transpose(0, 1).reshape(p, nh * hd), layer["wo"])
            h = rms_norm(x, layer["mlp_norm"])
            gate, up = F.linear(h, layer["wgu"]).chunk(2, dim=-1)
            x = x + F.linear(F.silu(gate) * up, layer["wdown"])
        logits = F.linear(rms_norm(x[-1:], final_norm), lm_head)            # the last position only
        next_token.copy_(torch.argmax(logits, dim=-1))

    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}; model {args.model}, eager bf16, "
          f"SDPA backend chosen by PyTorch (is_causal=True, enable_gqa=True)")
    # Dense products per token: QKV, O, gate/up, down per layer; the LM head once (last position).
    dense_per_token = 2 * s["layers"] * hidden * ((nh + 2 * nkv) * hd + nh * hd + 3 * inter)
    with torch.no_grad():
        for p in args.prompts:
            caches = [(torch.empty(nkv, p, hd, device=dev, dtype=dt), torch.empty(nkv, p, hd, device=dev, dtype=dt))
                      for _ in layers]
            tokens = (torch.arange(p, device=dev, dtype=torch.int64) * 7 + 1) % vocab
            freqs = torch.outer(torch.arange(p, device=dev, dtype=torch.int64).float(), inv_freq)
            emb = torch.cat((freqs, freqs), dim=-1)
            cos, sin = emb.cos().to(dt), emb.sin().to(dt)                    # [P, hd], as LlamaRotaryEmbedding
            for _ in range(WARMUP_RUNS):
                prefill(tokens, cos, sin, caches)
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            start = [torch.cuda.Event(enable_timing=True) for _ in range(args.runs)]
            end = [torch.cuda.Event(enable_timing=True) for _ in range(args.runs)]
            for i in range(args.runs):
                start[i].record()
                prefill(tokens, cos, sin, caches)
                end[i].record()
            torch.cuda.synchronize()
            ms = statistics.median(a.elapsed_time(b) for a, b in zip(start, end))
            tflops = dense_per_token * p / (ms * 1e-3) / 1e12
            peak = torch.cuda.max_memory_allocated() / 2**30
            print(f"prompt {p}: median {ms:.2f} ms over {args.runs} runs, {p / ms * 1000:.0f} tokens/s, dense products "
                  f"{tflops:.0f} TFLOP/s, peak allocated {peak:.2f} GiB")
            print(f"torch-prefill model={args.model} prompt={p} median_ms={ms:.3f} runs={args.runs} tflops={tflops:.1f} "
                  f"peak_gib={peak:.2f} torch={torch.__version__}", flush=True)
            del caches
            torch.cuda.empty_cache()
    return 0


def attention_only(args, torch, F):
    """The causal SDPA of one layer, timed alone: 20 calls between two CUDA events, the median of --runs; with
    PyTorch's default choice of backend, then with each backend forced (where this version can force it)."""
    import contextlib
    s = SHAPES[args.model]
    nh, nkv, hd = s["heads"], s["kv_heads"], s["head_dim"]
    dev, dt = torch.device("cuda"), torch.bfloat16
    torch.manual_seed(20261207)
    calls = 20
    backends = [("default", contextlib.nullcontext)]
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        for name, b in (("flash", "FLASH_ATTENTION"), ("cudnn", "CUDNN_ATTENTION"), ("efficient", "EFFICIENT_ATTENTION")):
            if hasattr(SDPBackend, b):
                backends.append((name, lambda b=b: sdpa_kernel(getattr(SDPBackend, b))))
    except ImportError:
        pass
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}; model {args.model}: {nh} query heads, "
          f"{nkv} KV heads x {hd}, SDPA is_causal=True, enable_gqa=True, median of {args.runs} x {calls} calls")
    with torch.no_grad():
        for p in args.prompts:
            q = torch.randn(1, nh, p, hd, device=dev, dtype=dt)
            k = torch.randn(1, nkv, p, hd, device=dev, dtype=dt)
            v = torch.randn(1, nkv, p, hd, device=dev, dtype=dt)
            for name, context in backends:
                try:
                    with context():
                        for _ in range(WARMUP_RUNS):
                            F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
                        times = []
                        for _ in range(args.runs):
                            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                            a.record()
                            for _ in range(calls):
                                F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
                            b.record()
                            b.synchronize()
                            times.append(a.elapsed_time(b) / calls)
                except (RuntimeError, NotImplementedError, ValueError) as e:  # a forced backend that does not take these inputs
                    print(f"torch-attention model={args.model} prompt={p} backend={name} unavailable: "
                          f"{str(e).splitlines()[0][:120]}", flush=True)
                    continue
                ms = statistics.median(times)
                tflops = 4.0 * hd * nh * (p * (p + 1) / 2) / (ms * 1e-3) / 1e12
                print(f"torch-attention model={args.model} prompt={p} backend={name} ms_per_layer={ms:.3f} "
                      f"ms_32_layers={ms * s['layers']:.1f} tflops={tflops:.1f}", flush=True)
    return 0

if __name__ == "__main__":
    sys.exit(main())
