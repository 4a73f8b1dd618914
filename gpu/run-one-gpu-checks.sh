#!/usr/bin/env bash
# Every check that one GPU allows, in one go (after gpu/prepare.sh on the build machine), each
# step bounded by `timeout` and logged to $OUT (default ./one-gpu-out):
#   native   ar4j_native_test with 2 ranks sharing GPU 0 (quick matrix, containment tests, exit paths)
#   exits    ar4j_native_test --exits-only with 4 ranks sharing GPU 0: the kernels' exit paths
#            (peers that gave up and overwrote their inputs mid-launch, a final barrier that gives
#            up, poison passed on by the kernels, ar4j_poison past a failing copy, a failed captured
#            launch, unregistering against live graphs, a replay before registration, size limits)
#   fused    ar4j_fused_test --ranks 2 --quick (fused all-reduce + residual + RMSNorm against the
#            unfused path, bitwise)
#   variants the kernel variants (ar4j_set_variants, issue 21), 2 ranks sharing GPU 0: the whole
#            quick native test with every variant on (0x4000001f: the early trigger forced on
#            although the ranks share the GPU; containment and exit-path tests included), then
#            group 8 alone (the variants' API and agreement check, the pass-on checks, each
#            variant's quick matrix, graph and PDL chain), group 8's timing alone (each variant
#            against the default, CUDA graphs of 50, medians: '# variant timing'), then the fused
#            test with the grid-wide push phase (4) and with it plus clear-on-read and the early
#            trigger (0x40000017), and the pass-on
#   rmsnorm  ar4j_rmsnorm_test (residual add + RMSNorm against a host reference; decode shapes,
#            16-byte against element kernel bitwise, PDL behind a slow producer eager and in a graph)
#   its      the GPU integration tests that need one GPU (failure containment and the fused
#            all-reduce + residual + RMSNorm with 2 ranks on GPU 0 in both process models, NCCL
#            world size 1 and the missing-rank timeout, a world-size-1 communicator without NCCL, a split of 4 ranks into two sub-groups, ...;
#            FailureContainmentOneJvmIT's close race at 400 rounds unless AR4J_IT_JAVA_OPTS says)
#   timing   dev.ar4j.it.FastPathTiming: graph time per all-reduce with and without the
#            watchdog, PDL on and off, 2 ranks sharing GPU 0
#   consumer the consumer program (.gpu/consumer, compiled by the caller) on the class path and
#            the module path, no --add-modules
#   race     (not in the default list) 10,000 rounds of abort()/close() racing allReduce() in
#            AR4J_RACE_JVMS (3) JVMs at once, 2 ranks sharing GPU 0 in each (CloseRaceChild)
#   gpu/run-one-gpu-checks.sh [step...]      # default: every step
# Extra JVM options for the ITs: AR4J_IT_JAVA_OPTS. Exit 0 only when every step passed.
set -uo pipefail
cd "$(dirname "$0")/.."
source gpu/lib.sh
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
out="${OUT:-./one-gpu-out}"
mkdir -p "$out"
java=.gpu/jre/bin/java
version=$(ar4j_version) || exit 2
jars=$(ar4j_jars) || exit 2
steps=("$@")
[[ ${#steps[@]} -eq 0 ]] && steps=(native exits fused variants rmsnorm its timing consumer)
# AR4J_KERNELS_VARIANT=cu12: the native programs built with CUDA 12.4 (.gpu/native-cu12); the JVM
# steps read the same variable and load the jar's cu12 kernels.
native_dir=.gpu/native
[[ "${AR4J_KERNELS_VARIANT:-}" == cu12 ]] && native_dir=.gpu/native-cu12
failed=()
step() {  # name seconds command...
  local name="$1" limit="$2"; shift 2
  echo "=== $name (limit ${limit}s): $*"
  local start=$SECONDS
  timeout --kill-after=10 "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  echo "=== $name: exit $rc after $((SECONDS - start)) s"
  tail -n 25 "$out/$name.log"
  [[ $rc -eq 0 ]] || failed+=("$name (exit $rc)")
}
for s in "${steps[@]}"; do
  case "$s" in
    native)   step native 150 "$native_dir"/ar4j_native_test --gpus 1 --ranks 2 --quick ;;
    exits)    step exits 90 "$native_dir"/ar4j_native_test --gpus 1 --ranks 4 --exits-only ;;
    fused)    step fused 120 "$native_dir"/ar4j_fused_test --ranks 2 --quick ;;
    variants) step variants-all 150 "$native_dir"/ar4j_native_test --gpus 1 --ranks 2 --quick --no-pdl-timing \
                --variants 0x4000001f
              step variants-matrix 150 "$native_dir"/ar4j_native_test --gpus 1 --ranks 2 --variant-matrix-only \
                --no-variant-timing
              step variants-timing 120 "$native_dir"/ar4j_native_test --gpus 1 --ranks 2 --timing-only --no-pdl-timing \
                --variant-matrix
              step variants-fused 120 "$native_dir"/ar4j_fused_test --ranks 2 --quick --variants 4
              step variants-fused-all 120 "$native_dir"/ar4j_fused_test --ranks 2 --quick --variants 0x40000017 ;;
    rmsnorm)  step rmsnorm 60 "$native_dir"/ar4j_rmsnorm_test ;;
    its)      # The race step runs the 10,000 close-race rounds; here FailureContainmentOneJvmIT's own
              # race runs 400 (its default of 10,000 alone outlasts the step's limit).
              AR4J_IT_JAVA_OPTS="${AR4J_IT_JAVA_OPTS:--Dar4j.race.rounds=400 -Dar4j.race.seconds=120}" \
              step its 330 gpu/run-its.sh \
                --select-class dev.ar4j.it.FailureContainmentOneJvmIT --select-class dev.ar4j.it.PeerFailureTwoJvmIT \
                --select-class dev.ar4j.it.NcclMissingRankIT --select-class dev.ar4j.internal.kernels.ResidualRmsNormIT \
                --select-class dev.ar4j.internal.nccl.NcclSingleGpuIT --select-class dev.ar4j.internal.nccl.NcclInitTimeoutIT \
                --select-class dev.ar4j.cuda.CudaSingleGpuIT --select-class dev.ar4j.it.CommunicatorSplitIT \
                --select-class dev.ar4j.it.FusedNormOneJvmIT \
                --select-class dev.ar4j.it.FusedNormTwoJvmIT --select-class dev.ar4j.it.BuildAbortOneGpuIT \
                --select-class dev.ar4j.it.WorldSizeOneIT ;;
    timing)   step timing 180 "$java" --enable-native-access=ALL-UNNAMED -cp ".gpu/test-classes:$jars" \
                dev.ar4j.it.FastPathTiming 1024 43008 ;;
    consumer) # The GPU host has no unzip: read the manifest with Python's zipfile.
              commit=$(python3 -c 'import sys, zipfile; m = zipfile.ZipFile(sys.argv[1]).read("META-INF/MANIFEST.MF").decode(); print(next((l.split(":", 1)[1].strip() for l in m.splitlines() if l.startswith("Ar4j-Commit:")), ""))' ".gpu/lib/ar4j-runtime-$version.jar")
              step consumer-classpath 60 "$java" --enable-native-access=ALL-UNNAMED -cp ".gpu/consumer/cp:$jars" \
                dev.ar4j.consumer.Main "$version" "$commit" classpath
              step consumer-modulepath 60 "$java" --enable-native-access=dev.ar4j.runtime,dev.ar4j.bindings \
                -p ".gpu/consumer/mod:$jars" -m dev.ar4j.consumer/dev.ar4j.consumer.Main "$version" "$commit" modulepath ;;
    race)     # AR4J_RACE_JVMS JVMs at once (default 3), each CloseRaceChild with its own seed, together
              # AR4J_RACE_ROUNDS rounds (default 10000) of abort/close racing allReduce, 2 ranks on GPU 0.
              jvms=${AR4J_RACE_JVMS:-3}; total=${AR4J_RACE_ROUNDS:-10000}; per=$(( (total + jvms - 1) / jvms ))
              pids=()
              for ((j = 0; j < jvms; j++)); do
                timeout --kill-after=10 $(( ${AR4J_RACE_SECONDS:-400} + 50 )) "$java" --enable-native-access=ALL-UNNAMED -cp ".gpu/test-classes:$jars" \
                  dev.ar4j.it.CloseRaceChild "$per" "$((20261201 + j))" "${AR4J_RACE_SECONDS:-400}" >"$out/race-$j.log" 2>&1 &
                pids+=($!)
              done
              echo "=== race: $jvms JVMs x $per rounds"
              race_failed=0
              for ((j = 0; j < jvms; j++)); do
                wait "${pids[$j]}" || race_failed=1
                grep -h "RESULT\|HUNG\|FIRST UNEXPECTED\|fatal error\|SIGSEGV" "$out/race-$j.log"
              done
              [[ $race_failed -eq 0 ]] || failed+=("race") ;;
    *) echo "run-one-gpu-checks: unknown step '$s' (native, exits, fused, variants, rmsnorm, its, timing, consumer, race)" >&2; exit 2 ;;
  esac
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "run-one-gpu-checks: failed: ${failed[*]}"
  exit 1
fi
echo "run-one-gpu-checks: every step passed"
