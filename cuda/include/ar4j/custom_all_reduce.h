/*
 * ar4j custom all-reduce: the flat C ABI of libar4j_custom_ar.
 *
 * Plain C for jextract and any FFI: an opaque context, int status codes, explicit
 * algorithm and dtype arguments. This library holds mechanism only; it never chooses
 * an algorithm. The caller (ar4j's Java runtime) decides and passes AR4J_ALGO_*.
 *
 * Model: every rank of one all-reduce group owns one device, one signal block and one
 * context. A signal block is device memory of ar4j_signal_size(max_bytes) bytes,
 * zero-filled before the first use, that every peer can address (CUDA IPC or peer
 * access). Input buffers are "registered": for each one, the context knows the
 * corresponding pointer on every rank. Kernels read peers' inputs directly (1-stage),
 * or reduce a slice each and gather the slices (2-stage).
 *
 * Threading: a context is used by one host thread at a time; a second thread entering
 * ar4j_all_reduce, a registration or a setter while another is inside is refused with
 * AR4J_ERROR_CONCURRENT_USE. Exceptions, callable from any thread at any time (a watchdog),
 * also while kernels run: ar4j_poison, ar4j_read_failure, ar4j_status_name/message.
 * Calls on different contexts are independent.
 *
 * Failure containment: every rank's signal block holds a poison word. A kernel that gives up
 * waiting (deadline), a host that calls ar4j_poison, or a kernel that finds itself overlapping
 * another launch of the same context (two streams or two graphs at once) or a graph input whose
 * pointers were never registered poisons the group: it writes the word into its own and every
 * peer's signal block (the first reason stays). Every kernel reads the word at entry, while
 * waiting and (1-stage, 2-stage, fused 1-stage) after its last barrier; a kernel that finds it
 * passes it on to every peer and writes NaN over its whole output, so a CUDA-graph replay after
 * a failure yields NaN, never plausible numbers, and a launch whose peer gave up and overwrote
 * its input yields NaN, never a sum of the overwritten input. A poisoned group stays poisoned:
 * dispose the contexts and make a new group.
 */
#ifndef AR4J_CUSTOM_ALL_REDUCE_H
#define AR4J_CUSTOM_ALL_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes returned by every entry point. ar4j_status_name() names each. */
enum ar4j_status {
    AR4J_SUCCESS = 0,
    AR4J_ERROR_NULL_POINTER = 1,       /* a required pointer argument was NULL */
    AR4J_ERROR_WORLD_SIZE = 2,         /* world size not in {2, 4, 6, 8} */
    AR4J_ERROR_RANK = 3,               /* rank outside [0, world size) */
    AR4J_ERROR_SIZE_NOT_MULTIPLE_OF_16 = 4, /* element count * dtype size is not a multiple of 16 bytes */
    AR4J_ERROR_MISALIGNED = 5,         /* a device pointer is not 16-byte aligned */
    AR4J_ERROR_EMPTY = 6,              /* element count is zero */
    AR4J_ERROR_TOO_LARGE = 7,          /* the count exceeds the registered buffer or the scratch capacity */
    AR4J_ERROR_NOT_REGISTERED = 8,     /* the input is not in a registered buffer (and no capture is active) */
    AR4J_ERROR_DTYPE = 9,              /* unknown dtype */
    AR4J_ERROR_ALGORITHM = 10,         /* unknown algorithm */
    AR4J_ERROR_DEADLINE = 11,          /* deadline of zero nanoseconds */
    AR4J_ERROR_CAPACITY = 12,          /* the registration table is full */
    AR4J_ERROR_ALREADY_REGISTERED = 13,/* the buffer overlaps a registered one */
    AR4J_ERROR_GRAPH_COUNT = 14,       /* graph registration count differs from the inputs recorded in capture */
    AR4J_ERROR_WRONG_DEVICE = 15,      /* the calling thread's current device is not the context's device */
    AR4J_ERROR_CUDA = 16,              /* a CUDA runtime call failed: see ar4j_last_cuda_error() */
    AR4J_ERROR_PEER_TIMEOUT = 17,      /* a kernel gave up waiting for a peer: see ar4j_read_timeout() */
    AR4J_ERROR_LAUNCH_CONFIG = 18,     /* block/thread counts outside the accepted ranges */
    AR4J_ERROR_INVALID_ARGUMENT = 19,  /* another argument outside its documented range */
    AR4J_ERROR_GEOMETRY_MISMATCH = 20, /* a peer published another launch geometry (or none): see ar4j_read_failure */
    AR4J_ERROR_POISONED = 21,          /* the group is poisoned (a rank gave up, aborted or was misused): see ar4j_read_failure */
    AR4J_ERROR_CONCURRENT_USE = 22,    /* another host thread is inside a call on this context */
    AR4J_ERROR_ALREADY_LAUNCHED = 23,  /* launch geometry / debug seed after the first ar4j_all_reduce */
    AR4J_ERROR_NOT_FUSED = 24,         /* the algorithm has no fused all-reduce + residual + RMSNorm kernel (TWO_STAGE) */
    AR4J_ERROR_HIDDEN_TOO_LARGE = 25,  /* hidden exceeds AR4J_FUSED_MAX_HIDDEN */
    AR4J_ERROR_ROW_NOT_MULTIPLE_OF_16 = 26, /* hidden * dtype size is not a multiple of 16 bytes (fused kernel) */
    AR4J_ERROR_SLOT_IN_USE = 27        /* ar4j_unregister_buffer: a captured CUDA graph still names the buffer */
};

