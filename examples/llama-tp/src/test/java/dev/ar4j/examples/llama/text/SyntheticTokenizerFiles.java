package dev.ar4j.examples.llama.text;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Small tokenizer folders written by tests (the text package's and the command's). */
public final class SyntheticTokenizerFiles {

    /**
     * A SentencePiece-style (Llama-2 shaped) tokenizer.json: a few letters and merges, byte fallback
     * tokens for every byte, {@code <unk>}, {@code <s>}, {@code </s>}.
     */
    public static String sentencePiece() {
        StringBuilder vocab = new StringBuilder("\"<unk>\": 0, \"<s>\": 1, \"</s>\": 2");
        for (int b = 0; b < 256; b++) {
            vocab.append(String.format(", \"<0x%02X>\": %d", b, 3 + b));
        }
        String[] pieces = {"▁", "a", "b", "c", "ab", "▁ab", "abc", "é"};
        for (int i = 0; i < pieces.length; i++) {
            vocab.append(", \"").append(pieces[i]).append("\": ").append(259 + i);
        }
        return """
                {"version": "1.0", "truncation": null, "padding": null,
                 "added_tokens": [
                   {"id": 0, "content": "<unk>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
                   {"id": 1, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
                   {"id": 2, "content": "</s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}],
                 "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
                   {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
                 "pre_tokenizer": null,
                 "post_processor": {"type": "TemplateProcessing",
                   "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                   "pair": [],
                   "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
                 "decoder": {"type": "Sequence", "decoders": [
                   {"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"},
                   {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
                 "model": {"type": "BPE", "dropout": null, "unk_token": "<unk>", "continuing_subword_prefix": null,
                   "end_of_word_suffix": null, "fuse_unk": true, "byte_fallback": true,
                   "vocab": {VOCAB},
                   "merges": ["a b", "▁ ab", ["ab", "c"]]}}
                """.replace("VOCAB", vocab);
    }

    /** A folder holding the given files (name, content, name, content, ...). */
    static Path folder(Path dir, String... namesAndContents) {
        try {
            for (int i = 0; i < namesAndContents.length; i += 2) {
                Files.writeString(dir.resolve(namesAndContents[i]), namesAndContents[i + 1]);
            }
            return dir;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private SyntheticTokenizerFiles() {
    }
}
