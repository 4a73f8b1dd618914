package dev.ar4j.examples.llama.model;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SafetensorsFileTest {

    @TempDir
    Path dir;

    private ModelFileException refused(Path file) {
        return assertThrows(ModelFileException.class, () -> SafetensorsFile.open(file).close());
    }

    private static void mentions(Exception e, String... parts) {
        for (String p : parts) {
            assertTrue(e.getMessage().contains(p), () -> "'" + e.getMessage() + "' does not mention '" + p + "'");
        }
    }

    @Test
    void readsTensorsMetadataAndBytes() throws IOException {
        byte[] a = TestFiles.counting(2 * 3 * 2);
        byte[] b = TestFiles.counting(4 * 4);
        Path f = TestFiles.write(dir.resolve("m.safetensors"), List.of(
                new TestFiles.Tensor("a", "BF16", new long[] {2, 3}, a),
                new TestFiles.Tensor("b", "F32", new long[] {4}, b)));
        try (SafetensorsFile file = SafetensorsFile.open(f)) {
            assertEquals(List.of("a", "b"), List.copyOf(file.tensors().keySet()));
            assertEquals("pt", file.metadata().get("format"));
            TensorEntry ea = file.tensors().get("a");
            assertEquals(TensorDType.BF16, ea.dtype());
            assertArrayEquals(new long[] {2, 3}, ea.shape());
            assertEquals(12, ea.byteSize());
            MemorySegment sb = file.data(file.tensors().get("b"));
            assertArrayEquals(b, sb.toArray(ValueLayout.JAVA_BYTE));
            assertArrayEquals(a, file.data(ea).toArray(ValueLayout.JAVA_BYTE));
        }
    }

    @Test
    void truncatedBeforeTheLength() throws IOException {
        Path f = dir.resolve("t.safetensors");
        Files.write(f, new byte[] {1, 2, 3});
        mentions(refused(f), f.toString(), "shorter than the 8-byte header length");
    }

    @Test
    void truncatedHeader() throws IOException {
        Path f = TestFiles.withLength(dir.resolve("t.safetensors"), 64, "{\"a\":".getBytes(StandardCharsets.UTF_8));
        mentions(refused(f), f.toString(), "header length 64 runs past the end of the file", "truncated");
    }

    @Test
    void truncatedData() throws IOException {
        Path f = TestFiles.raw(dir.resolve("t.safetensors"),
                "{\"w\":{\"dtype\":\"BF16\",\"shape\":[4,4],\"data_offsets\":[0,32]}}", List.of(new byte[20]));
        mentions(refused(f), f.toString(), "tensor 'w'", "past the data section's 20 bytes", "truncated");
    }

    @Test
    void oversizedHeaderLength() throws IOException {
        Path f = TestFiles.withLength(dir.resolve("o.safetensors"), 1L << 40, new byte[16]);
        mentions(refused(f), f.toString(), "over the 100000000-byte limit");
        Path g = TestFiles.withLength(dir.resolve("n.safetensors"), -5, new byte[16]);
        mentions(refused(g), g.toString(), Long.toUnsignedString(-5L), "limit");
    }

    @Test
    void overlappingTensors() throws IOException {
        Path f = TestFiles.raw(dir.resolve("ov.safetensors"), "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                + "\"y\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", List.of(new byte[12]));
        mentions(refused(f), f.toString(), "tensor 'y'", "overlap tensor 'x'");
    }

    @Test
    void holeAndTrailingBytes() throws IOException {
        Path hole = TestFiles.raw(dir.resolve("h.safetensors"),
                "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", List.of(new byte[8]));
        mentions(refused(hole), "bytes [0, 4)", "belong to no tensor", "'x'");
        Path tail = TestFiles.raw(dir.resolve("tail.safetensors"),
                "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", List.of(new byte[9]));
        mentions(refused(tail), tail.toString(), "5 bytes after the last tensor");
    }

    /** A dtype this reader does not know opens (its bytes unchecked against its shape); newer ones are sized. */
    @Test
    void unknownAndNewerDtypesOpen() throws IOException {
        Path f = TestFiles.raw(dir.resolve("d.safetensors"), "{\"w\":{\"dtype\":\"BF17\",\"shape\":[1],"
                + "\"data_offsets\":[0,3]},\"s\":{\"dtype\":\"F8_E8M0\",\"shape\":[2,2],\"data_offsets\":[3,7]},"
                + "\"b\":{\"dtype\":\"F4\",\"shape\":[2,3],\"data_offsets\":[7,10]},"
                + "\"c\":{\"dtype\":\"C64\",\"shape\":[1],\"data_offsets\":[10,18]}}", List.of(new byte[18]));
        try (SafetensorsFile file = SafetensorsFile.open(f)) {
            TensorEntry w = file.tensors().get("w");
            assertEquals(TensorDType.UNKNOWN, w.dtype());
            assertEquals("BF17", w.dtypeName());
            assertEquals(3, file.data(w).byteSize());
            assertEquals(TensorDType.F8_E8M0, file.tensors().get("s").dtype());
            assertEquals(TensorDType.F4, file.tensors().get("b").dtype());
            assertEquals(TensorDType.C64, file.tensors().get("c").dtype());
            assertEquals("F8_E8M0", file.tensors().get("s").dtypeName());
        }
        // A known newer dtype is still sized: 4 F8_E8M0 elements are 4 bytes, not 5.
        Path wrong = TestFiles.raw(dir.resolve("w.safetensors"),
                "{\"s\":{\"dtype\":\"F8_E8M0\",\"shape\":[4],\"data_offsets\":[0,5]}}", List.of(new byte[5]));
        mentions(refused(wrong), "tensor 's'", "hold 5 bytes", "is 4 bytes");
    }

    @Test
    void misTypedHeaders() throws IOException {
        Path f4 = TestFiles.raw(dir.resolve("f4.safetensors"),
                "{\"w\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,2]}}", List.of(new byte[2]));
        mentions(refused(f4), "tensor 'w'", "3 elements of F4", "not a whole number of bytes");
        Path sizeMismatch = TestFiles.raw(dir.resolve("s.safetensors"),
                "{\"w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,6]}}", List.of(new byte[6]));
        mentions(refused(sizeMismatch), "tensor 'w'", "hold 6 bytes", "is 12 bytes");
        Path shapeText = TestFiles.raw(dir.resolve("st.safetensors"),
                "{\"w\":{\"dtype\":\"F32\",\"shape\":\"3\",\"data_offsets\":[0,12]}}", List.of(new byte[12]));
        mentions(refused(shapeText), "tensor 'w'", "shape", "expected an array");
        Path negative = TestFiles.raw(dir.resolve("neg.safetensors"),
                "{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,0]}}", List.of());
        mentions(refused(negative), "shape[0] is negative");
        Path fraction = TestFiles.raw(dir.resolve("fr.safetensors"),
                "{\"w\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", List.of(new byte[4]));
        mentions(refused(fraction), "shape[0]", "not a whole number");
        Path offsets = TestFiles.raw(dir.resolve("of.safetensors"),
                "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", List.of(new byte[4]));
        mentions(refused(offsets), "data_offsets [4, 0] is not a range");
        Path missing = TestFiles.raw(dir.resolve("mi.safetensors"),
                "{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", List.of());
        mentions(refused(missing), "tensor 'w'", "data_offsets is missing");
        Path extraKey = TestFiles.raw(dir.resolve("ek.safetensors"),
                "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1}}", List.of(new byte[4]));
        mentions(refused(extraKey), "unknown key 'x'");
        Path metadata = TestFiles.raw(dir.resolve("md.safetensors"), "{\"__metadata__\":{\"a\":1}}", List.of());
        mentions(refused(metadata), "__metadata__.a", "expected a string");
        Path huge = TestFiles.raw(dir.resolve("hu.safetensors"),
                "{\"w\":{\"dtype\":\"F64\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,0]}}", List.of());
        mentions(refused(huge), "does not fit 64 bits");
    }

    @Test
    void notJsonNotAnObjectNotUtf8() throws IOException {
        Path notJson = TestFiles.raw(dir.resolve("nj.safetensors"), "{\"w\": [", List.of());
        mentions(refused(notJson), notJson.toString(), "not valid JSON");
        Path array = TestFiles.raw(dir.resolve("arr.safetensors"), "[1, 2]", List.of());
        mentions(refused(array), "does not start with '{'");
        byte[] bad = {'{', '"', (byte) 0xC3, (byte) 0x28, '"', ':', '1', '}'};
        Path f = TestFiles.withLength(dir.resolve("u.safetensors"), bad.length, bad);
        mentions(refused(f), "not UTF-8");
    }

    @Test
    void dataRefusesForeignEntries() throws IOException {
        Path f = TestFiles.write(dir.resolve("m.safetensors"),
                List.of(new TestFiles.Tensor("a", "F32", new long[] {1}, new byte[4])));
        try (SafetensorsFile file = SafetensorsFile.open(f)) {
            TensorEntry foreign = new TensorEntry("a", TensorDType.F32, new long[] {1}, 0, 8);
            assertThrows(IllegalArgumentException.class, () -> file.data(foreign));
        }
        SafetensorsFile closed = SafetensorsFile.open(f);
        TensorEntry a = closed.tensors().get("a");
        closed.close();
        closed.close();
        assertThrows(IllegalStateException.class, () -> closed.data(a).get(ValueLayout.JAVA_BYTE, 0));
    }

    @Test
    void scalarAndEmptyTensors() throws IOException {
        Path f = TestFiles.write(dir.resolve("m.safetensors"), List.of(
                new TestFiles.Tensor("s", "I64", new long[] {}, new byte[8]),
                new TestFiles.Tensor("e", "F16", new long[] {0, 7}, new byte[0])));
        try (SafetensorsFile file = SafetensorsFile.open(f)) {
            assertEquals(8, file.tensors().get("s").byteSize());
            assertEquals(0, file.tensors().get("e").byteSize());
            assertTrue(Arrays.equals(new long[] {0, 7}, file.tensors().get("e").shape()));
        }
    }
}
