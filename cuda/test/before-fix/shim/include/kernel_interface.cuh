// prefix shim: the signal block layout of the OLD kernels (31e4072 src/kernel_interface.cuh, used
// as is: the forged flags, tickets and poison land where the old kernels read them), plus what the
// 4043485 exit-path tests name and the old header lacks. "old/cuda/...": the 31e4072 tree in
// build.sh's work directory (on the include path after shim/include and the tests).
#pragma once

#include <stddef.h>

#include "old/cuda/src/kernel_interface.cuh"
// kNormThreads: at 31e4072 in src/rmsnorm_math.cuh (512); the fix moved it to kernel_interface.cuh.
#include "old/cuda/src/rmsnorm_math.cuh"

namespace ar4j {

// 4043485: the largest max_bytes whose signal size fits a size_t. The same formula over the old
// constants (kScratchOffset and kPushAreaBytes are equal in both layouts); the old library has no
// such limit, which is what run_limits shows.
constexpr size_t kMaxSignalMaxBytes = ~static_cast<size_t>(0) - kScratchOffset - kPushAreaBytes - 4095;

}  // namespace ar4j

// 4043485 split the poison word in two: kernels write Signal::poison, hosts Signal::host_poison
// (poison + 8). At 31e4072 there is one word, `poison`, written by kernels AND hosts (poison_all in
// failure.cpp) and the only one the old kernels and ar4j_read_failure read; poison + 8 is pad0[0],
// which nothing reads. A test that forges "what a host wrote" (run_poison_passed_on) therefore
// writes `poison` in the old layout.
#define host_poison poison
