package dev.ar4j.examples.llama.text;

/**
 * GPT-2's byte-level alphabet, as Hugging Face's {@code ByteLevel} pre-tokenizer and decoder use it:
 * every byte is one printable character (the printable Latin-1 bytes stand for themselves, the other
 * 68 are mapped in order to U+0100 onwards), so that any byte string is a string of vocabulary symbols.
 */
final class ByteLevelAlphabet {

    private static final char[] BYTE_TO_CHAR = new char[256];
    private static final int[] CHAR_TO_BYTE = new int[512];

    static {
        java.util.Arrays.fill(CHAR_TO_BYTE, -1);
        int next = 256;
        for (int b = 0; b < 256; b++) {
            boolean printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            char c = printable ? (char) b : (char) next++;
            BYTE_TO_CHAR[b] = c;
            CHAR_TO_BYTE[c] = b;
        }
    }

    private ByteLevelAlphabet() {
    }

    /** The text's UTF-8 bytes, each as its byte-level character. */
    static String encode(String text) {
        byte[] bytes = text.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        char[] out = new char[bytes.length];
        for (int i = 0; i < bytes.length; i++) {
            out[i] = BYTE_TO_CHAR[bytes[i] & 0xFF];
        }
        return new String(out);
    }

    /** The byte-level character of a byte (0 to 255). */
    static char charOf(int b) {
        return BYTE_TO_CHAR[b];
    }

    /** The byte a byte-level character stands for, or -1 if it is not one. */
    static int byteOf(char c) {
        return c < CHAR_TO_BYTE.length ? CHAR_TO_BYTE[c] : -1;
    }

    /**
     * Appends a token's bytes as the {@code ByteLevel} decoder reads them: its characters' bytes when
     * every character is in the alphabet, else the token's own UTF-8 (an added token such as an emoji).
     */
    static void appendBytes(String token, java.io.ByteArrayOutputStream out) {
        for (int i = 0; i < token.length(); i++) {
            if (byteOf(token.charAt(i)) < 0) {
                out.writeBytes(token.getBytes(java.nio.charset.StandardCharsets.UTF_8));
                return;
            }
        }
        for (int i = 0; i < token.length(); i++) {
            out.write(byteOf(token.charAt(i)));
        }
    }
}
