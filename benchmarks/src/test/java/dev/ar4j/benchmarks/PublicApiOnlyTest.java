package dev.ar4j.benchmarks;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * The benchmarks use ar4j's exported API only: nothing under src names the engine
 * ({@code dev.ar4j.internal.*}, the native loading in {@code dev.ar4j.internal.platform} among it) or
 * the jextract bindings ({@code dev.ar4j.bindings.*}, exported to the runtime only). The one
 * exception is {@code DowncallBenchmark}, which times a bare downcall through the bindings against the
 * runtime's call (ARCHITECTURE.md says so).
 */
class PublicApiOnlyTest {
    /** The files allowed to name the bindings, and why: see the class comment. */
    private static final List<String> BINDINGS_EXCEPTIONS = List.of("DowncallBenchmark.java");

    @Test
    void noSourceImportsAnUnexportedPackage() throws IOException {
        List<Path> sources;
        try (Stream<Path> walk = Files.walk(Path.of("src"))) {
            sources = walk.filter(p -> p.toString().endsWith(".java")).toList();
        }
        assertFalse(sources.isEmpty(), "run from the benchmarks module directory");
        List<String> offending = sources.stream().filter(p -> !p.endsWith("PublicApiOnlyTest.java")).filter(p -> {
            try {
                // Code only: a class looked up by name (to find its jar) is not a use of its API.
                String text = Files.readString(p, StandardCharsets.UTF_8)
                        .replaceAll("\"(?:\\\\.|[^\"\\\\])*\"", "\"\"");
                boolean bindingsAllowed = BINDINGS_EXCEPTIONS.contains(p.getFileName().toString());
                return text.contains("dev.ar4j.internal.") || text.contains("dev.ar4j.platform.")
                        || (!bindingsAllowed && text.contains("dev.ar4j.bindings."));
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }).map(Path::toString).toList();
        assertEquals(List.of(), offending);
    }
}
