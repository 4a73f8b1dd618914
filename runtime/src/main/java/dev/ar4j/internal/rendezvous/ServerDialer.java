package dev.ar4j.internal.rendezvous;
import dev.ar4j.rendezvous.RendezvousSettings;

import dev.ar4j.rendezvous.RendezvousException;
import dev.ar4j.rendezvous.RendezvousTimeoutException;
import dev.ar4j.internal.platform.Durations;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A client's way into the rendezvous server: TCP connection attempts with a growing pause until
 * the connect deadline, so that the serving rank may start after the others; then the handshake,
 * tried again after a jittered, growing pause when the server is busy, drops the connection or
 * does not answer, until the same deadline. The jitter spreads a thousand ranks that were refused
 * together over the next attempts instead of bringing them back at once.
 */
final class ServerDialer {

    /** Logs under {@link TcpRendezvous}'s name, for which it connects. */
    private static final System.Logger LOG = System.getLogger(TcpRendezvous.class.getName());
    private static final long FIRST_RETRY_DELAY_MILLIS = 20;
    private static final long LONGEST_RETRY_DELAY_MILLIS = 500;
    private static final int LONGEST_CONNECT_ATTEMPT_MILLIS = 5_000;
    private static final long FIRST_HANDSHAKE_RETRY_MILLIS = 20;
    private static final long LONGEST_HANDSHAKE_RETRY_MILLIS = 1_000;

    private ServerDialer() {
    }

    /**
     * Connects to {@code host:port}, retrying until {@code deadline} (a {@link System#nanoTime()}).
     *
     * @throws RendezvousTimeoutException if no attempt succeeded by the deadline, naming the errors seen
     * @throws RendezvousException if interrupted while pausing between attempts
     */
    static Socket connectWithRetry(int rank, String host, int port, String description, long deadline,
                                   Duration connectTimeout, AbortSignal abort) {
        long delayMillis = FIRST_RETRY_DELAY_MILLIS;
        List<String> distinctErrors = new ArrayList<>();
        int attempts = 0;
        while (true) {
            long leftMillis = (deadline - System.nanoTime()) / 1_000_000;
            if (leftMillis <= 0 && attempts > 0) {
                throw new RendezvousTimeoutException("rank " + rank + " could not reach the rendezvous server at "
                        + description + " within " + Durations.format(connectTimeout) + " (" + attempts
                        + " attempts; " + String.join("; ", distinctErrors) + "). Check that the serving rank is"
                        + " running and that the master address and port (MASTER_ADDR / MASTER_PORT) point at it.",
                        "(connect)", List.of(), connectTimeout);
            }
            abort.throwIfAborted("while rank " + rank + " was connecting to the rendezvous server at " + description);
            attempts++;
            InetSocketAddress target = new InetSocketAddress(host, port);
            String error;
            if (target.isUnresolved()) {
                error = "unknown host '" + host + "'";
            } else {
                Socket socket = new Socket();
                try (AbortSignal.Registration closer = abort.onAbort(() -> closeQuietly(socket))) {
                    socket.connect(target, (int) Math.clamp(leftMillis, 1, LONGEST_CONNECT_ATTEMPT_MILLIS));
                    return socket;
                } catch (IOException e) {
                    closeQuietly(socket);
                    if (abort.aborted()) {
                        throw abort.aborted("while rank " + rank + " was connecting to the rendezvous server at "
                                + description, e);
                    }
                    error = e.getClass().getSimpleName() + ": " + e.getMessage();
                }
            }
            if (!distinctErrors.contains(error) && distinctErrors.size() < 3) {
                distinctErrors.add(error);
            }
            long sleepMillis = Math.min(delayMillis, Math.max(0, (deadline - System.nanoTime()) / 1_000_000));
            if (sleepMillis > 0) {
                try {
                    abort.sleep(sleepMillis);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new RendezvousException("rank " + rank + " was interrupted while connecting to the"
                            + " rendezvous server at " + description, e);
                }
            }
            delayMillis = Math.min(delayMillis * 2, LONGEST_RETRY_DELAY_MILLIS);
        }
    }

