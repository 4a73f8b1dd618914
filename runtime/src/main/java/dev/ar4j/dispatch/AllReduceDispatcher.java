package dev.ar4j.dispatch;

import dev.ar4j.DType;

import java.lang.System.Logger.Level;
import java.util.Objects;

/**
 * Decides which algorithm runs one all-reduce: a pure, total function of the group's
 * {@link Topology}, the {@link DispatchConfig}, the staging-buffer size, the
 * {@link AlgorithmThresholds}, and the call's byte count, dtype, pointer alignment and
 * registration.
 *
 * <p>Everything that does not depend on the call is worked out once, in the constructor, into
 * prebuilt {@link Decision} objects; {@link #decide} then costs a few comparisons, allocates
 * nothing (unless DEBUG logging is on), and returns one of those instances.
 *
 * <h2>Rules, checked in this order</h2>
 * <ol>
 *   <li>World size 1 → {@link Algorithm#LOCAL}, whatever the policy: no communication; the all-reduce
 *       is a device-to-device copy out of place and nothing in place.</li>
 *   <li>Forced {@code nccl} → NCCL.</li>
 *   <li>World size not 2, 4, 6 or 8; ranks on several hosts; no P2P between every pair → NCCL.</li>
 *   <li>Automatic policy only (the PCIe gate): more than two ranks without NVLink between every
 *       pair → NCCL, unless {@value DispatchConfig#FORCE_PCIE_ENV}=1 lifts the gate, after which
 *       the dispatcher decides as if on NVLink. A forced custom algorithm ignores the gate.</li>
 *   <li>The byte count is not a multiple of 16, or a pointer is not 16-byte aligned → NCCL.</li>
 *   <li>The algorithm: forced one-stage, two-stage or push as asked; automatically the
 *       push up to {@link AlgorithmThresholds#pushUpToBytes()} (inclusive, registered input or
 *       not), else one-stage for world size 2, else one-stage below the one-stage thresholds,
 *       else two-stage.</li>
 *   <li>One-stage and two-stage read a registered input; the eager path copies an unregistered
 *       one into the staging buffer first, so an unregistered input larger than the staging
 *       buffer → NCCL. A registered or captured input is bounded by its registered buffer, which
 *       the kernel layer checks. The push kernel reads any device input where it lies: no
 *       registration, no staging copy, no staging limit.</li>
 *   <li>Two-stage reduces into a scratch sized like the staging buffer: larger inputs → NCCL.
 *       The push kernel takes at most {@link Algorithm#PUSH_MAX_BYTES} (512 KiB): a larger forced
 *       push → NCCL (the automatic threshold never exceeds it).</li>
 * </ol>
 * Every step that sends a forced custom algorithm to NCCL marks the decision
 * {@link Decision#fellBack()}. A byte count that is not positive or not a whole number of elements
 * is a caller error and is rejected.
 *
 * <p>Instances are immutable and thread-safe.
 */
public final class AllReduceDispatcher {

    private static final System.Logger LOG = System.getLogger(AllReduceDispatcher.class.getName());

    /** The reason of every decision at world size 1, after "auto: " or "forced ... by ..., but ". */
    public static final String LOCAL_REASON = "world size 1 → local copy: no communication; allReduce is a copy "
            + "(out of place) or nothing (in place)";

    /** Byte multiple and pointer alignment that the custom kernels need (one 128-bit vector). */
    private static final int CUSTOM_KERNEL_ALIGNMENT = 16;

    private final Topology topology;
    private final DispatchConfig config;
    private final long stagingBytes;
    private final AlgorithmThresholds thresholds;
    private final Plan plan;

    /**
     * A dispatcher with the default {@link AlgorithmThresholds#DEFAULTS}.
     *
     * @param topology the group's topology
     * @param config the resolved configuration
     * @param stagingBytes size of the staging buffer in bytes, positive; also the capacity of the two-stage
     *     scratch
     * @throws NullPointerException if {@code topology} or {@code config} is {@code null}
     * @throws IllegalArgumentException if {@code stagingBytes} is not positive
     * @return the dispatcher
     * @see #of(Topology, DispatchConfig, long, AlgorithmThresholds)
     */
    public static AllReduceDispatcher of(Topology topology, DispatchConfig config, long stagingBytes) {
        return new AllReduceDispatcher(topology, config, stagingBytes, AlgorithmThresholds.DEFAULTS);
    }

