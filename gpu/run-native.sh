#!/usr/bin/env bash
# Runs the native test program on a GPU host (after gpu/prepare.sh on the build machine).
# Arguments go to ar4j_native_test (e.g. --gpus 2 --quick --no-timing). On a one-GPU machine:
# --gpus 1 --ranks 2 (or 4, 8): the ranks share the GPU; the wrong-device check is reported as
# SKIP there, and the timing is the PDL on/off comparison only (sharing distorts absolute times).
set -uo pipefail
cd "$(dirname "$0")/.."
source gpu/lib.sh
# AR4J_KERNELS_VARIANT=cu12: the program and library built with CUDA 12.4 (.gpu/native-cu12).
native_dir=.gpu/native
[[ "${AR4J_KERNELS_VARIANT:-}" == cu12 ]] && native_dir=.gpu/native-cu12
exec "$native_dir/ar4j_native_test" "$@"
