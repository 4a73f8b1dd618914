package dev.ar4j.it;

import dev.ar4j.Communicator;
import dev.ar4j.DType;
import dev.ar4j.GraphCapture;
import dev.ar4j.cuda.CaptureMode;
import dev.ar4j.cuda.Cuda;
import dev.ar4j.cuda.CudaGraph;
import dev.ar4j.cuda.CudaGraphExec;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.dispatch.Algorithm;
import dev.ar4j.dispatch.Decision;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * The GPU correctness matrix of the all-reduce runtime, run by every rank of a group:
 * element counts × dtypes × policies × in place/out of place × registered/unregistered ×
 * eager/CUDA graph, each for several rounds with fresh integer-valued random inputs (exact sums
 * in every dtype), outputs poisoned before every run, compared bitwise with the exact sum (which
 * is also what NCCL returns; NCCL is one of the policies).
 *
 * <p>Every rank derives every rank's inputs from the shared seed, so it checks its output alone.
 */
public final class AllReduceMatrix {

    /** The counts of the issue, with +376 tails, plus counts whose byte size is not a multiple of 16. */
    static long[] counts(boolean quick) {
        long[] base = quick ? new long[] {512, 7680, 262144, 2097152}
                : new long[] {512, 2560, 4096, 5120, 7680, 32768, 262144, 524288, 1048576, 2097152};
        List<Long> all = new ArrayList<>();
        for (long c : base) {
            all.add(c);
            all.add(c + 376);
        }
        all.add(4099L);  // 16396 / 8198 bytes: not a multiple of 16 → NCCL
        return all.stream().mapToLong(Long::longValue).toArray();
    }

    static final Algorithm[] POLICIES = {
            Algorithm.ONE_STAGE, Algorithm.TWO_STAGE, Algorithm.PUSH, Algorithm.NCCL,
            Algorithm.AUTO};

    /** Per-rank result. */
    public record Summary(int rank, int cases, int passed, int failed, int skipped, Map<Algorithm, Integer> ran,
                          Map<Algorithm, Integer> fellBack, List<String> failures) {

        String line() {
            return "rank " + rank + ": " + cases + " cases, " + passed + " passed, " + failed + " failed, " + skipped
                    + " skipped; ran " + ran + "; forced-and-fell-back " + fellBack;
        }
    }

    private final Communicator comm;
    private final long seed;
    private final int rounds;
    private final boolean quick;

    public AllReduceMatrix(Communicator comm, long seed, int rounds, boolean quick) {
        this.comm = comm;
        this.seed = seed;
        this.rounds = rounds;
        this.quick = quick;
    }

    /** Runs the matrix on the calling thread (which it binds to the communicator's GPU). */
    public Summary run() {
        Cuda.setDevice(comm.device());
        long[] counts = counts(quick);
        long maxBytes = 0;
        for (long c : counts) {
            maxBytes = Math.max(maxBytes, c * 4);
        }
        maxBytes = (maxBytes + 255) & ~255L;
        int cases = 0, passed = 0, failed = 0, skipped = 0;
        Map<Algorithm, Integer> ran = new EnumMap<>(Algorithm.class);
        Map<Algorithm, Integer> fellBack = new EnumMap<>(Algorithm.class);
        List<String> failures = new ArrayList<>();
        try (DeviceBuffer registeredBuf = DeviceBuffer.allocate(maxBytes);
             DeviceBuffer plainBuf = DeviceBuffer.allocate(maxBytes);
             DeviceBuffer outBuf = DeviceBuffer.allocate(maxBytes + 256);
             CudaStream stream = CudaStream.create();
             Arena arena = Arena.ofConfined()) {
            comm.register(registeredBuf);
            MemorySegment host = arena.allocate(maxBytes, 16);
            MemorySegment expected = arena.allocate(maxBytes, 16);
            MemorySegment got = arena.allocate(maxBytes + 256, 16);
            int caseId = 0;
            for (DType dtype : DType.values()) {
                for (long count : counts) {
                    for (Algorithm policy : POLICIES) {
                        for (int mode = 0; mode < 8; mode++) {
                            boolean inPlace = (mode & 1) != 0;
                            boolean registered = (mode & 2) != 0;
                            boolean graph = (mode & 4) != 0;
                            caseId++;
                            long bytes = count * dtype.byteSize();
                            DeviceBuffer in = (registered ? registeredBuf : plainBuf).slice(0, bytes);
                            DeviceBuffer out = inPlace ? in : outBuf.slice(0, bytes);
                            String what = String.format("rank %d %s count %d %s %s %s %s", comm.rank(), dtype, count,
                                    policy.configName(), inPlace ? "in-place" : "out-of-place",
                                    registered ? "registered" : "unregistered", graph ? "graph" : "eager");
                            cases++;
                            String error;
                            try {
                                error = runCase(caseId, dtype, count, policy, in, out, inPlace, graph, stream, host,
                                        expected, got, outBuf, ran, fellBack);
                            } catch (RuntimeException e) {
                                error = "threw " + e;
                            }
                            if (error == null) {
                                passed++;
                            } else {
                                failed++;
                                if (failures.size() < 50) {
                                    failures.add(what + ": " + error);
                                }
                            }
                        }
                    }
                }
            }
        }
        return new Summary(comm.rank(), cases, passed, failed, skipped, ran, fellBack, failures);
    }

