// Causal grouped-query attention over a KV cache, in bounded memory, with the rounding points of
// transformers' eager_attention_forward in bf16 (see kernels.h).
//
// FlashDecoding-style split-KV in two kernels over one grid (chunks, n_kv_heads, splits):
// a block serves one KV head, one key range (split) and up to ROWS query rows: the (token,
// query head) pairs of that KV head's group within one sequence, numbered t * group + g
// (t counted within the sequence) and cut into chunks of ROWS, each sequence's separately
// (ROWS = 4, 8, 16 or kRows = 32, the least that holds a sequence's rows, else kRows: decode of
// llama3-8b is one chunk of 4 rows per sequence; a verify of 4 tokens one of 16; a long prefill
// many chunks of 32). A batch of sequences (n / sequences consecutive tokens each, each with its
// own cache) is so the grid of one sequence repeated: chunk c of sequence s is block
// s * chunks_per_seq + c, and a block never mixes two sequences' rows, caches or lengths.
// The split's range is cut from the chunk's real context length L = max pos(t) + 1, read from
// device memory, so a captured graph serves every length with ~L / splits keys per block.
//   1. scores: the K rows of the range, in tiles of kTile keys copied to shared memory with
//      16-byte cp.async (double-buffered), each row read once for all the block's query rows,
//      the dots of a tile on tensor cores (mma.sync m16n8k16: bf16 q and k, fp32 sums);
//      s = bf16(bf16(q.k) * scale) for every (row, key) it may attend to, stored in the
//      workspace as bf16 (exact: they are bf16 values) when a sequence has at most
//      kStoredTokens tokens, and each row's (max, sum of exp(s - max)) over the range (online
//      softmax, merged in a fixed order).
//   2. values: the global max and sum of each row from all splits' pairs (split order), then
//      p = bf16(exp(s - max) / sum) per key (the stored s; above kStoredTokens tokens, s
//      computed again from K) and sum_j p_j v_j over the range from V tiles in shared memory
//      (each V row read once), on tensor cores (p and v are bf16 values: exact products, fp32 sums). A split with no keys at the length (the splits past `active`)
//      returns at once in both kernels. One active split writes out directly; with several, each
//      writes its fp32 partial sums, and the last of them to finish (a counter per (chunk, KV
//      head), zeroed by kernel 1 of the same call) adds the partials in split order and writes
//      bf16 out.
// Every sum has a fixed order (the MMA's over 16 elements or keys, its steps in order; a split's
// keys in key order per thread, then a fixed butterfly and the warps in order; the splits in split
// order): same inputs and splits, same bits.
// Here: the launches, the split and workspace sizing, the argument checks and the C ABI; kernel 1
// in attention_scores.cuh, kernel 2 in attention_values.cuh, what they share in attention_tiles.cuh.
#include "attention_values.cuh"  // kernel 2, after kernel 1 (attention_scores.cuh) and the tiles

