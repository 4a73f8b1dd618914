#!/usr/bin/env bash
# Runs the native test program on a GPU host (after gpu/prepare.sh on the build machine).
# Arguments go to ar4j_native_test (e.g. --gpus 2 --quick --no-timing).
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
exec .gpu/native/ar4j_native_test "$@"
