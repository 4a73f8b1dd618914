#!/usr/bin/env bash
# Compares builds of the example's kernels in one lease: the kernel library of each given git
# revision, swapped under the same jar (AR4J_LLAMA_KERNELS_PATH), its native test and the bench.
#
#   bin/gpu-variants.sh build NAME=REV ...   on the build machine, after bin/gpu-prepare.sh: builds
#        native/ of each revision for sm_90 (AR4J_GENCODE overrides) into .gpu/variants/NAME/
#        (library and native test, xz-compressed: about 2 MB a variant of the 64 MiB a lease carries).
#        A revision whose kernels.h has another AR4J_LLAMA_ABI_VERSION than the working tree's is
#        refused: the jar's bindings would not match it (build that revision's own jar instead).
#   bin/gpu-variants.sh run [PROMPT ...]     on the GPU host: for each variant, in name order, its
#        native test, then `ar4j-llama --synthetic llama3-8b --tp 1 --mode bench --profile` with a
#        prompt of each PROMPT tokens (default 4096; llama3.1-8b's shape past 8184), and a table of
#        the native test's result, the prefill and decode medians and the prefill's attention time.
#        Logs in $OUT (else .gpu/out). AR4J_LLAMA_JAVA_OPTS passes on to every run. NATIVE=skip leaves
#        the native test out (a first comparison; the variant that is kept runs it); LINEAR=1 adds
#        the native test's `--bench-linear quick` (the rows kernel alone on llama3-8b's TP 1 shapes,
#        weights from memory); REPLAYS sets the bench's replays (default 300).
#   bin/gpu-variants.sh path NAME            on the GPU host: the variant's kernel library (unpacked on first use),
#        for the other scripts' runs with it: AR4J_LLAMA_KERNELS_PATH="$(bin/gpu-variants.sh path NAME)"
#        bin/gpu-check.sh runs the reference test or the bench with that build; its native test lies beside it.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
variants="$here/.gpu/variants"

abi_of() { sed -n 's/^#define AR4J_LLAMA_ABI_VERSION \([0-9]*\).*/\1/p' "$1"; }

# A variant's library and native test, unpacked beside their .xz on first use.
unpack() {  # variant directory
  local f
  for f in libar4j_llama_kernels.so ar4j_llama_kernels_test; do
    [[ -f "$1/$f" ]] || xz -dkc "$1/$f.xz" > "$1/$f"
  done
  chmod +x "$1/ar4j_llama_kernels_test"
}

