package dev.ar4j.internal.nccl;

import dev.ar4j.nccl.NcclUnsupportedException;
import dev.ar4j.nccl.NcclDataType;
import dev.ar4j.nccl.NcclReduction;
import dev.ar4j.nccl.NcclVersion;
import java.util.Objects;
import java.util.function.IntSupplier;

/**
 * What one NCCL version (and GPU) can do: refuses a data type, reduction or function the version
 * lacks with an {@link NcclUnsupportedException} before NCCL is called. {@link #installed()} is the
 * loaded library's; tests make one for any version.
 */
final class NcclSupport {
    /** Non-blocking communicators ({@code ncclCommInitRankConfig}, {@code blocking = 0}, {@code ncclCommFinalize}). */
    static final NcclVersion NON_BLOCKING = new NcclVersion(2, 14, 0);
    /** {@code ncclCommSplit}. */
    static final NcclVersion SPLIT = new NcclVersion(2, 18, 0);
    /** The compute capability (major) NCCL needs for fp8 reductions. */
    static final int FLOAT8_REDUCTION_COMPUTE_CAPABILITY = 9;

    private static volatile NcclSupport installed;

    private final NcclVersion version;

    NcclSupport(NcclVersion version) {
        this.version = Objects.requireNonNull(version, "version");
    }

    /** The loaded library's support (its version read once). */
    static NcclSupport installed() {
        NcclSupport s = installed;
        if (s == null) {
            s = new NcclSupport(NcclVersion.installed());
            installed = s;
        }
        return s;
    }

    NcclVersion version() {
        return version;
    }

    /** Refuses a data type this NCCL lacks; {@code call} names the call and rank for the message. */
    void requireType(NcclDataType type, String call, String site) {
        Objects.requireNonNull(type, "type");
        if (!version.atLeast(type.since())) {
            throw tooOld(NcclArguments.where(call, site), type.ncclName(), type.since(), "another data type");
        }
    }

    /**
     * Refuses a reduction of {@code type} by {@code op} that this NCCL or the GPU lacks: the type or
     * the reduction from a later NCCL, or an fp8 reduction below compute capability 9.0 (asked of
     * {@code computeCapabilityMajor} only for fp8).
     */
    void requireReduction(NcclDataType type, NcclReduction op, IntSupplier computeCapabilityMajor, String call,
                          String site) {
        requireType(type, call, site);
        Objects.requireNonNull(op, "op");
        if (!version.atLeast(op.since())) {
            throw tooOld(NcclArguments.where(call, site), op.ncclName(), op.since(),
                    "another reduction (ncclAvg is ncclSum divided by nranks)");
        }
        if (type.isFloat8()) {
            int major = computeCapabilityMajor.getAsInt();
            if (major < FLOAT8_REDUCTION_COMPUTE_CAPABILITY) {
                throw new NcclUnsupportedException(NcclArguments.where(call, site) + ": NCCL reduces "
                        + type.ncclName() + " (" + op.ncclName() + ") only on GPUs of compute capability " + FLOAT8_REDUCTION_COMPUTE_CAPABILITY
                        + ".0 or newer; this one is " + major + ".x. Reduce in float16 or bfloat16, or gather the fp8"
                        + " values (allGather and broadcast take fp8 on any GPU) and reduce them locally",
                        call, version, version);
            }
        }
    }

    /** Refuses a function this NCCL lacks. */
    void requireFeature(String function, NcclVersion since, String call, String alternative) {
        if (!version.atLeast(since)) {
            throw tooOld(call, function, since, alternative);
        }
    }

    private NcclUnsupportedException tooOld(String call, String what, NcclVersion since, String alternative) {
        return new NcclUnsupportedException(call + ": " + what + " needs NCCL " + since + " or newer; the loaded NCCL is "
                + version + ". Load a newer libnccl (ar4j.nccl.path or AR4J_NCCL_PATH chooses it) or use "
                + alternative, call, version, since);
    }
}
