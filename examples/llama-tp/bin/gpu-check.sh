#!/usr/bin/env bash
# The example's whole GPU check, on a GPU host with no Java or Maven, from what
# bin/gpu-prepare.sh put in examples/llama-tp/.gpu/ (carry that folder):
#   0. the kernels: native/test's program against a CPU reference, and reference/compare_kernels.py
#      against the transformers functions they stand in for;
#   1. reference/make_reference.py writes the transformers reference (PyTorch + transformers of the
#      host's Python; nothing is downloaded; ten models: base, tied, llama3, long (head_dim 128,
#      8 KV heads, a prompt of 2048 tokens), sharded (a sharded checkpoint), fp16 and fp32 (saved in
#      float16/float32), kvrep (2 KV heads, vocab 4001), rope64 (issue 29's llama3 rope), text (vocab
#      128256, saved with the real Llama-3 tokenizer files of .gpu/tokenizers/llama3, a text prompt and
#      transformers' generate)), unless the reference folder (AR4J_LLAMA_REFERENCE, else $OUT/reference)
#      already holds one of format version 3 with the first nine; without the tokenizer files the text
#      model is skipped (make_reference.py's exit code 4, which passes here) and the text step fails;
#   2. LlamaReferenceIT compares the engine with it at TP 1, 2, 4, 8 (those each model splits into;
#      ranks sharing GPU 0), StatusWordIT checks that a bad token id fails its own step only, SamplingIT that the ranks draw the same sampled tokens and a second engine with the seed repeats them, and BatchIT that each sequence of a batch of 4 decodes and verifies as the reference does;
#   text: text in, text out (issue 29) on the reference's text model (made first, with
#      make_reference.py --models text --add, where the reference lacks it): ar4j-llama --model
#      REFERENCE/text/model --prompt "<its prompt text>" --max-new-tokens 24 --output ids at TP 1 and at
#      --tp 2 --share-gpu, each checked by reference/check_text.py (the 'prompt ids:' line equal to the ids
#      of transformers' tokenizer, the 'tokens:' line equal to transformers' generate, stopping where it
#      stopped at an eos id), then --output text at TP 1 (the streamed text equal to transformers' decode of
#      the new ids); the runs' locale is a UTF-8 one (the JVM decodes its arguments and encodes its standard
#      output by the locale); standard output and error in $OUT/text-*.out and .err;
#   3. ar4j-llama generate runs: tiny (generate, verify check), the reference's base model and its
#      sharded model (loaded from its shards) at TP 2;
#   4. bench: llama3-8b at TP 1, decode at each context of CONTEXTS (prompt of that many tokens, so
#      the decode step attends context + 1 keys) with the verify step of --draft 3 beside it (and
#      --profile's tables of the prefill, decode and verify, per kind of kernel, in its log), and
#      reference/torch_decode_bench.py's two PyTorch forms at the same contexts (plain: one CUDA graph;
#      --compile: torch.compile max-autotune-no-cudagraphs, then one CUDA graph); then a table of the
#      medians and the ratios engine/plain and engine/compile per context ($OUT/bench-table.txt);
#      beside it the prefill of the same prompts: the engine bench's prefill row (the whole chunked
#      prefill) against reference/torch_prefill_bench.py (eager PyTorch, cuBLAS GEMMs + SDPA is_causal,
#      writing a KV cache; where FORMS has compile, also with each layer through torch.compile) at the same prompt
#      lengths, with the ratios per prompt (same table file);
#      then llama3-8b at TP 2 and verify-7168 at TP 2 with --draft 3 (ranks sharing the GPU:
#      functional figures, not a speed-up);
#   shard (not in the default STEPS): ar4j-llama --tp-shard-of 2, 4, 8 on llama3-8b (rank 0's shard
#      of TP N alone: the per-rank compute of a TP N step, a projection), beside TP 1 at 512.
#   batch (not in the default STEPS): llama3-8b bench with --batch B for B in BATCHES (default
#      "1 8 32 64") at TP 1, prompt 512, --draft 3 (decode B tokens, verify 3B; tokens/s), and B 8 at
#      TP 2 with the ranks sharing the GPU (functional, and the communication share); then generate
#      --batch 2 on the reference's text model (made first where the reference lacks it) at TP 1 and TP 2
#      sharing the GPU: its prompt and its first half, the first sequence's tokens equal to transformers'
#      generate (reference/check_text.py).
# Logs go to $OUT (or examples/llama-tp/.gpu/out). Exit 0 only when every step passed.
#   PYTHON    the Python with torch and transformers (default /opt/torch/.venv/bin/python3, else python3)
#   STEPS     which steps to run (default "kernels reference it text generate bench"; also: shard)
#   CONTEXTS  the bench's decode contexts (default "512 4096 8000"; past 8184, llama3.1-8b's shapes and positions)
#   FORMS     the PyTorch forms the bench runs (default "plain compile")
#   BENCH_TP2 0: the bench step leaves out its two TP 2 runs (to fit one call's time limit)
#   LOGS_ARCHIVE  a .tgz rewritten after every step with the logs so far (the reference's models left out), so that a
#             run cut off by a time limit still leaves what it did in one file (e.g. OUT=/tmp/o LOGS_ARCHIVE=$OUT/logs.tgz)
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_DEVICE_MAX_CONNECTIONS="${CUDA_DEVICE_MAX_CONNECTIONS:-32}"
java=.gpu/jre/bin/java
# What bin/gpu-prepare.sh packed to travel: the runtime and the kernels' native test, unpacked once here.
if [[ ! -x "$java" && -f .gpu/jre.tar.xz ]]; then tar -xJf .gpu/jre.tar.xz -C .gpu; fi
for packed in .gpu/native/*.xz; do
  [[ -f "$packed" && ! -f "${packed%.xz}" ]] && xz -dk "$packed"
done
[[ -f .gpu/native/ar4j_llama_kernels_test ]] && chmod +x .gpu/native/ar4j_llama_kernels_test
[[ -x "$java" ]] || { echo "gpu-check: $java missing; run bin/gpu-prepare.sh on the build machine and carry .gpu" >&2; exit 2; }
python="${PYTHON:-}"
if [[ -z "$python" ]]; then
  python=python3
  [[ -x /opt/torch/.venv/bin/python3 ]] && python=/opt/torch/.venv/bin/python3
fi
logs="${OUT:-.gpu/out}"
mkdir -p "$logs"
reference="${AR4J_LLAMA_REFERENCE:-$logs/reference}"
steps="${STEPS:-kernels reference it text generate bench}"
contexts="${CONTEXTS:-512 4096 8000}"
forms="${FORMS:-plain compile}"
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
  archive_logs
}

archive_logs() {  # LOGS_ARCHIVE, if set: the logs so far, written whole before it replaces the last one
  [[ -n "${LOGS_ARCHIVE:-}" ]] || return 0
  local name; name="$(basename "$LOGS_ARCHIVE")"
  # With the archive inside the logs' folder, tar sees that folder change as it writes (GNU tar's exit code 1, "file
  # changed as we read it"): every log is still in the archive, so 1 passes; 2 and above are failures.
  local rc=0
  tar -czf "$LOGS_ARCHIVE.part" --warning=no-file-changed --exclude=./reference --exclude="$name" \
    --exclude="$name.part" -C "$logs" . || rc=$?
  if (( rc <= 1 )) && mv "$LOGS_ARCHIVE.part" "$LOGS_ARCHIVE"; then return 0; fi
  echo "gpu-check: could not write LOGS_ARCHIVE=$LOGS_ARCHIVE (tar exit code $rc)" >&2
}

llama() {
  JAVA_HOME="$PWD/.gpu/jre" AR4J_LLAMA_JAR="$PWD/.gpu/lib/ar4j-llama.jar" bin/ar4j-llama "$@"
}

# make_reference.py with its arguments; its exit code 4 (the text model skipped for want of the tokenizer files,
# everything else made) passes here: the text step then fails, saying so.
make_reference() {
  "$python" reference/make_reference.py "$@"
  local rc=$?
  if (( rc == 4 )); then
    echo "make_reference.py: the text model was skipped (exit code 4: no tokenizer files; run bin/gpu-prepare.sh or" \
      "bin/gpu-tokenizers.sh on the build machine and carry .gpu); the other models were made; the text step will fail"
    return 0
  fi
  return "$rc"
}

# A locale whose charmap is UTF-8 (the current one if it is), for the text step's runs: the JVM decodes its
# arguments (sun.jnu.encoding) and encodes standard output (stdout.encoding) by the locale.
utf8_locale() {
  local l
  for l in "${LC_ALL:-}" "${LC_CTYPE:-}" "${LANG:-}" C.UTF-8 C.utf8 en_US.UTF-8; do
    [[ -n "$l" && "$(LC_ALL="$l" locale charmap 2>/dev/null)" == UTF-8 ]] && { echo "$l"; return; }
  done
  echo C.UTF-8
}

# One text-step run of ar4j-llama on the reference's text model, then reference/check_text.py on what it printed.
text_run() {  # name, output format (ids|text), more ar4j-llama options...
  local name="$1" format="$2"; shift 2
  local ref="$reference/text/reference.json" prompt locale
  prompt="$("$python" reference/check_text.py "$ref" prompt)" || return 2
  locale="$(utf8_locale)"
  echo "LC_ALL=$locale (charmap $(LC_ALL="$locale" locale charmap 2>/dev/null || echo unknown)) ar4j-llama --model" \
    "$reference/text/model --prompt '$prompt' --max-new-tokens 24 --output $format $*"
  LC_ALL="$locale" llama --model "$reference/text/model" --prompt "$prompt" --max-new-tokens 24 --output "$format" "$@" \
    >"$logs/$name.out" 2>"$logs/$name.err"
  local rc=$?
  echo "-- standard error:"; cat "$logs/$name.err"
  echo "-- standard output:"; cat "$logs/$name.out"
  if (( rc != 0 )); then
    echo "ar4j-llama exited with $rc"
    return 1
  fi
  echo "-- check_text.py $format:"
  if [[ "$format" == ids ]]; then
    "$python" reference/check_text.py "$ref" ids "$logs/$name.out" "$logs/$name.err"
  else
    "$python" reference/check_text.py "$ref" text "$logs/$name.out"
  fi
}

text_missing() {
  echo "no $reference/text/reference.json: make_reference.py did not make the text model (its log, reference or" \
    "reference-text, says why: without .gpu/tokenizers/llama3 it is skipped)"
  return 1
}

# generate --batch on the reference's text model: sequence 0 is the reference prompt (transformers' ids), sequence 1
# the first half of it (another length, so mixed-up caches or positions would show); sequence 0's tokens must be
# transformers' generate (reference/check_text.py ids on its lines). A sequence of a batch is not bitwise its prompt
# alone (products of B rows and attention splits for B sequences sum in another order), so the check is against
# the reference, whose greedy margins make_reference.py chose wide enough for any summation order.
batch_text() {  # name, more ar4j-llama options...
  local name="$1"; shift
  local ref="$reference/text/reference.json" ids half
  ids="$("$python" -c 'import json,sys; print(",".join(map(str, json.load(open(sys.argv[1]))["text"]["prompt_ids"])))' "$ref")" \
    || return 2
  half="$(echo "$ids" | tr ',' '\n' | head -n $(( ($(echo "$ids" | tr ',' '\n' | wc -l) + 1) / 2 )) | paste -sd,)"
  llama --model "$reference/text/model" --batch 2 --prompt-ids "$ids;$half" --max-new-tokens 24 --output ids "$@" \
    >"$logs/$name.out" 2>"$logs/$name.err"
  local rc=$?
  echo "-- standard error:"; cat "$logs/$name.err"
  echo "-- standard output:"; cat "$logs/$name.out"
  (( rc == 0 )) || { echo "ar4j-llama exited with $rc"; return 1; }
  grep '^sequence 0 prompt ids: ' "$logs/$name.err" | sed 's/^sequence 0 //' >"$logs/$name.err0"
  grep '^tokens 0: ' "$logs/$name.out" | sed 's/^tokens 0: /tokens: /' >"$logs/$name.out0"
  grep -q '^tokens 1: ' "$logs/$name.out" || { echo "no 'tokens 1:' line"; return 1; }
  echo "-- check_text.py ids, sequence 0:"
  "$python" reference/check_text.py "$ref" ids "$logs/$name.out0" "$logs/$name.err0"
}

# The engine's bench at decode context $1: a prompt of $1 tokens (ids 1..$1), so decode and verify run at
# position $1; KV-cache positions: the engine's default 2048, or $1 + 8 where that is more.
# The synthetic model of a bench context: past llama3-8b's 8192 positions, the same shapes with Llama 3.1's
# 131072 (and its rope scaling).
model_at() {  # context
  if (( $1 + 8 > 8192 )); then echo llama3.1-8b; else echo llama3-8b; fi
}

engine_at() {  # context, more options...
  local ctx="$1"; shift
  local capacity=$(( ctx + 8 > 2048 ? ctx + 8 : 2048 ))
  # The prompt on standard input: tens of thousands of ids are too long for one argument.
  seq -s, 1 "$ctx" | llama --synthetic "$(model_at "$ctx")" --tp 1 --mode bench --prompt - --context "$capacity" \
    --draft 3 "$@"
}

# PyTorch's prefill of every bench context, each on its context's model shape, into one log: eager, or with
# "compile" each layer through torch.compile (torch_prefill_bench.py --compile).
torch_prefill_at() {  # python, eager|compile, contexts...
  local python="$1" form="$2" ctx short="" long="" flag=(); shift 2
  [[ "$form" == compile ]] && flag=(--compile)
  for ctx in "$@"; do
    if [[ "$(model_at "$ctx")" == llama3-8b ]]; then short+="${short:+,}$ctx"; else long+="${long:+,}$ctx"; fi
  done
  if [[ -n "$short" ]]; then
    "$python" reference/torch_prefill_bench.py --model llama3-8b --prompts "$short" "${flag[@]}" || return
  fi
  if [[ -n "$long" ]]; then
    "$python" reference/torch_prefill_bench.py --model llama3.1-8b --prompts "$long" --runs 3 "${flag[@]}"
  fi
}

# A median from a log: the engine's table row (comm, step) or the torch-decode line's median_ms; "-" if absent.
engine_ms() {  # log, comm, step
  [[ -f "$1" ]] || { echo -; return; }
  awk -v comm="$2" -v kind="$3" '$1 == comm && $2 == kind && $4 ~ /^[0-9.]+$/ { v = $4 } END { print (v == "" ? "-" : v) }' "$1"
}
torch_ms() {  # log
  [[ -f "$1" ]] || { echo -; return; }
  awk '$1 == "torch-decode" { for (i = 2; i <= NF; i++) if ($i ~ /^median_ms=/) v = substr($i, 11) }
       END { print (v == "" ? "-" : v) }' "$1"
}
torch_prefill_ms() {  # log, prompt
  [[ -f "$1" ]] || { echo -; return; }
  awk -v p="prompt=$2" '$1 == "torch-prefill" && $0 ~ (" " p " ") { for (i = 2; i <= NF; i++) if ($i ~ /^median_ms=/) v = substr($i, 11) }
       END { print (v == "" ? "-" : v) }' "$1"
}
ratio() {  # a, b: a / b, or "-"
  awk -v a="$1" -v b="$2" 'BEGIN { if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%.3f", a / b; else printf "-" }'
}

# The decode table: per context, the engine's decode and verify medians, both PyTorch forms', the ratios.
bench_table() {
  echo "# llama3-8b (llama3.1-8b past 8184 keys), TP 1, batch 1, decode of 1 token at position = context (context + 1 keys attended);"
  echo "# median ms of CUDA-graph replays (engine: --steps 1000; PyTorch: --replays 1000); ratio < 1: the engine is faster"
  printf '%-8s %10s %10s %12s %14s %13s %15s\n' context engine verify3 torch-plain torch-compile engine/plain \
    engine/compile
  local ctx e v p c
  for ctx in $contexts; do
    e=$(engine_ms "$logs/bench-engine-c$ctx.log" ar4j decode)
    v=$(engine_ms "$logs/bench-engine-c$ctx.log" ar4j verify)
    p=$(torch_ms "$logs/bench-torch-plain-c$ctx.log")
    c=$(torch_ms "$logs/bench-torch-compile-c$ctx.log")
    printf '%-8s %10s %10s %12s %14s %13s %15s\n' "$ctx" "$e" "$v" "$p" "$c" "$(ratio "$e" "$p")" "$(ratio "$e" "$c")"
  done
  for ctx in $contexts; do
    e=$(engine_ms "$logs/bench-engine-c$ctx.log" ar4j decode)
    p=$(torch_ms "$logs/bench-torch-plain-c$ctx.log")
    c=$(torch_ms "$logs/bench-torch-compile-c$ctx.log")
    echo "bench-ratio model=llama3-8b tp=1 context=$ctx engine_ms=$e verify3_ms=$(engine_ms "$logs/bench-engine-c$ctx.log" ar4j verify)" \
      "plain_ms=$p compile_ms=$c engine_over_plain=$(ratio "$e" "$p") engine_over_compile=$(ratio "$e" "$c")"
  done
  echo
  echo "# llama3-8b (llama3.1-8b past 8184 tokens), TP 1, batch 1, prefill of a prompt of that many tokens (time to first token: the engine's whole"
  echo "# chunked prefill, eager; PyTorch eager, SDPA is_causal, and with each layer through torch.compile where FORMS has compile);"
  echo "# median ms; ratio < 1: the engine is faster"
  printf '%-8s %12s %14s %16s %15s %17s\n' prompt engine-prefill torch-eager torch-compile engine/eager engine/compile
  local pc
  for ctx in $contexts; do
    e=$(engine_ms "$logs/bench-engine-c$ctx.log" ar4j prefill)
    p=$(torch_prefill_ms "$logs/bench-torch-prefill.log" "$ctx")
    pc=$(torch_prefill_ms "$logs/bench-torch-prefill-compile.log" "$ctx")
    printf '%-8s %12s %14s %16s %15s %17s\n' "$ctx" "$e" "$p" "$pc" "$(ratio "$e" "$p")" "$(ratio "$e" "$pc")"
  done
  for ctx in $contexts; do
    e=$(engine_ms "$logs/bench-engine-c$ctx.log" ar4j prefill)
    p=$(torch_prefill_ms "$logs/bench-torch-prefill.log" "$ctx")
    pc=$(torch_prefill_ms "$logs/bench-torch-prefill-compile.log" "$ctx")
    echo "bench-prefill-ratio model=llama3-8b tp=1 prompt=$ctx engine_ms=$e torch_ms=$p torch_compile_ms=$pc" \
      "engine_over_torch=$(ratio "$e" "$p") engine_over_compile=$(ratio "$e" "$pc")"
  done
}

for s in $steps; do
  case "$s" in
    kernels)
      step kernels-native .gpu/native/ar4j_llama_kernels_test
      step kernels-transformers "$python" reference/compare_kernels.py .gpu/native/libar4j_llama_kernels.so ;;
    reference)
      if [[ -f "$reference/index.json" ]] && "$python" -c 'import json, sys
index = json.load(open(sys.argv[1]))
base = ["base", "tied", "llama3", "long", "sharded", "fp16", "fp32", "kvrep", "rope64"]
sys.exit(0 if index.get("format_version") == 3 and all(m in index.get("models", []) for m in base) else 1)' \
          "$reference/index.json"; then
        echo "== reference: $reference/index.json (format version 3, the nine models before text) exists (kept)"
        # A reference made before the text model: add it, so that LlamaReferenceIT checks it too.
        if [[ ! -f "$reference/text/reference.json" ]]; then
          step reference-text make_reference "$reference" --models text --add
        fi
      else
        step reference make_reference "$reference"
      fi ;;
    text)
      if [[ ! -f "$reference/text/reference.json" ]]; then
        step reference-text make_reference "$reference" --models text --add
      fi
      if [[ -f "$reference/text/reference.json" ]]; then
        step text-ids-tp1 text_run text-ids-tp1 ids --tp 1
        step text-ids-tp2 text_run text-ids-tp2 ids --tp 2 --share-gpu
        step text-text-tp1 text_run text-text-tp1 text --tp 1
      else
        step text text_missing
      fi ;;
    it)
      launchers=(.gpu/lib/junit-platform-console-standalone-*.jar)
      # Ranks share GPU 0 in this JVM: eager module loading (see bin/ar4j-llama and ar4j's warning).
      step it env CUDA_MODULE_LOADING="${CUDA_MODULE_LOADING:-EAGER}" "$java" --enable-native-access=ALL-UNNAMED -Dar4j.llama.reference="$reference" -Dar4j.llama.stallReport=10 \
        -jar "${launchers[0]}" execute --class-path ".gpu/test-classes:.gpu/lib/ar4j-llama.jar" \
        --include-tag gpu --select-class dev.ar4j.examples.llama.it.LlamaReferenceIT \
        --select-class dev.ar4j.examples.llama.engine.StatusWordIT \
        --select-class dev.ar4j.examples.llama.engine.SamplingIT \
        --select-class dev.ar4j.examples.llama.it.BatchIT \
        --details=tree --details-theme=ascii --disable-banner ;;
    generate)
      step generate-tiny-tp2 llama --synthetic tiny --tp 2 --share-gpu --steps 32 --draft 3
      step generate-reference-tp2 llama --model "$reference/base/model" --tp 2 --share-gpu --prompt-ids 1,2,3,4 --steps 16
      step generate-sharded-tp2 llama --model "$reference/sharded/model" --tp 2 --share-gpu --prompt-ids 1,2,3,4 --steps 16 ;;
    bench)
      for ctx in $contexts; do
        comms=ar4j
        [[ "$ctx" == 512 ]] && comms=ar4j,nccl
        step "bench-engine-c$ctx" engine_at "$ctx" --comm "$comms" --profile
        for form in $forms; do
          flag=()
          [[ "$form" == compile ]] && flag=(--compile)
          step "bench-torch-$form-c$ctx" "$python" reference/torch_decode_bench.py --model "$(model_at "$ctx")" --context "$ctx" \
            --replays 1000 "${flag[@]}"
        done
      done
      step bench-torch-prefill torch_prefill_at "$python" eager $contexts
      [[ " $forms " == *" compile "* ]] && step bench-torch-prefill-compile torch_prefill_at "$python" compile $contexts
      bench_table >"$logs/bench-table.txt"
      archive_logs
      if [[ "${BENCH_TP2:-1}" != 0 ]]; then
        step bench-llama3-8b-tp2 llama --synthetic llama3-8b --tp 2 --share-gpu --mode bench
        step bench-verify-7168-tp2 llama --synthetic verify-7168 --tp 2 --share-gpu --mode bench --draft 3 --steps 300
      fi ;;
    shard)
      step shard-llama3-8b-tp1 llama --synthetic llama3-8b --tp 1 --mode bench
      for n in 2 4 8; do
        step "shard-llama3-8b-of-tp$n" llama --synthetic llama3-8b --mode bench --tp-shard-of "$n"
      done ;;
    batch)
      for b in ${BATCHES:-1 8 32 64}; do
        step "batch-llama3-8b-b$b" llama --synthetic llama3-8b --tp 1 --mode bench --batch "$b" \
          --prompt "$(seq -s, 1 512)" --context 520 --draft 3 --steps 300
      done
      step batch-llama3-8b-tp2-b8 llama --synthetic llama3-8b --tp 2 --share-gpu --mode bench --batch 8 \
        --prompt "$(seq -s, 1 512)" --context 520 --draft 3 --steps 100
      if [[ ! -f "$reference/text/reference.json" ]]; then
        step reference-text make_reference "$reference" --models text --add
      fi
      step batch-text-tp1 batch_text batch-text-tp1 --tp 1
      step batch-text-tp2 batch_text batch-text-tp2 --tp 2 --share-gpu ;;
    *) echo "gpu-check: unknown step '$s' (kernels, reference, it, text, generate, bench, shard, batch)" >&2; exit 2 ;;
  esac
done
for f in "$logs"/bench-*.log "$logs"/shard-*.log "$logs"/batch-*.log; do [[ -f "$f" ]] && { echo "== $f"; grep -v '^rank .* \[' "$f" | tail -n 12; }; done
[[ -f "$logs/bench-table.txt" ]] && { echo "== $logs/bench-table.txt"; cat "$logs/bench-table.txt"; }
if (( ${#failed[@]} > 0 )); then
  echo "gpu-check: FAILED: ${failed[*]}"
  exit 1
fi
echo "gpu-check: every step passed"
