/*
 * ar4j Llama example: the kernels a Llama decoder needs besides cuBLAS GEMMs and ar4j's
 * all-reduce / residual + RMSNorm, as the flat C ABI of libar4j_llama_kernels.so.
 *
 * Plain C for jextract and any FFI. Conventions shared by every entry point:
 *  - Returns an int: 0 (AR4J_LLAMA_OK) once the work is enqueued, a cudaError_t value
 *    (1 .. 9999) when a CUDA launch failed, or a named code >= 10000 (enum ar4j_llama_status)
 *    for a bad argument; ar4j_llama_error_string() names every code. Nothing is enqueued
 *    when an argument is refused.
 *  - Device pointers are void* (bf16 data: IEEE bfloat16, 2 bytes, little-endian) or typed
 *    pointers; `stream` is a cudaStream_t (NULL is the legacy default stream). Every kernel
 *    runs on the calling thread's current device, on `stream`.
 *  - Capturable into CUDA graphs: no allocation, no synchronisation, no host read of device
 *    memory, no host state that changes between calls. Values that change from one replay
 *    to the next (token ids, positions) are therefore read from device memory by the kernels.
 *  - pdl != 0 launches with programmatic stream serialization (PDL, cudaLaunchKernelEx):
 *    each kernel executes griddepcontrol.wait before its first global memory access (a no-op
 *    below sm_90 and in a launch without the attribute), except the second kernel of
 *    ar4j_llama_attention (and _batched), which reads only what the grid before the
 *    attention's first kernel wrote before its wait (see there). Each kernel also triggers its
 *    dependents at entry (griddepcontrol.launch_dependents), so a kernel launched after it WITH
 *    the attribute must wait (griddepcontrol.wait) before reading its output, as these kernels
 *    and ar4j's all-reduce kernels do; launches without the attribute (cuBLAS) are unaffected.
 *  - Storage is bf16, arithmetic fp32. Where the reference (Hugging Face transformers,
 *    LlamaForCausalLM in bf16, eager attention) rounds an intermediate to bf16, the kernel
 *    rounds the same value at the same point (round to nearest even), as stated per function.
 *  - Device-side errors: indices that live in device memory (token ids, positions) cannot be
 *    checked at launch. A kernel that finds one out of range writes the named code into
 *    *device_status (an int32 in device memory; the first error wins, a non-zero word is
 *    never overwritten) and writes the fallback stated per function instead of reading or
 *    writing out of bounds. device_status may be NULL (errors are then silent). The caller
 *    zeroes the word and reads it back at its own synchronisation points.
 *  - "Row stride" arguments are in elements (not bytes) between consecutive tokens' rows;
 *    they let q, k and v be read in place from one fused QKV GEMM output, and gate/up from
 *    one fused gate_up GEMM output.
 *
 * Tensor parallel: every size is the rank-local one (n_heads = heads of this rank, etc.).
 */
#ifndef AR4J_LLAMA_KERNELS_H
#define AR4J_LLAMA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI version of this header; ar4j_llama_abi_version() returns the library's. */
#define AR4J_LLAMA_ABI_VERSION 9

/* Named status codes (cudaError_t values are below 10000). */
enum ar4j_llama_status {
    AR4J_LLAMA_OK = 0,
    AR4J_LLAMA_ERROR_NULL_POINTER = 10001,   /* a required pointer argument was NULL */
    AR4J_LLAMA_ERROR_SIZE = 10002,           /* a count or dimension outside its documented range */
    AR4J_LLAMA_ERROR_HEAD_DIM = 10003,       /* head_dim not even or outside 2 .. AR4J_LLAMA_MAX_HEAD_DIM */
    AR4J_LLAMA_ERROR_GQA = 10004,            /* n_heads is not a multiple of n_kv_heads */
    AR4J_LLAMA_ERROR_POSITION = 10005,       /* a position outside [0, max_positions) */
    AR4J_LLAMA_ERROR_TOKEN_ID = 10006,       /* a token id outside [0, vocab) */
    AR4J_LLAMA_ERROR_VOCAB_RANGE = 10007,    /* not 0 <= vocab_start < vocab_end <= vocab */
    AR4J_LLAMA_ERROR_DTYPE = 10008,          /* unknown dtype */
    AR4J_LLAMA_ERROR_WORKSPACE = 10009,      /* workspace smaller than ar4j_llama_attention_workspace_bytes() */
    AR4J_LLAMA_ERROR_SPLITS = 10010,         /* num_splits outside 1 .. AR4J_LLAMA_MAX_SPLITS */
    AR4J_LLAMA_ERROR_STRIDE = 10011,         /* a row stride smaller than the row it must hold (or a cache
                                                sequence stride smaller than one sequence's cache) */
    AR4J_LLAMA_ERROR_MISALIGNED = 10012,     /* a pointer not aligned to its element size (4 bytes for workspace) */
    AR4J_LLAMA_ERROR_INVALID_ARGUMENT = 10013, /* another argument outside its documented range (e.g. a non-finite scale) */
    AR4J_LLAMA_ERROR_LOGITS = 10014,         /* sampling: a row of logits without a finite value */
    AR4J_LLAMA_ERROR_UNSUPPORTED = 10015     /* the current device cannot run what was asked for (e.g. the
                                                linear layer's bulk-copy ring below sm_90) */
};

/* dtype values (the numbering of ar4j's own ar4j_dtype). */
enum ar4j_llama_dtype {
    AR4J_LLAMA_DTYPE_FLOAT32 = 0,
    AR4J_LLAMA_DTYPE_BFLOAT16 = 2
};

/* Limits. */
enum ar4j_llama_limits {
    AR4J_LLAMA_MAX_HEAD_DIM = 256,           /* head_dim: even, 2 .. 256 */
    AR4J_LLAMA_MAX_SPLITS = 128,             /* attention: key-range splits per (token, head) */
    AR4J_LLAMA_MAX_LINEAR_ROWS = 8,          /* ar4j_llama_linear_rows: rows of X per call */
    AR4J_LLAMA_MAX_ATTENTION_STORED_TOKENS = 8, /* attention: up to this many query tokens (per sequence
                                                when batched) keep their scores in the workspace (K read
                                                once); more read K twice */
    AR4J_LLAMA_MAX_ROPE_ATTENTION_ROWS = 32, /* ar4j_llama_rope_attention_batched: query rows (tokens x
                                                query heads per KV head) per sequence */
    AR4J_LLAMA_MAX_HIDDEN = 1 << 20,         /* embedding: hidden elements per row */
    AR4J_LLAMA_SAMPLE_STATE_BYTES = 16,      /* ar4j_llama_sample: bytes of its state */
    AR4J_LLAMA_MAX_EXCHANGED_VOCAB = 1 << 24 /* ar4j_llama_argmax_pack: token ids exact in fp32 */
};

/* The library's ABI version (AR4J_LLAMA_ABI_VERSION of the header it was built from). */
int ar4j_llama_abi_version(void);

