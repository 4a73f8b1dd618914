/**
 * The NCCL facade: ar4j's fallback for every all-reduce its kernels do not take, its engine
 * across hosts, and the provider of the other collectives.
 *
 * <ul>
 *   <li>{@link dev.ar4j.nccl.Nccl}: the library's version and {@code ncclMemAlloc}.</li>
 *   <li>{@link dev.ar4j.nccl.NcclCollectives}: NCCL's collectives on a communicator's NCCL
 *       communicator ({@code Communicator.collectives()}); {@link dev.ar4j.nccl.NcclGroup}: a
 *       grouped-call scope; {@link dev.ar4j.nccl.NcclWindow}: a symmetric-memory registration
 *       (NCCL 2.27+); {@link dev.ar4j.nccl.NcclDataType}, {@link dev.ar4j.nccl.NcclReduction},
 *       {@link dev.ar4j.nccl.NcclVersion}: the values they take.</li>
 *   <li>{@link dev.ar4j.nccl.NcclException} and its subtypes: a failed NCCL call, with its code
 *       and name.</li>
 * </ul>
 *
 * <p>The communicator itself and its call protocol (non-blocking init, waits, split, teardown)
 * are ar4j's engine and not part of the API.
 */
package dev.ar4j.nccl;
