package dev.ar4j.benchmarks.perf;

import java.util.Locale;

/**
 * Byte counts as the command line writes them: {@code 1024}, {@code 1K}, {@code 64M}, {@code 1G}
 * (powers of 1024, as in nccl-tests), with an optional {@code B} or {@code iB} after the suffix.
 */
public final class ByteSizes {
    private ByteSizes() {
    }

    /**
     * Parses a byte count: digits with an optional K, M or G suffix (powers of 1024), optionally
     * followed by B or iB, case-insensitive and ignoring surrounding blanks ({@code 43008},
     * {@code 64M}, {@code 1GiB}).
     *
     * @param text the byte count as typed
     * @return the count in bytes, positive
     * @throws IllegalArgumentException if the text is not a positive whole number with an optional
     *                                  K, M or G suffix, or overflows a long
     */
    public static long parse(String text) {
        String t = text.trim().toUpperCase(Locale.ROOT);
        if (t.endsWith("IB")) {
            t = t.substring(0, t.length() - 2);
        } else if (t.endsWith("B")) {
            t = t.substring(0, t.length() - 1);
        }
        int shift = 0;
        if (!t.isEmpty()) {
            switch (t.charAt(t.length() - 1)) {
                case 'K' -> shift = 10;
                case 'M' -> shift = 20;
                case 'G' -> shift = 30;
                default -> {
                }
            }
        }
        String digits = shift == 0 ? t : t.substring(0, t.length() - 1);
        if (digits.isEmpty() || !digits.chars().allMatch(Character::isDigit)) {
            throw new IllegalArgumentException("'" + text + "' is not a byte count; write a whole number with an "
                    + "optional K, M or G suffix (powers of 1024), e.g. 1024, 43008, 1K, 64M, 1G");
        }
        long value;
        try {
            value = Long.parseLong(digits);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("'" + text + "' is too large a byte count", e);
        }
        if (value <= 0) {
            throw new IllegalArgumentException("a byte count must be positive, got '" + text + "'");
        }
        if (value > (Long.MAX_VALUE >> shift)) {
            throw new IllegalArgumentException("'" + text + "' is too large a byte count");
        }
        return value << shift;
    }

    /**
     * The shortest exact spelling of a byte count, for tables and series names: the largest of G, M
     * and K (powers of 1024) that divides it, else the plain number; the inverse of {@link #parse}.
     *
     * @param bytes the byte count
     * @return e.g. "1K", "64M", "43008"
     */
    public static String format(long bytes) {
        if (bytes >= 1L << 30 && bytes % (1L << 30) == 0) {
            return (bytes >> 30) + "G";
        }
        if (bytes >= 1L << 20 && bytes % (1L << 20) == 0) {
            return (bytes >> 20) + "M";
        }
        if (bytes >= 1L << 10 && bytes % (1L << 10) == 0) {
            return (bytes >> 10) + "K";
        }
        return Long.toString(bytes);
    }
}