/* A static string naming code: an ar4j_llama_status, a cudaError_t, or "unknown status". */
const char *ar4j_llama_error_string(int code);

/*
 * Vocabulary-parallel embedding gather.
 *   out[i, :] = table[ids[i] - vocab_start, :]   if vocab_start <= ids[i] < vocab_end
 *             = 0                                 otherwise (another rank's row; the caller
 *                                                 all-reduces the partial rows)
 * ids: n int32 in device memory. table: (vocab_end - vocab_start) rows x hidden bf16, row
 * stride hidden (this rank's shard of embed_tokens.weight). out: n x hidden bf16, contiguous.
 * 1 <= n, 1 <= hidden <= AR4J_LLAMA_MAX_HIDDEN, 0 <= vocab_start < vocab_end <= vocab.
 * Device-side: an id outside [0, vocab) yields a zero row and AR4J_LLAMA_ERROR_TOKEN_ID.
 * Exact (a copy).
 */
int ar4j_llama_embedding(const int32_t *ids, int32_t n, const void *table, int32_t vocab_start,
                         int32_t vocab_end, int32_t vocab, int32_t hidden, void *out,
                         int32_t *device_status, int32_t pdl, void *stream);

/*
 * Rotary position embedding, in place on q and k (Hugging Face's rotate_half convention:
 * element i pairs with element i + head_dim/2 of the same head).
 * Token t's position is positions[t] (n int32 in device memory) or, when positions is NULL,
 * start_pos + t. For each head and each i in [0, head_dim):
 *   f   = fp32(position) * inv_freq[i mod head_dim/2]                   (fp32 multiply)
 *   c   = bf16(cosf(f) * attention_scaling),  s = bf16(sinf(f) * attention_scaling)
 *   r   = i < head_dim/2 ? -x[i + head_dim/2] : x[i - head_dim/2]
 *   x'[i] = bf16( bf16(x[i] * c) + bf16(r * s) )
 * which is HF's LlamaRotaryEmbedding (cos/sin in fp32, cast to bf16) followed by
 * apply_rotary_pos_emb in bf16 (q * cos + rotate_half(q) * sin, each op rounded to bf16).
 * inv_freq: head_dim/2 fp32 in device memory (the caller's, llama3 rope_scaling included);
 * attention_scaling: HF's rotary attention_scaling (1.0 for default and llama3 rope).
 * q: n tokens x n_heads x head_dim bf16, row stride q_row_stride (>= n_heads * head_dim);
 * k: n tokens x n_kv_heads x head_dim bf16, row stride k_row_stride (>= n_kv_heads * head_dim).
 * k may be NULL (q only) when n_kv_heads is 0; q and k must not overlap.
 * 1 <= n; 1 <= n_heads; 0 <= n_kv_heads; n_heads + n_kv_heads <= 65535; head_dim even,
 * 2 .. AR4J_LLAMA_MAX_HEAD_DIM; max_positions >= 1; with positions NULL: 0 <= start_pos and
 * start_pos + n <= max_positions.
 * Device-side: a position outside [0, max_positions) leaves that token's q and k unchanged
 * and yields AR4J_LLAMA_ERROR_POSITION.
 */
int ar4j_llama_rope(void *q, int64_t q_row_stride, void *k, int64_t k_row_stride, int32_t n,
                    int32_t n_heads, int32_t n_kv_heads, int32_t head_dim, const float *inv_freq,
                    float attention_scaling, const int32_t *positions, int32_t start_pos,
                    int32_t max_positions, int32_t *device_status, int32_t pdl, void *stream);

/*
 * KV-cache append: copies the keys and values of n new tokens into one layer's caches.
 *   k_cache[pos(t), h, :] = k[t, h, :],  v_cache[pos(t), h, :] = v[t, h, :]
 * with pos(t) = positions[t] (device) or start_pos + t (positions NULL).
 * k, v: n x n_kv_heads x head_dim bf16, row strides k_row_stride / v_row_stride
 * (>= n_kv_heads * head_dim). k_cache, v_cache: max_positions x n_kv_heads x head_dim bf16,
 * contiguous. 1 <= n; 1 <= n_kv_heads; head_dim 2 .. AR4J_LLAMA_MAX_HEAD_DIM, even;
 * with positions NULL: 0 <= start_pos, start_pos + n <= max_positions.
 * Device-side: a position outside [0, max_positions) is not written and yields
 * AR4J_LLAMA_ERROR_POSITION. Exact (a copy).
 */
int ar4j_llama_kv_append(const void *k, int64_t k_row_stride, const void *v, int64_t v_row_stride,
                         int32_t n, int32_t n_kv_heads, int32_t head_dim, void *k_cache,
                         void *v_cache, int32_t max_positions, const int32_t *positions,
                         int32_t start_pos, int32_t *device_status, int32_t pdl, void *stream);

/*
 * ar4j_llama_rope followed by ar4j_llama_kv_append in one kernel, for one layer's new tokens:
 *   q[t, h, :]               = rope(q[t, h, :], pos(t))       in place, as ar4j_llama_rope
 *   k_cache[pos(t), h, :]    = rope(k[t, h, :], pos(t))       k itself is left unchanged
 *   v_cache[pos(t), h, :]    = v[t, h, :]                     a copy, as ar4j_llama_kv_append
 * with pos(t) = positions[t] (n int32 in device memory) or start_pos + t (positions NULL), the
 * same rounding as ar4j_llama_rope (so q, k_cache and v_cache hold the same bits as rope then
 * kv_append would leave there).
 * q: n x n_heads x head_dim bf16, row stride q_row_stride (>= n_heads * head_dim);
 * k, v: n x n_kv_heads x head_dim bf16, row strides k_row_stride, v_row_stride
 * (>= n_kv_heads * head_dim), e.g. all three read in place from one fused QKV GEMM output;
 * k_cache, v_cache: max_positions x n_kv_heads x head_dim bf16, contiguous (one layer's).
 * inv_freq: head_dim/2 fp32 in device memory; attention_scaling finite (see ar4j_llama_rope).
 * q must not overlap k, v or the caches. 1 <= n; 1 <= n_heads; 1 <= n_kv_heads;
 * n_heads + 2 * n_kv_heads <= 65535; head_dim even, 2 .. AR4J_LLAMA_MAX_HEAD_DIM;
 * max_positions >= 1; with positions NULL: 0 <= start_pos, start_pos + n <= max_positions.
 * Pointers aligned to their element size (AR4J_LLAMA_ERROR_MISALIGNED otherwise).
 * Device-side: a position outside [0, max_positions) leaves that token's q unchanged, writes
 * no cache row for it, and yields AR4J_LLAMA_ERROR_POSITION.
 */
