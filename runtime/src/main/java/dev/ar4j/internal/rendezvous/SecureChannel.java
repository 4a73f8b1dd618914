package dev.ar4j.internal.rendezvous;

import dev.ar4j.internal.rendezvous.RendezvousProtocol.Frame;
import dev.ar4j.internal.rendezvous.RendezvousProtocol.ProtocolViolation;

import javax.crypto.Mac;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One end of a rendezvous connection: frames in clear during the handshake, then every frame
 * sealed with a MAC over its direction, sequence number, type and body (see
 * {@link RendezvousProtocol}). Sending is serialized (a heartbeat and a reply may be sent from
 * different threads); receiving is done by one thread.
 */
final class SecureChannel {
    private static final byte CLIENT_TO_SERVER = 'C';
    private static final byte SERVER_TO_CLIENT = 'S';

    private final Socket socket;
    private final DataInputStream in;
    private final OutputStream out;
    private final boolean clientSide;
    private final ReentrantLock sendLock = new ReentrantLock();
    private Mac sendMac;
    private Mac receiveMac;
    private long sendSequence;
    private long receiveSequence;

    SecureChannel(Socket socket, boolean clientSide) throws IOException {
        this.socket = socket;
        this.clientSide = clientSide;
        this.in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
        this.out = new BufferedOutputStream(socket.getOutputStream());
    }

    Socket socket() {
        return socket;
    }

    /** From now on frames are sealed with {@code sessionKey}. */
    void establish(byte[] sessionKey) {
        sendLock.lock();
        try {
            sendMac = RendezvousAuth.mac(sessionKey);
            receiveMac = RendezvousAuth.mac(sessionKey);
        } finally {
            sendLock.unlock();
        }
    }

    boolean isEstablished() {
        return receiveMac != null;
    }

    /** Sends one frame, sealed once the session is established. */
    void send(byte type, byte[] body) throws IOException {
        sendLock.lock();
        try {
            byte[] payload = body;
            if (sendMac != null) {
                byte[] mac = seal(sendMac, clientSide ? CLIENT_TO_SERVER : SERVER_TO_CLIENT, sendSequence++, type, body);
                payload = Arrays.copyOf(body, body.length + mac.length);
                System.arraycopy(mac, 0, payload, body.length, mac.length);
            }
            RendezvousProtocol.writeFrame(out, type, payload);
        } finally {
            sendLock.unlock();
        }
    }

    /** Sends a frame only if no other send is in progress (heartbeats never queue behind a large reply). */
    boolean trySend(byte type, byte[] body) throws IOException {
        if (!sendLock.tryLock()) {
            return false;
        }
        try {
            send(type, body);
            return true;
        } finally {
            sendLock.unlock();
        }
    }

    /**
     * Receives one frame of at most {@code maxBody} bytes of body and checks its MAC.
     *
     * @return the frame with the MAC removed, or null if the stream ended before a frame began
     * @throws ProtocolViolation if the frame is malformed, too large or fails authentication
     */
    Frame receive(int maxBody) throws IOException {
        return receive(() -> maxBody);
    }

    /** As {@link #receive(int)}, with the body limit asked for once the frame's header has arrived. */
    Frame receive(java.util.function.IntSupplier maxBody) throws IOException {
        Frame frame = RendezvousProtocol.readFrame(in, () -> receiveMac == null ? maxBody.getAsInt()
                : (int) Math.min(Integer.MAX_VALUE, (long) maxBody.getAsInt() + RendezvousProtocol.MAC_BYTES));
        if (frame == null || receiveMac == null) {
            return frame;
        }
        byte[] payload = frame.payload();
        if (payload.length < RendezvousProtocol.MAC_BYTES) {
            throw new ProtocolViolation(RendezvousProtocol.typeName(frame.type()) + " frame of " + payload.length
                    + " bytes is too short to carry its MAC; frames after the handshake are authenticated");
        }
        int bodyLength = payload.length - RendezvousProtocol.MAC_BYTES;
        byte[] body = Arrays.copyOf(payload, bodyLength);
        byte[] expected = seal(receiveMac, clientSide ? SERVER_TO_CLIENT : CLIENT_TO_SERVER, receiveSequence, frame.type(), body);
        if (!RendezvousAuth.matches(expected, Arrays.copyOfRange(payload, bodyLength, payload.length))) {
            throw new ProtocolViolation(RendezvousProtocol.typeName(frame.type()) + " frame number " + receiveSequence
                    + " failed authentication (forged, altered, replayed or reordered)");
        }
        receiveSequence++;
        return new Frame(frame.type(), body);
    }

    private static byte[] seal(Mac mac, byte direction, long sequence, byte type, byte[] body) {
        mac.update(ByteBuffer.allocate(10).put(direction).putLong(sequence).put(type).array());
        mac.update(body);
        return mac.doFinal();
    }

    void close() {
        try {
            socket.close();
        } catch (IOException e) {
            System.getLogger(SecureChannel.class.getName()).log(System.Logger.Level.DEBUG,
                    () -> "ignored error while closing " + socket + ": " + e);
        }
    }
}
