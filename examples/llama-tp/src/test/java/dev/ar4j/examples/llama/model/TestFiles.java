package dev.ar4j.examples.llama.model;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Writes safetensors files for the tests: the real layout, or deliberately broken ones. */
public final class TestFiles {

    private TestFiles() {
    }

    /** A tensor to write: its name, dtype, shape and bytes. */
    public record Tensor(String name, String dtype, long[] shape, byte[] data) {
    }

    /** A well-formed file holding the tensors back to back, in order. */
    public static Path write(Path file, List<Tensor> tensors) throws IOException {
        StringBuilder json = new StringBuilder("{\"__metadata__\":{\"format\":\"pt\"}");
        long at = 0;
        for (Tensor t : tensors) {
            json.append(",\"").append(t.name()).append("\":{\"dtype\":\"").append(t.dtype()).append("\",\"shape\":[");
            for (int i = 0; i < t.shape().length; i++) {
                json.append(i == 0 ? "" : ",").append(t.shape()[i]);
            }
            json.append("],\"data_offsets\":[").append(at).append(',').append(at + t.data().length).append("]}");
            at += t.data().length;
        }
        json.append('}');
        List<byte[]> data = new ArrayList<>();
        for (Tensor t : tensors) {
            data.add(t.data());
        }
        return raw(file, json.toString(), data);
    }

    /** A file of the given header text (padded to 8 bytes with spaces, as the writer does) and data. */
    static Path raw(Path file, String header, List<byte[]> data) throws IOException {
        byte[] h = header.getBytes(StandardCharsets.UTF_8);
        int padded = (h.length + 7) / 8 * 8;
        ByteBuffer out = ByteBuffer.allocate(8 + padded + data.stream().mapToInt(d -> d.length).sum())
                .order(ByteOrder.LITTLE_ENDIAN);
        out.putLong(padded).put(h);
        for (int i = h.length; i < padded; i++) {
            out.put((byte) ' ');
        }
        data.forEach(out::put);
        Files.write(file, out.array());
        return file;
    }

    /** A file whose first 8 bytes say {@code length} and then holds {@code rest}. */
    static Path withLength(Path file, long length, byte[] rest) throws IOException {
        ByteBuffer out = ByteBuffer.allocate(8 + rest.length).order(ByteOrder.LITTLE_ENDIAN);
        out.putLong(length).put(rest);
        Files.write(file, out.array());
        return file;
    }

    /** {@code n} bytes 0, 1, 2, ... */
    public static byte[] counting(int n) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) i;
        }
        return b;
    }
}
