package dev.ar4j.examples.llama;

import java.io.PrintStream;
import java.util.function.IntConsumer;
import java.util.function.IntFunction;
import java.util.function.Supplier;

/**
 * Prints the answer as its tokens come: as text through a tokenizer's text stream (which holds back
 * the bytes of a character split across tokens until it is whole; end-of-sequence tokens are not
 * printed), or as one line of token ids, {@code tokens: 1,2,3}. {@link #finish} ends the line.
 */
public final class AnswerPrinter implements IntConsumer {

    private final PrintStream out;
    private final IntFunction<String> text;
    private final Supplier<String> rest;
    private final int[] silent;
    private boolean started;

    private AnswerPrinter(PrintStream out, IntFunction<String> text, Supplier<String> rest, int[] silent) {
        this.out = out;
        this.text = text;
        this.rest = rest;
        this.silent = silent.clone();
    }

    /**
     * Text through a tokenizer's text stream ({@code TextStream::push}, {@code TextStream::finish}).
     *
     * @param out        where the answer goes
     * @param push       the text a token completes (possibly empty)
     * @param finish     the text still held back at the end
     * @param stopTokens end-of-sequence tokens, not printed
     * @return the printer
     */
    public static AnswerPrinter text(PrintStream out, IntFunction<String> push, Supplier<String> finish,
                                     int[] stopTokens) {
        return new AnswerPrinter(out, push, finish, stopTokens);
    }

    /**
     * Token ids: {@code tokens: 1,2,3} on one line, each id printed as it comes.
     *
     * @param out where the answer goes
     * @return the printer
     */
    public static AnswerPrinter ids(PrintStream out) {
        return new AnswerPrinter(out, null, null, new int[0]);
    }

    /**
     * The prompt's token ids as {@code --output ids} prints them on standard error before the answer, so that
     * a text prompt's encoding can be checked: {@code prompt ids: 128000,791,6864}.
     *
     * @param prompt the prompt's token ids
     * @return the line, without its line break
     */
    public static String promptIdsLine(int[] prompt) {
        return idsLine("prompt ids: ", prompt);
    }

    /**
     * Ids as one line: the label, then the ids separated by commas ({@code tokens 0: 1,2,3} for a batch's answers).
     *
     * @param label what comes before the ids
     * @param ids   the ids
     * @return the line, without its line break
     */
    public static String idsLine(String label, int[] ids) {
        StringBuilder line = new StringBuilder(label);
        for (int i = 0; i < ids.length; i++) {
            line.append(i == 0 ? "" : ",").append(ids[i]);
        }
        return line.toString();
    }

    @Override
    public void accept(int token) {
        for (int s : silent) {
            if (s == token) {
                return;
            }
        }
        if (text == null) {
            out.print((started ? "," : "tokens: ") + token);
        } else {
            out.print(text.apply(token));
        }
        started = true;
        out.flush();
    }

    /** Prints what the text stream still holds and ends the line. */
    public void finish() {
        if (text != null) {
            out.print(rest.get());
        } else if (!started) {
            out.print("tokens: ");
        }
        out.println();
        out.flush();
    }
}
