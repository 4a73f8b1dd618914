package dev.ar4j.examples.llama.engine;

import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.examples.llama.cublas.bindings.cublas_api_h;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * One cuBLAS handle, bound to one stream and a workspace of its own (so that its GEMMs can be
 * captured into CUDA graphs without cuBLAS allocating), doing the one product a Llama layer
 * needs: {@code Y[t, n] = X[t, k] · W[n, k]ᵀ} on row-major bf16 matrices with fp32 accumulation
 * ({@code cublasGemmEx}, {@code CUBLAS_COMPUTE_32F}), where {@code W} is a PyTorch linear weight.
 * Used by one thread at a time; the handle is destroyed once, by {@link #close()}.
 */
public final class Cublas implements AutoCloseable {

    private final Arena arena = Arena.ofShared();
    private final MemorySegment handle;
    private final MemorySegment one;
    private final MemorySegment zero;
    private boolean closed;

    private Cublas(MemorySegment handle) {
        this.handle = handle;
        this.one = arena.allocateFrom(ValueLayout.JAVA_FLOAT, 1.0f);
        this.zero = arena.allocateFrom(ValueLayout.JAVA_FLOAT, 0.0f);
    }

    /**
     * Creates a handle on the calling thread's current device, bound to {@code stream} and {@code workspace}.
     *
     * @param stream    the stream every GEMM runs on
     * @param workspace cuBLAS's workspace (e.g. 32 MiB), owned by the caller, alive as long as this handle
     * @return the handle
     * @throws EngineException if cuBLAS cannot be loaded or set up
     */
    public static Cublas create(CudaStream stream, DeviceBuffer workspace) {
        CublasLibrary.load();
        MemorySegment h;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ValueLayout.ADDRESS);
            check(cublas_api_h.cublasCreate_v2(out), "cublasCreate_v2");
            h = out.get(ValueLayout.ADDRESS, 0);
        }
        Cublas c = new Cublas(h);
        try {
            check(cublas_api_h.cublasSetStream_v2(h, stream.segment()), "cublasSetStream_v2");
            check(cublas_api_h.cublasSetWorkspace_v2(h, workspace.segment(), workspace.byteSize()),
                    "cublasSetWorkspace_v2");
            check(cublas_api_h.cublasSetMathMode(h, cublas_api_h.CUBLAS_DEFAULT_MATH()), "cublasSetMathMode");
            return c;
        } catch (RuntimeException e) {
            c.close();
            throw e;
        }
    }

    /**
     * {@code Y = X · Wᵀ}: {@code t} rows of {@code X} (row stride {@code ldx} elements) times the
     * {@code n x k} weight {@code W} (contiguous), into {@code t} rows of {@code Y} (row stride
     * {@code ldy}). Device addresses of the handle's device; enqueued on the handle's stream.
     *
     * @param w   the weight's address, {@code n * k} bf16
     * @param x   the input's address
     * @param y   the output's address
     * @param t   rows of X and Y (tokens)
     * @param n   output features (rows of W)
     * @param k   input features (columns of W)
     * @param ldx X's row stride in elements, at least {@code k}
     * @param ldy Y's row stride in elements, at least {@code n}
     * @throws EngineException if cuBLAS refuses the call
     */
    public void linear(long w, long x, long y, int t, int n, int k, int ldx, int ldy) {
        int status = cublas_api_h.cublasGemmEx(handle, cublas_api_h.CUBLAS_OP_T(), cublas_api_h.CUBLAS_OP_N(), n, t, k,
                one, MemorySegment.ofAddress(w), cublas_api_h.CUDA_R_16BF(), k, MemorySegment.ofAddress(x),
                cublas_api_h.CUDA_R_16BF(), ldx, zero, MemorySegment.ofAddress(y), cublas_api_h.CUDA_R_16BF(), ldy,
                cublas_api_h.CUBLAS_COMPUTE_32F(), cublas_api_h.CUBLAS_GEMM_DEFAULT());
        if (status != cublas_api_h.CUBLAS_STATUS_SUCCESS()) {
            throw new EngineException("cublasGemmEx(m=" + n + ", n=" + t + ", k=" + k + ", lda=" + k + ", ldb=" + ldx
                    + ", ldc=" + ldy + ") failed: " + statusName(status));
        }
    }

    /**
     * A batch of products on column-major bf16 matrices with fp32 accumulation and bf16 output
     * ({@code cublasGemmBatchedEx}, {@code CUBLAS_COMPUTE_32F}): for each {@code i < batch},
     * {@code C_i (m x n, ldc) = op(A_i) · B_i (k x n, ldb)}, {@code op(A_i)} the {@code m x k} matrix
     * {@code A_i} or, when {@code transposeA}, the transpose of {@code A_i (k x m, lda)}. The matrices'
     * addresses are read from three arrays of {@code batch} device pointers in device memory, which
     * may be filled once and reused (capturable).
     *
     * @param transposeA whether A is transposed
     * @param m          rows of C
     * @param n          columns of C
     * @param k          the shared dimension
     * @param aPointers  the device address of {@code batch} pointers to A matrices
     * @param lda        A's leading dimension in elements
     * @param bPointers  the device address of {@code batch} pointers to B matrices
     * @param ldb        B's leading dimension
     * @param cPointers  the device address of {@code batch} pointers to C matrices
     * @param ldc        C's leading dimension
     * @param batch      products
     * @throws EngineException if cuBLAS refuses the call
     */
    public void gemmBatched(boolean transposeA, int m, int n, int k, long aPointers, int lda, long bPointers, int ldb,
                            long cPointers, int ldc, int batch) {
        int status = cublas_api_h.cublasGemmBatchedEx(handle,
                transposeA ? cublas_api_h.CUBLAS_OP_T() : cublas_api_h.CUBLAS_OP_N(), cublas_api_h.CUBLAS_OP_N(), m, n, k,
                one, MemorySegment.ofAddress(aPointers), cublas_api_h.CUDA_R_16BF(), lda,
                MemorySegment.ofAddress(bPointers), cublas_api_h.CUDA_R_16BF(), ldb, zero,
                MemorySegment.ofAddress(cPointers), cublas_api_h.CUDA_R_16BF(), ldc, batch,
                cublas_api_h.CUBLAS_COMPUTE_32F(), cublas_api_h.CUBLAS_GEMM_DEFAULT());
        if (status != cublas_api_h.CUBLAS_STATUS_SUCCESS()) {
            throw new EngineException("cublasGemmBatchedEx(" + (transposeA ? "T" : "N") + "N, m=" + m + ", n=" + n
                    + ", k=" + k + ", lda=" + lda + ", ldb=" + ldb + ", ldc=" + ldc + ", batch=" + batch + ") failed: "
                    + statusName(status));
        }
    }

    static void check(int status, String call) {
        if (status != cublas_api_h.CUBLAS_STATUS_SUCCESS()) {
            throw new EngineException(call + " failed: " + statusName(status));
        }
    }

    /**
     * The name cuBLAS gives a status.
     *
     * @param status a {@code cublasStatus_t}
     * @return e.g. {@code CUBLAS_STATUS_NOT_INITIALIZED (1)}
     */
    public static String statusName(int status) {
        MemorySegment s = cublas_api_h.cublasGetStatusString(status);
        String name = s.equals(MemorySegment.NULL) ? "unknown" : s.reinterpret(256).getString(0);
        return name + " (" + status + ")";
    }

    /** Destroys the handle; idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            check(cublas_api_h.cublasDestroy_v2(handle), "cublasDestroy_v2");
        } finally {
            arena.close();
        }
    }
}
