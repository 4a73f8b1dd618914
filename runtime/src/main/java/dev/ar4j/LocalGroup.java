package dev.ar4j;

import dev.ar4j.rendezvous.InProcessRendezvous;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Consumer;

/** Builds the communicators of one JVM driving several GPUs: {@link Communicator#localGroup}. */
final class LocalGroup {

    private LocalGroup() {
    }

    static List<Communicator> build(int[] devices, Consumer<Communicator.Builder> configure) {
        Objects.requireNonNull(devices, "devices");
        InProcessRendezvous group = InProcessRendezvous.create(devices.length);
        ExecutorService pool = Executors.newFixedThreadPool(devices.length, r -> {
            Thread t = new Thread(r, "ar4j-local-group-init");
            t.setDaemon(true);
            return t;
        });
        try {
            List<Future<Communicator>> futures = new ArrayList<>();
            for (int r = 0; r < devices.length; r++) {
                int rank = r;
                futures.add(pool.submit(() -> {
                    Communicator.Builder b = Communicator.builder();
                    if (configure != null) {
                        configure.accept(b);
                    }
                    return b.device(devices[rank]).rendezvous(group.forRank(rank)).build();
                }));
            }
            List<Communicator> result = new ArrayList<>();
            RuntimeException failure = null;
            for (Future<Communicator> f : futures) {
                try {
                    result.add(f.get());
                } catch (Exception e) {
                    Throwable cause = e instanceof java.util.concurrent.ExecutionException ? e.getCause() : e;
                    if (failure == null) {
                        failure = new IllegalStateException("building the local group failed: " + cause, cause);
                    } else {
                        failure.addSuppressed(cause);
                    }
                }
            }
            if (failure != null) {
                for (Communicator c : result) {
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
