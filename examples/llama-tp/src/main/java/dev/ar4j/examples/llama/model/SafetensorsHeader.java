package dev.ar4j.examples.llama.model;

import com.fasterxml.jackson.jr.ob.JSON;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Parses and checks the JSON header of a safetensors file: every tensor's shape is non-negative,
 * its {@code data_offsets} lie inside the data section and hold exactly
 * {@code product(shape) * dtype bits / 8} bytes (unchecked for a dtype this reader does not
 * know, kept as {@link TensorDType#UNKNOWN} with its name), and the tensors tile the
 * data section with no overlap, no hole and nothing after the last. {@code __metadata__} (a map
 * of strings) is allowed and kept.
 */
public final class SafetensorsHeader {

    /** The key of the optional string-to-string metadata. */
    public static final String METADATA_KEY = "__metadata__";

    private final Map<String, TensorEntry> tensors;
    private final Map<String, String> metadata;

    private SafetensorsHeader(Map<String, TensorEntry> tensors, Map<String, String> metadata) {
        this.tensors = tensors;
        this.metadata = metadata;
    }

    /**
     * The tensors, in the header's order.
     *
     * @return an unmodifiable map from tensor name to entry
     */
    public Map<String, TensorEntry> tensors() {
        return tensors;
    }

    /**
     * The {@code __metadata__} strings (empty when the header has none).
     *
     * @return an unmodifiable map
     */
    public Map<String, String> metadata() {
        return metadata;
    }

    /**
     * Parses a header.
     *
     * @param file      the file's name, for messages
     * @param header    the header's bytes (UTF-8 JSON, possibly padded with trailing spaces)
     * @param dataBytes bytes in the file after the header
     * @return the checked header
     * @throws ModelFileException naming the file, the tensor and what is wrong
     */
    public static SafetensorsHeader parse(String file, byte[] header, long dataBytes) {
        String text = decode(file, header);
        if (!text.startsWith("{")) {
            throw new ModelFileException(file + ": the safetensors header does not start with '{' (not a "
                    + "safetensors file, or a corrupt header length)");
        }
        Map<String, Object> root;
        try {
            root = JsonValues.object(JSON.std.anyFrom(text), file + ": header");
        } catch (IOException e) {
            throw new ModelFileException(file + ": the safetensors header is not valid JSON: " + e.getMessage(), e);
        }
        Map<String, TensorEntry> tensors = new LinkedHashMap<>();
        Map<String, String> metadata = Map.of();
        for (Map.Entry<String, Object> member : root.entrySet()) {
            if (member.getKey().equals(METADATA_KEY)) {
                metadata = metadata(file, member.getValue());
            } else {
                TensorEntry t = tensor(file, member.getKey(), member.getValue(), dataBytes);
                tensors.put(t.name(), t);
            }
        }
        checkTiling(file, tensors.values(), dataBytes);
        return new SafetensorsHeader(java.util.Collections.unmodifiableMap(tensors), metadata);
    }

    private static String decode(String file, byte[] header) {
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(header)).toString();
        } catch (CharacterCodingException e) {
            throw new ModelFileException(file + ": the safetensors header is not UTF-8 text (" + e + ")", e);
        }
    }

    private static Map<String, String> metadata(String file, Object value) {
        Map<String, Object> m = JsonValues.object(value, file + ": " + METADATA_KEY);
        Map<String, String> out = new LinkedHashMap<>();
        for (Map.Entry<String, Object> e : m.entrySet()) {
            out.put(e.getKey(), JsonValues.string(e.getValue(), file + ": " + METADATA_KEY + "." + e.getKey()));
        }
        return java.util.Collections.unmodifiableMap(out);
    }

    private static TensorEntry tensor(String file, String name, Object value, long dataBytes) {
        String where = file + ": tensor '" + name + "'";
        Map<String, Object> m = JsonValues.object(value, where);
        for (String key : m.keySet()) {
            if (!key.equals("dtype") && !key.equals("shape") && !key.equals("data_offsets")) {
                throw new ModelFileException(where + ": unknown key '" + key
                        + "' (a tensor has dtype, shape and data_offsets)");
            }
        }
        String dtypeName = JsonValues.string(require(m, "dtype", where), where + ": dtype");
        TensorDType known = TensorDType.byName(dtypeName);
        TensorDType dtype = known == null ? TensorDType.UNKNOWN : known;
        List<?> dims = JsonValues.array(require(m, "shape", where), where + ": shape");
        long[] shape = new long[dims.size()];
        long elements = 1;
        for (int i = 0; i < shape.length; i++) {
            shape[i] = JsonValues.wholeNumber(dims.get(i), where + ": shape[" + i + "]");
            if (shape[i] < 0) {
                throw new ModelFileException(where + ": shape[" + i + "] is negative (" + shape[i] + ")");
            }
            elements = multiply(elements, shape[i], where);
        }
        long bits = dtype == TensorDType.UNKNOWN ? -1 : multiply(elements, dtype.bits(), where);
        if (dtype != TensorDType.UNKNOWN && bits % 8 != 0) {
            throw new ModelFileException(where + ": " + elements + " elements of " + dtype + " (" + dtype.bits()
                    + " bits each) are not a whole number of bytes");
        }
        long bytes = bits / 8;
        List<?> offsets = JsonValues.array(require(m, "data_offsets", where), where + ": data_offsets");
        if (offsets.size() != 2) {
            throw new ModelFileException(where + ": data_offsets has " + offsets.size()
                    + " values; it is [begin, end]");
        }
        long begin = JsonValues.wholeNumber(offsets.get(0), where + ": data_offsets[0]");
        long end = JsonValues.wholeNumber(offsets.get(1), where + ": data_offsets[1]");
        if (begin < 0 || end < begin) {
            throw new ModelFileException(where + ": data_offsets [" + begin + ", " + end
                    + "] is not a range (0 <= begin <= end)");
        }
        if (dtype != TensorDType.UNKNOWN && end - begin != bytes) {
            throw new ModelFileException(where + ": data_offsets [" + begin + ", " + end + "] hold " + (end - begin)
                    + " bytes, but " + dtype + " of shape " + java.util.Arrays.toString(shape) + " is " + bytes
                    + " bytes");
        }
        if (end > dataBytes) {
            throw new ModelFileException(where + ": data_offsets end " + end + " is past the data section's "
                    + dataBytes + " bytes (the file is truncated or the header is wrong)");
        }
        return new TensorEntry(name, dtype, shape, begin, end, dtypeName);
    }

    private static Object require(Map<String, Object> m, String key, String where) {
        Object v = m.get(key);
        if (v == null) {
            throw new ModelFileException(where + ": " + key + " is missing");
        }
        return v;
    }

    private static long multiply(long a, long b, String where) {
        try {
            return Math.multiplyExact(a, b);
        } catch (ArithmeticException overflow) {
            throw new ModelFileException(where + ": the shape's byte size does not fit 64 bits");
        }
    }

    private static void checkTiling(String file, java.util.Collection<TensorEntry> entries, long dataBytes) {
        List<TensorEntry> sorted = new ArrayList<>(entries);
        sorted.sort(Comparator.comparingLong(TensorEntry::begin).thenComparingLong(TensorEntry::end));
        long covered = 0;
        TensorEntry previous = null;
        for (TensorEntry t : sorted) {
            if (t.begin() < covered) {
                throw new ModelFileException(file + ": tensor '" + t.name() + "' bytes [" + t.begin() + ", " + t.end()
                        + ") overlap tensor '" + previous.name() + "' bytes [" + previous.begin() + ", "
                        + previous.end() + ")");
            }
            if (t.begin() > covered) {
                throw new ModelFileException(file + ": bytes [" + covered + ", " + t.begin()
                        + ") of the data section belong to no tensor (before tensor '" + t.name() + "')");
            }
            covered = t.end();
            previous = t;
        }
        if (covered != dataBytes) {
            throw new ModelFileException(file + ": the data section has " + dataBytes + " bytes but the tensors end at "
                    + covered + " (" + (dataBytes - covered) + " bytes after the last tensor belong to no tensor)");
        }
    }
}
