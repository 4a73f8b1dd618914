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
 * Threading: a context is used by one host thread at a time. Calls on different
 * contexts are independent.
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
    AR4J_ERROR_INVALID_ARGUMENT = 19   /* another argument outside its documented range */
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
    AR4J_ALGO_ONE_SHOT_PUSH = 3 /* each rank stores its input into every peer's push buffer,
                                   readers poll for data (no barrier round trips); any local
                                   input, no registration; up to AR4J_PUSH_MAX_BYTES */
};

/* Maximum world size and CUDA blocks per launch supported by the signal layout. */
enum ar4j_limits {
    AR4J_MAX_RANKS = 8,
    AR4J_MAX_BLOCKS = 128,
    AR4J_MAX_THREADS = 1024,
    AR4J_PUSH_MAX_BYTES = 524288
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

/* Names a status code ("AR4J_ERROR_RANK"); "AR4J_UNKNOWN_STATUS" for others. Never NULL. */
const char *ar4j_status_name(int status);

/* One sentence describing a status code. Never NULL. */
const char *ar4j_status_message(int status);

/* ABI version of this library: major * 10000 + minor * 100 + patch. */
int ar4j_abi_version(void);

/* Bytes of one rank's signal block, able to run TWO_STAGE on up to max_bytes per call
 * (control block, 2-stage scratch, and the ONE_SHOT_PUSH buffers). */
size_t ar4j_signal_size(size_t max_bytes);

/*
 * Creates a context on the calling thread's current device.
 * signals: world_size device pointers, signals[r] is rank r's signal block as
 *          addressable from this device (signals[rank] is this rank's own block).
 * max_bytes: the largest TWO_STAGE call (a multiple of 16); must match the size the signal
 *            blocks were made with.
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
 * AR4J_MAX_BLOCKS, of 512 threads). threads: multiple of 32. */
int ar4j_set_launch_config(ar4j_context *ctx, int32_t max_blocks, int32_t threads);

/*
 * Registers a buffer set: ptrs[r] is rank r's buffer as addressable from this device,
 * ptrs[rank] the local one; bytes is the size of the local buffer (all ranks' buffers
 * must be at least that large). Inputs anywhere inside [ptrs[rank], ptrs[rank] + bytes)
 * are then reduced without copies; the same offset is used on every rank.
 */
int ar4j_register_buffer(ar4j_context *ctx, const void *const *ptrs, size_t bytes);

/* Number of registered buffers, graph inputs included. */
int ar4j_registered_count(const ar4j_context *ctx, int32_t *out);

/*
 * All-reduce (sum) of count elements of dtype from in to out on stream (a cudaStream_t;
 * NULL is the legacy default stream). For ONE_SHOT_PUSH, in is any device pointer of this
 * rank's device. For ONE_STAGE and TWO_STAGE, in must lie in a registered buffer, unless the
 * stream is capturing a CUDA graph: then in is recorded as a graph input, and its peers'
 * pointers must be supplied with ar4j_register_graph_inputs() before the graph is
 * replayed. out may equal in. Every rank must make the same calls in the same order.
 */
int ar4j_all_reduce(ar4j_context *ctx, int32_t algorithm, int32_t dtype, const void *in,
                    void *out, size_t count, void *stream);

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
 * the peers'. Dispose it and make a new group. */
int ar4j_read_timeout(ar4j_context *ctx, ar4j_timeout_info *out, int32_t clear);

/* The cudaError_t of the last failed CUDA call made by this context (0 if none); with NULL,
 * that of the calling thread's last ar4j_context_create that failed with AR4J_ERROR_CUDA. */
int ar4j_last_cuda_error(const ar4j_context *ctx);

#ifdef __cplusplus
}
#endif

#endif /* AR4J_CUSTOM_ALL_REDUCE_H */
