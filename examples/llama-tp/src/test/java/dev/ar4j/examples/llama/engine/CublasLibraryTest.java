package dev.ar4j.examples.llama.engine;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The search order of libcublas.so.13 (nothing is loaded). */
class CublasLibraryTest {

    @TempDir
    Path dir;

    @Test
    void theVariableWinsAndMustNameAFile() throws IOException {
        Path lib = Files.createFile(dir.resolve("libcublas.so.13"));
        assertEquals(lib, CublasLibrary.locate(Map.of("AR4J_CUBLAS_PATH", lib.toString(), "HOME", dir.toString()), null));
        EngineException e = assertThrows(EngineException.class, () -> CublasLibrary.locate(
                Map.of("AR4J_CUBLAS_PATH", dir.resolve("nope.so").toString(), "HOME", dir.toString()), null));
        assertTrue(e.getMessage().contains("AR4J_CUBLAS_PATH=" + dir.resolve("nope.so") + " names no file"),
                e.getMessage());
        assertEquals(lib, CublasLibrary.locate(Map.of("HOME", dir.toString()), lib.toString()), "the property");
    }

    @Test
    void thenTheWheelUnderTheCacheThenLdLibraryPath() throws IOException {
        Path wheel = dir.resolve(".cache/ar4j/cublas/nvidia/cu13/lib");
        Files.createDirectories(wheel);
        Path ld = Files.createDirectories(dir.resolve("ld"));
        Files.createFile(ld.resolve("libcublas.so.13"));
        Map<String, String> env = Map.of("HOME", dir.toString(), "LD_LIBRARY_PATH", "/nowhere:" + ld);
        // Without the wheel: a Python's wheel or the LD_LIBRARY_PATH copy (both come before the toolkit).
        Path found = CublasLibrary.locate(env, null);
        assertTrue(found.equals(ld.resolve("libcublas.so.13")) || found.toString().contains("site-packages"),
                found.toString());
        Path inWheel = Files.createFile(wheel.resolve("libcublas.so.13"));
        assertEquals(inWheel, CublasLibrary.locate(env, null));
    }
}
