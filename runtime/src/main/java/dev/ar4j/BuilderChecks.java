package dev.ar4j;

/**
 * Validation of a {@link Communicator.Builder}'s values as a whole, before any rendezvous or GPU
 * work: a bad value fails here naming what is accepted, not after the whole group is up.
 */
final class BuilderChecks {

    private BuilderChecks() {
    }

    static void validate(Communicator.Builder b) {
        b.dispatchConfig();
    }
}
