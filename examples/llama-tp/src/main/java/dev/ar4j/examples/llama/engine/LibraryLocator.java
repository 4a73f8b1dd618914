package dev.ar4j.examples.llama.engine;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Finds a shared library the way ar4j finds NCCL: the path a variable names (an error when that
 * file does not exist, rather than a silent fallback), then the given usual places in order. The
 * search is pure: nothing is loaded here.
 */
public final class LibraryLocator {

    private LibraryLocator() {
    }

    /**
     * The first existing file among the variable's path and the candidates.
     *
     * @param what       the library, for messages (e.g. {@code libcublas.so.13})
     * @param variable   the environment variable (and, lower-cased with dots, the system property) that
     *                   names the file, e.g. {@code AR4J_CUBLAS_PATH} / {@code ar4j.cublas.path}
     * @param env        the environment
     * @param properties the system properties' value of the variable, or {@code null}
     * @param candidates the usual places, in order
     * @param install    how to install the library, for the message when it is nowhere
     * @return the file to load
     * @throws EngineException naming the variable, every place tried and how to install the library
     */
    public static Path locate(String what, String variable, Map<String, String> env, String properties,
                              List<Path> candidates, String install) {
        String named = properties != null ? properties : env.get(variable);
        if (named != null && !named.isBlank()) {
            Path p = Path.of(named);
            if (!Files.isRegularFile(p)) {
                throw new EngineException(variable + "=" + named + " names no file; point it at " + what);
            }
            return p;
        }
        List<String> tried = new ArrayList<>();
        for (Path c : candidates) {
            if (Files.isRegularFile(c)) {
                return c;
            }
            tried.add(c.toString());
        }
        throw new EngineException(what + " not found: " + variable + " is not set and none of " + tried
                + " exists; " + install);
    }

    /**
     * {@code dir/name} for every directory of a {@code :}-separated path list (e.g. {@code LD_LIBRARY_PATH}).
     *
     * @param pathList the list, may be {@code null}
     * @param name     the file name
     * @return the candidate files, in the list's order
     */
    public static List<Path> inEach(String pathList, String name) {
        List<Path> out = new ArrayList<>();
        if (pathList != null) {
            for (String dir : pathList.split(":")) {
                if (!dir.isBlank()) {
                    out.add(Path.of(dir, name));
                }
            }
        }
        return out;
    }
}
