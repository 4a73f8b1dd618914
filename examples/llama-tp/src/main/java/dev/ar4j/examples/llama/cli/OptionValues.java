package dev.ar4j.examples.llama.cli;

/**
 * The values of {@code ar4j-llama}'s options as text: whole numbers in a range, decimal numbers and comma-separated
 * lists of them. Every failure is a {@link UsageException} naming the option, what was given and
 * what is accepted.
 */
final class OptionValues {

    private OptionValues() {
    }

    /**
     * A whole number in {@code min..max}.
     *
     * @param option the option (or "OPTION value I"), for the message
     * @param text   the value
     * @param min    the smallest accepted
     * @param max    the largest accepted
     * @return the number
     * @throws UsageException when it is not a whole number or outside the range
     */
    static int intValue(String option, String text, int min, int max) {
        long v = longValue(option, text);
        if (v < min || v > max) {
            throw new UsageException(option + " must be " + min + ".." + max + ", got " + text);
        }
        return (int) v;
    }

    /**
     * A whole number.
     *
     * @param option the option, for the message
     * @param text   the value
     * @return the number
     * @throws UsageException when it is not a whole number
     */
    static long longValue(String option, String text) {
        try {
            return Long.parseLong(text.trim());
        } catch (NumberFormatException e) {
            throw new UsageException(option + ": '" + text + "' is not a whole number");
        }
    }

    /**
     * A decimal number (the range is the caller's to check).
     *
     * @param option the option, for the message
     * @param text   the value
     * @return the number
     * @throws UsageException when it is not a number
     */
    static double doubleValue(String option, String text) {
        try {
            return Double.parseDouble(text.trim());
        } catch (NumberFormatException e) {
            throw new UsageException(option + ": '" + text + "' is not a number");
        }
    }

    /**
     * Comma-separated whole numbers, each in {@code min..max}.
     *
     * @param option the option, for the message
     * @param text   the value, e.g. {@code 1,2,3}
     * @param min    the smallest accepted
     * @param max    the largest accepted
     * @return the numbers
     * @throws UsageException naming the first value that is empty, not a number or outside the range
     */
    static int[] ids(String option, String text, int min, int max) {
        if (text.isBlank()) {
            throw new UsageException(option + " is empty; give comma-separated whole numbers, e.g. 1,2,3");
        }
        String[] parts = text.split(",", -1);
        int[] out = new int[parts.length];
        for (int i = 0; i < parts.length; i++) {
            if (parts[i].isBlank()) {
                throw new UsageException(option + ": value " + (i + 1) + " of '" + text + "' is empty");
            }
            out[i] = intValue(option + " value " + (i + 1), parts[i], min, max);
        }
        return out;
    }
}
