#!/usr/bin/env python3
"""The peer for the engine's own speed: one Llama decode step written in plain PyTorch.

    python3 torch_decode_bench.py [--model llama3-8b] [--context 512] [--replays 1000] [--compile]

Runs on a GPU host with PyTorch (nothing is downloaded). Builds the model's weights at random on
the GPU (bf16, the Hugging Face layout: nn.Linear weights [out, in], RMSNorm as LlamaRMSNorm
computes it, RoPE, grouped-query attention over a KV cache through
F.scaled_dot_product_attention, SwiGLU, the LM head and argmax), fills the KV cache's first
--context positions, and times the decode step of one token at position --context (batch 1): it
writes its key and value at that position and attends all --context + 1 keys, as the engine's
`--mode bench` decode step does after a prompt of --context tokens.

Two forms:
  plain (default)  the step as written, captured in one CUDA graph and replayed;
  --compile        torch.compile(step, mode="max-autotune-no-cudagraphs", fullgraph=True)
                   (inductor and triton; about 75 s for llama3-8b on an H200), then the compiled
                   step captured in one CUDA graph and replayed.
Prints the median over --replays replays (CUDA events around each replay, after 20 warm-up
replays), the same step run without the graph, the bytes of weights the step reads and the time to
read them once at 4.8 TB/s (the H200's HBM bandwidth), and one machine-readable line:

    torch-decode model=llama3-8b context=512 form=compile median_ms=4.740 replays=1000 ...

The models are the example's synthetic shapes (--synthetic of bin/ar4j-llama): llama3-8b
(hidden 4096, 32 layers, 32/8 heads, head_dim 128, intermediate 14336, vocab 128256) and tiny.
Exit codes: 0 done, 2 usage or no GPU, 3 torch.compile failed (the message says where).
"""

import argparse
import statistics
import sys
import time

SHAPES = {
    "llama3-8b": dict(hidden=4096, layers=32, heads=32, kv_heads=8, head_dim=128, intermediate=14336,
                      vocab=128256, theta=500000.0, eps=1e-5, max_positions=8192),
    # llama3-8b's shapes with Llama 3.1's positions (the engine's --synthetic llama3.1-8b). Its rope
    # scaling changes the rotary frequencies' values, not the work: these benches time it unscaled.
    "llama3.1-8b": dict(hidden=4096, layers=32, heads=32, kv_heads=8, head_dim=128, intermediate=14336,
                        vocab=128256, theta=500000.0, eps=1e-5, max_positions=131072),
    "tiny": dict(hidden=512, layers=4, heads=8, kv_heads=4, head_dim=64, intermediate=1536, vocab=4096,
                 theta=10000.0, eps=1e-5, max_positions=2048),
}
HBM_BYTES_PER_S = 4.8e12
WARMUP_REPLAYS = 20
EAGER_STEPS = 20


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="The form (plain or compile) is in the machine-readable 'torch-decode' line's form= field.")
    parser.add_argument("--model", choices=sorted(SHAPES), default="llama3-8b")
    parser.add_argument("--context", type=int, default=512, metavar="N",
                        help="positions already in the KV cache; the step's token takes position N and attends "
                             "N + 1 keys (default 512)")
    parser.add_argument("--replays", "--steps", dest="replays", type=int, default=1000, metavar="N",
                        help="timed graph replays; the median is printed (default 1000)")
    parser.add_argument("--compile", action="store_true",
                        help='torch.compile(mode="max-autotune-no-cudagraphs", fullgraph=True), then one CUDA graph')
    args = parser.parse_args(argv)
    s = SHAPES[args.model]
    if args.context < 1 or args.context + 1 > s["max_positions"]:
        parser.error(f"--context must be 1..{s['max_positions'] - 1} for {args.model} (its position must be below "
                     f"max_position_embeddings {s['max_positions']}), got {args.context}")
    if args.replays < 1:
        parser.error(f"--replays must be at least 1, got {args.replays}")
    return args


