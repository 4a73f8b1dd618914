package dev.ar4j.benchmarks.jmh;

import dev.ar4j.bindings.customar.custom_all_reduce_h;
import dev.ar4j.Ar4j;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.concurrent.TimeUnit;

/**
 * The cost of crossing from Java into the kernel launch entry {@code ar4j_all_reduce}, without the
 * launch: with a null context the C function returns {@code AR4J_ERROR_NULL_POINTER} at once, so
 * what is measured is the FFM downcall itself. Three ways in: the jextract binding (which wraps
 * the handle), the binding's plain handle called directly, and a handle linked with
 * {@code Linker.Option.critical(false)} (no thread-state transition). Plus
 * {@code ar4j_status_name}, a call returning a pointer. Needs {@code libar4j_custom_ar.so} (the
 * ar4j-cuda jar) and libcudart; no GPU.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class DowncallBenchmark {

    /** Made by JMH, once per {@code @State} scope (JMH needs a public no-argument constructor). */
    public DowncallBenchmark() {
    }
    private static final int ALGORITHM = 1;
    private static final int DTYPE = 2;
    private static final long COUNT = 21504;

    private int expected;

    /** The handles as constants (what the JIT sees in real code); initialised after the library is loaded. */
    private static final class Handles {
        static final MethodHandle PLAIN = custom_all_reduce_h.ar4j_all_reduce$handle();
        static final MethodHandle CRITICAL = Linker.nativeLinker().downcallHandle(
                custom_all_reduce_h.ar4j_all_reduce$address(), custom_all_reduce_h.ar4j_all_reduce$descriptor(),
                Linker.Option.critical(false));
    }

    /**
     * Loads the kernels library, links the critical handle and checks that every way in returns the expected status.
     *
     * @throws Throwable if the library cannot be loaded ({@code NativeLibraryException}), a handle's
     *                   invocation fails, or ({@link IllegalStateException}) a way in returns another
     *                   status than {@code AR4J_ERROR_NULL_POINTER} or the status name is NULL
     */
    @Setup
    public void setUp() throws Throwable {
        Ar4j.kernelsAbiVersion(); // loads libcudart and the kernels library on first use
        expected = custom_all_reduce_h.AR4J_ERROR_NULL_POINTER();
        int viaBinding = generatedBinding();
        int viaPlain = plainHandle();
        int viaCritical = criticalHandle();
        if (viaBinding != expected || viaPlain != expected || viaCritical != expected) {
            throw new IllegalStateException("ar4j_all_reduce(NULL context, ...) should return AR4J_ERROR_NULL_POINTER ("
                    + expected + "); got " + viaBinding + " (binding), " + viaPlain + " (plain handle), " + viaCritical
                    + " (critical handle)");
        }
        if (statusName().address() == 0) {
            throw new IllegalStateException("ar4j_status_name returned NULL");
        }
    }

    /**
     * {@code custom_all_reduce_h.ar4j_all_reduce(...)}: the generated wrapper, with a NULL context.
     *
     * @return the status, {@code AR4J_ERROR_NULL_POINTER}; returned so that JMH consumes it
     */
    @Benchmark
    public int generatedBinding() {
        return custom_all_reduce_h.ar4j_all_reduce(MemorySegment.NULL, ALGORITHM, DTYPE, MemorySegment.NULL,
                MemorySegment.NULL, COUNT, MemorySegment.NULL);
    }

    /**
     * The binding's downcall handle, invoked exactly, with a NULL context.
     *
     * @return the status, {@code AR4J_ERROR_NULL_POINTER}; returned so that JMH consumes it
     * @throws Throwable whatever {@code invokeExact} throws (nothing, with the signature it is linked with)
     */
    @Benchmark
    public int plainHandle() throws Throwable {
        return (int) Handles.PLAIN.invokeExact(MemorySegment.NULL, ALGORITHM, DTYPE, MemorySegment.NULL, MemorySegment.NULL,
                COUNT, MemorySegment.NULL);
    }

    /**
     * A handle linked with {@code Linker.Option.critical(false)}, with a NULL context.
     *
     * @return the status, {@code AR4J_ERROR_NULL_POINTER}; returned so that JMH consumes it
     * @throws Throwable whatever {@code invokeExact} throws (nothing, with the signature it is linked with)
     */
    @Benchmark
    public int criticalHandle() throws Throwable {
        return (int) Handles.CRITICAL.invokeExact(MemorySegment.NULL, ALGORITHM, DTYPE, MemorySegment.NULL, MemorySegment.NULL,
                COUNT, MemorySegment.NULL);
    }

    /**
     * {@code ar4j_status_name(AR4J_ERROR_NULL_POINTER)} through the binding.
     *
     * @return the zero-length segment of the static C string naming the status
     */
    @Benchmark
    public MemorySegment statusName() {
        return custom_all_reduce_h.ar4j_status_name(expected);
    }
}
