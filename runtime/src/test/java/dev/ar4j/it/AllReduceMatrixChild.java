package dev.ar4j.it;

import dev.ar4j.Communicator;

/**
 * One rank of the two-JVM matrix run: {@code AllReduceMatrixChild rank worldSize port seed rounds quick}.
 * Prints the summary line and the first failures; exits 0 only if every case passed.
 */
public final class AllReduceMatrixChild {

    public static void main(String[] args) {
        int rank = Integer.parseInt(args[0]);
        int worldSize = Integer.parseInt(args[1]);
        int port = Integer.parseInt(args[2]);
        long seed = Long.parseLong(args[3]);
        int rounds = Integer.parseInt(args[4]);
        boolean quick = Boolean.parseBoolean(args[5]);
        try (Communicator comm = Communicator.builder().rank(rank).worldSize(worldSize).localRank(rank)
                .masterAddress("127.0.0.1", port).build()) {
            System.out.println("rank " + rank + " joined: " + comm + ", custom kernels " + comm.hasCustomKernels());
            AllReduceMatrix.Summary s = new AllReduceMatrix(comm, seed, rounds, quick).run();
            System.out.println("SUMMARY " + s.line());
            s.failures().forEach(f -> System.out.println("FAILURE " + f));
            System.out.flush();
            System.exit(s.failed() == 0 && s.cases() > 0 ? 0 : 1);
        }
    }
}
