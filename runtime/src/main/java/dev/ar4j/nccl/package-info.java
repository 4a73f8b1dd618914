/**
 * The NCCL facade: ar4j's fallback for every all-reduce its kernels do not take, its engine
 * across hosts, and the provider of the other collectives.
 *
 * <ul>
 *   <li>{@link dev.ar4j.nccl.Nccl}: the library's version, {@code ncclMemAlloc}, the dtype
 *       mapping.</li>
 *   <li>{@link dev.ar4j.nccl.NcclCommunicator}: one rank's NCCL communicator (owned, closed once);
 *       {@link dev.ar4j.nccl.NcclUniqueId}: the id rank 0 makes and the rendezvous shares;
 *       {@link dev.ar4j.nccl.NcclWindow}: a symmetric-memory registration (NCCL 2.27+).</li>
 *   <li>{@link dev.ar4j.nccl.NcclException}: a failed NCCL call, with its code and name.</li>
 * </ul>
 */
package dev.ar4j.nccl;
