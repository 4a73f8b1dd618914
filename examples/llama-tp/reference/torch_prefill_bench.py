#!/usr/bin/env python3
"""The peer for the engine's prefill (time to first token): a Llama prefill written in plain PyTorch.

    python3 torch_prefill_bench.py [--model llama3-8b] [--prompts 512,4096,8192] [--runs 10] [--compile [MODE]]
                                   [--attention-only]

Runs on a GPU host with PyTorch (nothing is downloaded). Builds the model's weights at random on
the GPU as torch_decode_bench.py does (bf16, the Hugging Face layout: fused QKV and gate/up
nn.Linear weights [out, in], LlamaRMSNorm, RoPE, SwiGLU, the LM head), and times the prefill of a
prompt of P tokens at positions 0 .. P-1 in one eager pass (batch 1): per layer the cuBLAS GEMMs,
F.scaled_dot_product_attention(is_causal=True) with grouped-query heads (enable_gqa), and each
layer's keys and values written into a KV cache of P positions; then the final norm, the LM head of
the last position only and its argmax, as the engine's bench times its whole chunked prefill.
Prints the median over --runs runs (CUDA events around each, after 2 warm-up runs) per prompt, the
dense products' TFLOP/s, and one machine-readable line per prompt:

    torch-prefill model=llama3-8b prompt=4096 form=eager median_ms=129.8 issue_ms=21.3 runs=10 tflops=473.1 ...

issue_ms is the median time the Python loop took to issue one run's kernels (wall clock, no synchronisation).
Well below median_ms, the GPU bounds the run. Near it, either the host's launch rate bounds it (the GPU waits on
Python: short prompts, a busy host) or the host waited on a full launch queue (a long prompt, GPU-bound); the
compiled form, with far fewer launches, tells which.

--compile [MODE] times the same prefill with each layer's function through torch.compile (fullgraph=True,
dynamic=False: compiled once per prompt length, the 32 layers sharing the compiled code with their own weights;
MODE default "max-autotune-no-cudagraphs", as torch_decode_bench.py's compiled form; the compile time is printed
and not timed); form=compile in the machine-readable line. The LM head and the argmax stay eager. After the timed
runs, the last position's logits of the compiled and the eager prefill are compared (vs_eager=, the largest
difference relative to the largest logit; above 0.05 the script fails with exit code 3).

--attention-only times F.scaled_dot_product_attention(is_causal=True, enable_gqa=True) alone on one layer's
queries, keys and values of P positions (random bf16), the peer of the example's prefill attention kernel
(`ar4j_llama_kernels_test --bench-prefill`: the same shapes and the same FLOP count, 4 * head_dim * heads *
P (P + 1) / 2 FLOPs), one line per prompt and backend:

    torch-attention model=llama3-8b prompt=P backend=NAME ms_per_layer=MS ms_32_layers=32*MS tflops=T

with PyTorch's own choice of backend (default), then each backend forced where it takes the inputs.

Exit codes: 0 done, 2 usage or no GPU, 3 torch.compile failed or its prefill differs from the eager one (the
message says which).
"""

import argparse
import statistics
import sys
import time

from torch_decode_bench import SHAPES

