package dev.ar4j.it;

import dev.ar4j.Communicator;
import dev.ar4j.DType;
import dev.ar4j.HalfFloats;
import dev.ar4j.HostData;
import dev.ar4j.cuda.Cuda;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.internal.kernels.ResidualRmsNorm;
import dev.ar4j.internal.rendezvous.JobToken;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.SplittableRandom;

/**
 * One rank of {@link FusedNormTwoJvmIT}, both ranks on GPU 0 without NCCL, the group formed over
 * the TCP rendezvous with the job token the parent puts in {@code AR4J_RDZV_TOKEN}:
 * {@code FusedNormChild rank port}.
 *
 * <p>For every dtype, shape ({@link #SHAPES}) and placement ({@link #PLACEMENTS}) it calls
 * {@link Communicator#allReduceResidualRmsNorm} on fresh seeded data (rank {@code q}'s input from
 * {@link #inputSeed}, the residual and weight from {@link #sharedSeed}, so every rank can compute
 * every rank's input, and the reference, without communicating), outputs that are not inputs
 * poisoned with 0xFF bytes (NaN in every dtype) first, and checks:
 * <ul>
 *   <li>the returned boolean against {@link Communicator#explainResidualRmsNorm} ("fused: ...");</li>
 *   <li>{@code residualOut} bitwise against the host reference of the kernels' definition
 *       ({@code cuda/src/fused_kernels.cuh}): the inputs summed in rank order in fp32, rounded to
 *       the dtype, plus the residual in fp32, rounded once;</li>
 *   <li>{@code out} against {@code residualOut * inv * weight} in double precision, where
 *       {@code inv = 1 / sqrt(squares / hidden + eps)} from the row's sum of squares computed in
 *       fp32 in the kernels' fixed order ({@code cuda/src/rmsnorm_math.cuh}); the only inexact
 *       steps left on the GPU are {@code rsqrtf} (at most 2 ulp) and two fp32 products, so fp32 must
 *       be within {@link #FP32_ULPS} ulps and fp16/bf16 within one step of the nearest
 *       representable value;</li>
 *   <li>both outputs bitwise against the unfused path run explicitly on the GPU (all-reduce, then
 *       {@link ResidualRmsNorm}), whose all-reduce must equal the host's rank-order sum bitwise;</li>
 *   <li>out of place: the inputs are left unchanged.</li>
 * </ul>
 * Prints {@code TOKEN present=<bool> source=<where from>}, then one line per case
 * {@code CASE <index> <dtype> rows=<r> hidden=<h> <placement> fused=<bool> PASS|FAIL hash=<hex> ...}
 * (the hash is the SHA-256 prefix of out's bytes followed by residualOut's; the parent compares it
 * across ranks), then {@code DONE cases=<n> failed=<k>}. Exits 0 when every case passed, 1 when
 * one failed, 3 on an exception (printed as {@code ERROR ...}; the group cannot go on after one),
 * 2 when the group has no custom kernels.
 */
public final class FusedNormChild {

    /** {rows, hidden}. The fused kernel takes rows of a multiple of 16 bytes up to the push size
     * limit; hidden 7 (28 or 14 bytes a row) falls back to the unfused path in every dtype, and
     * 36 x 4096 fp32 (576 KiB) is over the push kernel's 512 KiB, so it falls back too. */
    static final int[][] SHAPES = {{3, 7168}, {1, 4096}, {8, 1024}, {5, 64}, {16, 7}, {36, 4096}};
    /** apart: out and residualOut separate; outIsIn: out == in; bothInPlace: also residualOut == residual. */
    static final String[] PLACEMENTS = {"apart", "outIsIn", "bothInPlace"};
    static final int WORLD = 2;
    static final float EPS = 1e-6f;
    static final int FP32_ULPS = 8;
    private static final long SEED = 20261215L;
    /** The kernels' block size and warps (rmsnorm_math.cuh: kNormThreads, kNormWarps). */
    private static final int NORM_THREADS = 512;
    private static final int WARP = 32;

    private FusedNormChild() {
    }

    static long inputSeed(int rank, int caseIndex) {
        return SEED + 1000L * caseIndex + rank;
    }

    static long sharedSeed(int caseIndex) {
        return SEED + 1000L * caseIndex + 999;
    }

