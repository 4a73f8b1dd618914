// What the host side and the kernels share: the limits, the Signal block layout, the poison
// word, the push buffers' geometry and the kernels' parameters. Host code includes this header
// alone (no kernels); kernels.cuh includes it.
#pragma once

#include <cuda_runtime.h>
#include <stddef.h>
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

// Poison words (two per Signal, 64 bits each; 0 = healthy). A rank that gives up or aborts writes
// one into its own Signal and every peer's; every kernel reads both at entry, while waiting and
// after its last barrier, and a poisoned kernel writes NaN over its whole output and returns.
// Kernels write only `poison`, hosts (ar4j_poison, a geometry mismatch) only `host_poison`, each
// where its word is still 0: a host's copy engine cannot compare-and-swap, and with one shared
// word a host that read 0 could overwrite the reason a kernel stored after that read. So nothing
// ever overwrites a kernel's reason, and the kernels' word is the one reported when both are set.
// Layout (the host decodes the same): bit 63 set, 56..62 origin rank, 48..55 reason
// (AR4J_POISON_*), 40..47 the peer waited for (0xff: none), 0..15 the CUDA block (0xffff: none).
constexpr int kPoisonTimeout = 1;
constexpr int kPoisonConcurrentUse = 4;
constexpr int kPoisonUnregistered = 6;

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
    // Written by peers' and this rank's kernels (poison) and hosts (host_poison); alone in their
    // 128-byte line, 16-byte aligned: a kernel reads both with one load.
    alignas(128) unsigned long long poison;
    unsigned long long host_poison;
    unsigned long long pad0[14];
    // This context's launch geometry as published by the host (see ar4j_check_geometry), then
    // its device's identity (a hash of the device UUID: ranks whose words are equal share a GPU)
    // and its kernel variants word (make_variants_word), both published at create and compared
    // with every peer's at the geometry check. The three are read with one copy per rank.
    alignas(128) unsigned long long geometry;
    unsigned long long identity;
    unsigned long long variants;
    unsigned long long pad1[13];
};

// Signal block layout: [control | 2-stage scratch (max_bytes) | push buffers].
// The 2-stage scratch holds this rank's reduced slice, read by peers.
constexpr size_t kScratchOffset = 16384;
static_assert(sizeof(Signal) <= kScratchOffset, "signal control block outgrew its slot");
static_assert(offsetof(Signal, host_poison) == offsetof(Signal, poison) + 8, "the poison pair is read with one load");
static_assert(offsetof(Signal, identity) == offsetof(Signal, geometry) + 8 &&
                  offsetof(Signal, variants) == offsetof(Signal, geometry) + 16,
              "geometry, identity and variants are read with one copy");

// Kernel variants (AR4J_VARIANT_* of the C header; Params::variants holds those in effect).
constexpr uint32_t kVariantPushEarlyTrigger = 1u;  // push kernels: launch_dependents at entry
constexpr uint32_t kVariantPushClearOnRead = 2u;   // push kernels: clear each pack after reading it
constexpr uint32_t kVariantFusedGridPush = 4u;     // fused push: the push phase over the whole grid
constexpr uint32_t kVariantTwoStagePush = 8u;      // TWO_STAGE: the push-based kernel where it fits
constexpr uint32_t kVariantPushPassOnPoison = 16u; // push kernels that give up pass the poison on
constexpr uint32_t kVariantsAll = 31u;
// TEST ONLY: keep the early trigger although ranks share a GPU (correctness runs on one GPU).
constexpr uint32_t kVariantDebugIgnoreSharedGpu = 0x40000000u;

// The variants word a context publishes: tag 0x5A in bits 56..63, the variant flags that the
// ranks must agree on (every bit but the early trigger and the poison pass-on, which are each
// rank's own affair, and the test-only bit) in 48..55, and max_bytes / 16 in 0..47: the signal
// blocks' layouts (push area offset, scratch) follow from max_bytes, so ranks with different
// values are refused too.
constexpr unsigned long long kVariantsTag = 0x5A;
constexpr uint32_t kVariantsAgreed = kVariantsAll & ~(kVariantPushEarlyTrigger | kVariantPushPassOnPoison);
__host__ __device__ constexpr unsigned long long make_variants_word(uint32_t flags, size_t max_bytes) {
    return (kVariantsTag << 56) | ((unsigned long long)(flags & kVariantsAgreed) << 48) |
           ((unsigned long long)(max_bytes >> 4) & 0xffffffffffffull);
}