/* Why a group was poisoned (ar4j_failure_info.reason). 1, 4 and 6 are set by the kernels, 5 by
 * ar4j_all_reduce / ar4j_check_geometry; ar4j_poison takes any reason in [1, 255], these
 * named ones or the caller's own. */
enum ar4j_poison_reason {
    AR4J_POISON_TIMEOUT = 1,         /* a kernel of origin_rank gave up waiting for `peer` */
    AR4J_POISON_ABORT = 2,           /* origin_rank's host aborted the group */
    AR4J_POISON_PEER_LOST = 3,       /* origin_rank's host learnt that a peer is gone */
    AR4J_POISON_CONCURRENT_USE = 4,  /* a launch of origin_rank overlapped another launch of its context */
    AR4J_POISON_GEOMETRY = 5,        /* origin_rank found that `peer` publishes another launch geometry */
    AR4J_POISON_UNREGISTERED = 6     /* a kernel of origin_rank ran a graph input whose pointers were never
                                        registered (a graph replayed before ar4j_register_graph_inputs) */
};

/* Element types. Half types are accumulated in fp32. */
enum ar4j_dtype {
    AR4J_DTYPE_FLOAT32 = 0,
    AR4J_DTYPE_FLOAT16 = 1,
    AR4J_DTYPE_BFLOAT16 = 2
};

/* Algorithms. Zero is deliberately not an algorithm. */
enum ar4j_algorithm {
    AR4J_ALGO_ONE_STAGE = 1,  /* every rank reads every peer's input and reduces all of it */
    AR4J_ALGO_TWO_STAGE = 2,  /* reduce-scatter into the signal scratch, then all-gather */
    AR4J_ALGO_PUSH = 3,       /* each rank stores its input into every peer's push buffer,
                                 readers poll for data (no barrier round trips); any local
                                 input, no registration; up to AR4J_PUSH_MAX_BYTES */
};

/* Maximum world size and CUDA blocks per launch supported by the signal layout. */
enum ar4j_limits {
    AR4J_MAX_RANKS = 8,
    AR4J_MAX_BLOCKS = 128,
    AR4J_MAX_THREADS = 1024,
    AR4J_PUSH_MAX_BYTES = 524288,
    AR4J_FUSED_MAX_HIDDEN = 65536   /* the largest row of ar4j_all_reduce_residual_rmsnorm */
};

/* Opaque per-rank context. */
typedef struct ar4j_context ar4j_context;

/* What a kernel recorded when it gave up waiting for a peer. */
typedef struct ar4j_timeout_info {
    int32_t timed_out;   /* 1 if a wait gave up since the last clear, else 0 */
    int32_t peer;        /* the rank that was waited for */
    int32_t block;       /* the CUDA block that waited */
    int32_t barrier;     /* the barrier's ordinal within its launch (0 = start) */
    uint32_t flag;       /* the flag value that was expected */
    uint32_t reserved;
} ar4j_timeout_info;