namespace ar4j_llama {
namespace {

// Both kernels of one call, each with the shared memory it needs (kernel 2 launched programmatically
// dependent on kernel 1 when pdl).
template <int ROWS, bool STORED, bool ROPE>
int launch_attention(const AttentionArgs &a, dim3 grid, bool pdl, void *stream) {
    constexpr int MT = m_tiles<ROWS>();
    const size_t scores_bytes = scores_shared_bytes(MT, a.head_dim) + staged_bytes(a);
    const size_t values_bytes = values_shared_bytes(MT, a.head_dim, STORED) + staged_bytes(a);
    int error = allow_shared(attention_scores_kernel<ROWS, STORED, ROPE>, scores_bytes);
    if (error == 0) error = allow_shared(attention_values_kernel<ROWS, STORED, ROPE>, values_bytes);
    if (error != 0) return error;
    error = launch(attention_scores_kernel<ROWS, STORED, ROPE>, grid, dim3(kThreads), scores_bytes, stream, pdl, a);
    if (error != 0) return error;
    return launch(attention_values_kernel<ROWS, STORED, ROPE>, grid, dim3(kThreads), values_bytes, stream, pdl, a);
}

template <int ROWS>
int dispatch_rows(const AttentionArgs &a, dim3 grid, bool stored, bool pdl, void *stream) {
    if (!stored) {
        // Only a call of more than kStoredTokens tokens per sequence recomputes scores: its blocks
        // have kRows rows (block_rows_for).
        if constexpr (ROWS == kRows) return launch_attention<ROWS, false, false>(a, grid, pdl, stream);
        return AR4J_LLAMA_ERROR_INVALID_ARGUMENT;
    }
    if (a.k_new != nullptr) return launch_attention<ROWS, true, true>(a, grid, pdl, stream);
    return launch_attention<ROWS, true, false>(a, grid, pdl, stream);
}

// The block's rows: the least of 4, 8, 16 and kRows that holds all rows of one sequence
// (tokens_per_seq * group), else kRows; kRows when the scores are not stored (more than
// kStoredTokens tokens per sequence: a prefill's rows).
int32_t block_rows_for(int64_t rows_per_seq, bool stored) {
    if (!stored) return kRows;
    return rows_per_seq <= 4 ? 4 : rows_per_seq <= 8 ? 8 : rows_per_seq <= 16 ? 16 : kRows;
}

// How n tokens of `sequences` sequences are cut into blocks' rows. Callers have checked n >= 1,
// 1 <= sequences, n % sequences == 0 and group >= 1.
struct Chunking {
    int32_t tokens_per_seq;
    int64_t rows_per_seq;    // tokens_per_seq * group
    bool stored;             // the scores kept in the workspace (tokens_per_seq <= kStoredTokens)
    int32_t rows_per_block;  // ROWS
    int64_t chunks_per_seq;
    int64_t chunks;          // sequences * chunks_per_seq: grid.x
};

Chunking chunking(int32_t n, int32_t sequences, int32_t group) {
    Chunking c;
    c.tokens_per_seq = n / sequences;
    c.rows_per_seq = int64_t(c.tokens_per_seq) * group;
    // Per sequence, not per call: a batch of decodes keeps the K-read-once path of one decode. The
    // stored scores, n * n_heads * max_positions bf16, are then at most 4 * group / head_dim of one
    // layer's caches of the batch (1/8 for llama3-8b's verify of 8 tokens per sequence).
    c.stored = c.tokens_per_seq <= kStoredTokens;
    c.rows_per_block = block_rows_for(c.rows_per_seq, c.stored);
    c.chunks_per_seq = (c.rows_per_seq + c.rows_per_block - 1) / c.rows_per_block;
    c.chunks = int64_t(sequences) * c.chunks_per_seq;
    return c;
}

// The workspace: counters, stats, partial sums (splits > 1), scores (stored); each part 256-byte
// aligned.
struct Workspace {
    size_t counters, stats, partial, scores, total;
};

size_t align256(size_t x) { return (x + 255) / 256 * 256; }

Workspace workspace_layout(int32_t n, int32_t sequences, int32_t n_heads, int32_t n_kv_heads, int32_t head_dim,
                           int32_t max_positions, int32_t splits) {
    const size_t rows = size_t(n) * size_t(n_heads);
    const Chunking c = chunking(n, sequences, n_heads / n_kv_heads);
    Workspace w;
    w.counters = 0;
    w.stats = align256(size_t(c.chunks) * size_t(n_kv_heads) * sizeof(int32_t));
    w.partial = w.stats + align256(rows * size_t(splits) * 2 * sizeof(float));
    w.scores = w.partial + (splits > 1 ? align256(rows * size_t(splits) * size_t(head_dim) * sizeof(float)) : 0);
    w.total = w.scores + (c.stored ? rows * size_t(max_positions) * sizeof(uint16_t) : 0);
    return w;
}

bool valid_attention_head_dim(int32_t head_dim) {
    return head_dim >= 8 && head_dim <= AR4J_LLAMA_MAX_HEAD_DIM && head_dim % 8 == 0;
}

// Whether n tokens split into `sequences` equal runs.
bool valid_sequences(int32_t n, int32_t sequences) { return sequences >= 1 && n >= 1 && n % sequences == 0; }

}  // namespace
}  // namespace ar4j_llama

using namespace ar4j_llama;

