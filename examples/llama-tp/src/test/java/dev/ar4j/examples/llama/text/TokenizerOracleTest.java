package dev.ar4j.examples.llama.text;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The tokenizer against Hugging Face's own ({@code tokenizers} 0.21.0 in Rust, through DJL's bundled
 * library, which loads from its jar with no network) on the real Llama-3 and Llama-2 files: ids with and
 * without special tokens and decoded text on a 10,000-line corpus and hand-written cases, decoded text
 * of random id sequences (byte tokens that are not UTF-8 included), and the speed of a 4096-token prompt.
 */
class TokenizerOracleTest {

    static final int CORPUS_LINES = 10_000;
    static final long SEED = 29;

    static final List<String> EDGE_CASES = List.of(
            "", " ", "  ", "\n", "\n\n", "\t", "\r\n", " \r\n ", "   trailing   ", "a", "'", "''s", "0", "1234567",
            "<s>", "</s>", "<unk>", "<|begin_of_text|>", "<|eot_id|>", "<s><s>", "<|eot_id|><|begin_of_text|>",
            " <s>", "<s> ", "x<s>y", "▁", "▁▁x", "\u00A0", "\u3000\u3000", "👍🏽", "👨‍👩‍👧‍👦", "🇫🇷🇩🇪",
            "e\u0301", "\uFEFF", "\u200D", "\u0000", "\u0001\u001F\u007F", "\uE000", "\uD83D\uDE00",
            "Hello world\n\nHow are you?  ", "I'M HERE'S Y'ALL'LL 'S'T", "x".repeat(300), " ".repeat(50),
            "1".repeat(100), "中".repeat(80), "👍".repeat(40), "\n".repeat(30) + "end",
            // Letters, digits and marks of Unicode 15 and 16 (Garay, CJK extension I, Kawi, Ol Onal, Kirat Rai).
            "a\uD803\uDD50b 12\uD803\uDD513", "\uD87A\uDFF0\uD87A\uDFF1", "\uD807\uDF00x\uD807\uDF01",
            "\uD839\uDDD0\uD839\uDDD1 \uD839\uDDF1", "\uD81B\uDD40\uD81B\uDD60");

    private static final Map<NpmTokenizerFiles.Package, Tokenizer> MINE =
            new EnumMap<>(NpmTokenizerFiles.Package.class);
    private static final Map<NpmTokenizerFiles.Package, HuggingFaceTokenizer> ORACLE =
            new EnumMap<>(NpmTokenizerFiles.Package.class);

    static synchronized Tokenizer mine(NpmTokenizerFiles.Package p) {
        return MINE.computeIfAbsent(p, k -> Tokenizer.load(NpmTokenizerFiles.folder(k)));
    }

