#!/usr/bin/env bash
# The example's whole GPU check, on a GPU host with no Java or Maven, from what
# bin/gpu-prepare.sh put in examples/llama-tp/.gpu/ (carry that folder):
#   0. the kernels: native/test's program against a CPU reference, and reference/compare_kernels.py
#      against the transformers functions they stand in for;
#   1. reference/make_reference.py writes the transformers reference (PyTorch + transformers of the
#      host's Python; nothing is downloaded), unless AR4J_LLAMA_REFERENCE already holds one;
#   2. LlamaReferenceIT compares the engine with it at TP 1, 2, 4 (ranks sharing GPU 0);
#   3. ar4j-llama generate and bench runs: tiny (generate, verify check), llama3-8b at TP 1 and 2,
#      verify-7168 at TP 2 with --draft 3 (ranks sharing the GPU: functional figures, not a speed-up),
#      and reference/torch_decode_bench.py: the llama3-8b decode step in plain PyTorch, one CUDA
#      graph, for the engine-speed comparison at TP 1.
# Logs go to $OUT (or examples/llama-tp/.gpu/out). Exit 0 only when every step passed.
#   PYTHON   the Python with torch and transformers (default /opt/torch/.venv/bin/python3, else python3)
#   STEPS    which steps to run (default "kernels reference it generate bench")
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_DEVICE_MAX_CONNECTIONS="${CUDA_DEVICE_MAX_CONNECTIONS:-32}"
java=.gpu/jre/bin/java
[[ -x "$java" ]] || { echo "gpu-check: $java missing; run bin/gpu-prepare.sh on the build machine and carry .gpu" >&2; exit 2; }
python="${PYTHON:-}"
if [[ -z "$python" ]]; then
  python=python3
  [[ -x /opt/torch/.venv/bin/python3 ]] && python=/opt/torch/.venv/bin/python3
fi
logs="${OUT:-.gpu/out}"
mkdir -p "$logs"
reference="${AR4J_LLAMA_REFERENCE:-$logs/reference}"
steps="${STEPS:-kernels reference it generate bench}"
failed=()

step() {  # name, command...
  local name="$1"; shift
  echo "== $name: $*"
  local start=$SECONDS
  if "$@" >"$logs/$name.log" 2>&1; then
    echo "   ok ($((SECONDS - start)) s; log $logs/$name.log)"
  else
    echo "   FAILED ($((SECONDS - start)) s); the log's last lines:"
    tail -n 40 "$logs/$name.log" | sed 's/^/   | /'
    failed+=("$name")
  fi
}

llama() {
  JAVA_HOME="$PWD/.gpu/jre" AR4J_LLAMA_JAR="$PWD/.gpu/lib/ar4j-llama.jar" bin/ar4j-llama "$@"
}

for s in $steps; do
  case "$s" in
    kernels)
      step kernels-native .gpu/native/ar4j_llama_kernels_test
      step kernels-transformers "$python" reference/compare_kernels.py .gpu/native/libar4j_llama_kernels.so ;;
    reference)
      if [[ -f "$reference/index.json" ]]; then
        echo "== reference: $reference/index.json exists (kept)"
      else
        step reference "$python" reference/make_reference.py "$reference"
      fi ;;
    it)
      launchers=(.gpu/lib/junit-platform-console-standalone-*.jar)
      step it "$java" --enable-native-access=ALL-UNNAMED -Dar4j.llama.reference="$reference" \
        -jar "${launchers[0]}" execute --class-path ".gpu/test-classes:.gpu/lib/ar4j-llama.jar" \
        --include-tag gpu --select-class dev.ar4j.examples.llama.it.LlamaReferenceIT \
        --details=tree --details-theme=ascii --disable-banner ;;
    generate)
      step generate-tiny-tp2 llama --synthetic tiny --tp 2 --share-gpu --steps 32 --draft 3
      step generate-reference-tp2 llama --model "$reference/base/model" --tp 2 --share-gpu --prompt 1,2,3,4 --steps 16 ;;
    bench)
      step bench-llama3-8b-tp1 llama --synthetic llama3-8b --tp 1 --mode bench --comm ar4j,nccl
      step bench-torch-llama3-8b "$python" reference/torch_decode_bench.py --model llama3-8b --context 512
      step bench-llama3-8b-tp2 llama --synthetic llama3-8b --tp 2 --share-gpu --mode bench
      step bench-verify-7168-tp2 llama --synthetic verify-7168 --tp 2 --share-gpu --mode bench --draft 3 --steps 300 ;;
    *) echo "gpu-check: unknown step '$s' (kernels, reference, it, generate, bench)" >&2; exit 2 ;;
  esac
done
for f in "$logs"/bench-*.log; do [[ -f "$f" ]] && { echo "== $f"; grep -v '^rank .* \[' "$f" | tail -n 12; }; done
if (( ${#failed[@]} > 0 )); then
  echo "gpu-check: FAILED: ${failed[*]}"
  exit 1
fi
echo "gpu-check: every step passed"
