/**
 * Rendezvous: how the ranks of one all-reduce group find each other and exchange the small
 * byte strings they need at setup time (IPC handles, NCCL unique ids, host identities).
 *
 * <ul>
 *   <li>{@link dev.ar4j.rendezvous.LaunchEnvironment} reads rank, world size, local rank and the
 *       master address from torchrun, Slurm or Open MPI variables, or takes them from a builder.</li>
 *   <li>{@link dev.ar4j.rendezvous.Rendezvous} is the exchange contract: all-gather, broadcast,
 *       barrier and a key-value store, every wait bounded by a timeout. A communicator makes its
 *       own (a TCP one across processes and hosts, served by rank 0; an in-process one for a
 *       group of one rank or {@code Communicator.localGroup}); an application may pass its own
 *       implementation to {@code Communicator.Builder.rendezvous}.</li>
 *   <li>{@link dev.ar4j.rendezvous.RendezvousException} and its subtypes say why ranks could not
 *       meet: a timeout, a refusal, a failed authentication. A lost rank is a
 *       {@link dev.ar4j.PeerLostException}, the same exception a communicator throws for it.</li>
 * </ul>
 */
package dev.ar4j.rendezvous;