    static synchronized HuggingFaceTokenizer oracle(NpmTokenizerFiles.Package p) {
        // Hugging Face's library comes from the DJL jar; a download would fail in offline mode.
        System.setProperty("ai.djl.offline", "true");
        return ORACLE.computeIfAbsent(p, k -> {
            Path json = NpmTokenizerFiles.folder(k).resolve("tokenizer.json");
            try {
                return HuggingFaceTokenizer.newInstance(json, Map.of("truncation", "false", "padding", "false"));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
    }

    static int[] ints(long[] ids) {
        return Arrays.stream(ids).mapToInt(Math::toIntExact).toArray();
    }

    static long[] longs(int[] ids) {
        return Arrays.stream(ids).asLongStream().toArray();
    }

    @ParameterizedTest
    @EnumSource(NpmTokenizerFiles.Package.class)
    void encodesAndDecodesTheCorpusAsHuggingFace(NpmTokenizerFiles.Package p) {
        Tokenizer t = mine(p);
        HuggingFaceTokenizer hf = oracle(p);
        List<String> lines = new ArrayList<>(EDGE_CASES);
        lines.addAll(TestCorpus.lines(SEED, CORPUS_LINES));
        List<String> failures = new ArrayList<>();
        long tokens = 0;
        for (String line : lines) {
            for (boolean special : new boolean[]{false, true}) {
                int[] expected = ints(hf.encode(line, special, false).getIds());
                int[] actual = t.encode(line, special);
                tokens += actual.length;
                if (!Arrays.equals(expected, actual)) {
                    failures.add("encode(" + quote(line) + ", " + special + "): expected " + Arrays.toString(expected)
                            + ", got " + Arrays.toString(actual));
                    continue;
                }
                for (boolean skip : new boolean[]{false, true}) {
                    String want = hf.decode(longs(expected), skip);
                    String got = t.decode(actual, skip);
                    if (!want.equals(got)) {
                        failures.add("decode(encode(" + quote(line) + ", " + special + "), " + skip + "): expected "
                                + quote(want) + ", got " + quote(got));
                    }
                }
                String streamed = stream(t, actual);
                if (!streamed.equals(t.decode(actual, true))) {
                    failures.add("the text stream of " + quote(line) + " is " + quote(streamed));
                }
            }
        }
        assertTrue(failures.isEmpty(), () -> failures.size() + " of " + 2 * lines.size() + " encodings differ, e.g.\n"
                + String.join("\n", failures.subList(0, Math.min(10, failures.size()))));
        assertTrue(lines.size() >= CORPUS_LINES && tokens > 100_000, "corpus: " + lines.size() + " lines, " + tokens
                + " tokens");
    }

    @ParameterizedTest
    @EnumSource(NpmTokenizerFiles.Package.class)
    void decodesRandomIdsAsHuggingFace(NpmTokenizerFiles.Package p) {
        Tokenizer t = mine(p);
        HuggingFaceTokenizer hf = oracle(p);
        Random r = new Random(SEED);
        int[] byteIds = byteTokenIds(t);
        List<String> failures = new ArrayList<>();
        for (int i = 0; i < 3000; i++) {
            int[] ids = new int[1 + r.nextInt(12)];
            for (int j = 0; j < ids.length; j++) {
                int kind = r.nextInt(4);
                ids[j] = kind < 2 ? byteIds[r.nextInt(byteIds.length)]
                        : kind == 2 ? r.nextInt(t.vocabularySize()) : t.vocabularySize() - 1 - r.nextInt(300);
            }
            for (boolean skip : new boolean[]{false, true}) {
                String want = hf.decode(longs(ids), skip);
                String got = t.decode(ids, skip);
                if (!want.equals(got)) {
                    failures.add("decode(" + Arrays.toString(ids) + ", " + skip + "): expected " + quote(want)
                            + ", got " + quote(got));
                }
            }
            if (p == NpmTokenizerFiles.Package.LLAMA3 && !stream(t, ids).equals(t.decode(ids, true))) {
                failures.add("the text stream of " + Arrays.toString(ids) + " is " + quote(stream(t, ids)));
            }
        }
        assertTrue(failures.isEmpty(), () -> failures.size() + " decodings differ, e.g.\n"
                + String.join("\n", failures.subList(0, Math.min(10, failures.size()))));
    }

    @ParameterizedTest
    @EnumSource(NpmTokenizerFiles.Package.class)
    void encodesA4096TokenPromptInWellUnder100Ms(NpmTokenizerFiles.Package p) {
        Tokenizer shared = mine(p);
        HuggingFaceTokenizer hf = oracle(p);
        shared.encode(String.join("\n", TestCorpus.lines(SEED + 1, 2000)), false); // the JIT warms up
        long best = Long.MAX_VALUE;
        for (int run = 0; run < 3; run++) {
            String prompt = prompt(shared, SEED + 100 + run);
            // A tokenizer just loaded: its word cache is empty, as for the first prompt of a run.
            Tokenizer fresh = Tokenizer.load(NpmTokenizerFiles.folder(p));
            long start = System.nanoTime();
            int[] ids = fresh.encode(prompt, true);
            best = Math.min(best, System.nanoTime() - start);
            assertTrue(ids.length >= 4096, ids.length + " tokens");
            assertEquals(Arrays.toString(ints(hf.encode(prompt, true, false).getIds())), Arrays.toString(ids));
        }
        double ms = best / 1e6;
        System.out.printf("%s: a 4096-token prompt encoded in %.1f ms by a tokenizer with an empty word cache "
                + "(best of 3)%n", p, ms);
        assertTrue(ms < 100, p + ": a 4096-token prompt took " + ms + " ms");
    }

    private static String prompt(Tokenizer t, long seed) {
        StringBuilder s = new StringBuilder();
        Random r = new Random(seed);
        List<String> lines = TestCorpus.lines(seed, 4000);
        while (t.encode(s.toString(), false).length < 4096) {
            s.append(lines.get(r.nextInt(lines.size()))).append('\n');
        }
        return s.toString();
    }

    private static int[] byteTokenIds(Tokenizer t) {
        List<Integer> ids = new ArrayList<>();
        for (int b = 0; b < 256; b++) {
            t.tokenId(String.format("<0x%02X>", b)).ifPresent(ids::add);
            t.tokenId(String.valueOf(ByteLevelAlphabet.charOf(b))).ifPresent(ids::add);
        }
        return ids.stream().mapToInt(Integer::intValue).toArray();
    }

    static String stream(Tokenizer t, int[] ids) {
        TextStream s = t.newTextStream();
        StringBuilder out = new StringBuilder();
        for (int id : ids) {
            out.append(s.push(id));
        }
        return out.append(s.finish()).toString();
    }

    static String quote(String s) {
        StringBuilder q = new StringBuilder("\"");
        s.codePoints().forEach(c -> {
            if (c < 0x20 || c == '"' || c == '\\' || (c >= 0x7F && c < 0xA0)) {
                q.append(String.format("\\u%04X", c));
            } else {
                q.appendCodePoint(c);
            }
        });
        return q.append('"').toString();
    }
}
