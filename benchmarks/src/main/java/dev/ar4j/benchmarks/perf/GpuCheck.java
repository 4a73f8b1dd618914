package dev.ar4j.benchmarks.perf;

import dev.ar4j.Ar4j;
import dev.ar4j.cuda.Cuda;
import dev.ar4j.cuda.CudaDriverMissingException;
import dev.ar4j.cuda.CudaException;
import dev.ar4j.cuda.CudaNoDeviceException;
import dev.ar4j.NativeLibraryException;
import dev.ar4j.nccl.Nccl;

/**
 * Whether this machine can run ar4j-perf, and if not, exactly what is missing: the CUDA runtime
 * library, the NVIDIA driver, a visible GPU, a second GPU, NCCL, or ar4j's kernels library.
 *
 * @param gpus     visible GPUs (0 when unknown)
 * @param problem  what is missing, or null when the machine is usable
 * @param nccl     NCCL's version ("2.28.9"), or null when not loaded
 */
public record GpuCheck(int gpus, String problem, String nccl) {

    /** {@return whether ar4j-perf can run here: true when there is no {@link #problem}} */
    public boolean usable() {
        return problem == null;
    }

    /**
     * Probes the machine for at least 2 GPUs (loads libcudart, libnccl and the kernels library;
     * creates no CUDA context).
     *
     * @return the GPU count, NCCL's version and the first problem found; never throws for a
     *         missing library, driver or GPU
     */
    public static GpuCheck probe() {
        return probe(2);
    }

    /**
     * {@link #probe()} needing only {@code minimumGpus} visible GPUs ({@code --share-gpu}: 1).
     *
     * @param minimumGpus the fewest visible GPUs that make the machine usable, at least 1
     * @return the GPU count, NCCL's version and the first problem found (the CUDA runtime, the
     *         driver, the GPU count, NCCL, then the kernels library, in that order)
     */
    public static GpuCheck probe(int minimumGpus) {
        int count;
        try {
            count = Cuda.deviceCount();
        } catch (NativeLibraryException e) {
            return new GpuCheck(0, "the CUDA runtime library (libcudart.so.13 or .12) could not be loaded: "
                    + e.getMessage(), null);
        } catch (CudaDriverMissingException e) {
            return new GpuCheck(0, "no NVIDIA driver is installed (libcuda.so.1 not found or too old): " + e.getMessage(),
                    null);
        } catch (CudaNoDeviceException e) {
            return new GpuCheck(0, "the NVIDIA driver sees no GPU (none installed, or CUDA_VISIBLE_DEVICES hides them): "
                    + e.getMessage(), null);
        } catch (CudaException e) {
            return new GpuCheck(0, "CUDA cannot count the GPUs: " + e.getMessage(), null);
        }
        if (count < minimumGpus) {
            return new GpuCheck(count, "only " + count + " GPU is visible; an all-reduce benchmark needs at least 2"
                    + " (--share-gpu runs every rank on GPU 0, without NCCL)", null);
        }
        String nccl;
        try {
            nccl = Nccl.versionString();
        } catch (NativeLibraryException e) {
            return new GpuCheck(count, "NCCL (libnccl.so.2) could not be loaded: " + e.getMessage(), null);
        }
        try {
            Ar4j.kernelsAbiVersion();
        } catch (NativeLibraryException e) {
            return new GpuCheck(count, "ar4j's kernels library (libar4j_custom_ar.so in the ar4j-cuda jar) could not be "
                    + "loaded; was the jar built with -Dar4j.native.skip=true? " + e.getMessage(), nccl);
        }
        return new GpuCheck(count, null, nccl);
    }

    /**
     * The world size for {@code requested} GPUs (0 = choose): the largest of 8, 6, 4 and 2 that
     * fits, as the custom kernels support those.
     *
     * @param requested the {@code -g} value: 0 to choose, else 2 up to the GPU count
     * @return the number of ranks to start
     * @throws IllegalArgumentException if {@code requested} is below 2 or above the GPU count, or
     *                                  if it is 0 and fewer than 2 GPUs are visible
     */
    public int worldSize(int requested) {
        return worldSize(requested, false);
    }

    /**
     * The world size; with {@code shareGpu} every rank runs on GPU 0, so it is {@code requested}
     * (default 2) whatever the GPU count, and must be a size the custom kernels support; without
     * it, as {@link #worldSize(int)}.
     *
     * @param requested the {@code -g} value: 0 to choose
     * @param shareGpu  whether every rank runs on GPU 0 ({@code --share-gpu})
     * @return the number of ranks to start
     * @throws IllegalArgumentException with {@code shareGpu}, if the size is not 2, 4, 6 or 8;
     *                                  without it, as {@link #worldSize(int)}
     */
    public int worldSize(int requested, boolean shareGpu) {
        if (shareGpu) {
            int n = requested == 0 ? 2 : requested;
            if (n != 2 && n != 4 && n != 6 && n != 8) {
                throw new IllegalArgumentException("-g " + n + " with --share-gpu: the custom kernels take 2, 4, 6 or 8 "
                        + "ranks");
            }
            return n;
        }
        if (requested != 0) {
            if (requested < 2) {
                throw new IllegalArgumentException("-g: an all-reduce benchmark needs at least 2 GPUs, got " + requested);
            }
            if (requested > gpus) {
                throw new IllegalArgumentException("-g " + requested + ": only " + gpus + " GPUs are visible");
            }
            return requested;
        }
        for (int n : new int[] {8, 6, 4, 2}) {
            if (n <= gpus) {
                return n;
            }
        }
        throw new IllegalArgumentException("only " + gpus + " GPU is visible; an all-reduce benchmark needs at least 2");
    }
}
