#!/usr/bin/env python3
"""Tokenizes the Java tokenizer's test corpus with Hugging Face's Python `tokenizers`.

    python3 tokenizers_oracle.py DIR

DIR holds lines.json (a list of strings) and one folder per tokenizer (each with tokenizer.json),
as PythonTokenizersCheck writes them. Writes DIR/python.json: for each folder, the ids of every line
with and without special tokens and their decodes with and without skipping special tokens, and
the tokenizers version. Needs only the `tokenizers` package; nothing is downloaded.
"""

import json
import os
import sys

import tokenizers
from tokenizers import Tokenizer


def main():
    folder = sys.argv[1]
    with open(os.path.join(folder, "lines.json"), encoding="utf-8") as f:
        lines = json.load(f)
    result = {"version": tokenizers.__version__}
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name, "tokenizer.json")
        if not os.path.isfile(path):
            continue
        tok = Tokenizer.from_file(path)
        entry = {}
        for add in (False, True):
            ids = [e.ids for e in tok.encode_batch(lines, add_special_tokens=add)]
            entry["ids_%d" % add] = ids
            entry["skip_%d" % add] = tok.decode_batch(ids, skip_special_tokens=True)
            entry["keep_%d" % add] = tok.decode_batch(ids, skip_special_tokens=False)
        result[name] = entry
    with open(os.path.join(folder, "python.json"), "w", encoding="utf-8") as f:
        json.dump(result, f)
    print("tokenizers %s: %d lines, %d tokenizers" % (tokenizers.__version__, len(lines), len(result) - 1))


if __name__ == "__main__":
    main()
