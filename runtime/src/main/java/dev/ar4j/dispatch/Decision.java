package dev.ar4j.dispatch;

import java.util.Objects;

/**
 * What the dispatcher decided for one all-reduce, and why.
 *
 * <p>The dispatcher caches its decisions: the same branch returns the same instance, so a
 * decision carries no per-call data (the byte count is not in the reason; {@code explain()} adds
 * it).
 *
 * @param algorithm the algorithm to launch
 * @param reason    one human sentence, e.g. "auto: world size 2 → one-stage"
 * @param fellBack  a forced custom algorithm could not run and NCCL runs instead
 */
public record Decision(Algorithm algorithm, String reason, boolean fellBack) {

    /**
     * Creates a decision, checking it.
     *
     * @throws IllegalArgumentException if the reason is blank, or if {@code fellBack} is set for
     *                                  an algorithm other than NCCL
     * @throws NullPointerException if {@code algorithm} or {@code reason} is {@code null}
     */
    public Decision {
        Objects.requireNonNull(algorithm, "algorithm");
        Objects.requireNonNull(reason, "reason");
        if (reason.isBlank()) {
            throw new IllegalArgumentException("a decision needs a reason");
        }
        if (fellBack && algorithm != Algorithm.NCCL) {
            throw new IllegalArgumentException("only a fall back to NCCL is a fall back, not to " + algorithm);
        }
    }
}
