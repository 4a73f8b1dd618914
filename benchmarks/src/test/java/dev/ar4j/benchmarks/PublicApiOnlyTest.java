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

/** The benchmarks use ar4j's exported API only: nothing under src imports dev.ar4j.internal or dev.ar4j.internal.peer. */
class PublicApiOnlyTest {
    @Test
    void noSourceImportsAnUnexportedPackage() throws IOException {
        List<Path> sources;
        try (Stream<Path> walk = Files.walk(Path.of("src"))) {
            sources = walk.filter(p -> p.toString().endsWith(".java")).toList();
        }
        assertFalse(sources.isEmpty(), "run from the benchmarks module directory");
        List<String> offending = sources.stream().filter(p -> !p.endsWith("PublicApiOnlyTest.java")).filter(p -> {
            try {
                String text = Files.readString(p, StandardCharsets.UTF_8);
                return text.contains("import dev.ar4j.internal") || text.contains("import dev.ar4j.internal.peer")
                        || text.contains("dev.ar4j.internal.");
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }).map(Path::toString).toList();
        assertEquals(List.of(), offending);
    }
}