// The push-based 2-stage kernel's scratch (in the 2-stage scratch of the Signal): shard q of
// npacks is [q * part, q * part + size(q)) with part = npacks / WS and the last shard taking the
// remainder; a slot holds the largest shard. Region A (slots 0 .. WS-2) receives the peers' parts
// of this rank's shard, region B (slots WS-1 .. 2 WS-3) the peers' reduced shards; a writer s
// uses slot s, or s - 1 above the owner's rank (the owner's own slot is never needed).
__host__ __device__ constexpr int64_t two_stage_push_slot_packs(int64_t npacks, int ws) {
    return npacks - (int64_t)(ws - 1) * (npacks / ws);
}
__host__ __device__ constexpr size_t two_stage_push_scratch_bytes(int64_t npacks, int ws) {
    return (size_t)(2 * (ws - 1)) * (size_t)two_stage_push_slot_packs(npacks, ws) * 16u;
}
static_assert(two_stage_push_scratch_bytes(8, 2) == 128 && two_stage_push_scratch_bytes(10, 4) == 6 * 4 * 16,
              "2 slots of 4 packs; 6 slots of the last shard's 4 packs");

// Push buffers: 3 generations x kMaxRanks slots x kPushMaxBytes, filled with the sentinel.
constexpr size_t kPushMaxBytes = 512 * 1024;
constexpr int kPushGenerations = 3;
constexpr size_t kPushAreaBytes = kPushGenerations * kMaxRanks * kPushMaxBytes;
// The push kernel's fixed grid (every launch must use the same one: the per-block generation
// counters live in the signal block). Overridable at build time for tuning experiments; the
// default is the grid the push grid sweep found fastest (docs/verification/runs.md).
#ifndef AR4J_PUSH_BLOCKS
#define AR4J_PUSH_BLOCKS 32
#endif
#ifndef AR4J_PUSH_THREADS
#define AR4J_PUSH_THREADS 256
#endif
constexpr int kPushBlocks = AR4J_PUSH_BLOCKS;
constexpr int kPushThreads = AR4J_PUSH_THREADS;
static_assert(kPushThreads % 32 == 0 && kPushThreads <= 1024, "the push block is whole warps (geometry word)");
// Threads of a fused all-reduce + residual + RMSNorm block (and of the residual_rmsnorm kernel).
constexpr int kNormThreads = 512;
// A 32-bit word that marks "not yet written": -0.0 in both halves for fp16/bf16, and a
// negative fp32 denormal (about -4.6e-41) for fp32. Inputs equal to it are replaced by -0.0
// (fp32) or each -0.0 half by +0.0 (halves) before they are pushed.
constexpr uint32_t kSentinelWord = 0x80008000u;

__host__ __device__ constexpr size_t push_area_offset(size_t max_bytes) {
    return kScratchOffset + ((max_bytes + 4095) & ~static_cast<size_t>(4095));
}

// The largest max_bytes whose signal block size (push_area_offset(max_bytes) + kPushAreaBytes) is
// representable in a size_t; ar4j_signal_size and ar4j_context_create refuse larger ones.
constexpr size_t kMaxSignalMaxBytes = ~static_cast<size_t>(0) - kScratchOffset - kPushAreaBytes - 4095;
static_assert(push_area_offset(kMaxSignalMaxBytes) + kPushAreaBytes >= kMaxSignalMaxBytes, "no wrap at the limit");

// Nanoseconds from `since` to `now` on %globaltimer, 0 if the timer stepped back (the driver may
// adjust it): a wait measures its deadline with this, never with a wrapped difference.
__host__ __device__ constexpr uint64_t elapsed_ns(uint64_t now, uint64_t since) { return now >= since ? now - since : 0; }
static_assert(elapsed_ns(10, 4) == 6 && elapsed_ns(4, 10) == 0, "a timer that steps back is no elapsed time");

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
    uint32_t variants;              // kVariant* in effect for this launch (0: the default kernels)
};

}  // namespace ar4j
