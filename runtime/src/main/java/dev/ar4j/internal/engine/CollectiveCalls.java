package dev.ar4j.internal.engine;

import dev.ar4j.OutOfStepException;
import dev.ar4j.PeerLostException;
import dev.ar4j.internal.rendezvous.SplitPlan;
import dev.ar4j.internal.engine.FailureState.Failure;
import dev.ar4j.internal.engine.FailureState.Kind;
import dev.ar4j.cuda.DeviceBuffer;

import java.util.Objects;

/**
 * One communicator's collective calls other than the all-reduces: {@code Communicator.register},
 * {@code Communicator.unregister}, the close of a {@code GraphCapture} scope and the agreement
 * step of {@code Communicator.split}. Each runs under the call guard; a failure inside a step
 * (other than the caller's own argument error, which every rank sees alike) leaves the ranks out
 * of step, so the communicator is failed and the failure rethrown.
 */
final class CollectiveCalls {

    private final Group group;
    private final CustomKernelPath kernels;  // null when the topology rules the kernels out
    private final CaptureRecorder capture;
    private final CallGuard guard;
    private final Containment containment;

    CollectiveCalls(Group group, CustomKernelPath kernels, CaptureRecorder capture, CallGuard guard,
                    Containment containment) {
        this.group = group;
        this.kernels = kernels;
        this.capture = capture;
        this.guard = guard;
        this.containment = containment;
    }

    /** {@code Communicator.register}. */
    void register(DeviceBuffer buffer) {
        Objects.requireNonNull(buffer, "buffer");
        if (buffer.device() != group.device) {
            throw new IllegalArgumentException("buffer is on GPU " + buffer.device() + " but this communicator drives GPU "
                    + group.device);
        }
        run("register", () -> {
            if (kernels == null) {
                // Still collective, so that every rank's sequence of rendezvous steps stays aligned.
                group.rendezvous.barrier(group.key("register"), group.timeout);
            } else {
                kernels.register(buffer);
            }
        });
    }

    /** {@code Communicator.unregister}. */
    void unregister(DeviceBuffer buffer) {
        Objects.requireNonNull(buffer, "buffer");
        run("unregister", () -> {
            if (kernels != null) {
                kernels.settle(true);
            }
            group.agreeUnregister(buffer.byteSize(), kernels == null
                    || kernels.isRegistered(buffer.address(), buffer.byteSize()));
            if (kernels != null) {
                kernels.unregister(buffer);
            }
        });
    }

    /** {@code GraphCapture.close()}: compares the ranks' captured calls and shares the recorded inputs. */
    void finishCapture(CaptureRecorder.Scope scope) {
        run("GraphCapture.close", () -> {
            OutOfStepException mismatch = capture.finish(scope, kernels);
            if (mismatch != null) {
                throw mismatch;
            }
        });
    }

    /** A barrier over the group ({@code Communicator.barrier()}). */
    void barrier() {
        run("barrier", () -> group.rendezvous.barrier(group.key("barrier"), group.timeout));
    }

    /** Every rank's {@code value}, in rank order ({@code Communicator.exchange}). */
    byte[][] exchange(byte[] value) {
        Objects.requireNonNull(value, "value");
        byte[][][] all = new byte[1][][];
        run("exchange", () -> all[0] = group.rendezvous.allGather(group.key("exchange"), value, group.timeout));
        return all[0];
    }

    /** The split's step over this group: every rank's color and key, agreed into this rank's plan. */
    SplitPlan agreeSplit(int color, int key) {
        SplitPlan[] plan = new SplitPlan[1];
        run("split", () -> plan[0] = SplitPlan.agree(group.rendezvous, group.key("split"), color, key, group.timeout));
        return plan[0];
    }

    /** Runs {@code step} under the guard, named {@code call} in messages. */
    private void run(String call, Runnable step) {
        guard.enter(call);
        try {
            step.run();
        } catch (IllegalArgumentException e) {
            throw e;
        } catch (PeerLostException e) {
            Failure lost = new Failure(Kind.PEER_LOST, e.peer(), "rank " + group.rank + ": " + call + " failed: "
                    + e.getMessage() + "; this communicator is failed: close it and build a new group", e);
            containment.contain(lost);
            throw lost.toException();
        } catch (RuntimeException e) {
            containment.contain(new Failure(Kind.OUT_OF_STEP, -1, "rank " + group.rank + ": " + call + " failed ("
                    + e.getMessage() + "); the ranks may be out of step, so this communicator is failed: close it "
                    + "and build a new group", e));
            throw e;
        } finally {
            guard.exit();
        }
    }
}
