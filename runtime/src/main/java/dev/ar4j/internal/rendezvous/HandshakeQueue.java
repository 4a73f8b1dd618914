package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.*;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The server's connections that have not authenticated yet, in the order they were accepted,
 * bounded by {@link RendezvousSettings#maxPendingConnections()}. When it is full the accept loop,
 * holding the connection it has just accepted, waits (back-pressure: further connections wait in
 * the kernel's listen backlog) until a handshake ends, or until the connection that has waited
 * longest has had its share of time; that one is then evicted for the newcomer and told the server
 * is busy, and its client retries. The loop asks for room only with a newcomer in hand, so a full
 * queue that nobody else wants to enter evicts nobody. Its share is four
 * times the recent average of successful handshakes (at least the floor given, at most the
 * ceiling), so a loaded server whose real handshakes slow down does not evict them and churn,
 * while connections that never authenticate cannot shorten it. A connection leaves the queue the moment its proof of the token is verified, so an
 * authenticated peer is never refused for want of room, while a flood of connections that never
 * authenticate only delays the ranks behind it.
 */
final class HandshakeQueue {
    private final int capacity;
    private final long minEvictAfterNanos;
    private final long maxEvictAfterNanos;
    /** Moving average of the time from accept to a verified proof, 0 before the first. */
    private long averageHandshakeNanos;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    /** Each waiting session with the {@link System#nanoTime()} it was accepted at, oldest first. */
    private final Map<ServerSession, Long> waiting = new LinkedHashMap<>();
    private boolean closed;

    HandshakeQueue(int capacity, long minEvictAfterNanos, long maxEvictAfterNanos) {
        this.capacity = capacity;
        this.minEvictAfterNanos = minEvictAfterNanos;
        this.maxEvictAfterNanos = Math.max(minEvictAfterNanos, maxEvictAfterNanos);
    }

    /** How long the oldest connection may wait before it is evicted for a newer one; under the lock. */
    private long evictAfterNanos() {
        return Math.clamp(4 * averageHandshakeNanos, minEvictAfterNanos, maxEvictAfterNanos);
    }

    /**
     * Waits until there is room for one more connection; called only with that connection
     * accepted and waiting, so that nobody is evicted for a connection that never comes.
     *
     * @return the session evicted to make room (the caller tells it the server is busy), or null
     * @throws InterruptedException if interrupted while waiting
     */
    ServerSession awaitRoom() throws InterruptedException {
        lock.lock();
        try {
            while (!closed && waiting.size() >= capacity) {
                Iterator<Map.Entry<ServerSession, Long>> oldest = waiting.entrySet().iterator();
                Map.Entry<ServerSession, Long> first = oldest.next();
                long waited = System.nanoTime() - first.getValue();
                long evictAfter = evictAfterNanos();
                if (waited >= evictAfter) {
                    oldest.remove();
                    changed.signalAll();
                    return first.getKey();
                }
                changed.await(evictAfter - waited, TimeUnit.NANOSECONDS);
            }
            return null;
        } finally {
            lock.unlock();
        }
    }

    /** Queues a newly accepted connection (after {@link #awaitRoom()}). */
    void add(ServerSession session) {
        lock.lock();
        try {
            waiting.put(session, System.nanoTime());
        } finally {
            lock.unlock();
        }
    }

    /**
     * Takes {@code session} out of the queue because it proved it knows the token, and counts the
     * time it took into the average.
     *
     * @return true if it was queued; false if it had been evicted
     */
    boolean authenticated(ServerSession session) {
        lock.lock();
        try {
            Long acceptedAt = waiting.remove(session);
            if (acceptedAt == null) {
                return false;
            }
            long took = System.nanoTime() - acceptedAt;
            averageHandshakeNanos = averageHandshakeNanos == 0 ? took : averageHandshakeNanos + (took - averageHandshakeNanos) / 8;
            changed.signalAll();
            return true;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Takes {@code session} out of the queue: its handshake ended.
     *
     * @return true if it was queued; false if it had been evicted (or never queued)
     */
    boolean remove(ServerSession session) {
        lock.lock();
        try {
            boolean removed = waiting.remove(session) != null;
            if (removed) {
                changed.signalAll();
            }
            return removed;
        } finally {
            lock.unlock();
        }
    }

    int size() {
        lock.lock();
        try {
            return waiting.size();
        } finally {
            lock.unlock();
        }
    }

    int capacity() {
        return capacity;
    }

    /** Wakes the accept loop for good. */
    void close() {
        lock.lock();
        try {
            closed = true;
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }
}