    /**
     * A dispatcher for one group: the decisions of a communicator with this topology, configuration
     * and staging size (also a plan printer: {@link #explain} names every decision without a GPU).
     *
     * @param topology     the group's topology
     * @param config       the resolved configuration
     * @param stagingBytes size of the staging buffer that unregistered inputs are copied into;
     *                     also the capacity of the two-stage scratch
     * @param thresholds   where the automatic policy switches from push to one-stage to two-stage
     * @return the dispatcher, every decision it can return computed once
     * @throws NullPointerException if an argument is {@code null}
     * @throws IllegalArgumentException if {@code stagingBytes} is not positive
     */
    public static AllReduceDispatcher of(Topology topology, DispatchConfig config, long stagingBytes,
                                         AlgorithmThresholds thresholds) {
        return new AllReduceDispatcher(topology, config, stagingBytes, thresholds);
    }

    private AllReduceDispatcher(Topology topology, DispatchConfig config, long stagingBytes,
                                AlgorithmThresholds thresholds) {
        this.topology = Objects.requireNonNull(topology, "topology");
        this.config = Objects.requireNonNull(config, "config");
        this.thresholds = Objects.requireNonNull(thresholds, "thresholds");
        if (stagingBytes <= 0) {
            throw new IllegalArgumentException("staging buffer size must be a positive byte count, got " + stagingBytes);
        }
        this.stagingBytes = stagingBytes;
        Algorithm policy = config.algorithmPolicy();
        this.plan = topology.worldSize() == 1 ? new Fixed(new Decision(Algorithm.LOCAL,
                (policy == Algorithm.AUTO ? "auto: " : forcedPhrase() + ", but ") + LOCAL_REASON, false))
                : switch (policy) {
            case AUTO -> automaticPlan();
            case ONE_STAGE -> forcedPlan(Algorithm.ONE_STAGE);
            case TWO_STAGE -> forcedPlan(Algorithm.TWO_STAGE);
            case PUSH -> forcedPlan(Algorithm.PUSH);
            case NCCL -> new Fixed(new Decision(Algorithm.NCCL, forcedPhrase() + " → NCCL", false));
            case LOCAL -> throw new IllegalArgumentException("LOCAL is never a policy");  // DispatchConfig refuses it
        };
        if (LOG.isLoggable(Level.DEBUG)) {
            LOG.log(Level.DEBUG, "all-reduce dispatcher for " + topology.describe() + "; " + describeConfiguration()
                    + "; " + plan.summary());
        }
    }

    /**
     * Decides the algorithm for one all-reduce.
     *
     * @param bytes      size of the input in bytes (positive, a whole number of {@code dtype} elements)
     * @param dtype      element type
     * @param aligned16  both the input and the output pointer are 16-byte aligned
     * @param registered the input lies in a registered buffer, or a CUDA graph is being captured
     *                   (zero-copy); otherwise the eager path copies it into the staging buffer
     *                   for one-stage and two-stage (the push kernel reads it in place)
     * @return a cached decision, never null
     * @throws IllegalArgumentException if {@code bytes} is not positive or not a multiple of the
     *                                  dtype's size
     */
    public Decision decide(long bytes, DType dtype, boolean aligned16, boolean registered) {
        requireValidSize(bytes, dtype);
        Decision decision = select(bytes, aligned16, registered);
        if (LOG.isLoggable(Level.DEBUG)) {
            LOG.log(Level.DEBUG, "all-reduce of " + bytes + " bytes " + dtype + " (aligned16=" + aligned16
                    + ", registered=" + registered + ") → " + decision.algorithm().displayName()
                    + (decision.fellBack() ? " (fell back)" : "") + ": " + decision.reason());
        }
        return decision;
    }