    public static void main(String[] args) throws Exception {
        int rank = Integer.parseInt(args[0]);
        int port = Integer.parseInt(args[1]);
        JobToken token = JobToken.fromSystem();
        System.out.println("TOKEN present=" + token.isPresent() + " source=" + token.source());
        Communicator comm = Communicator.builder().rank(rank).worldSize(WORLD).localRank(0).device(0).nccl(false)
                .masterAddress("127.0.0.1", port).rendezvousTimeout(Duration.ofSeconds(60)).build();
        System.out.println("rank " + rank + " joined: " + comm + ", custom kernels " + comm.hasCustomKernels());
        int exit;
        try {
            if (!comm.hasCustomKernels()) {
                System.out.println("NOKERNELS two ranks on one GPU must get the custom kernels");
                exit = 2;
            } else {
                exit = runCases(comm);
            }
        } catch (Throwable e) {
            System.out.println("ERROR " + e);
            e.printStackTrace(System.out);
            exit = 3;
        } finally {
            System.out.println("health " + comm.health());
        }
        try {
            comm.close();
        } catch (RuntimeException e) {
            System.out.println("CLOSE FAILED " + e);
            exit = 3;
        }
        System.out.flush();
        System.exit(exit);
    }

    private static int runCases(Communicator comm) throws Exception {
        Cuda.setDevice(comm.device());
        int index = 0, failed = 0;
        try (CudaStream stream = CudaStream.create()) {
            for (DType dtype : DType.values()) {
                for (int[] shape : SHAPES) {
                    for (String placement : PLACEMENTS) {
                        if (!runCase(comm, stream, index, dtype, shape[0], shape[1], placement)) {
                            failed++;
                        }
                        index++;
                    }
                }
            }
        }
        System.out.println("DONE cases=" + index + " failed=" + failed);
        return failed == 0 ? 0 : 1;
    }

