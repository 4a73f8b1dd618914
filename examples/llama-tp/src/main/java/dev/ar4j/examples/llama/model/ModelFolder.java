package dev.ar4j.examples.llama.model;

import com.fasterxml.jackson.jr.ob.JSON;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * The safetensors files of a Hugging Face model folder, opened together: {@code model.safetensors},
 * or the shards that {@code model.safetensors.index.json} maps each tensor to, or (without an
 * index) every {@code *.safetensors} file. A tensor name found in two files, or mapped by the index
 * to a file that does not hold it, is an error naming both.
 */
public final class ModelFolder implements AutoCloseable {

    /** The index file of a sharded checkpoint. */
    public static final String INDEX_FILE = "model.safetensors.index.json";

    /**
     * Where one tensor lies.
     *
     * @param file  the file that holds it
     * @param entry its header entry
     */
    public record Located(SafetensorsFile file, TensorEntry entry) {
        /**
         * The tensor's bytes.
         *
         * @return a read-only view of the mapping
         */
        public MemorySegment data() {
            return file.data(entry);
        }

        /**
         * The tensor and its file, for messages.
         *
         * @return e.g. {@code tensor 'model.norm.weight' in /m/model.safetensors}
         */
        public String where() {
            return "tensor '" + entry.name() + "' in " + file.path();
        }
    }

    private final Path folder;
    private final List<SafetensorsFile> files;
    private final Map<String, Located> tensors;

    private ModelFolder(Path folder, List<SafetensorsFile> files, Map<String, Located> tensors) {
        this.folder = folder;
        this.files = files;
        this.tensors = tensors;
    }

    /**
     * Opens every safetensors file of a folder.
     *
     * @param folder the model folder
     * @return the open folder; close it to unmap the files
     * @throws ModelFileException naming the file (and tensor) that is wrong
     */
    public static ModelFolder open(Path folder) {
        List<Path> paths = filesOf(folder);
        List<SafetensorsFile> opened = new ArrayList<>();
        try {
            Map<String, Located> tensors = new LinkedHashMap<>();
            for (Path p : paths) {
                SafetensorsFile f = SafetensorsFile.open(p);
                opened.add(f);
                for (TensorEntry e : f.tensors().values()) {
                    Located before = tensors.putIfAbsent(e.name(), new Located(f, e));
                    if (before != null) {
                        throw new ModelFileException("tensor '" + e.name() + "' is in both " + before.file().path()
                                + " and " + p);
                    }
                }
            }
            checkIndex(folder, tensors);
            return new ModelFolder(folder, List.copyOf(opened), Collections.unmodifiableMap(tensors));
        } catch (RuntimeException e) {
            opened.forEach(SafetensorsFile::close);
            throw e;
        }
    }

    private static List<Path> filesOf(Path folder) {
        if (!Files.isDirectory(folder)) {
            throw new ModelFileException(folder + ": not a directory (--model takes a Hugging Face model folder)");
        }
        Path index = folder.resolve(INDEX_FILE);
        if (Files.isRegularFile(index)) {
            TreeSet<String> names = new TreeSet<>();
            for (Object file : weightMap(index).values()) {
                names.add(JsonValues.string(file, index + ": weight_map value"));
            }
            List<Path> out = new ArrayList<>();
            for (String n : names) {
                Path p = folder.resolve(n).normalize();
                if (!p.getParent().equals(folder.normalize()) || !Files.isRegularFile(p)) {
                    throw new ModelFileException(index + ": names '" + n + "', which is not a file of " + folder);
                }
                out.add(p);
            }
            return out;
        }
        List<Path> out = new ArrayList<>();
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(folder, "*.safetensors")) {
            ds.forEach(out::add);
        } catch (IOException e) {
            throw new ModelFileException(folder + ": cannot be listed: " + e.getMessage(), e);
        }
        if (out.isEmpty()) {
            throw new ModelFileException(folder + ": no *.safetensors file (save the model with "
                    + "save_pretrained(..., safe_serialization=True))");
        }
        Collections.sort(out);
        return out;
    }

    private static Map<String, Object> weightMap(Path index) {
        try {
            Map<String, Object> root = JsonValues.object(JSON.std.anyFrom(Files.readString(index)), index.toString());
            Object map = root.get("weight_map");
            if (map == null) {
                throw new ModelFileException(index + ": weight_map is missing");
            }
            return JsonValues.object(map, index + ": weight_map");
        } catch (IOException e) {
            throw new ModelFileException(index + ": cannot be read as JSON: " + e.getMessage(), e);
        }
    }

    private static void checkIndex(Path folder, Map<String, Located> tensors) {
        Path index = folder.resolve(INDEX_FILE);
        if (!Files.isRegularFile(index)) {
            return;
        }
        for (Map.Entry<String, Object> e : weightMap(index).entrySet()) {
            Located at = tensors.get(e.getKey());
            String file = JsonValues.string(e.getValue(), index + ": weight_map." + e.getKey());
            if (at == null || !at.file().path().getFileName().toString().equals(file)) {
                throw new ModelFileException(index + ": maps tensor '" + e.getKey() + "' to " + file + ", but "
                        + (at == null ? "no file holds it" : "it is in " + at.file().path()));
            }
        }
    }

    /**
     * The folder.
     *
     * @return the path it was opened from
     */
    public Path folder() {
        return folder;
    }

    /**
     * A tensor, or {@code null} when no file holds it.
     *
     * @param name the tensor's name
     * @return where it lies, or {@code null}
     */
    public Located find(String name) {
        return tensors.get(name);
    }

    /**
     * Every tensor of the folder.
     *
     * @return tensor name to location, in file order
     */
    public Map<String, Located> tensors() {
        return tensors;
    }

    /** Unmaps every file. */
    @Override
    public void close() {
        files.forEach(SafetensorsFile::close);
    }
}
