package dev.ar4j.examples.llama;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The answer as it is printed while the tokens come. */
class AnswerPrinterTest {

    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    private final PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);

    private String printed() {
        return bytes.toString(StandardCharsets.UTF_8);
    }

    /**
     * A stand-in for the tokenizer's text stream: each token is some bytes; the stream gives back the complete
     * characters so far and holds the rest.
     */
    private static final class ByteStream {
        final Map<Integer, byte[]> vocabulary;
        final ByteArrayOutputStream pending = new ByteArrayOutputStream();

        ByteStream(Map<Integer, byte[]> vocabulary) {
            this.vocabulary = vocabulary;
        }

        String push(int token) {
            pending.writeBytes(vocabulary.get(token));
            byte[] b = pending.toByteArray();
            int whole = b.length;
            // Hold back an incomplete UTF-8 sequence at the end.
            for (int i = Math.max(0, b.length - 3); i < b.length; i++) {
                int lead = b[i] & 0xff;
                int need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
                if (lead >= 0xc0 && i + need > b.length) {
                    whole = i;
                    break;
                }
            }
            pending.reset();
            pending.write(b, whole, b.length - whole);
            return new String(b, 0, whole, StandardCharsets.UTF_8);
        }

        String finish() {
            String rest = pending.toString(StandardCharsets.UTF_8);
            pending.reset();
            return rest;
        }
    }

    @Test
    void textIsPrintedAsItComesACharacterSplitAcrossTokensWhole() {
        byte[] emoji = "😀".getBytes(StandardCharsets.UTF_8);
        ByteStream stream = new ByteStream(Map.of(1, "Hi ".getBytes(StandardCharsets.UTF_8),
                2, new byte[] {emoji[0], emoji[1]}, 3, new byte[] {emoji[2], emoji[3]}, 4, "!".getBytes(StandardCharsets.UTF_8),
                9, "<eos>".getBytes(StandardCharsets.UTF_8)));
        AnswerPrinter p = AnswerPrinter.text(out, stream::push, stream::finish, new int[] {9});
        List<String> seen = new ArrayList<>();
        for (int t : new int[] {1, 2, 3, 4, 9}) {
            p.accept(t);
            seen.add(printed());
        }
        p.finish();
        assertEquals(List.of("Hi ", "Hi ", "Hi 😀", "Hi 😀!", "Hi 😀!"), seen);
        assertEquals("Hi 😀!" + System.lineSeparator(), printed());
    }

    @Test
    void idsArePrintedOnOneLineAsTheyCome() {
        AnswerPrinter p = AnswerPrinter.ids(out);
        p.accept(5);
        assertEquals("tokens: 5", printed());
        p.accept(6);
        p.accept(2);
        p.finish();
        assertEquals("tokens: 5,6,2" + System.lineSeparator(), printed());
    }

    @Test
    void thePromptIdsLineListsTheIds() {
        assertEquals("prompt ids: 128000,791,6864", AnswerPrinter.promptIdsLine(new int[] {128000, 791, 6864}));
        assertEquals("prompt ids: 7", AnswerPrinter.promptIdsLine(new int[] {7}));
    }
}
