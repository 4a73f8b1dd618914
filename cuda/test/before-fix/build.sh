#!/bin/bash
# Builds the before-fix comparison (README.md) into OUTDIR:
#   ar4j_native_test_prefix + libar4j_custom_ar_old.so    tests 4043485, library 31e4072, shim
#   ar4j_native_test_fixed  + libar4j_custom_ar_fixed.so  tests 4043485, library 4043485
#   run.sh                                                 runs them (run.sh LOGDIR)
# Usage: cuda/test/before-fix/build.sh OUTDIR        (from anywhere inside the repository)
# Env:   AR4J_GENCODE  nvcc -gencode list (default: sm_90 machine code only)
#        NVCC          the compiler (default: nvcc on PATH; /usr/local/cuda-13.0/bin comes first
#                      on PATH where it exists). Each tree's Makefile checks that it is CUDA 13.
#        KEEP_WORK=1   keep the temporary work directory (its path is printed)
# Both trees come from git (git archive), not from the work tree: the repository needs the full
# history. The libraries are built by each tree's own Makefile; the programs with the flags of
# 4043485's Makefile ($(TEST) rule), the driver in place of native_test.cu (which it includes
# unchanged), and RUNPATH $ORIGIN with the library under a name of its own next to each program.
set -euo pipefail

OLD=31e4072    # the kernels and C sources before 77e18b8 (those of its parent aa42b15)
FIXED=4043485  # 77e18b8 + 9b4f794 and the exit-path tests

die() { echo "build.sh: $*" >&2; exit 1; }

[ $# -eq 1 ] || die "usage: cuda/test/before-fix/build.sh OUTDIR"
OUT_ARG=$1
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(git -C "$HERE" rev-parse --show-toplevel 2>/dev/null) || die "not inside a git repository: $HERE"

for c in "$OLD" "$FIXED"; do
    if ! git -C "$ROOT" rev-parse --quiet --verify "$c^{commit}" >/dev/null; then
        if [ "$(git -C "$ROOT" rev-parse --is-shallow-repository)" = true ]; then
            die "commit $c is missing: this is a shallow clone, and the build needs the full history: git fetch --unshallow"
        fi
        die "commit $c is missing from $ROOT: the build needs the full history (git fetch --unshallow, or fetch the branch that holds it)"
    fi
done

[ -d /usr/local/cuda-13.0/bin ] && export PATH=/usr/local/cuda-13.0/bin:$PATH
NVCC=${NVCC:-$(command -v nvcc || true)}
[ -n "$NVCC" ] || die "no nvcc: put it on PATH or set NVCC"
G=${AR4J_GENCODE:--gencode=arch=compute_90,code=sm_90}

mkdir -p "$OUT_ARG"
OUT=$(cd "$OUT_ARG" && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/ar4j-before-fix.XXXXXX")
if [ "${KEEP_WORK:-0}" = 1 ]; then
    echo "work directory (kept): $W"
else
    trap 'rm -rf "$W"' EXIT
fi

echo "== sources: $OLD -> $W/old, $FIXED -> $W/fixed"
mkdir -p "$W/old" "$W/fixed"
git -C "$ROOT" archive "$OLD" cuda/Makefile cuda/include cuda/src | tar -x -C "$W/old" ||
    die "git archive $OLD failed (the build needs the full history: git fetch --unshallow)"
git -C "$ROOT" archive "$FIXED" cuda/Makefile cuda/include cuda/src cuda/test | tar -x -C "$W/fixed" ||
    die "git archive $FIXED failed (the build needs the full history: git fetch --unshallow)"

echo "== libraries ($NVCC, $G)"
for v in old fixed; do
    (cd "$W/$v/cuda" && make -j2 lib NVCC="$NVCC" AR4J_GENCODE="$G" \
        BUILD_DIR="$W/build-$v" LIB_DIR="$W/build-$v" OBJ_DIR="$W/build-$v/obj")
done

echo "== test programs"
T=$W/fixed/cuda/test
SRCS=("$HERE/driver/filter_driver.cu" "$T/native_correctness.cu" "$T/native_containment.cu" "$T/native_timing.cu"
      "$T/native_exits.cu" "$T/native_slots.cu")
mkdir -p "$W/lib-old" "$W/lib-fixed" "$W/out"
# Each program links a library whose (SONAME-less) file name is unique in OUTDIR.
cp "$W/build-old/libar4j_custom_ar.so" "$W/lib-old/libar4j_custom_ar_old.so"
cp "$W/build-fixed/libar4j_custom_ar.so" "$W/lib-fixed/libar4j_custom_ar_fixed.so"
# prefix: the old headers through the shim (shim/include first; the work directory last, for the
# shim's "old/cuda/..." includes)
# shellcheck disable=SC2086  # $G: a list of flags
"$NVCC" -O2 -std=c++20 -I"$HERE/shim/include" -I"$T" -I"$W" $G -o "$W/out/ar4j_native_test_prefix" "${SRCS[@]}" \
    "$HERE/shim/prefix_shim.cpp" -L"$W/lib-old" -lar4j_custom_ar_old -Xlinker -rpath -Xlinker '$ORIGIN' \
    -cudart static -lpthread
# fixed: 4043485's own include/ and src/ (as its Makefile: -Iinclude -Isrc)
# shellcheck disable=SC2086
"$NVCC" -O2 -std=c++20 -I"$W/fixed/cuda/include" -I"$W/fixed/cuda/src" -I"$T" $G -o "$W/out/ar4j_native_test_fixed" \
    "${SRCS[@]}" -L"$W/lib-fixed" -lar4j_custom_ar_fixed -Xlinker -rpath -Xlinker '$ORIGIN' -cudart static -lpthread
cp "$W/lib-old/libar4j_custom_ar_old.so" "$W/lib-fixed/libar4j_custom_ar_fixed.so" "$W/out/"
strip "$W/out/ar4j_native_test_prefix" "$W/out/ar4j_native_test_fixed"
strip --strip-unneeded "$W/out/libar4j_custom_ar_old.so" "$W/out/libar4j_custom_ar_fixed.so"

cp "$W/out/ar4j_native_test_prefix" "$W/out/ar4j_native_test_fixed" "$W/out/libar4j_custom_ar_old.so" \
    "$W/out/libar4j_custom_ar_fixed.so" "$OUT/"
cp "$HERE/run.sh" "$OUT/run.sh"
chmod +x "$OUT/run.sh"
echo "== built in $OUT: run it on a GPU host with $OUT/run.sh LOGDIR (README.md)"
ls -l "$OUT"
