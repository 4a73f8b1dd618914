package dev.ar4j.examples.llama;

import dev.ar4j.examples.llama.cli.AnswerFormat;
import dev.ar4j.examples.llama.cli.LlamaCommand;
import dev.ar4j.examples.llama.cli.LlamaOptions;
import dev.ar4j.examples.llama.text.SyntheticTokenizerFiles;
import dev.ar4j.examples.llama.text.Tokenizer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Text in and text out with a model folder's tokenizer, up to the GPU: the prompt encoded (given, or from standard
 * input), the answer's format and its printing, the end-of-sequence ids.
 */
class TextPromptTest {

    /** A model folder with a config (64 positions) and, if asked, the tokenizer; no weights. */
    private static Path folder(Path dir, boolean tokenizer) throws IOException {
        Files.writeString(dir.resolve("config.json"), """
                {"hidden_size": 512, "intermediate_size": 1408, "num_hidden_layers": 4, "num_attention_heads": 8,
                 "num_key_value_heads": 4, "vocab_size": 4096, "max_position_embeddings": 64, "eos_token_id": 2}""");
        if (tokenizer) {
            Files.writeString(dir.resolve("tokenizer.json"), SyntheticTokenizerFiles.sentencePiece());
        }
        return dir;
    }

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int run(String stdin, String... args) {
        return LlamaMain.run(args, new ByteArrayInputStream(stdin.getBytes(StandardCharsets.UTF_8)),
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    private String errors() {
        return err.toString(StandardCharsets.UTF_8);
    }

    @Test
    void aTextPromptIsEncodedWithTheFoldersTokenizer(@TempDir Path dir) throws IOException {
        folder(dir, true);
        Tokenizer t = Tokenizer.load(dir);
        int abc = t.encode("abc ab", true).length;
        // The prompt's length shows in the context check, which runs before any GPU work.
        assertEquals(2, run("", "--model", dir.toString(), "--prompt", "abc ab", "--context", "8",
                "--max-new-tokens", "8"));
        assertTrue(errors().contains("the prompt (" + abc + " tokens) + --steps (--max-new-tokens) 8"), errors());
        // With a tokenizer, --prompt 1,2,3 is text; --prompt-ids stays token ids.
        int digits = t.encode("1,2,3", true).length;
        assertTrue(digits > 3, "byte fallback: " + digits);
        assertEquals(2, run("", "--model", dir.toString(), "--prompt", "1,2,3", "--context", "8", "--steps", "8"));
        assertTrue(errors().contains("the prompt (" + digits + " tokens)"), errors());
        assertEquals(2, run("", "--model", dir.toString(), "--prompt-ids", "1,2,3", "--context", "8", "--steps", "8"));
        assertTrue(errors().contains("the prompt (3 tokens)"), errors());
    }

    @Test
    void aBatchsPromptsAreEncodedLineByLineAndTheLongestIsChecked(@TempDir Path dir) throws IOException {
        folder(dir, true);
        Tokenizer t = Tokenizer.load(dir);
        int longest = t.encode("abc ab abc", true).length;
        assertTrue(longest > t.encode("ab", true).length);
        assertEquals(2, run("ab\nabc ab abc\n", "--model", dir.toString(), "--batch", "2", "--prompt", "-",
                "--context", "8", "--steps", "8"));
        assertTrue(errors().contains("the prompt (" + longest + " tokens) + --steps (--max-new-tokens) 8"), errors());
        assertEquals(2, run("", "--model", dir.toString(), "--batch", "3", "--prompt", "ab\nc", "--steps", "8"));
        assertTrue(errors().contains("--prompt gives 2 prompts but --batch is 3"), errors());
        assertEquals(2, run("", "--model", dir.toString(), "--batch", "2", "--prompt-ids", "1,2;4096", "--steps", "8"));
        assertTrue(errors().contains("--prompt-ids (prompt 2): token 0 is 4096, outside the vocabulary of 4096"),
                errors());
    }

    @Test
    void standardInputIsEncodedToo(@TempDir Path dir) throws IOException {
        folder(dir, true);
        int n = Tokenizer.load(dir).encode("ab\nc", true).length;
        assertEquals(2, run("ab\nc\n", "--model", dir.toString(), "--prompt", "-", "--context", "8", "--steps", "8"));
        assertTrue(errors().contains("the prompt (" + n + " tokens)"), errors());
    }

    @Test
    void aFolderWithoutTokenizerRefusesTextNamingTheFile(@TempDir Path dir) throws IOException {
        folder(dir, false);
        assertEquals(2, run("", "--model", dir.toString(), "--prompt", "Hello there"));
        assertTrue(errors().contains("--prompt 'Hello there': a text prompt needs a tokenizer, and " + dir
                + " has no tokenizer.json; give token ids, e.g. --prompt-ids 1,2,3"), errors());
        assertEquals(2, run("", "--model", dir.toString(), "--output", "text"));
        assertTrue(errors().contains("--output text needs the model's tokenizer"), errors());
    }

    @Test
    void aBrokenTokenizerIsAModelFolderError(@TempDir Path dir) throws IOException {
        folder(dir, false);
        Files.writeString(dir.resolve("tokenizer.json"), "{\"model\": ");
        assertEquals(3, run("", "--model", dir.toString(), "--prompt", "Hello"));
        assertTrue(errors().contains("tokenizer.json"), errors());
        // bench with token ids does not need it: the context check speaks instead.
        assertEquals(2, run("", "--model", dir.toString(), "--mode", "bench", "--prompt-ids", "1,2,3", "--context", "3"));
        assertTrue(errors().contains("do not fit --context 3"), errors());
    }

    @Test
    void theAnswerIsTextWithATokenizerIdsWithoutAndStopsAtItsEos(@TempDir Path dir) throws IOException {
        folder(dir, true);
        Tokenizer t = Tokenizer.load(dir);
        LlamaOptions text = LlamaCommand.parse("--model", dir.toString(), "--prompt", "ab").withPrompt(new int[] {1},
                true);
        assertEquals(AnswerFormat.TEXT, text.output());
        assertArrayEquals(t.eosTokenIds(), Runner.stopTokens(t));
        assertArrayEquals(new int[0], Runner.stopTokens(null));
        AnswerPrinter p = Runner.printer(text, t, new PrintStream(out, true, StandardCharsets.UTF_8));
        byte[] e = "é".getBytes(StandardCharsets.UTF_8);
        // "ab", then é as two byte tokens: nothing printed until the second, then the character whole.
        p.accept(t.encode("ab", false)[0]);
        String afterAb = out.toString(StandardCharsets.UTF_8);
        p.accept(3 + (e[0] & 0xff));
        assertEquals(afterAb, out.toString(StandardCharsets.UTF_8));
        p.accept(3 + (e[1] & 0xff));
        p.accept(2); // </s>: not printed
        p.finish();
        assertEquals(afterAb + "é" + System.lineSeparator(), out.toString(StandardCharsets.UTF_8));
        assertTrue(afterAb.endsWith("ab"), afterAb);
        LlamaOptions ids = LlamaCommand.parse("--model", dir.toString(), "--output", "ids").withPrompt(new int[] {1},
                true);
        out.reset();
        AnswerPrinter q = Runner.printer(ids, t, new PrintStream(out, true, StandardCharsets.UTF_8));
        q.accept(5);
        q.accept(2);
        q.finish();
        assertEquals("tokens: 5,2" + System.lineSeparator(), out.toString(StandardCharsets.UTF_8));
        assertNull(LlamaCommand.parse("--model", dir.toString(), "--mode", "bench").withPrompt(new int[] {1}, true)
                .output());
    }
}