    /** The decision for a validated size; no logging (explain() uses it too). */
    private Decision select(long bytes, boolean aligned16, boolean registered) {
        return switch (plan) {
            case Fixed fixed -> fixed.decision();
            case BySize bySize -> bySize.select(bytes, aligned16, registered);
        };
    }

    /**
     * Describes, in a few lines, what {@link #decide} returns for this size and dtype with a
     * registered input, with an unregistered input, and with misaligned pointers, each with its
     * reason, followed by the topology and the configuration with the source of every value.
     *
     * @param bytes size of the input in bytes (positive, a whole number of {@code dtype} elements)
     * @param dtype element type
     * @return a multi-line, human-readable description
     * @throws IllegalArgumentException as {@link #decide} does
     */
    public String explain(long bytes, DType dtype) {
        requireValidSize(bytes, dtype);
        return header(bytes, dtype)
                + "\n  registered or captured input, 16-byte aligned pointers: " + verdict(select(bytes, true, true))
                + "\n  unregistered input, 16-byte aligned pointers: " + verdictUnregistered(select(bytes, true, false))
                + "\n  pointers not 16-byte aligned: " + verdict(select(bytes, false, true))
                + "\n  " + describeConfiguration();
    }

    /**
     * Describes the decision for one exact call, with its reason, the topology and the
     * configuration with the source of every value.
     *
     * @param bytes size of the input in bytes (positive, a whole number of {@code dtype} elements)
     * @param dtype element type
     * @param aligned16 both the input and the output pointer are 16-byte aligned
     * @param registered the input lies in a registered buffer, or a CUDA graph is being captured
     * @return a multi-line, human-readable description
     * @throws IllegalArgumentException as {@link #decide} does
     */
    public String explain(long bytes, DType dtype, boolean aligned16, boolean registered) {
        requireValidSize(bytes, dtype);
        return header(bytes, dtype)
                + "\n  " + (registered ? "registered or captured input" : "unregistered input")
                + ", " + (aligned16 ? "16-byte aligned pointers" : "pointers not 16-byte aligned") + ": "
                + (registered ? verdict(select(bytes, aligned16, true)) : verdictUnregistered(select(bytes, aligned16, false)))
                + "\n  " + describeConfiguration();
    }

    /**
     * The topology this dispatcher decides for.
     *
     * @return the topology given at construction
     */
    public Topology topology() {
        return topology;
    }

    /**
     * The configuration this dispatcher applies.
     *
     * @return the configuration given at construction
     */
    public DispatchConfig config() {
        return config;
    }

    /**
     * The staging-buffer size (also the two-stage scratch capacity) in bytes.
     *
     * @return the staging size in bytes, positive
     */
    public long stagingBytes() {
        return stagingBytes;
    }

    /**
     * The push/one-stage/two-stage switch points of the automatic policy.
     *
     * @return the thresholds given at construction ({@link AlgorithmThresholds#DEFAULTS} if none were)
     */
    public AlgorithmThresholds thresholds() {
        return thresholds;
    }

    // ---- construction -------------------------------------------------------------------------