AR4J_LLAMA_API int32_t ar4j_llama_attention_batched_splits(int32_t n, int32_t sequences, int32_t n_heads,
                                                           int32_t n_kv_heads, int32_t max_context,
                                                           int32_t sm_count) {
    if (n <= 0 || n_heads <= 0 || n_kv_heads <= 0 || n_heads % n_kv_heads != 0 || max_context <= 0 ||
        sm_count <= 0 || !valid_sequences(n, sequences)) {
        return 1;
    }
    // Blocks per split: one per (chunk of one sequence's query rows, KV head), the chunks of the
    // kernels' own cut. About four blocks per SM, and at most one split per tile of keys at the
    // longest context, its last partial tile counted, so that no split gets a second tile for one
    // key (at a shorter length the kernels use only the splits that get a tile's worth of keys).
    // With one sequence the chunks are ceil(n * group / kRows): the ladder's smaller blocks only
    // serve calls that fit one chunk anyway.
    const int64_t blocks = chunking(n, sequences, n_heads / n_kv_heads).chunks * n_kv_heads;
    int64_t splits = (4 * int64_t(sm_count) + blocks - 1) / blocks;
    const int64_t by_length = (int64_t(max_context) + kTile - 1) / kTile;
    if (splits > by_length) splits = by_length;
    if (splits > AR4J_LLAMA_MAX_SPLITS) splits = AR4J_LLAMA_MAX_SPLITS;
    return splits < 1 ? 1 : int32_t(splits);
}

AR4J_LLAMA_API int32_t ar4j_llama_attention_splits(int32_t n, int32_t n_heads, int32_t n_kv_heads,
                                                   int32_t max_context, int32_t sm_count) {
    return ar4j_llama_attention_batched_splits(n, 1, n_heads, n_kv_heads, max_context, sm_count);
}

AR4J_LLAMA_API size_t ar4j_llama_attention_batched_workspace_bytes(int32_t n, int32_t sequences, int32_t n_heads,
                                                                   int32_t n_kv_heads, int32_t head_dim,
                                                                   int32_t max_positions, int32_t num_splits) {
    if (n < 1 || n_heads < 1 || n_kv_heads < 1 || n_heads % n_kv_heads != 0 ||
        int64_t(n) * n_heads > int64_t(INT32_MAX) || !valid_attention_head_dim(head_dim) || max_positions < 1 ||
        num_splits < 1 || num_splits > AR4J_LLAMA_MAX_SPLITS || !valid_sequences(n, sequences)) {
        return 0;
    }
    return workspace_layout(n, sequences, n_heads, n_kv_heads, head_dim, max_positions, num_splits).total;
}

AR4J_LLAMA_API size_t ar4j_llama_attention_workspace_bytes(int32_t n, int32_t n_heads, int32_t n_kv_heads,
                                                           int32_t head_dim, int32_t max_positions,
                                                           int32_t num_splits) {
    return ar4j_llama_attention_batched_workspace_bytes(n, 1, n_heads, n_kv_heads, head_dim, max_positions, num_splits);
}

