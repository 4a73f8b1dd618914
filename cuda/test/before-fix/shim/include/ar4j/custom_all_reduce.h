/* prefix shim: the C ABI header of the OLD library (31e4072, ABI 500), plus ONLY the declarations
 * and constants that the 4043485 exit-path tests use and the old header lacks, with the values of
 * the NEW header (4043485). Nothing of the old header is changed: statuses 0..26, poison reasons
 * 1..5, dtypes, algorithms, limits and both structs are identical in the two headers (see
 * git diff 31e4072 4043485 -- cuda/include/ar4j/custom_all_reduce.h).
 *
 * build.sh puts shim/include first on the include path and the work directory (which holds the old
 * tree as old/cuda/, the fixed as fixed/cuda/) last: the include below is the old header.
 *
 * The three functions declared here are NOT in the old library. shim/prefix_shim.cpp defines them
 * in the test program: each returns AR4J_SHIM_NOT_IN_OLD_ABI (a status neither ABI defines, so no
 * check of the tests can mistake it for a real answer; the old ar4j_status_name calls it
 * AR4J_UNKNOWN_STATUS) and says so on stderr. They never fake success. */
#ifndef AR4J_PREFIX_SHIM_CUSTOM_ALL_REDUCE_H
#define AR4J_PREFIX_SHIM_CUSTOM_ALL_REDUCE_H

#include "old/cuda/include/ar4j/custom_all_reduce.h"

#ifdef __cplusplus
extern "C" {
#endif

/* New in ABI 600 (4043485 header values). */
enum ar4j_prefix_shim_status { AR4J_ERROR_SLOT_IN_USE = 27 };
enum ar4j_prefix_shim_poison_reason { AR4J_POISON_UNREGISTERED = 6 };
enum ar4j_debug_fault { AR4J_DEBUG_FAIL_PEER_COPIES = 1, AR4J_DEBUG_FAIL_LAUNCHES = 2 };

/* The shim's own status: not a status of either ABI. */
enum ar4j_prefix_shim_only { AR4J_SHIM_NOT_IN_OLD_ABI = 990 };

/* Declared as in 4043485; defined by the shim (not in the old library): return AR4J_SHIM_NOT_IN_OLD_ABI. */
int ar4j_signal_size_checked(size_t max_bytes, size_t *out);
int ar4j_debug_inject_faults(ar4j_context *ctx, uint32_t faults, uint32_t rank_mask);
int ar4j_unregister_buffer(ar4j_context *ctx, const void *local);

#ifdef __cplusplus
}
#endif

#endif
