#!/usr/bin/env bash
# The consumer check: builds .ci/consumer (imports ar4j-bom, depends on ar4j-runtime) against
# the artifacts in a file repository, offline, then runs it on the class path and on the module
# path, with no --add-modules. Called by .ci/run after the reactor is deployed there.
#   .ci/consumer/run.sh REPO_DIR VERSION COMMIT
set -euo pipefail
repo="$(cd "$1" && pwd)"; version="$2"; commit="$3"
cd "$(dirname "$0")"
mvn_consumer=(mvn -B -q -ntp -o -Daether.offline.protocols=file -Dar4j.ci.repo="file://$repo" -Dar4j.version="$version")
"${mvn_consumer[@]}" clean package
"${mvn_consumer[@]}" dependency:build-classpath -Dmdep.outputFile=target/deps.txt
deps="$(cat target/deps.txt)"

# The class path: compiled again without the module descriptor, as class-path code is.
mkdir -p target/classpath-classes
javac --release 25 -d target/classpath-classes -cp "$deps" src/main/java/dev/ar4j/consumer/Main.java
java --enable-native-access=ALL-UNNAMED -cp "target/classpath-classes:$deps" \
  dev.ar4j.consumer.Main "$version" "$commit" classpath

# The module path: the consumer's module requires dev.ar4j.runtime, which requires dev.ar4j.cuda.
java --enable-native-access=dev.ar4j.runtime,dev.ar4j.bindings -p "target/classes:$deps" \
  -m dev.ar4j.consumer/dev.ar4j.consumer.Main "$version" "$commit" modulepath

# Without the ar4j-cuda jar: on the class path, the loader's message names the jar; on the module
# path, the JVM refuses to start, naming the module.
deps_without_cuda=$(tr ':' '\n' <<<"$deps" | sed '/ar4j-cuda-/d' | paste -sd: -)
[[ "$deps_without_cuda" != "$deps" ]] || { echo "consumer: no ar4j-cuda jar among the dependencies: $deps" >&2; exit 1; }
java --enable-native-access=ALL-UNNAMED -cp "target/classpath-classes:$deps_without_cuda" \
  dev.ar4j.consumer.Main without-cuda-jar
if refusal=$(java -p "target/classes:$deps_without_cuda" -m dev.ar4j.consumer/dev.ar4j.consumer.Main x x x 2>&1); then
  echo "consumer: the module path without dev.ar4j.cuda started: $refusal" >&2; exit 1
fi
[[ "$refusal" == *"Module dev.ar4j.cuda not found, required by dev.ar4j.runtime"* ]] \
  || { echo "consumer: unexpected failure without dev.ar4j.cuda: $refusal" >&2; exit 1; }
echo "without dev.ar4j.cuda on the module path, the JVM refuses: Module dev.ar4j.cuda not found, required by dev.ar4j.runtime"
