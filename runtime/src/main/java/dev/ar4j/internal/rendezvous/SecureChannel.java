package dev.ar4j.internal.rendezvous;
import dev.ar4j.internal.rendezvous.RendezvousProtocol.Header;

import dev.ar4j.internal.rendezvous.RendezvousProtocol.Frame;
import dev.ar4j.internal.rendezvous.RendezvousProtocol.ProtocolViolation;

import javax.crypto.Mac;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.Socket;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.IntSupplier;

/**
 * One end of a rendezvous connection: frames in clear during the handshake, then every frame
 * sealed with a MAC over its direction, sequence number, type and body (see
 * {@link RendezvousProtocol}). Sending is serialized (a heartbeat and a reply may be sent from
 * different threads); receiving is done by one thread.
 *
 * <p>A frame's sequence number is spent only once the whole frame is written: a send that fails
 * before its first byte leaves the channel usable, one cut off midway leaves it broken (later sends
 * fail at once). Bodies are written as they are, never copied; a GET reply is streamed from the
 * stored values. On the server a large incoming frame is first charged to the
 * {@link ServerMemoryBudget}; one that does not fit is read and checked without being stored and
 * reported as {@link FrameNotAdmitted}.
 */
final class SecureChannel {
    private static final byte CLIENT_TO_SERVER = 'C';
    private static final byte SERVER_TO_CLIENT = 'S';
    private static final int DISCARD_CHUNK = 4096;

    /** A frame read and authenticated in full but not kept, for want of memory; the stream is intact. */
    static final class FrameNotAdmitted extends IOException {
        private static final long serialVersionUID = 1L;
        final byte type;
        final int length;
        /** Refused for want of the rank's share of the budget (not for want of heap). */
        final boolean overBudget;

        FrameNotAdmitted(byte type, int length, String reason, boolean overBudget) {
            super(reason, null);
            this.type = type;
            this.length = length;
            this.overBudget = overBudget;
        }
    }

    /** A frame body that feeds the MAC and the stream without being built whole. */
    private interface Body {
        void seal(Mac mac);

        void write(DataOutputStream out) throws IOException;
    }

    private final Socket socket;
    private final DataInputStream in;
    private final DataOutputStream out;
    private final boolean clientSide;
    private final ServerMemoryBudget budget;
    private final ReentrantLock sendLock = new ReentrantLock();
    private final byte[] sealHeader = new byte[10];
    private final byte[] lengthScratch = new byte[4];
    private Mac sendMac;
    private Mac receiveMac;
    private long sendSequence;
    private long receiveSequence;
    private boolean broken;
    private long charged;
    private int chargedRank = -1;
    /** The rank large incoming frames are charged to; -1 until the session's rank is admitted. */
    private volatile int chargeRank = -1;

    SecureChannel(Socket socket, boolean clientSide) throws IOException {
        this(socket, clientSide, null);
    }

