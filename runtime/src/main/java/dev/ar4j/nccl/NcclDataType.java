package dev.ar4j.nccl;

import dev.ar4j.DType;

import java.util.Objects;

/**
 * Every element type NCCL's collectives take ({@code ncclDataType_t}), with the NCCL release that
 * introduced it. {@link #of(DType)} maps ar4j's all-reduce dtypes.
 */
public enum NcclDataType {
    /** {@code ncclInt8} (also {@code ncclChar}). */
    INT8(0, "ncclInt8", 1, false, new NcclVersion(2, 0, 0)),
    /** {@code ncclUint8}. */
    UINT8(1, "ncclUint8", 1, false, new NcclVersion(2, 0, 0)),
    /** {@code ncclInt32} (also {@code ncclInt}). */
    INT32(2, "ncclInt32", 4, false, new NcclVersion(2, 0, 0)),
    /** {@code ncclUint32}. */
    UINT32(3, "ncclUint32", 4, false, new NcclVersion(2, 0, 0)),
    /** {@code ncclInt64}. */
    INT64(4, "ncclInt64", 8, false, new NcclVersion(2, 0, 0)),
    /** {@code ncclUint64}. */
    UINT64(5, "ncclUint64", 8, false, new NcclVersion(2, 0, 0)),
    /** {@code ncclFloat16} (also {@code ncclHalf}): IEEE 754 binary16. */
    FLOAT16(6, "ncclFloat16", 2, true, new NcclVersion(2, 0, 0)),
    /** {@code ncclFloat32} (also {@code ncclFloat}). */
    FLOAT32(7, "ncclFloat32", 4, true, new NcclVersion(2, 0, 0)),
    /** {@code ncclFloat64} (also {@code ncclDouble}). */
    FLOAT64(8, "ncclFloat64", 8, true, new NcclVersion(2, 0, 0)),
    /** {@code ncclBfloat16}: NCCL 2.10 and later (built with CUDA 11 or newer). */
    BFLOAT16(9, "ncclBfloat16", 2, true, new NcclVersion(2, 10, 0)),
    /** {@code ncclFloat8e4m3}: NCCL 2.24 and later; reductions need compute capability 9.0 or newer. */
    FLOAT8_E4M3(10, "ncclFloat8e4m3", 1, true, new NcclVersion(2, 24, 0)),
    /** {@code ncclFloat8e5m2}: NCCL 2.24 and later; reductions need compute capability 9.0 or newer. */
    FLOAT8_E5M2(11, "ncclFloat8e5m2", 1, true, new NcclVersion(2, 24, 0));

    private final int code;
    private final String ncclName;
    private final int byteSize;
    private final boolean floatingPoint;
    private final NcclVersion since;

    NcclDataType(int code, String ncclName, int byteSize, boolean floatingPoint, NcclVersion since) {
        this.code = code;
        this.ncclName = ncclName;
        this.byteSize = byteSize;
        this.floatingPoint = floatingPoint;
        this.since = since;
    }

    /**
     * The {@code ncclDataType_t} value.
     *
     * @return the NCCL value of this type
     */
    public int code() {
        return code;
    }

    /**
     * The C name, e.g. {@code ncclBfloat16}.
     *
     * @return NCCL's C name of this type
     */
    public String ncclName() {
        return ncclName;
    }

    /**
     * Bytes of one element.
     *
     * @return 1, 2, 4 or 8
     */
    public int byteSize() {
        return byteSize;
    }

    /**
     * True for the floating-point types.
     *
     * @return {@code true} for {@code FLOAT16}, {@code FLOAT32}, {@code FLOAT64}, {@code BFLOAT16} and the
     *     two 8-bit floats
     */
    public boolean isFloatingPoint() {
        return floatingPoint;
    }

    /**
     * True for the two 8-bit floating-point types, whose reductions NCCL runs only on sm_90 and newer.
     *
     * @return {@code true} for {@link #FLOAT8_E4M3} and {@link #FLOAT8_E5M2}
     */
    public boolean isFloat8() {
        return this == FLOAT8_E4M3 || this == FLOAT8_E5M2;
    }

    /**
     * The first NCCL release that has this type.
     *
     * @return the version that introduced the type
     */
    public NcclVersion since() {
        return since;
    }

    /**
     * The NCCL type of an ar4j dtype: FLOAT32, FLOAT16 and BFLOAT16 map to their namesakes.
     *
     * @param dtype an ar4j dtype
     * @return the NCCL type of the same name
     * @throws NullPointerException if {@code dtype} is {@code null}
     */
    public static NcclDataType of(DType dtype) {
        return switch (Objects.requireNonNull(dtype, "dtype")) {
            case FLOAT32 -> FLOAT32;
            case FLOAT16 -> FLOAT16;
            case BFLOAT16 -> BFLOAT16;
        };
    }
}
