package dev.ar4j.examples.llama.it;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The reader of {@code make_reference.py}'s output, on tiny files written here (no GPU). */
class ReferenceModelTest {

    static final int VOCAB = 3;

    @TempDir
    Path root;

    /** Rows of VOCAB floats, value {@code 100 * (first + row) + column}. */
    private static void writeRows(Path file, int first, int rows) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(4 * rows * VOCAB).order(ByteOrder.LITTLE_ENDIAN);
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < VOCAB; c++) {
                b.putFloat(100f * (first + r) + c);
            }
        }
        Files.write(file, b.array());
    }

    /** A reference of a prompt of {@code prompt} tokens with {@code rows} prefill rows (format 1 when
     *  {@code firstPosition} is null: no first_position key). */
    private Path write(String name, int version, int prompt, int rows, Integer firstPosition) throws IOException {
        Path dir = Files.createDirectories(root.resolve(name));
        StringBuilder ids = new StringBuilder();
        for (int i = 0; i < prompt; i++) {
            ids.append(i == 0 ? "" : ",").append(7 + i);
        }
        int first = firstPosition == null ? 0 : firstPosition;
        writeRows(dir.resolve("prefill_logits.f32"), first, rows);
        writeRows(dir.resolve("decode_logits.f32"), prompt, 2);
        Files.writeString(dir.resolve("reference.json"), """
                {"format_version": %d, "name": "%s", "model_dir": "model",
                 "rope": {"inv_freq": [1.0, 0.5]%s},
                 "prompt": [%s], "tokens": [2, 1, 0],
                 "prefill_logits": {"file": "prefill_logits.f32", "shape": [%d, %d]%s,
                                    "dtype": "float32", "byte_order": "little"},
                 "decode_logits": {"file": "decode_logits.f32", "shape": [2, %d], "dtype": "float32",
                                   "byte_order": "little"},
                 "margin_ok": true}
                """.formatted(version, name, version >= 3 ? ", \"default_inv_freq\": [1.0, 0.8]" : "", ids, rows, VOCAB,
                firstPosition == null ? "" : ", \"first_position\": " + firstPosition, VOCAB));
        return dir;
    }

    @Test
    void readsVersion1WithEveryPromptRow() throws IOException {
        write("v1", 1, 4, 4, null);
        Files.writeString(root.resolve("index.json"), "{\"format_version\": 1, \"models\": [\"v1\"]}");
        assertEquals(List.of("v1"), ReferenceModel.names(root));
        ReferenceModel m = ReferenceModel.read(root, "v1");
        assertEquals(0, m.prefillFirst());
        assertEquals(4, m.prefillLogits().length);
        assertArrayEquals(new float[] {300, 301, 302}, m.prefillLogits()[3]);
        assertArrayEquals(new float[] {500, 501, 502}, m.decodeLogits()[1]);
        assertArrayEquals(new int[] {7, 8, 9, 10}, m.prompt());
        assertArrayEquals(new int[] {2, 1, 0}, m.tokens());
        assertArrayEquals(new float[] {1f, 0.5f}, m.invFreq());
        assertEquals(root.resolve("v1").resolve("model"), m.modelDir());
        assertTrue(m.marginOk());
    }

    @Test
    void readsVersion2WithTheLastPromptRows() throws IOException {
        write("long", 2, 20, 8, 12);
        ReferenceModel m = ReferenceModel.read(root, "long");
        assertEquals(12, m.prefillFirst());
        assertEquals(8, m.prefillLogits().length);
        // Row s is prompt position first + s; the last row is the last position.
        assertArrayEquals(new float[] {1200, 1201, 1202}, m.prefillLogits()[0]);
        assertArrayEquals(new float[] {1900, 1901, 1902}, m.prefillLogits()[7]);
        assertArrayEquals(new float[] {2000, 2001, 2002}, m.decodeLogits()[0]);
        assertEquals(20, m.prompt().length);
    }

    @Test
    void readsVersion3WithTheDefaultFrequencies() throws IOException {
        write("rope64", 3, 8, 8, 0);
        ReferenceModel m = ReferenceModel.read(root, "rope64");
        assertArrayEquals(new float[] {1f, 0.8f}, m.defaultInvFreq());
        assertArrayEquals(new float[] {1f, 0.5f}, m.invFreq());
        assertEquals(null, ReferenceModel.read(root, write("v2", 2, 8, 8, 0).getFileName().toString()).defaultInvFreq());
    }

    @Test
    void refusesRowsThatDoNotEndAtThePromptsLastPosition() throws IOException {
        write("short", 2, 20, 8, 10);
        IOException e = assertThrows(IOException.class, () -> ReferenceModel.read(root, "short"));
        assertTrue(e.getMessage().contains("8 rows from position 10"), e.getMessage());
        write("v1partial", 1, 20, 8, null);
        assertThrows(IOException.class, () -> ReferenceModel.read(root, "v1partial"));
    }

    @Test
    void refusesAnUnknownFormatVersion() throws IOException {
        write("v4", 4, 4, 4, 0);
        IOException e = assertThrows(IOException.class, () -> ReferenceModel.read(root, "v4"));
        assertTrue(e.getMessage().contains("format_version 4"), e.getMessage());
    }

    @Test
    void refusesALogitsFileOfTheWrongSize() throws IOException {
        Path dir = write("cut", 2, 4, 4, 0);
        Files.write(dir.resolve("decode_logits.f32"), new byte[5]);
        IOException e = assertThrows(IOException.class, () -> ReferenceModel.read(root, "cut"));
        assertTrue(e.getMessage().contains("5 bytes"), e.getMessage());
    }
}
