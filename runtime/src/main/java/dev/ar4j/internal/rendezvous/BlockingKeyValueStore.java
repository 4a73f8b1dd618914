package dev.ar4j.internal.rendezvous;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The key-value map behind both rendezvous implementations: {@link #set} stores, {@link #await}
 * waits until a list of keys is present or a timeout passes. Stores the arrays it is given and
 * returns the stored arrays; callers that hand arrays to user code copy them.
 */
final class BlockingKeyValueStore {

    /** The outcome of {@link #await}: either all values, or which keys were still missing. */
    sealed interface AwaitResult permits Found, Missing {
    }

    /** Every key was present; {@code values[i]} belongs to the i-th key. */
    record Found(byte[][] values) implements AwaitResult {
    }

    /** The timeout passed; {@code indices} are the positions of the absent keys, ascending. */
    record Missing(int[] indices) implements AwaitResult {
    }

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final Map<String, byte[]> values = new HashMap<>();
    private boolean closed;

    void set(String key, byte[] value) {
        lock.lock();
        try {
            checkOpen();
            values.put(key, value);
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Waits up to {@code timeoutNanos} until all {@code keys} are present.
     *
     * @throws IllegalStateException if the store is or gets closed
     */
    AwaitResult await(List<String> keys, long timeoutNanos) throws InterruptedException {
        return await(keys, timeoutNanos, missing -> null);
    }

    /** Decides whether a wait must end early: returns the exception to throw, or null to keep waiting. */
    @FunctionalInterface
    interface Abort {
        /** @param missing the positions of the keys still absent, ascending */
        RuntimeException check(int[] missing);
    }

    /**
     * Waits up to {@code timeoutNanos} until all {@code keys} are present, checking {@code abort}
     * whenever a key is still missing (at the start and after every {@link #wakeAll()} or set).
     *
     * @throws IllegalStateException if the store is or gets closed
     * @throws RuntimeException      the exception {@code abort} returned
     */
    AwaitResult await(List<String> keys, long timeoutNanos, Abort abort) throws InterruptedException {
        lock.lock();
        try {
            long remaining = timeoutNanos;
            while (true) {
                checkOpen();
                byte[][] found = new byte[keys.size()][];
                List<Integer> absent = new ArrayList<>();
                for (int i = 0; i < keys.size(); i++) {
                    found[i] = values.get(keys.get(i));
                    if (found[i] == null) {
                        absent.add(i);
                    }
                }
                if (absent.isEmpty()) {
                    return new Found(found);
                }
                int[] missing = absent.stream().mapToInt(Integer::intValue).toArray();
                RuntimeException stop = abort.check(missing);
                if (stop != null) {
                    throw stop;
                }
                if (remaining <= 0) {
                    return new Missing(missing);
                }
                remaining = changed.awaitNanos(remaining);
            }
        } finally {
            lock.unlock();
        }
    }

    /** The value stored under {@code key}, or null. */
    byte[] peek(String key) {
        lock.lock();
        try {
            return values.get(key);
        } finally {
            lock.unlock();
        }
    }

    /** Wakes every waiter so that it checks its abort condition again. */
    void wakeAll() {
        lock.lock();
        try {
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Wakes every waiter, which then fails; later calls fail too. Idempotent. */
    void close() {
        lock.lock();
        try {
            closed = true;
            values.clear();
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("the rendezvous store is closed");
        }
    }
}
