package dev.ar4j.internal.rendezvous;

import dev.ar4j.internal.platform.Durations;

import java.time.Duration;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The rendezvous server's threads, all platform threads, so that nothing the serving JVM's
 * application does with its virtual threads (occupy every carrier with CPU-bound work, or pin
 * them in long blocking native calls) can silence the server:
 * <ul>
 *   <li>one thread per connection reads it ({@link #newReader}): a blocking read whose socket
 *       timeout is how a silent rank is found;</li>
 *   <li>one ticker ({@link #schedule}, {@link #every}) times heartbeats and handshake deadlines;
 *       it never writes to a socket itself, so a peer that stops reading cannot hold it up;</li>
 *   <li>a pool that grows with the work in flight and shrinks when idle ({@link #execute}) sends
 *       heartbeats, answers waiting reads and tells ranks of a loss: a write blocked on one peer
 *       that does not read holds one pool thread, never another peer's heartbeat.</li>
 * </ul>
 * A group of n ranks costs n reader threads, plus one pool thread per read waiting at that moment
 * (at most n) and a few for writes; each thread's stack is reserved at {@value #STACK_BYTES}
 * bytes and only the pages it touches (a few KiB for these shallow loops) are committed.
 */
final class ServerThreads {
    /** Stack reserved per thread: the readers and writers run shallow loops. */
    static final long STACK_BYTES = 512 * 1024;
    private static final Duration IDLE_POOL_THREAD_LINGER = Duration.ofSeconds(30);

    private final ThreadFactory readers;
    private final ScheduledThreadPoolExecutor ticker;
    private final ThreadPoolExecutor pool;

    ServerThreads(int port) {
        this.readers = factory("ar4j-rendezvous-conn-" + port + "-");
        this.ticker = new ScheduledThreadPoolExecutor(1, factory("ar4j-rendezvous-ticker-" + port + "-"));
        ticker.setRemoveOnCancelPolicy(true);
        ticker.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
        this.pool = new ThreadPoolExecutor(0, Integer.MAX_VALUE, Durations.toMillis(IDLE_POOL_THREAD_LINGER),
                TimeUnit.MILLISECONDS, new SynchronousQueue<>(), factory("ar4j-rendezvous-io-" + port + "-"));
    }

    /** An unstarted platform thread for a connection's read loop or the accept loop. */
    Thread newReader(Runnable loop) {
        return readers.newThread(loop);
    }

    /** Runs {@code task} on a pool thread. @throws RejectedExecutionException if the server is closing */
    void execute(Runnable task) {
        pool.execute(task);
    }

    /** Runs {@code task} once on the ticker after {@code delay}; it must not block. */
    ScheduledFuture<?> schedule(Runnable task, Duration delay) {
        return ticker.schedule(task, Durations.toNanos(delay), TimeUnit.NANOSECONDS);
    }

    /** Runs {@code task} on the ticker every {@code period}; it must not block. */
    ScheduledFuture<?> every(Runnable task, Duration period) {
        long nanos = Durations.toNanos(period);
        return ticker.scheduleAtFixedRate(task, nanos, nanos, TimeUnit.NANOSECONDS);
    }

    /** Pool threads alive now (for tests and statistics). */
    int poolThreads() {
        return pool.getPoolSize();
    }

    /** Stops the ticker and the pool; tasks already running end on their own as their sockets close. */
    void shutdown() {
        ticker.shutdownNow();
        pool.shutdown();
    }

    /** Waits up to {@code nanos} for the ticker and the pool to end; true if they did. */
    boolean awaitTermination(long nanos) throws InterruptedException {
        long deadline = System.nanoTime() + nanos;
        return ticker.awaitTermination(nanos, TimeUnit.NANOSECONDS)
                && pool.awaitTermination(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
    }

    private static ThreadFactory factory(String prefix) {
        AtomicLong count = new AtomicLong();
        return task -> Thread.ofPlatform().daemon().stackSize(STACK_BYTES).name(prefix + count.incrementAndGet())
                .unstarted(task);
    }
}
