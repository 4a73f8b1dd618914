package dev.ar4j.internal.engine;

import dev.ar4j.internal.rendezvous.InProcessRendezvous;
import dev.ar4j.rendezvous.Rendezvous;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.BiFunction;

/** Builds the communicators of one JVM driving several GPUs: {@code Communicator.localGroup}. */
public final class LocalGroup {

    private LocalGroup() {
    }

    /**
     * Builds rank {@code r} of {@code size} ranks with {@code build.apply(r, rendezvousOfRankR)}, each
     * on its own thread (the build is collective); on any failure closes those built and throws.
     *
     * @param <C>   the communicator type
     * @param size  the number of ranks
     * @param build builds one rank over its in-process rendezvous
     * @return the communicators, rank i at index i
     */
    public static <C extends AutoCloseable> List<C> build(int size, BiFunction<Integer, Rendezvous, C> build) {
        if (size < 1) {
            throw new IllegalArgumentException("a local group needs at least one device, got " + size);
        }
        InProcessRendezvous group = InProcessRendezvous.create(size);
        ExecutorService pool = Executors.newFixedThreadPool(size, r -> {
            Thread t = new Thread(r, "ar4j-local-group-init");
            t.setDaemon(true);
            return t;
        });
        try {
            List<Future<C>> futures = new ArrayList<>();
            for (int r = 0; r < size; r++) {
                int rank = r;
                futures.add(pool.submit(() -> build.apply(rank, group.forRank(rank))));
            }
            List<C> result = new ArrayList<>();
            RuntimeException failure = null;
            for (Future<C> f : futures) {
                try {
                    result.add(f.get());
                } catch (Exception e) {
                    Throwable cause = e instanceof java.util.concurrent.ExecutionException ? e.getCause() : e;
                    if (failure == null) {
                        // keep the rank's own exception (an Ar4jException for what ar4j detects), so that the
                        // caller catches what one rank's build would have thrown
                        failure = cause instanceof RuntimeException r ? r
                                : new IllegalStateException("building the local group failed: " + cause, cause);
                    } else {
                        failure.addSuppressed(cause);
                    }
                }
            }
            if (failure != null) {
                for (C c : result) {
                    Closing.quietly(failure, c);
                }
                throw failure;
            }
            return result;
        } finally {
            pool.shutdownNow();
        }
    }
}
