package dev.ar4j.examples.llama.text;

/**
 * One entry of {@code tokenizer.json}'s {@code added_tokens}: a token matched in the text before the
 * model sees it, with Hugging Face's matching flags.
 *
 * @param id         its id
 * @param content    its text
 * @param special    whether decoding with {@code skipSpecialTokens} drops it
 * @param singleWord matched only where no word character touches it
 * @param lstrip     the whitespace before it is taken into the match
 * @param rstrip     the whitespace after it is taken into the match
 * @param normalized matched in the normalized text rather than in the raw input
 */
record AddedToken(int id, String content, boolean special, boolean singleWord, boolean lstrip, boolean rstrip,
                  boolean normalized) {
}
