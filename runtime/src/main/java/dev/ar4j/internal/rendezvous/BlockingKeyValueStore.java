package dev.ar4j.internal.rendezvous;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The key-value map behind both rendezvous implementations: {@link #set} stores, {@link #await}
 * waits until a list of keys is present or a timeout passes. Stores the arrays it is given and
 * returns the stored arrays; callers that hand arrays to user code copy them.
 *
 * <p>A waiter is registered under each key it still misses and counts them down as they are set,
 * so a SET wakes only the waiters it completes: an all-gather of n ranks costs O(n²) work in
 * total, not O(n³) (every SET waking every waiter to scan every key). {@link #wakeAll()} still
 * wakes every waiter to check its abort condition.
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

    /** One waiting {@link #await}: how many of its keys are still absent, and its own condition. */
    private final class Waiter {
        final Condition ready = lock.newCondition();
        int absent;
    }

    private final ReentrantLock lock = new ReentrantLock();
    private final Map<String, byte[]> values = new HashMap<>();
    private final Map<String, List<Waiter>> waitersByKey = new HashMap<>();
    private final Set<Waiter> waiters = new HashSet<>();
    private boolean closed;

    void set(String key, byte[] value) {
        lock.lock();
        try {
            checkOpen();
            if (values.put(key, value) == null) {
                List<Waiter> waiting = waitersByKey.remove(key);
                if (waiting != null) {
                    for (Waiter waiter : waiting) {
                        if (--waiter.absent == 0) {
                            waiter.ready.signal();
                        }
                    }
                }
            }
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
        Waiter waiter = null;
        try {
            long remaining = timeoutNanos;
            while (true) {
                checkOpen();
                int[] missing = missing(keys);
                if (missing.length == 0) {
                    return new Found(found(keys));
                }
                RuntimeException stop = abort.check(missing);
                if (stop != null) {
                    throw stop;
                }
                if (remaining <= 0) {
                    return new Missing(missing);
                }
                if (waiter == null) {
                    waiter = register(keys, missing);
                }
                remaining = waiter.ready.awaitNanos(remaining);
            }
        } finally {
            if (waiter != null) {
                unregister(waiter, keys);
            }
            lock.unlock();
        }
    }

    private int[] missing(List<String> keys) {
        int count = 0;
        int[] missing = new int[keys.size()];
        for (int i = 0; i < keys.size(); i++) {
            if (!values.containsKey(keys.get(i))) {
                missing[count++] = i;
            }
        }
        return java.util.Arrays.copyOf(missing, count);
    }

    private byte[][] found(List<String> keys) {
        byte[][] found = new byte[keys.size()][];
        for (int i = 0; i < keys.size(); i++) {
            found[i] = values.get(keys.get(i));
        }
        return found;
    }

    /** Registers a waiter under each missing key (a key asked for twice counts twice: it is set once). */
    private Waiter register(List<String> keys, int[] missing) {
        Waiter waiter = new Waiter();
        Set<String> distinct = new HashSet<>();
        for (int index : missing) {
            String key = keys.get(index);
            if (distinct.add(key)) {
                waitersByKey.computeIfAbsent(key, k -> new ArrayList<>(2)).add(waiter);
                waiter.absent++;
            }
        }
        waiters.add(waiter);
        return waiter;
    }

    private void unregister(Waiter waiter, List<String> keys) {
        waiters.remove(waiter);
        if (waiter.absent == 0) {
            return; // every key was set, and each SET took its list away
        }
        for (String key : new HashSet<>(keys)) {
            List<Waiter> waiting = waitersByKey.get(key);
            if (waiting != null && waiting.remove(waiter) && waiting.isEmpty()) {
                waitersByKey.remove(key);
            }
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
            for (Waiter waiter : waiters) {
                waiter.ready.signal();
            }
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
            for (Waiter waiter : waiters) {
                waiter.ready.signal();
            }
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
