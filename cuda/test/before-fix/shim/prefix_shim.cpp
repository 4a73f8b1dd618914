// prefix shim: the entry points of ABI 600 that the old library (31e4072, ABI 500) lacks, linked
// into the test program only. None does anything: each says so once on stderr and returns
// AR4J_SHIM_NOT_IN_OLD_ABI (990; the old ar4j_status_name calls it AR4J_UNKNOWN_STATUS). A test
// that records the status fails on it; one that wraps the call in CHECK_AR ends the process
// (exit code 2) with the CHECK_AR line naming the call.
#include <atomic>
#include <cstdio>

#include "ar4j/custom_all_reduce.h"

namespace {
std::atomic<int> said[3];
void note(int i, const char *name) {
    if (said[i].exchange(1) == 0) {
        std::fprintf(stderr,
                     "[prefix shim] %s is not in the old library's C ABI (31e4072, ABI %d): returns %d "
                     "(AR4J_SHIM_NOT_IN_OLD_ABI)\n",
                     name, ar4j_abi_version(), static_cast<int>(AR4J_SHIM_NOT_IN_OLD_ABI));
        std::fflush(stderr);
    }
}
}  // namespace

extern "C" int ar4j_signal_size_checked(size_t, size_t *) {
    note(0, "ar4j_signal_size_checked");
    return AR4J_SHIM_NOT_IN_OLD_ABI;
}

extern "C" int ar4j_debug_inject_faults(ar4j_context *, uint32_t, uint32_t) {
    note(1, "ar4j_debug_inject_faults");
    return AR4J_SHIM_NOT_IN_OLD_ABI;
}

extern "C" int ar4j_unregister_buffer(ar4j_context *, const void *) {
    note(2, "ar4j_unregister_buffer");
    return AR4J_SHIM_NOT_IN_OLD_ABI;
}