WARMUP_RUNS = 2
# How far the compiled prefill's last logits may be from the eager prefill's, relative to the largest (bf16 rounding
# in other places through 32 layers; a wrong computation is off by the logits' own size).
COMPILED_TOLERANCE = 0.05


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(SHAPES), default="llama3-8b")
    parser.add_argument("--prompts", default="512,4096,8192", metavar="P[,P...]",
                        help="prompt lengths, each at most the model's max_position_embeddings (default 512,4096,8192)")
    parser.add_argument("--runs", type=int, default=10, metavar="N", help="timed runs per prompt (default 10)")
    parser.add_argument("--compile", nargs="?", const="max-autotune-no-cudagraphs", default=None, metavar="MODE",
                        help="each layer through torch.compile(mode=MODE, fullgraph=True, dynamic=False) "
                             "(default mode max-autotune-no-cudagraphs)")
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
    modes = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
    if args.compile is not None and args.compile not in modes:
        parser.error(f"--compile: the mode is one of {', '.join(modes)}, got {args.compile!r}")
    if args.compile is not None and args.attention_only:
        parser.error("--compile and --attention-only: --attention-only times SDPA alone, eager; give one of them")
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

    def layer_forward(x, attn_norm, wqkv, wo, mlp_norm, wgu, wdown, cos, sin, kc, vc):
        p = x.shape[0]
        h = rms_norm(x, attn_norm)
        q, k, v = F.linear(h, wqkv).split([nh * hd, nkv * hd, nkv * hd], dim=-1)
        q = q.view(p, nh, hd).transpose(0, 1)                                # [nh, P, hd]
        k = k.view(p, nkv, hd).transpose(0, 1)
        v = v.view(p, nkv, hd).transpose(0, 1)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        kc[:, :p].copy_(k)                                                   # the KV cache of P positions
        vc[:, :p].copy_(v)
        o = F.scaled_dot_product_attention(q.unsqueeze(0), kc[:, :p].unsqueeze(0), vc[:, :p].unsqueeze(0),
                                           is_causal=True, enable_gqa=True)
        x = x + F.linear(o[0].transpose(0, 1).reshape(p, nh * hd), wo)
        h = rms_norm(x, mlp_norm)
        gate, up = F.linear(h, wgu).chunk(2, dim=-1)
        return x + F.linear(F.silu(gate) * up, wdown)

    layer_step = layer_forward
    if args.compile is not None:
        try:
            import triton  # noqa: F401  (inductor's GPU kernels)
        except ImportError as e:
            print(f"torch_prefill_bench: --compile needs triton for inductor's GPU kernels and it is not importable "
                  f"({e}); run without --compile for the eager form", file=sys.stderr)
            return 3
        layer_step = torch.compile(layer_forward, mode=args.compile, fullgraph=True, dynamic=False)

    def prefill(tokens, cos, sin, caches, step=None):
        step = step or layer_step
        x = F.embedding(tokens, embedding)                                   # [P, hidden]
        for layer, (kc, vc) in zip(layers, caches):
            x = step(x, layer["attn_norm"], layer["wqkv"], layer["wo"], layer["mlp_norm"], layer["wgu"],
                     layer["wdown"], cos, sin, kc, vc)
        logits = F.linear(rms_norm(x[-1:], final_norm), lm_head)            # the last position only
        next_token.copy_(torch.argmax(logits, dim=-1))
        return logits

    form = "eager" if args.compile is None else "compile"
    how = "eager" if args.compile is None else f"each layer torch.compile(mode={args.compile!r}, fullgraph=True)"
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}; model {args.model}, {how}, bf16, "
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
            if args.compile is not None:
                began = time.perf_counter()
                try:
                    prefill(tokens, cos, sin, caches)                        # compiles (and autotunes) here
                    torch.cuda.synchronize()
                except Exception as e:  # inductor's errors have no common base class
                    print(f"torch_prefill_bench: torch.compile(mode={args.compile!r}) of the layer failed at prompt {p} "
                          f"after {time.perf_counter() - began:.0f} s: {type(e).__name__}: "
                          f"{str(e).splitlines()[0] if str(e) else ''}; run without --compile for the eager form",
                          file=sys.stderr)
                    return 3
                print(f"prompt {p}: compiled in {time.perf_counter() - began:.1f} s", flush=True)
            for _ in range(WARMUP_RUNS):
                prefill(tokens, cos, sin, caches)
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            start = [torch.cuda.Event(enable_timing=True) for _ in range(args.runs)]
            end = [torch.cuda.Event(enable_timing=True) for _ in range(args.runs)]
            issue = []
            for i in range(args.runs):
                start[i].record()
                began = time.perf_counter()
                prefill(tokens, cos, sin, caches)
                issue.append((time.perf_counter() - began) * 1e3)
                end[i].record()
            torch.cuda.synchronize()
            ms = statistics.median(a.elapsed_time(b) for a, b in zip(start, end))
            issue_ms = statistics.median(issue)
            peak = torch.cuda.max_memory_allocated() / 2**30
            agreement = ""
            if args.compile is not None:
                # The compiled form must compute the eager form's prefill: the last position's logits of both, within
                # bf16 rounding (fused kernels round in other places), or the figure is not a peer's.
                got = prefill(tokens, cos, sin, caches).float()
                want = prefill(tokens, cos, sin, caches, step=layer_forward).float()
                rel = ((got - want).abs().max() / want.abs().max().clamp_min(1e-30)).item()
                agreement = f" vs_eager={rel:.5f}"
                print(f"prompt {p}: the compiled prefill's last logits against eager's: max relative difference {rel:.5f} "
                      f"(tolerance {COMPILED_TOLERANCE})", flush=True)
                if not rel <= COMPILED_TOLERANCE:
                    print(f"torch_prefill_bench: the compiled prefill of {p} tokens differs from the eager one by {rel:.5f} "
                          f"of the largest logit (tolerance {COMPILED_TOLERANCE}): not timed as a peer", file=sys.stderr)
                    return 3
            tflops = dense_per_token * p / (ms * 1e-3) / 1e12
            print(f"prompt {p}: median {ms:.2f} ms over {args.runs} runs ({form}; the host issued a run in {issue_ms:.2f} "
                  f"ms), {p / ms * 1000:.0f} tokens/s, dense products "
                  f"{tflops:.0f} TFLOP/s, peak allocated {peak:.2f} GiB")
            print(f"torch-prefill model={args.model} prompt={p} form={form} median_ms={ms:.3f} issue_ms={issue_ms:.3f} "
                  f"runs={args.runs} tflops={tflops:.1f} "
                  f"peak_gib={peak:.2f}{agreement} torch={torch.__version__}", flush=True)
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