    private Plan automaticPlan() {
        String blocker = topologyBlocker();
        if (blocker != null) {
            return new Fixed(new Decision(Algorithm.NCCL, "auto: " + blocker + " → NCCL", false));
        }
        int worldSize = topology.worldSize();
        boolean pcie = !topology.fullNvlink();
        if (pcie && worldSize > 2 && !config.forceCustomOnPcie()) {
            return new Fixed(new Decision(Algorithm.NCCL, "auto: " + worldSize
                    + " ranks without NVLink between every pair (PCIe gate) → NCCL; set "
                    + DispatchConfig.FORCE_PCIE_ENV + "=1 (or -D" + DispatchConfig.FORCE_PCIE_PROPERTY
                    + "=true) to allow the custom kernels", false));
        }
        Decision overStaging = overStaging("auto", false);
        String link = worldSize == 2 ? "world size 2" : worldSize + " ranks on " + (pcie
                ? "PCIe (gate lifted by " + config.forceCustomOnPcieSource().describe() + ")"
                : "NVLink");
        long pushUpTo = thresholds.pushUpToBytes();
        String pushWhy = "auto: " + link + ", up to " + formatBytes(pushUpTo);
        Branch push = branch(Algorithm.PUSH, pushWhy, false, overStaging);
        String overPush = pushUpTo > 0 ? "over " + formatBytes(pushUpTo) : "";
        if (worldSize == 2) {
            Branch oneStage = branch(Algorithm.ONE_STAGE,
                    "auto: world size 2" + (overPush.isEmpty() ? "" : ", " + overPush), false, overStaging);
            return bySize("auto", false, pushUpTo, push, Long.MAX_VALUE, oneStage, oneStage);
        }
        long split = thresholds.oneStageBelowBytes(worldSize);
        String small = "auto: " + link + ", " + (overPush.isEmpty() ? "" : overPush + " and ")
                + "under " + formatBytes(split);
        String large = "auto: " + link + ", "
                + (pushUpTo >= split ? overPush : formatBytes(split) + " or more");
        Branch below = branch(Algorithm.ONE_STAGE, small, false, overStaging);
        Branch atOrAbove = branch(Algorithm.TWO_STAGE, large, false, overStaging);
        return bySize("auto", false, pushUpTo, push, split, below, atOrAbove);
    }

    private Plan forcedPlan(Algorithm forced) {
        String forcedPhrase = forcedPhrase();
        String blocker = topologyBlocker();
        if (blocker != null) {
            return new Fixed(new Decision(Algorithm.NCCL, forcedPhrase + ", but " + blocker + " → NCCL", true));
        }
        boolean gateIgnored = !topology.fullNvlink() && topology.worldSize() > 2 && !config.forceCustomOnPcie();
        String why = forcedPhrase + (gateIgnored ? " (the PCIe gate does not apply to a forced algorithm)" : "");
        Branch branch = branch(forced, why, true, overStaging(forcedPhrase, true));
        return bySize(forcedPhrase, true, 0, branch, Long.MAX_VALUE, branch, branch);
    }

    /** "forced 1stage by environment variable AR4J_ALLREDUCE_ALGO". */
    private String forcedPhrase() {
        return "forced " + config.algorithmPolicy().configName() + " by " + config.algorithmPolicySource().describe();
    }

    /** Why the custom kernels cannot run on this topology at all, or null if they can. */
    private String topologyBlocker() {
        int worldSize = topology.worldSize();
        if (!customKernelWorldSize(worldSize)) {
            return "world size " + worldSize + " is not 2, 4, 6 or 8";
        }
        if (!topology.singleHost()) {
            return "the ranks span several hosts";
        }
        if (!topology.p2pAllPairs()) {
            return "P2P access is not available between every pair of GPUs";
        }
        return null;
    }

    private static boolean customKernelWorldSize(int worldSize) {
        return worldSize == 2 || worldSize == 4 || worldSize == 6 || worldSize == 8;
    }

