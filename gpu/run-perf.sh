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
source gpu/lib.sh
export NCCL_SOCKET_IFNAME="${NCCL_SOCKET_IFNAME:-lo}"
java=$(gpu_java) || exit 2
jar=.gpu/lib/benchmarks.jar
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
