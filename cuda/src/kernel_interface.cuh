// What the host side and the kernels share: the limits, the Signal block layout, the poison
// word, the push buffers' geometry and the kernels' parameters. Host code includes this header
// alone (no kernels); kernels.cuh includes it.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

namespace ar4j {

constexpr int kMaxRanks = 8;
constexpr int kMaxBlocks = 128;

// Per-block state of the one-shot push kernel (see push_kernel). The generation is 64-bit:
// it selects buffer generation % 3, and a 32-bit counter would break that at 2^32 (not a
// multiple of 3), returning the previous call's data. 2^64 launches are out of reach.
struct PushState {
    unsigned long long generation;  // push launches completed by this block index
    uint32_t prev_packs;            // packs per slot written by the previous push launch
    uint32_t reserved;
};

// Per-block-index launch accounting, shared by every algorithm: thread 0 of block b takes a
// ticket at entry (atomicAdd) and stores done = ticket + 1 when the block finished. A launch
// that finds done != ticket overlaps another launch of this context at the same block (two
// streams, two graphs replaying at once): it poisons the group (AR4J_POISON_CONCURRENT_USE).
struct BlockState {
    unsigned long long ticket;
    unsigned long long done;
};

// Poison word (one per Signal, 64 bits; 0 = healthy). A rank that gives up or aborts writes it
// into its own Signal and every peer's; every kernel reads it at entry and while waiting, and a
// poisoned kernel writes NaN over its whole output and returns. Layout (the host decodes the
// same): bit 63 set, 56..62 origin rank, 48..55 reason (AR4J_POISON_*), 40..47 the peer waited
// for (0xff: none), 0..15 the CUDA block (0xffff: none).
constexpr int kPoisonTimeout = 1;
constexpr int kPoisonConcurrentUse = 4;

__host__ __device__ constexpr unsigned long long make_poison(int origin, int reason, int peer, int block) {
    return (1ull << 63) | ((unsigned long long)(origin & 0x7f) << 56) | ((unsigned long long)(reason & 0xff) << 48) |
           ((unsigned long long)(peer & 0xff) << 40) | (unsigned long long)(block & 0xffff);
}

struct Signal {
    // flags[b][s]: written by rank s (remotely) when its block b reaches a barrier.
    uint32_t flags[kMaxBlocks][kMaxRanks];
    // counters[b][t]: this rank's barrier count for block b, as kept by waiting thread t.
    uint32_t counters[kMaxBlocks][kMaxRanks];
    PushState push[kMaxBlocks];
    BlockState blocks[kMaxBlocks];
    // Written by peers and by the host; alone in its 128-byte line.
    alignas(128) unsigned long long poison;
    unsigned long long pad0[15];
    // This context's launch geometry as published by the host (see ar4j_check_geometry).
    alignas(128) unsigned long long geometry;
    unsigned long long pad1[15];
};

// Signal block layout: [control | 2-stage scratch (max_bytes) | push buffers].
// The 2-stage scratch holds this rank's reduced slice, read by peers.
constexpr size_t kScratchOffset = 16384;
static_assert(sizeof(Signal) <= kScratchOffset, "signal control block outgrew its slot");

// Push buffers: 3 generations x kMaxRanks slots x kPushMaxBytes, filled with the sentinel.
constexpr size_t kPushMaxBytes = 512 * 1024;
constexpr int kPushGenerations = 3;
constexpr size_t kPushAreaBytes = kPushGenerations * kMaxRanks * kPushMaxBytes;
// The push kernel's fixed grid (every launch must use the same one: the per-block generation
// counters live in the signal block). Overridable at build time for tuning experiments; 32 x 256
// measured best on 2x H200 (benchmarks/RESULTS.md, push grid sweep).
#ifndef AR4J_PUSH_BLOCKS
#define AR4J_PUSH_BLOCKS 32
#endif
#ifndef AR4J_PUSH_THREADS
#define AR4J_PUSH_THREADS 256
#endif
constexpr int kPushBlocks = AR4J_PUSH_BLOCKS;
constexpr int kPushThreads = AR4J_PUSH_THREADS;
// A 32-bit word that marks "not yet written": -0.0 in both halves for fp16/bf16, and a
// negative fp32 denormal (about -4.6e-41) for fp32. Inputs equal to it are replaced by -0.0
// (fp32) or each -0.0 half by +0.0 (halves) before they are pushed.
constexpr uint32_t kSentinelWord = 0x80008000u;

__host__ __device__ constexpr size_t push_area_offset(size_t max_bytes) {
    return kScratchOffset + ((max_bytes + 4095) & ~static_cast<size_t>(4095));
}

// One registered buffer set: rank r's buffer as addressable from this device.
struct RankPtrs {
    const void *ptrs[kMaxRanks];
};

struct Params {
    Signal *self;                   // this rank's signal (local memory)
    Signal *peers[kMaxRanks];       // every rank's signal, peers[rank] == self
    const RankPtrs *inputs;         // device-resident pointer set of the input buffer
    size_t in_offset;               // byte offset of the input inside each rank's buffer
    uint4 *out;                     // local output
    int64_t npacks;                 // number of 16-byte packs
    int rank;
    uint64_t deadline_ns;
    unsigned long long *error_word; // device view of host-mapped memory: [0] timeout record, [1] poison seen
    const uint4 *local_in;          // push kernel: this rank's input (no registration needed)
    size_t push_offset;             // push kernel: byte offset of the push buffers in a Signal
};

}  // namespace ar4j