int ar4j_llama_rope_kv_append(void *q, int64_t q_row_stride, const void *k, int64_t k_row_stride,
                              const void *v, int64_t v_row_stride, int32_t n, int32_t n_heads,
                              int32_t n_kv_heads, int32_t head_dim, const float *inv_freq,
                              float attention_scaling, void *k_cache, void *v_cache,
                              int32_t max_positions, const int32_t *positions, int32_t start_pos,
                              int32_t *device_status, int32_t pdl, void *stream);

/*
 * ar4j_llama_rope_kv_append for a static batch of `sequences` sequences, each with its own cache:
 * the n tokens are `sequences` runs of n / sequences consecutive tokens (token t belongs to
 * sequence s = t / (n / sequences)), and token t's rotated k and its v go to row pos(t) of
 * sequence s's caches, which start cache_sequence_stride * s elements after k_cache and v_cache:
 *   k_cache[s * cache_sequence_stride + (pos(t) * n_kv_heads + h) * head_dim + e] = rope(k[t, h, :], pos(t))[e]
 *   v_cache[s * cache_sequence_stride + (pos(t) * n_kv_heads + h) * head_dim + e] = v[t, h, e]
 * q rotated in place as ar4j_llama_rope_kv_append; the values and rounding are that function's
 * (which is this one with sequences 1). Nothing outside those rows is written.
 * pos(t) = positions[t] (n int32 in device memory, each a position within its own sequence);
 * positions may be NULL only when sequences is 1 (then pos(t) = start_pos + t), else
 * AR4J_LLAMA_ERROR_NULL_POINTER.
 * 1 <= sequences, n a multiple of sequences (AR4J_LLAMA_ERROR_SIZE otherwise);
 * cache_sequence_stride >= max_positions * n_kv_heads * head_dim, also for one sequence, so that
 * sequences' caches do not overlap (AR4J_LLAMA_ERROR_STRIDE otherwise); any such stride is aligned
 * (elements are written one bf16 at a time). k_cache, v_cache: sequences * cache_sequence_stride
 * bf16 at least (the last sequence's max_positions rows). Other arguments, limits and codes as
 * ar4j_llama_rope_kv_append, checked in its order.
 * Device-side: a position outside [0, max_positions) leaves that token's q unchanged, writes no
 * cache row for it, and yields AR4J_LLAMA_ERROR_POSITION.
 */
int ar4j_llama_rope_kv_append_batched(void *q, int64_t q_row_stride, const void *k, int64_t k_row_stride,
                                      const void *v, int64_t v_row_stride, int32_t n, int32_t sequences,
                                      int32_t n_heads, int32_t n_kv_heads, int32_t head_dim,
                                      const float *inv_freq, float attention_scaling, void *k_cache,
                                      void *v_cache, int64_t cache_sequence_stride, int32_t max_positions,
                                      const int32_t *positions, int32_t start_pos, int32_t *device_status,
                                      int32_t pdl, void *stream);

/*
 * The key-range splits ar4j_llama_attention should use for n query tokens of n_heads query
 * heads over n_kv_heads KV heads against contexts up to max_context keys on a GPU of sm_count
 * multiprocessors. A host-only heuristic: the attention runs ceil(n * n_heads / n_kv_heads / 32)
 * * n_kv_heads blocks per split; it picks about four blocks per multiprocessor, at most one split
 * per 64 keys of max_context, a last partial 64 counted (e.g. 66 for llama3-8b decode at TP 1 on
 * 132 SMs from a max_context of 4161 keys up). At a step's length L the kernels give each split
 * whole tiles of 64 keys, chunk = 64 * ceil(ceil(L / splits) / 64), so only the first
 * ceil(L / chunk) splits do work. Returns 1 .. AR4J_LLAMA_MAX_SPLITS (1 for arguments <= 0 or
 * n_heads not a multiple of n_kv_heads).
 */
int32_t ar4j_llama_attention_splits(int32_t n, int32_t n_heads, int32_t n_kv_heads, int32_t max_context,
                                    int32_t sm_count);

/*
 * Bytes of device workspace ar4j_llama_attention needs for these arguments (the same n,
 * n_heads, n_kv_heads, head_dim, max_positions and num_splits as the call), or 0 when one is
 * out of the range ar4j_llama_attention accepts. With R = n * n_heads rows and
 * C = ceil(n * (n_heads / n_kv_heads) / 32) chunks, each part rounded up to 256 bytes:
 *   C * n_kv_heads int32 counters + R * num_splits * 2 fp32 (each split's max and sum)
 *   + R * num_splits * head_dim fp32 (partial outputs, when num_splits > 1)
 *   + R * max_positions bf16 (the scores, when n <= AR4J_LLAMA_MAX_ATTENTION_STORED_TOKENS).
 * E.g. llama3-8b decode (n 1, 32/8 heads, head_dim 128, 33 splits, max_positions 131072):
 * about 8.5 MiB.
 */
size_t ar4j_llama_attention_workspace_bytes(int32_t n, int32_t n_heads, int32_t n_kv_heads,
                                            int32_t head_dim, int32_t max_positions,
                                            int32_t num_splits);

