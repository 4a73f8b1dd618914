#!/usr/bin/env bash
# Regenerates the example's jextract bindings from the argfiles in jextract/:
#   dev.ar4j.examples.llama.cublas.bindings   <- cublas_api.h of the nvidia-cublas wheel (CUDA 13)
#   dev.ar4j.examples.llama.kernels.bindings  <- native/include/ar4j_llama/kernels.h (this example's kernels)
# The generated files are committed unedited; run this after changing an argfile or a header.
#
# Inputs (environment):
#   JEXTRACT        the jextract launcher (default: `jextract` on PATH)
#   CUDA_HOME       CUDA toolkit whose include/ holds driver_types.h, library_types.h, cuda_bf16.h
#                   (cublas_api.h includes them; default /usr/local/cuda)
#   CUBLAS_INCLUDE  directory holding cublas_api.h (default: nvidia/cu13/include of the wheel installed
#                   under ~/.cache/ar4j/cublas, e.g.
#                   python3 -m pip install --target ~/.cache/ar4j/cublas --no-deps nvidia-cublas)
#
# No library name or path is baked into the output (no --library): the example loads
# libcublas.so.13 and libar4j_llama_kernels.so with System.load before first use, and the
# generated code finds the symbols through SymbolLookup.loaderLookup().
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
argdir="$here/jextract"
out="$here/src/main/java"
logdir="$here/target/jextract"

die() { echo "regenerate.sh: $*" >&2; exit 1; }

jextract="${JEXTRACT:-$(command -v jextract || true)}"
[[ -n "$jextract" && -x "$jextract" ]] || die "no jextract: put one on PATH or set JEXTRACT=/path/to/jextract"

cuda_inc="${CUDA_HOME:-/usr/local/cuda}/include"
[[ -f "$cuda_inc/library_types.h" && -f "$cuda_inc/driver_types.h" ]] \
    || die "no CUDA headers in $cuda_inc (library_types.h, driver_types.h): set CUDA_HOME to a CUDA toolkit"

cublas_inc="${CUBLAS_INCLUDE:-$HOME/.cache/ar4j/cublas/nvidia/cu13/include}"
[[ -f "$cublas_inc/cublas_api.h" ]] \
    || die "no cublas_api.h in $cublas_inc: set CUBLAS_INCLUDE (python3 -m pip install --target DIR --no-deps nvidia-cublas; CUBLAS_INCLUDE=DIR/nvidia/cu13/include)"

kernels_header="$here/native/include/ar4j_llama/kernels.h"
[[ -f "$kernels_header" ]] || die "missing $kernels_header"

header_define() { # file macro -> value of '#define macro value'
    sed -n "s/^#define $2[[:space:]]\{1,\}\([0-9][0-9]*\).*/\1/p" "$1" | head -n 1
}

echo "jextract:      $jextract"
"$jextract" --version 2>&1 | sed 's/^/               /'
echo "cuBLAS header: $cublas_inc/cublas_api.h ($(header_define "$cublas_inc/cublas_api.h" CUBLAS_VER_MAJOR).$(header_define "$cublas_inc/cublas_api.h" CUBLAS_VER_MINOR).$(header_define "$cublas_inc/cublas_api.h" CUBLAS_VER_PATCH))"
echo "CUDA headers:  $cuda_inc (CUDART_VERSION $(header_define "$cuda_inc/cuda_runtime_api.h" CUDART_VERSION))"
echo "kernels:       $kernels_header (ABI $(header_define "$kernels_header" AR4J_LLAMA_ABI_VERSION))"

mkdir -p "$logdir"

# generate <package> <argfile> <header> [clang options...]
generate() {
    local pkg="$1" args="$2" header="$3"
    shift 3
    local dest="$out/${pkg//.//}"
    rm -rf "$dest"
    local log="$logdir/$args.log"
    if ! "$jextract" "@$argdir/$args" --output "$out" "$@" "$header" >"$log" 2>&1; then
        cat "$log" >&2
        die "jextract failed for $pkg (log: $log)"
    fi
    [[ -d "$dest" ]] || { cat "$log" >&2; die "jextract wrote nothing to $dest"; }
    echo "generated:     $pkg ($(find "$dest" -name '*.java' | wc -l) files; log: $log)"
}

generate dev.ar4j.examples.llama.cublas.bindings  cublas.args  "$cublas_inc/cublas_api.h" -I "$cublas_inc" -I "$cuda_inc"
generate dev.ar4j.examples.llama.kernels.bindings kernels.args "$kernels_header"

echo "done; check with: git status --porcelain -- '$here'"
