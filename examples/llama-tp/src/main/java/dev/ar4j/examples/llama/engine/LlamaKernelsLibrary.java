package dev.ar4j.examples.llama.engine;

import dev.ar4j.examples.llama.kernels.bindings.kernels_h;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * Loads the example's kernels, {@code libar4j_llama_kernels.so}: the file {@code AR4J_LLAMA_KERNELS_PATH}
 * (or {@code -Dar4j.llama.kernels.path}) names, else the copy inside this jar
 * ({@code META-INF/native/linux-x86_64/}), written to a temporary file first. Checks that the
 * library's ABI version is the header's.
 */
public final class LlamaKernelsLibrary {

    /** The file name of the library. */
    public static final String NAME = "libar4j_llama_kernels.so";
    /** The variable that names the file. */
    public static final String VARIABLE = "AR4J_LLAMA_KERNELS_PATH";
    static final String RESOURCE = "/META-INF/native/linux-x86_64/" + NAME;

    private static Path loaded;

    private LlamaKernelsLibrary() {
    }

    /**
     * Loads the library once per class loader.
     *
     * @return the file loaded
     * @throws EngineException if it is missing, cannot be loaded, or has another ABI version
     */
    public static synchronized Path load() {
        if (loaded != null) {
            return loaded;
        }
        String named = System.getProperty("ar4j.llama.kernels.path", System.getenv(VARIABLE));
        Path p;
        if (named != null && !named.isBlank()) {
            p = Path.of(named);
            if (!Files.isRegularFile(p)) {
                throw new EngineException(VARIABLE + "=" + named + " names no file; point it at " + NAME);
            }
        } else {
            p = extract();
        }
        try {
            System.load(p.toAbsolutePath().toString());
        } catch (UnsatisfiedLinkError e) {
            throw new EngineException("cannot load " + p + ": " + e.getMessage(), e);
        }
        int abi = kernels_h.ar4j_llama_abi_version();
        if (abi != kernels_h.AR4J_LLAMA_ABI_VERSION()) {
            throw new EngineException(p + " has kernel ABI " + abi + ", these bindings ABI "
                    + kernels_h.AR4J_LLAMA_ABI_VERSION() + ": rebuild the example (native/build.sh) and its jar together");
        }
        loaded = p;
        return p;
    }

    private static Path extract() {
        try (InputStream in = LlamaKernelsLibrary.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new EngineException(NAME + " is not in this jar (" + RESOURCE + "; built with -Dar4j.native.skip=true?)"
                        + " and " + VARIABLE + " is not set: build the module with nvcc or set " + VARIABLE);
            }
            Path tmp = Files.createTempFile("ar4j_llama_kernels", ".so");
            tmp.toFile().deleteOnExit();
            Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
            return tmp;
        } catch (IOException e) {
            throw new EngineException("cannot write " + NAME + " to a temporary file: " + e.getMessage(), e);
        }
    }
}
