package dev.ar4j.internal.rendezvous;

import dev.ar4j.PeerLostException;
import dev.ar4j.rendezvous.RendezvousException;
import dev.ar4j.rendezvous.RendezvousAuthenticationException;
import dev.ar4j.rendezvous.RendezvousRefusedException;
import dev.ar4j.internal.rendezvous.RendezvousProtocol.Frame;
import dev.ar4j.internal.rendezvous.RendezvousProtocol.ProtocolViolation;
import dev.ar4j.internal.rendezvous.RendezvousProtocol.Refusal;

import java.io.IOException;
import java.net.Socket;
import java.net.SocketTimeoutException;

/**
 * The client's side of the authenticated handshake (see {@link RendezvousProtocol}): HELLO with a
 * fresh incarnation and nonce, the proof for the server's challenge, and the check of the
 * server's own proof, so that a rank also refuses a server of another job.
 *
 * <p>A server that is busy (its queue of handshakes is full), that closes or resets the
 * connection, or that does not answer within the handshake timeout raises {@link Retry}: the
 * caller tries again after a pause. Every text the server sends during the handshake is
 * unauthenticated, so only a short, printable excerpt of it goes into an exception message.
 */
final class ClientHandshake {

    /** The longest excerpt of a server's unauthenticated text that goes into a message. */
    static final int MAX_UNAUTHENTICATED_TEXT = 400;

    /** The handshake could not complete for a reason that may pass: try again after a pause. */
    static final class Retry extends IOException {
        private static final long serialVersionUID = 1L;
        final boolean busy;

        Retry(boolean busy, String message, Throwable cause) {
            super(message, cause);
            this.busy = busy;
        }
    }

    private ClientHandshake() {
    }

    /**
     * Runs the handshake on {@code socket} and returns the established channel.
     *
     * @throws RendezvousAuthenticationException if either side does not know the other's token
     * @throws PeerLostException                 if the server refuses a restarted rank (the group failed)
     * @throws RendezvousRefusedException        for another refusal (rank taken, world size, range)
     * @throws RendezvousException               if the peer does not speak the protocol
     * @throws Retry                             if the server is busy, closed the connection or went silent
     */
    static SecureChannel perform(Socket socket, int rank, int worldSize, JobToken token, String description,
                                 long timeoutMillis) throws IOException {
        socket.setSoTimeout((int) Math.min(Integer.MAX_VALUE, Math.max(1, timeoutMillis)));
        SecureChannel channel = new SecureChannel(socket, true);
        byte[] hello = RendezvousProtocol.hello(rank, worldSize, RendezvousAuth.incarnation(), RendezvousAuth.nonce());
        try {
            channel.send(RendezvousProtocol.HELLO, hello);
            Frame challenge = expect(channel.receive(RendezvousProtocol.MAX_MESSAGE_PAYLOAD), RendezvousProtocol.CHALLENGE,
                    rank, description);
            if (challenge.payload().length != RendezvousProtocol.NONCE_BYTES) {
                throw new ProtocolViolation("CHALLENGE of " + challenge.payload().length + " bytes");
            }
            byte[] serverNonce = challenge.payload();
            byte[] key = token.key();
            channel.send(RendezvousProtocol.AUTH, RendezvousAuth.clientProof(key, hello, serverNonce));
            Frame welcome = expect(channel.receive(RendezvousProtocol.MAX_MESSAGE_PAYLOAD), RendezvousProtocol.WELCOME,
                    rank, description);
            if (!RendezvousAuth.matches(RendezvousAuth.serverProof(key, hello, serverNonce), welcome.payload())) {
                throw new RendezvousAuthenticationException("rank " + rank + ": the rendezvous server at " + description
                        + " belongs to another job (token mismatch): it does not know this job's token ("
                        + token.source() + "); check MASTER_ADDR / MASTER_PORT, and " + JobToken.howToSet());
            }
            channel.establish(RendezvousAuth.sessionKey(key, hello, serverNonce));
            return channel;
        } catch (ProtocolViolation violation) {
            throw new RendezvousException("rank " + rank + ": " + description + " does not answer with the ar4j"
                    + " rendezvous protocol (" + violation.getMessage() + "); is the port used by another service,"
                    + " such as torchrun's own store on MASTER_PORT, or an older ar4j?");
        } catch (SocketTimeoutException e) {
            throw new Retry(false, description + " accepted the connection but did not complete the rendezvous"
                    + " handshake within " + timeoutMillis + " ms (is it an ar4j rendezvous server, and not overloaded?)", e);
        } catch (Retry retry) {
            throw retry;
        } catch (IOException e) {
            throw new Retry(false, description + " ended the connection during the rendezvous handshake ("
                    + printableExcerpt(String.valueOf(e.getMessage())) + ")", e);
        }
    }

    /**
     * At most {@link #MAX_UNAUTHENTICATED_TEXT} characters of {@code text}, every control or
     * non-printable character replaced by {@code '?'}: text from a peer not yet authenticated.
     */
    static String printableExcerpt(String text) {
        int length = Math.min(text.length(), MAX_UNAUTHENTICATED_TEXT);
        StringBuilder excerpt = new StringBuilder(length + 24);
        for (int i = 0; i < length; i++) {
            char c = text.charAt(i);
            excerpt.append(c >= 0x20 && c < 0x7f ? c : '?');
        }
        if (text.length() > length) {
            excerpt.append("... (").append(text.length() - length).append(" more characters)");
        }
        return excerpt.toString();
    }

    private static Frame expect(Frame frame, byte type, int rank, String description) throws IOException {
        if (frame == null) {
            throw new Retry(false, description + " closed the connection during the rendezvous handshake (is it an"
                    + " ar4j rendezvous server of the same version, and not overloaded?)", null);
        }
        if (frame.type() == RendezvousProtocol.ERROR) {
            Refusal refusal = RendezvousProtocol.parseError(frame.payload());
            String said = printableExcerpt(refusal.message());
            if (refusal.code() == RendezvousProtocol.CODE_BUSY) {
                throw new Retry(true, "the server is busy (" + description + " said: " + said + ")", null);
            }
            String message = "rank " + rank + " was refused by the rendezvous server at " + description + ": " + said;
            throw switch (refusal.code()) {
                case RendezvousProtocol.CODE_AUTH -> new RendezvousAuthenticationException(message);
                case RendezvousProtocol.CODE_RANK_LOST -> new PeerLostException(message, refusal.rank(), null);
                case RendezvousProtocol.CODE_REFUSED -> new RendezvousRefusedException(message);
                default -> new RendezvousException(message);
            };
        }
        if (frame.type() != type) {
            throw new ProtocolViolation("expected " + RendezvousProtocol.typeName(type) + " during the handshake, got "
                    + RendezvousProtocol.typeName(frame.type()));
        }
        return frame;
    }
}