    /** A channel whose large incoming frames are charged to {@code budget} (null: not charged). */
    SecureChannel(Socket socket, boolean clientSide, ServerMemoryBudget budget) throws IOException {
        this.socket = socket;
        this.clientSide = clientSide;
        this.budget = budget;
        this.in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
        this.out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream()));
    }

    /** From now on large incoming frames are charged to {@code rank}'s share of the budget. */
    void chargeTo(int rank) {
        chargeRank = rank;
    }

    /** Releases the charge of the frame last received, whose body is no longer needed. */
    void releaseFrame() {
        releaseCharge();
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

    /** The sequence number the next sealed frame sent will carry (for tests). */
    long nextSendSequence() {
        sendLock.lock();
        try {
            return sendSequence;
        } finally {
            sendLock.unlock();
        }
    }

    /** Sends one frame, sealed once the session is established. */
    void send(byte type, byte[] body) throws IOException {
        send(type, body.length, new Body() {
            @Override
            public void seal(Mac mac) {
                mac.update(body);
            }

            @Override
            public void write(DataOutputStream data) throws IOException {
                data.write(body);
            }
        });
    }

    /**
     * Sends {@code values} as one OK-style values payload ({@code int n, n × bytes}), written value by
     * value: nothing the size of the reply is allocated.
     *
     * @throws ProtocolViolation if the payload would exceed {@code maxPayload}; nothing is sent then
     */
    void sendValues(byte type, byte[][] values, long maxPayload) throws IOException {
        long length = RendezvousProtocol.valuesLength(values);
        if (length > maxPayload) {
            throw new ProtocolViolation("the " + values.length + " values total " + length + " bytes, more than the "
                    + maxPayload + " bytes one reply may carry");
        }
        if (length <= ServerMemoryBudget.UNCHARGED_FRAME_BYTES) {
            send(type, RendezvousProtocol.values(values)); // small: one array, one write, one MAC update
            return;
        }
        send(type, length, new Body() {
            @Override
            public void seal(Mac mac) {
                mac.update(intBytes(values.length));
                for (byte[] value : values) {
                    mac.update(intBytes(value.length));
                    mac.update(value);
                }
            }

            @Override
            public void write(DataOutputStream data) throws IOException {
                data.writeInt(values.length);
                for (byte[] value : values) {
                    data.writeInt(value.length);
                    data.write(value);
                }
            }
        });
    }

    private void send(byte type, long bodyLength, Body body) throws IOException {
        sendLock.lock();
        try {
            if (broken) {
                throw new IOException("the connection cannot carry another frame: an earlier one was cut off midway");
            }
            long payloadLength = bodyLength + (sendMac != null ? RendezvousProtocol.MAC_BYTES : 0);
            if (payloadLength > Integer.MAX_VALUE) {
                throw new ProtocolViolation(RendezvousProtocol.typeName(type) + " frame of " + payloadLength
                        + " bytes does not fit a frame");
            }
            byte[] mac = null;
            if (sendMac != null) {
                try {
                    sendMac.update(sealHeader(clientSide ? CLIENT_TO_SERVER : SERVER_TO_CLIENT, sendSequence, type));
                    body.seal(sendMac);
                    mac = sendMac.doFinal();
                } catch (RuntimeException | Error e) {
                    sendMac.reset(); // nothing written, the sequence number not spent
                    throw e;
                }
            }
            boolean complete = false;
            try {
                RendezvousProtocol.writeHeader(out, type, (int) payloadLength);
                body.write(out);
                if (mac != null) {
                    out.write(mac);
                }
                out.flush();
                complete = true;
            } finally {
                if (!complete) {
                    broken = true;
                }
            }
            if (mac != null) {
                sendSequence++;
            }
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
     * @throws FrameNotAdmitted  if the frame was read and authenticated but not kept for want of memory
     */
    Frame receive(int maxBody) throws IOException {
        return receive(() -> maxBody);
    }

    /**
     * As {@link #receive(int)}, with the body limit asked for once the frame's header has arrived.
     * The memory charged for the previous frame is released first: one frame at a time per channel.
     */
    Frame receive(IntSupplier maxBody) throws IOException {
        releaseCharge();
        Header header = RendezvousProtocol.readHeader(in, () -> receiveMac == null ? maxBody.getAsInt()
                : (int) Math.min(Integer.MAX_VALUE, (long) maxBody.getAsInt() + RendezvousProtocol.MAC_BYTES));
        if (header == null) {
            return null;
        }
        int macBytes = receiveMac == null ? 0 : RendezvousProtocol.MAC_BYTES;
        if (header.length() < macBytes) {
            throw new ProtocolViolation(RendezvousProtocol.typeName(header.type()) + " frame of " + header.length()
                    + " bytes is too short to carry its MAC; frames after the handshake are authenticated");
        }
        int bodyLength = header.length() - macBytes;
        String refusal = null;
        boolean overBudget = false;
        byte[] body = null;
        int rank = chargeRank;
        if (budget != null && bodyLength > ServerMemoryBudget.UNCHARGED_FRAME_BYTES && !budget.tryCharge(rank, bodyLength)) {
            refusal = budget.describeRefusal(rank, bodyLength, "a " + RendezvousProtocol.typeName(header.type()) + " request");
            overBudget = true;
        } else {
            charged = budget != null && bodyLength > ServerMemoryBudget.UNCHARGED_FRAME_BYTES ? bodyLength : 0;
            chargedRank = rank;
            try {
                body = new byte[bodyLength];
            } catch (OutOfMemoryError e) {
                releaseCharge();
                refusal = "the rendezvous server ran out of memory (OutOfMemoryError) reading a "
                        + RendezvousProtocol.typeName(header.type()) + " request of " + bodyLength + " bytes; raise the"
                        + " serving JVM's -Xmx or lower ar4j.rdzv.maxServerBytes below it";
            }
        }
        if (body == null) {
            discardAndVerify(header.type(), bodyLength);
            throw new FrameNotAdmitted(header.type(), bodyLength, refusal, overBudget);
        }
        in.readFully(body);
        if (receiveMac == null) {
            return new Frame(header.type(), body);
        }
        byte[] mac = new byte[RendezvousProtocol.MAC_BYTES];
        in.readFully(mac);
        receiveMac.update(sealHeader(clientSide ? SERVER_TO_CLIENT : CLIENT_TO_SERVER, receiveSequence, header.type()));
        receiveMac.update(body);
        verify(header.type(), receiveMac.doFinal(), mac);
        return new Frame(header.type(), body);
    }

    /** Reads a frame body not kept, feeding the MAC chunk by chunk, and checks its MAC. */
    private void discardAndVerify(byte type, int bodyLength) throws IOException {
        byte[] chunk = new byte[DISCARD_CHUNK];
        if (receiveMac != null) {
            receiveMac.update(sealHeader(clientSide ? SERVER_TO_CLIENT : CLIENT_TO_SERVER, receiveSequence, type));
        }
        int left = bodyLength;
        while (left > 0) {
            int n = Math.min(left, chunk.length);
            in.readFully(chunk, 0, n);
            if (receiveMac != null) {
                receiveMac.update(chunk, 0, n);
            }
            left -= n;
        }
        if (receiveMac != null) {
            byte[] mac = new byte[RendezvousProtocol.MAC_BYTES];
            in.readFully(mac);
            verify(type, receiveMac.doFinal(), mac);
        }
    }

    private void verify(byte type, byte[] expected, byte[] actual) throws ProtocolViolation {
        if (!RendezvousAuth.matches(expected, actual)) {
            throw new ProtocolViolation(RendezvousProtocol.typeName(type) + " frame number " + receiveSequence
                    + " failed authentication (forged, altered, replayed or reordered)");
        }
        receiveSequence++;
    }

    private void releaseCharge() {
        if (charged > 0) {
            budget.release(chargedRank, charged);
            charged = 0;
        }
    }

    /** Direction, sequence number and type, in a buffer reused under the lock of its direction. */
    private byte[] sealHeader(byte direction, long sequence, byte type) {
        byte[] header = direction == (clientSide ? CLIENT_TO_SERVER : SERVER_TO_CLIENT) ? sealHeader : new byte[10];
        header[0] = direction;
        for (int i = 0; i < 8; i++) {
            header[1 + i] = (byte) (sequence >>> (56 - 8 * i));
        }
        header[9] = type;
        return header;
    }

    private byte[] intBytes(int value) {
        lengthScratch[0] = (byte) (value >>> 24);
        lengthScratch[1] = (byte) (value >>> 16);
        lengthScratch[2] = (byte) (value >>> 8);
        lengthScratch[3] = (byte) value;
        return lengthScratch;
    }

    void close() {
        try {
            socket.close();
        } catch (IOException e) {
            FailSafeLog.log(System.getLogger(SecureChannel.class.getName()), System.Logger.Level.DEBUG,
                    () -> "ignored error while closing " + socket + ": " + e);
        } finally {
            releaseCharge();
        }
    }
}
