package dev.ar4j.examples.llama.text;

import com.fasterxml.jackson.jr.ob.JSON;
import dev.ar4j.examples.llama.model.JsonValues;
import dev.ar4j.examples.llama.model.ModelFileException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/** Reads the JSON files of a model folder, each failure a {@link ModelFileException} naming the file. */
final class JsonFiles {

    /** Largest JSON file read (Llama-3's tokenizer.json is 9 MB; the largest known ones about 35 MB). */
    static final long MAX_BYTES = 256L << 20;

    private JsonFiles() {
    }

    /** The file's top-level object; the file must exist. */
    static Map<String, Object> read(Path file) {
        if (!Files.isRegularFile(file)) {
            throw new ModelFileException(file + ": no such file (a Hugging Face model folder with a tokenizer holds "
                    + "tokenizer.json and tokenizer_config.json)");
        }
        try {
            long size = Files.size(file);
            if (size > MAX_BYTES) {
                throw new ModelFileException(file + ": " + size + " bytes, more than the " + MAX_BYTES
                        + " read at most");
            }
            return parse(Files.readString(file), file.toString());
        } catch (IOException e) {
            throw new ModelFileException(file + ": cannot be read: " + e.getMessage(), e);
        }
    }

    /** The file's top-level object, or {@code null} if there is no such file. */
    static Map<String, Object> readIfPresent(Path file) {
        return Files.exists(file) ? read(file) : null;
    }

    /** Parses a JSON text whose top level is an object. */
    static Map<String, Object> parse(String json, String where) {
        try {
            return JsonValues.object(JSON.std.anyFrom(json), where);
        } catch (IOException | RuntimeException e) {
            if (e instanceof ModelFileException m) {
                throw m;
            }
            throw new ModelFileException(where + ": not valid JSON: " + e.getMessage(), e);
        }
    }
}
