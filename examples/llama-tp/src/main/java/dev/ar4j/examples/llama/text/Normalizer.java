package dev.ar4j.examples.llama.text;

import java.util.List;
import java.util.function.UnaryOperator;

/**
 * The normalizers this tokenizer implements, applied in order: {@code Prepend} (a prefix put before a
 * non-empty text) and {@code Replace} of a literal string, which is what SentencePiece-style Llama-2
 * files use ({@code Prepend "▁"}, {@code Replace " " → "▁"}).
 */
final class Normalizer implements UnaryOperator<String> {

    /** One step. */
    sealed interface Step permits Prepend, Replace {
    }

    /** {@code Prepend}: the prefix goes before a non-empty text. */
    record Prepend(String prefix) implements Step {
    }

    /** {@code Replace} with a {@code String} pattern: every occurrence, left to right. */
    record Replace(String pattern, String content) implements Step {
    }

    private final List<Step> steps;

    Normalizer(List<Step> steps) {
        this.steps = List.copyOf(steps);
    }

    @Override
    public String apply(String text) {
        String s = text;
        for (Step step : steps) {
            s = switch (step) {
                case Prepend p -> s.isEmpty() ? s : p.prefix() + s;
                case Replace r -> r.pattern().isEmpty() ? s : s.replace(r.pattern(), r.content());
            };
        }
        return s;
    }
}