namespace ar4j_llama {
namespace {

// ar4j_llama_attention_batched's checks, in its order, and its arguments for the kernels; 0 or
// the status to return.
int prepare_attention(AttentionArgs &a, Chunking &c, const void *q, int64_t q_row_stride, const void *k_cache,
                      const void *v_cache, int64_t cache_sequence_stride, int32_t n, int32_t sequences,
                      int32_t n_heads, int32_t n_kv_heads, int32_t head_dim, int32_t max_positions,
                      const int32_t *positions, int32_t start_pos, float scale, void *out, int64_t out_row_stride,
                      int32_t num_splits, void *workspace, size_t workspace_bytes, int32_t *device_status) {
    if (q == nullptr || k_cache == nullptr || v_cache == nullptr || out == nullptr || workspace == nullptr) {
        return AR4J_LLAMA_ERROR_NULL_POINTER;
    }
    if (n < 1 || n_heads < 1 || n_kv_heads < 1 || max_positions < 1 ||
        int64_t(n) * n_heads > int64_t(INT32_MAX) || !valid_sequences(n, sequences)) {
        return AR4J_LLAMA_ERROR_SIZE;
    }
    // start_pos + t counts across the whole call: it cannot name positions within each sequence.
    if (sequences > 1 && positions == nullptr) return AR4J_LLAMA_ERROR_NULL_POINTER;
    if (n_heads % n_kv_heads != 0) return AR4J_LLAMA_ERROR_GQA;
    if (!valid_attention_head_dim(head_dim)) return AR4J_LLAMA_ERROR_HEAD_DIM;
    if (num_splits < 1 || num_splits > AR4J_LLAMA_MAX_SPLITS) return AR4J_LLAMA_ERROR_SPLITS;
    const int64_t row = int64_t(n_heads) * head_dim;
    // Each sequence's cache holds max_positions rows: a smaller stride would let sequences overlap.
    const int64_t cache_region = int64_t(max_positions) * n_kv_heads * head_dim;
    if (q_row_stride < row || out_row_stride < row || cache_sequence_stride < cache_region) {
        return AR4J_LLAMA_ERROR_STRIDE;
    }
    if (!(scale > 0.0f) || !std::isfinite(scale)) return AR4J_LLAMA_ERROR_INVALID_ARGUMENT;
    if (!valid_start(positions, start_pos, n, max_positions)) return AR4J_LLAMA_ERROR_POSITION;
    // q and the caches are read in 16-byte units (8 bf16), every sequence's cache too; out written
    // in bf16 pairs.
    if (!aligned(q, 16) || !aligned(k_cache, 16) || !aligned(v_cache, 16) || q_row_stride % 8 != 0 ||
        cache_sequence_stride % 8 != 0 || !aligned(out, 4) || out_row_stride % 2 != 0 || !aligned(workspace, 16) ||
        (positions != nullptr && !aligned(positions, 4))) {
        return AR4J_LLAMA_ERROR_MISALIGNED;
    }
    const Workspace layout = workspace_layout(n, sequences, n_heads, n_kv_heads, head_dim, max_positions, num_splits);
    if (workspace_bytes < layout.total) return AR4J_LLAMA_ERROR_WORKSPACE;
    a = AttentionArgs{};
    a.q = static_cast<const bf16 *>(q);
    a.q_stride = q_row_stride;
    a.k_cache = static_cast<const bf16 *>(k_cache);
    a.v_cache = static_cast<const bf16 *>(v_cache);
    a.n = n;
    a.n_heads = n_heads;
    a.n_kv_heads = n_kv_heads;
    a.group = n_heads / n_kv_heads;
    a.head_dim = head_dim;
    c = chunking(n, sequences, a.group);
    a.tokens_per_seq = c.tokens_per_seq;
    a.chunks_per_seq = int32_t(c.chunks_per_seq);
    a.cache_stride = cache_sequence_stride;
    a.block_rows = int32_t(c.rows_per_seq < c.rows_per_block ? c.rows_per_seq : c.rows_per_block);
    a.max_positions = max_positions;
    a.positions = positions;
    a.start_pos = start_pos;
    a.scale = scale;
    a.out = static_cast<bf16 *>(out);
    a.out_stride = out_row_stride;
    a.splits = num_splits;
    char *base = static_cast<char *>(workspace);
    a.counters = reinterpret_cast<int32_t *>(base + layout.counters);
    a.stats = reinterpret_cast<float *>(base + layout.stats);
    a.partial = num_splits > 1 ? reinterpret_cast<float *>(base + layout.partial) : nullptr;
    a.scores = c.stored ? reinterpret_cast<uint16_t *>(base + layout.scores) : nullptr;
    a.device_status = device_status;
    return 0;
}

int dispatch_attention(const AttentionArgs &a, const Chunking &c, int32_t pdl, void *stream) {
    const dim3 grid{unsigned(c.chunks), unsigned(a.n_kv_heads), unsigned(a.splits)};
    const bool use_pdl = pdl != 0;
    if (c.rows_per_block == 4) return dispatch_rows<4>(a, grid, c.stored, use_pdl, stream);
    if (c.rows_per_block == 8) return dispatch_rows<8>(a, grid, c.stored, use_pdl, stream);
    if (c.rows_per_block == 16) return dispatch_rows<16>(a, grid, c.stored, use_pdl, stream);
    return dispatch_rows<kRows>(a, grid, c.stored, use_pdl, stream);
}

}  // namespace
}  // namespace ar4j_llama

