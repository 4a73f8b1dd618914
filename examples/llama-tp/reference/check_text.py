#!/usr/bin/env python3
"""Checks ar4j-llama's text in/out against the text model of make_reference.py (bin/gpu-check.sh's text step).

    python3 check_text.py REFERENCE_JSON prompt               # prints the prompt text (UTF-8, no line break)
    python3 check_text.py REFERENCE_JSON ids STDOUT STDERR    # a run with --output ids
    python3 check_text.py REFERENCE_JSON text STDOUT          # a run with --output text

REFERENCE_JSON is OUT_DIR/text/reference.json; STDOUT and STDERR are the files ar4j-llama's standard output
and standard error went to. ids: the line "prompt ids: a,b,c" on standard error must equal the ids
transformers' tokenizer gave for the prompt (text.prompt_ids), and the last line "tokens: a,b,c" on standard
output must equal transformers' generate (text.new_ids: up to 24 new ids, ending with the eos id where
generate stopped at one; ar4j-llama prints the stopping eos id too and stops there); where the summary line
"prompt N tokens, generated M (...)" is there, N and M are checked as well. text: standard output must be
the answer's text, text.answer_text (transformers' decode of the new ids without a stopping eos id, special
tokens kept, clean_up_tokenization_spaces off), and one line break. A mismatch prints both sequences (and
where they first differ) and exits with 1; a malformed file or argument exits with 2. Needs only Python 3.
"""

import json
import re
import sys

PROMPT_IDS = re.compile(r"^prompt ids: ([0-9,]*)$")
TOKENS = re.compile(r"^tokens: ([0-9,]*)$")
SUMMARY = re.compile(r"^prompt (\d+) tokens, generated (\d+) \(")


class Malformed(Exception):
    """A file that is not what the check reads."""


def parse_ids(text):
    return [int(x) for x in text.split(",")] if text else []


def last_match(pattern, lines, what):
    found = None
    for line in lines:
        m = pattern.match(line.rstrip("\r"))
        if m:
            found = m
    if found is None:
        raise Malformed(f"no line {what}")
    return found


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def compare(label, got, want):
    """[] when equal, else lines saying how they differ."""
    if got == want:
        return []
    at = first_difference(got, want)
    return [
        f"{label}: MISMATCH (first difference at index {at}; ar4j-llama {len(got)}, transformers {len(want)})",
        f"  ar4j-llama:   {got}",
        f"  transformers: {want}",
    ]


def check_ids(text_ref, stdout, stderr):
    """The lines of a failed ids check ([] when it passed), and the lines of what was checked."""
    want_prompt = text_ref["prompt_ids"]
    want_new = text_ref["new_ids"]
    got_prompt = parse_ids(last_match(PROMPT_IDS, stderr.splitlines(), "'prompt ids: ...' on standard error "
                                      "(a jar older than that line?)").group(1))
    got_new = parse_ids(last_match(TOKENS, stdout.splitlines(), "'tokens: ...' on standard output").group(1))
    failures = compare("prompt ids", got_prompt, want_prompt) + compare("generated ids", got_new, want_new)
    summary = None
    for line in stderr.splitlines():
        m = SUMMARY.match(line)
        if m:
            summary = (int(m.group(1)), int(m.group(2)))
    if summary is not None and summary != (len(want_prompt), len(want_new)):
        failures.append(f"summary: prompt {summary[0]} tokens, generated {summary[1]}; transformers: "
                        f"{len(want_prompt)} and {len(want_new)}")
    passed = [f"prompt ids equal ({len(got_prompt)}): {got_prompt}",
              f"generated ids equal ({len(got_new)}{', stopped at eos' if text_ref.get('stopped_at_eos') else ''}): "
              f"{got_new}"]
    return failures, passed


def check_text(text_ref, stdout):
    want = text_ref["answer_text"]
    got = stdout[:-1] if stdout.endswith("\n") else stdout
    if got == want:
        notes = [f"text equal: {got!r}"]
        if text_ref.get("decode") is not None and text_ref["decode"] != want:
            notes.append(f"(transformers' tokenizer.decode(new_ids) with its defaults gives {text_ref['decode']!r}: "
                         f"the eos token and/or clean_up_tokenization_spaces, which ar4j-llama does not print/apply)")
        return [], notes
    failures = [f"text: MISMATCH (first difference at character {first_difference(got, want)})",
                f"  ar4j-llama:   {got!r}",
                f"  transformers: {want!r}",
                f"  ar4j-llama code points:   {[hex(ord(c)) for c in got]}",
                f"  transformers code points: {[hex(ord(c)) for c in want]}"]
    for key in ("decode", "answer_text_tokenizers"):
        if text_ref.get(key) is not None and got == text_ref[key]:
            failures.append(f"  (ar4j-llama's text equals the reference's {key})")
    return failures, []


def read_text(path):
    with open(path, "rb") as f:
        data = f.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Malformed(f"{path} is not UTF-8 ({e}); was the JVM's stdout.encoding UTF-8?")


def main(argv):
    if len(argv) < 2 or argv[1] not in ("prompt", "ids", "text") or len(argv) != {"prompt": 2, "ids": 4,
                                                                                  "text": 3}[argv[1]]:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    try:
        with open(argv[0], encoding="utf-8") as f:
            reference = json.load(f)
        text_ref = reference.get("text")
        if text_ref is None:
            raise Malformed(f"{argv[0]} has no 'text' entry (not make_reference.py's text model)")
        if argv[1] == "prompt":
            sys.stdout.buffer.write(text_ref["prompt"].encode("utf-8"))
            return 0
        if argv[1] == "ids":
            failures, passed = check_ids(text_ref, read_text(argv[2]), read_text(argv[3]))
        else:
            failures, passed = check_text(text_ref, read_text(argv[2]))
    except (OSError, ValueError, KeyError, Malformed) as e:
        print(f"check_text: {e}", file=sys.stderr)
        return 2
    for line in failures or passed:
        print(line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
