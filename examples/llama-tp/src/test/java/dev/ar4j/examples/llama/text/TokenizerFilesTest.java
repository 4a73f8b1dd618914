package dev.ar4j.examples.llama.text;

import dev.ar4j.examples.llama.model.ModelFileException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.OptionalInt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Which files and components are read, which are refused and how, and where the EOS ids come from. */
class TokenizerFilesTest {

    @TempDir
    Path dir;

    private ModelFileException refused(String tokenizerJson) {
        SyntheticTokenizerFiles.folder(dir, "tokenizer.json", tokenizerJson);
        return assertThrows(ModelFileException.class, () -> Tokenizer.load(dir));
    }

    private static void mentions(Exception e, String... parts) {
        for (String p : parts) {
            assertTrue(e.getMessage().contains(p), () -> "'" + e.getMessage() + "' does not mention '" + p + "'");
        }
    }

    private static String withComponent(String key, String json) {
        String base = SyntheticTokenizerFiles.sentencePiece();
        int start = base.indexOf("\"" + key + "\":");
        int depth = 0;
        int i = base.indexOf(':', start) + 1;
        while (base.charAt(i) == ' ') {
            i++;
        }
        int valueStart = i;
        if (base.startsWith("null", i)) {
            i += 4;
        } else {
            do {
                char c = base.charAt(i++);
                depth += c == '{' || c == '[' ? 1 : c == '}' || c == ']' ? -1 : 0;
            } while (depth > 0);
        }
        return base.substring(0, valueStart) + json + base.substring(i);
    }

    @Test
    void refusesAMissingOrMalformedFile() {
        mentions(assertThrows(ModelFileException.class, () -> Tokenizer.load(dir)), "tokenizer.json",
                "no such file");
        mentions(refused("{\"model\": "), "tokenizer.json", "not valid JSON");
        mentions(refused(withComponent("merges", "[\"a\"]")), "model.merges[0]", "\"left right\"");
        mentions(refused(withComponent("merges", "[\"a x\"]")), "model.merges[0]", "not in model.vocab");
    }

    @Test
    void refusesUnsupportedComponentsNamingWhatIsSupported() {
        mentions(refused(withComponent("model", "{\"type\": \"Unigram\", \"vocab\": []}")), "model", "Unigram",
                "supported: BPE");
        mentions(refused(withComponent("normalizer", "{\"type\": \"NFKC\"}")), "normalizer", "NFKC",
                "supported: Prepend, Replace");
        mentions(refused(withComponent("normalizer", "{\"type\": \"Sequence\", \"normalizers\": [{\"type\": "
                + "\"Lowercase\"}]}")), "normalizer.normalizers[0]", "Lowercase");
        mentions(refused(withComponent("normalizer", "{\"type\": \"Replace\", \"pattern\": {\"Regex\": \" +\"}, "
                + "\"content\": \"▁\"}")), "normalizer.pattern", "Regex", "a String pattern");
        mentions(refused(withComponent("pre_tokenizer", "{\"type\": \"Metaspace\"}")), "pre_tokenizer",
                "Metaspace", "Split on the Llama-3 regex");
        mentions(refused(withComponent("pre_tokenizer", "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"\\\\s+\"},"
                + " \"behavior\": \"Isolated\", \"invert\": false}")), "pre_tokenizer.pattern", "\\s+", "Llama-3");
        mentions(refused(withComponent("pre_tokenizer", "{\"type\": \"ByteLevel\", \"add_prefix_space\": true, "
                + "\"use_regex\": true}")), "pre_tokenizer", "ByteLevel", "use_regex");
        mentions(refused(withComponent("post_processor", "{\"type\": \"BertProcessing\"}")), "post_processor",
                "BertProcessing", "TemplateProcessing");
        mentions(refused(withComponent("decoder", "{\"type\": \"WordPiece\"}")), "decoder", "WordPiece",
                "ByteLevel");
        mentions(refused(withComponent("decoder", "{\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Fuse\"}, "
                + "{\"type\": \"ByteFallback\"}]}")), "decoder.decoders[1]", "ByteFallback");
        mentions(refused(withComponent("truncation", "{\"max_length\": 512}")), "truncation");
        mentions(refused(withComponent("end_of_word_suffix", "\"</w>\"")), "model.end_of_word_suffix", "</w>");
    }

