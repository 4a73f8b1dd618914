package dev.ar4j.internal.kernels;

import dev.ar4j.internal.cuda.CudaErrors;

import dev.ar4j.CustomAllReduceException;
import dev.ar4j.DType;
import dev.ar4j.bindings.customar.custom_all_reduce_h;
import dev.ar4j.bindings.rmsnorm.residual_rmsnorm_h;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * The residual add + RMSNorm kernel ({@code ar4j_residual_rmsnorm}), the epilogue of a
 * tensor-parallel all-reduce:
 * {@code residualOut = in + residual} (rounded to the dtype) and
 * {@code out = residualOut * rsqrt(mean(residualOut^2) + eps) * weight}, row by row, with fp32
 * arithmetic. The same inputs give bitwise the same outputs on every rank.
 *
 * <p>Every argument is checked here before the native call; the native side checks again.
 */
public final class ResidualRmsNorm {

    /** The largest hidden size (elements per row) the kernel accepts. */
    public static final int MAX_HIDDEN = residual_rmsnorm_h.AR4J_RMSNORM_MAX_HIDDEN();

    private ResidualRmsNorm() {
    }

    /**
     * Enqueues the kernel on {@code stream} over buffers of one device.
     *
     * @param dtype       element type of every buffer
     * @param in          {@code rows * hidden} elements (typically the all-reduce's output); may be {@code out}
     * @param residual    {@code rows * hidden} elements; may be {@code residualOut}
     * @param weight      {@code hidden} elements
     * @param out         receives the normalised rows; not {@code residual} nor {@code residualOut}
     * @param residualOut receives {@code in + residual}
     * @param hidden      elements per row, 1 to {@link #MAX_HIDDEN}; {@code rows} is {@code in}'s
     *                    element count divided by it, which must be exact
     * @param eps         added to the mean square; finite and greater than 0
     * @param stream      the stream to enqueue on, of the buffers' device
     * @throws NullPointerException     if any argument is null
     * @throws IllegalArgumentException if {@code hidden} is out of range, {@code in} is not a whole,
     *                                  non-zero number of rows, another buffer is too small, the buffers
     *                                  are on different devices, or an address rule of the raw overload fails
     * @throws CustomAllReduceException        for a status the native side returns ({@code AR4J_ERROR_CUDA}
     *                                  with the CUDA error in the message when the launch failed)
     * @throws dev.ar4j.NativeLibraryException if libcudart or the kernels library cannot be loaded
     */
    public static void launch(DType dtype, DeviceBuffer in, DeviceBuffer residual, DeviceBuffer weight,
                              DeviceBuffer out, DeviceBuffer residualOut, int hidden, float eps, CudaStream stream) {
        Objects.requireNonNull(dtype, "dtype");
        Objects.requireNonNull(in, "in");
        Objects.requireNonNull(residual, "residual");
        Objects.requireNonNull(weight, "weight");
        Objects.requireNonNull(out, "out");
        Objects.requireNonNull(residualOut, "residualOut");
        checkHidden(hidden);
        long rowBytes = (long) hidden * dtype.byteSize();
        if (in.byteSize() == 0 || in.byteSize() % rowBytes != 0) {
            throw new IllegalArgumentException("in holds " + in.byteSize() + " bytes, which is not a whole, non-zero "
                    + "number of rows of " + hidden + " " + dtype + " elements (" + rowBytes + " bytes a row)");
        }
        long rows = in.byteSize() / rowBytes;
        long bytes = in.byteSize();
        requireAtLeast("residual", residual, bytes, rows, hidden, dtype);
        requireAtLeast("out", out, bytes, rows, hidden, dtype);
        requireAtLeast("residualOut", residualOut, bytes, rows, hidden, dtype);
        if (weight.byteSize() < rowBytes) {
            throw new IllegalArgumentException("weight holds " + weight.byteSize() + " bytes but needs " + hidden
                    + " " + dtype + " elements (" + rowBytes + " bytes)");
        }
        for (DeviceBuffer b : new DeviceBuffer[] {residual, weight, out, residualOut}) {
            if (b.device() != in.device()) {
                throw new IllegalArgumentException("every buffer must be on one device: in is on device " + in.device()
                        + " but " + b + " is on device " + b.device());
            }
        }
        Objects.requireNonNull(stream, "stream");
        launch(dtype, in.address(), residual.address(), weight.address(), out.address(), residualOut.address(), rows,
                hidden, eps, stream.handle());
    }

