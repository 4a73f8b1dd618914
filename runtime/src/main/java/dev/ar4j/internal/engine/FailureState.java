package dev.ar4j.internal.engine;

import dev.ar4j.OutOfStepException;
import dev.ar4j.PeerLostException;
import dev.ar4j.PeerTimeoutException;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Whether a communicator has failed, and why: the first failure wins and is kept; every later
 * call throws a fresh exception of the same kind, naming the same rank, with the first as its
 * cause. Thread-safe; reading it costs one volatile load.
 */
final class FailureState {

    /** What kind of failure, which decides the exception type. */
    enum Kind {
        /** A custom kernel gave up waiting for {@link Failure#peer}. */
        PEER_TIMEOUT,
        /** A rank (or, with peer -1, the whole group) is gone; also NCCL's asynchronous errors. */
        PEER_LOST,
        /** The ranks made different collective calls (captures, registrations, rendezvous steps). */
        OUT_OF_STEP,
        /** The application called {@code abort()}. */
        ABORTED
    }

    /** One failure: its kind, the rank it names (-1 if none), the message and the first exception. */
    record Failure(Kind kind, int peer, String message, Throwable cause) {

        /** The same failure, with {@code cause} as its cause. */
        Failure withCause(Throwable newCause) {
            return new Failure(kind, peer, message, newCause);
        }

        /** A fresh exception for a call that finds the communicator failed. */
        RuntimeException toException() {
            return switch (kind) {
                case PEER_TIMEOUT -> new PeerTimeoutException(message, peer, cause);
                case PEER_LOST -> new PeerLostException(message, peer, cause);
                case OUT_OF_STEP -> new OutOfStepException(message, cause);
                case ABORTED -> new IllegalStateException(message, cause);
            };
        }
    }

    private final AtomicReference<Failure> failure = new AtomicReference<>();

    /** Records {@code f} unless a failure is already recorded; returns whether it was the first. */
    boolean fail(Failure f) {
        return failure.compareAndSet(null, f);
    }

    /** The recorded failure, or null. */
    Failure get() {
        return failure.get();
    }

    boolean failed() {
        return failure.get() != null;
    }

    /** Throws the recorded failure as a fresh exception; returns if none. */
    void throwIfFailed() {
        Failure f = failure.get();
        if (f != null) {
            throw f.toException();
        }
    }
}