    private static boolean runCase(Communicator comm, CudaStream stream, int index, DType dtype, int rows, int hidden,
                                   String placement) throws Exception {
        int n = rows * hidden;
        long bytes = (long) n * dtype.byteSize();
        long weightBytes = (long) hidden * dtype.byteSize();
        float[][] inputs = new float[WORLD][];
        for (int q = 0; q < WORLD; q++) {
            inputs[q] = values(new SplittableRandom(inputSeed(q, index)), n, dtype, -1, 1);
        }
        SplittableRandom shared = new SplittableRandom(sharedSeed(index));
        float[] residual = values(shared, n, dtype, -2, 2);
        float[] weight = values(shared, hidden, dtype, -1.5, 1.5);
        float[] mine = inputs[comm.rank()];

        List<String> problems = new ArrayList<>();
        boolean outIsIn = !placement.equals("apart");
        boolean resIsResidual = placement.equals("bothInPlace");
        boolean fused;
        String explain = comm.explainResidualRmsNorm(bytes, hidden, dtype);
        String hash;
        try (Arena arena = Arena.ofConfined();
             DeviceBuffer dIn = DeviceBuffer.allocate(bytes); DeviceBuffer dRes = DeviceBuffer.allocate(bytes);
             DeviceBuffer dW = DeviceBuffer.allocate(weightBytes);
             DeviceBuffer ownOut = DeviceBuffer.allocate(bytes); DeviceBuffer ownResOut = DeviceBuffer.allocate(bytes);
             DeviceBuffer refIn = DeviceBuffer.allocate(bytes); DeviceBuffer refRes = DeviceBuffer.allocate(bytes);
             DeviceBuffer refSum = DeviceBuffer.allocate(bytes); DeviceBuffer refOut = DeviceBuffer.allocate(bytes);
             DeviceBuffer refResOut = DeviceBuffer.allocate(bytes)) {
            MemorySegment hostIn = HostData.encode(mine, dtype, arena);
            MemorySegment hostRes = HostData.encode(residual, dtype, arena);
            dIn.copyFrom(hostIn);
            dRes.copyFrom(hostRes);
            dW.copyFrom(HostData.encode(weight, dtype, arena));
            refIn.copyFrom(hostIn);
            refRes.copyFrom(hostRes);
            for (DeviceBuffer b : new DeviceBuffer[] {ownOut, ownResOut, refSum, refOut, refResOut}) {
                b.fill(0xff);  // NaN in every dtype
            }
            DeviceBuffer out = outIsIn ? dIn : ownOut;
            DeviceBuffer resOut = resIsResidual ? dRes : ownResOut;

            fused = comm.allReduceResidualRmsNorm(dIn, dRes, dW, out, resOut, hidden, EPS, dtype, stream);
            // The unfused path, explicitly, on copies of the inputs: all-reduce, then the separate kernel.
            comm.allReduce(refIn, refSum, dtype, stream);
            ResidualRmsNorm.launch(dtype, refSum, refRes, dW, refOut, refResOut, hidden, EPS, stream);
            stream.synchronize();
            comm.checkPeers();

            if (fused != explain.startsWith("fused:")) {
                problems.add("returned fused=" + fused + " but explainResidualRmsNorm says: " + explain);
            }
            MemorySegment outHost = copy(arena, out, bytes);
            MemorySegment resOutHost = copy(arena, resOut, bytes);
            int[] o = bits(outHost, dtype, n);
            int[] ro = bits(resOutHost, dtype, n);
            int[] sumGpu = bits(copy(arena, refSum, bytes), dtype, n);
            int[] o2 = bits(copy(arena, refOut, bytes), dtype, n);
            int[] ro2 = bits(copy(arena, refResOut, bytes), dtype, n);
            if (!outIsIn) {
                countDiffering(problems, "in changed (out of place)", bits(copy(arena, dIn, bytes), dtype, n),
                        bits(hostIn, dtype, n));
            }
            if (!resIsResidual) {
                countDiffering(problems, "residual changed (residualOut apart)", bits(copy(arena, dRes, bytes), dtype, n),
                        bits(hostRes, dtype, n));
            }

            // Host reference of residualOut, bitwise: rank-order fp32 sum rounded to the dtype, then
            // + residual in fp32 rounded once.
            int[] sumRef = new int[n], roRef = new int[n];
            float[] r = new float[n];
            for (int i = 0; i < n; i++) {
                float acc = inputs[0][i];
                for (int q = 1; q < WORLD; q++) {
                    acc += inputs[q][i];
                }
                float sum = representable(dtype, acc);
                sumRef[i] = toBits(dtype, sum);
                r[i] = representable(dtype, sum + residual[i]);
                roRef[i] = toBits(dtype, r[i]);
            }
            countDiffering(problems, "all-reduce of the unfused path vs the host's rank-order sum", sumGpu, sumRef);
            countDiffering(problems, "residualOut vs the host reference", ro, roRef);
            countDiffering(problems, "residualOut vs the unfused path", ro, ro2);
            countDiffering(problems, "out vs the unfused path", o, o2);

            // Host reference of out: the kernels' fp32 sum of squares in their order, exact 1/sqrt.
            int packElems = 16 / dtype.byteSize();
            int wrongNorm = 0, firstWrong = -1;
            String firstWhat = "";
            for (int row = 0; row < rows; row++) {
                int base = row * hidden;
                float squares = kernelOrderSquares(r, base, hidden, packElems);
                float x = squares / (float) hidden + EPS;
                double inv = 1.0 / Math.sqrt(x);
                for (int i = 0; i < hidden; i++) {
                    int k = base + i;
                    double ref = r[k] * inv * weight[i];
                    float got = fromBits(dtype, o[k]);
                    long steps = Float.isNaN(got) ? Long.MAX_VALUE : stepsApart(dtype, o[k], toBits(dtype, (float) ref));
                    long allowed = dtype == DType.FLOAT32 ? FP32_ULPS : 1;
                    if (steps > allowed) {
                        if (wrongNorm++ == 0) {
                            firstWrong = k;
                            firstWhat = "got " + got + ", reference " + ref;
                        }
                    }
                }
            }
            if (wrongNorm > 0) {
                problems.add(wrongNorm + " of " + n + " out elements beyond " + (dtype == DType.FLOAT32 ? FP32_ULPS
                        + " fp32 ulps" : "one " + dtype + " step") + " of the host reference (first at " + firstWrong
                        + ": " + firstWhat + ")");
            }
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            sha.update(outHost.toArray(ValueLayout.JAVA_BYTE));
            sha.update(resOutHost.toArray(ValueLayout.JAVA_BYTE));
            hash = HexFormat.of().formatHex(sha.digest(), 0, 16);
        }
        boolean pass = problems.isEmpty();
        System.out.println("CASE " + index + " " + dtype + " rows=" + rows + " hidden=" + hidden + " " + placement
                + " fused=" + fused + " " + (pass ? "PASS" : "FAIL") + " hash=" + hash
                + (pass ? "" : " problems: " + String.join("; ", problems)) + " | " + explain);
        System.out.flush();
        return pass;
    }

