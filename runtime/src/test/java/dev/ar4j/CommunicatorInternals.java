package dev.ar4j;

import dev.ar4j.internal.engine.Engine;
import dev.ar4j.internal.engine.Settings;
import dev.ar4j.rendezvous.Rendezvous;

/** Test access to what a {@link Communicator} keeps inside: its engine and the group's rendezvous. */
public final class CommunicatorInternals {

    private CommunicatorInternals() {
    }

    /** The engine behind {@code comm}. */
    public static Engine engine(Communicator comm) {
        return comm.engine();
    }

    /** The settings {@code builder} holds now. */
    public static Settings settings(Communicator.Builder builder) {
        return builder.settings();
    }

    /** The rendezvous of {@code comm}'s group (owned by it unless given to its builder). */
    public static Rendezvous rendezvous(Communicator comm) {
        return comm.engine().rendezvous();
    }
}
