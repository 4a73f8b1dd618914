// prefix build: native_test.cu of 4043485, unchanged (included below), with one addition in the
// driver only: --only NAME[,NAME...] runs just the named exit-path tests (with --exits-only), so
// that a test that ends the process (CHECK_AR -> exit 2, or a sticky CUDA fault) hides nothing:
// run.sh runs each test in a process of its own. No test's logic is touched: each run_* call of
// native_test.cu's main goes through a wrapper that calls the test or returns at once; every rank
// makes the same decision, so the tests' barriers still match. Without --only: exactly 4043485's
// program. Names (--list): limits overwritten_1stage overwritten_2stage overwritten_fused
// final_barrier poison_passed_on poison_failing_copy failed_launch unregister replay_before_registration
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "native_test_harness.h"

namespace prefix_filter {

inline const char *const kNames[] = {"limits",           "overwritten_1stage", "overwritten_2stage",
                                     "overwritten_fused", "final_barrier",      "poison_passed_on",
                                     "poison_failing_copy", "failed_launch",    "unregister",
                                     "replay_before_registration"};
inline std::vector<std::string> g_only;  // empty: every test

inline bool want(const char *name) {
    if (g_only.empty()) return true;
    for (const auto &n : g_only)
        if (n == name) return true;
    return false;
}

using native_test::Shared;

inline void run_limits(Shared &sh, int rank, std::barrier<> &sync) {
    if (want("limits")) native_test::run_limits(sh, rank, sync);
}
inline void run_overwritten_input(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync, int algo, bool fused) {
    const char *n = fused ? "overwritten_fused" : algo == AR4J_ALGO_ONE_STAGE ? "overwritten_1stage" : "overwritten_2stage";
    if (want(n)) native_test::run_overwritten_input(sh, rank, stream, sync, algo, fused);
}
inline void run_final_barrier_gives_up(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync) {
    if (want("final_barrier")) native_test::run_final_barrier_gives_up(sh, rank, stream, sync);
}
inline void run_poison_passed_on(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync) {
    if (want("poison_passed_on")) native_test::run_poison_passed_on(sh, rank, stream, sync);
}
inline void run_poison_failing_copy(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync) {
    if (want("poison_failing_copy")) native_test::run_poison_failing_copy(sh, rank, stream, sync);
}
inline void run_failed_launch_records_nothing(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync) {
    if (want("failed_launch")) native_test::run_failed_launch_records_nothing(sh, rank, stream, sync);
}
inline void run_unregister(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync) {
    if (want("unregister")) native_test::run_unregister(sh, rank, stream, sync);
}
inline void run_replay_before_registration(Shared &sh, int rank, cudaStream_t stream, std::barrier<> &sync) {
    if (want("replay_before_registration")) native_test::run_replay_before_registration(sh, rank, stream, sync);
}

}  // namespace prefix_filter

// The calls in native_test.cu's main go to the wrappers.
#define run_limits prefix_filter::run_limits
#define run_overwritten_input prefix_filter::run_overwritten_input
#define run_final_barrier_gives_up prefix_filter::run_final_barrier_gives_up
#define run_poison_passed_on prefix_filter::run_poison_passed_on
#define run_poison_failing_copy prefix_filter::run_poison_failing_copy
#define run_failed_launch_records_nothing prefix_filter::run_failed_launch_records_nothing
#define run_unregister prefix_filter::run_unregister
#define run_replay_before_registration prefix_filter::run_replay_before_registration
#define main native_test_main
#include "native_test.cu"
#undef main

int main(int argc, char **argv) {
    std::vector<char *> rest{argv[0]};
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--list") == 0) {
            for (const char *n : prefix_filter::kNames) std::printf("%s\n", n);
            return 0;
        }
        if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            std::string list = argv[++i];
            size_t at = 0;
            while (at <= list.size()) {
                const size_t comma = std::min(list.find(',', at), list.size());
                const std::string n = list.substr(at, comma - at);
                bool known = false;
                for (const char *k : prefix_filter::kNames) known = known || n == k;
                if (!known) {
                    std::fprintf(stderr, "--only: unknown test '%s' (--list names them)\n", n.c_str());
                    return 2;
                }
                prefix_filter::g_only.push_back(n);
                at = comma + 1;
            }
            continue;
        }
        rest.push_back(argv[i]);
    }
    if (!prefix_filter::g_only.empty()) {
        std::printf("[filter driver] --only");
        for (const auto &n : prefix_filter::g_only) std::printf(" %s", n.c_str());
        std::printf("\n");
    }
    rest.push_back(nullptr);
    return native_test_main(static_cast<int>(rest.size()) - 1, rest.data());
}
