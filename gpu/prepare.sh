#!/usr/bin/env bash
# Prepares .gpu/ (git-ignored) for a GPU host that has no Java or Maven: the native test
# program and kernels, the project's jars and test classes, the JUnit console launcher and a
# jlink'd Java runtime. Run on the build machine, then carry .gpu to the GPU host and run
# gpu/run-native.sh or gpu/run-its.sh there.
#   gpu/prepare.sh            # everything
#   gpu/prepare.sh native     # only the native test program
set -euo pipefail
cd "$(dirname "$0")/.."
: "${JAVA_HOME:=/usr/lib/jvm/temurin-25-jdk-amd64}"
export JAVA_HOME PATH="$JAVA_HOME/bin:$PATH"
source gpu/lib.sh
require_java "$JAVA_HOME/bin/java" "Point JAVA_HOME at a JDK 25 or newer (the jlink'd runtime for the GPU host is made from it), e.g. export JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64"
what="${1:-all}"
out=.gpu
mkdir -p "$out/native" "$out/lib"

# Native test program and library (all architectures, as shipped).
make -s -C cuda BUILD_DIR="$PWD/$out/native" LIB_DIR="$PWD/$out/native" OBJ_DIR="$PWD/cuda/target/gpu-obj" all
# The same with the cu12 variant (CUDA 12.4, from cuda/toolchains/cuda12.sh, cached), into
# .gpu/native-cu12: gpu/run-native.sh and gpu/run-one-gpu-checks.sh take it with AR4J_KERNELS_VARIANT=cu12.
nvcc12=$(cuda/toolchains/cuda12.sh)
make -s -C cuda VARIANT=cu12 NVCC="$nvcc12" BUILD_DIR="$PWD/$out/native-cu12" LIB_DIR="$PWD/$out/native-cu12" \
  OBJ_DIR="$PWD/cuda/target/gpu-obj-cu12" all
[[ "$what" == native ]] && exit 0

# Jars and test classes.
# HEAD's id for the manifests, also when HEAD is a merge (see pom.xml, ar4j.git.commit.id).
mvn -B -ntp -q -Dar4j.git.commit.id="$(git rev-parse HEAD 2>/dev/null || echo unknown)" -Dar4j.nvcc.cu12="$nvcc12" \
    -DskipTests -Dmaven.javadoc.skip=true -Dmaven.source.skip=true package
rm -f "$out"/lib/ar4j-*-sources.jar "$out"/lib/ar4j-*-javadoc.jar
version=$(ar4j_version)
for module in cuda bindings runtime; do
  cp "$module/target/ar4j-$module-$version.jar" "$out/lib/"   # not the -sources/-javadoc jars
done
rm -rf "$out/test-classes" && cp -r runtime/target/test-classes "$out/test-classes"
if [[ -f benchmarks/target/benchmarks.jar ]]; then cp benchmarks/target/benchmarks.jar "$out/lib/"; fi
junit_platform=1.14.1
if [[ ! -f "$out/lib/junit-platform-console-standalone-$junit_platform.jar" ]]; then
  mvn -B -ntp -q dependency:copy -Dartifact=org.junit.platform:junit-platform-console-standalone:$junit_platform \
      -DoutputDirectory="$out/lib"
fi

# A small Java runtime (the GPU host has none).
if [[ ! -x "$out/jre/bin/java" ]]; then
  jlink --add-modules java.base,java.logging,java.management,jdk.management,jdk.unsupported,jdk.zipfs \
        --strip-debug --no-header-files --no-man-pages --compress zip-9 --output "$out/jre"
fi
du -sh "$out"