    /**
     * Enqueues the kernel on a raw stream over raw device addresses of the calling thread's
     * current device (see the {@link DeviceBuffer} overload for the rules). Sizes cannot be checked
     * here: each address must point to enough memory for {@code rows} rows.
     *
     * @param dtype       element type of every buffer
     * @param in          device address of {@code rows * hidden} elements; may equal {@code out}
     * @param residual    device address of {@code rows * hidden} elements; may equal {@code residualOut}
     * @param weight      device address of {@code hidden} elements
     * @param out         device address receiving {@code rows * hidden} normalised elements; must not
     *                    equal {@code residual} nor {@code residualOut}
     * @param residualOut device address receiving {@code rows * hidden} elements of {@code in + residual};
     *                    may equal {@code in} or {@code residual}
     * @param rows        number of rows, 1 to {@link Integer#MAX_VALUE} (one CUDA block a row)
     * @param hidden      elements per row, 1 to {@link #MAX_HIDDEN}
     * @param eps         added to the mean square; finite and greater than 0
     * @param stream      a {@code cudaStream_t} handle; 0 is the legacy default stream
     * @throws NullPointerException     if {@code dtype} is null
     * @throws IllegalArgumentException if {@code hidden}, {@code rows} or {@code eps} is out of range, an
     *                                  address is 0, or {@code out} equals {@code residual} or {@code residualOut}
     * @throws CustomAllReduceException        for a status the native side returns ({@code AR4J_ERROR_CUDA}
     *                                  with the CUDA error in the message when the launch failed)
     * @throws dev.ar4j.NativeLibraryException if libcudart or the kernels library cannot be loaded
     */
    public static void launch(DType dtype, long in, long residual, long weight, long out, long residualOut, long rows,
                              int hidden, float eps, long stream) {
        launch(dtype, in, residual, weight, out, residualOut, rows, hidden, eps, stream, false);
    }

    /**
     * {@link #launch(DType, long, long, long, long, long, long, int, float, long)}, with programmatic
     * dependent launch when {@code pdl} is set ({@code ar4j_residual_rmsnorm_ex} with
     * {@code AR4J_RMSNORM_PDL}): the kernel may start while the stream's previous kernel still runs
     * and waits for it before its first load, on devices of compute capability 9.0 and newer
     * (elsewhere the flag changes nothing). Stream-ordered, no synchronisation: it can be captured.
     *
     * @param pdl whether to launch with programmatic stream serialization
     */
    public static void launch(DType dtype, long in, long residual, long weight, long out, long residualOut, long rows,
                              int hidden, float eps, long stream, boolean pdl) {
        Objects.requireNonNull(dtype, "dtype");
        checkHidden(hidden);
        if (rows < 1 || rows > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("rows must be 1 to " + Integer.MAX_VALUE + " (one CUDA block a row), got "
                    + rows);
        }
        if (!(eps > 0f) || !Float.isFinite(eps)) {
            throw new IllegalArgumentException("eps must be finite and greater than 0, got " + eps);
        }
        if (in == 0 || residual == 0 || weight == 0 || out == 0 || residualOut == 0) {
            throw new IllegalArgumentException("device addresses must not be 0: in=0x" + Long.toHexString(in)
                    + " residual=0x" + Long.toHexString(residual) + " weight=0x" + Long.toHexString(weight)
                    + " out=0x" + Long.toHexString(out) + " residualOut=0x" + Long.toHexString(residualOut));
        }
        if (out == residualOut || out == residual) {
            throw new IllegalArgumentException("out must not be residual or residualOut (the kernel reads them after "
                    + "writing out); out may be in, residualOut may be in or residual");
        }
        CustomAllReduceKernels.ensureLoaded();
        int status = residual_rmsnorm_h.ar4j_residual_rmsnorm_ex(dtype.kernelCode(), MemorySegment.ofAddress(in),
                MemorySegment.ofAddress(residual), MemorySegment.ofAddress(weight), MemorySegment.ofAddress(out),
                MemorySegment.ofAddress(residualOut), rows, hidden, eps, MemorySegment.ofAddress(stream),
                pdl ? residual_rmsnorm_h.AR4J_RMSNORM_PDL() : 0);
        if (status != 0) {
            String detail = null;
            if (status == custom_all_reduce_h.AR4J_ERROR_CUDA()) {
                int cuda = residual_rmsnorm_h.ar4j_rmsnorm_last_cuda_error();
                detail = "the CUDA error was " + CudaErrors.name(cuda) + " (" + cuda + "): " + CudaErrors.description(cuda);
            }
            throw CustomAllReduceKernels.exception(status, "ar4j_residual_rmsnorm_ex(" + dtype + ", rows " + rows
                    + ", hidden " + hidden + (pdl ? ", PDL" : "") + ")", detail);
        }
    }

    private static void checkHidden(int hidden) {
        if (hidden < 1 || hidden > MAX_HIDDEN) {
            throw new IllegalArgumentException("hidden must be 1 to " + MAX_HIDDEN + " elements, got " + hidden);
        }
    }

    private static void requireAtLeast(String name, DeviceBuffer b, long bytes, long rows, int hidden, DType dtype) {
        if (b.byteSize() < bytes) {
            throw new IllegalArgumentException(name + " holds " + b.byteSize() + " bytes but needs " + bytes + " ("
                    + rows + " rows of " + hidden + " " + dtype + ")");
        }
    }
}
