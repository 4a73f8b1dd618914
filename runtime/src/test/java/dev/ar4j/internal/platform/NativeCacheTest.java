package dev.ar4j.internal.platform;

import dev.ar4j.ConfigurationException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class NativeCacheTest {

    private static byte[] library(int size, long seed) {
        byte[] bytes = new byte[size];
        new Random(seed).nextBytes(bytes);
        return bytes;
    }

    @Test
    void aLibraryIsStoredUnderItsHashOnceAndThenReused(@TempDir Path root) throws IOException {
        NativeCache cache = new NativeCache(root, "test");
        byte[] bytes = library(100_000, 1);
        NativeCache.Entry first = cache.store(bytes, "libx.so");
        assertTrue(first.written());
        assertEquals(root.resolve(NativeCache.sha256(bytes)).resolve("libx.so"), first.file());
        assertArrayEquals(bytes, Files.readAllBytes(first.file()));

        NativeCache.Entry second = cache.store(bytes, "libx.so");
        assertFalse(second.written(), "the second use reuses the file");
        assertEquals(first.file(), second.file());

        NativeCache.Entry other = cache.store(library(1000, 2), "libx.so");
        assertTrue(other.written());
        assertEquals(2, listAll(root).stream().filter(Files::isRegularFile).count(), "one file per content");
    }

    @Test
    void aDamagedEntryIsWrittenAgain(@TempDir Path root) throws IOException {
        NativeCache cache = new NativeCache(root, "test");
        byte[] bytes = library(50_000, 3);
        Path file = cache.store(bytes, "libx.so").file();
        Files.write(file, new byte[] {1, 2, 3}); // e.g. truncated by a full disk
        NativeCache.Entry again = cache.store(bytes, "libx.so");
        assertTrue(again.written());
        assertArrayEquals(bytes, Files.readAllBytes(file));
    }

    @Test
    void aKilledWritersPartFileIsDeletedOnceAbandonedAndALiveOnesIsKept(@TempDir Path root) throws IOException {
        byte[] bytes = library(1000, 6);
        Path dir = Files.createDirectories(root.resolve(NativeCache.sha256(bytes)));
        Path abandoned = Files.writeString(dir.resolve(".libx.so.123" + NativeCache.PART_SUFFIX), "half");
        Files.setLastModifiedTime(abandoned, java.nio.file.attribute.FileTime.from(
                java.time.Instant.now().minus(NativeCache.ABANDONED_AFTER).minusSeconds(60)));
        Path live = Files.writeString(dir.resolve(".libx.so.456" + NativeCache.PART_SUFFIX), "being written");
        new NativeCache(root, "test").store(bytes, "libx.so");
        assertFalse(Files.exists(abandoned), "the abandoned part file is deleted");
        assertTrue(Files.exists(live), "a recent part file may belong to a live writer: kept");
    }

    @Test
    void concurrentFirstUsesAgreeAndLeaveNoPartialFiles(@TempDir Path root) throws Exception {
        byte[] bytes = library(4 << 20, 4);
        int threads = 8;
        CountDownLatch start = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<NativeCache.Entry>> results = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                results.add(pool.submit(() -> {
                    start.await();
                    return new NativeCache(root, "test").store(bytes, "libx.so"); // as separate JVMs would
                }));
            }
            start.countDown();
            Path expected = root.resolve(NativeCache.sha256(bytes)).resolve("libx.so");
            for (Future<NativeCache.Entry> result : results) {
                assertEquals(expected, result.get().file());
            }
            assertArrayEquals(bytes, Files.readAllBytes(expected));
            assertEquals(List.of(expected), listAll(root).stream().filter(Files::isRegularFile).toList(),
                    "only the library: no .part files left");
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void theRootIsThePropertyThenTheVariableThenTheUsersCacheDirectory() {
        Map<String, String> properties = Map.of("ar4j.native.cacheDir", "/p", "user.home", "/home/u");
        Map<String, String> environment = Map.of("AR4J_NATIVE_CACHE_DIR", "/e", "XDG_CACHE_HOME", "/x");
        NativeCache fromProperty = NativeCache.configured(properties::get, environment::get);
        assertEquals(Path.of("/p"), fromProperty.root());
        assertEquals("system property ar4j.native.cacheDir", fromProperty.rootSource());
        assertEquals(Path.of("/e"), NativeCache.configured(Map.of("user.home", "/home/u")::get, environment::get).root());
        assertEquals(Path.of("/x/ar4j/native"),
                NativeCache.configured(Map.of("user.home", "/home/u")::get, Map.of("XDG_CACHE_HOME", "/x")::get).root());
        assertEquals(Path.of("/home/u/.cache/ar4j/native"),
                NativeCache.configured(Map.of("user.home", "/home/u")::get, Map.<String, String>of()::get).root());
        ConfigurationException e = assertThrows(ConfigurationException.class,
                () -> NativeCache.configured(Map.<String, String>of()::get, Map.<String, String>of()::get));
        assertTrue(e.getMessage().contains("ar4j.native.cacheDir"), e.getMessage());
    }

    @Test
    void aRootThatIsNotADirectoryFails(@TempDir Path dir) throws IOException {
        Path notADirectory = Files.writeString(dir.resolve("file"), "x");
        NativeCache cache = new NativeCache(notADirectory, "test");
        assertThrows(IOException.class, () -> cache.store(library(10, 5), "libx.so"));
    }

    private static List<Path> listAll(Path root) throws IOException {
        try (Stream<Path> paths = Files.walk(root)) {
            return paths.filter(p -> !p.equals(root)).toList();
        }
    }
}