    /**
     * A row's sum of squares as the kernels compute it (rmsnorm_math.cuh): the row in 16-byte
     * packs, thread t of 512 takes packs t, t + 512, ... and their elements in order with
     * {@code fmaf(r, r, squares)}; then each warp sums its lanes by xor butterfly (offsets 16, 8,
     * 4, 2, 1) and the warps' sums are added in order to 0.
     */
    static float kernelOrderSquares(float[] r, int base, int hidden, int packElems) {
        int packs = (hidden + packElems - 1) / packElems;
        float[] partial = new float[NORM_THREADS];
        for (int t = 0; t < NORM_THREADS; t++) {
            float squares = 0f;
            for (int p = t; p < packs; p += NORM_THREADS) {
                for (int e = 0; e < packElems && p * packElems + e < hidden; e++) {
                    float v = r[base + p * packElems + e];
                    squares = Math.fma(v, v, squares);
                }
            }
            partial[t] = squares;
        }
        float total = 0f;
        float[] lanes = new float[WARP], next = new float[WARP];
        for (int w = 0; w < NORM_THREADS / WARP; w++) {
            System.arraycopy(partial, w * WARP, lanes, 0, WARP);
            for (int offset = WARP / 2; offset > 0; offset >>= 1) {
                for (int l = 0; l < WARP; l++) {
                    next[l] = lanes[l] + lanes[l ^ offset];
                }
                float[] t = lanes;
                lanes = next;
                next = t;
            }
            total += lanes[0];
        }
        return total;
    }

    /** n values in [lo, hi), representable in the dtype, none zero (-0 is the half types' push sentinel). */
    private static float[] values(SplittableRandom random, int n, DType dtype, double lo, double hi) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            float x;
            do {
                x = representable(dtype, (float) random.nextDouble(lo, hi));
            } while (x == 0f);
            v[i] = x;
        }
        return v;
    }

    static float representable(DType dtype, float v) {
        return fromBits(dtype, toBits(dtype, v));
    }

    static int toBits(DType dtype, float v) {
        return switch (dtype) {
            case FLOAT32 -> Float.floatToRawIntBits(v);
            case FLOAT16 -> HalfFloats.toFloat16(v) & 0xffff;
            case BFLOAT16 -> HalfFloats.toBFloat16(v) & 0xffff;
        };
    }

    static float fromBits(DType dtype, int bits) {
        return switch (dtype) {
            case FLOAT32 -> Float.intBitsToFloat(bits);
            case FLOAT16 -> HalfFloats.fromFloat16((short) bits);
            case BFLOAT16 -> HalfFloats.fromBFloat16((short) bits);
        };
    }

    /** How many representable values of the dtype lie between two (non-NaN) bit patterns; +0 and -0 are one. */
    static long stepsApart(DType dtype, int a, int b) {
        return Math.abs(ordinal(dtype, a) - ordinal(dtype, b));
    }

    private static long ordinal(DType dtype, int bits) {
        int sign = dtype == DType.FLOAT32 ? 0x8000_0000 : 0x8000;
        long magnitude = bits & ~sign & (dtype == DType.FLOAT32 ? 0xffff_ffff : 0xffff);
        return (bits & sign) != 0 ? -magnitude : magnitude;
    }

    private static int[] bits(MemorySegment host, DType dtype, int n) {
        int[] b = new int[n];
        for (int i = 0; i < n; i++) {
            b[i] = dtype == DType.FLOAT32 ? host.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i)
                    : host.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i) & 0xffff;
        }
        return b;
    }

    private static void countDiffering(List<String> problems, String what, int[] got, int[] expected) {
        int wrong = 0, first = -1;
        for (int i = 0; i < got.length; i++) {
            if (got[i] != expected[i] && wrong++ == 0) {
                first = i;
            }
        }
        if (wrong > 0) {
            problems.add(what + ": " + wrong + " of " + got.length + " elements differ bitwise (first at " + first
                    + ": 0x" + Integer.toHexString(got[first]) + " instead of 0x" + Integer.toHexString(expected[first])
                    + ")");
        }
    }

    private static MemorySegment copy(Arena arena, DeviceBuffer b, long bytes) {
        MemorySegment host = arena.allocate(bytes, 16);
        b.copyTo(host);
        return host;
    }
}