/*
 * Causal grouped-query attention of n query tokens over one layer's KV cache: prefill
 * (positions 0..n-1 or p..p+n-1), decode (n = 1) and verify (n = k draft tokens) alike.
 * Query token t at position pos(t) (positions[t] from device memory, or start_pos + t)
 * attends to cache rows 0 .. pos(t) inclusive, so the caller appends this step's k/v first
 * (ar4j_llama_rope_kv_append or ar4j_llama_kv_append). Query head h reads KV head
 * h / (n_heads / n_kv_heads).
 * Arithmetic mirrors transformers' eager_attention_forward in bf16 (NOT sdpa/flash):
 *   d_j = bf16(dot(q, k_j))             fp32 accumulation, rounded as the bf16 matmul output
 *   s_j = bf16(d_j * scale)             scale: HF's scaling, head_dim ** -0.5 as fp32
 *   p_j = bf16(expf(s_j - max_j s_j) / sum_j expf(s_j - max_j s_j))   softmax in fp32, cast to bf16
 *   out = bf16(sum_j p_j * v_j)         fp32 accumulation
 * with the max and the sum over the whole context (the same for every split).
 * Two kernels over one grid of ceil(n * group / 32) x n_kv_heads x num_splits blocks (group =
 * n_heads / n_kv_heads): a block serves one KV head, up to 32 of its (token, query head) rows
 * and one key range, ~L / num_splits keys of the rows' real context L = max pos(t) + 1 (read
 * on the device, so one captured graph fits every length). The first kernel reads each K row of
 * its range once for all its rows and computes the scores s_j (kept in the workspace as bf16
 * when n <= AR4J_LLAMA_MAX_ATTENTION_STORED_TOKENS) and its range's max and sum of exp; the
 * second reads each V row once, computes p_j with the global max and sum (from all splits'
 * pairs, in split order; above AR4J_LLAMA_MAX_ATTENTION_STORED_TOKENS tokens it computes s_j
 * again from K), accumulates p_j * v_j, and the last block of each row chunk to finish adds the
 * splits' partial sums in split order. Deterministic (same inputs, same num_splits: same bits);
 * the fp32 sums are not in PyTorch's order, so it matches HF to bf16 rounding, not bitwise.
 * q: n x n_heads x head_dim bf16, row stride q_row_stride (>= n_heads * head_dim).
 * k_cache, v_cache: max_positions x n_kv_heads x head_dim bf16, contiguous. Rows 0 .. max pos(t)
 * must hold finite values: a row beyond one token's position but within another's context is
 * read and weighted by p = 0.
 * out: n x n_heads x head_dim bf16, row stride out_row_stride (>= n_heads * head_dim).
 * workspace: >= ar4j_llama_attention_workspace_bytes(n, n_heads, n_kv_heads, head_dim,
 * max_positions, num_splits) bytes of device memory (never NULL; its content need not be
 * initialised: the first kernel zeroes the counters), 16-byte aligned, owned by this call until
 * its kernels finish (one per stream in flight).
 * q, k_cache, v_cache 16-byte aligned and q_row_stride a multiple of 8 (rows are read in 16-byte
 * units); out 4-byte aligned and out_row_stride even (AR4J_LLAMA_ERROR_MISALIGNED otherwise).
 * 1 <= n; n * n_heads <= INT32_MAX; n_heads multiple of n_kv_heads >= 1; head_dim a multiple
 * of 8, 8 .. AR4J_LLAMA_MAX_HEAD_DIM (AR4J_LLAMA_ERROR_HEAD_DIM otherwise); 1 <= num_splits <=
 * AR4J_LLAMA_MAX_SPLITS (ar4j_llama_attention_splits picks one); scale finite > 0; with
 * positions NULL: 0 <= start_pos, start_pos + n <= max_positions.
 * PDL: the first kernel waits before any global access; the second starts its copies of V (and
 * of q and K above AR4J_LLAMA_MAX_ATTENTION_STORED_TOKENS tokens) and reads the positions before
 * its wait: its predecessor is the first kernel, which lets it start only once the grid before
 * the attention has completed.
 * Shared memory per block: with B = min(32, n * group) rows and T = 64 * (head_dim + 8) * 2
 * bytes per key tile, 4 * B * head_dim + 2 T (first kernel) and 2 T + 260 * ceil4(B) (second;
 * plus 4 * B * head_dim + 2 T above AR4J_LLAMA_MAX_ATTENTION_STORED_TOKENS tokens): 43 KiB for
 * llama3-8b decode, up to 172 KiB for head_dim 256 with more than 8 tokens; a GPU that cannot give
 * it returns the cudaError_t of cudaFuncSetAttribute.
 * Device-side: a position outside [0, max_positions) yields NaN for that token's output rows
 * and AR4J_LLAMA_ERROR_POSITION.
 */
int ar4j_llama_attention(const void *q, int64_t q_row_stride, const void *k_cache,
                         const void *v_cache, int32_t n, int32_t n_heads, int32_t n_kv_heads,
                         int32_t head_dim, int32_t max_positions, const int32_t *positions,
                         int32_t start_pos, float scale, void *out, int64_t out_row_stride,
                         int32_t num_splits, void *workspace, size_t workspace_bytes,
                         int32_t *device_status, int32_t pdl, void *stream);

/*
 * ar4j_llama_attention_splits for ar4j_llama_attention_batched: the same heuristic (about four
 * blocks per multiprocessor, at most one split per 64 keys of max_context, 1 ..
 * AR4J_LLAMA_MAX_SPLITS) with the batched call's blocks per split, sequences * C * n_kv_heads,
 * C = ceil(T * group / B) the row chunks of one sequence (T = n / sequences tokens per sequence,
 * group = n_heads / n_kv_heads, B the block's rows: the least of 4, 8, 16 and 32 that holds
 * T * group rows, else 32; 32 when T > AR4J_LLAMA_MAX_ATTENTION_STORED_TOKENS). max_context: the
 * longest context of any sequence. Returns 1 for arguments <= 0, n_heads not a multiple of
 * n_kv_heads, or n not a multiple of sequences. With sequences 1 it is ar4j_llama_attention_splits.
 */
int32_t ar4j_llama_attention_batched_splits(int32_t n, int32_t sequences, int32_t n_heads, int32_t n_kv_heads,
                                            int32_t max_context, int32_t sm_count);

/*
 * Bytes of device workspace ar4j_llama_attention_batched needs for these arguments, or 0 when one
 * is out of the range it accepts (n not a multiple of sequences included). With R = n * n_heads
 * rows and sequences * C chunks (C, T and B as in ar4j_llama_attention_batched_splits), each part
 * rounded up to 256 bytes:
 *   sequences * C * n_kv_heads int32 counters + R * num_splits * 2 fp32
 *   + R * num_splits * head_dim fp32 (when num_splits > 1)
 *   + R * max_positions bf16 (the scores, when T <= AR4J_LLAMA_MAX_ATTENTION_STORED_TOKENS).
 * The scores are kept per query row for its own sequence's keys, hence R * max_positions: e.g.
 * 64 llama3-8b decodes (T 1, 32/8 heads, max_positions 8192) keep 32 MiB of scores.
 * With sequences 1 it is ar4j_llama_attention_workspace_bytes.
 */
size_t ar4j_llama_attention_batched_workspace_bytes(int32_t n, int32_t sequences, int32_t n_heads,
                                                    int32_t n_kv_heads, int32_t head_dim,
                                                    int32_t max_positions, int32_t num_splits);

