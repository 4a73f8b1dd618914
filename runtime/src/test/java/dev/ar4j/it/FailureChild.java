package dev.ar4j.it;

import dev.ar4j.Communicator;
import dev.ar4j.DType;
import dev.ar4j.GraphCapture;
import dev.ar4j.PeerLostException;
import dev.ar4j.PeerTimeoutException;
import dev.ar4j.cuda.CaptureMode;
import dev.ar4j.cuda.CudaGraph;
import dev.ar4j.cuda.CudaGraphExec;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * One rank of the two-JVM failure tests, both ranks on GPU 0 without NCCL:
 * {@code FailureChild mode rank port stallAt abortAfterMs}.
 * <ul>
 *   <li>{@code eager}: all-reduces (1 KiB bf16) with a synchronise after each, until one throws.</li>
 *   <li>{@code graph}: captures one all-reduce into a CUDA graph and replays it, with a
 *       synchronise and {@code checkPeers()} after each replay, until one throws.</li>
 *   <li>{@code abort}: like eager, but rank 1 stops calling at iteration {@code stallAt} (a
 *       deliberately late rank), and in each JVM a third thread calls {@code abort()}
 *       {@code abortAfterMs} after this rank reached {@code stallAt}.</li>
 * </ul>
 * Prints {@code READY} after 100 iterations, then on failure
 * {@code FAILED <epoch ms> <exception class> peer=<rank>} (and for abort
 * {@code UNBLOCKED <ms from abort to the loop's end>}); exits 0 when the loop ended with an
 * exception, 1 if it ran 60 s without one.
 */
public final class FailureChild {

    private static final long LOOP_LIMIT_NANOS = TimeUnit.SECONDS.toNanos(60);

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        int rank = Integer.parseInt(args[1]);
        int port = Integer.parseInt(args[2]);
        int stallAt = Integer.parseInt(args[3]);
        long abortAfterMs = Long.parseLong(args[4]);
        Communicator comm = Communicator.builder().rank(rank).worldSize(2).localRank(0).device(0).nccl(false)
                .masterAddress("127.0.0.1", port).rendezvousTimeout(Duration.ofSeconds(60)).build();
        System.out.println("rank " + rank + " joined: " + comm + ", custom kernels " + comm.hasCustomKernels());
        if (!comm.hasCustomKernels()) {
            System.out.println("NOKERNELS two ranks on one GPU must get the custom kernels");
            System.exit(2);
        }
        CountDownLatch stalled = new CountDownLatch(1);
        long[] abortedAt = new long[1];
        if (mode.equals("abort")) {
            Thread.ofPlatform().daemon(true).name("third-thread").start(() -> {
                try {
                    stalled.await();
                    Thread.sleep(abortAfterMs);
                    abortedAt[0] = System.nanoTime();
                    comm.abort();
                    System.out.println("ABORTED health " + comm.health());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
        }
        int exit = 1;
        try (CudaStream stream = CudaStream.create(); DeviceBuffer x = DeviceBuffer.allocate(1024)) {
            x.fill(0);
            CudaGraphExec exec = null;
            CudaGraph graph = null;
            if (mode.equals("graph")) {
                try (GraphCapture scope = comm.graphCapture()) {
                    CudaGraph.beginCapture(stream, CaptureMode.THREAD_LOCAL);
                    try {
                        comm.allReduce(x, DType.BFLOAT16, stream);
                    } finally {
                        graph = CudaGraph.endCapture(stream);
                    }
                }
                exec = graph.instantiate();
            }
            long start = System.nanoTime();
            int i = 0;
            try {
                while (System.nanoTime() - start < LOOP_LIMIT_NANOS) {
                    if (i == stallAt) {
                        stalled.countDown();
                        if (rank == 1 && mode.equals("abort")) {
                            // The late rank: it stops calling; its next call comes after the abort.
                            while (abortedAt[0] == 0 && System.nanoTime() - start < LOOP_LIMIT_NANOS) {
                                Thread.sleep(1);
                            }
                        }
                    }
                    if (exec != null) {
                        exec.launch(stream);
                    } else {
                        comm.allReduce(x, DType.BFLOAT16, stream);
                    }
                    stream.synchronize();
                    comm.checkPeers();
                    if (++i == 100) {
                        System.out.println("READY");
                        System.out.flush();
                    }
                }
                System.out.println("NOFAIL after " + i + " iterations");
            } catch (RuntimeException e) {
                long now = System.currentTimeMillis();
                int peer = e instanceof PeerLostException l ? l.peer() : e instanceof PeerTimeoutException t ? t.peer() : -2;
                System.out.println("FAILED " + now + " " + e.getClass().getName() + " peer=" + peer + " after " + i
                        + " iterations: " + e.getMessage());
                if (abortedAt[0] != 0) {
                    System.out.println("UNBLOCKED " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - abortedAt[0]));
                }
                exit = 0;
            } finally {
                if (exec != null) {
                    exec.close();
                }
                if (graph != null) {
                    graph.close();
                }
            }
        } finally {
            System.out.println("health " + comm.health());
            try {
                comm.close();
            } catch (RuntimeException e) {
                System.out.println("CLOSE FAILED " + e);
                exit = 3;
            }
        }
        System.out.flush();
        System.exit(exit);
    }
}
