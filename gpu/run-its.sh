#!/usr/bin/env bash
# Runs the GPU integration tests (*IT, JUnit tag "gpu") on a GPU host that has no Java or
# Maven, from what gpu/prepare.sh put in .gpu/. A missing GPU fails the run (ar4j.gpu.required).
#   gpu/run-its.sh                          # every GPU test
#   gpu/run-its.sh --select-class dev.ar4j.it.AllReduceMatrixIT
# Extra JVM options: AR4J_IT_JAVA_OPTS (e.g. "-Dar4j.matrix.quick=true -Dar4j.matrix.rounds=3").
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# Ranks sharing one GPU in one process spin in kernels on many streams (their own, and each
# context's private one); with CUDA's default of 8 hardware queues a launch can queue behind a
# peer's spinning kernel until the kernel deadline (seen in the native fused test with 8 ranks).
export CUDA_DEVICE_MAX_CONNECTIONS="${CUDA_DEVICE_MAX_CONNECTIONS:-32}"
java=.gpu/jre/bin/java
[[ -x "$java" ]] || { echo "run-its: $java missing; run gpu/prepare.sh on the build machine and carry .gpu" >&2; exit 2; }
# Java 25 or newer, or a message naming it and JAVA_HOME (not a raw UnsupportedClassVersionError).
require_java() {  # $1: the java launcher, $2: how to fix it
  local text major=0
  text=$("$1" -version 2>&1) || { echo "run-its: $1 does not run ($text). $2" >&2; exit 2; }
  [[ "$text" =~ version\ \"([0-9]+) ]] && major=${BASH_REMATCH[1]}
  (( major >= 25 )) || { echo "run-its: ar4j needs Java 25 or newer, but $1 is Java $major. $2" >&2; exit 2; }
}
require_java "$java" "Rebuild .gpu/jre with gpu/prepare.sh under a JDK 25 (JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64) and carry .gpu again."
cp=".gpu/test-classes:$(ls .gpu/lib/ar4j-*.jar | tr '\n' ':')"
launchers=(.gpu/lib/junit-platform-console-standalone-*.jar); launcher=${launchers[0]}
selection=("$@")
[[ ${#selection[@]} -eq 0 ]] && selection=(--scan-class-path)
# shellcheck disable=SC2086
exec "$java" --enable-native-access=ALL-UNNAMED -Dar4j.gpu.required=true ${AR4J_IT_JAVA_OPTS:-} \
  -jar "$launcher" execute --class-path "$cp" --include-tag gpu --include-classname '.*IT' \
  --details=summary --details-theme=ascii --disable-banner "${selection[@]}"
