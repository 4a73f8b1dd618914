/**
 * Rendezvous: how the ranks of one all-reduce group find each other and exchange the small
 * byte strings they need at setup time (IPC handles, NCCL unique ids, host identities).
 *
 * <ul>
 *   <li>{@link dev.ar4j.rendezvous.LaunchEnvironment} reads rank, world size, local rank and the
 *       master address from torchrun, Slurm or Open MPI variables, or takes them from a builder.</li>
 *   <li>{@link dev.ar4j.rendezvous.Rendezvous} is the exchange contract: all-gather, broadcast,
 *       barrier and a key-value store, every wait bounded by a timeout.</li>
 *   <li>{@link dev.ar4j.rendezvous.TcpRendezvous} implements it across processes and hosts over a
 *       small TCP key-value store ({@link dev.ar4j.rendezvous.TcpRendezvousServer});
 *       {@link dev.ar4j.rendezvous.InProcessRendezvous} implements it for one JVM that drives
 *       several GPUs with one thread per rank.</li>
 *   <li>{@link dev.ar4j.rendezvous.HostIdentity} and {@link dev.ar4j.rendezvous.HostLayout} tell
 *       which ranks share a host.</li>
 * </ul>
 */
package dev.ar4j.rendezvous;