    @Test
    void refusesAddedTokenIdsThatHuggingFaceWouldNotGive() {
        String base = SyntheticTokenizerFiles.sentencePiece();
        mentions(refused(base.replace("{\"id\": 2, \"content\": \"</s>\"", "{\"id\": 2, \"content\": \"ab\"")),
                "added_tokens[2]", "\"ab\" has the id 2", "gives it 263", "model.vocab");
        String extra = "{\"id\": 999, \"content\": \"<new>\", \"special\": true},";
        mentions(refused(base.replace("\"added_tokens\": [", "\"added_tokens\": [" + extra)), "added_tokens[0]",
                "\"<new>\" has the id 999", "gives it 267");
    }

    private Tokenizer folder(String... extraFiles) {
        String[] files = new String[extraFiles.length + 2];
        files[0] = "tokenizer.json";
        files[1] = SyntheticTokenizerFiles.sentencePiece();
        System.arraycopy(extraFiles, 0, files, 2, extraFiles.length);
        return Tokenizer.load(SyntheticTokenizerFiles.folder(dir, files));
    }

    @Test
    void takesEosIdsFromGenerationConfigThenConfigThenTokenizerConfig() {
        Tokenizer t = folder("tokenizer_config.json", "{\"bos_token\": {\"content\": \"<s>\"}, \"eos_token\": \"</s>\"}");
        assertArrayEquals(new int[]{2}, t.eosTokenIds());
        assertEquals(OptionalInt.of(1), t.bosTokenId());
        t = folder("config.json", "{\"eos_token_id\": [2, 260]}");
        assertArrayEquals(new int[]{2, 260}, t.eosTokenIds());
        t = folder("generation_config.json", "{\"bos_token_id\": 1, \"eos_token_id\": 261}");
        assertArrayEquals(new int[]{261}, t.eosTokenIds());
        t = folder("generation_config.json", "{\"temperature\": 0.6}");
        assertArrayEquals(new int[]{2, 260}, t.eosTokenIds(), "a generation config without eos_token_id");
    }

    @Test
    void refusesAFolderWithoutAnyEosAndBadIds() {
        mentions(assertThrows(ModelFileException.class, () -> folder("tokenizer_config.json", "{}")),
                "no end-of-sequence token", "eos_token_id", "eos_token");
        mentions(assertThrows(ModelFileException.class, () -> folder("config.json", "{\"eos_token_id\": \"x\"}")),
                "config.json", "eos_token_id", "whole number");
        mentions(assertThrows(ModelFileException.class, () -> folder("tokenizer_config.json",
                "{\"eos_token\": \"<eos>\"}")), "tokenizer_config.json", "eos_token", "<eos>", "not in");
    }

    @Test
    void aLlamaConfigDecidesTheBosAndEosTemplate() {
        Tokenizer t = folder("tokenizer_config.json", "{\"tokenizer_class\": \"LlamaTokenizer\", \"bos_token\": \"<s>\", "
                + "\"eos_token\": \"</s>\", \"add_bos_token\": false, \"add_eos_token\": true}");
        assertArrayEquals(new int[]{259, 260, 2}, t.encode("a", true));
        t = folder("tokenizer_config.json", "{\"tokenizer_class\": \"PreTrainedTokenizerFast\", \"bos_token\": \"<s>\", "
                + "\"eos_token\": \"</s>\", \"add_bos_token\": false}");
        assertArrayEquals(new int[]{1, 259, 260}, t.encode("a", true), "tokenizer.json's template");
    }
}
