package dev.ar4j.examples.llama.text;

import java.util.function.IntFunction;

/**
 * Generated ids in, text out as soon as it is complete: a character whose UTF-8 bytes are split over
 * several tokens comes out whole, with the token that completes it. The texts returned by
 * {@link #push} and {@link #finish} together are the tokenizer's {@code decode} of the ids, except
 * where byte tokens are not valid UTF-8 (each ill-formed part is one U+FFFD here; Llama-2's decoder
 * writes one per byte). Not thread-safe: one stream per sequence.
 */
public final class TextStream {

    private final TokenDecoder.Incremental decoder;
    private final IntFunction<String> tokens;
    private final StringBuilder out = new StringBuilder();

    TextStream(TokenDecoder.Incremental decoder, IntFunction<String> tokens) {
        this.decoder = decoder;
        this.tokens = tokens;
    }

    /**
     * Takes the next generated id.
     *
     * @param tokenId the id
     * @return the text that became complete, possibly empty
     */
    public String push(int tokenId) {
        String token = tokens.apply(tokenId);
        if (token == null) {
            return "";
        }
        out.setLength(0);
        decoder.push(token, out);
        return out.toString();
    }

    /**
     * Ends the sequence: an unfinished character becomes U+FFFD.
     *
     * @return the text held back, possibly empty
     */
    public String finish() {
        out.setLength(0);
        decoder.finish(out);
        return out.toString();
    }
}
