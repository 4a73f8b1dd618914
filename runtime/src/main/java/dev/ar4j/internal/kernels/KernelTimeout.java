package dev.ar4j.internal.kernels;

/**
 * What a custom all-reduce kernel recorded when it gave up waiting for a peer
 * ({@code ar4j_timeout_info}).
 *
 * @param timedOut whether a wait gave up since the record was last cleared
 * @param peer     the rank that was waited for
 * @param block    the CUDA block that waited
 * @param barrier  the barrier's ordinal within its launch (0 = the start barrier)
 * @param flag     the flag value that was expected (an unsigned 32-bit value)
 */
public record KernelTimeout(boolean timedOut, int peer, int block, int barrier, long flag) {
}