/* What ar4j_read_failure reports. -1 marks "none" in the rank and block fields. */
typedef struct ar4j_failure_info {
    int32_t poisoned;        /* 1 if the group is poisoned (then origin_rank and reason are set) */
    int32_t origin_rank;     /* the rank that poisoned it first, as far as this rank's signal block says */
    int32_t reason;          /* AR4J_POISON_* (or the caller's code given to ar4j_poison) */
    int32_t peer;            /* TIMEOUT: the rank that was waited for; GEOMETRY: the differing rank */
    int32_t block;           /* TIMEOUT, CONCURRENT_USE: the CUDA block that found it */
    int32_t geometry_mismatch; /* 1 if this context found a peer with another launch geometry */
    int32_t geometry_peer;   /* that peer */
    int32_t local_max_blocks, local_threads, local_push_blocks, local_push_threads;
    int32_t peer_max_blocks, peer_threads, peer_push_blocks, peer_push_threads; /* 0 if it published none */
    ar4j_timeout_info timeout; /* this rank's own kernels' timeout record (as ar4j_read_timeout) */
    uint64_t poison_word;    /* the raw poison word (0 if healthy) */
} ar4j_failure_info;

/* Names a status code ("AR4J_ERROR_RANK"); "AR4J_UNKNOWN_STATUS" for others. Never NULL. */
const char *ar4j_status_name(int status);

/* One sentence describing a status code. Never NULL. */
const char *ar4j_status_message(int status);

/* ABI version of this library: major * 10000 + minor * 100 + patch (0.3.0 = 300: poison,
 * geometry agreement, concurrent-use detection, PDL, 64-bit push generation; 0.4.0 = 400: the
 * fused ar4j_all_reduce_residual_rmsnorm and statuses 24..26; 0.5.0 = 500: that call also for
 * AR4J_ALGO_ONE_STAGE; 0.6.0 = 600: ar4j_unregister_buffer and status 27, poison reason 6,
 * ar4j_signal_size_checked, ar4j_debug_inject_faults, poison after the last barrier, the ABI
 * version and the norm block in the published geometry, a changed signal block layout: ranks
 * of one group must run the same ABI version, which the geometry check now enforces; 0.7.0 =
 * 700: ar4j_set_variants and ar4j_variants_active, each rank's device identity and variants word
 * in its signal block, compared at the geometry check; 0.8.0 = 800: ar4j_residual_rmsnorm_ex
 * (programmatic dependent launch, AR4J_RMSNORM_PDL) and ar4j_rmsnorm_pdl_capable in
 * residual_rmsnorm.h, whose kernel takes 16-byte loads where the rows allow them). */
int ar4j_abi_version(void);

/* Bytes of one rank's signal block, able to run TWO_STAGE on up to max_bytes per call
 * (control block, 2-stage scratch, and the PUSH buffers). 0 if that size is not
 * representable in a size_t (ar4j_signal_size_checked says AR4J_ERROR_TOO_LARGE then). */
size_t ar4j_signal_size(size_t max_bytes);

/* ar4j_signal_size with a status: *out = the size, or AR4J_ERROR_TOO_LARGE (and *out = 0) if it
 * would not fit in a size_t. */
int ar4j_signal_size_checked(size_t max_bytes, size_t *out);

/*
 * Creates a context on the calling thread's current device.
 * signals: world_size device pointers, signals[r] is rank r's signal block as
 *          addressable from this device (signals[rank] is this rank's own block).
 * max_bytes: the largest TWO_STAGE call (a multiple of 16); must match the size the signal
 *            blocks were made with (AR4J_ERROR_TOO_LARGE if ar4j_signal_size would not fit).
 * Every rank must have created its context before any rank calls ar4j_all_reduce: creation
 * fills this rank's push buffers.
 * max_buffers: capacity of the registration table (registered buffers plus graph inputs).
 * deadline_ns: how long a kernel waits for a peer before it gives up (> 0).
 */
int ar4j_context_create(ar4j_context **out, const void *const *signals, int32_t rank,
                        int32_t world_size, size_t max_bytes, int32_t max_buffers,
                        uint64_t deadline_ns);

