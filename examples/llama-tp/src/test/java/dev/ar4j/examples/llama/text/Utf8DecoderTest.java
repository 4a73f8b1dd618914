package dev.ar4j.examples.llama.text;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The lossy UTF-8 decoder: maximal ill-formed subparts, as Rust's from_utf8_lossy. */
class Utf8DecoderTest {

    private static String decode(int... bytes) {
        byte[] b = new byte[bytes.length];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) bytes[i];
        }
        return Utf8Decoder.decode(b);
    }

    @Test
    void replacesEachMaximalIllFormedSubpartOnce() {
        assertEquals("a\uFFFDb", decode('a', 0xE2, 0x82, 'b'));
        assertEquals("\uFFFD\uFFFD", decode(0xE2, 0x82, 0xE2));
        assertEquals("\uFFFD\uFFFD", decode(0xC0, 0x80));              // overlong: two
        assertEquals("\uFFFD\uFFFD\uFFFD", decode(0xED, 0xA0, 0x80));  // a surrogate: three
        assertEquals("\uFFFD\uFFFD", decode(0xF0, 0x80));              // F0 needs 90..BF next
        assertEquals("\uFFFD", decode(0xF4, 0x8F, 0xBF));              // a truncated U+10FFFF
        assertEquals("\uFFFD", decode(0xFF));
        assertEquals("😀", decode(0xF0, 0x9F, 0x98, 0x80));
    }

    @Test
    void agreesWithTheJdkOnValidText() {
        Random r = new Random(7);
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < 20_000; i++) {
            int cp = r.nextInt(0x110000);
            if (cp < 0xD800 || cp > 0xDFFF) {
                s.appendCodePoint(cp);
            }
        }
        String text = s.toString();
        assertEquals(text, Utf8Decoder.decode(text.getBytes(StandardCharsets.UTF_8)));
    }
}
