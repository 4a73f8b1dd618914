package dev.ar4j.internal.nccl;

import dev.ar4j.nccl.NcclDataType;
import dev.ar4j.nccl.NcclReduction;
import java.util.Objects;
import java.util.function.IntSupplier;

/**
 * The reduction side of a reducing collective on one communicator: refuses a data type or
 * reduction that the loaded NCCL or this GPU lacks before NCCL is called (the device's compute
 * capability asked once, only for fp8), and picks the reduction code NCCL is given.
 */
final class NcclReductionGate {
    private final int nranks;
    private final NcclSupport support;
    private final String site;
    private final IntSupplier computeCapabilityMajor;

    NcclReductionGate(int nranks, NcclSupport support, String site, IntSupplier computeCapabilityMajor) {
        this.nranks = nranks;
        this.support = support;
        this.site = site;
        this.computeCapabilityMajor = computeCapabilityMajor;
    }

    /**
     * The reduction passed to NCCL. With one rank, average equals sum (a division by 1), and
     * NCCL's average over one rank was seen to leave the tail of a 65543-element float64
     * all-reduce unwritten (NCCL 2.28.9 on an H200, 2026-12-01: the last 7 elements, out of
     * place); the sum writes every element.
     */
    int effective(NcclReduction op) {
        return op == NcclReduction.AVG && nranks == 1 ? NcclReduction.SUM.code() : op.code();
    }

    /**
     * Refuses a null type or reduction, or one the loaded NCCL or this GPU lacks
     * ({@link NcclSupport#requireReduction}); {@code call} names the call for the message.
     */
    void requireReduction(NcclDataType type, NcclReduction op, String call) {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(op, "op");
        support.requireReduction(type, op, computeCapabilityMajor, call, site);
    }
}
