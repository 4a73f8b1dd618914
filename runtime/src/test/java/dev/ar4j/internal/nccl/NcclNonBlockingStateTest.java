package dev.ar4j.internal.nccl;

import dev.ar4j.nccl.NcclException;
import dev.ar4j.nccl.NcclTimeoutException;
import dev.ar4j.nccl.NcclAbortedException;
import dev.ar4j.nccl.NcclUnsupportedException;
import dev.ar4j.nccl.NcclDataType;
import dev.ar4j.nccl.NcclReduction;
import dev.ar4j.nccl.NcclVersion;
import dev.ar4j.nccl.NcclGroup;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The non-blocking communicator's state machine against a scripted NCCL ({@link FakeNcclCalls}):
 * init polled to success, to an error, past its deadline and cancelled; every NCCL wait bounded and
 * ended by an abort from another thread; close that finalizes a healthy communicator and aborts a
 * failed one; abort exactly once. No GPU and no libnccl needed.
 */
@Timeout(30)
class NcclNonBlockingStateTest {
    private static final NcclSupport SUPPORT = new NcclSupport(new NcclVersion(2, 30, 7));
    private static final NcclUniqueId ID = NcclUniqueId.fromBytes(new byte[NcclUniqueId.BYTES]);

    private static NcclCommunicator init(FakeNcclCalls nccl, int nranks, int rank, Duration timeout) {
        return NcclCommInit.nonBlocking(nccl, SUPPORT, ID, nranks, rank, timeout, () -> false);
    }

    private static NcclCommunicator healthy(FakeNcclCalls nccl, Duration timeout) {
        nccl.state = FakeNcclCalls.inProgressThen(5, NcclErrors.SUCCESS);
        NcclCommunicator comm = init(nccl, 2, 1, timeout);
        nccl.log.clear();
        nccl.polls.set(0);
        return comm;
    }

    @Test
    void initPollsUntilNcclReportsSuccess() {
        FakeNcclCalls nccl = new FakeNcclCalls();
        nccl.state = FakeNcclCalls.inProgressThen(50, NcclErrors.SUCCESS);
        NcclCommunicator comm = init(nccl, 2, 1, Duration.ofSeconds(10));
        assertEquals(1, comm.rank());
        assertEquals(2, comm.nranks());
        assertEquals(3, comm.device(), "the device comes from ncclCommCuDevice");
        assertFalse(comm.isBlocking());
        assertEquals(Duration.ofSeconds(10), comm.timeout());
        assertEquals(51, nccl.polls.get(), "polled until the state left ncclInProgress, then stopped");
        assertEquals(List.of("init"), nccl.log);
        assertTrue(comm.isOpen());
    }

    @Test
    void initPastItsDeadlineAbortsAndNamesRankTimeoutAndCause() {
        FakeNcclCalls nccl = new FakeNcclCalls();
        nccl.state = () -> NcclErrors.IN_PROGRESS;
        long start = System.nanoTime();
        NcclTimeoutException e = assertThrows(NcclTimeoutException.class,
                () -> init(nccl, 2, 0, Duration.ofMillis(200)));
        long elapsedMillis = (System.nanoTime() - start) / 1_000_000;
        assertTrue(elapsedMillis >= 200 && elapsedMillis < 2_000, "ended at the deadline, took " + elapsedMillis + " ms");
        assertEquals(List.of("init", "abort"), nccl.log, "aborted exactly once, never destroyed");
        assertEquals(0, e.rank());
        assertEquals(2, e.nranks());
        assertEquals(Duration.ofMillis(200), e.timeout());
        assertEquals("ncclInProgress", e.resultName());
        assertEquals(7, e.code());
        assertEquals("ncclCommInitRankConfig(rank 0 of 2, non-blocking)", e.call());
        String m = e.getMessage();
        assertTrue(m.contains("did not form within 200 ms"), m);
        assertTrue(m.contains("a rank never started"), m);
        assertTrue(m.contains("aborted (ncclCommAbort)"), m);
        assertTrue(m.contains("NCCL's last error: fake last error"), m);
    }

