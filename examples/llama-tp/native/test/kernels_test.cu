// Checks every kernel of libar4j_llama_kernels.so on the GPU against a CPU reference, with fresh
// random data (the seed is printed; pass one to repeat a run) and outputs poisoned with NaN
// before each launch. Exact where the kernel is a copy or its result is defined bit for bit;
// the stated tolerance where fp32 summation order or libm ulps may differ.
//
//   build.sh OUT_DIR test && OUT_DIR/ar4j_llama_kernels_test [seed]
//   OUT_DIR/ar4j_llama_kernels_test --bench-linear [quick]  (timing of the rows kernel only; quick: TP 1 shapes, 1 row)
//   OUT_DIR/ar4j_llama_kernels_test --bench-attention  (timing of the attention only)
//   OUT_DIR/ar4j_llama_kernels_test --bench-prefetch   (what an L2 prefetch of a weight buys the rows kernel)
//   OUT_DIR/ar4j_llama_kernels_test --bench-sample     (timing of the sampling kernel only)
//
// Exits 0 when every check passed, 1 when one failed, 2 when the test itself could not run.
#include <chrono>

#include "attention_checks.h"
#include "batch_checks.h"
#include "copy_checks.h"
#include "exchange_checks.h"
#include "graph_checks.h"
#include "attention_bench.h"
#include "linear_bench.h"
#include "linear_checks.h"
#include "prefetch_bench.h"
#include "prefill_bench.h"
#include "prefill_checks.h"
#include "rope_attention_checks.h"
#include "sample_bench.h"
#include "sample_checks.h"

