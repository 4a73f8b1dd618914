package dev.ar4j.examples.llama.text;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * The decoders this tokenizer implements: {@code ByteLevel} (Llama-3: every token's characters are bytes,
 * the whole byte string read as lossy UTF-8), and the SentencePiece chain of Llama-2, a {@code Sequence}
 * of literal {@code Replace}s ({@code "▁"} to {@code " "}), {@code ByteFallback} ({@code <0xXX>} tokens
 * are bytes; a run of them that is not UTF-8 gives one U+FFFD per byte), {@code Fuse} and
 * {@code Strip} of leading characters ({@code " "}, once).
 */
sealed interface TokenDecoder permits TokenDecoder.ByteLevel, TokenDecoder.Pieces {

    /** Decodes tokens to text exactly as Hugging Face's decoder does. */
    String decode(List<String> tokens);

    /** A new incremental decoder. */
    Incremental incremental();

    /** Decodes token by token: text comes out once complete. */
    interface Incremental {
        /** Takes one token, appending the text that became complete. */
        void push(String token, StringBuilder out);

        /** Ends the tokens, appending what was held back. */
        void finish(StringBuilder out);
    }

    /** {@code ByteLevel}. */
    record ByteLevel() implements TokenDecoder {
        @Override
        public String decode(List<String> tokens) {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            for (String t : tokens) {
                ByteLevelAlphabet.appendBytes(t, bytes);
            }
            return Utf8Decoder.decode(bytes.toByteArray());
        }

        @Override
        public Incremental incremental() {
            Utf8Decoder utf8 = new Utf8Decoder();
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            return new Incremental() {
                @Override
                public void push(String token, StringBuilder out) {
                    bytes.reset();
                    ByteLevelAlphabet.appendBytes(token, bytes);
                    for (byte b : bytes.toByteArray()) {
                        utf8.accept(b, out);
                    }
                }

                @Override
                public void finish(StringBuilder out) {
                    utf8.finish(out);
                }
            };
        }
    }

    /**
     * The SentencePiece chain.
     *
     * @param replaceFrom  literal patterns replaced in every token, in order
     * @param replaceTo    their replacements
     * @param byteFallback whether {@code <0xXX>} tokens are bytes
     * @param strip        the character stripped from the start of the text ({@code 0}: none)
     * @param stripCount   how many of them at most
     */
    record Pieces(List<String> replaceFrom, List<String> replaceTo, boolean byteFallback, char strip, int stripCount)
            implements TokenDecoder {

        String replaced(String token) {
            String s = token;
            for (int i = 0; i < replaceFrom.size(); i++) {
                if (!replaceFrom.get(i).isEmpty()) {
                    s = s.replace(replaceFrom.get(i), replaceTo.get(i));
                }
            }
            return s;
        }

        /** The byte of a {@code <0xXX>} token, or -1. */
        int byteOf(String token) {
            if (!byteFallback || token.length() != 6 || !token.startsWith("<0x") || token.charAt(5) != '>') {
                return -1;
            }
            // Rust's u8::from_str_radix(.., 16) on the two characters: ASCII hex digits, or '+' and one.
            int lo = hexDigit(token.charAt(4));
            if (token.charAt(3) == '+') {
                return lo;
            }
            int hi = hexDigit(token.charAt(3));
            return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
        }

        private static int hexDigit(char c) {
            return c < 128 ? Character.digit(c, 16) : -1;
        }

        @Override
        public String decode(List<String> tokens) {
            StringBuilder out = new StringBuilder();
            ByteArrayOutputStream run = new ByteArrayOutputStream();
            for (String token : tokens) {
                String t = replaced(token);
                int b = byteOf(t);
                if (b >= 0) {
                    run.write(b);
                    continue;
                }
                flushRun(run, out);
                out.append(t);
            }
            flushRun(run, out);
            return stripStart(out).toString();
        }

        private static void flushRun(ByteArrayOutputStream run, StringBuilder out) {
            if (run.size() == 0) {
                return;
            }
            byte[] bytes = run.toByteArray();
            run.reset();
            try {
                out.append(StandardCharsets.UTF_8.newDecoder().decode(java.nio.ByteBuffer.wrap(bytes)));
            } catch (java.nio.charset.CharacterCodingException notUtf8) {
                out.append("\uFFFD".repeat(bytes.length));
            }
        }

        private StringBuilder stripStart(StringBuilder text) {
            int cut = 0;
            while (cut < stripCount && cut < text.length() && text.charAt(cut) == strip) {
                cut++;
            }
            return cut == 0 ? text : text.delete(0, cut);
        }

        @Override
        public Incremental incremental() {
            Utf8Decoder utf8 = new Utf8Decoder();
            return new Incremental() {
                private int stripped;
                private boolean started;

                @Override
                public void push(String token, StringBuilder out) {
                    String t = replaced(token);
                    int b = byteOf(t);
                    StringBuilder text = new StringBuilder();
                    if (b >= 0) {
                        utf8.accept((byte) b, text);
                    } else {
                        utf8.finish(text);
                        text.append(t);
                    }
                    emit(text, out);
                }

                @Override
                public void finish(StringBuilder out) {
                    StringBuilder text = new StringBuilder();
                    utf8.finish(text);
                    emit(text, out);
                }

                private void emit(StringBuilder text, StringBuilder out) {
                    int cut = 0;
                    while (!started && cut < text.length()) {
                        if (stripped < stripCount && text.charAt(cut) == strip) {
                            stripped++;
                            cut++;
                        } else {
                            started = true;
                        }
                    }
                    out.append(text, cut, text.length());
                }
            };
        }
    }
}