    @Test
    void cancelEndsTheInitWaitLongBeforeTheDeadline() {
        FakeNcclCalls nccl = new FakeNcclCalls();
        nccl.state = () -> NcclErrors.IN_PROGRESS;
        AtomicInteger asked = new AtomicInteger();
        long start = System.nanoTime();
        NcclAbortedException e = assertThrows(NcclAbortedException.class, () -> NcclCommInit.nonBlocking(
                nccl, SUPPORT, ID, 4, 3, Duration.ofMinutes(10), () -> asked.incrementAndGet() > 20));
        assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(5));
        assertEquals(3, e.rank());
        assertTrue(e.getMessage().contains("cancelled"), e.getMessage());
        assertEquals(List.of("init", "abort"), nccl.log);
    }

    @Test
    void anAsynchronousInitErrorAbortsAndCarriesNcclsCode() {
        FakeNcclCalls nccl = new FakeNcclCalls();
        nccl.state = FakeNcclCalls.inProgressThen(3, NcclErrors.REMOTE_ERROR);
        NcclException e = assertThrows(NcclException.class, () -> init(nccl, 2, 0, Duration.ofSeconds(10)));
        assertEquals(NcclException.class, e.getClass());
        assertEquals(6, e.code());
        assertEquals("ncclRemoteError", e.resultName());
        assertEquals("fake error string 6", e.errorString());
        assertTrue(e.call().endsWith("asynchronously"), e.call());
        assertTrue(e.getMessage().contains("A peer rank failed or disconnected"), e.getMessage());
        assertEquals(List.of("init", "abort"), nccl.log);
    }

    @Test
    void anImmediateInitErrorAbortsTheHalfMadeCommunicator() {
        FakeNcclCalls nccl = new FakeNcclCalls();
        nccl.initResult = NcclErrors.INVALID_ARGUMENT;
        NcclException e = assertThrows(NcclException.class, () -> init(nccl, 2, 0, Duration.ofSeconds(10)));
        assertEquals("ncclInvalidArgument", e.resultName());
        assertEquals(List.of("init", "abort"), nccl.log);
        assertEquals(0, nccl.polls.get(), "no poll after a refused init");
    }

    @Test
    void closeFinalizesWaitsAndDestroysAHealthyCommunicator() {
        FakeNcclCalls nccl = new FakeNcclCalls();
        NcclCommunicator comm = healthy(nccl, Duration.ofSeconds(10));
        nccl.state = FakeNcclCalls.inProgressThen(10, NcclErrors.SUCCESS);
        comm.close();
        assertEquals(List.of("finalize", "destroy"), nccl.log);
        assertFalse(comm.isOpen());
        comm.close();
        comm.abort();
        assertEquals(List.of("finalize", "destroy"), nccl.log, "ended once");
    }

    @Test
    void closeAbortsAFailedCommunicatorInsteadOfDestroyingIt() {
        FakeNcclCalls nccl = new FakeNcclCalls();
        NcclCommunicator comm = healthy(nccl, Duration.ofSeconds(10));
        nccl.state = () -> NcclErrors.REMOTE_ERROR;
        Optional<NcclException> error = comm.asyncError();
        assertTrue(error.isPresent());
        assertEquals("ncclRemoteError", error.get().resultName());
        assertTrue(comm.isFailed());
        assertEquals(error, comm.failure());
        IllegalStateException refused = assertThrows(IllegalStateException.class,
                () -> comm.allReduce(1L, 1L, 4, NcclDataType.FLOAT32, NcclReduction.SUM, 0L));
        assertTrue(refused.getMessage().contains("failed earlier and must be aborted"), refused.getMessage());
        comm.close();
        assertEquals(List.of("abort"), nccl.log);
    }

    @Test
    void destroyOrAbortWithAFailedGroupAborts() {
        FakeNcclCalls nccl = new FakeNcclCalls();
        NcclCommunicator comm = healthy(nccl, Duration.ofSeconds(10));
        comm.destroyOrAbort(true);
        assertEquals(List.of("abort"), nccl.log);
    }

    @Test
    void aFinalizeThatNeverCompletesIsAbortedAtTheDeadline() {
        FakeNcclCalls nccl = new FakeNcclCalls();
        NcclCommunicator comm = healthy(nccl, Duration.ofMillis(200));
        nccl.state = () -> NcclErrors.IN_PROGRESS;
        long start = System.nanoTime();
        NcclTimeoutException e = assertThrows(NcclTimeoutException.class, comm::close);
        assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(3));
        assertTrue(e.getMessage().contains("did not finish within 200 ms"), e.getMessage());
        assertEquals(List.of("finalize", "abort"), nccl.log);
        assertFalse(comm.isOpen());
    }

    @Test
    void aFinalizeThatFailsAbortsAndThrowsNcclsError() {
        FakeNcclCalls nccl = new FakeNcclCalls();
        NcclCommunicator comm = healthy(nccl, Duration.ofSeconds(10));
        nccl.state = FakeNcclCalls.inProgressThen(4, NcclErrors.REMOTE_ERROR);
        NcclException e = assertThrows(NcclException.class, comm::close);
        assertEquals("ncclRemoteError", e.resultName());
        assertEquals("ncclCommFinalize(rank 1 of 2)", e.call());
        assertEquals(List.of("finalize", "abort"), nccl.log);

        FakeNcclCalls refused = new FakeNcclCalls();
        NcclCommunicator other = healthy(refused, Duration.ofSeconds(10));
        refused.finalizeResult = NcclErrors.INTERNAL_ERROR;
        assertEquals("ncclInternalError", assertThrows(NcclException.class, other::close).resultName());
        assertEquals(List.of("finalize", "abort"), refused.log);
        assertEquals(0, refused.polls.get(), "no poll after a refused finalize");
    }

    @Test
    void abortDuringCloseCutsTheFinalizeShort() throws Exception {
        FakeNcclCalls nccl = new FakeNcclCalls();
        NcclCommunicator comm = healthy(nccl, Duration.ofMinutes(10));
        nccl.state = () -> NcclErrors.IN_PROGRESS;
        CompletableFuture<Void> closing = CompletableFuture.runAsync(comm::close);
        while (nccl.polls.get() < 20) {
            Thread.onSpinWait();
        }
        comm.abort();
        closing.get(5, TimeUnit.SECONDS);
        assertEquals(List.of("finalize", "abort"), nccl.log);
    }

    @Test
    void anInProgressCallIsBoundedAndItsTimeoutAbortsTheCommunicator() {
        FakeNcclCalls nccl = new FakeNcclCalls();
        NcclCommunicator comm = healthy(nccl, Duration.ofMillis(200));
        nccl.state = () -> NcclErrors.IN_PROGRESS;
        comm.protocol().enter("ncclAllGather");
        int result;
        try {
            result = comm.protocol().settle(NcclErrors.IN_PROGRESS);
        } finally {
            comm.protocol().exit();
        }
        NcclException e = comm.protocol().fail(result, "ncclAllGather(8 x ncclFloat32 per rank)");
        NcclTimeoutException timeout = assertInstanceOf(NcclTimeoutException.class, e);
        assertEquals(1, timeout.rank());
        assertTrue(e.getMessage().startsWith("ncclAllGather(8 x ncclFloat32 per rank) on rank 1 of 2: NCCL still"
                + " reported ncclInProgress after 200 ms"), e.getMessage());
        assertEquals(List.of("abort"), nccl.log);
        assertFalse(comm.isOpen());
    }

    @Test
    void abortFromAnotherThreadEndsAWaitingCallThenFreesOnce() throws Exception {
        FakeNcclCalls nccl = new FakeNcclCalls();
        NcclCommunicator comm = healthy(nccl, Duration.ofMinutes(10));
        nccl.state = () -> NcclErrors.IN_PROGRESS;
        CompletableFuture<NcclException> call = CompletableFuture.supplyAsync(() -> {
            comm.protocol().enter("ncclBroadcast");
            int result;
            try {
                result = comm.protocol().settle(NcclErrors.IN_PROGRESS);
                assertEquals(List.of(), nccl.log, "not aborted while this call is inside");
            } finally {
                comm.protocol().exit();
            }
            return comm.protocol().fail(result, "ncclBroadcast");
        });
        while (nccl.polls.get() < 20) {
            Thread.onSpinWait();
        }
        long start = System.nanoTime();
        comm.abort();
        assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(2), "abort returned promptly");
        NcclException e = call.get(5, TimeUnit.SECONDS);
        assertInstanceOf(NcclAbortedException.class, e);
        assertTrue(e.getMessage().contains("aborted (abort() on another thread)"), e.getMessage());
        assertEquals(List.of("abort"), nccl.log);
        comm.abort();
        comm.close();
        assertEquals(1, nccl.count("abort"));
        assertThrows(IllegalStateException.class, () -> comm.protocol().enter("ncclSend"));
    }

    @Test
    void aSecondThreadsCallWhileOneIsInsideIsRefusedNamingBothButAsyncErrorIsNot() throws Exception {
        FakeNcclCalls nccl = new FakeNcclCalls();
        NcclCommunicator comm = healthy(nccl, Duration.ofSeconds(10));
        comm.protocol().enter("ncclAllReduce");
        try {
            CompletableFuture<Throwable> other = CompletableFuture.supplyAsync(() -> {
                try {
                    comm.protocol().enter("ncclBroadcast");
                    comm.protocol().exit();
                    return null;
                } catch (Throwable t) {
                    return t;
                }
            });
            IllegalStateException e = assertInstanceOf(IllegalStateException.class, other.get(5, TimeUnit.SECONDS));
            String main = Thread.currentThread().getName();
            assertTrue(e.getMessage().startsWith("ncclBroadcast on rank 1 of 2 from thread '"), e.getMessage());
            assertTrue(e.getMessage().contains("while thread '" + main + "' is inside an NCCL call"), e.getMessage());
            assertEquals(Optional.empty(), CompletableFuture.supplyAsync(comm::asyncError).get(5, TimeUnit.SECONDS),
                    "a watchdog's asyncError is not refused");
        } finally {
            comm.protocol().exit();
        }
        CompletableFuture.runAsync(() -> {
            comm.protocol().enter("ncclSend");
            comm.protocol().exit();
        }).get(5, TimeUnit.SECONDS);
        comm.protocol().enter("ncclRecv");
        comm.protocol().exit();
        comm.close();
    }

    @Test
    void inProgressInsideAGroupIsLeftToTheGroupsEnd() {
        FakeNcclCalls nccl = new FakeNcclCalls();
        NcclCommunicator comm = healthy(nccl, Duration.ofMillis(100));
        nccl.state = () -> NcclErrors.IN_PROGRESS;
        GroupScope group = GroupScope.enterScope();
        try {
            comm.protocol().enter("ncclSend");
            try {
                assertEquals(NcclErrors.SUCCESS, comm.protocol().settle(NcclErrors.IN_PROGRESS));
            } finally {
                comm.protocol().exit();
            }
            assertEquals(List.of(comm.protocol()), group.members(), "the call joined the open group");
        } finally {
            GroupScope.leaveScope(group);
        }
        assertEquals(0, nccl.polls.get(), "no poll inside the group: its end settles it");
        assertEquals(null, GroupScope.current());
    }

    @Test
    void splitMakesAChildOrNoneAndAbortsAChildThatTimesOut() {
        FakeNcclCalls nccl = new FakeNcclCalls();
        NcclCommunicator comm = healthy(nccl, Duration.ofMillis(200));
        nccl.state = FakeNcclCalls.inProgressThen(3, NcclErrors.SUCCESS);
        NcclCommunicator child = comm.split(5, 0).orElseThrow();
        assertEquals(0, child.rank());
        assertEquals(1, child.nranks());
        assertEquals(3, child.device());
        assertFalse(child.isBlocking());
        assertEquals(comm.timeout(), child.timeout());

        nccl.state = () -> NcclErrors.SUCCESS;
        assertTrue(comm.split(NcclCommunicator.SPLIT_NO_COLOR, 0).isEmpty());
        assertThrows(IllegalArgumentException.class, () -> comm.split(-2, 0));

        nccl.state = () -> NcclErrors.IN_PROGRESS;
        NcclTimeoutException e = assertThrows(NcclTimeoutException.class, () -> comm.split(1, 0));
        assertTrue(e.getMessage().startsWith("ncclCommSplit(color 1, key 0) on rank 1 of 2: NCCL still reported"
                + " ncclInProgress after 200 ms"), e.getMessage());
        assertEquals(1, nccl.count("abort child"));
        assertEquals(1, nccl.count("abort"), "a split that timed out aborts the parent too");
        assertTrue(comm.isFailed());
        assertFalse(comm.isOpen());
        comm.close();
        assertEquals(1, nccl.count("abort"));
        assertEquals(0, nccl.count("destroy") + nccl.count("finalize"));
    }

    @Test
    void splitNeedsNccl218() {
        FakeNcclCalls nccl = new FakeNcclCalls();
        nccl.state = () -> NcclErrors.SUCCESS;
        NcclCommunicator old = NcclCommInit.nonBlocking(nccl, new NcclSupport(new NcclVersion(2, 17, 1)), ID, 2, 0,
                Duration.ofSeconds(1), () -> false);
        NcclUnsupportedException e = assertThrows(NcclUnsupportedException.class, () -> old.split(0, 0));
        assertTrue(e.getMessage().contains("ncclCommSplit needs NCCL 2.18.0 or newer; the loaded NCCL is 2.17.1"),
                e.getMessage());
        assertEquals(new NcclVersion(2, 18, 0), e.required());
        assertEquals(0, nccl.count("split"));
    }
}
