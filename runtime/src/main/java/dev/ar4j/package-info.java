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
 *
 * <h2>Process models</h2>
 * One JVM per GPU (the usual launcher model; buffers are shared through CUDA IPC handles), or one
 * JVM driving several GPUs with one thread per GPU ({@link dev.ar4j.Communicator#localGroup}; buffers are shared
 * through peer access). The model is detected: ranks that report the same process use peer
 * access.
 *
 * <h2>Buffers</h2>
 * At build, every rank allocates its signal block and a staging buffer and shares them. An
 * unregistered input goes to the push kernel directly (no copy), or is copied into the
 * staging buffer for the one-stage and two-stage kernels. {@link dev.ar4j.Communicator#register} shares a buffer once
 * so that inputs inside it are reduced with no copy; {@link dev.ar4j.Communicator#unregister} ends that (collectively;
 * a registered buffer found closed is no longer used zero-copy either). Inside a CUDA graph
 * capture, inputs are recorded and shared when the {@link dev.ar4j.GraphCapture} scope closes, which also
 * checks that every rank captured the same calls.
 *
 * <h2>One GPU, several ranks</h2>
 * Ranks may share a GPU (in one JVM through {@link dev.ar4j.Communicator#localGroup} with a repeated ordinal, or in
 * several JVMs): the custom kernels run there with a grid sized so that every rank's blocks are
 * resident. NCCL refuses that, so build such a group with {@link dev.ar4j.Communicator.Builder#nccl nccl(false)}; then a
 * call that would need NCCL throws, naming its size and why.
 *
 * <h2>Threads and ordering</h2>
 * A communicator is used by one thread at a time, whose current CUDA device must be
 * {@link dev.ar4j.Communicator#device()} (the builder makes it current on the building thread); a call from a second
 * thread while another is inside throws {@link java.lang.IllegalStateException} naming both threads.
 * {@link dev.ar4j.Communicator#abort()}, {@link dev.ar4j.Communicator#health()} and {@link dev.ar4j.Communicator#close()} may be called from any thread. Every
 * rank makes the same collective calls (all-reduces, {@link dev.ar4j.Communicator#register}, {@link dev.ar4j.Communicator#unregister},
 * capture scopes) in the same order; the all-reduces of one communicator are ordered on one
 * stream or synchronised between streams.
 *
 * <h2>Failure</h2>
 * A per-communicator watchdog thread (interval: {@link dev.ar4j.Communicator.Builder#watchdogInterval}, default
 * 100 ms) reads the kernels' timeout record and NCCL's asynchronous error, and the rendezvous
 * tells it when a rank is lost. On the first failure it poisons the custom kernels, aborts NCCL,
 * marks the communicator failed and tells the {@link dev.ar4j.Communicator.Builder#onFailure listener}; every later call
 * throws {@link dev.ar4j.PeerLostException} or {@link dev.ar4j.PeerTimeoutException} naming the rank,
 * {@link dev.ar4j.OutOfStepException} when the ranks fell out of step (or
 * {@link java.lang.IllegalStateException} after {@link dev.ar4j.Communicator#abort()}), and
 * {@link dev.ar4j.Communicator#health()} says why. Rendezvous waits are bounded too.
 *
 * <h2>Sub-communicators: ownership and failure</h2>
 * The caller of {@link dev.ar4j.Communicator#split} owns the sub-communicator and closes it; closing the parent does not close
 * it, but close every sub-communicator first: the parent's rendezvous (and, on the
 * serving rank, the rendezvous server) is theirs too. The two fail independently: a failure of
 * the parent (a watchdog finding, {@link dev.ar4j.Communicator#abort()}, ranks out of step) is not one of the
 * sub-communicator, except through what they share: the loss of one of its own ranks, reported
 * by the rendezvous, fails the sub-communicator too (its watchdog is told), and the loss of a
 * rank outside it does not. An in-process group's rendezvous reports {@link dev.ar4j.Communicator#abort()} as the
 * loss of the aborting rank, so there aborting the parent also fails the
 * sub-communicator that rank belongs to (on every member); abort each sub-communicator
 * yourself to be sure. A failed split step of the parent (a rank lost, a timeout) fails
 * the parent, like any collective step; a failure while the sub-communicator is being
 * built is thrown by {@code split} and leaves the parent as it was.
 *
 * <h2>Exceptions</h2>
 * Every failure ar4j detects at run time or in its environment is an
 * {@link dev.ar4j.Ar4jException}, so {@code catch (Ar4jException e)} handles them all: a launcher
 * variable or an {@code AR4J_*} / {@code ar4j.*} setting that is missing or invalid
 * ({@link dev.ar4j.ConfigurationException}), a native library that cannot be loaded
 * ({@link dev.ar4j.NativeLibraryException}), no GPU driver or device or a failed CUDA call
 * ({@link dev.ar4j.cuda.CudaException}), ranks that cannot meet ({@link dev.ar4j.rendezvous.RendezvousException}),
 * a peer lost or timed out ({@link dev.ar4j.PeerLostException}, {@link dev.ar4j.PeerTimeoutException}),
 * ranks that disagree (a malformed or forged peer record, different collective calls:
 * {@link dev.ar4j.OutOfStepException}),
 * an NCCL failure ({@link dev.ar4j.nccl.NcclException}), a call that needs NCCL on a group built
 * with {@code nccl(false)} ({@link dev.ar4j.nccl.NcclDisabledException}), and a kernel that refused
 * its call ({@link dev.ar4j.CustomAllReduceException}). Each message names what failed, the values
 * involved and what to do.
 *
 * <p>A wrong argument passed to a method is the caller's error and is reported as Java's
 * convention has it: {@link java.lang.IllegalArgumentException} (a negative size, an unknown
 * policy name given to a builder setter, a buffer on another GPU) and
 * {@link java.lang.NullPointerException}; using a closed, aborted or failed communicator, or one
 * communicator from two threads at once, throws {@link java.lang.IllegalStateException}.
 */
package dev.ar4j;
