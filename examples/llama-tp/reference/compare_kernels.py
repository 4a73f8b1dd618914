#!/usr/bin/env python3
"""Compares the example's CUDA kernels with the transformers functions they stand in for.

    python3 compare_kernels.py PATH/TO/libar4j_llama_kernels.so [--seed N]

Runs on a GPU host with PyTorch and transformers (nothing is downloaded). Calls the library
through ctypes on torch tensors and checks, on random bf16 inputs:
  rope       ar4j_llama_rope      vs LlamaRotaryEmbedding + apply_rotary_pos_emb (default and
                                  llama3 rope, positions up to 131071): bit-exact expected,
                                  >= 99.9% required (libm ulps may differ from PyTorch's build)
  attention  ar4j_llama_attention vs eager_attention_forward with a causal mask (prefill, decode,
                                  verify; 1 and several splits): within bf16 rounding (stated below)
  silu_mul   ar4j_llama_silu_mul  vs ACT2FN["silu"](gate) * up: bit-exact expected, >= 99.9% required
  argmax     ar4j_llama_argmax    vs torch.argmax (ties): exact
  embedding  ar4j_llama_embedding vs torch.nn.functional.embedding on a vocabulary shard: exact
Prints one line per check and "N passed, N failed"; exits 1 when a check failed.
"""

import argparse
import ctypes
import sys
import types

P = ctypes.c_void_p
I32 = ctypes.c_int32
I64 = ctypes.c_int64
F32 = ctypes.c_float
SIZE = ctypes.c_size_t

SIGNATURES = {
    "ar4j_llama_embedding": [P, I32, P, I32, I32, I32, I32, P, P, I32, P],
    "ar4j_llama_rope": [P, I64, P, I64, I32, I32, I32, I32, P, F32, P, I32, I32, P, I32, P],
    "ar4j_llama_attention": [P, I64, P, P, I32, I32, I32, I32, I32, P, I32, F32, P, I64, I32, P, SIZE, P, I32, P],
    "ar4j_llama_attention_workspace_bytes": [I32, I32, I32, I32, I32, I32],
    "ar4j_llama_silu_mul": [P, I64, P, I64, P, I64, I32, I32, I32, P],
    "ar4j_llama_argmax": [I32, P, I64, I32, I32, I32, P, P, I32, P],
}


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, name, detail):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        print(f"  {'ok  ' if ok else 'FAIL'}  {name} {detail}")


def load(path):
    lib = ctypes.CDLL(path)
    for name, args in SIGNATURES.items():
        fn = getattr(lib, name)
        fn.argtypes = args
        fn.restype = SIZE if name.endswith("_bytes") else ctypes.c_int
    lib.ar4j_llama_error_string.argtypes = [ctypes.c_int]
    lib.ar4j_llama_error_string.restype = ctypes.c_char_p
    return lib


def call(lib, name, *args):
    rc = getattr(lib, name)(*args)
    if rc != 0:
        raise RuntimeError(f"{name} returned {rc}: {lib.ar4j_llama_error_string(rc).decode()}")


def ptr(t):
    return ctypes.c_void_p(t.data_ptr())


def stream(torch):
    return ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)


def llama_config(transformers, head_dim, heads, kv_heads, rope_theta, rope_scaling, max_positions):
    kwargs = dict(
        hidden_size=head_dim * heads,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=head_dim,
        max_position_embeddings=max_positions,
    )
    if int(transformers.__version__.split(".")[0]) >= 5:
        rope = {"rope_type": "default", "rope_theta": rope_theta}
        rope.update(rope_scaling or {})
        kwargs["rope_parameters"] = rope
    else:
        kwargs["rope_theta"] = rope_theta
        kwargs["rope_scaling"] = rope_scaling
    return transformers.LlamaConfig(**kwargs)


