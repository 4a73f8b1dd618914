/**
 * The CUDA facade: the calls of the CUDA runtime ar4j needs, each return code checked.
 *
 * <ul>
 *   <li>{@link dev.ar4j.cuda.Cuda}: versions, devices, peer access, pointer queries.</li>
 *   <li>Owned native resources, each freed exactly once by {@code close()}:
 *       {@link dev.ar4j.cuda.DeviceBuffer} (device memory: an address, a size and a device, never
 *       dereferenced on the host), {@link dev.ar4j.cuda.PinnedHostBuffer},
 *       {@link dev.ar4j.cuda.CudaStream}, {@link dev.ar4j.cuda.CudaEvent},
 *       {@link dev.ar4j.cuda.CudaGraph}, {@link dev.ar4j.cuda.CudaGraphExec}.</li>
 *   <li>Failures: {@link dev.ar4j.cuda.CudaException} (the call, the code and its name), with
 *       {@link dev.ar4j.cuda.CudaDriverMissingException} (no NVIDIA driver) and
 *       {@link dev.ar4j.cuda.CudaNoDeviceException} (a driver, no visible GPU).</li>
 * </ul>
 *
 * <p>The engine's CUDA parts (the error checking helper, IPC handles and mappings, allocation
 * ranges) are in the unexported {@code dev.ar4j.internal.cuda}.
 */
package dev.ar4j.cuda;
