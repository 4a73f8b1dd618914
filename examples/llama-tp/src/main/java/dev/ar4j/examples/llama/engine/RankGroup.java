package dev.ar4j.examples.llama.engine;

import dev.ar4j.Communicator;
import dev.ar4j.cuda.Cuda;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;

/**
 * The ranks this JVM drives, each on a thread of its own whose current device is the rank's
 * GPU: all ranks (one JVM, {@link Communicator#localGroup}) or the one rank a launcher gave this
 * process ({@link Communicator.Builder#fromEnvironment()}). {@link #onEveryRank} runs the same
 * work on every local rank at once, bounded in time; when a rank fails, every communicator is
 * aborted so that no peer waits for it, and the first failure is thrown. Owns the communicators.
 */
public final class RankGroup implements AutoCloseable {

    /**
     * Work of one rank.
     *
     * @param <T> the result type
     */
    @FunctionalInterface
    public interface RankWork<T> {
        /**
         * Runs on the rank's thread.
         *
         * @param local the rank's index in this JVM
         * @param comm  its communicator
         * @return the rank's result
         * @throws Exception on failure
         */
        T run(int local, Communicator comm) throws Exception;
    }

    /** Prints {@link StallReport}s: one daemon thread for the JVM, made at the first report scheduled. */
    private static final class Watcher {
        static final ScheduledExecutorService INSTANCE = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread th = new Thread(r, "ar4j-llama-stall-report");
            th.setDaemon(true);
            return th;
        });
    }

    private final List<Communicator> comms;
    private final List<ExecutorService> threads = new ArrayList<>();
    private final List<Thread> rankThreads = new ArrayList<>();
    private final Duration stallReport = StallReport.delay();

    private RankGroup(List<Communicator> comms, int[] devices) {
        this.comms = comms;
        for (int i = 0; i < comms.size(); i++) {
            int rank = comms.get(i).rank();
            int device = devices[i];
            ExecutorService t = Executors.newSingleThreadExecutor(r -> {
                Thread th = new Thread(r, "rank-" + rank);
                th.setDaemon(true);
                rankThreads.add(th);
                return th;
            });
            threads.add(t);
            try {
                t.submit(() -> Cuda.setDevice(device)).get(1, TimeUnit.MINUTES);
            } catch (InterruptedException | ExecutionException | TimeoutException e) {
                close();
                throw new EngineException("cannot make GPU " + device + " current on rank " + rank + "'s thread", e);
            }
        }
    }

    /**
     * All ranks in this JVM, rank i on {@code devices[i]}.
     *
     * @param devices   one CUDA ordinal per rank (repeated: ranks sharing a GPU)
     * @param configure applied to every rank's builder
     * @return the group
     */
    public static RankGroup threads(int[] devices, Consumer<Communicator.Builder> configure) {
        return new RankGroup(Communicator.localGroup(devices, configure), devices.clone());
    }

    /**
     * The one rank the launcher's variables (torchrun: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
     * MASTER_PORT) describe.
     *
     * @param configure applied to the builder
     * @return the group of this process's rank
     */
    public static RankGroup fromEnvironment(Consumer<Communicator.Builder> configure) {
        Communicator.Builder b = Communicator.builder().fromEnvironment();
        configure.accept(b);
        Communicator c = b.build();
        return new RankGroup(List.of(c), new int[] {c.device()});
    }

    /**
     * The ranks in this JVM.
     *
     * @return the number of local ranks
     */
    public int localRanks() {
        return comms.size();
    }

    /**
     * The group's size.
     *
     * @return the world size of the communicators
     */
    public int worldSize() {
        return comms.get(0).worldSize();
    }

    /**
     * Runs {@code work} on every local rank at once and waits for all of them. With
     * {@code -Dar4j.llama.stallReport=SECONDS} ({@link StallReport}), work still running after that long prints
     * the busy ranks' stacks to standard error once.
     *
     * @param what    the work, for messages
     * @param timeout how long every rank may take
     * @param work    the work
     * @param <T>     the result type
     * @return the results, local rank i at index i
     * @throws EngineException naming the rank and the work when a rank fails or runs out of time
     */
    public <T> List<T> onEveryRank(String what, Duration timeout, RankWork<T> work) {
        List<Future<T>> futures = new ArrayList<>();
        for (int i = 0; i < comms.size(); i++) {
            int local = i;
            Communicator c = comms.get(i);
            futures.add(threads.get(i).submit(() -> work.run(local, c)));
        }
        ScheduledFuture<?> report = stallReport.isZero() ? null : Watcher.INSTANCE.schedule(
                () -> reportStall(what, futures), stallReport.toNanos(), TimeUnit.NANOSECONDS);
        try {
            return awaitAll(what, timeout, futures);
        } finally {
            if (report != null) {
                report.cancel(false);
            }
        }
    }

    private void reportStall(String what, List<? extends Future<?>> futures) {
        List<StallReport.Busy> busy = new ArrayList<>();
        for (int i = 0; i < futures.size(); i++) {
            if (!futures.get(i).isDone()) {
                busy.add(new StallReport.Busy(comms.get(i).rank(), rankThreads.get(i)));
            }
        }
        if (!busy.isEmpty()) {
            System.err.println(StallReport.describe(what, stallReport, busy));
        }
    }

    private <T> List<T> awaitAll(String what, Duration timeout, List<Future<T>> futures) {
        List<T> out = new ArrayList<>();
        long deadline = System.nanoTime() + timeout.toNanos();
        RuntimeException failure = null;
        for (int i = 0; i < futures.size(); i++) {
            try {
                long left = Math.max(0, deadline - System.nanoTime());
                out.add(futures.get(i).get(failure == null ? left : Math.max(left, TimeUnit.SECONDS.toNanos(5)),
                        TimeUnit.NANOSECONDS));
            } catch (ExecutionException e) {
                Throwable cause = e.getCause();
                if (failure == null) {
                    failure = cause instanceof RuntimeException r && !(cause instanceof EngineException) ? r
                            : new EngineException(what + " failed on rank " + comms.get(i).rank() + ": " + cause, cause);
                    abortAll();
                }
                out.add(null);
            } catch (TimeoutException e) {
                if (failure == null) {
                    failure = new EngineException(what + " did not finish on rank " + comms.get(i).rank() + " within "
                            + timeout + "; every rank was aborted");
                    abortAll();
                }
                out.add(null);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                abortAll();
                throw new EngineException("interrupted while waiting for " + what, e);
            }
        }
        if (failure != null) {
            throw failure;
        }
        return out;
    }

    private void abortAll() {
        comms.forEach(Communicator::abort);
    }

    /** Closes every communicator on its thread, then stops the threads. */
    @Override
    public void close() {
        for (int i = 0; i < threads.size(); i++) {
            Communicator c = comms.get(i);
            try {
                threads.get(i).submit(c::close).get(1, TimeUnit.MINUTES);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (ExecutionException | TimeoutException e) {
                System.err.println("ar4j-llama: closing rank " + c.rank() + "'s communicator: " + e);
            }
        }
        for (int i = threads.size(); i < comms.size(); i++) {
            comms.get(i).close();
        }
        threads.forEach(ExecutorService::shutdownNow);
    }
}
