package dev.ar4j.benchmarks.jmh;

import dev.ar4j.Communicator;
import dev.ar4j.DType;
import dev.ar4j.dispatch.AllReduceDispatcher;
import dev.ar4j.dispatch.Decision;
import dev.ar4j.dispatch.DispatchConfig;
import dev.ar4j.dispatch.Topology;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.util.concurrent.TimeUnit;

/**
 * The dispatch decision on the eager all-reduce path: {@link AllReduceDispatcher#decide} for an
 * unregistered, 16-byte aligned bf16 input on two NVLink GPUs with the default configuration,
 * at sizes that take each branch (push, one-stage, the staging limit). CPU only.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class DispatchBenchmark {

    /** Made by JMH, once per {@code @State} scope (JMH needs a public no-argument constructor). */
    public DispatchBenchmark() {
    }

    /** Bytes per all-reduce: 1 KiB and 43008 B (push), 1 MiB (one-stage), 64 MiB (over the staging buffer). */
    @Param({"1024", "43008", "1048576", "67108864"})
    public long bytes;

    private AllReduceDispatcher dispatcher;

    /** Builds the dispatcher of a two-GPU NVLink group. */
    @Setup
    public void setUp() {
        dispatcher = AllReduceDispatcher.of(Topology.singleHost(2, true), DispatchConfig.defaults(),
                Communicator.DEFAULT_STAGING_BYTES);
    }

    /**
     * One decision, as {@code Communicator.allReduce} makes it per call, for {@link #bytes} of bf16
     * in a registered buffer.
     *
     * @return the decision; returned so that JMH consumes it
     */
    @Benchmark
    public Decision decide() {
        return dispatcher.decide(bytes, DType.BFLOAT16, true, false);
    }
}