/*
 * ar4j_llama_attention for a static batch of `sequences` sequences (decode or verify of each, or
 * their prefill chunks of equal length), each with its own KV cache, in one call. The n tokens are
 * `sequences` runs of T = n / sequences consecutive tokens: token t belongs to sequence
 * s = t / T, is at position pos(t) = positions[t] of that sequence, and attends to rows
 * 0 .. pos(t) of sequence s's caches, which start at
 *   k_cache + s * cache_sequence_stride,  v_cache + s * cache_sequence_stride   (bf16 elements)
 * each laid out as ar4j_llama_attention's (max_positions x n_kv_heads x head_dim). Its output
 * row is out[t] as in ar4j_llama_attention, whose arithmetic and rounding points these are: a
 * token's row has the same bits as ar4j_llama_attention gives it for its sequence's T tokens
 * alone against that sequence's cache with the same num_splits (the same row chunks, hence the
 * same key ranges and sums).
 * The sequences' lengths are independent: each row chunk takes its key ranges from its own
 * context (max pos(t) + 1 over its rows), so short sequences cost little beside long ones.
 * Grid: sequences * C x n_kv_heads x num_splits blocks (C, B as in
 * ar4j_llama_attention_batched_splits): each sequence's T * group (token, query head) rows are cut
 * into chunks of B rows separately, so a block never holds two sequences' rows. With sequences 1
 * this is ar4j_llama_attention, which calls it (same blocks, same bits). The scores are kept in
 * the workspace when T <= AR4J_LLAMA_MAX_ATTENTION_STORED_TOKENS (K read once); above that,
 * computed twice from K, as ar4j_llama_attention above that many tokens. Deterministic (same
 * inputs, sequences and num_splits: same bits).
 * positions: n int32 in device memory, required when sequences > 1
 * (AR4J_LLAMA_ERROR_NULL_POINTER when NULL: start_pos + t would count across sequences); with
 * sequences 1 it may be NULL (pos(t) = start_pos + t, as ar4j_llama_attention).
 * cache_sequence_stride >= max_positions * n_kv_heads * head_dim, also for one sequence
 * (AR4J_LLAMA_ERROR_STRIDE otherwise: sequences' caches must not overlap), and a multiple of 8
 * so that every sequence's cache is 16-byte aligned (AR4J_LLAMA_ERROR_MISALIGNED otherwise).
 * Each sequence's rows 0 .. max pos(t) over its own tokens must hold finite values (see
 * ar4j_llama_attention); no other sequence's rows, and none of its rows beyond that, are read.
 * 1 <= sequences, n a multiple of sequences (AR4J_LLAMA_ERROR_SIZE otherwise). workspace:
 * >= ar4j_llama_attention_batched_workspace_bytes(n, sequences, n_heads, n_kv_heads, head_dim,
 * max_positions, num_splits) bytes (AR4J_LLAMA_ERROR_WORKSPACE otherwise), as
 * ar4j_llama_attention's. Other arguments, limits, codes (checked in ar4j_llama_attention's
 * order: pointers, sizes, GQA, head_dim, splits, strides, scale, positions, alignment,
 * workspace), PDL and shared memory (B rows per block) as ar4j_llama_attention.
 * Device-side: a position outside [0, max_positions) yields NaN for that token's output rows
 * and AR4J_LLAMA_ERROR_POSITION.
 */
int ar4j_llama_attention_batched(const void *q, int64_t q_row_stride, const void *k_cache,
                                 const void *v_cache, int64_t cache_sequence_stride, int32_t n,
                                 int32_t sequences, int32_t n_heads, int32_t n_kv_heads, int32_t head_dim,
                                 int32_t max_positions, const int32_t *positions, int32_t start_pos,
                                 float scale, void *out, int64_t out_row_stride, int32_t num_splits,
                                 void *workspace, size_t workspace_bytes, int32_t *device_status,
                                 int32_t pdl, void *stream);

/*
 * ar4j_llama_rope_kv_append_batched followed by ar4j_llama_attention_batched in the attention's two
 * kernels (one launch fewer, a decode or verify step's), for new tokens whose keys and values are
 * not yet in the caches:
 *   k_cache[pos(t)] = rope(k[t], pos(t)),  v_cache[pos(t)] = v[t]   (each sequence's own caches)
 *   out[t] = attention(rope(q[t], pos(t)), the caches' rows 0 .. pos(t))
 * with the same values and bits as those two calls with the same num_splits (the same rotation,
 * scores, key ranges and sums), except that q is left as it is (not rotated in place). Each new
 * key is rotated by the block whose key range holds its position, patched into that block's tile
 * and written to the cache; each new value likewise by kernel 2.
 * Arguments as the two functions: q, k, v the new tokens' queries, keys and values before RoPE
 * (e.g. the fused QKV output), row strides q_row_stride, k_row_stride, v_row_stride; inv_freq and
 * attention_scaling as ar4j_llama_rope; the rest as ar4j_llama_attention_batched, whose checks come
 * first, in its order. Then: k, v or inv_freq NULL -> AR4J_LLAMA_ERROR_NULL_POINTER; a sequence's
 * T = n / sequences tokens must be at most AR4J_LLAMA_MAX_ATTENTION_STORED_TOKENS and its
 * T * (n_heads / n_kv_heads) rows at most AR4J_LLAMA_MAX_ROPE_ATTENTION_ROWS (one block's rows:
 * e.g. llama3-8b's decode and verify of up to 8 tokens), else AR4J_LLAMA_ERROR_SIZE (call the two
 * functions); k_row_stride,
 * v_row_stride >= n_kv_heads * head_dim (AR4J_LLAMA_ERROR_STRIDE); attention_scaling finite
 * (AR4J_LLAMA_ERROR_INVALID_ARGUMENT); k, v 2-byte and inv_freq 4-byte aligned
 * (AR4J_LLAMA_ERROR_MISALIGNED). A sequence's tokens have distinct positions; q, k and v must not
 * overlap the caches.
 * Device-side: a position outside [0, max_positions) writes no cache row, yields NaN for that
 * token's output rows and AR4J_LLAMA_ERROR_POSITION.
 */
int ar4j_llama_rope_attention_batched(const void *q, int64_t q_row_stride, const void *k, int64_t k_row_stride,
                                      const void *v, int64_t v_row_stride, const float *inv_freq,
                                      float attention_scaling, void *k_cache, void *v_cache,
                                      int64_t cache_sequence_stride, int32_t n, int32_t sequences, int32_t n_heads,
                                      int32_t n_kv_heads, int32_t head_dim, int32_t max_positions,
                                      const int32_t *positions, int32_t start_pos, float scale, void *out,
                                      int64_t out_row_stride, int32_t num_splits, void *workspace,
                                      size_t workspace_bytes, int32_t *device_status, int32_t pdl, void *stream);

/*
 * Causal grouped-query attention of a prefill chunk in one kernel on tensor cores (sm_80+): n query
 * rows at positions start_pos .. start_pos + n - 1 against the KV-cache rows 0 .. start_pos + n - 1
 * (this chunk's keys appended before). For query head h (KV head h / (n_heads / n_kv_heads)) and
 * row i, with j <= start_pos + i:
 *   s_j = bf16(bf16(q_i . k_j) * scale)          (q . k in fp32: eager attention's scores)
 *   out_i = bf16(sum_j bf16(exp(s_j - m)) v_j / sum_j exp(s_j - m))
 * in one walk over the keys with an online softmax (FlashAttention-2): m is the running max, the
 * partial sums rescaled as it rises. The probabilities are rounded to bf16 before they are divided
 * by the sum (eager attention divides first), so outputs differ from eager attention's and from the
 * batched-GEMM sequence (ar4j_llama_prefill_softmax) by bf16 rounding. The scores never reach
 * memory: a block of 128 rows of one head (64 where the device gives a block less than 104 KB of
 * shared memory) walks its tiles of 64 keys, the next tile's copies in flight.
 * q: n rows of n_heads x head_dim bf16, row stride q_row_stride (e.g. the fused QKV output);
 * k_cache, v_cache: rows of n_kv_heads x head_dim, row stride kv_row_stride; out: n rows of
 * n_heads x head_dim, row stride out_row_stride. head_dim 64 or 128 (AR4J_LLAMA_ERROR_HEAD_DIM
 * otherwise: use the batched-GEMM sequence); 1 <= n <= 4194240 (65535 blocks of 64 rows); 1 <= n_heads <=
 * 65535, a multiple of n_kv_heads; 0 <= start_pos; scale finite > 0; pointers 16-byte aligned and strides multiples
 * of 8 (AR4J_LLAMA_ERROR_MISALIGNED).
 */
