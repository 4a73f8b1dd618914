/**
 * ar4j's API: multi-GPU all-reduce for the JVM.
 *
 * <ul>
 *   <li>{@link dev.ar4j.Communicator} is one rank's all-reduce group: built from the launcher's
 *       environment ({@code Communicator.fromEnvironment()}; without launcher variables, a group
 *       of one rank, in process), a builder, or {@code Communicator.localGroup(..)} for one JVM
 *       driving several GPUs. It runs each call with ar4j's custom kernels or NCCL, as
 *       {@link dev.ar4j.dispatch} decides, and {@code explain(..)} says which and why.</li>
 *   <li>{@link dev.ar4j.DType} names the element types; {@link dev.ar4j.HalfFloats} and
 *       {@link dev.ar4j.HostData} make bf16/fp16 host data from {@code float} values.</li>
 *   <li>{@link dev.ar4j.GraphCapture} scopes the capture of all-reduces into a CUDA graph.</li>
 *   <li>{@link dev.ar4j.RmsNorm} is the residual add + RMSNorm kernel on its own.</li>
 *   <li>{@link dev.ar4j.Ar4j} says what this ar4j is ({@code version()}, {@code commit()},
 *       {@code kernelsAbiVersion()}) and whether it can run here ({@code isAvailable()},
 *       {@code unavailabilityCause()}).</li>
 * </ul>
 *
 * <h2>Exceptions</h2>
 * Every failure ar4j detects at run time or in its environment is an
 * {@link dev.ar4j.Ar4jException}, so {@code catch (Ar4jException e)} handles them all: a launcher
 * variable or an {@code AR4J_*} / {@code ar4j.*} setting that is missing or invalid
 * ({@link dev.ar4j.ConfigurationException}), a native library that cannot be loaded
 * ({@link dev.ar4j.NativeLibraryException}), no GPU driver or device or a failed CUDA call
 * ({@link dev.ar4j.cuda.CudaException}), ranks that cannot meet ({@link dev.ar4j.rendezvous.RendezvousException}),
 * a peer lost or timed out ({@link dev.ar4j.PeerLostException}, {@link dev.ar4j.PeerTimeoutException}),
 * an NCCL failure ({@link dev.ar4j.nccl.NcclException}), a call that needs NCCL on a group built
 * with {@code nccl(false)} ({@link dev.ar4j.nccl.NcclDisabledException}), and a kernel that refused
 * its call ({@link dev.ar4j.CustomArException}). Each message names what failed, the values
 * involved and what to do.
 *
 * <p>A wrong argument passed to a method is the caller's error and is reported as Java's
 * convention has it: {@link java.lang.IllegalArgumentException} (a negative size, an unknown
 * policy name given to a builder setter, a buffer on another GPU) and
 * {@link java.lang.NullPointerException}; using a closed, aborted or failed communicator, or one
 * communicator from two threads at once, throws {@link java.lang.IllegalStateException}.
 */
package dev.ar4j;