    /** Returns null when every round matched, else what went wrong. */
    private String runCase(int caseId, DType dtype, long count, Algorithm policy, DeviceBuffer in, DeviceBuffer out,
                           boolean inPlace, boolean graph, CudaStream stream, MemorySegment host, MemorySegment expected,
                           MemorySegment got, DeviceBuffer outBuf, Map<Algorithm, Integer> ran,
                           Map<Algorithm, Integer> fellBack) {
        long bytes = count * dtype.byteSize();
        MemorySegment hostIn = host.asSlice(0, bytes);
        CudaGraphExec exec = null;
        CudaGraph captured = null;
        Decision decision = null;
        try {
            if (graph) {
                try (GraphCapture scope = comm.graphCapture()) {
                    CudaGraph.beginCapture(stream, CaptureMode.THREAD_LOCAL);
                    try {
                        decision = comm.allReduce(in.address(), out.address(), count, dtype, stream.handle(), policy);
                    } finally {
                        captured = CudaGraph.endCapture(stream);
                    }
                }
                exec = captured.instantiate();
            }
            for (int round = 0; round < rounds; round++) {
                long roundSeed = seed * 1_000_003L + caseId * 131L + round;
                fill(hostIn, dtype, count, roundSeed, comm.rank());
                expectedSum(expected, dtype, count, roundSeed, comm.worldSize());
                in.copyFromAsync(hostIn, stream);
                if (!inPlace) {
                    outBuf.fillAsync(0xff, stream);  // NaN in every dtype, past the end too
                }
                if (graph) {
                    exec.launch(stream);
                } else {
                    decision = comm.allReduce(in.address(), out.address(), count, dtype, stream.handle(), policy);
                }
                stream.synchronize();
                comm.checkPeers();
                MemorySegment gotSlice = got.asSlice(0, inPlace ? bytes : bytes + 64);
                (inPlace ? out : outBuf.slice(0, bytes + 64)).copyTo(gotSlice);
                long mismatch = expected.asSlice(0, bytes).mismatch(got.asSlice(0, bytes));
                if (mismatch >= 0) {
                    return "round " + round + ": first wrong byte at " + mismatch + " (decision " + decision + ")";
                }
                if (!inPlace) {
                    for (long b = bytes; b < bytes + 64; b++) {
                        if (got.get(ValueLayout.JAVA_BYTE, b) != (byte) 0xff) {
                            return "round " + round + ": wrote past the end at byte " + b;
                        }
                    }
                }
            }
            ran.merge(decision.algorithm(), 1, Integer::sum);
            if (decision.fellBack()) {
                fellBack.merge(decision.algorithm(), 1, Integer::sum);
            }
            return checkDecision(policy, bytes, decision);
        } finally {
            if (exec != null) {
                exec.close();
            }
            if (captured != null) {
                captured.close();
            }
        }
    }

    /** A forced custom algorithm must run where it can: guards against "everything went to NCCL". */
    private String checkDecision(Algorithm policy, long bytes, Decision decision) {
        boolean multipleOf16 = bytes % 16 == 0;
        Algorithm algorithm = decision.algorithm();
        boolean ok = switch (policy) {
            case NCCL -> algorithm == Algorithm.NCCL;
            case ONE_STAGE -> !multipleOf16 ? algorithm == Algorithm.NCCL
                    : algorithm == Algorithm.ONE_STAGE || (bytes > comm.stagingBytes() && algorithm == Algorithm.NCCL);
            case TWO_STAGE -> !multipleOf16 || bytes > comm.stagingBytes() ? algorithm == Algorithm.NCCL
                    : algorithm == Algorithm.TWO_STAGE;
            case PUSH -> !multipleOf16 || bytes > 524288 ? algorithm == Algorithm.NCCL : algorithm == Algorithm.PUSH;
            case AUTO -> multipleOf16 || algorithm == Algorithm.NCCL;
            case LOCAL -> false;  // never a policy
        };
        return ok ? null : "unexpected decision " + decision + " for " + bytes + " bytes under policy " + policy;
    }

    /** Integer-valued inputs in [-16, 16]: every sum of up to 8 ranks is exact in bf16. */
    static void fill(MemorySegment host, DType dtype, long count, long roundSeed, int rank) {
        SplittableRandom random = new SplittableRandom(roundSeed * 31 + rank);
        for (long i = 0; i < count; i++) {
            put(host, dtype, i, random.nextInt(33) - 16);
        }
    }

    static void expectedSum(MemorySegment host, DType dtype, long count, long roundSeed, int worldSize) {
        SplittableRandom[] randoms = new SplittableRandom[worldSize];
        for (int r = 0; r < worldSize; r++) {
            randoms[r] = new SplittableRandom(roundSeed * 31 + r);
        }
        for (long i = 0; i < count; i++) {
            int sum = 0;
            for (SplittableRandom random : randoms) {
                sum += random.nextInt(33) - 16;
            }
            put(host, dtype, i, sum);
        }
    }

    private static void put(MemorySegment host, DType dtype, long i, int value) {
        switch (dtype) {
            case FLOAT32 -> host.set(ValueLayout.JAVA_FLOAT_UNALIGNED, i * 4, value);
            case FLOAT16 -> host.set(ValueLayout.JAVA_SHORT_UNALIGNED, i * 2, Float.floatToFloat16(value));
            case BFLOAT16 -> host.set(ValueLayout.JAVA_SHORT_UNALIGNED, i * 2,
                    (short) (Float.floatToRawIntBits(value) >>> 16));
        }
    }
}
