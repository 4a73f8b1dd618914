package dev.ar4j.nccl;

/** NCCL's built-in reductions ({@code ncclRedOp_t}), with the NCCL release that introduced each. */
public enum NcclReduction {
    /** {@code ncclSum}. */
    SUM(0, "ncclSum", new NcclVersion(2, 0, 0)),
    /** {@code ncclProd}. */
    PROD(1, "ncclProd", new NcclVersion(2, 0, 0)),
    /** {@code ncclMax}. */
    MAX(2, "ncclMax", new NcclVersion(2, 0, 0)),
    /** {@code ncclMin}. */
    MIN(3, "ncclMin", new NcclVersion(2, 0, 0)),
    /** {@code ncclAvg}: the sum divided by the number of ranks; NCCL 2.10 and later. */
    AVG(4, "ncclAvg", new NcclVersion(2, 10, 0));

    private final int code;
    private final String ncclName;
    private final NcclVersion since;

    NcclReduction(int code, String ncclName, NcclVersion since) {
        this.code = code;
        this.ncclName = ncclName;
        this.since = since;
    }

    /**
     * The {@code ncclRedOp_t} value.
     *
     * @return the NCCL value of this reduction
     */
    public int code() {
        return code;
    }

    /**
     * The C name, e.g. {@code ncclAvg}.
     *
     * @return NCCL's C name of this reduction
     */
    public String ncclName() {
        return ncclName;
    }

    /**
     * The first NCCL release that has this reduction.
     *
     * @return the version that introduced the reduction
     */
    public NcclVersion since() {
        return since;
    }
}