int ar4j_llama_prefill_attention(const void *q, int64_t q_row_stride, const void *k_cache,
                                 const void *v_cache, int64_t kv_row_stride, void *out,
                                 int64_t out_row_stride, int32_t n, int32_t start_pos, int32_t n_heads,
                                 int32_t n_kv_heads, int32_t head_dim, float scale, int32_t pdl,
                                 void *stream);

/*
 * The middle step of prefill attention through batched GEMMs (the engine's chunked prefill:
 * S_h = Q_h . K_g^T with cuBLAS, bf16 out; this; O_h = P_h . V_g with cuBLAS), in place on the
 * scores of n query rows of n_heads heads. Query row i is at position start_pos + i; the keys are
 * positions 0 .. start_pos + n - 1 (the KV cache after this chunk's append). For each head h and
 * row i, with S the bf16 matmul output d_j, j < start_pos + n:
 *   s_j = bf16(d_j * scale)                                    (HF: matmul(q, k^T) * scaling)
 *   p_j = bf16(expf(s_j - max) / sum)   for j <= start_pos + i (softmax in fp32, cast to bf16;
 *                                        max and sum over j <= start_pos + i)
 *   p_j = 0                             for start_pos + i < j < start_pos + n (the causal mask:
 *                                        HF adds the dtype's minimum, whose exp is 0)
 * the rounding points of transformers' eager_attention_forward and of ar4j_llama_attention. The
 * max and the running sum are taken per thread in column order, then combined in a fixed tree:
 * deterministic, matching PyTorch to fp32 rounding of the sum, not bitwise.
 * scores[h * head_stride + i * row_stride + j] (bf16): 16-byte aligned, row_stride a multiple of
 * 8 and >= start_pos + n rounded up to 8 (columns from start_pos + n to that bound are read and
 * left as they are), head_stride a multiple of 8 and >= n * row_stride when n_heads > 1.
 * 1 <= n; 1 <= n_heads <= 65535; 0 <= start_pos; scale finite > 0. One block per (row, head).
 * A NaN score makes its row's probabilities NaN.
 */
int ar4j_llama_prefill_softmax(void *scores, int64_t row_stride, int64_t head_stride, int32_t n,
                               int32_t n_heads, int32_t start_pos, float scale, int32_t pdl,
                               void *stream);

/*
 * The calling thread's current device's free and total memory in bytes (cudaMemGetInfo), e.g.
 * to refuse a KV cache that cannot fit before allocating it. Returns 0, a cudaError_t, or
 * AR4J_LLAMA_ERROR_NULL_POINTER.
 */
int ar4j_llama_device_memory(size_t *free_bytes, size_t *total_bytes);

/*
 * A linear layer for a few tokens: Y[r, j] = bf16( sum_i X[r, i] * W[j, i] ) for r < rows,
 * j < n, with fp32 accumulation and one rounding per output, as torch.nn.functional.linear in
 * bf16 (HF's Linear without bias). W: n x k bf16, row-major, contiguous (a PyTorch linear
 * weight); X: rows x k bf16, row stride x_row_stride; Y: rows x n bf16, row stride
 * y_row_stride. For the decode and verify steps (1 <= rows <= AR4J_LLAMA_MAX_LINEAR_ROWS),
 * where the product is a stream of W through the SMs: W is read once with 16-byte loads that
 * bypass L1, several loads in flight per lane (a register double buffer), its first loads
 * issued before the programmatic-dependent-launch wait (W never depends on the previous
 * kernel; X is read only after the wait). Each row of W may be cut into k_splits slices of
 * equal length summed by different warps (split-K, for shapes with few outputs); the slices'
 * fp32 partial sums are added in slice order, so the result is deterministic for a given
 * k_splits, but the sum order is not a GEMM library's: results match cuBLAS's to fp32 rounding
 * of the sum, not bitwise.
 * k a multiple of 8, w and x 16-byte aligned, x_row_stride a multiple of 8 and >= k
 * (AR4J_LLAMA_ERROR_MISALIGNED / _STRIDE otherwise); y_row_stride >= n; 1 <= n, 1 <= k.
 * ar4j_llama_linear_rows chooses k_splits itself (as k_splits 0 below).
 */
int ar4j_llama_linear_rows(const void *w, const void *x, int64_t x_row_stride, void *y,
                           int64_t y_row_stride, int32_t rows, int32_t n, int32_t k, int32_t pdl,
                           void *stream);

/* The kernels of ar4j_llama_linear_rows and its fused forms (ar4j_llama_set_linear_rows_kernel). */
enum ar4j_llama_linear_rows_kernel {
    AR4J_LLAMA_LINEAR_ROWS_AUTO = 0,         /* the library's choice: the registers kernel (the faster where measured) */
    AR4J_LLAMA_LINEAR_ROWS_REGISTERS = 1,    /* W through a register double buffer (every architecture) */
    AR4J_LLAMA_LINEAR_ROWS_RING = 2          /* W through a ring of bulk copies in shared memory (sm_90+) */
};

/*
 * Chooses the kernel of every later ar4j_llama_linear_rows* call in the process (the default is
 * AR4J_LLAMA_LINEAR_ROWS_AUTO). Both kernels add the same products in the same order: their
 * results are the same bits; they differ in how W reaches the SMs. The ring keeps 16 KiB of W per
 * warp in flight through cp.async.bulk into shared memory, all of it issued before the
 * programmatic-dependent-launch wait; the registers kernel keeps 4 16-byte loads per lane.
 * Returns AR4J_LLAMA_ERROR_INVALID_ARGUMENT for another value, AR4J_LLAMA_ERROR_UNSUPPORTED for
 * the ring when the current device is older than sm_90 (a later call on such a device with the
 * ring chosen fails the same way).
 */
int ar4j_llama_set_linear_rows_kernel(int32_t kernel);

/*
 * ar4j_llama_linear_rows with an explicit k_splits: 1, 2, 4 or 8 slices per row of W, or 0 to
 * let the library choose (about 48 warps per multiprocessor of the current device, slices of at
 * least 1 KiB). Anything else: AR4J_LLAMA_ERROR_SPLITS.
 */
int ar4j_llama_linear_rows_split(const void *w, const void *x, int64_t x_row_stride, void *y,
                                 int64_t y_row_stride, int32_t rows, int32_t n, int32_t k,
                                 int32_t k_splits, int32_t pdl, void *stream);

