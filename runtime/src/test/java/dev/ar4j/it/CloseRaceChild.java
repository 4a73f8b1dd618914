package dev.ar4j.it;

import dev.ar4j.Ar4jException;
import dev.ar4j.Communicator;
import dev.ar4j.DType;
import dev.ar4j.cuda.Cuda;
import dev.ar4j.cuda.CudaStream;
import dev.ar4j.cuda.DeviceBuffer;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * {@code CloseRaceChild rounds seed seconds}: per round, a two-rank group on GPU 0 (one JVM, no
 * NCCL); each rank's thread all-reduces (out of place, checking every sum) until a call throws,
 * while a third thread aborts and then closes both communicators after a seeded delay, in a
 * seeded order. Prints
 * {@code RESULT rounds=N wrong=W unexpected=U} and exits 0 only if every round ran, no sum was
 * wrong and every exception was the communicator refusing (closed, failed, aborted). A JVM crash
 * shows as a non-zero exit without the RESULT line.
 */
public final class CloseRaceChild {

    private static final short BF16_THREE = 0x4040;  // (0 + 1) + (1 + 1)

    public static void main(String[] args) throws Exception {
        int rounds = Integer.parseInt(args[0]);
        SplittableRandom random = new SplittableRandom(Long.parseLong(args[1]));
        long budget = TimeUnit.SECONDS.toNanos(Long.parseLong(args[2]));
        long start = System.nanoTime();
        AtomicLong wrong = new AtomicLong();
        AtomicLong unexpected = new AtomicLong();
        AtomicReference<Throwable> firstUnexpected = new AtomicReference<>();
        int done = 0;
        while (done < rounds && System.nanoTime() - start < budget) {
            List<Communicator> group = Communicator.localGroup(new int[] {0, 0}, b -> b.nccl(false)
                    .stagingBytes(64 << 10).kernelTimeout(Duration.ofMillis(50)).watchdogInterval(Duration.ofMillis(5)));
            long delayNanos = random.nextLong(TimeUnit.MICROSECONDS.toNanos(1500));
            boolean zeroFirst = random.nextBoolean();
            CountDownLatch running = new CountDownLatch(2);
            Thread[] loops = new Thread[2];
            for (int r = 0; r < 2; r++) {
                Communicator comm = group.get(r);
                int rank = r;
                loops[r] = Thread.ofPlatform().name("rank-" + r).start(() -> {
                    Cuda.setDevice(0);
                    try (CudaStream stream = CudaStream.create(); DeviceBuffer in = DeviceBuffer.allocate(1024);
                         DeviceBuffer out = DeviceBuffer.allocate(1024); Arena arena = Arena.ofConfined()) {
                        MemorySegment host = arena.allocate(1024);
                        for (int i = 0; i < 512; i++) {
                            host.setAtIndex(ValueLayout.JAVA_SHORT, i, rank == 0 ? (short) 0x3f80 : (short) 0x4000);
                        }
                        in.copyFrom(host);
                        running.countDown();
                        while (true) {
                            try {
                                comm.allReduce(in, out, DType.BFLOAT16, stream);
                                stream.synchronize();
                                comm.checkPeers();
                            } catch (IllegalStateException | Ar4jException refused) {
                                if (refused instanceof dev.ar4j.cuda.CudaException) {
                                    throw refused;
                                }
                                return;  // closed, failed or aborted: the expected end of the race
                            }
                            out.copyTo(host);
                            for (int i = 0; i < 512; i++) {
                                if (host.getAtIndex(ValueLayout.JAVA_SHORT, i) != BF16_THREE) {
                                    wrong.incrementAndGet();
                                    break;
                                }
                            }
                            for (int i = 0; i < 512; i++) {
                                host.setAtIndex(ValueLayout.JAVA_SHORT, i, rank == 0 ? (short) 0x3f80 : (short) 0x4000);
                            }
                        }
                    } catch (Throwable t) {
                        unexpected.incrementAndGet();
                        firstUnexpected.compareAndSet(null, t);
                        running.countDown();
                    }
                });
            }
            running.await(30, TimeUnit.SECONDS);
            long until = System.nanoTime() + delayNanos;
            while (System.nanoTime() < until) {
                Thread.onSpinWait();
            }
            Thread closer = Thread.ofPlatform().name("closer").start(() -> {
                // abort() both first: close() is not collective, and a rank that keeps launching
                // while its peer frees the memory its kernels write into is outside the contract.
                // The race under test is the host side: a call entering or inside the communicator
                // while another thread aborts and frees it.
                for (int k = 0; k < 4; k++) {
                    Communicator c = group.get(zeroFirst == (k % 2 == 0) ? 0 : 1);
                    try {
                        if (k < 2) {
                            c.abort();
                        } else {
                            c.close();
                        }
                    } catch (RuntimeException e) {
                        unexpected.incrementAndGet();
                        firstUnexpected.compareAndSet(null, e);
                    }
                }
            });
            closer.join(TimeUnit.SECONDS.toMillis(60));
            for (Thread t : loops) {
                t.join(TimeUnit.SECONDS.toMillis(60));
                if (t.isAlive()) {
                    System.out.println("HUNG thread " + t.getName() + " in round " + done);
                    System.exit(4);
                }
            }
            if (closer.isAlive()) {
                System.out.println("HUNG closer in round " + done);
                System.exit(4);
            }
            done++;
        }
        System.out.println("RESULT rounds=" + done + " wrong=" + wrong.get() + " unexpected=" + unexpected.get()
                + " seconds=" + TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start));
        if (firstUnexpected.get() != null) {
            System.out.println("FIRST UNEXPECTED " + firstUnexpected.get());
            for (StackTraceElement frame : firstUnexpected.get().getStackTrace()) {
                System.out.println("    at " + frame);
            }
        }
        System.out.flush();
        System.exit(done == rounds && wrong.get() == 0 && unexpected.get() == 0 ? 0 : 1);
    }
}
