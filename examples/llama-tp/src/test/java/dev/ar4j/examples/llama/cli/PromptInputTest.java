package dev.ar4j.examples.llama.cli;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The prompt's token ids from each way of giving it, with a tokenizer and without. */
class PromptInputTest {

    /** A stand-in tokenizer: one token per code point. */
    private static final Function<String, int[]> CODE_POINTS = text -> text.codePoints().toArray();

    private static final PromptInput STDIN = new PromptInput(PromptInput.Source.STDIN, null);

    private static InputStream stdin(String text) {
        return new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8));
    }

    private static String refused(PromptInput p, Function<String, int[]> encoder, InputStream in, boolean launched) {
        return assertThrows(UsageException.class, () -> p.resolve(false, encoder, "/m has no tokenizer.json", in,
                launched)).getMessage();
    }

    @Test
    void withATokenizerPromptIsTextEvenWhenItLooksLikeIds() {
        PromptInput p = new PromptInput(PromptInput.Source.TEXT_OR_IDS, "1,2");
        assertArrayEquals(new int[] {'1', ',', '2'}, p.resolve(false, CODE_POINTS, "", null, false));
        assertArrayEquals(new int[] {1, 2}, p.resolve(false, null, "synthetic models have none", null, false));
        PromptInput ids = new PromptInput(PromptInput.Source.IDS, "1,2");
        assertArrayEquals(new int[] {1, 2}, ids.resolve(false, CODE_POINTS, "", null, false));
    }

    @Test
    void textWithoutATokenizerIsRefusedNamingWhyThereIsNone() {
        String m = refused(new PromptInput(PromptInput.Source.TEXT_OR_IDS, "Tell me\na story"), null, null, false);
        assertEquals("--prompt 'Tell me a story': a text prompt needs a tokenizer, and /m has no tokenizer.json; "
                + "give token ids, e.g. --prompt-ids 1,2,3", m);
        String longText = refused(new PromptInput(PromptInput.Source.TEXT_OR_IDS, "x".repeat(100)), null, null, false);
        assertTrue(longText.contains("'" + "x".repeat(37) + "...'"), longText);
        // A mistyped id list is reported as one.
        assertTrue(refused(new PromptInput(PromptInput.Source.TEXT_OR_IDS, "1,-2"), null, null, false)
                .contains("--prompt value 2 must be 0.."));
        assertTrue(PromptInput.looksLikeIds(" 1, 2 ,3"));
        assertFalse(PromptInput.looksLikeIds("1,x"));
    }

    @Test
    void standardInputIsTheTextWithoutItsLastLineBreak() {
        assertArrayEquals(new int[] {'h', 'é', '\n', 0x1F600}, STDIN.resolve(false, CODE_POINTS, "", stdin("hé\n😀\n"),
                false));
        assertArrayEquals(new int[] {'a', '\n'}, STDIN.resolve(false, CODE_POINTS, "", stdin("a\n\r\n"), false));
        // Without a tokenizer, token ids.
        assertArrayEquals(new int[] {5, 6}, STDIN.resolve(false, null, "none", stdin("5,6\n"), false));
        assertEquals("--prompt - (standard input) 'Hi': a text prompt needs a tokenizer, and /m has no "
                + "tokenizer.json; give token ids, e.g. --prompt-ids 1,2,3", refused(STDIN, null, stdin("Hi\n"), false));
    }

    @Test
    void emptyOrSharedStandardInputIsRefused() {
        assertTrue(refused(STDIN, CODE_POINTS, stdin("\n"), false).startsWith("--prompt -: standard input is empty"));
        assertTrue(refused(STDIN, CODE_POINTS, stdin("Hi"), true).startsWith("--prompt - under a launcher"));
        assertTrue(refused(new PromptInput(PromptInput.Source.TEXT_OR_IDS, "x"), text -> new int[0], null, false)
                .contains("makes no tokens"));
        assertEquals("--prompt is empty; give the prompt's text", refused(new PromptInput(PromptInput.Source.TEXT_OR_IDS,
                " "), CODE_POINTS, null, false));
    }

    @Test
    void defaultsAndTheLengthLimit() {
        PromptInput d = new PromptInput(PromptInput.Source.DEFAULT, null);
        assertArrayEquals(new int[] {1, 2, 3, 4}, d.resolve(false, CODE_POINTS, "", null, false));
        assertEquals(512, d.resolve(true, null, "", null, false).length);
        String tooLong = refused(new PromptInput(PromptInput.Source.TEXT_OR_IDS, "long"),
                text -> new int[PromptInput.MAX_TOKENS + 1], null, false);
        assertEquals("--prompt: 1048577 tokens, more than 1048576", tooLong);
        assertThrows(IllegalArgumentException.class, () -> new PromptInput(PromptInput.Source.IDS, null));
    }

    @Test
    void aBatchsPromptsAreLinesOrIdListsSeparatedBySemicolons() {
        PromptInput text = new PromptInput(PromptInput.Source.TEXT_OR_IDS, "ab\r\nc");
        int[][] two = text.resolveBatch(2, CODE_POINTS, "", null, false);
        assertArrayEquals(new int[] {'a', 'b'}, two[0]);
        assertArrayEquals(new int[] {'c'}, two[1]);
        PromptInput ids = new PromptInput(PromptInput.Source.IDS, "1,2;3");
        int[][] fromIds = ids.resolveBatch(2, null, "synthetic models have none", null, false);
        assertArrayEquals(new int[] {1, 2}, fromIds[0]);
        assertArrayEquals(new int[] {3}, fromIds[1]);
        int[][] fromStdin = STDIN.resolveBatch(3, CODE_POINTS, "", stdin("x\ny\nz\n"), false);
        assertArrayEquals(new int[] {'z'}, fromStdin[2]);
        // Without a tokenizer, lines of ids.
        int[][] idLines = new PromptInput(PromptInput.Source.TEXT_OR_IDS, "4,5\n6").resolveBatch(2, null, "none", null,
                false);
        assertArrayEquals(new int[] {6}, idLines[1]);
    }

    @Test
    void aBatchWithTheWrongNumberOfPromptsOrAnEmptyOneIsRefused() {
        String count = assertThrows(UsageException.class, () -> new PromptInput(PromptInput.Source.IDS, "1,2;3")
                .resolveBatch(3, null, "none", null, false)).getMessage();
        assertEquals("--prompt-ids gives 2 prompts but --batch is 3: give one prompt per sequence (id lists separated "
                + "by ';')", count);
        String lines = assertThrows(UsageException.class, () -> new PromptInput(PromptInput.Source.TEXT_OR_IDS, "a")
                .resolveBatch(2, CODE_POINTS, "", null, false)).getMessage();
        assertTrue(lines.contains("gives 1 prompt but --batch is 2") && lines.contains("one per line"), lines);
        String empty = assertThrows(UsageException.class, () -> new PromptInput(PromptInput.Source.TEXT_OR_IDS, "a\n ")
                .resolveBatch(2, CODE_POINTS, "", null, false)).getMessage();
        assertTrue(empty.contains("(prompt 2 of 2) is empty"), empty);
        String none = assertThrows(UsageException.class, () -> new PromptInput(PromptInput.Source.DEFAULT, null)
                .resolveBatch(2, null, "none", null, false)).getMessage();
        assertTrue(none.startsWith("--batch 2 in generate takes 2 prompts"), none);
    }
}
