package dev.ar4j.examples.llama.model;


import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;

/**
 * One safetensors file, memory-mapped read-only: an 8-byte little-endian header length
 * {@code N}, {@code N} bytes of JSON header, then the tensors' raw bytes. The header is checked
 * against the file ({@link SafetensorsHeader}) when the file is opened; {@link #data} hands out
 * views of the mapping. The mapping is unmapped by {@link #close()}, after which the views are
 * unusable.
 */
public final class SafetensorsFile implements AutoCloseable {

    /** Largest header accepted (the reference implementation's limit): 100 MB. */
    public static final long MAX_HEADER_BYTES = 100_000_000L;

    private final Path path;
    private final Arena arena;
    private final MemorySegment mapping;
    private final long dataStart;
    private final SafetensorsHeader header;

    private SafetensorsFile(Path path, Arena arena, MemorySegment mapping, long dataStart, SafetensorsHeader header) {
        this.path = path;
        this.arena = arena;
        this.mapping = mapping;
        this.dataStart = dataStart;
        this.header = header;
    }

    /**
     * Opens, checks and maps a file.
     *
     * @param path the {@code .safetensors} file
     * @return the open file
     * @throws ModelFileException naming the file and what is wrong with it
     */
    public static SafetensorsFile open(Path path) {
        String file = path.toString();
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
            long size = channel.size();
            if (size < 8) {
                throw new ModelFileException(file + ": " + size + " bytes, shorter than the 8-byte header length "
                        + "(truncated, or not a safetensors file)");
            }
            ByteBuffer lengthBytes = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
            readFully(channel, lengthBytes, 0, file);
            long n = lengthBytes.getLong(0);
            if (n < 0 || n > MAX_HEADER_BYTES) {
                throw new ModelFileException(file + ": header length " + Long.toUnsignedString(n)
                        + " is over the " + MAX_HEADER_BYTES + "-byte limit (a corrupt length, or not a safetensors file)");
            }
            if (n < 2) {
                throw new ModelFileException(file + ": header length " + n + " cannot hold a JSON object");
            }
            if (n > size - 8) {
                throw new ModelFileException(file + ": header length " + n + " runs past the end of the file ("
                        + size + " bytes): the file is truncated");
            }
            ByteBuffer headerBytes = ByteBuffer.allocate((int) n);
            readFully(channel, headerBytes, 8, file);
            long dataStart = 8 + n;
            SafetensorsHeader header = SafetensorsHeader.parse(file, headerBytes.array(), size - dataStart);
            Arena arena = Arena.ofShared();
            try {
                MemorySegment mapping = channel.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
                return new SafetensorsFile(path, arena, mapping, dataStart, header);
            } catch (IOException | RuntimeException e) {
                arena.close();
                throw e;
            }
        } catch (IOException e) {
            throw new ModelFileException(file + ": cannot be read: " + e.getMessage(), e);
        }
    }

    private static void readFully(FileChannel channel, ByteBuffer into, long position, String file) throws IOException {
        long at = position;
        while (into.hasRemaining()) {
            int read = channel.read(into, at);
            if (read < 0) {
                throw new ModelFileException(file + ": ended after " + at + " bytes while reading the header");
            }
            at += read;
        }
    }

    /**
     * The file.
     *
     * @return the path it was opened from
     */
    public Path path() {
        return path;
    }

    /**
     * The header's tensors.
     *
     * @return tensor name to entry, in the header's order
     */
    public Map<String, TensorEntry> tensors() {
        return header.tensors();
    }

    /**
     * The header's {@code __metadata__}.
     *
     * @return the metadata strings (empty when there are none)
     */
    public Map<String, String> metadata() {
        return header.metadata();
    }

    /**
     * A read-only view of one tensor's bytes in the mapping.
     *
     * @param entry a tensor of this file
     * @return its bytes
     * @throws IllegalArgumentException if the entry is not one of this file's
     * @throws IllegalStateException if the file is closed
     */
    public MemorySegment data(TensorEntry entry) {
        if (!entry.equals(header.tensors().get(entry.name()))) {
            throw new IllegalArgumentException("tensor '" + entry.name() + "' is not one of " + path);
        }
        return mapping.asSlice(dataStart + entry.begin(), entry.byteSize());
    }

    /** Unmaps the file; views from {@link #data} become unusable. Idempotent. */
    @Override
    public void close() {
        if (arena.scope().isAlive()) {
            arena.close();
        }
    }

    @Override
    public String toString() {
        return path + " (" + header.tensors().size() + " tensors)";
    }
}
