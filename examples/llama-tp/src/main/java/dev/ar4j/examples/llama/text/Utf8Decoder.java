package dev.ar4j.examples.llama.text;

/**
 * An incremental, lossy UTF-8 decoder: bytes go in one at a time, every character comes out as soon as
 * its last byte arrives, and each maximal ill-formed subpart becomes one U+FFFD (Unicode's
 * recommended practice, which Rust's {@code String::from_utf8_lossy} follows, so decoded text equals
 * Hugging Face's). Not thread-safe.
 */
final class Utf8Decoder {

    private static final char REPLACEMENT = '\uFFFD';

    private int codePoint;
    private int needed;
    private int lower = 0x80;
    private int upper = 0xBF;

    /** Decodes a whole byte string. */
    static String decode(byte[] bytes) {
        Utf8Decoder d = new Utf8Decoder();
        StringBuilder out = new StringBuilder(bytes.length);
        for (byte b : bytes) {
            d.accept(b, out);
        }
        d.finish(out);
        return out.toString();
    }

    /** Whether a character has begun and not yet ended. */
    boolean pending() {
        return needed > 0;
    }

    /** Takes one byte, appending whatever became complete. */
    void accept(byte value, StringBuilder out) {
        int b = value & 0xFF;
        if (needed > 0) {
            if (b >= lower && b <= upper) {
                codePoint = (codePoint << 6) | (b & 0x3F);
                lower = 0x80;
                upper = 0xBF;
                if (--needed == 0) {
                    out.appendCodePoint(codePoint);
                }
                return;
            }
            // The bytes so far are a maximal ill-formed subpart; this byte starts afresh.
            needed = 0;
            lower = 0x80;
            upper = 0xBF;
            out.append(REPLACEMENT);
        }
        if (b < 0x80) {
            out.append((char) b);
        } else if (b >= 0xC2 && b <= 0xDF) {
            start(b & 0x1F, 1, 0x80, 0xBF);
        } else if (b >= 0xE0 && b <= 0xEF) {
            start(b & 0x0F, 2, b == 0xE0 ? 0xA0 : 0x80, b == 0xED ? 0x9F : 0xBF);
        } else if (b >= 0xF0 && b <= 0xF4) {
            start(b & 0x07, 3, b == 0xF0 ? 0x90 : 0x80, b == 0xF4 ? 0x8F : 0xBF);
        } else {
            out.append(REPLACEMENT);
        }
    }

    /** Ends the input: an unfinished character becomes one U+FFFD. */
    void finish(StringBuilder out) {
        if (needed > 0) {
            needed = 0;
            lower = 0x80;
            upper = 0xBF;
            out.append(REPLACEMENT);
        }
    }

    private void start(int bits, int more, int lo, int hi) {
        codePoint = bits;
        needed = more;
        lower = lo;
        upper = hi;
    }
}
