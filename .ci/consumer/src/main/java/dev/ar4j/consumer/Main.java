package dev.ar4j.consumer;

import dev.ar4j.Ar4j;
import dev.ar4j.Ar4jException;
import dev.ar4j.DType;
import dev.ar4j.HostData;
import dev.ar4j.NativeLibraryException;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * What a new user's first program does: asks ar4j what it is and whether it runs here, then
 * copies bf16 host data (made with {@link HostData}) to a GPU and back, catching
 * {@link Ar4jException}. Arguments: the expected version, the expected commit, and
 * {@code classpath} or {@code modulepath}. Exits 0 when everything is as expected: on a GPU
 * machine the copy round-trips; on a CPU-only one the probe and the copy fail with an
 * {@link Ar4jException} that says why.
 */
public final class Main {
    private Main() {
    }

    public static void main(String[] args) {
        if (args[0].equals("without-cuda-jar")) {
            withoutTheCudaJar();
            return;
        }
        String expectedVersion = args[0];
        String expectedCommit = args[1];
        boolean modulePath = args[2].equals("modulepath");
        check(Ar4j.version().equals(expectedVersion), "Ar4j.version() is " + Ar4j.version() + ", expected " + expectedVersion);
        check(Ar4j.commit().equals(expectedCommit), "Ar4j.commit() is " + Ar4j.commit() + ", expected " + expectedCommit);
        Module runtime = Ar4j.class.getModule();
        check(runtime.isNamed() == modulePath, "ar4j's module is " + runtime + " on the " + args[2]);
        if (modulePath) {
            check(ModuleLayer.boot().findModule("dev.ar4j.cuda").filter(m -> !m.getDescriptor().isAutomatic()).isPresent(),
                    "the named module dev.ar4j.cuda is resolved without --add-modules");
        }
        boolean available = Ar4j.isAvailable();
        System.out.println("ar4j " + Ar4j.version() + " (" + Ar4j.commit() + ") on the " + args[2] + ": available="
                + available + Ar4j.unavailabilityCause().map(c -> ", because " + firstLine(c)).orElse(""));
        check(available == Ar4j.unavailabilityCause().isEmpty(), "a cause exactly when unavailable");

        float[] hostValues = {1f, -2f, 0.5f, 3.25f, 1024f, -0f, 7f, 8f}; // 8 bf16 = 16 bytes
        try (Arena arena = Arena.ofConfined();
             DeviceBuffer x = DeviceBuffer.allocate(hostValues.length * DType.BFLOAT16.byteSize());
             CudaStream stream = CudaStream.create()) {
            MemorySegment hostData = HostData.encode(hostValues, DType.BFLOAT16, arena);
            x.copyFrom(hostData);
            MemorySegment back = arena.allocate(hostData.byteSize());
            x.copyTo(back);
            stream.synchronize();
            float[] values = HostData.decode(back, DType.BFLOAT16);
            check(Arrays.equals(values, hostValues), "round trip " + Arrays.toString(values));
            check(available, "a GPU copy worked, so the probe should say available");
            System.out.println("copied " + values.length + " bf16 values to the GPU and back");
        } catch (Ar4jException e) {
            check(!available, "the probe said available, but: " + e);
            System.out.println("caught " + e.getClass().getName() + " (an Ar4jException): " + firstLine(e));
        }
        System.out.println("consumer check OK");
    }

    /** On the class path without the ar4j-cuda jar: loading the kernels fails, naming the jar. */
    private static void withoutTheCudaJar() {
        try {
            dev.ar4j.Ar4j.kernelsAbiVersion();
            check(false, "the kernels loaded without the ar4j-cuda jar");
        } catch (NativeLibraryException e) {
            check(e.getMessage().contains("the ar4j-cuda jar (module dev.ar4j.cuda): not on the class path"),
                    "the diagnosis names the missing jar: " + e.getMessage());
            System.out.println("without the ar4j-cuda jar: " + e.attempts());
        }
        System.out.println("consumer check OK");
    }

    private static String firstLine(Throwable t) {
        String message = String.valueOf(t.getMessage());
        int newline = message.indexOf('\n');
        return t.getClass().getSimpleName() + ": " + (newline < 0 ? message : message.substring(0, newline));
    }

    private static void check(boolean ok, String what) {
        if (!ok) {
            System.err.println("consumer check failed: " + what);
            System.exit(1);
        }
    }
}
