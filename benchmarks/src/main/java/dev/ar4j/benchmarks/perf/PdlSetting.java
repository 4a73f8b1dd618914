package dev.ar4j.benchmarks.perf;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;

/**
 * Programmatic dependent launch as a run asks for it ({@code --pdl on,off}): for each setting the
 * communicators are built with {@code Communicator.Builder.pdl(true|false)} and, for anything that
 * reads it at build time, the system property {@value #PROPERTY} set to 1 or 0 (the runtime's
 * property; its environment variable is {@value #ENVIRONMENT}; the builder wins over both), and
 * each row records the setting. Without {@code --pdl} nothing is set and rows say {@code default}
 * (the runtime's default: on, on compute capability 9.0 and newer).
 *
 * <p>Whether the runtime honours the switch is for the runtime to say: {@link #reportedIn} looks
 * for it in what the communicator describes of itself. If it says nothing, the run notes "pdl
 * setting not reported by the runtime" and the on and off figures may measure the same kernels.
 */
public enum PdlSetting {
    /** Nothing set: the runtime's default. */
    DEFAULT("default", null),
    /** {@code -Dar4j.pdl=1}. */
    ON("on", "1"),
    /** {@code -Dar4j.pdl=0}. */
    OFF("off", "0");

    /** The runtime's system property. */
    public static final String PROPERTY = "ar4j.pdl";
    /** The runtime's environment variable (the property wins over it). */
    public static final String ENVIRONMENT = "AR4J_PDL";
    /** The run's note when the runtime's self-description never mentions PDL. */
    public static final String NOT_REPORTED = "pdl setting not reported by the runtime: the communicators were built "
            + "with Builder.pdl(true|false) and -D" + PROPERTY + "=1|0, but neither Communicator.toString(), explain() "
            + "nor its INFO log while building says whether the kernels use PDL (it needs compute capability 9.0 and "
            + "the custom kernels set up); where they do not, the on and off figures measure the same kernels";
    /** The values {@link #parseList} accepts. */
    public static final String ACCEPTED = "on (1, true), off (0, false), comma-separated, e.g. on,off";

    private final String label;
    private final String propertyValue;

    PdlSetting(String label, String propertyValue) {
        this.label = label;
        this.propertyValue = propertyValue;
    }

    /** {@return the {@code pdl} column's value: "default", "on" or "off"} */
    public String label() {
        return label;
    }

    /** {@return what {@code Communicator.Builder.pdl(..)} is given, or empty for {@link #DEFAULT} (not called)} */
    public Optional<Boolean> enabled() {
        return propertyValue == null ? Optional.empty() : Optional.of(this == ON);
    }

    /** {@return the value of {@value #PROPERTY} while the communicators are built, or empty for {@link #DEFAULT}} */
    public Optional<String> propertyValue() {
        return Optional.ofNullable(propertyValue);
    }

    /**
     * Parses {@code --pdl}: {@code on}, {@code off} or both, comma-separated, in order, duplicates
     * dropped; null gives {@code [DEFAULT]}.
     *
     * @param text the value of {@code --pdl} ({@code on}, {@code 1}, {@code true}, {@code off},
     *             {@code 0}, {@code false}, case-insensitive), or null when not given
     * @return an unmodifiable, non-empty list of distinct settings
     * @throws IllegalArgumentException if a part is none of those or no part is given, with a
     *                                  message naming the accepted values
     */
    public static List<PdlSetting> parseList(String text) {
        if (text == null) {
            return List.of(DEFAULT);
        }
        Set<PdlSetting> result = new LinkedHashSet<>();
        for (String part : text.split(",")) {
            String t = part.trim().toLowerCase(Locale.ROOT);
            if (t.isEmpty()) {
                continue;
            }
            result.add(switch (t) {
                case "on", "1", "true" -> ON;
                case "off", "0", "false" -> OFF;
                default -> throw new IllegalArgumentException("--pdl: '" + part.trim() + "' is not a setting; accepted: "
                        + ACCEPTED);
            });
        }
        if (result.isEmpty()) {
            throw new IllegalArgumentException("--pdl needs at least one setting; accepted: " + ACCEPTED);
        }
        return List.copyOf(new ArrayList<>(result));
    }

    /**
     * The first clause (between semicolons) of a communicator's self-description or log
     * ({@code toString()}, {@code explain(..)}, its INFO lines) that mentions PDL, e.g.
     * "custom kernels ready (grid 16x512, PDL on)", or empty when none does (the runtime does not
     * report it).
     *
     * @param description the text to search, any number of lines
     * @return the first clause that mentions "pdl" or "programmatic dependent", stripped, or empty
     */
    public static Optional<String> reportedIn(String description) {
        for (String line : description.split("\n")) {
            for (String clause : line.split(";")) {
                String l = clause.toLowerCase(Locale.ROOT);
                if (l.contains("pdl") || l.contains("programmatic dependent")) {
                    return Optional.of(clause.strip());
                }
            }
        }
        return Optional.empty();
    }

    /**
     * Sets {@value #PROPERTY} for this setting ({@link #DEFAULT} leaves it as it is, e.g. as given
     * with {@code AR4J_PERF_JAVA_OPTS}) and returns what to restore afterwards with {@link #restore}.
     */
    String apply() {
        String previous = System.getProperty(PROPERTY);
        if (propertyValue != null) {
            System.setProperty(PROPERTY, propertyValue);
        }
        return previous;
    }

    /** Puts {@value #PROPERTY} back as {@link #apply} found it. */
    static void restore(String previous) {
        if (previous == null) {
            System.clearProperty(PROPERTY);
        } else {
            System.setProperty(PROPERTY, previous);
        }
    }
}