def check_rope(torch, transformers, lib, checks, rope_scaling, start):
    from transformers.models.llama import modeling_llama as ml

    heads, kv_heads, head_dim, n, max_positions = 8, 4, 64, 16, 131072
    config = llama_config(transformers, head_dim, heads, kv_heads, 500000.0, rope_scaling, max_positions)
    rotary = ml.LlamaRotaryEmbedding(config=config, device="cuda")
    q = torch.randn(1, heads, n, head_dim, device="cuda").mul(2).to(torch.bfloat16)
    k = torch.randn(1, kv_heads, n, head_dim, device="cuda").mul(2).to(torch.bfloat16)
    position_ids = torch.arange(start, start + n, device="cuda")[None]
    cos, sin = rotary(q, position_ids)
    q_hf, k_hf = ml.apply_rotary_pos_emb(q, k, cos, sin)
    q_ours = q[0].transpose(0, 1).contiguous()  # [n, heads, head_dim]
    k_ours = k[0].transpose(0, 1).contiguous()
    inv_freq = rotary.inv_freq.float().contiguous()
    status = torch.zeros(1, dtype=torch.int32, device="cuda")
    call(lib, "ar4j_llama_rope", ptr(q_ours), heads * head_dim, ptr(k_ours), kv_heads * head_dim, n, heads, kv_heads,
         head_dim, ptr(inv_freq), float(rotary.attention_scaling), None, start, max_positions, ptr(status), 0,
         stream(torch))
    torch.cuda.synchronize()
    q_want = q_hf[0].transpose(0, 1)
    k_want = k_hf[0].transpose(0, 1)
    same = int((q_ours.view(torch.int16) == q_want.contiguous().view(torch.int16)).sum()) + int(
        (k_ours.view(torch.int16) == k_want.contiguous().view(torch.int16)).sum())
    total = q_ours.numel() + k_ours.numel()
    kind = rope_scaling["rope_type"] if rope_scaling else "default"
    checks.check(same >= total * 0.999 and int(status) == 0, "rope",
                 f"({kind}, positions {start}..{start + n - 1}: {same} of {total} bit-identical to HF, need 99.9%)")