int main(int argc, char **argv) {
    using namespace test;
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 1) {
        fprintf(stderr, "ar4j_llama_kernels_test: no CUDA device\n");
        return 2;
    }
    cudaDeviceProp prop;
    TEST_CUDA(cudaGetDeviceProperties(&prop, 0));
    if (argc > 1 && strcmp(argv[1], "--bench-linear") == 0) {
        bench_linear_rows(argc > 2 && strcmp(argv[2], "quick") == 0);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--bench-prefetch") == 0) {
        bench_prefetch();
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--bench-sample") == 0) {
        bench_sample();
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--bench-prefill") == 0) {
        bench_prefill_attention();
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--bench-attention") == 0) {
        bench_attention(prop.multiProcessorCount);
        return 0;
    }
    const uint64_t seed = argc > 1 ? strtoull(argv[1], nullptr, 0)
                                   : uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
    rng().seed(seed);
    printf("ar4j_llama_kernels_test on %s (sm_%d%d), seed %llu\n", prop.name, prop.major, prop.minor,
           (unsigned long long)seed);

    printf("copies\n");
    check_embedding(72);   // scalar path
    check_embedding(512);  // 16-byte path
    check_kv_append(2, 64, 8 * 64);  // fused QKV row stride, 16-byte path
    check_kv_append(1, 6, 3 * 6);    // scalar path

    printf("rope\n");
    check_rope(8, 4, 64, 0, false, 1.0f);
    check_rope(4, 1, 128, 1000, true, 1.0f);
    check_rope(2, 2, 256, 7, true, 0.8f);
    check_rope(3, 0, 96, 3, false, 1.0f);  // q only
    check_rope(8, 2, 128, 131066, false, 1.0f);  // positions 131066 .. 131071 (2^17 - 1)

    printf("rope_kv_append\n");
    check_rope_kv_append(8, 2, 128, true);
    check_rope_kv_append(4, 4, 64, false);
    check_rope_kv_append(3, 1, 6, true);  // an odd shape: 3 pairs per head

    printf("attention\n");
    // name, n, heads, kv heads, head_dim, max_positions, first position, splits, device positions.
    // Context (last position + 1) 1, 7, 64, 1000, 4099; GQA 1, 4, 8; n 1, 3, 8 (scores kept in the
    // workspace) and above 8 (scores computed twice); splits from 1 to more than the keys.
    const AttentionCase cases[] = {
        // First, while the kernels' shared memory limits are the defaults: 7 tokens of 32/8 heads of
        // 128 ask for 48 KiB of dynamic shared memory, which with the static part needs the raise.
        {"7 tokens, first launch (48 KiB dynamic + static)", 7, 32, 8, 128, 256, 100, 4, true},
        {"context 1", 1, 8, 2, 128, 64, 0, 1, true},
        {"context 1, more splits than keys", 1, 8, 2, 128, 64, 0, 4, false},
        {"context 7 decode", 1, 32, 8, 128, 64, 6, 3, true},
        {"context 7 verify", 3, 8, 1, 64, 64, 4, 2, true},
        {"context 7 verify, 8 splits", 3, 8, 1, 64, 64, 4, 8, false},
        {"context 64 verify (2 row chunks)", 8, 16, 2, 128, 128, 56, 5, true},
        {"context 64 MHA", 3, 4, 4, 64, 128, 61, 1, false},
        {"context 1000 decode", 1, 32, 8, 128, 1024, 999, 33, true},
        {"context 1000 verify", 3, 8, 2, 64, 1024, 997, 7, true},
        {"context 1000 verify MHA", 8, 8, 8, 128, 1024, 992, 16, false},
        {"context 4099 decode", 1, 32, 8, 128, 4608, 4098, 33, true},
        {"context 4099 decode, 128 splits", 1, 8, 1, 64, 4608, 4098, 128, true},
        {"context 4099 verify", 8, 8, 1, 64, 4608, 4091, 64, true},
        {"context 4099 verify, 1 split", 3, 4, 1, 128, 4608, 4096, 1, false},
        {"prefill", 37, 8, 2, 64, 256, 0, 1, false},
        {"prefill split", 37, 8, 2, 64, 256, 0, 3, true},
        {"prefill, 25 row chunks", 100, 8, 1, 64, 256, 0, 3, true},
        {"prefill at offset", 20, 4, 4, 128, 512, 100, 4, false},
        {"decode", 1, 8, 2, 128, 2048, 1500, 16, true},
        {"verify head_dim 256", 5, 4, 1, 256, 1024, 995, 8, true},
        {"decode head_dim 256 (4-row blocks)", 1, 8, 2, 256, 512, 300, 6, true},
        {"verify of 4, head_dim 256 (16-row blocks)", 4, 8, 2, 256, 512, 200, 4, false},
        {"verify head_dim 80", 3, 6, 3, 80, 512, 200, 5, false},
        {"decode head_dim 96", 1, 2, 1, 96, 300, 299, 1, false},
        // head_dim 8 mod 16: the dots' last 8 elements outside the 16-wide MMA steps.
        {"decode head_dim 72", 1, 8, 2, 72, 300, 250, 4, true},
        {"verify head_dim 40, 2 m-tile rows", 5, 8, 1, 40, 256, 200, 3, false},
        {"prefill head_dim 24 (scores computed twice)", 12, 4, 2, 24, 64, 0, 2, true},
        {"decode at 131071", 1, 2, 1, 128, 131072, 131071, 64, true},
    };
    for (const AttentionCase &c : cases) check_attention(c);
    check_attention_bad_position(1);  // one split: out written by the values kernel
    check_attention_bad_position(2);  // two splits: out written by the merge

    printf("batched attention and rope_kv_append\n");
    check_attention_batched_sizes();
    // name, sequences, tokens per sequence, heads, kv heads, head_dim, max_positions, splits, pad
    // between caches, contexts (random from the tokens to max_positions where not given).
    // Decode (1 token per sequence) and verify (4); sequences 1, 2, 8, 64; contexts 1 .. 4099;
    // GQA 1, 4, 8; head_dim 64, 128 (and 256); 4-, 8-, 16- and 32-row blocks; more than 8 tokens
    // per sequence (scores computed twice, several row chunks per sequence).
    const BatchCase batch_cases[] = {
        {"1 decode", 1, 1, 32, 8, 128, 4608, 33, 0, {4099}},
        {"1 verify", 1, 4, 8, 2, 64, 1024, 7, 64, {1000}},
        {"2 decodes, contexts 1 and 4099", 2, 1, 32, 8, 128, 4608, 33, 0, {1, 4099}},
        {"2 verifies, GQA 8 (32-row blocks)", 2, 4, 8, 1, 64, 1024, 8, 8, {7, 1000}},
        {"8 decodes MHA (4-row blocks of 1 row)", 8, 1, 8, 8, 128, 4608, 16, 0, {1, 7, 64, 65, 1000, 4099, 2, 300}},
        {"8 verifies (16-row blocks)", 8, 4, 32, 8, 128, 4608, 33, 128, {4, 64, 1000, 4099, 5, 129, 2048, 700}},
        {"8 verifies, 1 split", 8, 4, 4, 1, 128, 4608, 1, 0, {4099, 4, 63, 64, 65, 1000, 9, 2000}},
        {"64 decodes, GQA 8 (8-row blocks)", 64, 1, 16, 2, 64, 640, 4, 0, {}},
        {"64 decodes, GQA 4", 64, 1, 32, 8, 128, 700, 2, 8, {}},
        {"64 verifies", 64, 4, 8, 2, 64, 640, 3, 0, {}},
        {"64 verifies MHA, 128 splits", 64, 4, 4, 4, 64, 300, 128, 0, {}},
        {"3 sequences of 8, GQA 8 (2 chunks each)", 3, 8, 8, 1, 128, 2048, 5, 0, {8, 2048, 1500}},
        {"4 chunks of 12 (scores computed twice)", 4, 12, 8, 2, 64, 512, 3, 16, {12, 100, 500, 33}},
        {"5 decodes head_dim 256", 5, 1, 8, 2, 256, 512, 6, 0, {1, 300, 512, 64, 65}},
    };
    for (const BatchCase &c : batch_cases) check_attention_batched(c);
    check_attention_single_is_batched(1, 32, 8, 128, 4000, 33);  // decode, start_pos
    check_attention_single_is_batched(4, 8, 2, 64, 900, 7);      // verify
    check_attention_single_is_batched(37, 8, 2, 64, 10, 3);      // prefill (scores computed twice)
    check_attention_batched_bad_position();
    check_rope_kv_append_batched(1, 5, 8, 2, 128, false);  // one sequence, positions NULL
    check_rope_kv_append_batched(2, 1, 8, 2, 128, true);
    check_rope_kv_append_batched(8, 4, 32, 8, 128, true);
    check_rope_kv_append_batched(64, 1, 4, 1, 64, true);
    check_rope_kv_append_batched(3, 2, 3, 1, 6, true);  // an odd shape: 3 pairs per head
    // From 32 tokens a call takes the per-token kernel (rope.cu): a prefill chunk, and odd pairs there too.
    check_rope_kv_append_batched(1, 100, 8, 2, 128, false);
    check_rope_kv_append_batched(1, 40, 3, 1, 6, false);

    printf("rope + KV append fused into the decode attention\n");
    // name, sequences, tokens per sequence, heads, kv heads, head_dim, max_positions, splits, each
    // sequence's context after the step, a token at a bad position. The new keys at the first and
    // last key of a tile (64, 65) and of a split, across a tile boundary (verify of 3 at 510..512),
    // at position 0; 4-, 8-, 16- and 32-row blocks; head_dim 64, 128, 256; 1 to 128 splits.
    const RopeAttentionCase rope_cases[] = {
        {"decode, llama3-8b heads", 1, 1, 32, 8, 128, 4608, 33, {4099}},
        {"decode at position 0", 1, 1, 32, 8, 128, 520, 9, {1}},
        {"decode, key first of a tile", 1, 1, 32, 8, 128, 520, 9, {65}},
        {"decode, key last of a tile", 1, 1, 32, 8, 128, 520, 9, {64}},
        {"verify of 3 across a tile boundary", 1, 3, 32, 8, 128, 520, 9, {513}},
        {"verify of 3, 66 splits", 1, 3, 32, 8, 128, 8200, 66, {8193}},
        {"verify of 8, 32-row block", 1, 8, 32, 8, 128, 2048, 20, {1500}},
        {"8 decodes MHA, various contexts", 8, 1, 8, 8, 128, 4608, 16, {1, 7, 64, 65, 1000, 4099, 2, 300}},
        {"8 verifies of 4, 1 split", 8, 4, 4, 1, 128, 4608, 1, {4099, 4, 63, 64, 65, 1000, 9, 2000}},
        {"4 verifies of 2, GQA 4, head_dim 64, 128 splits", 4, 2, 8, 2, 64, 1024, 128, {1000, 2, 129, 640}},
        {"5 decodes head_dim 256", 5, 1, 8, 2, 256, 512, 6, {1, 300, 512, 64, 65}},
        {"2 verifies of 3, a bad position", 2, 3, 32, 8, 128, 600, 9, {513, 100}, 5},
    };
    for (const RopeAttentionCase &c : rope_cases) check_rope_attention(c);
    check_rope_attention_errors();

    printf("prefill attention\n");
    // The softmax alone: rows, heads, first position, extra columns of the row stride.
    check_prefill_softmax(1, 1, 0, 0);
    check_prefill_softmax(7, 3, 0, 8);
    check_prefill_softmax(64, 2, 0, 0);
    check_prefill_softmax(40, 2, 960, 16);   // keys 1000: a chunk at an offset
    check_prefill_softmax(3, 2, 4096, 0);    // keys 4099
    check_prefill_softmax(2, 1, 131070, 0);  // keys 131072
    check_prefill_softmax_errors();
    // The engine's chunk (cuBLAS batched GEMMs around the softmax): context 1, 7, 64, 1000, 4099
    // (first position + rows); head_dim 64 and 128; GQA 1, 4, 8.
    const AttentionCase prefill_cases[] = {
        {"context 1", 1, 8, 1, 128, 64, 0, 1, false},
        {"context 7, GQA 4", 7, 8, 2, 64, 64, 0, 1, false},
        {"context 7 MHA", 7, 4, 4, 128, 16, 0, 1, false},
        {"context 64, GQA 8", 64, 8, 1, 128, 64, 0, 1, false},
        {"context 64, chunk at 40", 24, 8, 2, 64, 128, 40, 1, false},
        {"context 1000, GQA 4", 100, 8, 2, 128, 1024, 900, 1, false},
        {"context 1000 MHA", 37, 4, 4, 64, 1000, 963, 1, false},
        {"context 1000, GQA 8, one chunk", 1000, 8, 1, 64, 1000, 0, 1, false},
        {"context 4099, GQA 8", 67, 8, 1, 128, 4608, 4032, 1, false},
        {"context 4099, GQA 4", 3, 8, 2, 64, 4099, 4096, 1, false},
        {"context 4099 MHA", 19, 4, 4, 128, 4104, 4080, 1, false},
    };
    for (const AttentionCase &c : prefill_cases) check_prefill_attention(c);
    check_prefill_attention_errors();

    printf("elementwise\n");
    check_silu_mul();
    for (int32_t rows = 1; rows <= AR4J_LLAMA_MAX_LINEAR_ROWS; ++rows) check_linear_rows(rows, 1003, 1048);
    check_linear_rows(3, 64, 4096 + 8);
    check_linear_rows_splits(1, 300, 4096);
    check_linear_rows_splits(3, 77, 1048);
    check_linear_rows_splits(8, 40, 14336);
    check_prefetch_l2();
    for (int32_t splits : {0, 1, 2, 4}) check_linear_rows_silu_mul(1, 700, 2048, splits);
    check_linear_rows_silu_mul(3, 515, 1024, 0);
    check_linear_rows_silu_mul(8, 64, 4096, 2);
    check_linear_rows_argmax(1, 5000, 1024, 5000, false);
    check_linear_rows_argmax(3, 4099, 512, 4001, true);
    check_linear_rows_argmax(8, 1000, 256, 999, true);
    check_linear_rows_kernels_agree(prop.major);
    check_argmax(AR4J_LLAMA_DTYPE_BFLOAT16);
    check_argmax(AR4J_LLAMA_DTYPE_FLOAT32);
    // Greedy across vocabulary shards: llama3-8b's vocabulary at TP 2; 4001 at TP 8 (the last shard
    // padded); 3 ranks and 5 rows (the buffer padded to a multiple of 4 floats).
    check_argmax_exchange(2, 5, 64128, 128256);
    check_argmax_exchange(8, 8, 504, 4001);
    check_argmax_exchange(3, 5, 100, 250);
    check_argmax_exchange_arguments();

    printf("sampling\n");
    check_sample_errors();
    check_sample_determinism();
    check_sample_distributions();

    printf("fills and conversions\n");
    check_fill_random();
    check_fill_and_conversions();

    printf("errors and graphs\n");
    check_error_codes();
    check_graph_capture();

    const cudaError_t last = cudaDeviceSynchronize();
    check(last == cudaSuccess, "no CUDA error left", "(%s)", cudaGetErrorString(last));
    printf("%d passed, %d failed\n", tally().passed, tally().failed);
    return tally().failed == 0 ? 0 : 1;
}