/* Frees the context and everything it allocated. NULL is accepted and ignored. */
int ar4j_context_destroy(ar4j_context *ctx);

/* Overrides the 1-stage/2-stage launch geometry (defaults: one block per SM, at most
 * AR4J_MAX_BLOCKS, of 512 threads). threads: multiple of 32.
 * Ranks must launch identical grids, so every rank of a group must call this with the same
 * values (the group's agreed geometry, e.g. the smallest SM count) before any rank makes its
 * first ar4j_all_reduce; the context publishes its geometry in its signal block, and the
 * first ar4j_all_reduce (or ar4j_check_geometry) compares every peer's: a difference is
 * refused with AR4J_ERROR_GEOMETRY_MISMATCH, then and on every later call, and poisons the
 * group (AR4J_POISON_GEOMETRY). After the first call (or check): AR4J_ERROR_ALREADY_LAUNCHED.
 * The published geometry word (64 bits, in the signal block) holds, from bit 63 down: a tag 0xA5
 * (8 bits), ar4j_abi_version() (16), max_blocks (8), threads / 32 (8), the push grid's blocks (8)
 * and threads / 32 (8), and the fused kernels' block threads / 32 (8): peers built with another
 * push grid, norm block or ABI version differ in it too (ar4j_failure_info names the peer; its
 * peer_* fields are 0 for a word of another tag). */
int ar4j_set_launch_config(ar4j_context *ctx, int32_t max_blocks, int32_t threads);

/* Compares every peer's published launch geometry with this context's now (once; later calls
 * return the first answer): AR4J_SUCCESS or AR4J_ERROR_GEOMETRY_MISMATCH. Call it after every
 * rank has configured its context (a group barrier); ar4j_all_reduce does it at its first call
 * otherwise. Copies a few words from the peers' signal blocks on a private stream. */
int ar4j_check_geometry(ar4j_context *ctx);

/* Programmatic dependent launch on (1) or off (0, the default) for this context's later
 * launches, eager and captured: each kernel may start while the previous kernel of its stream
 * is finishing and waits (griddepcontrol.wait) before its first dependent access. Accepted on
 * every device; it takes effect only on compute capability 9.0 or newer with kernels built
 * for it (ar4j_pdl_active). Ranks need not agree. */
int ar4j_set_pdl(ar4j_context *ctx, int32_t enabled);

/* *out = 1 if this context's launches use programmatic dependent launch, else 0. */
int ar4j_pdl_active(const ar4j_context *ctx, int32_t *out);

/* Kernel variants (flags of ar4j_set_variants; 0, the default, is the kernels of ABI 0.6). Each gives
 * the same results (bitwise) and the same failure containment (poison, deadline, NaN) as the default.
 *  - PUSH_EARLY_TRIGGER: the push kernels (plain and fused) let the next PDL kernel of the stream
 *    launch at once (griddepcontrol.launch_dependents at entry) instead of after their last poll. In
 *    effect only once the geometry check found that no peer publishes this rank's device identity
 *    (a hash of the device UUID): with ranks sharing a GPU the next kernel's waiting blocks could take
 *    the SM slots a peer's kernel needs, so the trigger stays late there (ar4j_variants_active says
 *    which is in effect). Needs PDL (ar4j_set_pdl) to change anything. Ranks need not agree on it.
 *  - PUSH_CLEAR_ON_READ: the push kernels clear each pack of the push buffers right after reading it,
 *    instead of refilling the previous generation's buffer at the end of the next launch.
 *  - FUSED_GRID_PUSH: the fused push all-reduce + residual + RMSNorm pushes its input with the whole
 *    grid (the norm stays one block per row); for calls whose outputs overlap the input the row-owner
 *    kernel runs instead (its push phase reads only its own rows).
 *  - TWO_STAGE_PUSH: AR4J_ALGO_TWO_STAGE runs a push-based kernel (each rank stores the peers'
 *    shards of its input into their scratch, reduces its own shard, stores the result into every
 *    peer's scratch; posted writes only across the links, 3 barriers) when
 *    2 * (world_size - 1) * 16 * (npacks - (world_size - 1) * (npacks / world_size)) <= max_bytes,
 *    npacks = bytes / 16 (about bytes <= max_bytes for 2 ranks, <= max_bytes * 2 / 3 for 4, <= max_bytes
 *    * 4 / 7 for 8), else the pull kernel as without the flag (the same choice on every rank).
 *  - PUSH_PASS_ON_POISON: a push kernel (plain or fused) that gives up (poisoned at entry or while
 *    polling, or timed out) passes the poison on to every peer's signal block, as the pull kernels
 *    always do: a peer that the poisoning rank could not reach learns it at once instead of at its
 *    deadline. Ranks need not agree on it.
 *  - DEBUG_IGNORE_SHARED_GPU (TEST ONLY): the early trigger also when ranks share a GPU (a
 *    correctness test on one GPU with few ranks; deadlock-prone with many, see docs/KERNELS.md).
 * Every flag except the early trigger, the pass-on and the test flag must be the same on every rank
 * (they change the buffer protocol): the context publishes them (and max_bytes) in its signal block and the
 * geometry check refuses a difference with AR4J_ERROR_GEOMETRY_MISMATCH, as for the launch geometry. */