def check_attention(torch, transformers, lib, checks, n, past, heads, kv_heads, head_dim, splits):
    from transformers.models.llama import modeling_llama as ml

    length = past + n
    max_positions = length + 5
    q = torch.randn(1, heads, n, head_dim, device="cuda").mul(2).to(torch.bfloat16)
    k = torch.randn(1, kv_heads, length, head_dim, device="cuda").to(torch.bfloat16)
    v = torch.randn(1, kv_heads, length, head_dim, device="cuda").to(torch.bfloat16)
    rows = torch.arange(past, past + n, device="cuda")[:, None]
    cols = torch.arange(length, device="cuda")[None, :]
    mask = torch.zeros(n, length, device="cuda", dtype=torch.bfloat16)
    mask.masked_fill_(cols > rows, torch.finfo(torch.bfloat16).min)
    module = types.SimpleNamespace(num_key_value_groups=heads // kv_heads, training=False, is_causal=True)
    scaling = head_dim ** -0.5
    want, _ = ml.eager_attention_forward(module, q, k, v, mask[None, None], scaling=scaling, dropout=0.0)
    want = want[0]  # [n, heads, head_dim]
    k_cache = torch.full((max_positions, kv_heads, head_dim), float("nan"), device="cuda", dtype=torch.bfloat16)
    v_cache = torch.full_like(k_cache, float("nan"))
    k_cache[:length] = k[0].transpose(0, 1)
    v_cache[:length] = v[0].transpose(0, 1)
    q_ours = q[0].transpose(0, 1).contiguous()
    out = torch.full((n, heads, head_dim), float("nan"), device="cuda", dtype=torch.bfloat16)
    ws_bytes = lib.ar4j_llama_attention_workspace_bytes(n, heads, kv_heads, head_dim, max_positions, splits)
    workspace = torch.empty((ws_bytes + 3) // 4, dtype=torch.float32, device="cuda")
    ws_bytes = workspace.numel() * 4
    status = torch.zeros(1, dtype=torch.int32, device="cuda")
    call(lib, "ar4j_llama_attention", ptr(q_ours), heads * head_dim, ptr(k_cache), ptr(v_cache), n, heads, kv_heads,
         head_dim, max_positions, None, past, float(scaling), ptr(out), heads * head_dim, splits, ptr(workspace),
         ws_bytes, ptr(status), 0, stream(torch))
    torch.cuda.synchronize()
    err = (out.float() - want.float()).abs()
    max_v = float(v.float().abs().max())
    exact = float((out.view(torch.int16) == want.contiguous().view(torch.int16)).float().mean())
    # fp32 sums in another order may move a score or a probability to the neighbouring bf16.
    ok = bool(torch.isfinite(out).all()) and float(err.max()) <= max_v / 32 and float(err.mean()) <= max_v / 1024
    checks.check(ok and int(status) == 0, "attention",
                 f"(n {n} after {past}, {heads}/{kv_heads} heads x {head_dim}, {splits} splits: max err "
                 f"{float(err.max()):.2e} (<= {max_v / 32:.2e}), mean {float(err.mean()):.2e} (<= {max_v / 1024:.2e}), "
                 f"{100 * exact:.1f}% bit-identical to HF eager)")


def check_silu_mul(torch, transformers, lib, checks):
    from transformers.activations import ACT2FN

    rows, cols = 4, 14336
    gate = torch.randn(rows, cols, device="cuda").mul(4).to(torch.bfloat16)
    up = torch.randn(rows, cols, device="cuda").to(torch.bfloat16)
    want = ACT2FN["silu"](gate) * up
    out = torch.full_like(gate, float("nan"))
    call(lib, "ar4j_llama_silu_mul", ptr(gate), cols, ptr(up), cols, ptr(out), cols, rows, cols, 0, stream(torch))
    torch.cuda.synchronize()
    same = int((out.view(torch.int16) == want.view(torch.int16)).sum())
    checks.check(same >= out.numel() * 0.999, "silu_mul", f"({same} of {out.numel()} bit-identical to HF, need 99.9%)")


def check_argmax(torch, lib, checks):
    rows, vocab = 6, 128256
    logits = torch.randn(rows, vocab, device="cuda").to(torch.bfloat16)
    logits[1, 7] = logits[1, 99] = logits[1, 100000] = 50.0  # ties
    index = torch.full((rows,), -1, dtype=torch.int32, device="cuda")
    call(lib, "ar4j_llama_argmax", 2, ptr(logits), vocab, rows, vocab, 0, ptr(index), None, 0, stream(torch))
    torch.cuda.synchronize()
    want = torch.argmax(logits, dim=-1).to(torch.int32)
    checks.check(bool((index == want).all()), "argmax", f"({index.tolist()} vs torch {want.tolist()})")


def check_embedding(torch, lib, checks):
    vocab, hidden, start, end, n = 4096, 512, 1024, 2048, 64
    table = torch.randn(vocab, hidden, device="cuda").to(torch.bfloat16)
    ids = torch.randint(0, vocab, (n,), device="cuda", dtype=torch.int32)
    out = torch.full((n, hidden), float("nan"), device="cuda", dtype=torch.bfloat16)
    shard = table[start:end].contiguous()
    call(lib, "ar4j_llama_embedding", ptr(ids), n, ptr(shard), start, end, vocab, hidden, ptr(out), None, 0,
         stream(torch))
    torch.cuda.synchronize()
    want = torch.nn.functional.embedding(ids.long(), table)
    want[(ids < start) | (ids >= end)] = 0
    checks.check(bool(torch.equal(out.view(torch.int16), want.view(torch.int16))), "embedding",
                 "(vocabulary shard [1024, 2048) of 4096, other ids zero)")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("library")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    import torch
    import transformers

    if not torch.cuda.is_available():
        print("compare_kernels.py: no CUDA GPU is visible to PyTorch", file=sys.stderr)
        return 2
    torch.manual_seed(args.seed)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    lib = load(args.library)
    checks = Checks()
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, {torch.cuda.get_device_name(0)}")
    llama3 = dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                  original_max_position_embeddings=64)
    for scaling in (None, llama3):
        for start in (0, 1000, 131072 - 16):
            check_rope(torch, transformers, lib, checks, scaling, start)
    for n, past, heads, kv, hd, splits in ((8, 0, 8, 4, 64, 1), (8, 0, 8, 4, 64, 2), (1, 511, 32, 8, 128, 1),
                                           (1, 4095, 32, 8, 128, 9), (4, 1000, 56, 8, 128, 4), (3, 200, 4, 1, 256, 3)):
        check_attention(torch, transformers, lib, checks, n, past, heads, kv, hd, splits)
    check_silu_mul(torch, transformers, lib, checks)
    check_argmax(torch, lib, checks)
    check_embedding(torch, lib, checks)
    print(f"{checks.passed} passed, {checks.failed} failed")
    return 0 if checks.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
