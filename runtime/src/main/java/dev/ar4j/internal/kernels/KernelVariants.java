package dev.ar4j.internal.kernels;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * The kernel variants of {@code ar4j_set_variants} (ABI 0.7): their names, their C flag bits, and
 * the parsing of a comma-separated list of names. Nothing is on by default; every variant gives
 * the default kernels' results bitwise and keeps their failure containment. Needs no native
 * library (the bits are the header's literals; a test compares them with the bindings').
 *
 * <ul>
 *   <li>{@code early-trigger} ({@value #PUSH_EARLY_TRIGGER}): the push kernels let the next
 *       kernel of the stream launch at once (programmatic dependent launch); in effect only when no
 *       two ranks share a GPU, and only with PDL on;</li>
 *   <li>{@code clear-on-read} ({@value #PUSH_CLEAR_ON_READ}): the push kernels clear each pack
 *       of their buffers right after reading it instead of refilling at the end of the next launch;</li>
 *   <li>{@code fused-grid-push} ({@value #FUSED_GRID_PUSH}): the fused push all-reduce + residual +
 *       RMSNorm pushes with the whole grid (norm per row);</li>
 *   <li>{@code two-stage-push} ({@value #TWO_STAGE_PUSH}): two-stage calls run a push-based kernel
 *       (posted writes only) where its scratch fits in the staging size, else the pull kernel;</li>
 *   <li>{@code push-pass-on-poison} ({@value #PUSH_PASS_ON_POISON}): a push kernel that gives up
 *       passes the poison on to every peer, as the pull kernels do.</li>
 * </ul>
 * {@code none} is 0, {@code all} every variant.
 */
public final class KernelVariants {

    /** {@code AR4J_VARIANT_PUSH_EARLY_TRIGGER}. */
    public static final int PUSH_EARLY_TRIGGER = 1;
    /** {@code AR4J_VARIANT_PUSH_CLEAR_ON_READ}. */
    public static final int PUSH_CLEAR_ON_READ = 2;
    /** {@code AR4J_VARIANT_FUSED_GRID_PUSH}. */
    public static final int FUSED_GRID_PUSH = 4;
    /** {@code AR4J_VARIANT_TWO_STAGE_PUSH}. */
    public static final int TWO_STAGE_PUSH = 8;
    /** {@code AR4J_VARIANT_PUSH_PASS_ON_POISON}. */
    public static final int PUSH_PASS_ON_POISON = 16;
    /** {@code AR4J_VARIANTS_ALL}. */
    public static final int ALL = 31;

    /** The accepted names, for error messages. */
    public static final String ACCEPTED = "none, all, early-trigger, clear-on-read, fused-grid-push, two-stage-push, "
            + "push-pass-on-poison (comma-separated, case-insensitive)";

    private static final String[] NAMES = {"early-trigger", "clear-on-read", "fused-grid-push", "two-stage-push",
        "push-pass-on-poison"};

    private KernelVariants() {
    }

    /**
     * Parses a comma-separated list of variant names ({@value #ACCEPTED}).
     *
     * @param text   the list; blank means none
     * @param source where it came from, for the error message
     * @return the C flags
     * @throws IllegalArgumentException for an unknown name, naming the source and the accepted names
     * @throws NullPointerException if an argument is {@code null}
     */
    public static int parse(String text, String source) {
        Objects.requireNonNull(text, "text");
        Objects.requireNonNull(source, "source");
        int flags = 0;
        for (String part : text.split(",")) {
            String name = part.trim().toLowerCase(Locale.ROOT);
            if (name.isEmpty() || name.equals("none")) {
                continue;
            }
            if (name.equals("all")) {
                flags |= ALL;
                continue;
            }
            int bit = -1;
            for (int i = 0; i < NAMES.length; i++) {
                if (NAMES[i].equals(name)) {
                    bit = 1 << i;
                }
            }
            if (bit < 0) {
                throw new IllegalArgumentException(source + " names the kernel variant '" + part.trim()
                        + "', which does not exist; accepted: " + ACCEPTED);
            }
            flags |= bit;
        }
        return flags;
    }

    /**
     * The names of the variants in {@code flags}, comma-separated; {@code none} for 0.
     *
     * @param flags C flags ({@link #ALL} bits; others are ignored)
     * @return the names, never empty
     */
    public static String describe(int flags) {
        List<String> names = new ArrayList<>();
        for (int i = 0; i < NAMES.length; i++) {
            if ((flags & (1 << i)) != 0) {
                names.add(NAMES[i]);
            }
        }
        return names.isEmpty() ? "none" : String.join(",", names);
    }
}