    /**
     * The decisions of one custom-kernel choice: the kernel itself ("why → kernel"), NCCL for
     * unregistered inputs that a staging copy cannot hold (kernels that read registered memory
     * only), and NCCL for inputs beyond the kernel's own size limit (two-stage scratch, push
     * buffer). {@code why} is the phrase that led to the choice.
     */
    private Branch branch(Algorithm algorithm, String why, boolean forced, Decision overStaging) {
        if (algorithm == Algorithm.AUTO) {
            throw new IllegalArgumentException("a branch launches an algorithm; AUTO is what the dispatcher decides");
        }
        Decision success = new Decision(algorithm, why + " → " + algorithm.displayName() + switch (algorithm) {
            case PUSH -> " (needs no registration or staging copy)";
            case ONE_STAGE, TWO_STAGE, NCCL, AUTO, LOCAL -> "";
        }, false);
        long unregisteredLimit = switch (algorithm) {
            case ONE_STAGE, TWO_STAGE -> stagingBytes;
            case PUSH, NCCL, AUTO, LOCAL -> Long.MAX_VALUE;
        };
        long sizeLimit = switch (algorithm) {
            case ONE_STAGE, NCCL, AUTO, LOCAL -> Long.MAX_VALUE;
            case TWO_STAGE -> stagingBytes;
            case PUSH -> Algorithm.PUSH_MAX_BYTES;
        };
        String sizeLimitName = switch (algorithm) {
            case ONE_STAGE, NCCL, AUTO, LOCAL -> "";
            case TWO_STAGE -> formatBytes(stagingBytes) + " two-stage scratch";
            case PUSH -> formatBytes(Algorithm.PUSH_MAX_BYTES) + " push limit (AR4J_PUSH_MAX_BYTES)";
        };
        Decision overSizeLimit = sizeLimit == Long.MAX_VALUE ? success
                : new Decision(Algorithm.NCCL, why + ", but the input is larger than the "
                        + sizeLimitName + " → NCCL", forced);
        Decision staged = switch (algorithm) {
            case ONE_STAGE, TWO_STAGE -> new Decision(algorithm, success.reason(), false, true);
            case PUSH, NCCL, AUTO, LOCAL -> success;
        };
        return new Branch(success, staged, unregisteredLimit, overStaging, sizeLimit, overSizeLimit);
    }

    /** The NCCL decision for an unregistered input that does not fit the staging buffer. */
    private Decision overStaging(String prefix, boolean forced) {
        return fallback(prefix, forced, "the input is not registered and is larger than the "
                + formatBytes(stagingBytes) + " staging buffer it would be copied into");
    }

    private BySize bySize(String prefix, boolean forced, long pushUpTo, Branch push, long oneStageBelow,
                          Branch below, Branch atOrAbove) {
        return new BySize(
                fallback(prefix, forced, "the byte count is not a multiple of " + CUSTOM_KERNEL_ALIGNMENT),
                fallback(prefix, forced, "a pointer is not " + CUSTOM_KERNEL_ALIGNMENT + "-byte aligned"),
                pushUpTo, push, oneStageBelow, below, atOrAbove);
    }

    /** An NCCL decision: "auto: why → NCCL" or "forced 1stage by X, but why → NCCL" (fell back). */
    private static Decision fallback(String prefix, boolean forced, String why) {
        return new Decision(Algorithm.NCCL, prefix + (forced ? ", but " : ": ") + why + " → NCCL", forced);
    }

    // ---- plans --------------------------------------------------------------------------------

    /** What the constructor worked out: one decision for every call, or a choice by size. */
    private sealed interface Plan permits Fixed, BySize {
        String summary();
    }

    /** Every call gets the same decision (topology or policy settles it). */
    private record Fixed(Decision decision) implements Plan {
        @Override
        public String summary() {
            return "every call: " + decision.algorithm().displayName() + " (" + decision.reason() + ")";
        }
    }

    /**
     * A kernel choice plus the NCCL decisions for an unregistered input beyond
     * {@code unregisteredLimitBytes} and for any input beyond {@code sizeLimitBytes}.
     */
    private record Branch(Decision decision, Decision staged, long unregisteredLimitBytes, Decision overStaging,
                          long sizeLimitBytes, Decision overSizeLimit) {
        Decision select(long bytes, boolean registered) {
            if (!registered && bytes > unregisteredLimitBytes) {
                return overStaging;
            }
            return bytes > sizeLimitBytes ? overSizeLimit : registered ? decision : staged;
        }
    }

