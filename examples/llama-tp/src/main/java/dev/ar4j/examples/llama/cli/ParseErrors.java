package dev.ar4j.examples.llama.cli;

import picocli.CommandLine;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.ParameterException;

import java.util.List;

/**
 * picocli's parse errors in {@code ar4j-llama}'s words: an unknown option or a stray argument, an
 * option without its value, an option given twice, a value after a flag. Each becomes a
 * {@link UsageException} naming the option, as the command said before it ran on picocli.
 */
final class ParseErrors {

    private ParseErrors() {
    }

    /**
     * Parses {@code args} into the command's object.
     *
     * @param cli  the command line
     * @param args the arguments
     * @return picocli's result (help, version and subcommand requests are in it)
     * @throws UsageException naming what is wrong
     */
    static CommandLine.ParseResult parse(CommandLine cli, String... args) {
        for (String a : args) {
            int eq = a.indexOf('=');
            OptionSpec flag = eq > 0 ? cli.getCommandSpec().findOption(a.substring(0, eq)) : null;
            if (flag != null && flag.arity().max() == 0) {
                // picocli accepts --flag=true; the command never did.
                throw new UsageException(flag.longestName() + " takes no value");
            }
        }
        try {
            return cli.parseArgs(args);
        } catch (ParameterException e) {
            throw new UsageException(message(e));
        }
    }

    /**
     * The message of a picocli parse error.
     *
     * @param e the error
     * @return what the command says about it
     */
    static String message(ParameterException e) {
        if (e instanceof CommandLine.UnmatchedArgumentException u && !u.getUnmatched().isEmpty()) {
            String a = u.getUnmatched().getFirst();
            if (a.startsWith("-")) {
                int eq = a.indexOf('=');
                return "unknown option " + (eq > 0 ? a.substring(0, eq) : a) + " (try --help)";
            }
            return "unexpected argument '" + a + "' (options start with --; try --help)";
        }
        if (e instanceof CommandLine.MissingParameterException m) {
            List<ArgSpec> missing = m.getMissing();
            if (missing != null && !missing.isEmpty() && missing.getFirst() instanceof OptionSpec o) {
                return o.longestName() + " needs a value";
            }
        }
        if (e instanceof CommandLine.OverwrittenOptionException o && o.getOverwritten() instanceof OptionSpec spec) {
            return spec.longestName() + " is given twice";
        }
        return e.getMessage();
    }
}