/*
 * The gate/up projection of an MLP with the SwiGLU activation in its epilogue:
 *   gate[r, j] = bf16( sum_i X[r, i] * W[j, i] ),  up[r, j] = bf16( sum_i X[r, i] * W[intermediate + j, i] )
 *   out[r, j]  = bf16( bf16(silu(gate[r, j])) * up[r, j] ),  silu(g) = g / (1 + expf(-g)) in fp32
 * for j < intermediate: the values of ar4j_llama_linear_rows_split (with the same explicit
 * k_splits; with 0 each chooses its own, and this form takes at most 4) into a fused gate_up
 * output followed by ar4j_llama_silu_mul, bit for bit, without the 2 x intermediate row. W: (2 * intermediate) x k bf16, the gate rows then the up rows
 * (a fused gate_up weight); out: rows x intermediate, row stride out_row_stride (>= intermediate).
 * k_splits: 0 (the library's choice), 1, 2 or 4. Other conditions as ar4j_llama_linear_rows.
 */
int ar4j_llama_linear_rows_silu_mul(const void *w_gate_up, const void *x, int64_t x_row_stride,
                                    void *out, int64_t out_row_stride, int32_t rows,
                                    int32_t intermediate, int32_t k, int32_t k_splits, int32_t pdl,
                                    void *stream);

/*
 * Asks for bytes of device memory at p to be brought into the L2 cache, without waiting for them:
 * the decode step issues it for the next product's weight before kernels that read little from
 * memory (RoPE, attention, the norms), so the weight streams from L2 when the product reads it.
 * A hint only: what is evicted before it is read costs time, never a wrong value. Launched with
 * programmatic dependent launch when pdl is set, the next kernel may start at once; a kernel that
 * waits for this one also waits for every kernel before it. p 16-byte aligned
 * (AR4J_LLAMA_ERROR_MISALIGNED), bytes a positive multiple of 16 (AR4J_LLAMA_ERROR_SIZE).
 */
int ar4j_llama_prefetch_l2(const void *p, size_t bytes, int32_t pdl, void *stream);

/* Bytes of device workspace ar4j_llama_linear_rows_argmax needs (0 when an argument is out of
 * range): 16 + rows * ceil(n / 8) * 8. */
size_t ar4j_llama_linear_rows_argmax_workspace_bytes(int32_t rows, int32_t n);

/*
 * An LM head with the greedy choice in its epilogue: the logits of ar4j_llama_linear_rows
 * (k_splits 1), logits[r, j] = bf16( sum_i X[r, i] * W[j, i] ), stored when logits != NULL
 * (row stride logits_row_stride >= n), and for each row r the argmax over j < argmax_cols as
 * ar4j_llama_argmax gives it over the stored logits (torch.argmax: the lowest index among equal
 * maxima; a NaN counts as the maximum, the first NaN wins):
 *   out_index[r] = index_offset + argmax_j logits[r, j],  out_value[r] = fp32(that logit)
 * (out_value may be NULL). Each block of the grid writes its rows' best candidates to the
 * workspace; the last block to finish (an atomic counter in the workspace) reduces them, then
 * resets the counter, so consecutive launches (graph replays) on one stream reuse it.
 * workspace: >= ar4j_llama_linear_rows_argmax_workspace_bytes(rows, n) bytes of device memory,
 * 16-byte aligned, ZEROED ONCE before its first use, used by one launch at a time.
 * 1 <= argmax_cols <= n; 0 <= index_offset, index_offset + n <= INT32_MAX. Other conditions as
 * ar4j_llama_linear_rows.
 */
int ar4j_llama_linear_rows_argmax(const void *w, const void *x, int64_t x_row_stride, void *logits,
                                  int64_t logits_row_stride, int32_t rows, int32_t n, int32_t k,
                                  int32_t argmax_cols, int32_t index_offset, int32_t *out_index,
                                  float *out_value, void *workspace, size_t workspace_bytes,
                                  int32_t pdl, void *stream);

/*
 * SwiGLU activation: out[r, c] = bf16( bf16(silu(gate[r, c])) * up[r, c] ),
 * silu(x) = x / (1 + expf(-x)) in fp32 (HF: act_fn(gate_proj(x)) * up_proj(x) in bf16).
 * gate, up: rows x cols bf16 with row strides gate_row_stride, up_row_stride (>= cols; e.g.
 * both halves of one fused gate_up GEMM output); out: rows x cols, row stride out_row_stride
 * (>= cols; may equal gate or up with the same stride). 1 <= rows, 1 <= cols.
 */
int ar4j_llama_silu_mul(const void *gate, int64_t gate_row_stride, const void *up,
                        int64_t up_row_stride, void *out, int64_t out_row_stride, int32_t rows,
                        int32_t cols, int32_t pdl, void *stream);

/*
 * Argmax of each row of logits (dtype AR4J_LLAMA_DTYPE_BFLOAT16 or _FLOAT32), as torch.argmax:
 * the lowest index among equal maxima; a NaN counts as the maximum (the first NaN wins).
 *   out_index[r] = index_offset + argmax_c logits[r, c]
 *   out_value[r] = fp32(logits[r, out_index[r] - index_offset])   (when out_value != NULL)
 * logits: rows x cols, row stride row_stride (>= cols) elements. index_offset: e.g. this
 * rank's vocab_start, so that partial results of vocabulary shards can be compared.
 * 1 <= rows, 1 <= cols, index_offset >= 0, index_offset + cols <= INT32_MAX.
 */
int ar4j_llama_argmax(int32_t dtype, const void *logits, int64_t row_stride, int32_t rows,
                      int32_t cols, int32_t index_offset, int32_t *out_index, float *out_value,
                      int32_t pdl, void *stream);

/*
 * Greedy decoding at tensor-parallel degree ranks > 1 without all-reducing the logits. Each rank
 * takes the argmax of its vocabulary shard (ar4j_llama_argmax or ar4j_llama_linear_rows_argmax with
 * index_offset = the shard's first token id, over the shard's real columns), then:
 *   1. ar4j_llama_argmax_pack writes its (value, index) of each row into its slot of the fp32
 *      exchange buffer, exchange[(r * ranks + q) * 2 + {0, 1}] = (out_value[r], out_index[r]) for
 *      q = rank and 0 for every other q;
 *   2. the caller all-reduces the exchange buffer (SUM, fp32: exact, since each slot has one
 *      non-zero addend; the count ar4j_llama_argmax_exchange_floats gives, a multiple of 4);
 *   3. ar4j_llama_argmax_pick chooses per row among the ranks' pairs as torch.argmax over the whole
 *      vocabulary does (a NaN is the maximum, then the larger value, then the lower token id):
 *      out_index[r], and out_value[r] when out_value != NULL. Device-side: an id field that is not a
 *      whole number in [0, AR4J_LLAMA_MAX_EXCHANGED_VOCAB) (the NaN a failed all-reduce leaves) gives
 *      out_index[r] = -1, out_value[r] = NaN and AR4J_LLAMA_ERROR_TOKEN_ID in device_status (may be NULL).
 * The buffer's floats past rows * ranks * 2 (up to the multiple of 4) are never written: zero them
 * once. vocab: the vocabulary size, 1 .. AR4J_LLAMA_MAX_EXCHANGED_VOCAB (ids exact in fp32;
 * AR4J_LLAMA_ERROR_SIZE otherwise); 1 <= rows, 1 <= ranks, rows * ranks <= 2^28; 0 <= rank < ranks
 * (AR4J_LLAMA_ERROR_INVALID_ARGUMENT); pointers 4-byte aligned.
 */
