# Shared by the gpu/ scripts (sourced, not run): the environment every GPU process gets, the Java
# check and the project's version, read from pom.xml.
#   source "$(dirname "$0")/lib.sh"   # after cd to the repository root

gpu_script="$(basename "$0" .sh)"

# NVLink multicast stays off in every process (it can take a shared host's GPUs down). Ranks
# sharing one GPU in one process spin in kernels on many streams (their own, and each context's
# private one); with CUDA's default of 8 hardware queues a launch can queue behind a peer's
# spinning kernel until the kernel deadline (seen in the native fused test with 8 ranks).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_DEVICE_MAX_CONNECTIONS="${CUDA_DEVICE_MAX_CONNECTIONS:-32}"

# Java 25 or newer, or a message naming it and how to fix it (not a raw UnsupportedClassVersionError).
require_java() {  # $1: the java launcher, $2: how to fix it
  local text major=0
  text=$("$1" -version 2>&1) || { echo "$gpu_script: $1 does not run ($text). $2" >&2; exit 2; }
  [[ "$text" =~ version\ \"([0-9]+) ]] && major=${BASH_REMATCH[1]}
  (( major >= 25 )) || { echo "$gpu_script: ar4j needs Java 25 or newer, but $1 is Java $major. $2" >&2; exit 2; }
}

# The project's version: the <version> right after <artifactId>ar4j-parent</artifactId> in pom.xml.
ar4j_version() {
  local version
  version=$(sed -n '/<artifactId>ar4j-parent<\/artifactId>/{n;s|.*<version>\(.*\)</version>.*|\1|p;q}' pom.xml)
  [[ -n "$version" ]] || { echo "$gpu_script: cannot read the project version from $PWD/pom.xml" >&2; exit 2; }
  echo "$version"
}

# The class path of the project's jars that gpu/prepare.sh copied into .gpu/lib.
ar4j_jars() {
  local version
  version=$(ar4j_version) || exit 2
  echo ".gpu/lib/ar4j-runtime-$version.jar:.gpu/lib/ar4j-bindings-$version.jar:.gpu/lib/ar4j-cuda-$version.jar"
}

# The jlink'd runtime on the GPU host, checked.
gpu_java() {
  local java=.gpu/jre/bin/java
  [[ -x "$java" ]] || { echo "$gpu_script: $java missing; run gpu/prepare.sh on the build machine and carry .gpu" >&2; exit 2; }
  require_java "$java" "Rebuild .gpu/jre with gpu/prepare.sh under a JDK 25 (JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64) and carry .gpu again."
  echo "$java"
}
