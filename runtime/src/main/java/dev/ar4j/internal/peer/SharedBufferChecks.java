package dev.ar4j.internal.peer;

import dev.ar4j.OutOfStepException;
/** The agreement checks both {@link PeerMemory} implementations make on what the ranks sent. */
final class SharedBufferChecks {

    private SharedBufferChecks() {
    }

    static void sameCount(int rank, int mine, int peer, int theirs) {
        if (theirs != mine) {
            throw new OutOfStepException("ranks disagree on the number of buffers to share: rank " + rank
                    + " shares " + mine + ", rank " + peer + " shares " + theirs);
        }
    }

    static void sameSize(int buffer, int rank, long mine, int peer, long theirs) {
        if (theirs != mine) {
            throw new OutOfStepException("ranks disagree on the size of shared buffer " + buffer + ": rank "
                    + rank + " has " + mine + " bytes, rank " + peer + " has " + theirs
                    + "; every rank must share buffers of the same size in the same order");
        }
    }
}
