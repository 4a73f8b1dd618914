#!/usr/bin/env python3
"""The baseline for the engine's own speed: one Llama decode step written in plain PyTorch.

    python3 torch_decode_bench.py [--model llama3-8b] [--context 512] [--replays 200]

Runs on a GPU host with PyTorch (nothing is downloaded). Builds the model's weights at random on
the GPU (bf16, the Hugging Face layout: nn.Linear weights [out, in], RMSNorm as LlamaRMSNorm
computes it, RoPE, grouped-query attention over a KV cache through
F.scaled_dot_product_attention, SwiGLU, the LM head and argmax), fills the KV cache's first
--context positions, and captures the decode step of one token at position --context (batch 1)
as one CUDA graph. Prints the median over --replays replays (CUDA events around each replay,
after 20 warm-up replays), the same step run eagerly, the bytes of weights the step reads and
the time to read them once at 4.8 TB/s (the H200's HBM bandwidth).

The models are the example's synthetic shapes (--synthetic of bin/ar4j-llama): llama3-8b
(hidden 4096, 32 layers, 32/8 heads, head_dim 128, intermediate 14336, vocab 128256) and tiny.
"""

import argparse
import statistics
import sys

import torch
import torch.nn.functional as F

SHAPES = {
    "llama3-8b": dict(hidden=4096, layers=32, heads=32, kv_heads=8, head_dim=128, intermediate=14336,
                      vocab=128256, theta=500000.0, eps=1e-5),
    "tiny": dict(hidden=512, layers=4, heads=8, kv_heads=4, head_dim=64, intermediate=1536, vocab=4096,
                 theta=10000.0, eps=1e-5),
}
HBM_BYTES_PER_S = 4.8e12


def rms_norm(x, weight, eps):
    # LlamaRMSNorm: in fp32, then back to the input's dtype, then times the weight.
    xf = x.float()
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return weight * xf.to(x.dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(SHAPES), default="llama3-8b")
    parser.add_argument("--context", type=int, default=512)
    parser.add_argument("--replays", type=int, default=200)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("torch_decode_bench: no CUDA GPU")
    s = SHAPES[args.model]
    hidden, nh, nkv, hd = s["hidden"], s["heads"], s["kv_heads"], s["head_dim"]
    inter, vocab, eps = s["intermediate"], s["vocab"], s["eps"]
    ctx = args.context
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
    cache_bytes = sum((layer["k"][:, :, :ctx + 1].numel() + layer["v"][:, :, :ctx + 1].numel()) * 2
                      for layer in layers)

    # RoPE at position ctx, as LlamaRotaryEmbedding computes it (fp32 inv_freq, cos/sin cast to bf16).
    inv_freq = 1.0 / (s["theta"] ** (torch.arange(0, hd, 2, device=dev, dtype=torch.int64).float() / hd))
    freqs = ctx * inv_freq
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos().to(dt), emb.sin().to(dt)

    token = torch.tensor([7], device=dev, dtype=torch.int64)
    position = torch.tensor([ctx], device=dev, dtype=torch.int64)
    next_token = torch.zeros(1, device=dev, dtype=torch.int64)

    def step():
        x = F.embedding(token, embedding)                        # [1, hidden]
        for layer in layers:
            h = rms_norm(x, layer["attn_norm"], eps)
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
            h = rms_norm(x, layer["mlp_norm"], eps)
            gate, up = F.linear(h, layer["wgu"]).chunk(2, dim=-1)
            x = x + F.linear(F.silu(gate) * up, layer["wdown"])
        logits = F.linear(rms_norm(x, final_norm, eps), lm_head)
        next_token.copy_(torch.argmax(logits, dim=-1))

    def median_ms(run, times):
        start = [torch.cuda.Event(enable_timing=True) for _ in range(times)]
        end = [torch.cuda.Event(enable_timing=True) for _ in range(times)]
        for i in range(times):
            start[i].record()
            run()
            end[i].record()
        torch.cuda.synchronize()
        return statistics.median(a.elapsed_time(b) for a, b in zip(start, end))

    with torch.no_grad():
        for _ in range(3):
            step()
        torch.cuda.synchronize()
        eager = median_ms(step, 20)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step()
        for _ in range(20):
            graph.replay()
        torch.cuda.synchronize()
        replayed = median_ms(graph.replay, args.replays)

    floor = weight_bytes / HBM_BYTES_PER_S * 1e3
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print(f"model {args.model}: decode of 1 token at position {ctx} (batch 1), bf16, plain PyTorch")
    print(f"weights read per step {weight_bytes / 1e9:.3f} GB, KV cache read {cache_bytes / 1e9:.4f} GB; "
          f"reading the weights once at 4.8 TB/s takes {floor:.3f} ms")
    print(f"one CUDA graph per step: median {replayed:.3f} ms over {args.replays} replays "
          f"({replayed / floor:.2f}x the weight-read time)")
    print(f"eager: median {eager:.3f} ms over 20 steps")


if __name__ == "__main__":
    main()
