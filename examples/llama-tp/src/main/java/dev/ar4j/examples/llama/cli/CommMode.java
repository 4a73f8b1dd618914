package dev.ar4j.examples.llama.cli;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/** How the tensor-parallel all-reduces run ({@code --comm}). */
public enum CommMode {
    /** ar4j's dispatch: custom kernels where they apply, NCCL elsewhere; fused all-reduce + residual + RMSNorm. */
    AR4J("ar4j"),
    /** Every all-reduce through NCCL (ar4j's NCCL communicator, policy {@code nccl}). */
    NCCL("nccl"),
    /** NCCL with symmetric (window-registered) buffers. */
    NCCL_SYMM("nccl-symm");

    private final String flag;

    CommMode(String flag) {
        this.flag = flag;
    }

    /**
     * The name {@code --comm} takes.
     *
     * @return e.g. {@code nccl-symm}
     */
    public String flag() {
        return flag;
    }

    /**
     * Parses one {@code --comm} value.
     *
     * @param text the value
     * @return the mode
     * @throws UsageException naming the accepted values
     */
    public static CommMode parse(String text) {
        String t = text.trim().toLowerCase(Locale.ROOT);
        for (CommMode m : values()) {
            if (m.flag.equals(t)) {
                return m;
            }
        }
        throw new UsageException("--comm: unknown value '" + text + "'; accepted: "
                + Arrays.stream(values()).map(CommMode::flag).collect(Collectors.joining(", ")));
    }
}