    /**
     * A choice by alignment and size, then by registration within the chosen branch: up to
     * {@code pushUpToBytes} the push branch, below {@code oneStageBelowBytes} the below branch,
     * else the at-or-above branch. All decisions prebuilt.
     */
    private record BySize(Decision notMultipleOf16, Decision misaligned, long pushUpToBytes, Branch push,
                          long oneStageBelowBytes, Branch below, Branch atOrAbove) implements Plan {

        Decision select(long bytes, boolean aligned16, boolean registered) {
            if ((bytes & (CUSTOM_KERNEL_ALIGNMENT - 1)) != 0) {
                return notMultipleOf16;
            }
            if (!aligned16) {
                return misaligned;
            }
            Branch branch = bytes <= pushUpToBytes ? push : bytes < oneStageBelowBytes ? below : atOrAbove;
            return branch.select(bytes, registered);
        }

        /** The reasons of the branches that some multiple of 16 bytes reaches. */
        @Override
        public String summary() {
            StringBuilder text = new StringBuilder("by size:");
            if (pushUpToBytes > 0) {
                text.append(' ').append(push.decision().reason()).append(';');
            }
            long firstAbovePush = (pushUpToBytes / CUSTOM_KERNEL_ALIGNMENT + 1) * CUSTOM_KERNEL_ALIGNMENT;
            if (firstAbovePush < oneStageBelowBytes) {
                text.append(' ').append(below.decision().reason()).append(';');
            }
            if (atOrAbove != below) {
                text.append(' ').append(atOrAbove.decision().reason()).append(';');
            }
            text.setLength(text.length() - 1);
            return text.toString();
        }
    }

    // ---- helpers ------------------------------------------------------------------------------

    private static void requireValidSize(long bytes, DType dtype) {
        Objects.requireNonNull(dtype, "dtype");
        if (bytes <= 0) {
            throw new IllegalArgumentException(bytes == 0
                    ? "an all-reduce of 0 bytes has nothing to reduce; pass a positive byte count"
                    : "byte count must be positive, got " + bytes);
        }
        if (bytes % dtype.byteSize() != 0) {
            throw new IllegalArgumentException(bytes + " bytes is not a whole number of " + dtype + " elements ("
                    + dtype.byteSize() + " bytes each)");
        }
    }

    private String header(long bytes, DType dtype) {
        return "all-reduce of " + bytes + " bytes (" + bytes / dtype.byteSize() + " " + dtype + " elements) on "
                + topology.describe() + ":";
    }

    private static String verdict(Decision decision) {
        return decision.algorithm().displayName() + (decision.fellBack() ? " (forced algorithm fell back)" : "")
                + " — " + decision.reason();
    }

    /** The verdict for an unregistered input, saying whether the eager path copies it into staging. */
    private String verdictUnregistered(Decision decision) {
        return verdict(decision) + switch (decision.algorithm()) {
            case ONE_STAGE, TWO_STAGE -> "; the eager path first copies the input into the "
                    + formatBytes(stagingBytes) + " staging buffer";
            // the push reason already says that it makes no staging copy; NCCL reads the input in
            // place; LOCAL copies device to device out of place; a decision is never AUTO
            case PUSH, NCCL, AUTO, LOCAL -> "";
        };
    }

    private String describeConfiguration() {
        long pushUpTo = thresholds.pushUpToBytes();
        return "configuration: " + config.describe() + "; automatic push "
                + (pushUpTo > 0 ? "up to " + formatBytes(pushUpTo) : "off") + ", one-stage below "
                + formatBytes(thresholds.upTo4RanksBytes()) + " up to 4 ranks, below "
                + formatBytes(thresholds.upTo8RanksBytes()) + " up to 8 ranks; staging buffer "
                + formatBytes(stagingBytes);
    }

    /** "512 KiB", "8 MiB", "43008 bytes". */
    static String formatBytes(long bytes) {
        if (bytes == Long.MAX_VALUE) {
            return "any size";
        }
        if (bytes >= 1L << 30 && bytes % (1L << 30) == 0) {
            return (bytes >> 30) + " GiB";
        }
        if (bytes >= 1L << 20 && bytes % (1L << 20) == 0) {
            return (bytes >> 20) + " MiB";
        }
        if (bytes >= 1L << 10 && bytes % (1L << 10) == 0) {
            return (bytes >> 10) + " KiB";
        }
        return bytes + " bytes";
    }
}