enum ar4j_variant {
    AR4J_VARIANT_PUSH_EARLY_TRIGGER = 1,
    AR4J_VARIANT_PUSH_CLEAR_ON_READ = 2,
    AR4J_VARIANT_FUSED_GRID_PUSH = 4,
    AR4J_VARIANT_TWO_STAGE_PUSH = 8,
    AR4J_VARIANT_PUSH_PASS_ON_POISON = 16,
    AR4J_VARIANTS_ALL = 31,
    AR4J_VARIANT_DEBUG_IGNORE_SHARED_GPU = 0x40000000
};

/* Sets the kernel variants (AR4J_VARIANT_* flags, 0 = the defaults); as ar4j_set_launch_config: on
 * every rank before any rank's first ar4j_all_reduce, AR4J_ERROR_ALREADY_LAUNCHED after this
 * context's first call or geometry check; AR4J_ERROR_INVALID_ARGUMENT for an unknown flag. */
int ar4j_set_variants(ar4j_context *ctx, uint32_t flags);

/* *out = the AR4J_VARIANT_* flags in effect now: those set, less the early trigger unless the
 * geometry check found that no peer shares this rank's GPU (before the check: not in effect). */
int ar4j_variants_active(const ar4j_context *ctx, uint32_t *out);

/* Poisons the group: writes a poison word (origin = this rank, `reason` in [1, 255], e.g.
 * AR4J_POISON_ABORT) into this rank's and every peer's signal block where none is set yet.
 * From any thread, also while this context's kernels run: it copies on a private stream and
 * waits only for those copies, never for the kernels. Running and later kernels of every rank
 * then write NaN and return; later ar4j_all_reduce calls on this context return
 * AR4J_ERROR_POISONED. Idempotent. Every rank is tried, also after a copy to one of them
 * failed (AR4J_ERROR_CUDA then, with the first failure's ar4j_last_cuda_error; the ranks it
 * reached pass the poison on to the others as soon as one of their kernels reads it). A reason
 * already there, a kernel's or another host's, is never overwritten: hosts and kernels write
 * separate words, and the kernels' is reported first (ar4j_read_failure). */
int ar4j_poison(ar4j_context *ctx, int32_t reason);

/* Reads what is known of the group's failure: the poison word of this rank's signal block
 * (read on a private stream, not waiting for kernels), this rank's timeout record and a
 * geometry mismatch. From any thread, at any time. Sets *out to zeros/-1 when healthy. */
int ar4j_read_failure(ar4j_context *ctx, ar4j_failure_info *out);

/* TEST ONLY. Sets every block's one-shot-push generation counter to `generation`, as if that
 * many push launches had completed; only before the first ar4j_all_reduce
 * (AR4J_ERROR_ALREADY_LAUNCHED after), and with the same value on every rank. Lets a test cross
 * 2^32 launches without making them. */
int ar4j_debug_seed_push_generation(ar4j_context *ctx, uint64_t generation);

