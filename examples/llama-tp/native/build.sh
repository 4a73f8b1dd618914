#!/usr/bin/env bash
# Builds libar4j_llama_kernels.so, the Llama example's CUDA kernels behind
# include/ar4j_llama/kernels.h, into OUT_DIR, linked with the static CUDA runtime (no NEEDED
# libcudart: the library needs only the NVIDIA driver, like ar4j's own libar4j_custom_ar.so).
#
#   build.sh OUT_DIR          the library
#   build.sh OUT_DIR test     the library and the native test program OUT_DIR/ar4j_llama_kernels_test
#                             (run it on a GPU host: OUT_DIR/ar4j_llama_kernels_test)
#
# Environment:
#   NVCC            the compiler (default: /usr/local/cuda-13.0/bin/nvcc, then $CUDA_HOME/bin/nvcc,
#                   then nvcc on PATH, then /usr/local/cuda/bin/nvcc)
#   AR4J_GENCODE    the GPU architectures (default: sm_80, 86, 89, 90, 100, 120 + compute_120 PTX,
#                   the list of the cuda module), e.g. '-gencode=arch=compute_90,code=sm_90'
#   AR4J_PTXAS_VERBOSE=1   print ptxas' register and spill counts per kernel
# The library is rebuilt only when a source or header is newer than it, or NVCC, AR4J_GENCODE
# or AR4J_PTXAS_VERBOSE changed since it was built.
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 || ( $# -eq 2 && "$2" != "test" ) ]]; then
    echo "usage: $0 OUT_DIR [test]" >&2
    exit 2
fi
OUT_DIR=$1
WITH_TEST=${2:-}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if [[ -z "${NVCC:-}" ]]; then
    for candidate in /usr/local/cuda-13.0/bin/nvcc "${CUDA_HOME:-/nonexistent}/bin/nvcc" \
                     "$(command -v nvcc 2>/dev/null || true)" /usr/local/cuda/bin/nvcc; do
        if [[ -n "$candidate" && -x "$candidate" ]]; then NVCC=$candidate; break; fi
    done
fi
if [[ -z "${NVCC:-}" ]] || ! "$NVCC" --version >/dev/null 2>&1; then
    echo "ar4j-llama native: nvcc was not found. Install a CUDA 12.8+ or 13 toolkit and set NVCC=/path/to/nvcc," \
         "or build the example without native code (-Dar4j.native.skip=true)." >&2
    exit 1
fi

DEFAULT_GENCODE="-gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_86,code=sm_86 \
-gencode=arch=compute_89,code=sm_89 -gencode=arch=compute_90,code=sm_90 \
-gencode=arch=compute_100,code=sm_100 -gencode=arch=compute_120,code=sm_120 \
-gencode=arch=compute_120,code=compute_120"
# shellcheck disable=SC2206
GENCODE=(${AR4J_GENCODE:-$DEFAULT_GENCODE})

# No fast math: cosf/sinf/expf and divisions must round as PyTorch's CUDA kernels do.
FLAGS=(-O3 -std=c++17 -Xcompiler -fPIC -Xcompiler -fvisibility=hidden -Xcompiler -Wall
       -I"$HERE/include" --expt-relaxed-constexpr -lineinfo)
if [[ "${AR4J_PTXAS_VERBOSE:-0}" == "1" ]]; then FLAGS+=(-Xptxas -v); fi

LIB="$OUT_DIR/libar4j_llama_kernels.so"
OBJ_DIR="$OUT_DIR/obj"
UNITS=(status.cpp gather.cu rope.cu attention.cu elementwise.cu argmax_exchange.cu fill.cu linear.cu linear_ring.cu prefetch.cu prefill.cu prefill_attention.cu sample.cu
       device_memory.cpp)
mkdir -p "$OBJ_DIR"

# The compiler and flags of the last build: another NVCC or AR4J_GENCODE rebuilds everything.
STAMP="$OBJ_DIR/build.flags"
WANT_STAMP="$NVCC ${FLAGS[*]} ${GENCODE[*]}"
if [[ ! -e "$STAMP" || "$(cat "$STAMP")" != "$WANT_STAMP" ]]; then
    rm -f "$LIB" "$OUT_DIR/ar4j_llama_kernels_test"
fi

stale() {  # whether $1 is missing or older than any source or header
    [[ ! -e "$1" ]] && return 0
    local f
    for f in "$HERE"/src/* "$HERE"/include/ar4j_llama/* "$HERE/build.sh"; do
        [[ "$f" -nt "$1" ]] && return 0
    done
    return 1
}

if stale "$LIB"; then
    objects=()
    for unit in "${UNITS[@]}"; do
        obj="$OBJ_DIR/${unit%.*}.o"
        if [[ "$unit" == *.cpp ]]; then
            "$NVCC" "${FLAGS[@]}" -c -o "$obj" "$HERE/src/$unit"
        else
            "$NVCC" "${FLAGS[@]}" "${GENCODE[@]}" -c -o "$obj" "$HERE/src/$unit"
        fi
        objects+=("$obj")
    done
    "$NVCC" -shared -o "$LIB.tmp" "${objects[@]}" -cudart static -Xlinker --exclude-libs,ALL
    # Captured, then matched (a producer piped into grep -q may die of SIGPIPE under pipefail).
    dynamic_section=$(readelf -d "$LIB.tmp" 2>/dev/null || true)
    if [[ "$dynamic_section" == *NEEDED*libcudart* ]]; then
        echo "ar4j-llama native: $LIB links libcudart dynamically; expected the static runtime" >&2
        exit 1
    fi
    mv -f "$LIB.tmp" "$LIB"
    printf '%s' "$WANT_STAMP" > "$STAMP"
    echo "built $LIB"
fi

if [[ "$WITH_TEST" == "test" ]]; then
    TEST="$OUT_DIR/ar4j_llama_kernels_test"
    test_stale=0
    stale "$TEST" && test_stale=1
    for f in "$HERE"/test/* "$LIB"; do [[ "$f" -nt "$TEST" ]] && test_stale=1; done
    if [[ $test_stale == 1 ]]; then
        # The test links the library by path ($ORIGIN), so it exercises exactly the shipped ABI;
        # it has no kernels of its own (PTX only, JIT-compiled if ever needed).
        "$NVCC" -O2 -std=c++17 -Xcompiler -Wall -I"$HERE/include" -gencode=arch=compute_80,code=compute_80 \
            -o "$TEST" "$HERE/test/kernels_test.cu" -L"$OUT_DIR" -lar4j_llama_kernels \
            -Xlinker -rpath -Xlinker '$ORIGIN' -cudart static -ldl
        echo "built $TEST"
    fi
fi
