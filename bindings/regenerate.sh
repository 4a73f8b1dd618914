#!/usr/bin/env bash
# Regenerates the jextract bindings under bindings/src/main/java/dev/ar4j/bindings/ from the
# argfiles in bindings/jextract/. The generated files are committed unedited; run this after
# changing an argfile or moving to new headers, then commit the result.
#
# Inputs (environment):
#   JEXTRACT      the jextract launcher to run (default: `jextract` on PATH)
#   CUDA_HOME     CUDA toolkit with include/cuda_runtime_api.h and include/cuda.h
#                 (default: /usr/local/cuda)
#   NCCL_INCLUDE  directory holding nccl.h (default: the first nvidia/nccl/include found in the
#                 site-packages of $VIRTUAL_ENV, $CONDA_PREFIX, /opt/torch/.venv, ~/.local and the
#                 system Pythons, then /usr/include)
#
# Run twice on the same headers, it writes the same bytes: `git status --porcelain bindings/`
# stays empty. Library names and paths are not baked into the output (no --library): the runtime
# (dev.ar4j.internal.platform.NativeLibraries) loads each library with System.load before first use and
# the generated code finds the symbols through SymbolLookup.loaderLookup().
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
argdir="$here/jextract"
out="$here/src/main/java"
logdir="$here/target/jextract"

die() { echo "regenerate.sh: $*" >&2; exit 1; }

jextract="${JEXTRACT:-}"
if [[ -z "$jextract" ]]; then
    jextract="$(command -v jextract || true)"
fi
[[ -n "$jextract" && -x "$jextract" ]] || die "no jextract: put one on PATH or set JEXTRACT=/path/to/jextract (https://jdk.java.net/jextract/ or built from github.com/openjdk/jextract)"

cuda_home="${CUDA_HOME:-/usr/local/cuda}"
cuda_inc="$cuda_home/include"
[[ -f "$cuda_inc/cuda_runtime_api.h" && -f "$cuda_inc/cuda.h" ]] \
    || die "no CUDA headers in $cuda_inc (cuda_runtime_api.h, cuda.h): set CUDA_HOME to a CUDA toolkit"

find_nccl_include() {
    local roots=()
    [[ -n "${VIRTUAL_ENV:-}" ]] && roots+=("$VIRTUAL_ENV")
    [[ -n "${CONDA_PREFIX:-}" ]] && roots+=("$CONDA_PREFIX")
    roots+=(/opt/torch/.venv "$HOME/.local" /usr/local /usr)
    local root dir
    for root in "${roots[@]}"; do
        for dir in "$root"/lib/python3*/site-packages/nvidia/nccl/include \
                   "$root"/lib/python3*/dist-packages/nvidia/nccl/include \
                   "$root"/lib/python3/dist-packages/nvidia/nccl/include; do
            if [[ -f "$dir/nccl.h" ]]; then
                echo "$dir"
                return 0
            fi
        done
    done
    if [[ -f /usr/include/nccl.h ]]; then
        echo /usr/include
        return 0
    fi
    return 1
}

nccl_inc="${NCCL_INCLUDE:-}"
if [[ -z "$nccl_inc" ]]; then
    nccl_inc="$(find_nccl_include)" \
        || die "nccl.h not found in any Python site-packages/nvidia/nccl/include nor /usr/include: set NCCL_INCLUDE (e.g. pip install --target DIR nvidia-nccl-cu13; NCCL_INCLUDE=DIR/nvidia/nccl/include)"
fi
[[ -f "$nccl_inc/nccl.h" ]] || die "NCCL_INCLUDE=$nccl_inc holds no nccl.h"

customar_header="$repo/cuda/include/ar4j/custom_all_reduce.h"
[[ -f "$customar_header" ]] || die "missing $customar_header"
rmsnorm_header="$repo/cuda/include/ar4j/residual_rmsnorm.h"
[[ -f "$rmsnorm_header" ]] || die "missing $rmsnorm_header"

header_define() { # file macro -> value of '#define macro value'
    sed -n "s/^#define $2[[:space:]]\{1,\}\([0-9][0-9]*\).*/\1/p" "$1" | head -n 1
}

echo "jextract:      $jextract"
"$jextract" --version 2>&1 | sed 's/^/               /'
echo "CUDA headers:  $cuda_inc (CUDART_VERSION $(header_define "$cuda_inc/cuda_runtime_api.h" CUDART_VERSION), CUDA_VERSION $(header_define "$cuda_inc/cuda.h" CUDA_VERSION))"
echo "NCCL header:   $nccl_inc/nccl.h ($(header_define "$nccl_inc/nccl.h" NCCL_MAJOR).$(header_define "$nccl_inc/nccl.h" NCCL_MINOR).$(header_define "$nccl_inc/nccl.h" NCCL_PATCH))"
echo "ar4j header:   $customar_header"

mkdir -p "$logdir"

# generate <package-dir> <argfile> <header> [clang options...]
generate() {
    local pkg="$1" args="$2" header="$3"
    shift 3
    local dest="$out/dev/ar4j/bindings/$pkg"
    rm -rf "$dest"
    local log="$logdir/$pkg.log"
    if ! "$jextract" "@$argdir/$args" --output "$out" "$@" "$header" >"$log" 2>&1; then
        cat "$log" >&2
        die "jextract failed for $pkg (log: $log)"
    fi
    [[ -d "$dest" ]] || { cat "$log" >&2; die "jextract wrote nothing to $dest"; }
    local skipped
    skipped="$(grep -c 'warning: Skipping' "$log" || true)"
    echo "generated:     dev.ar4j.bindings.$pkg ($(find "$dest" -name '*.java' | wc -l) files; $skipped 'Skipping' warnings for unsupported or opaque types, see $log)"
}

generate cudart   cudart.args   "$cuda_inc/cuda_runtime_api.h" -I "$cuda_inc"
generate cudadrv  cudadrv.args  "$cuda_inc/cuda.h"             -I "$cuda_inc"
generate nccl     nccl.args     "$nccl_inc/nccl.h"             -I "$nccl_inc" -I "$cuda_inc"
generate customar customar.args "$customar_header"
generate rmsnorm  rmsnorm.args  "$rmsnorm_header" -I "$repo/cuda/include"

echo "done; check with: git status --porcelain -- '$here'"
