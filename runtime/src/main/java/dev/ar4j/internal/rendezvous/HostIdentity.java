package dev.ar4j.internal.rendezvous;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;

/**
 * Which host (and which boot of it) a rank runs on. Two ranks share a host exactly when their
 * identities are equal; ranks learn each other's by all-gathering {@link #toBytes()} (see
 * {@link HostLayout#exchange}). The boot id tells apart two machines that were given the same host
 * name, and a host from itself before a reboot.
 *
 * @param hostname the host name, never blank
 * @param bootId   the Linux boot id ({@code /proc/sys/kernel/random/boot_id}), or empty where the
 *                 system has none
 */
public record HostIdentity(String hostname, String bootId) {

    private static final System.Logger LOG = System.getLogger(HostIdentity.class.getName());
    private static final Path HOSTNAME_FILE = Path.of("/proc/sys/kernel/hostname");
    private static final Path BOOT_ID_FILE = Path.of("/proc/sys/kernel/random/boot_id");
    private static final char SEPARATOR = '\n';

    /**
     * Checks the parts.
     *
     * @throws IllegalArgumentException if the host name is blank or either part contains a line break
     */
    public HostIdentity {
        Objects.requireNonNull(hostname, "hostname");
        Objects.requireNonNull(bootId, "bootId");
        if (hostname.isBlank()) {
            throw new IllegalArgumentException("host name must not be blank");
        }
        if (hostname.indexOf(SEPARATOR) >= 0 || bootId.indexOf(SEPARATOR) >= 0) {
            throw new IllegalArgumentException("host name and boot id must not contain line breaks");
        }
    }

    /**
     * This host: its name from {@code /proc/sys/kernel/hostname}, else {@code HOSTNAME}, else
     * {@code COMPUTERNAME}, else the JDK's local host name; its boot id from
     * {@code /proc/sys/kernel/random/boot_id}, or empty.
     *
     * @return this host's identity
     */
    public static HostIdentity local() {
        return read(HOSTNAME_FILE, BOOT_ID_FILE, System.getenv());
    }

    /** {@link #local()} with the files and environment given, so it can be tested. */
    static HostIdentity read(Path hostnameFile, Path bootIdFile, Map<String, String> environment) {
        String hostname = firstLine(hostnameFile);
        if (hostname == null) {
            hostname = nonBlank(environment.get("HOSTNAME"));
        }
        if (hostname == null) {
            hostname = nonBlank(environment.get("COMPUTERNAME"));
        }
        if (hostname == null) {
            try {
                hostname = InetAddress.getLocalHost().getHostName();
            } catch (IOException e) {
                LOG.log(System.Logger.Level.WARNING, "cannot tell this host's name (" + e + "); using 'localhost'");
                hostname = "localhost";
            }
        }
        String bootId = firstLine(bootIdFile);
        return new HostIdentity(hostname, bootId == null ? "" : bootId);
    }

    private static String firstLine(Path file) {
        if (!Files.isReadable(file)) {
            return null;
        }
        try {
            String text = Files.readString(file, StandardCharsets.UTF_8);
            int end = text.indexOf('\n');
            return nonBlank(end < 0 ? text : text.substring(0, end));
        } catch (IOException e) {
            LOG.log(System.Logger.Level.DEBUG, () -> "cannot read " + file + ": " + e);
            return null;
        }
    }

    private static String nonBlank(String text) {
        return text == null || text.isBlank() ? null : text.trim();
    }

    /**
     * A stable text key, {@code hostname/bootId}, for maps and logs.
     *
     * @return the host name, followed by {@code /} and the boot id when there is one
     */
    public String key() {
        return bootId.isEmpty() ? hostname : hostname + "/" + bootId;
    }

    /**
     * The identity as bytes for a rendezvous: UTF-8 {@code hostname \n bootId}.
     *
     * @return a new array with the encoded identity
     */
    public byte[] toBytes() {
        return (hostname + SEPARATOR + bootId).getBytes(StandardCharsets.UTF_8);
    }

    /**
     * Reads what {@link #toBytes()} wrote.
     *
     * @param bytes the bytes of a {@link #toBytes()} call, possibly from another rank
     * @return the identity they encode
     * @throws IllegalArgumentException if the bytes are not such an identity
     * @throws NullPointerException if {@code bytes} is {@code null}
     */
    public static HostIdentity fromBytes(byte[] bytes) {
        String text = new String(bytes, StandardCharsets.UTF_8);
        int split = text.indexOf(SEPARATOR);
        if (split < 0 || text.indexOf(SEPARATOR, split + 1) >= 0) {
            throw new IllegalArgumentException("not a host identity: expected UTF-8 'hostname\\nbootId', got "
                    + bytes.length + " bytes");
        }
        return new HostIdentity(text.substring(0, split), text.substring(split + 1));
    }
}