AR4J_LLAMA_API int ar4j_llama_attention_batched(const void *q, int64_t q_row_stride, const void *k_cache,
                                                const void *v_cache, int64_t cache_sequence_stride, int32_t n,
                                                int32_t sequences, int32_t n_heads, int32_t n_kv_heads,
                                                int32_t head_dim, int32_t max_positions, const int32_t *positions,
                                                int32_t start_pos, float scale, void *out, int64_t out_row_stride,
                                                int32_t num_splits, void *workspace, size_t workspace_bytes,
                                                int32_t *device_status, int32_t pdl, void *stream) {
    AttentionArgs a;
    Chunking c;
    const int error = prepare_attention(a, c, q, q_row_stride, k_cache, v_cache, cache_sequence_stride, n, sequences,
                                        n_heads, n_kv_heads, head_dim, max_positions, positions, start_pos, scale, out,
                                        out_row_stride, num_splits, workspace, workspace_bytes, device_status);
    return error != 0 ? error : dispatch_attention(a, c, pdl, stream);
}

AR4J_LLAMA_API int ar4j_llama_rope_attention_batched(const void *q, int64_t q_row_stride, const void *k,
                                                     int64_t k_row_stride, const void *v, int64_t v_row_stride,
                                                     const float *inv_freq, float attention_scaling, void *k_cache,
                                                     void *v_cache, int64_t cache_sequence_stride, int32_t n,
                                                     int32_t sequences, int32_t n_heads, int32_t n_kv_heads,
                                                     int32_t head_dim, int32_t max_positions, const int32_t *positions,
                                                     int32_t start_pos, float scale, void *out, int64_t out_row_stride,
                                                     int32_t num_splits, void *workspace, size_t workspace_bytes,
                                                     int32_t *device_status, int32_t pdl, void *stream) {
    if (k == nullptr || v == nullptr || inv_freq == nullptr) return AR4J_LLAMA_ERROR_NULL_POINTER;
    AttentionArgs a;
    Chunking c;
    const int error = prepare_attention(a, c, q, q_row_stride, k_cache, v_cache, cache_sequence_stride, n, sequences,
                                        n_heads, n_kv_heads, head_dim, max_positions, positions, start_pos, scale, out,
                                        out_row_stride, num_splits, workspace, workspace_bytes, device_status);
    if (error != 0) return error;
    // One block's rows hold all of a sequence's tokens (their new keys are then each in exactly one
    // block's range) and the scores are kept.
    if (!c.stored || c.chunks_per_seq != 1) return AR4J_LLAMA_ERROR_SIZE;
    const int64_t kv_row = int64_t(n_kv_heads) * head_dim;
    if (k_row_stride < kv_row || v_row_stride < kv_row) return AR4J_LLAMA_ERROR_STRIDE;
    if (!std::isfinite(attention_scaling)) return AR4J_LLAMA_ERROR_INVALID_ARGUMENT;
    if (!aligned(k, 2) || !aligned(v, 2) || !aligned(inv_freq, 4)) return AR4J_LLAMA_ERROR_MISALIGNED;
    a.k_new = static_cast<const bf16 *>(k);
    a.k_new_stride = k_row_stride;
    a.v_new = static_cast<const bf16 *>(v);
    a.v_new_stride = v_row_stride;
    a.inv_freq = inv_freq;
    a.attention_scaling = attention_scaling;
    a.k_store = static_cast<bf16 *>(k_cache);
    a.v_store = static_cast<bf16 *>(v_cache);
    return dispatch_attention(a, c, pdl, stream);
}

AR4J_LLAMA_API int ar4j_llama_attention(const void *q, int64_t q_row_stride, const void *k_cache,
                                        const void *v_cache, int32_t n, int32_t n_heads,
                                        int32_t n_kv_heads, int32_t head_dim, int32_t max_positions,
                                        const int32_t *positions, int32_t start_pos, float scale,
                                        void *out, int64_t out_row_stride, int32_t num_splits,
                                        void *workspace, size_t workspace_bytes,
                                        int32_t *device_status, int32_t pdl, void *stream) {
    // One sequence: its cache is the whole of k_cache / v_cache, and the stride is never applied
    // (sequence 0); the cache's own size passes the batched function's stride check.
    const int64_t cache_region = int64_t(max_positions) * n_kv_heads * head_dim;
    return ar4j_llama_attention_batched(q, q_row_stride, k_cache, v_cache, cache_region, n, 1, n_heads, n_kv_heads,
                                        head_dim, max_positions, positions, start_pos, scale, out, out_row_stride,
                                        num_splits, workspace, workspace_bytes, device_status, pdl, stream);
}
