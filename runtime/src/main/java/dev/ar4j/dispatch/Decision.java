package dev.ar4j.dispatch;

import java.util.Objects;

/**
 * What the dispatcher decided for one all-reduce, and why.
 *
 * <p>The dispatcher caches its decisions: the same branch returns the same instance, so a
 * decision carries no per-call data (the byte count is not in the reason; {@code explain()} adds
 * it).
 *
 * @param algorithm the algorithm to launch, never {@link Algorithm#AUTO}
 * @param reason    one human sentence, e.g. "auto: world size 2 → one-stage"
 * @param fellBack  a forced custom algorithm could not run and NCCL runs instead
 * @param staged    the input is first copied into the staging buffer and the kernel reads the copy
 *                  (a one-stage or two-stage kernel on an input that is not registered); otherwise
 *                  the algorithm reads the input where it lies
 */
public record Decision(Algorithm algorithm, String reason, boolean fellBack, boolean staged) {

    /**
     * Creates a decision, checking it.
     *
     * @throws IllegalArgumentException if the algorithm is {@link Algorithm#AUTO}, if the reason is blank, if {@code fellBack} is set for
     *                                  an algorithm other than NCCL, or if {@code staged} is set for
     *                                  an algorithm other than the one-stage and two-stage kernels
     * @throws NullPointerException if {@code algorithm} or {@code reason} is {@code null}
     */
    public Decision {
        Objects.requireNonNull(algorithm, "algorithm");
        Objects.requireNonNull(reason, "reason");
        if (algorithm == Algorithm.AUTO) {
            throw new IllegalArgumentException("a decision names the algorithm that runs, never AUTO");
        }
        if (reason.isBlank()) {
            throw new IllegalArgumentException("a decision needs a reason");
        }
        if (fellBack && algorithm != Algorithm.NCCL) {
            throw new IllegalArgumentException("only a fall back to NCCL is a fall back, not to " + algorithm);
        }
        if (staged && algorithm != Algorithm.ONE_STAGE && algorithm != Algorithm.TWO_STAGE) {
            throw new IllegalArgumentException("only the one-stage and two-stage kernels read a staged copy, not "
                    + algorithm);
        }
    }

    /**
     * A decision that reads its input where it lies (not staged).
     *
     * @param algorithm the algorithm to launch
     * @param reason    one human sentence
     * @param fellBack  a forced custom algorithm could not run and NCCL runs instead
     * @throws IllegalArgumentException as the canonical constructor does
     */
    public Decision(Algorithm algorithm, String reason, boolean fellBack) {
        this(algorithm, reason, fellBack, false);
    }
}
