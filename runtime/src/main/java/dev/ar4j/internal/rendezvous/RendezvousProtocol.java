package dev.ar4j.internal.rendezvous;

import dev.ar4j.rendezvous.Rendezvous;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The wire format of {@link TcpRendezvous} and {@link TcpRendezvousServer}, described once.
 *
 * <h2>Frame</h2>
 * Every message is one frame, big-endian:
 * <pre>
 * offset 0  int   magic 0x41523452 ("AR4R")
 * offset 4  byte  protocol version (3)
 * offset 5  byte  type
 * offset 6  int   payload length, checked against the reader's maximum before anything is allocated
 * offset 10       payload
 * </pre>
 * A byte string inside a payload is an {@code int} length and that many bytes; keys are UTF-8.
 *
 * <h2>Handshake (in clear, frames of at most {@value #MAX_HANDSHAKE_PAYLOAD} bytes)</h2>
 * <pre>
 * client HELLO     int rank, int worldSize, long incarnation, 16 bytes client nonce
 * server CHALLENGE 16 bytes server nonce
 * client AUTH      32 bytes HMAC-SHA256(token key, "client" | HELLO payload | server nonce)
 * server WELCOME   32 bytes HMAC-SHA256(token key, "server" | HELLO payload | server nonce)   | ERROR
 * </pre>
 * Before AUTH is verified the server may instead answer ERROR with code 5 (busy): its queue of
 * handshakes in progress is full and this connection waited longest; the client retries after a
 * jittered pause. A GET reply is written value by value from the stored values (its MAC
 * computed as it goes), never built whole in memory.
 * The token never goes on the wire; rank and world size are checked only after AUTH, so a
 * stranger learns nothing about the group. Each side derives the session key
 * HMAC-SHA256(token key, "session" | HELLO payload | server nonce).
 *
 * <h2>Session (every payload ends with a 32-byte MAC)</h2>
 * The MAC is HMAC-SHA256(session key, direction | sequence number | type | body), the sequence
 * number counting the frames of one direction from 0, so a frame cannot be forged, altered,
 * replayed or reordered.
 * <pre>
 * SET       bytes key, bytes value                  → OK (empty) | ERROR
 * GET       long timeoutMillis, int n, n × bytes key → OK: int n, n × bytes value
 *                                                    | TIMEOUT: int m, m × int index of a missing key
 *                                                    | ERROR
 * HEARTBEAT (empty), both directions, no reply
 * BYE       (empty), the client leaves on purpose, no reply
 * ABORT     bytes scope, bytes reason (UTF-8): the client gave up, no reply, allowed while its GET
 *           waits. An empty scope aborts the rank: it counts as lost (PEER_LOST to every other rank)
 *           and every wait that needs its keys, and every wait of its own, ends. A scope (a
 *           sub-group's namespace) ends only the waits for its keys in that scope and its own
 *           waits there, with ERROR code 4; nothing is reported as a loss.
 * PEER_LOST int rank, UTF-8 reason: the server tells every client a rank is lost, no reply
 * ERROR     byte code, int rank, UTF-8 message
 * </pre>
 * Keys start with the rank that owns them (see {@code StoreKeys}). After a malformed frame the
 * server answers ERROR and closes that connection; the server and its other connections carry on.
 */
final class RendezvousProtocol {

    static final int MAGIC = 0x41523452;
    static final byte VERSION = 3;
    static final int HEADER_BYTES = 10;

    /** Longest key on the wire: a user key plus the namespace prefix the collectives add. */
    static final int MAX_KEY_BYTES = Rendezvous.MAX_KEY_BYTES + 64;
    static final int MAX_VALUE_BYTES = Rendezvous.MAX_VALUE_BYTES;
    /** Largest request: a SET of the longest key and the largest value. */
    static final int MAX_REQUEST_PAYLOAD = 4 + MAX_KEY_BYTES + 4 + MAX_VALUE_BYTES;
    /** Largest reply: a GET of many values. */
    static final int MAX_REPLY_PAYLOAD = 1 << 30;
    /** Largest handshake frame: a HELLO is 32 bytes. */
    static final int MAX_HANDSHAKE_PAYLOAD = 64;
    /** Largest ERROR or PEER_LOST message a client accepts. */
    static final int MAX_MESSAGE_PAYLOAD = 64 * 1024;
    static final int NONCE_BYTES = 16;
    static final int MAC_BYTES = 32;
    static final int HELLO_BYTES = 16 + NONCE_BYTES;

    static final byte HELLO = 1;
    static final byte SET = 2;
    static final byte GET = 3;
    static final byte OK = 0x10;
    static final byte TIMEOUT = 0x11;
    static final byte ERROR = 0x12;
    static final byte AUTH = 4;
    static final byte HEARTBEAT = 5;
    static final byte BYE = 6;
    static final byte ABORT = 7;
    static final byte CHALLENGE = 0x13;
    static final byte WELCOME = 0x14;
    static final byte PEER_LOST = 0x15;

    /** ERROR codes: what kind of refusal, so the client raises the matching exception. */
    static final byte CODE_PROTOCOL = 1;
    static final byte CODE_AUTH = 2;
    static final byte CODE_REFUSED = 3;
    static final byte CODE_RANK_LOST = 4;
    /** The server has too many handshakes in progress; the client retries after a pause. */
    static final byte CODE_BUSY = 5;
    /** The rank's share of the server's store is used up; the client raises RendezvousQuotaExceededException. */
    static final byte CODE_QUOTA = 6;

    private RendezvousProtocol() {
    }

    /** One frame: its type byte and its payload. */
    record Frame(byte type, byte[] payload) {
    }

    /** The bytes received break the protocol; the message says how. */
    static final class ProtocolViolation extends IOException {
        private static final long serialVersionUID = 1L;

        ProtocolViolation(String message) {
            super(message);
        }
    }

    static String typeName(byte type) {
        return switch (type) {
            case HELLO -> "HELLO";
            case SET -> "SET";
            case GET -> "GET";
            case OK -> "OK";
            case TIMEOUT -> "TIMEOUT";
            case ERROR -> "ERROR";
            case AUTH -> "AUTH";
            case HEARTBEAT -> "HEARTBEAT";
            case BYE -> "BYE";
            case ABORT -> "ABORT";
            case CHALLENGE -> "CHALLENGE";
            case WELCOME -> "WELCOME";
            case PEER_LOST -> "PEER_LOST";
            default -> String.format("unknown type 0x%02x", type & 0xff);
        };
    }

    static void writeFrame(OutputStream out, byte type, byte[] payload) throws IOException {
        DataOutputStream data = new DataOutputStream(out);
        writeHeader(data, type, payload.length);
        data.write(payload);
        data.flush();
    }

    /** Writes a frame's header; the caller writes the {@code payloadLength} bytes of payload after it. */
    static void writeHeader(DataOutputStream data, byte type, int payloadLength) throws IOException {
        data.writeInt(MAGIC);
        data.writeByte(VERSION);
        data.writeByte(type);
        data.writeInt(payloadLength);
    }

    /** A frame's type and announced payload length, checked against the reader's maximum. */
    record Header(byte type, int length) {
    }

    /**
     * Reads one frame.
     *
     * @return the frame, or null if the stream ended cleanly before its first byte
     * @throws ProtocolViolation on a wrong magic, an unsupported version or an oversize payload
     * @throws EOFException      if the stream ended inside the frame
     */
    static Frame readFrame(DataInputStream in, int maxPayload) throws IOException {
        return readFrame(in, () -> maxPayload);
    }

    /** Reads one frame whose payload limit is asked for once its header has arrived. */
    static Frame readFrame(DataInputStream in, java.util.function.IntSupplier maxPayloadNow) throws IOException {
        Header header = readHeader(in, maxPayloadNow);
        if (header == null) {
            return null;
        }
        byte[] payload = new byte[header.length()];
        in.readFully(payload);
        return new Frame(header.type(), payload);
    }

    /**
     * Reads one frame's header; nothing is allocated for the payload.
     *
     * @return the header, or null if the stream ended cleanly before its first byte
     * @throws ProtocolViolation on a wrong magic, an unsupported version or an oversize payload
     */
    static Header readHeader(DataInputStream in, java.util.function.IntSupplier maxPayloadNow) throws IOException {
        int first = in.read();
        if (first < 0) {
            return null;
        }
        byte[] rest = new byte[HEADER_BYTES - 1];
        in.readFully(rest);
        ByteBuffer header = ByteBuffer.allocate(HEADER_BYTES).put((byte) first).put(rest).flip();
        int magic = header.getInt();
        if (magic != MAGIC) {
            throw new ProtocolViolation(String.format(
                    "not an ar4j rendezvous frame: expected magic 0x%08x (\"AR4R\"), got 0x%08x (\"%s\")",
                    MAGIC, magic, printable(magic)));
        }
        byte version = header.get();
        if (version != VERSION) {
            throw new ProtocolViolation("unsupported rendezvous protocol version " + (version & 0xff)
                    + "; this end speaks version " + VERSION + " (are all ranks running the same ar4j version?)");
        }
        byte type = header.get();
        int length = header.getInt();
        int maxPayload = maxPayloadNow.getAsInt();
        if (length < 0 || length > maxPayload) {
            throw new ProtocolViolation(typeName(type) + " frame announces a payload of " + (length & 0xffffffffL)
                    + " bytes, more than the maximum of " + maxPayload + " bytes");
        }
        return new Header(type, length);
    }

    private static String printable(int word) {
        StringBuilder text = new StringBuilder();
        for (int shift = 24; shift >= 0; shift -= 8) {
            int c = (word >>> shift) & 0xff;
            text.append(c >= 0x20 && c < 0x7f ? (char) c : '.');
        }
        return text.toString();
    }

    // ---- payload encoding ----

    static byte[] hello(int rank, int worldSize, long incarnation, byte[] clientNonce) {
        return ByteBuffer.allocate(HELLO_BYTES).putInt(rank).putInt(worldSize).putLong(incarnation)
                .put(clientNonce).array();
    }

    static byte[] set(String key, byte[] value) {
        PayloadWriter writer = new PayloadWriter();
        writer.bytes(key.getBytes(StandardCharsets.UTF_8));
        writer.bytes(value);
        return writer.toByteArray();
    }

    static byte[] get(long timeoutMillis, List<String> keys) {
        PayloadWriter writer = new PayloadWriter();
        writer.longValue(timeoutMillis);
        writer.intValue(keys.size());
        for (String key : keys) {
            writer.bytes(key.getBytes(StandardCharsets.UTF_8));
        }
        return writer.toByteArray();
    }

    /** The longest ABORT reason, in UTF-8 bytes; a longer one is cut by the sender. */
    static final int MAX_ABORT_REASON_BYTES = 4096;

    static byte[] abort(String scope, String reason) {
        byte[] text = reason.getBytes(StandardCharsets.UTF_8);
        if (text.length > MAX_ABORT_REASON_BYTES) {
            text = java.util.Arrays.copyOf(text, MAX_ABORT_REASON_BYTES);
        }
        PayloadWriter writer = new PayloadWriter();
        writer.bytes(scope.getBytes(StandardCharsets.UTF_8));
        writer.bytes(text);
        return writer.toByteArray();
    }

    static byte[] values(byte[][] values) {
        PayloadWriter writer = new PayloadWriter();
        writer.intValue(values.length);
        for (byte[] value : values) {
            writer.bytes(value);
        }
        return writer.toByteArray();
    }

    /** The length of {@link #values}'s encoding of {@code values}, without building it. */
    static long valuesLength(byte[][] values) {
        long total = 4;
        for (byte[] value : values) {
            total += 4 + value.length;
        }
        return total;
    }

    static byte[] missing(int[] indices) {
        ByteBuffer buffer = ByteBuffer.allocate(4 + 4 * indices.length).putInt(indices.length);
        for (int index : indices) {
            buffer.putInt(index);
        }
        return buffer.array();
    }

    static byte[] error(byte code, int rank, String message) {
        byte[] text = message.getBytes(StandardCharsets.UTF_8);
        if (text.length > MAX_MESSAGE_PAYLOAD - 5) {
            text = java.util.Arrays.copyOf(text, MAX_MESSAGE_PAYLOAD - 5);
        }
        return ByteBuffer.allocate(5 + text.length).put(code).putInt(rank).put(text).array();
    }

    static byte[] peerLost(int rank, String reason) {
        return error((byte) 0, rank, reason);
    }

    // ---- payload decoding ----

    record HelloRequest(int rank, int worldSize, long incarnation) {
    }

    /** An ERROR or PEER_LOST payload. */
    record Refusal(byte code, int rank, String message) {
    }

    record SetRequest(String key, byte[] value) {
    }

    record GetRequest(long timeoutMillis, List<String> keys) {
    }

    /** An ABORT: the scope (empty: the whole rank) and the reason. */
    record AbortRequest(String scope, String reason) {
    }

    static AbortRequest parseAbort(byte[] payload) throws ProtocolViolation {
        PayloadReader reader = new PayloadReader(payload, "ABORT");
        byte[] scope = reader.bytes(MAX_KEY_BYTES, "scope");
        byte[] reason = reader.bytes(MAX_ABORT_REASON_BYTES, "reason");
        reader.expectEnd();
        return new AbortRequest(reader.utf8(scope, "scope"), new String(reason, StandardCharsets.UTF_8));
    }

    static HelloRequest parseHello(byte[] payload) throws ProtocolViolation {
        PayloadReader reader = new PayloadReader(payload, "HELLO");
        HelloRequest hello = new HelloRequest(reader.intValue("rank"), reader.intValue("world size"),
                reader.longValue("incarnation"));
        reader.fixed(NONCE_BYTES, "client nonce");
        reader.expectEnd();
        return hello;
    }

    /** A SET whose value is left where it arrived: {@code length} bytes of {@code payload} from {@code offset}. */
    record SetView(String key, byte[] payload, int offset, int length) {
    }

    /** Parses a SET without copying its value, so that the server charges the copy before making it. */
    static SetView parseSetView(byte[] payload) throws ProtocolViolation {
        PayloadReader reader = new PayloadReader(payload, "SET");
        String key = reader.key();
        int[] value = reader.span(MAX_VALUE_BYTES, "value");
        reader.expectEnd();
        return new SetView(key, payload, value[0], value[1]);
    }

    static SetRequest parseSet(byte[] payload) throws ProtocolViolation {
        PayloadReader reader = new PayloadReader(payload, "SET");
        SetRequest set = new SetRequest(reader.key(), reader.bytes(MAX_VALUE_BYTES, "value"));
        reader.expectEnd();
        return set;
    }

    static GetRequest parseGet(byte[] payload, int maxKeys) throws ProtocolViolation {
        PayloadReader reader = new PayloadReader(payload, "GET");
        long timeoutMillis = reader.longValue("timeout");
        if (timeoutMillis < 0) {
            throw new ProtocolViolation("GET timeout must be >= 0 ms, got " + timeoutMillis);
        }
        int count = reader.count("key count");
        if (count > maxKeys) {
            throw new ProtocolViolation("GET of " + count + " keys exceeds the maximum of " + maxKeys
                    + " keys per read (ar4j.rdzv.maxKeysPerGet)");
        }
        List<String> keys = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            keys.add(reader.key());
        }
        reader.expectEnd();
        return new GetRequest(timeoutMillis, keys);
    }

    static byte[][] parseValues(byte[] payload) throws ProtocolViolation {
        PayloadReader reader = new PayloadReader(payload, "OK");
        int count = reader.count("value count");
        byte[][] values = new byte[count][];
        for (int i = 0; i < count; i++) {
            values[i] = reader.bytes(MAX_VALUE_BYTES, "value");
        }
        reader.expectEnd();
        return values;
    }

    static int[] parseMissing(byte[] payload) throws ProtocolViolation {
        PayloadReader reader = new PayloadReader(payload, "TIMEOUT");
        int count = reader.count("missing key count");
        int[] indices = new int[count];
        for (int i = 0; i < count; i++) {
            indices[i] = reader.intValue("missing key index");
        }
        reader.expectEnd();
        return indices;
    }

    static Refusal parseError(byte[] payload) {
        if (payload.length < 5) {
            return new Refusal(CODE_PROTOCOL, -1, "(malformed ERROR of " + payload.length + " bytes)");
        }
        ByteBuffer buffer = ByteBuffer.wrap(payload);
        byte code = buffer.get();
        int rank = buffer.getInt();
        return new Refusal(code, rank, new String(payload, 5, payload.length - 5, StandardCharsets.UTF_8));
    }

    private static final class PayloadWriter {
        private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        private final DataOutputStream data = new DataOutputStream(bytes);

        void intValue(int v) {
            try {
                data.writeInt(v);
            } catch (IOException impossible) {
                throw new java.io.UncheckedIOException(impossible);
            }
        }

        void longValue(long v) {
            try {
                data.writeLong(v);
            } catch (IOException impossible) {
                throw new java.io.UncheckedIOException(impossible);
            }
        }

        void bytes(byte[] v) {
            intValue(v.length);
            bytes.writeBytes(v);
        }

        byte[] toByteArray() {
            return bytes.toByteArray();
        }
    }

    /** Reads a payload with every length checked against what is left and against its maximum. */
    private static final class PayloadReader {
        private final ByteBuffer buffer;
        private final String frame;

        PayloadReader(byte[] payload, String frame) {
            this.buffer = ByteBuffer.wrap(payload);
            this.frame = frame;
        }

        int intValue(String what) throws ProtocolViolation {
            try {
                return buffer.getInt();
            } catch (BufferUnderflowException e) {
                throw truncated(what);
            }
        }

        long longValue(String what) throws ProtocolViolation {
            try {
                return buffer.getLong();
            } catch (BufferUnderflowException e) {
                throw truncated(what);
            }
        }

        /** A count of items of at least four bytes each, so it cannot exceed a quarter of what is left. */
        int count(String what) throws ProtocolViolation {
            int count = intValue(what);
            if (count < 0 || count > buffer.remaining() / 4) {
                throw new ProtocolViolation(frame + " payload: " + what + " " + count + " does not fit the "
                        + buffer.remaining() + " bytes that follow it");
            }
            return count;
        }

        byte[] bytes(int max, String what) throws ProtocolViolation {
            int length = intValue(what + " length");
            if (length < 0 || length > max) {
                throw new ProtocolViolation(frame + " payload: " + what + " of " + (length & 0xffffffffL)
                        + " bytes exceeds the maximum of " + max + " bytes");
            }
            if (length > buffer.remaining()) {
                throw truncated(what);
            }
            byte[] out = new byte[length];
            buffer.get(out);
            return out;
        }

        /** A byte string's offset and length in the payload, skipped over without a copy. */
        int[] span(int max, String what) throws ProtocolViolation {
            int length = intValue(what + " length");
            if (length < 0 || length > max) {
                throw new ProtocolViolation(frame + " payload: " + what + " of " + (length & 0xffffffffL)
                        + " bytes exceeds the maximum of " + max + " bytes");
            }
            if (length > buffer.remaining()) {
                throw truncated(what);
            }
            int offset = buffer.position();
            buffer.position(offset + length);
            return new int[] {offset, length};
        }

        byte[] fixed(int length, String what) throws ProtocolViolation {
            if (length > buffer.remaining()) {
                throw truncated(what);
            }
            byte[] out = new byte[length];
            buffer.get(out);
            return out;
        }

        String key() throws ProtocolViolation {
            byte[] raw = bytes(MAX_KEY_BYTES, "key");
            if (raw.length == 0) {
                throw new ProtocolViolation(frame + " payload: empty key");
            }
            return utf8(raw, "key");
        }

        String utf8(byte[] raw, String what) throws ProtocolViolation {
            try {
                return StandardCharsets.UTF_8.newDecoder()
                        .onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT)
                        .decode(ByteBuffer.wrap(raw)).toString();
            } catch (CharacterCodingException e) {
                throw new ProtocolViolation(frame + " payload: " + what + " is not valid UTF-8");
            }
        }

        void expectEnd() throws ProtocolViolation {
            if (buffer.hasRemaining()) {
                throw new ProtocolViolation(frame + " payload has " + buffer.remaining() + " unexpected trailing bytes");
            }
        }

        private ProtocolViolation truncated(String what) {
            return new ProtocolViolation(frame + " payload is truncated: it ends before the " + what);
        }
    }
}
