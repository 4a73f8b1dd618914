package dev.ar4j.benchmarks.jmh;

import dev.ar4j.Communicator;
import dev.ar4j.DType;
import dev.ar4j.benchmarks.perf.GpuCheck;
import dev.ar4j.cuda.Cuda;
import dev.ar4j.cuda.CudaEvent;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.dispatch.Algorithm;
import dev.ar4j.dispatch.Decision;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * A full eager all-reduce from Java on two GPUs of one JVM ({@link Communicator#localGroup}):
 * host time per {@code Communicator.allReduce} call of 43008 bytes bf16, out of place, unregistered
 * input, with a stream synchronisation every {@value #CALLS_PER_SYNC} calls (included in the time).
 *
 * <p>The JMH thread drives rank 0 (GPU 0); a helper thread drives rank 1 (GPU 1) in lock step: per
 * invocation both make exactly {@value #CALLS_PER_SYNC} calls, so the ranks never disagree on the
 * number of all-reduces whatever JMH's timing. Without two GPUs the setup fails with the reason,
 * and JMH goes on with the other benchmarks. Needs {@code NCCL_NVLS_ENABLE=0} in the environment
 * (gpu/run-perf.sh sets it).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
@Threads(1)
public class EagerAllReduceBenchmark {

    /** Made by JMH, once per {@code @State} scope (JMH needs a public no-argument constructor). */
    public EagerAllReduceBenchmark() {
    }
    /** All-reduces per invocation, between two synchronisations. */
    public static final int CALLS_PER_SYNC = 100;
    private static final Duration WAIT_LIMIT = Duration.ofSeconds(30);

    /** The policy forced per call. */
    @Param({"push", "1stage", "auto"})
    public String algorithm;

    /** Bytes per all-reduce (43008 = 3 tokens x 7168 hidden x bf16). */
    @Param({"43008"})
    public int bytes;

    private Algorithm policy;
    private List<Communicator> group;
    private Rank rank0;
    private Rank rank1;
    private Thread peer;
    private Thread benchmarkThread;
    private final AtomicLong requested = new AtomicLong();
    private final AtomicLong completed = new AtomicLong();
    private volatile Throwable peerFailure;
    private volatile boolean stopping;

    /** One rank's stream, buffers and completion marker. */
    private static final class Rank {
        final Communicator comm;
        final CudaStream stream;
        final DeviceBuffer in;
        final DeviceBuffer out;
        final CudaEvent marker;

        Rank(Communicator comm, long bytes) {
            Cuda.setDevice(comm.device());
            this.comm = comm;
            this.stream = CudaStream.create();
            this.in = DeviceBuffer.allocate(bytes);
            this.out = DeviceBuffer.allocate(bytes);
            this.marker = CudaEvent.create(false, false);
            in.fill(0);
        }

        Decision calls(int n, long count, Algorithm policy) {
            long src = in.address();
            long dst = out.address();
            long s = stream.handle();
            Decision d = null;
            for (int i = 0; i < n; i++) {
                d = comm.allReduce(src, dst, count, DType.BFLOAT16, s, policy);
            }
            return d;
        }

        void awaitStream() {
            marker.record(stream);
            long deadline = System.nanoTime() + WAIT_LIMIT.toNanos();
            while (!marker.isComplete()) {
                if (System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException("rank " + comm.rank() + ": the all-reduces did not finish within "
                            + WAIT_LIMIT.toSeconds() + " s");
                }
                Thread.onSpinWait();
            }
        }

        void close() {
            Cuda.setDevice(comm.device());
            marker.close();
            out.close();
            in.close();
            stream.close();
            comm.close();
        }
    }

    /** Builds the two-rank group and starts rank 1's thread; fails with the reason where that cannot be done. */
    @Setup(Level.Trial)
    public void setUp() {
        if (!"0".equals(System.getenv("NCCL_NVLS_ENABLE"))) {
            throw new IllegalStateException("EagerAllReduceBenchmark skipped: set NCCL_NVLS_ENABLE=0 (and "
                    + "TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1) in the environment, as gpu/run-perf.sh does");
        }
        GpuCheck check = GpuCheck.probe();
        if (!check.usable()) {
            throw new IllegalStateException("EagerAllReduceBenchmark skipped: it needs 2 GPUs: " + check.problem());
        }
        policy = Algorithm.parse(algorithm, "the algorithm parameter");
        group = Communicator.localGroup(new int[] {0, 1},
                b -> b.kernelTimeout(Duration.ofSeconds(10)).rendezvousTimeout(Duration.ofSeconds(60)));
        rank1 = new Rank(group.get(1), bytes);
        rank0 = new Rank(group.get(0), bytes);
        long count = bytes / DType.BFLOAT16.byteSize();
        peer = new Thread(() -> peerLoop(count), "eager-benchmark-rank-1");
        peer.setDaemon(true);
        peer.start();
        Decision d = allReduce();
        System.out.println("# EagerAllReduceBenchmark: " + algorithm + " runs " + d.algorithm().displayName() + " ("
                + d.reason() + ")");
    }

    private void peerLoop(long count) {
        try {
            Cuda.setDevice(rank1.comm.device());
            long done = 0;
            int idle = 0;
            while (!stopping) {
                if (requested.get() == done) {
                    if (++idle > 100_000) {
                        LockSupport.parkNanos(20_000);
                    } else {
                        Thread.onSpinWait();
                    }
                    continue;
                }
                idle = 0;
                rank1.calls(CALLS_PER_SYNC, count, policy);
                rank1.awaitStream();
                completed.set(++done);
            }
        } catch (Throwable t) {
            peerFailure = t;
        }
    }

    /**
     * {@value #CALLS_PER_SYNC} eager all-reduces on each rank, then both streams synchronised.
     *
     * @return the dispatcher's decision for rank 0's last call; returned so that JMH consumes it
     * @throws IllegalStateException if rank 1's thread failed or did not finish within the wait limit
     */
    @Benchmark
    @OperationsPerInvocation(CALLS_PER_SYNC)
    public Decision allReduce() {
        if (Thread.currentThread() != benchmarkThread) {
            Cuda.setDevice(rank0.comm.device());
            benchmarkThread = Thread.currentThread();
        }
        long generation = requested.incrementAndGet();
        Decision d = rank0.calls(CALLS_PER_SYNC, bytes / DType.BFLOAT16.byteSize(), policy);
        rank0.awaitStream();
        long deadline = System.nanoTime() + WAIT_LIMIT.toNanos();
        while (completed.get() < generation) {
            Throwable failure = peerFailure;
            if (failure != null) {
                throw new IllegalStateException("rank 1 failed: " + failure, failure);
            }
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("rank 1 did not finish its all-reduces within " + WAIT_LIMIT.toSeconds() + " s");
            }
            Thread.onSpinWait();
        }
        return d;
    }

    /**
     * Stops rank 1's thread and frees everything.
     *
     * @throws InterruptedException  if interrupted while waiting for rank 1's thread
     * @throws IllegalStateException if rank 1's thread does not stop within the wait limit
     */
    @TearDown(Level.Trial)
    public void tearDown() throws InterruptedException {
        stopping = true;
        if (peer != null) {
            peer.join(WAIT_LIMIT.toMillis());
            if (peer.isAlive()) {
                throw new IllegalStateException("rank 1's thread did not stop within " + WAIT_LIMIT.toSeconds() + " s");
            }
        }
        if (rank1 != null) {
            rank1.close();
        }
        if (rank0 != null) {
            rank0.close();
        }
        if (group != null) {
            group.forEach(Communicator::close); // idempotent: closes only what a failed setup left open
        }
    }
}
