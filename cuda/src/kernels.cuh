// ar4j custom all-reduce kernels: signal layout, bounded cross-GPU barriers, 1-stage and
// 2-stage reductions over 16-byte packs.
//
// An umbrella over the parts, included in this order:
//  - kernel_sync.cuh: the synchronisation model; PDL, flags, clock, poison, error words, waits,
//    the entry/leave protocol and the block barriers.
//  - packs.cuh: 16-byte pack traits, the rank-order reduction, NaN fills.
//  - staged_kernels.cuh: the 1-stage and 2-stage kernels.
//  - push_kernel.cuh: sentinels, the one-shot push kernel and fill_words.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernel_interface.cuh"
#include "kernel_sync.cuh"
#include "packs.cuh"
#include "staged_kernels.cuh"
#include "push_kernel.cuh"
