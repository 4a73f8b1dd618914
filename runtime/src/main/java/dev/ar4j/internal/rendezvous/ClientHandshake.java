package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.RankLostException;
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
 */
final class ClientHandshake {

    private ClientHandshake() {
    }

    /**
     * Runs the handshake on {@code socket} and returns the established channel.
     *
     * @throws RendezvousAuthenticationException if either side does not know the other's token
     * @throws RankLostException                 if the server refuses a restarted rank (the group failed)
     * @throws RendezvousRefusedException        for another refusal (rank taken, world size, range)
     * @throws RendezvousException               if the peer does not speak the protocol or goes silent
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
            throw new RendezvousException("rank " + rank + ": " + description + " accepted the connection but did not"
                    + " complete the rendezvous handshake within " + timeoutMillis + " ms; is it an ar4j rendezvous"
                    + " server?", e);
        }
    }

    private static Frame expect(Frame frame, byte type, int rank, String description) throws ProtocolViolation {
        if (frame == null) {
            throw new RendezvousException("rank " + rank + ": " + description + " closed the connection during the"
                    + " rendezvous handshake; is it an ar4j rendezvous server (of the same version)?");
        }
        if (frame.type() == RendezvousProtocol.ERROR) {
            Refusal refusal = RendezvousProtocol.parseError(frame.payload());
            String message = "rank " + rank + " was refused by the rendezvous server at " + description + ": "
                    + refusal.message();
            throw switch (refusal.code()) {
                case RendezvousProtocol.CODE_AUTH -> new RendezvousAuthenticationException(message);
                case RendezvousProtocol.CODE_RANK_LOST -> new RankLostException(refusal.rank(), message);
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
