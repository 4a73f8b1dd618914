#!/usr/bin/env bash
# Runs the GPU integration tests (*IT, JUnit tag "gpu") on a GPU host that has no Java or
# Maven, from what gpu/prepare.sh put in .gpu/: the tests, system properties and environment of
# `mvn verify -Pgpu` (runtime/pom.xml), which runs them where Maven is installed. A missing GPU
# fails the run (ar4j.gpu.required).
#   gpu/run-its.sh                          # every GPU test
#   gpu/run-its.sh --select-class dev.ar4j.it.AllReduceMatrixIT
# Extra JVM options: AR4J_IT_JAVA_OPTS (e.g. "-Dar4j.matrix.quick=true -Dar4j.matrix.rounds=3").
set -uo pipefail
cd "$(dirname "$0")/.."
source gpu/lib.sh
export NCCL_SOCKET_IFNAME="${NCCL_SOCKET_IFNAME:-lo}"
java=$(gpu_java) || exit 2
cp=".gpu/test-classes:$(ar4j_jars)" || exit 2
launchers=(.gpu/lib/junit-platform-console-standalone-*.jar); launcher=${launchers[0]}
selection=("$@")
[[ ${#selection[@]} -eq 0 ]] && selection=(--scan-class-path)
# shellcheck disable=SC2086
exec "$java" --enable-native-access=ALL-UNNAMED -Dar4j.gpu.required=true ${AR4J_IT_JAVA_OPTS:-} \
  -jar "$launcher" execute --class-path "$cp" --include-tag gpu --include-classname '.*IT' \
  --details=summary --details-theme=ascii --disable-banner "${selection[@]}"
