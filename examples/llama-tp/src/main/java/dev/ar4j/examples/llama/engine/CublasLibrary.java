package dev.ar4j.examples.llama.engine;


import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Finds and loads {@code libcublas.so.13}: {@code AR4J_CUBLAS_PATH} (or {@code -Dar4j.cublas.path}),
 * then the {@code nvidia-cublas} wheel installed under {@code ~/.cache/ar4j/cublas} or a Python's
 * site-packages, then {@code LD_LIBRARY_PATH}, then the CUDA toolkit ({@code /usr/local/cuda/lib64}).
 * Its dependency {@code libcublasLt.so.13} is found by the dynamic loader next to it (the wheel's
 * and the toolkit's run path) or on {@code LD_LIBRARY_PATH}.
 */
public final class CublasLibrary {

    /** The file name of the library. */
    public static final String NAME = "libcublas.so.13";
    /** The variable that names the file. */
    public static final String VARIABLE = "AR4J_CUBLAS_PATH";

    private static Path loaded;

    private CublasLibrary() {
    }

    /**
     * Loads the library once per class loader.
     *
     * @return the file that was loaded
     * @throws EngineException if it cannot be found or loaded
     */
    public static synchronized Path load() {
        if (loaded == null) {
            Path p = locate(System.getenv(), System.getProperty("ar4j.cublas.path"));
            try {
                // Its dependency first, from the same folder when it is there (the wheel's and the
                // toolkit's libcublas find it through their $ORIGIN run path; this covers copies without one).
                Path lt = p.toAbsolutePath().resolveSibling("libcublasLt.so.13");
                if (java.nio.file.Files.isRegularFile(lt)) {
                    System.load(lt.toString());
                }
                System.load(p.toAbsolutePath().toString());
            } catch (UnsatisfiedLinkError e) {
                throw new EngineException("cannot load " + p + ": " + e.getMessage()
                        + " (libcublasLt.so.13 must be next to it or on LD_LIBRARY_PATH)", e);
            }
            loaded = p;
        }
        return loaded;
    }

    /**
     * Where the library would be loaded from.
     *
     * @param env      the environment
     * @param property {@code ar4j.cublas.path}, or {@code null}
     * @return the file
     * @throws EngineException naming every place tried
     */
    public static Path locate(Map<String, String> env, String property) {
        List<Path> candidates = new ArrayList<>();
        String home = env.getOrDefault("HOME", System.getProperty("user.home"));
        candidates.add(Path.of(home, ".cache/ar4j/cublas/nvidia/cu13/lib", NAME));
        for (String root : new String[] {env.get("VIRTUAL_ENV"), env.get("CONDA_PREFIX"), "/opt/torch/.venv",
                home + "/.local", "/usr/local", "/usr"}) {
            if (root != null) {
                for (String py : new String[] {"python3.10", "python3.11", "python3.12", "python3.13"}) {
                    candidates.add(Path.of(root, "lib", py, "site-packages/nvidia/cu13/lib", NAME));
                    candidates.add(Path.of(root, "lib", py, "site-packages/nvidia/cublas/lib", NAME));
                }
            }
        }
        candidates.addAll(LibraryLocator.inEach(env.get("LD_LIBRARY_PATH"), NAME));
        candidates.add(Path.of("/usr/local/cuda/lib64", NAME));
        candidates.add(Path.of("/usr/local/cuda-13.0/lib64", NAME));
        candidates.add(Path.of("/usr/lib/x86_64-linux-gnu", NAME));
        return LibraryLocator.locate(NAME, VARIABLE, env, property, candidates,
                "install it with: python3 -m pip install --target ~/.cache/ar4j/cublas --no-deps nvidia-cublas");
    }
}
