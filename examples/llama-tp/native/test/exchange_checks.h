// The greedy choice across vocabulary shards (ar4j_llama_argmax_pack / ar4j_llama_argmax_pick):
// the ranks simulated on one GPU, each taking ar4j_llama_argmax of its shard as the engine does;
// between pack and pick the SUM all-reduce is done on the host in fp32 in rank order (each slot
// has one non-zero addend, so any order gives these bits). Against torch.argmax over the row.
#pragma once

#include <cmath>
#include <vector>

#include "test_support.h"

namespace test {

inline void check_argmax_exchange(int32_t ranks, int32_t rows, int32_t vocab_per_rank, int32_t vocab) {
    const int32_t padded = ranks * vocab_per_rank;
    std::vector<float> logits(size_t(rows) * padded);
    for (auto &x : logits) x = rb(uniform(-4.0f, 4.0f));
    auto at = [&](int r, int c) -> float & { return logits[size_t(r) * padded + c]; };
    const int32_t second = vocab_per_rank;  // the second shard's first id
    at(0, second + 7) = 6.5f; at(0, 3) = 6.5f;                        // a tie across shards: id 3
    at(1, 0) = 100.0f; at(1, vocab - 1) = NAN;                          // a NaN in the last shard wins
    for (int c = 0; c < padded; ++c) at(2, c) = -INFINITY;              // all -inf: id 0
    for (int c = 0; c < padded; ++c) at(3, c) = -1.0f;                  // -0 and +0 are equal: the lower id
    at(3, second + 1) = 0.0f; at(3, 5) = -0.0f;
    for (int r = 0; r < rows; ++r) {
        for (int c = vocab; c < padded; ++c) at(r, c) = 1e30f;  // the last shard's padding: not a token
    }
    std::vector<int32_t> want(rows);
    for (int r = 0; r < rows; ++r) want[r] = reference_argmax(&at(r, 0), vocab);
    std::vector<uint16_t> h(logits.size());
    for (size_t i = 0; i < h.size(); ++i) h[i] = to_bf16(logits[i]);
    const size_t floats = ar4j_llama_argmax_exchange_floats(rows, ranks);
    DeviceBuffer d_logits(h.size() * 2), d_index(size_t(rows) * 4), d_value(size_t(rows) * 4),
        d_exchange(floats * 4), d_sum(floats * 4), d_out(size_t(rows) * 4), d_out_value(size_t(rows) * 4);
    d_logits.upload(h);
    int rc = 0;
    bool only_own_slot = true;
    std::vector<float> sum(floats, 0.0f);
    for (int32_t q = 0; q < ranks; ++q) {
        const int32_t first = q * vocab_per_rank;
        const int32_t cols = std::min(vocab_per_rank, vocab - first);
        d_index.poison();
        d_value.poison();
        d_exchange.poison();
        rc |= ar4j_llama_argmax(AR4J_LLAMA_DTYPE_BFLOAT16, d_logits.as<uint16_t>() + first, padded, rows, cols, first,
                                d_index.as<int32_t>(), d_value.as<float>(), 1, nullptr);
        rc |= ar4j_llama_argmax_pack(d_index.as<int32_t>(), d_value.as<float>(), rows, ranks, q, vocab,
                                     d_exchange.as<float>(), 1, nullptr);
        sync();
        const std::vector<float> slots = d_exchange.download<float>(floats);
        for (int32_t i = 0; i < rows * ranks; ++i) {
            if (i % ranks != q) only_own_slot &= bits(slots[2 * i]) == 0 && bits(slots[2 * i + 1]) == 0;
        }
        for (int32_t i = 0; i < rows * ranks * 2; ++i) sum[i] += slots[i];
    }
    for (size_t i = size_t(rows) * ranks * 2; i < floats; ++i) sum[i] = 0.0f;  // padding: zeroed once by the caller
    d_sum.upload(sum);
    d_out.poison();
    d_out_value.poison();
    DeviceBuffer d_status(4);
    TEST_CUDA(cudaMemset(d_status.get(), 0, 4));
    rc |= ar4j_llama_argmax_pick(d_sum.as<float>(), rows, ranks, d_out.as<int32_t>(), d_out_value.as<float>(),
                                 d_status.as<int32_t>(), 1, nullptr);
    sync();
    const std::vector<int32_t> got = d_out.download<int32_t>(rows);
    const std::vector<float> got_value = d_out_value.download<float>(rows);
    int wrong = 0;
    for (int r = 0; r < rows; ++r) {
        const float w = rb(at(r, want[r]));
        const bool value_ok = std::isnan(w) ? std::isnan(got_value[r]) : got_value[r] == w;
        wrong += got[r] != want[r] || !value_ok;
    }
    // What a failed all-reduce leaves (every float NaN): no token, a named error.
    std::vector<float> poisoned(floats, NAN);
    d_sum.upload(poisoned);
    const bool clean_status = device_status_word(d_status) == 0;
    rc |= ar4j_llama_argmax_pick(d_sum.as<float>(), rows, ranks, d_out.as<int32_t>(), d_out_value.as<float>(),
                                 d_status.as<int32_t>(), 1, nullptr);
    sync();
    const std::vector<int32_t> refused = d_out.download<int32_t>(rows);
    bool no_token = device_status_word(d_status) == AR4J_LLAMA_ERROR_TOKEN_ID;
    for (int32_t x : refused) no_token &= x == -1;
    check(rc == 0 && wrong == 0 && only_own_slot && clean_status && no_token, "argmax exchange",
          "(%d ranks x %d ids (vocab %d), %d rows: %d wrong; other slots zero %d; rows 0-3 got %d %d %d %d, want "
          "%d %d %d %d: a tie across shards, a NaN in the last, all -inf, -0 = +0; NaN pairs refused %d)",
          ranks, vocab_per_rank, vocab, rows, wrong, only_own_slot, got[0], got[1], got[2], got[3], want[0], want[1],
          want[2], want[3], no_token);
}

// Refused calls: each returns its named code and launches nothing.
inline void check_argmax_exchange_arguments() {
    DeviceBuffer a(256);
    int32_t *ids = a.as<int32_t>();
    float *f = a.as<float>();
    const int codes[] = {
        ar4j_llama_argmax_pack(nullptr, f, 1, 2, 0, 100, f, 0, nullptr),
        ar4j_llama_argmax_pack(ids, f, 0, 2, 0, 100, f, 0, nullptr),
        ar4j_llama_argmax_pack(ids, f, 1, 2, 2, 100, f, 0, nullptr),
        ar4j_llama_argmax_pack(ids, f, 1, 2, -1, 100, f, 0, nullptr),
        ar4j_llama_argmax_pack(ids, f, 1, 2, 0, AR4J_LLAMA_MAX_EXCHANGED_VOCAB + 1, f, 0, nullptr),
        ar4j_llama_argmax_pack(ids, f, 1, 2, 0, 100, reinterpret_cast<float *>(a.as<char>() + 2), 0, nullptr),
        ar4j_llama_argmax_pick(f, 1, 0, ids, f, nullptr, 0, nullptr),
        ar4j_llama_argmax_pick(f, 1, 2, nullptr, f, nullptr, 0, nullptr),
        ar4j_llama_argmax_pick(f, 1, 2, ids, reinterpret_cast<float *>(a.as<char>() + 1), nullptr, 0,
                               nullptr),
    };
    const int expected[] = {
        AR4J_LLAMA_ERROR_NULL_POINTER, AR4J_LLAMA_ERROR_SIZE, AR4J_LLAMA_ERROR_INVALID_ARGUMENT,
        AR4J_LLAMA_ERROR_INVALID_ARGUMENT, AR4J_LLAMA_ERROR_SIZE, AR4J_LLAMA_ERROR_MISALIGNED,
        AR4J_LLAMA_ERROR_SIZE, AR4J_LLAMA_ERROR_NULL_POINTER, AR4J_LLAMA_ERROR_MISALIGNED,
    };
    int wrong = 0;
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); ++i) wrong += codes[i] != expected[i];
    const bool sizes = ar4j_llama_argmax_exchange_floats(1, 2) == 4 && ar4j_llama_argmax_exchange_floats(3, 3) == 20 &&
                       ar4j_llama_argmax_exchange_floats(0, 2) == 0 && ar4j_llama_argmax_exchange_floats(2, 0) == 0;
    check(wrong == 0 && sizes, "argmax exchange arguments", "(%zu refused calls: %d wrong codes; buffer sizes %d)",
          sizeof(codes) / sizeof(codes[0]), wrong, sizes);
}

}  // namespace test