build() {
  [[ $# -ge 1 ]] || { echo "usage: $0 build NAME=REV ..." >&2; exit 2; }
  local repo want spec name rev tmp abi
  repo="$(git -C "$here" rev-parse --show-toplevel)"
  want="$(abi_of "$here/native/include/ar4j_llama/kernels.h")"
  export AR4J_GENCODE="${AR4J_GENCODE:--gencode=arch=compute_90,code=sm_90}"
  for spec in "$@"; do
    name="${spec%%=*}" rev="${spec#*=}"
    [[ "$name" =~ ^[A-Za-z0-9_.-]+$ && "$spec" == *=* ]] || { echo "gpu-variants: '$spec': expected NAME=REV, NAME of letters, digits, . _ -" >&2; exit 2; }
    git -C "$repo" rev-parse --verify -q "$rev^{commit}" >/dev/null || { echo "gpu-variants: $rev is not a commit" >&2; exit 2; }
    tmp="$(mktemp -d)"
    git -C "$repo" archive "$rev" examples/llama-tp/native | tar -x -C "$tmp"
    abi="$(abi_of "$tmp/examples/llama-tp/native/include/ar4j_llama/kernels.h")"
    if [[ "$abi" != "$want" ]]; then
      rm -rf "$tmp"
      echo "gpu-variants: $rev's kernels have ABI $abi, the working tree's jar $want: build that revision's jar" >&2
      exit 2
    fi
    "$tmp/examples/llama-tp/native/build.sh" "$tmp/out" test >/dev/null
    rm -rf "${variants:?}/$name" && mkdir -p "$variants/$name"
    xz -T0 -c "$tmp/out/libar4j_llama_kernels.so" > "$variants/$name/libar4j_llama_kernels.so.xz"
    xz -T0 -c "$tmp/out/ar4j_llama_kernels_test" > "$variants/$name/ar4j_llama_kernels_test.xz"
    git -C "$repo" rev-parse "$rev" > "$variants/$name/commit"
    rm -rf "$tmp"
    echo "gpu-variants: $name = $(cut -c1-10 "$variants/$name/commit") ($(du -sh "$variants/$name" | cut -f1))"
  done
}

run() {
  local logs="${OUT:-$here/.gpu/out}" prompts=("$@") dir name p model native line
  [[ ${#prompts[@]} -gt 0 ]] || prompts=(4096)
  [[ -d "$variants" ]] || { echo "gpu-variants: no $variants: run '$0 build' on the build machine and carry .gpu" >&2; exit 2; }
  mkdir -p "$logs"
  if [[ ! -x "$here/.gpu/jre/bin/java" && -f "$here/.gpu/jre.tar.xz" ]]; then tar -xJf "$here/.gpu/jre.tar.xz" -C "$here/.gpu"; fi
  export JAVA_HOME="$here/.gpu/jre" AR4J_LLAMA_JAR="$here/.gpu/lib/ar4j-llama.jar"
  printf '%-16s %-12s %-24s %8s %12s %10s %12s\n' variant commit native prompt prefill_ms decode_ms attention_ms
  for dir in "$variants"/*/; do
    name="$(basename "$dir")"
    unpack "$dir"
    if [[ "${NATIVE:-}" == skip ]]; then
      native="not run"
    else
      native="$(timeout 300 "$dir/ar4j_llama_kernels_test" > "$logs/variant-$name-native.log" 2>&1 && echo ok || echo "FAILED (rc $?)")"
      native="$native $(grep -Eo '[0-9]+ passed, [0-9]+ failed' "$logs/variant-$name-native.log" | tail -1 || true)"
    fi
    if [[ "${LINEAR:-}" == 1 ]]; then
      timeout 120 "$dir/ar4j_llama_kernels_test" --bench-linear quick > "$logs/variant-$name-linear.log" 2>&1 || true
    fi
    for p in "${prompts[@]}"; do
      model=llama3-8b
      (( p + 8 > 8192 )) && model=llama3.1-8b
      seq -s, 1 "$p" | AR4J_LLAMA_KERNELS_PATH="$dir/libar4j_llama_kernels.so" timeout 300 "$here/bin/ar4j-llama" \
        --synthetic "$model" --tp 1 --mode bench --prompt - --context $((p + 8)) --steps "${REPLAYS:-300}" --profile \
        > "$logs/variant-$name-$p.log" 2>&1 || true
      line="$(awk '$1 == "ar4j" && $2 == "prefill" { pf = $4 } $1 == "ar4j" && $2 == "decode" { d = $4 }
                   /eager chunked prefill/ { inp = 1 } inp && $1 == "attention" { at = $3; inp = 0 }
                   END { printf "%12s %10s %12s", (pf == "" ? "-" : pf), (d == "" ? "-" : d), (at == "" ? "-" : at) }' \
                   "$logs/variant-$name-$p.log")"
      printf '%-16s %-12s %-24s %8s %s\n' "$name" "$(cut -c1-10 "$dir/commit")" "$native" "$p" "$line"
    done
  done
}

path() {
  [[ $# -eq 1 ]] || { echo "usage: $0 path NAME" >&2; exit 2; }
  local dir="$variants/$1"
  [[ -d "$dir" ]] || { echo "gpu-variants: no variant '$1' in $variants" >&2; exit 2; }
  unpack "$dir"
  echo "$dir/libar4j_llama_kernels.so"
}

case "${1:-}" in
  build) shift; build "$@" ;;
  run) shift; run "$@" ;;
  path) shift; path "$@" ;;
  *) echo "usage: $0 build NAME=REV ... | run [PROMPT ...] | path NAME" >&2; exit 2 ;;
esac
