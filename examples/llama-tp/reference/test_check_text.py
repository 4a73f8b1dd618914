#!/usr/bin/env python3
"""Unit tests of check_text.py (plain Python 3, no torch): python3 -m unittest reference/test_check_text.py"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_text  # noqa: E402

TEXT = {
    "prompt": "The caf\u00e9 in Z\u00fcrich serves 3 kinds of \U0001f370 \u2014",
    "prompt_ids": [791, 53050, 304],
    "new_ids": [11, 12, 128009],
    "stopped_at_eos": True,
    "answer_ids": [11, 12],
    "answer_text": " caf\u00e9 \U0001f370 .",
    "answer_text_tokenizers": " caf\u00e9 \U0001f370 .",
    "decode": " caf\u00e9 \U0001f370.<|eot_id|>",
}
STDERR = ("model: text, TP 1\nloading 3/3\nprompt ids: 791,53050,304\n"
          "prompt 3 tokens, generated 3 (stopped at end-of-sequence token 128009), first token 9.1 ms, decode 1.0 tokens/s\n")


class CheckTextTest(unittest.TestCase):

    def test_equal_ids_pass(self):
        failures, passed = check_text.check_ids(TEXT, "tokens: 11,12,128009\n", STDERR)
        self.assertEqual([], failures)
        self.assertEqual(2, len(passed))

    def test_a_different_generated_id_fails_naming_where(self):
        failures, _ = check_text.check_ids(TEXT, "tokens: 11,13,128009\n", STDERR.replace("(stopped", "(x"))
        self.assertIn("generated ids: MISMATCH (first difference at index 1", failures[0])
        self.assertIn("[11, 13, 128009]", failures[1])
        self.assertIn("[11, 12, 128009]", failures[2])

    def test_running_past_the_eos_fails(self):
        failures, _ = check_text.check_ids(TEXT, "tokens: 11,12,128009,5\n", STDERR)
        self.assertTrue(any("first difference at index 3" in f for f in failures), failures)

    def test_different_prompt_ids_fail(self):
        failures, _ = check_text.check_ids(TEXT, "tokens: 11,12,128009\n",
                                           STDERR.replace("791,53050,304", "128000,791,53050,304"))
        self.assertIn("prompt ids: MISMATCH (first difference at index 0", failures[0])

    def test_the_summary_counts_are_checked(self):
        failures, _ = check_text.check_ids(TEXT, "tokens: 11,12,128009\n", STDERR.replace("generated 3", "generated 4"))
        self.assertEqual(1, len(failures))
        self.assertIn("summary", failures[0])

    def test_missing_prompt_ids_line_is_malformed(self):
        with self.assertRaises(check_text.Malformed):
            check_text.check_ids(TEXT, "tokens: 11,12,128009\n", "prompt 3 tokens, generated 3 (x)\n")

    def test_text_equal_with_one_line_break(self):
        failures, notes = check_text.check_text(TEXT, TEXT["answer_text"] + "\n")
        self.assertEqual([], failures)
        self.assertIn("clean_up_tokenization_spaces", notes[1])

    def test_text_differing_fails_with_code_points(self):
        failures, _ = check_text.check_text(TEXT, " cafe \U0001f370 .\n")
        self.assertIn("first difference at character 4", failures[0])
        self.assertIn("0xe9", failures[4])

    def test_the_command_line(self):
        with tempfile.TemporaryDirectory() as d:
            ref = os.path.join(d, "reference.json")
            with open(ref, "w", encoding="utf-8") as f:
                json.dump({"text": TEXT}, f)
            out, err = os.path.join(d, "out"), os.path.join(d, "err")
            with open(out, "wb") as f:
                f.write(b"tokens: 11,12,128009\n")
            with open(err, "wb") as f:
                f.write(STDERR.encode())
            script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_text.py")

            def run(*args):
                return subprocess.run([sys.executable, script, ref, *args], capture_output=True)

            p = run("prompt")
            self.assertEqual(0, p.returncode)
            self.assertEqual(TEXT["prompt"].encode("utf-8"), p.stdout)
            self.assertEqual(0, run("ids", out, err).returncode)
            self.assertEqual(2, run("ids", err, err).returncode)  # no "tokens:" line: malformed
            with open(out, "wb") as f:
                f.write(b"tokens: 11,12\n")
            p = run("ids", out, err)
            self.assertEqual(1, p.returncode)
            self.assertIn(b"MISMATCH", p.stdout)
            with open(out, "wb") as f:
                f.write((TEXT["answer_text"] + "\n").encode("utf-8"))
            self.assertEqual(0, run("text", out).returncode)
            with open(out, "wb") as f:
                f.write(b"caf\xe9\n")  # Latin-1, as a JVM with an ASCII/Latin-1 stdout.encoding would write
            self.assertEqual(2, run("text", out).returncode)
            self.assertEqual(2, run("bogus").returncode)


if __name__ == "__main__":
    unittest.main()