/* TEST ONLY. Fault injection for the native tests (flags of ar4j_debug_fault, 0 = none): the
 * context's side-channel copies to and from the signal blocks of the ranks in rank_mask (bit r:
 * rank r) fail with cudaErrorInvalidValue before reaching the device (AR4J_DEBUG_FAIL_PEER_COPIES,
 * as for an unreachable peer), or its kernel launches fail with cudaErrorInvalidConfiguration
 * before reaching the device (AR4J_DEBUG_FAIL_LAUNCHES). From any thread; replaces the earlier
 * setting. */
enum ar4j_debug_fault {
    AR4J_DEBUG_FAIL_PEER_COPIES = 1,
    AR4J_DEBUG_FAIL_LAUNCHES = 2
};
int ar4j_debug_inject_faults(ar4j_context *ctx, uint32_t faults, uint32_t rank_mask);

/*
 * Registers a buffer set: ptrs[r] is rank r's buffer as addressable from this device,
 * ptrs[rank] the local one; bytes is the size of the local buffer (all ranks' buffers
 * must be at least that large). Inputs anywhere inside [ptrs[rank], ptrs[rank] + bytes)
 * are then reduced without copies; the same offset is used on every rank. A slot freed by
 * ar4j_unregister_buffer is reused.
 */
int ar4j_register_buffer(ar4j_context *ctx, const void *const *ptrs, size_t bytes);

/*
 * Unregisters the buffer registered with local pointer `local` (ptrs[rank] of
 * ar4j_register_buffer, exactly) and frees its slot, so that its peers' pointers (and their
 * IPC mappings) may be released. Refused with AR4J_ERROR_SLOT_IN_USE while a CUDA graph
 * captured with an input in it still exists (the graph or any executable instantiated from it:
 * a replay would read the slot): destroy those first; the count drops when CUDA runs the graph's
 * destructor callbacks, which it may do shortly after the destroy calls returned, so retry.
 * AR4J_ERROR_NOT_REGISTERED if no registration starts at `local`. As for freeing the buffer
 * itself, eager launches that read it must have completed (stream order): a launch that reads
 * the freed slot finds it zeroed and poisons the group (AR4J_POISON_UNREGISTERED).
 */
int ar4j_unregister_buffer(ar4j_context *ctx, const void *local);

/* Number of registered buffers, graph inputs included (slots in use). */
int ar4j_registered_count(const ar4j_context *ctx, int32_t *out);

/*
 * All-reduce (sum) of count elements of dtype from in to out on stream (a cudaStream_t;
 * NULL is the legacy default stream). For PUSH, in is any device pointer of this
 * rank's device. For ONE_STAGE and TWO_STAGE, in must lie in a registered buffer, unless the
 * stream is capturing a CUDA graph: then in is recorded as a graph input, and its peers'
 * pointers must be supplied with ar4j_register_graph_inputs() before the graph is
 * replayed (a replay before that poisons the group, AR4J_POISON_UNREGISTERED, and yields NaN;
 * a call that fails records nothing). The graph then holds the input's slot (and a captured
 * call on a registered buffer that buffer's slot) until CUDA destroys it (ar4j_unregister_buffer).
 * out may equal in. Every rank must make the same calls in the same order.
 * A context's launches must not overlap on the device: one stream at a time (or streams
 * ordered by events); two streams or two graphs running at once on one context are detected
 * by the kernels (per block), poison the group (AR4J_POISON_CONCURRENT_USE) and yield NaN.
 * Fails fast with AR4J_ERROR_PEER_TIMEOUT or AR4J_ERROR_POISONED once this rank knows of a
 * failure (its kernels' host-mapped records, ar4j_poison, ar4j_read_failure); a peer's poison
 * that no host call has read yet still turns every launched kernel's output into NaN.
 */
int ar4j_all_reduce(ar4j_context *ctx, int32_t algorithm, int32_t dtype, const void *in,
                    void *out, size_t count, void *stream);

