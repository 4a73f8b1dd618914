/**
 * ar4j's API: multi-GPU all-reduce for the JVM.
 *
 * <ul>
 *   <li>{@link dev.ar4j.Communicator} is one rank's all-reduce group: built from the launcher's
 *       environment ({@code Communicator.fromEnvironment()}), a builder, or
 *       {@code Communicator.localGroup(..)} for one JVM driving several GPUs. It runs each call
 *       with ar4j's custom kernels or NCCL, as {@link dev.ar4j.dispatch} decides, and
 *       {@code explain(..)} says which and why.</li>
 *   <li>{@link dev.ar4j.DType} names the element types; {@link dev.ar4j.HalfFloats} and
 *       {@link dev.ar4j.HostData} make bf16/fp16 host data from {@code float} values.</li>
 *   <li>{@link dev.ar4j.GraphCapture} scopes the capture of all-reduces into a CUDA graph.</li>
 *   <li>{@link dev.ar4j.Ar4j} says what this ar4j is ({@code version()}, {@code commit()}) and
 *       whether it can run here ({@code isAvailable()}, {@code unavailabilityCause()}).</li>
 *   <li>{@link dev.ar4j.Ar4jException} is the root of every failure ar4j reports;
 *       {@link dev.ar4j.NativeLibraryException} (a library could not be loaded) and
 *       {@link dev.ar4j.PeerTimeoutException} (a peer did not arrive in time) are two of its
 *       subtypes.</li>
 * </ul>
 */
package dev.ar4j;
