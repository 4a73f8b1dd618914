package dev.ar4j.it;

import dev.ar4j.Communicator;
import dev.ar4j.DType;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.nccl.NcclDisabledException;
import dev.ar4j.internal.platform.NativeLibraries;

/**
 * Child JVM of {@link WorldSizeOneIT}, started with {@code AR4J_NCCL_PATH} naming a file that does
 * not exist: builds a communicator of world size 1 (NCCL left at its default, on), all-reduces in
 * place and out of place and runs the residual RMSNorm call, then checks that libnccl was never
 * loaded. Prints "OK" and exits 0, or prints the failure and exits 1.
 */
public final class WorldSizeOneChild {

    private WorldSizeOneChild() {
    }

    public static void main(String[] args) throws Exception {
        try (Communicator comm = Communicator.builder().rank(0).worldSize(1).device(0).build();
             CudaStream stream = CudaStream.create();
             DeviceBuffer a = DeviceBuffer.allocate(4096 * 2);
             DeviceBuffer b = DeviceBuffer.allocate(4096 * 2);
             DeviceBuffer w = DeviceBuffer.allocate(4096 * 2);
             DeviceBuffer o = DeviceBuffer.allocate(4096 * 2);
             DeviceBuffer r = DeviceBuffer.allocate(4096 * 2)) {
            for (DeviceBuffer x : new DeviceBuffer[] {a, b, w}) x.fill(0);
            comm.allReduce(a, DType.BFLOAT16, stream);
            comm.allReduce(a, b, DType.BFLOAT16, stream);
            comm.allReduceResidualRmsNorm(a, b, w, o, r, 4096, 1e-6f, DType.BFLOAT16, stream);
            stream.synchronize();
            require(!comm.hasNccl(), "hasNccl() is false");
            require(!comm.hasCustomKernels(), "hasCustomKernels() is false");
            require(comm.health().isHealthy(), "healthy: " + comm.health());
            try {
                comm.collectives();
                require(false, "collectives() refused at world size 1");
            } catch (NcclDisabledException e) {
                require(e.getMessage().startsWith("world size 1"), "the refusal says world size 1: " + e.getMessage());
            }
            require(NativeLibraries.loaded(NativeLibraries.Library.NCCL).isEmpty(), "libnccl was never loaded");
            System.out.println("OK");
        } catch (Throwable t) {
            t.printStackTrace(System.out);
            System.out.flush();
            System.exit(1);
        }
    }

    private static void require(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError("expected: " + what);
        }
    }
}