    /**
     * Connects and completes the handshake, both retried until {@code deadline} (a {@link System#nanoTime()}).
     *
     * @return the authenticated channel
     * @throws RendezvousTimeoutException if no attempt succeeded by the deadline; "the server is busy" when
     *     that was the last cause
     * @throws RendezvousException for a refusal that no retry can change (token, world size, rank taken, protocol)
     */
    static SecureChannel join(int rank, int worldSize, String host, int port, String description, long deadline,
                              Duration connectTimeout, JobToken token, RendezvousSettings settings, AbortSignal abort)
            throws IOException {
        long pauseMillis = FIRST_HANDSHAKE_RETRY_MILLIS;
        int refusals = 0;
        int busy = 0;
        ClientHandshake.Retry last = null;
        while (true) {
            if (last != null && System.nanoTime() - deadline >= 0) {
                throw handshakeTimeout(rank, description, connectTimeout, refusals, busy, last);
            }
            Socket socket;
            try {
                socket = connectWithRetry(rank, host, port, description, deadline, connectTimeout, abort);
            } catch (RendezvousTimeoutException e) {
                if (last == null) {
                    throw e;
                }
                // The deadline ran out while reconnecting after a handshake that was turned away: that
                // handshake (a busy server, most often) is the cause to name, not the last connect.
                throw handshakeTimeout(rank, description, connectTimeout, refusals, busy, last);
            }
            Socket dialled = socket;
            try (AbortSignal.Registration closer = abort.onAbort(() -> closeQuietly(dialled))) {
                socket.setTcpNoDelay(true);
                socket.setKeepAlive(true);
                long leftMillis = Math.max(1_000, (deadline - System.nanoTime()) / 1_000_000);
                SecureChannel channel = ClientHandshake.perform(socket, rank, worldSize, token, description,
                        Math.min(leftMillis, Durations.toMillis(settings.handshakeTimeout())));
                if (abort.aborted()) {
                    closeQuietly(socket);
                    throw abort.aborted("while rank " + rank + " was joining the rendezvous server at " + description,
                            null);
                }
                return channel;
            } catch (ClientHandshake.Retry retry) {
                if (abort.aborted()) {
                    closeQuietly(socket);
                    throw abort.aborted("while rank " + rank + " was joining the rendezvous server at " + description,
                            retry);
                }
                closeQuietly(socket);
                last = retry;
                refusals++;
                if (retry.busy) {
                    busy++;
                }
                LOG.log(System.Logger.Level.DEBUG, () -> "rank " + rank + ": handshake attempt failed, retrying: "
                        + retry.getMessage());
            } catch (IOException | RuntimeException | Error e) {
                closeQuietly(socket);
                if (abort.aborted() && !(e instanceof dev.ar4j.BuildAbortedException)) {
                    throw abort.aborted("while rank " + rank + " was joining the rendezvous server at " + description,
                            e);
                }
                throw e;
            }
            long leftMillis = (deadline - System.nanoTime()) / 1_000_000;
            long sleepMillis = Math.min(leftMillis, pauseMillis / 2 + ThreadLocalRandom.current().nextLong(pauseMillis / 2 + 1));
            if (sleepMillis > 0) {
                try {
                    abort.sleep(sleepMillis);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new RendezvousException("rank " + rank + " was interrupted while joining the rendezvous"
                            + " server at " + description, e);
                }
            }
            abort.throwIfAborted("while rank " + rank + " was joining the rendezvous server at " + description);
            pauseMillis = Math.min(pauseMillis * 2, LONGEST_HANDSHAKE_RETRY_MILLIS);
        }
    }

    private static RendezvousTimeoutException handshakeTimeout(int rank, String description, Duration connectTimeout,
                                                               int refusals, int busy, ClientHandshake.Retry last) {
        String cause = last.busy
                ? "the server is busy: its queue of handshakes in progress was full (" + busy + " of " + refusals
                + " attempts were turned away; more ranks join at once than ar4j.rdzv.maxPendingConnections, or"
                + " connections that never authenticate are flooding it). Raise the connect timeout or"
                + " ar4j.rdzv.maxPendingConnections on the serving rank"
                : "the handshake did not complete in " + refusals + " attempts (last: " + last.getMessage() + ")";
        return new RendezvousTimeoutException("rank " + rank + " could not join the rendezvous server at " + description
                + " within " + Durations.format(connectTimeout) + ": " + cause, "(connect)", List.of(), connectTimeout);
    }

    static void closeQuietly(AutoCloseable closeable) {
        try {
            closeable.close();
        } catch (Exception e) {
            LOG.log(System.Logger.Level.DEBUG, () -> "ignored error while closing " + closeable + ": " + e);
        }
    }
}
