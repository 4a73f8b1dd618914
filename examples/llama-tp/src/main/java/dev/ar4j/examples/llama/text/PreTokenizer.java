package dev.ar4j.examples.llama.text;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The pre-tokenizers this tokenizer implements, applied in order to every piece: {@code Split} on a
 * regular expression with the {@code Isolated} behaviour (matches and the text between them each become
 * a piece) and {@code ByteLevel} without its own regex and prefix space (each piece's UTF-8 bytes as
 * byte-level characters), which is Llama-3's {@code Sequence}.
 */
final class PreTokenizer {

    /**
     * The Llama-3 (tiktoken cl100k-style) split pattern, the one regex accepted. Java's engine runs it
     * with the meaning Oniguruma gives it in Hugging Face tokenizers: {@code \s} is Unicode White_Space
     * ({@code UNICODE_CHARACTER_CLASS}), {@code \p{L}} and {@code \p{N}} are general categories of code
     * points (a supplementary character is one character), {@code (?i:)} folds case by Unicode rules.
     */
    static final String LLAMA3_PATTERN = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}|"
            + " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

    /** The patterns accepted in a {@code Split}, those whose Java reading has been checked. */
    static final List<String> ACCEPTED_PATTERNS = List.of(LLAMA3_PATTERN);

    /** One step. */
    sealed interface Step permits Split, ByteLevel {
    }

    /** {@code Split} with a regex, {@code Isolated}, not inverted. */
    record Split(Pattern pattern) implements Step {
    }

    /** {@code ByteLevel} with {@code use_regex} false and no prefix space. */
    record ByteLevel() implements Step {
    }

    static Pattern compile(String regex) {
        return Pattern.compile(regex, Pattern.UNICODE_CHARACTER_CLASS);
    }

    private final List<Step> steps;

    PreTokenizer(List<Step> steps) {
        this.steps = List.copyOf(steps);
    }

    /** The words of a normalized piece, in order. */
    List<String> words(String text) {
        List<String> pieces = new ArrayList<>();
        pieces.add(text);
        for (Step step : steps) {
            List<String> next = new ArrayList<>(pieces.size() * 2);
            for (String piece : pieces) {
                switch (step) {
                    case Split s -> isolate(s.pattern(), piece, next);
                    case ByteLevel b -> next.add(ByteLevelAlphabet.encode(piece));
                }
            }
            pieces = next;
        }
        return pieces;
    }

    private static void isolate(Pattern pattern, String piece, List<String> out) {
        Matcher m = pattern.matcher(piece);
        int last = 0;
        while (m.find()) {
            if (m.end() == m.start()) {
                continue;
            }
            if (m.start() > last) {
                out.add(piece.substring(last, m.start()));
            }
            out.add(piece.substring(m.start(), m.end()));
            last = m.end();
        }
        if (last < piece.length()) {
            out.add(piece.substring(last));
        }
    }
}
