package dev.ar4j;

import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;
import dev.ar4j.internal.kernels.CustomAllReduceKernels;
import dev.ar4j.internal.kernels.ResidualRmsNorm;

/**
 * The residual add + RMSNorm kernel on its own, the epilogue of a tensor-parallel all-reduce:
 * {@code residualOut = in + residual} (rounded to the dtype) and
 * {@code out = residualOut * rsqrt(mean(residualOut^2) + eps) * weight}, row by row, with fp32
 * arithmetic. The same inputs give bitwise the same outputs on every rank.
 * {@link Communicator#allReduceResidualRmsNorm} runs the all-reduce and this kernel as one fused
 * kernel where it can, bitwise the same as the two run one after the other.
 *
 * <p>Every argument is checked here before the native call; the native side checks again.
 */
public final class RmsNorm {

    /** The largest hidden size (elements per row) {@link #residualRmsNorm} accepts. */
    public static final int MAX_HIDDEN = ResidualRmsNorm.MAX_HIDDEN;
    /**
     * The largest row (elements) {@link Communicator#allReduceResidualRmsNorm} runs as one fused
     * kernel; longer rows run as the all-reduce, then this kernel.
     */
    public static final int FUSED_MAX_HIDDEN = CustomAllReduceKernels.FUSED_MAX_HIDDEN;

    private RmsNorm() {
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
     * @throws NativeLibraryException if libcudart or the kernels library cannot be loaded
     */
    public static void residualRmsNorm(DType dtype, DeviceBuffer in, DeviceBuffer residual, DeviceBuffer weight,
                              DeviceBuffer out, DeviceBuffer residualOut, int hidden, float eps, CudaStream stream) {
        ResidualRmsNorm.launch(dtype, in, residual, weight, out, residualOut, hidden, eps, stream);
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
     * @throws NativeLibraryException if libcudart or the kernels library cannot be loaded
     */
    public static void residualRmsNorm(DType dtype, long in, long residual, long weight, long out, long residualOut, long rows,
                              int hidden, float eps, long stream) {
        ResidualRmsNorm.launch(dtype, in, residual, weight, out, residualOut, rows, hidden, eps, stream);
    }
}
