#!/usr/bin/env bash
# Runs ar4j-perf on a GPU host that has no Java or Maven, from what gpu/prepare.sh put in .gpu/
# (the jlink'd runtime .gpu/jre and the shaded .gpu/lib/benchmarks.jar). Arguments go to ar4j-perf.
# Outputs (CSV, JSON; the PNG where the runtime has java.desktop) go to $OUT if set, else
# ./ar4j-perf-out (a later --out-dir, --csv, --json or --png wins).
#   gpu/run-perf.sh -b 1K -e 64M -f 2 -d bf16            # the sweep, CUDA graphs, against NCCL
#   gpu/run-perf.sh -b 1K -e 64M -f 2 -d bf16 --both      # graph and eager
#   gpu/run-perf.sh --scenario verify                     # 122 x 43008 B in one graph, per pass
#   gpu/run-perf.sh --threads                             # one JVM driving every GPU
#   gpu/run-perf.sh jmh EagerAllReduce                    # JMH (arguments go to JMH; results to jmh.json)
# Extra JVM options for the worker JVMs: AR4J_PERF_JAVA_OPTS (e.g. "-Xmx8g").
set -uo pipefail
cd "$(dirname "$0")/.."
# NVLink multicast stays off in every process (it can take a shared host's GPUs down).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export NCCL_SOCKET_IFNAME="${NCCL_SOCKET_IFNAME:-lo}"
# Ranks sharing one GPU (--share-gpu) spin in kernels on many streams; with CUDA's default of 8
# hardware queues a launch can queue behind a peer's spinning kernel until the kernel deadline.
export CUDA_DEVICE_MAX_CONNECTIONS="${CUDA_DEVICE_MAX_CONNECTIONS:-32}"
java=.gpu/jre/bin/java
jar=.gpu/lib/benchmarks.jar
[[ -x "$java" ]] || { echo "run-perf: $java missing; run gpu/prepare.sh on the build machine and carry .gpu" >&2; exit 2; }
# Java 25 or newer, or a message naming it and JAVA_HOME (not a raw UnsupportedClassVersionError).
require_java() {  # $1: the java launcher, $2: how to fix it
  local text major=0
  text=$("$1" -version 2>&1) || { echo "run-perf: $1 does not run ($text). $2" >&2; exit 2; }
  [[ "$text" =~ version\ \"([0-9]+) ]] && major=${BASH_REMATCH[1]}
  (( major >= 25 )) || { echo "run-perf: ar4j needs Java 25 or newer, but $1 is Java $major. $2" >&2; exit 2; }
}
require_java "$java" "Rebuild .gpu/jre with gpu/prepare.sh under a JDK 25 (JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64) and carry .gpu again."
[[ -f "$jar" ]] || { echo "run-perf: $jar missing; run gpu/prepare.sh on the build machine (it copies benchmarks/target/benchmarks.jar) and carry .gpu" >&2; exit 2; }
out="${OUT:-./ar4j-perf-out}"
mkdir -p "$out"

if [[ "${1:-}" == jmh ]]; then
  shift
  java_modules=$("$java" --list-modules)
  if [[ $'\n'"$java_modules" != *$'\n'java.management@* ]]; then
    echo "run-perf: JMH needs the java.management module, which $java lacks; add it to the jlink --add-modules list of gpu/prepare.sh" >&2
    exit 2
  fi
  exec "$java" --enable-native-access=ALL-UNNAMED -jar "$jar" -rf json -rff "$out/jmh.json" "$@"
fi

exec "$java" --enable-native-access=ALL-UNNAMED -Djava.awt.headless=true -cp "$jar" \
  dev.ar4j.benchmarks.perf.Ar4jPerf --out-dir "$out" "$@"
