package dev.ar4j.internal.platform;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class BundledKernelsTest {

    @Test
    void platformsAreNamedAsTheJarsDirectories() {
        assertEquals(Optional.of("linux-x86_64"), BundledKernels.platform("Linux", "amd64"));
        assertEquals(Optional.of("linux-x86_64"), BundledKernels.platform("Linux", "x86_64"));
        assertEquals(Optional.of("linux-aarch64"), BundledKernels.platform("Linux", "aarch64"));
        assertEquals(Optional.empty(), BundledKernels.platform("Mac OS X", "aarch64"));
        assertEquals(Optional.empty(), BundledKernels.platform("Linux", "ppc64le"));
    }

    @Test
    void onTheClassPathAMissingCudaJarIsDiagnosedAsSuch() {
        String why = BundledKernels.missingJar();
        assertTrue(why.startsWith("not on the class path: ar4j-runtime is on the class path"), why);
        assertTrue(why.contains("--add-modules dev.ar4j.cuda"), why);
        assertTrue(why.contains("dev.ar4j:ar4j-cuda"), why);
    }

    @Test
    void aFailedKernelsLoadNamesTheCacheSetting() {
        LibrarySearch.Attempts attempts = new LibrarySearch.Attempts();
        attempts.note("ar4j-cuda jar resource x", "UnsatisfiedLinkError: failed to map segment from shared object");
        String message = LibrarySearch.failure(NativeLibraries.Library.CUSTOM_ALL_REDUCE, attempts, null).getMessage();
        assertTrue(message.contains("1. ar4j-cuda jar resource x: UnsatisfiedLinkError"), message);
        assertTrue(message.contains("-Dar4j.native.cacheDir (or AR4J_NATIVE_CACHE_DIR): a writable directory on a"
                + " file system not mounted noexec"), message);
    }

    /** The check: a JVM that loaded the kernels and is killed leaves nothing in its temp directory. */
    @Test
    void aKilledJvmLeavesNothingInItsTempDirectoryAndTheNextReusesTheCache(@TempDir Path dir) throws Exception {
        TestLibraries.requireCustomAllReduce();
        Path tmp = Files.createDirectories(dir.resolve("tmp"));
        Path cache = dir.resolve("cache");
        List<String> options = List.of("-Djava.io.tmpdir=" + tmp, "-Dar4j.native.cacheDir=" + cache);

        ChildJvm first = ChildJvm.start(KernelsLoadMain.class, options, List.of("120"), dir.resolve("first.log"));
        try {
            assertTrue(first.awaitOutput("ORIGIN", 60), "the child loads the kernels: " + first.output());
            first.killHard();
        } finally {
            first.kill();
        }
        String output = first.output();
        assertEquals(List.of(), listAll(tmp), "left in the killed JVM's java.io.tmpdir; its output:\n" + output);
        Path loaded = Path.of(line(output, "LOADED "));
        assertEquals(cache, loaded.getParent().getParent(), output);
        assertEquals(NativeCache.sha256(Files.readAllBytes(loaded)), loaded.getParent().getFileName().toString());
        assertTrue(line(output, "ORIGIN ").startsWith("ar4j-cuda jar, extracted to the cache"), output);

        ChildJvm second = ChildJvm.start(KernelsLoadMain.class, options, List.of("0"), dir.resolve("second.log"));
        assertEquals(0, second.await(60), second.output());
        assertEquals(loaded.toString(), line(second.output(), "LOADED "));
        assertTrue(line(second.output(), "ORIGIN ").startsWith("ar4j-cuda jar, reused from the cache"), second.output());
        assertEquals(List.of(), listAll(tmp));
    }

    @Test
    void withoutAUsableCacheATemporaryCopyIsDeletedRightAfterLoading(@TempDir Path dir) throws Exception {
        TestLibraries.requireCustomAllReduce();
        Path tmp = Files.createDirectories(dir.resolve("tmp"));
        Path notADirectory = Files.writeString(dir.resolve("cache-is-a-file"), "x");
        List<String> options = List.of("-Djava.io.tmpdir=" + tmp, "-Dar4j.native.cacheDir=" + notADirectory);
        ChildJvm child = ChildJvm.start(KernelsLoadMain.class, options, List.of("120"), dir.resolve("child.log"));
        try {
            assertTrue(child.awaitOutput("ORIGIN", 60), "the child loads the kernels: " + child.output());
            assertEquals(List.of(), listAll(tmp), "the temporary copy is gone while the JVM still runs");
            String output = child.output();
            assertTrue(line(output, "ORIGIN ").contains("a temporary copy deleted after loading"), output);
            assertTrue(output.contains("ar4j.native.cacheDir"), "the warning names the setting: " + output);
            child.killHard();
        } finally {
            child.kill();
        }
        assertEquals(List.of(), listAll(tmp));
    }

    private static String line(String output, String prefix) {
        return output.lines().filter(l -> l.startsWith(prefix)).findFirst()
                .orElseThrow(() -> new AssertionError("no line starting with " + prefix + " in:\n" + output))
                .substring(prefix.length());
    }

    private static List<Path> listAll(Path root) throws IOException {
        try (Stream<Path> paths = Files.walk(root)) {
            return paths.filter(p -> !p.equals(root)).toList();
        }
    }
}
