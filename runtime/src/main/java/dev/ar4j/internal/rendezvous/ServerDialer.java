package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.RendezvousException;
import dev.ar4j.rendezvous.RendezvousTimeoutException;
import dev.ar4j.platform.Durations;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A client's TCP connection to the rendezvous server: attempts with a growing pause until the
 * connect deadline, so that the serving rank may start after the others.
 */
final class ServerDialer {

    /** Logs under {@link TcpRendezvous}'s name, for which it connects. */
    private static final System.Logger LOG = System.getLogger(TcpRendezvous.class.getName());
    private static final long FIRST_RETRY_DELAY_MILLIS = 20;
    private static final long LONGEST_RETRY_DELAY_MILLIS = 500;
    private static final int LONGEST_CONNECT_ATTEMPT_MILLIS = 5_000;

    private ServerDialer() {
    }

    /**
     * Connects to {@code host:port}, retrying until {@code deadline} (a {@link System#nanoTime()}).
     *
     * @throws RendezvousTimeoutException if no attempt succeeded by the deadline, naming the errors seen
     * @throws RendezvousException if interrupted while pausing between attempts
     */
    static Socket connectWithRetry(int rank, String host, int port, String description, long deadline,
                                   Duration connectTimeout) {
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
            attempts++;
            InetSocketAddress target = new InetSocketAddress(host, port);
            String error;
            if (target.isUnresolved()) {
                error = "unknown host '" + host + "'";
            } else {
                Socket socket = new Socket();
                try {
                    socket.connect(target, (int) Math.clamp(leftMillis, 1, LONGEST_CONNECT_ATTEMPT_MILLIS));
                    return socket;
                } catch (IOException e) {
                    closeQuietly(socket);
                    error = e.getClass().getSimpleName() + ": " + e.getMessage();
                }
            }
            if (!distinctErrors.contains(error) && distinctErrors.size() < 3) {
                distinctErrors.add(error);
            }
            long sleepMillis = Math.min(delayMillis, Math.max(0, (deadline - System.nanoTime()) / 1_000_000));
            if (sleepMillis > 0) {
                try {
                    Thread.sleep(sleepMillis);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new RendezvousException("rank " + rank + " was interrupted while connecting to the"
                            + " rendezvous server at " + description, e);
                }
            }
            delayMillis = Math.min(delayMillis * 2, LONGEST_RETRY_DELAY_MILLIS);
        }
    }

    static void closeQuietly(AutoCloseable closeable) {
        try {
            closeable.close();
        } catch (Exception e) {
            LOG.log(System.Logger.Level.DEBUG, () -> "ignored error while closing " + closeable + ": " + e);
        }
    }
}