/*
 * Fused all-reduce (sum) + residual add + RMSNorm over rows rows of hidden elements of dtype:
 *
 *   sum          = allreduce(in)                    (fp32, rank order; rounded to dtype)
 *   residual_out = sum + residual                   (fp32 add, rounded to dtype once)
 *   out          = residual_out * rsqrt(mean over the row of residual_out^2 + eps) * weight
 *
 * Bitwise the same result as ar4j_all_reduce(algorithm, in -> tmp) followed by
 * ar4j_residual_rmsnorm(tmp, residual, weight -> out, residual_out), and the same on every rank.
 * in, residual, out, residual_out: rows * hidden elements; weight: hidden elements; all device
 * pointers of this rank's device, 16-byte aligned. residual_out may equal residual; no output may
 * overlap residual, weight or the other output otherwise.
 * algorithm: AR4J_ALGO_PUSH or AR4J_ALGO_ONE_STAGE (AR4J_ALGO_TWO_STAGE:
 * AR4J_ERROR_NOT_FUSED); every rank must make the same calls in the same order, as for
 * ar4j_all_reduce; graph capture and programmatic dependent launch (ar4j_set_pdl) as there too.
 *  - PUSH: in is any device pointer, no registration; out may equal in, residual_out may
 *    equal in. rows * hidden * dtype size <= AR4J_PUSH_MAX_BYTES (else AR4J_ERROR_TOO_LARGE). It
 *    shares the push kernel's buffers and generation counters: fused and plain push calls may be
 *    interleaved. One block owns each row (32 blocks of 512 threads).
 *  - ONE_STAGE: in lies in a registered buffer, or is recorded as a graph input while the stream
 *    captures (else AR4J_ERROR_NOT_REGISTERED), exactly as for ar4j_all_reduce; rows * hidden *
 *    dtype size within the registration (else AR4J_ERROR_TOO_LARGE). The peers read this rank's
 *    input during the whole launch, so neither out nor residual_out may overlap it, not even equal
 *    it (AR4J_ERROR_INVALID_ARGUMENT): for an in-place call, copy the input into a registered
 *    buffer first. One block owns each row: min(rows, the 1-/2-stage max_blocks) blocks of 512
 *    threads, sharing the 1-stage kernel's barrier flags (1-stage and fused calls may be interleaved).
 * hidden: 1 .. AR4J_FUSED_MAX_HIDDEN (else AR4J_ERROR_HIDDEN_TOO_LARGE), hidden * dtype size a
 * multiple of 16 (else AR4J_ERROR_ROW_NOT_MULTIPLE_OF_16); rows >= 1; eps finite and > 0. Poison
 * and timeouts as for ar4j_all_reduce: a poisoned or failed launch writes NaN over the whole of out
 * and residual_out.
 */
int ar4j_all_reduce_residual_rmsnorm(ar4j_context *ctx, int32_t algorithm, int32_t dtype, const void *in,
                                     const void *residual, const void *weight, void *out, void *residual_out,
                                     size_t rows, size_t hidden, float eps, void *stream);

/* Number of graph inputs recorded during capture and not yet registered. */
int ar4j_graph_pending_count(const ar4j_context *ctx, int32_t *out);

/* Copies the first n recorded graph inputs (local pointers, capture order) to out. */
int ar4j_graph_pending_inputs(const ar4j_context *ctx, void **out, int32_t n);

/*
 * Registers the pending graph inputs: ptrs holds n * world_size pointers, row i holding
 * every rank's pointer for the i-th recorded input (ptrs[i * world_size + r]). n must equal
 * the pending count. Clears the pending list.
 */
int ar4j_register_graph_inputs(ar4j_context *ctx, const void *const *ptrs, int32_t n);

/* Reads the timeout record; clears it when clear != 0. A context whose kernels timed out
 * stays failed (AR4J_ERROR_PEER_TIMEOUT) even after a clear: its flags no longer match
 * the peers', and the kernel that gave up poisoned the group. Dispose it and make a new
 * group. ar4j_read_failure reports the same record and more. */
int ar4j_read_timeout(ar4j_context *ctx, ar4j_timeout_info *out, int32_t clear);

/* The cudaError_t of the last failed CUDA call made by this context (0 if none); with NULL,
 * that of the calling thread's last ar4j_context_create that failed with AR4J_ERROR_CUDA. */
int ar4j_last_cuda_error(const ar4j_context *ctx);

#ifdef __cplusplus
}
#endif

#endif /* AR4J_CUSTOM_ALL_REDUCE_H */