size_t ar4j_llama_argmax_exchange_floats(int32_t rows, int32_t ranks);  /* 0 when out of range */
int ar4j_llama_argmax_pack(const int32_t *index, const float *value, int32_t rows, int32_t ranks,
                           int32_t rank, int32_t vocab, float *exchange, int32_t pdl, void *stream);
int ar4j_llama_argmax_pick(const float *exchange, int32_t rows, int32_t ranks, int32_t *out_index,
                           float *out_value, int32_t *device_status, int32_t pdl, void *stream);

/*
 * Sampling: for each of rows rows of bf16 logits (row r at logits + r * row_stride, its first n
 * columns valid), one index drawn from softmax(logits / temperature) restricted to the top-k
 * values and then to the top-p nucleus, written where ar4j_llama_argmax writes its index:
 *   out_index[r] = index_offset + the drawn column
 * The distribution, exactly (every sum below is an integer sum, hence exact and order-free):
 *   w_j   = floor(2^32 * expf((x_j - max) / temperature))   fp32 expf and division; max = the
 *           largest finite logit of the row; a logit whose w_j is 0 (about 22 T below the max) is
 *           never drawn. NaN and +-inf logits are never drawn (weight 0); -0 equals +0.
 *   top-k: with v_k the k-th largest logit value (counting repeats), keep x_j >= v_k, so every
 *          logit equal to v_k is kept (as transformers' TopKLogitsWarper); top_k 0 or >= the
 *          finite logits of the row keeps all. K = the kept weight.
 *   top-p: keep x_j >= v_p, v_p the largest kept value such that the kept weights of x >= v_p
 *          sum to at least ceil(top_p * K) (fp64); all logits equal to v_p stay; top_p 1 keeps the
 *          top-k set. This is the exact nucleus (no cap on its size): the smallest set of values,
 *          from the largest down, whose probability is at least top_p.
 *   draw:  z = mix(mix(mix(seed) ^ counter) ^ r) (mix as in ar4j_llama_fill_random_bf16, counter
 *          the state's step counter), R = floor(z * W / 2^64) with W the nucleus weight; the keys
 *          are laid out from the largest value down, each value's occurrences in index order, each
 *          occurrence an interval of its weight; the index whose interval holds R is drawn.
 * So the draw is a function of (logits, n, temperature, top_k, top_p, seed, counter, r) alone: the
 * same on every GPU that runs this binary, on every rank given the same logits, at every replay of
 * a graph with the same counter. Greedy decoding is not a limit of this (use ar4j_llama_argmax).
 * state: AR4J_LLAMA_SAMPLE_STATE_BYTES of device memory, 8-byte aligned: a uint64 step counter
 * at offset 0, then a uint32 that must be 0 before the first launch (zero the whole state, or set
 * the counter to a start value and the rest to 0). Every launch reads the counter (all rows of
 * one launch use the same value) and the last block of the launch to finish advances it by one,
 * so consecutive launches and graph replays draw fresh numbers; one launch at a time per state.
 * One block of 1024 threads per row, six reads of the row (max, a histogram of the high bytes of
 * the values' 16-bit order keys, a histogram of the low bytes within one high byte for each of
 * top-k, top-p and the draw, and a search for the drawn value's occurrence), no workspace.
 * 1 <= rows; 1 <= n <= 2^30 (AR4J_LLAMA_ERROR_SIZE); row_stride >= n; temperature finite > 0;
 * top_k >= 0; 0 < top_p <= 1; 0 <= index_offset, index_offset + n <= INT32_MAX
 * (AR4J_LLAMA_ERROR_INVALID_ARGUMENT otherwise); logits 2-byte and out_index 4-byte aligned.
 * Device-side: a row without a finite logit yields index_offset and AR4J_LLAMA_ERROR_LOGITS.
 */
int ar4j_llama_sample(const void *logits, int64_t row_stride, int32_t rows, int32_t n, float temperature,
                      int32_t top_k, float top_p, uint64_t seed, void *state, int32_t index_offset,
                      int32_t *out_index, int32_t *device_status, int32_t pdl, void *stream);

/*
 * Seeded random bf16 fill (synthetic weights), deterministic across runs and TP degrees:
 * the value of an element is a function of (seed, its global row and column in the
 * unsharded tensor) only, so every sharding of one tensor holds the same numbers.
 *   index = (row_offset + r) * global_cols + col_offset + c          (uint64)
 *   h     = mix(mix(seed) ^ index), mix(z) = splitmix64's finalizer of z + 0x9E3779B97F4A7C15:
 *           z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9; z = (z ^ (z >> 27)) * 0x94D049BB133111EB;
 *           z ^ (z >> 31)
 *   u     = (h >> 40) * 2^-24                                         (fp32, in [0, 1))
 *   dst[r * ld + c] = bf16((2u - 1) * (std * 1.7320508f))             (fp32 ops, nearest even)
 * i.e. uniform with standard deviation std (e.g. 1/sqrt(fan_in)). dst: rows x cols bf16 of
 * row stride ld (>= cols): this rank's block of a global tensor with global_cols columns,
 * starting at (row_offset, col_offset). Derive one seed per tensor (e.g. a hash of its name).
 * 1 <= rows, 1 <= cols, row_offset >= 0, col_offset >= 0, col_offset + cols <= global_cols,
 * std finite >= 0.
 */
int ar4j_llama_fill_random_bf16(void *dst, int64_t rows, int64_t cols, int64_t ld,
                                int64_t row_offset, int64_t col_offset, int64_t global_cols,
                                uint64_t seed, float std, void *stream);

/* dst[i] = bf16(value) for i in [0, count). count >= 1 (e.g. RMSNorm weights of 1.0). */
int ar4j_llama_fill_bf16(void *dst, int64_t count, float value, void *stream);

/* out[i] = fp32(in[i]) for count bf16 elements (exact). count >= 1. */
int ar4j_llama_bf16_to_f32(const void *in, float *out, int64_t count, void *stream);

/* out[i] = bf16(in[i]) for count fp32 elements (round to nearest even; NaN stays NaN). count >= 1. */
int ar4j_llama_f32_to_bf16(const float *in, void *out, int64_t count, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* AR4J_LLAMA_KERNELS_H */
