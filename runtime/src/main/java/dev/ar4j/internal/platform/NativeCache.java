package dev.ar4j.internal.platform;

import dev.ar4j.ConfigurationException;
import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.Objects;
import java.util.function.UnaryOperator;

/**
 * A content-addressed store for native libraries extracted from jars:
 * {@code <root>/<sha256 of the bytes>/<file name>}, shared by every JVM of the user. A library is
 * written once, by whichever JVM comes first: into a temporary file in the same directory, forced
 * to disk, then moved atomically to its name, so a concurrent JVM sees either no file or the whole
 * file; every use checks the file's hash before it is loaded. A temporary file left by a writer
that was killed is deleted by a later writer once it is {@link #ABANDONED_AFTER} old. Nothing is
written to
 * {@code java.io.tmpdir}, so a JVM killed with {@code kill -9} leaves nothing there.
 *
 * <p>The root is the system property {@value #PROPERTY}, else the environment variable
 * {@value #ENVIRONMENT_VARIABLE}, else {@code ${XDG_CACHE_HOME:-$HOME/.cache}/ar4j/native}.
 */
final class NativeCache {

    /** The system property naming the cache root. */
    static final String PROPERTY = "ar4j.native.cacheDir";

    /** The environment variable naming the cache root (after the property). */
    static final String ENVIRONMENT_VARIABLE = "AR4J_NATIVE_CACHE_DIR";

    /** The suffix of the temporary file a writer renames into place. */
    static final String PART_SUFFIX = ".part";

    /** How old another writer's temporary file must be to count as abandoned. */
    static final Duration ABANDONED_AFTER = Duration.ofMinutes(10);

    private static final System.Logger LOG = System.getLogger(NativeCache.class.getName());

    private final Path root;
    private final String rootSource;

    NativeCache(Path root, String rootSource) {
        this.root = Objects.requireNonNull(root, "root").toAbsolutePath().normalize();
        this.rootSource = Objects.requireNonNull(rootSource, "rootSource");
    }

    /**
     * The cache configured for this JVM.
     *
     * @param property    reads a system property
     * @param environment reads an environment variable
     * @return the cache, not yet created on disk
     */
    static NativeCache configured(UnaryOperator<String> property, UnaryOperator<String> environment) {
        String fromProperty = LibrarySearch.blankToNull(property.apply(PROPERTY));
        if (fromProperty != null) {
            return new NativeCache(Path.of(fromProperty), "system property " + PROPERTY);
        }
        String fromEnvironment = LibrarySearch.blankToNull(environment.apply(ENVIRONMENT_VARIABLE));
        if (fromEnvironment != null) {
            return new NativeCache(Path.of(fromEnvironment), "environment variable " + ENVIRONMENT_VARIABLE);
        }
        String xdg = LibrarySearch.blankToNull(environment.apply("XDG_CACHE_HOME"));
        if (xdg != null) {
            return new NativeCache(Path.of(xdg, "ar4j", "native"), "$XDG_CACHE_HOME/ar4j/native");
        }
        String home = LibrarySearch.blankToNull(property.apply("user.home"));
        if (home == null || home.equals("?")) {
            throw new ConfigurationException("no cache directory: user.home is not set; set -D" + PROPERTY
                    + " or " + ENVIRONMENT_VARIABLE);
        }
        return new NativeCache(Path.of(home, ".cache", "ar4j", "native"), "~/.cache/ar4j/native");
    }

    /** The root directory, e.g. {@code ~/.cache/ar4j/native}. */
    Path root() {
        return root;
    }

    /** How the root was chosen, e.g. "system property ar4j.native.cacheDir", for messages. */
    String rootSource() {
        return rootSource;
    }

    /** A library in the cache, and whether this call wrote it. */
    record Entry(Path file, String sha256, boolean written) {
    }

    /**
     * The cached copy of a resource, written first if it is not there (or is not whole).
     *
     * @param resource the library inside a jar
     * @param fileName the name it must have on disk (its soname)
     * @return the cached file, whose content has the resource's hash
     * @throws IOException if the resource cannot be read, or the cache directory cannot be
     *                     created or written
     */
    Entry store(URL resource, String fileName) throws IOException {
        byte[] bytes;
        try (InputStream in = resource.openStream()) {
            bytes = in.readAllBytes();
        }
        return store(bytes, fileName);
    }

    Entry store(byte[] bytes, String fileName) throws IOException {
        String sha256 = sha256(bytes);
        Path dir = root.resolve(sha256);
        Path file = dir.resolve(fileName);
        if (Files.isRegularFile(file) && sha256(Files.readAllBytes(file)).equals(sha256)) {
            return new Entry(file, sha256, false);
        }
        Files.createDirectories(dir);
        deleteAbandonedParts(dir, fileName);
        Path temporary = Files.createTempFile(dir, "." + fileName + ".", PART_SUFFIX);
        try {
            try (FileChannel channel = FileChannel.open(temporary, StandardOpenOption.WRITE)) {
                ByteBuffer buffer = ByteBuffer.wrap(bytes);
                while (buffer.hasRemaining()) {
                    channel.write(buffer);
                }
                channel.force(true);
            }
            try {
                Files.move(temporary, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                throw new IOException("the file system of " + dir + " cannot rename atomically, so concurrent JVMs"
                        + " could see a partial library there", e);
            }
        } finally {
            Files.deleteIfExists(temporary);
        }
        String written = sha256(Files.readAllBytes(file));
        if (!written.equals(sha256)) {
            throw new IOException(file + " has SHA-256 " + written + " right after it was written with " + sha256
                    + "; something else writes to " + dir);
        }
        return new Entry(file, sha256, true);
    }

    /**
     * Deletes the temporary files of writers that died before their rename (a JVM killed while
     * it wrote): those older than {@link #ABANDONED_AFTER}, so that a live writer's is kept.
     */
    static void deleteAbandonedParts(Path dir, String fileName) {
        Instant cutoff = Instant.now().minus(ABANDONED_AFTER);
        try (DirectoryStream<Path> parts = Files.newDirectoryStream(dir, "." + fileName + ".*" + PART_SUFFIX)) {
            for (Path part : parts) {
                try {
                    if (Files.getLastModifiedTime(part).toInstant().isBefore(cutoff)) {
                        Files.deleteIfExists(part);
                    }
                } catch (IOException e) {
                    LOG.log(System.Logger.Level.DEBUG, () -> "cannot delete the abandoned " + part + ": " + e);
                }
            }
        } catch (IOException e) {
            LOG.log(System.Logger.Level.DEBUG, () -> "cannot list " + dir + ": " + e);
        }
    }

    static String sha256(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK has no SHA-256", e);
        }
    }
}