def main(argv=None):
    args = parse_args(argv)
    # torch only after the arguments: --help works without it.
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        print(f"torch_decode_bench: PyTorch is not importable here ({e}); run it with the GPU host's Python "
              f"(/opt/torch/.venv/bin/python3)", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("torch_decode_bench: no CUDA GPU", file=sys.stderr)
        return 2
    s = SHAPES[args.model]
    hidden, nh, nkv, hd = s["hidden"], s["heads"], s["kv_heads"], s["head_dim"]
    inter, vocab, eps = s["intermediate"], s["vocab"], s["eps"]
    ctx = args.context
    form = "compile" if args.compile else "plain"
    dev, dt = torch.device("cuda"), torch.bfloat16
    torch.manual_seed(20261201)

    def weight(*shape):
        return (torch.randn(*shape, device=dev, dtype=torch.float32) * 0.02).to(dt)

    def norm_weight():
        return (1.0 + 0.1 * torch.randn(hidden, device=dev, dtype=torch.float32)).to(dt)

    layers = []
    for _ in range(s["layers"]):
        layers.append(dict(
            attn_norm=norm_weight(), wqkv=weight((nh + 2 * nkv) * hd, hidden), wo=weight(hidden, nh * hd),
            mlp_norm=norm_weight(), wgu=weight(2 * inter, hidden), wdown=weight(hidden, inter),
            k=weight(1, nkv, ctx + 1, hd), v=weight(1, nkv, ctx + 1, hd)))
    embedding = weight(vocab, hidden)
    final_norm = norm_weight()
    lm_head = weight(vocab, hidden)
    weight_bytes = sum(t.numel() * t.element_size() for layer in layers
                       for name, t in layer.items() if name not in ("k", "v"))
    weight_bytes += (embedding[0].numel() + final_norm.numel() + lm_head.numel()) * 2  # one embedding row
    cache_bytes = sum((layer["k"].numel() + layer["v"].numel()) * 2 for layer in layers)

    # RoPE at position ctx, as LlamaRotaryEmbedding computes it (fp32 inv_freq, cos/sin cast to bf16).
    inv_freq = 1.0 / (s["theta"] ** (torch.arange(0, hd, 2, device=dev, dtype=torch.int64).float() / hd))
    freqs = ctx * inv_freq
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos().to(dt), emb.sin().to(dt)

    token = torch.tensor([7], device=dev, dtype=torch.int64)
    position = torch.tensor([ctx], device=dev, dtype=torch.int64)
    next_token = torch.zeros(1, device=dev, dtype=torch.int64)

    def rms_norm(x, w):
        # LlamaRMSNorm: in fp32, then back to the input's dtype, then times the weight.
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
        return w * xf.to(x.dtype)

    def rotate_half(x):
        half = x.shape[-1] // 2
        return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

    def model_step():
        x = F.embedding(token, embedding)                        # [1, hidden]
        for layer in layers:
            h = rms_norm(x, layer["attn_norm"])
            qkv = F.linear(h, layer["wqkv"])
            q, k, v = qkv.split([nh * hd, nkv * hd, nkv * hd], dim=-1)
            q = q.view(1, nh, 1, hd)
            k = k.view(1, nkv, 1, hd)
            v = v.view(1, nkv, 1, hd)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            layer["k"].index_copy_(2, position, k)
            layer["v"].index_copy_(2, position, v)
            o = F.scaled_dot_product_attention(q, layer["k"], layer["v"], enable_gqa=True)
            x = x + F.linear(o.reshape(1, nh * hd), layer["wo"])
            h = rms_norm(x, layer["mlp_norm"])
            gate, up = F.linear(h, layer["wgu"]).chunk(2, dim=-1)
            x = x + F.linear(F.silu(gate) * up, layer["wdown"])
        logits = F.linear(rms_norm(x, final_norm), lm_head)
        next_token.copy_(torch.argmax(logits, dim=-1))

    def times_ms(run, times):
        start = [torch.cuda.Event(enable_timing=True) for _ in range(times)]
        end = [torch.cuda.Event(enable_timing=True) for _ in range(times)]
        for i in range(times):
            start[i].record()
            run()
            end[i].record()
        torch.cuda.synchronize()
        return [a.elapsed_time(b) for a, b in zip(start, end)]

    step = model_step
    compile_s = None
    with torch.no_grad():
        if args.compile:
            mode = "max-autotune-no-cudagraphs"
            print(f"torch.compile(mode={mode!r}, fullgraph=True): compiling the {args.model} step "
                  f"(llama3-8b took about 75 s on an H200)...", flush=True)
            try:
                import triton  # noqa: F401  (inductor's GPU code generator; a clearer error than inductor's)
            except ImportError as e:
                print(f"torch_decode_bench: --compile needs triton for inductor's GPU kernels and it is not "
                      f"importable ({e}); run without --compile for the plain form", file=sys.stderr)
                return 3
            began = time.perf_counter()
            try:
                step = torch.compile(model_step, mode=mode, fullgraph=True)
                step()  # compiles (and autotunes) here
                torch.cuda.synchronize()
            except Exception as e:  # dynamo's Unsupported, inductor's errors, triton's: all end the run
                print(f"torch_decode_bench: torch.compile(mode={mode!r}, fullgraph=True) failed after "
                      f"{time.perf_counter() - began:.1f} s with torch {torch.__version__}: "
                      f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}",
                      file=sys.stderr)
                print("  fullgraph=True refuses any graph break; TORCH_LOGS=graph_breaks,recompiles or "
                      "TORCHDYNAMO_VERBOSE=1 says where. The full message follows.", file=sys.stderr)
                print("  " + "\n  ".join(str(e).strip().splitlines()[:40]), file=sys.stderr)
                return 3
            compile_s = time.perf_counter() - began
            print(f"compiled in {compile_s:.1f} s", flush=True)
        for _ in range(3):
            step()
        torch.cuda.synchronize()
        eager = statistics.median(times_ms(step, EAGER_STEPS))
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                step()
        except Exception as e:
            print(f"torch_decode_bench: capturing the {form} step in one CUDA graph failed: "
                  f"{type(e).__name__}: {e}", file=sys.stderr)
            return 3 if args.compile else 1
        for _ in range(WARMUP_REPLAYS):
            graph.replay()
        torch.cuda.synchronize()
        replays = sorted(times_ms(graph.replay, args.replays))
    replayed = statistics.median(replays)
    p10 = replays[int(0.10 * (len(replays) - 1))]
    p90 = replays[int(0.90 * (len(replays) - 1))]

    floor = weight_bytes / HBM_BYTES_PER_S * 1e3
    device = torch.cuda.get_device_name()
    described = ("torch.compile (inductor, max-autotune-no-cudagraphs, fullgraph)" if args.compile
                 else "plain PyTorch")
    print(f"torch {torch.__version__}, {device}")
    print(f"model {args.model}: decode of 1 token at position {ctx}, attending {ctx + 1} keys (batch 1), bf16, "
          f"{described}")
    print(f"weights read per step {weight_bytes / 1e9:.3f} GB, KV cache read {cache_bytes / 1e9:.4f} GB; "
          f"reading the weights once at 4.8 TB/s takes {floor:.3f} ms")
    print(f"one CUDA graph per step: median {replayed:.3f} ms over {args.replays} replays "
          f"(p10 {p10:.3f}, p90 {p90:.3f}; {replayed / floor:.2f}x the weight-read time)")
    print(f"without the graph: median {eager:.3f} ms over {EAGER_STEPS} steps")
    if args.replays < 1000:
        print(f"note: {args.replays} replays; the project's figures use at least 1000")
    fields = [f"model={args.model}", f"context={ctx}", f"form={form}", f"median_ms={replayed:.4f}",
              f"replays={args.replays}", f"p10_ms={p10:.4f}", f"p90_ms={p90:.4f}", f"nograph_ms={eager:.4f}",
              f"weights_gb={weight_bytes / 1e9:.4f}", f"floor_ms={floor:.4f}",
              f"compile_s={compile_s:.1f}" if compile_s is not None else "compile_s=na",
              f"torch={torch.__version__}", "device=" + device.replace(" ", "_")]
    print("torch-decode " + " ".join(fields), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
