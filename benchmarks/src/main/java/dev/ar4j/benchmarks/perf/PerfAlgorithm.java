package dev.ar4j.benchmarks.perf;

import dev.ar4j.dispatch.Algorithm;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;

/**
 * What one column group of the ar4j-perf table measures: an ar4j policy forced per call through
 * {@code Communicator.allReduce(..., Algorithm)}, or one of the two NCCL baselines called
 * directly ({@code ncclAllReduce} on the same kind of buffers as ar4j, and on
 * {@code ncclMemAlloc} buffers registered as symmetric windows).
 */
public enum PerfAlgorithm {
    /** ar4j's automatic choice. */
    AUTO("auto", Algorithm.AUTO),
    /** ar4j forced to the one-stage kernel. */
    ONE_STAGE("1stage", Algorithm.ONE_STAGE),
    /** ar4j forced to the two-stage kernel. */
    TWO_STAGE("2stage", Algorithm.TWO_STAGE),
    /** ar4j forced to the push kernel. */
    PUSH("push", Algorithm.PUSH),
    /** Plain {@code ncclAllReduce} on the same buffers as ar4j. */
    NCCL("nccl", null),
    /** {@code ncclAllReduce} on {@code ncclMemAlloc} buffers registered with {@code NCCL_WIN_COLL_SYMMETRIC}. */
    NCCL_SYMMETRIC("nccl-symm", null);

    /** The list {@code -a} takes when not given. */
    public static final String DEFAULT_LIST = "auto,1stage,2stage,push,nccl";
    /** The names {@link #parse} accepts. */
    public static final String ACCEPTED = "auto, 1stage (oneshot), 2stage (twoshot), push (lamport), nccl, nccl-symm";

    private final String label;
    private final Algorithm policy;

    PerfAlgorithm(String label, Algorithm policy) {
        this.label = label;
        this.policy = policy;
    }

    /** {@return the name in the table, CSV and JSON: "auto", "1stage", "2stage", "push", "nccl" or "nccl-symm"} */
    public String label() {
        return label;
    }

    /** {@return the ar4j policy forced per call, or empty for the NCCL baselines} */
    public Optional<Algorithm> policy() {
        return Optional.ofNullable(policy);
    }

    /** {@return whether this is an ar4j policy (as opposed to an NCCL baseline)} */
    public boolean isAr4j() {
        return policy != null;
    }

    /**
     * Parses one name: {@code auto | 1stage | oneshot | 2stage | twoshot | push | lamport | nccl |
     * nccl-symm}, case-insensitive.
     *
     * @param text one name; surrounding blanks are ignored
     * @return the column named
     * @throws IllegalArgumentException if {@code text} names none, with a message naming the accepted values
     */
    public static PerfAlgorithm parse(String text) {
        String t = text.trim().toLowerCase(Locale.ROOT);
        return switch (t) {
            case "nccl" -> NCCL;
            case "nccl-symm", "nccl-symmetric", "nccl_symm" -> NCCL_SYMMETRIC;
            default -> {
                Algorithm p;
                try {
                    p = Algorithm.parse(t, "-a");
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException("-a: '" + text + "' is not an algorithm; accepted: " + ACCEPTED, e);
                }
                yield switch (p) {
                    case AUTO -> AUTO;
                    case ONE_STAGE -> ONE_STAGE;
                    case TWO_STAGE -> TWO_STAGE;
                    case PUSH -> PUSH;
                    case NCCL -> NCCL;
                    case LOCAL -> throw new IllegalStateException("parse never answers LOCAL, which is no policy");
                };
            }
        };
    }

    /**
     * Parses a list of names, keeping their order, dropping duplicates, and appending the NCCL
     * baselines ({@code nccl}, {@code nccl-symm}) when missing: every run measures them.
     *
     * @param names the {@code -a} values, each one name or several comma-separated
     * @return an unmodifiable list of distinct columns, ending with the baselines not named
     * @throws IllegalArgumentException for an unknown name or an empty list
     */
    public static List<PerfAlgorithm> parseListWithBaselines(List<String> names) {
        Set<PerfAlgorithm> result = new LinkedHashSet<>();
        for (String name : names) {
            for (String part : name.split(",")) {
                if (!part.isBlank()) {
                    result.add(parse(part));
                }
            }
        }
        if (result.isEmpty()) {
            throw new IllegalArgumentException("-a needs at least one algorithm; accepted: " + ACCEPTED);
        }
        result.add(NCCL);
        result.add(NCCL_SYMMETRIC);
        return List.copyOf(new ArrayList<>(result));
    }
}
