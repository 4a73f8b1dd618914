#!/bin/bash
# Runs the exit-path tests of 4043485 against the fixed library (ar4j_native_test_fixed) and the
# pre-fix library of 31e4072 (ar4j_native_test_prefix), one GPU, ranks sharing it.
#   ./run.sh LOGDIR
# Every run: timeout 240 s; stdout and stderr to LOGDIR/<program>.<ranks>.<test>.{out,err}; its exit
# code to .rc. A failing or crashing run never stops the script (exit codes: 0 all passed, 1 some
# check failed, 2 a CHECK_AR/CHECK_CUDA ended the process, 124/137 timed out, >128 killed by a signal).
# Runs:
#   fixed  --ranks 2 and 4: the whole --exits-only group in one process (as run-one-gpu-checks does)
#   prefix --ranks 2: the whole group in one process (it ends where the first test calls an entry
#          point the old ABI lacks through CHECK_AR), then every test alone (--only NAME: the filter
#          driver's option), so no test's exit hides another's result
#   prefix --ranks 4: every test alone
#   fixed  --ranks 2: every test alone too (the same command lines as prefix's; skip: FIXED_EACH=0)
# LOGDIR/summary.txt: one line per run.
set -u
D=$(cd "$(dirname "$0")" && pwd)
L=${1:?usage: run.sh LOGDIR}
mkdir -p "$L"
L=$(cd "$L" && pwd)
SUM="$L/summary.txt"
: > "$SUM"
TESTS=$("$D/ar4j_native_test_prefix" --list)

one() {  # program ranks test(all|NAME)
    local prog=$1 ranks=$2 t=$3 base="$L/$1.r$2.$3" extra=()
    [ "$t" != all ] && extra=(--only "$t")
    echo "== $prog --ranks $ranks ${extra[*]}"
    ( cd "$D" && timeout -k 20 240 "./$prog" --gpus 1 --ranks "$ranks" --exits-only "${extra[@]}" ) >"$base.out" 2>"$base.err"
    local rc=$?
    echo "$rc" >"$base.rc"
    local tally fails skips why
    tally=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$base.out" | tail -1)
    fails=$(grep -c '^FAIL ' "$base.out")
    skips=$(grep -c '^SKIP ' "$base.out")
    why=$(grep -v -m1 -e '^\[prefix shim\]' -e '^$' "$base.err" | cut -c1-220)  # the first line that is not a shim note
    printf '%-24s r%s %-27s rc=%-3s FAIL lines=%-3s SKIP=%-2s %s%s\n' "$prog" "$ranks" "$t" "$rc" "$fails" "$skips" \
        "${tally:-(no tally: process ended early)}" "${why:+ | stderr: $why}" | tee -a "$SUM"
}

uname -a >"$L/host.txt"; nvidia-smi >>"$L/host.txt" 2>&1
one ar4j_native_test_fixed 2 all
one ar4j_native_test_prefix 2 all
for t in $TESTS; do one ar4j_native_test_prefix 2 "$t"; done
one ar4j_native_test_fixed 4 all
for t in $TESTS; do one ar4j_native_test_prefix 4 "$t"; done
if [ "${FIXED_EACH:-1}" != 0 ]; then for t in $TESTS; do one ar4j_native_test_fixed 2 "$t"; done; fi
echo; echo "summary: $SUM"; cat "$SUM"
