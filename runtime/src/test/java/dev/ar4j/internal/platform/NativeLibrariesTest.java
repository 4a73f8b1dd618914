package dev.ar4j.internal.platform;

import dev.ar4j.NativeLibraryException;
import dev.ar4j.cuda.Cuda;
import dev.ar4j.internal.platform.NativeLibraries.Library;
import dev.ar4j.internal.platform.NativeLibraries.LoadedLibrary;
import dev.ar4j.internal.platform.LibrarySearch.SearchInputs;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class NativeLibrariesTest {

    private static SearchInputs explicitProperty(String value) {
        return new SearchInputs(value, null, name -> null, true, true);
    }

    /**
     * An ELF program, which dlopen refuses: a file that is not a library. (A file that is not ELF
     * at all would make the JVM warn about executable stacks.)
     */
    private static Path executable() {
        Path program = Path.of("/usr/bin/true");
        Assumptions.assumeTrue(Files.isRegularFile(program), "needs /usr/bin/true as a sample non-library file");
        return program;
    }

    @Test
    void cudartLoadsAndReportsItsVersion() {
        LoadedLibrary cudart = NativeLibraries.cudart();
        String file = cudart.path().getFileName().toString();
        assertTrue(file.startsWith("libcudart.so"), "loaded " + cudart.path());
        assertTrue(cudart.path().isAbsolute());
        assertSame(cudart, NativeLibraries.cudart(), "loaded once, then cached");
        assertEquals(cudart, NativeLibraries.loaded(Library.CUDART).orElseThrow());

        int version = Cuda.runtimeVersion();
        assertTrue(version >= 12000, "CUDA runtime version " + version);
        if (file.startsWith("libcudart.so.13")) {
            assertEquals(13, version / 1000, "libcudart.so.13 reports CUDA 13.x, got " + version);
        }
        assertEquals(Cuda.formatVersion(version), (version / 1000) + "." + (version % 1000) / 10);
    }

    @Test
    void explicitPathIsHonouredAsFileAndAsDirectory() {
        Path real = NativeLibraries.cudart().path();
        LoadedLibrary byFile = LibrarySearch.search(Library.CUDART, explicitProperty(real.toString()));
        assertEquals(real, byFile.path());
        assertEquals("system property ar4j.cudart.path", byFile.origin());

        LoadedLibrary byDirectory = LibrarySearch.search(Library.CUDART, explicitProperty(real.getParent().toString()));
        assertEquals(real.getParent(), byDirectory.path().getParent());
        assertTrue(byDirectory.path().getFileName().toString().startsWith("libcudart.so."));

        LoadedLibrary byEnvironment = LibrarySearch.search(Library.CUDART,
                new SearchInputs(null, real.toString(), name -> null, true, true));
        assertEquals("environment variable AR4J_CUDART_PATH", byEnvironment.origin());
    }

    @Test
    void bogusExplicitPathFailsNamingItAndTheSettings() {
        String bogus = "/nonexistent/ar4j-test/libnccl-bogus.so.2";
        NativeLibraryException e = assertThrows(NativeLibraryException.class,
                () -> LibrarySearch.search(Library.NCCL, explicitProperty(bogus)));
        String message = e.getMessage();
        assertTrue(message.startsWith("Could not load NCCL (libnccl). Tried, in order:"), message);
        assertTrue(message.contains("1. system property ar4j.nccl.path = " + bogus + ": no such file or directory"), message);
        assertTrue(message.contains("the search stops at an explicit setting; fix system property ar4j.nccl.path"), message);
        assertTrue(message.contains("-Dar4j.nccl.path=/path/to/libnccl.so.2"), message);
        assertTrue(message.contains("AR4J_NCCL_PATH"), message);
        assertEquals("NCCL", e.library());
        assertEquals(1, e.attempts().size(), "an explicit setting is the only place tried: " + e.attempts());
    }

    @Test
    void explicitEnvironmentVariableIsUsedWhenThePropertyIsUnset() {
        String bogus = "/nonexistent/ar4j-test/env/libcudart.so.13";
        NativeLibraryException e = assertThrows(NativeLibraryException.class,
                () -> LibrarySearch.search(Library.CUDART, new SearchInputs(null, bogus, name -> null, true, true)));
        assertEquals(List.of("system property ar4j.cudart.path: not set",
                "environment variable AR4J_CUDART_PATH = " + bogus + ": no such file or directory (" + bogus + ")"),
                e.attempts());
    }

    @Test
    void fileThatIsNotALibraryIsReportedWithTheLoadersErrorAttached(@TempDir Path dir) throws IOException {
        Path notALibrary = Files.copy(executable(), dir.resolve("libnccl.so.2"));
        NativeLibraryException e = assertThrows(NativeLibraryException.class,
                () -> LibrarySearch.search(Library.NCCL, explicitProperty(notALibrary.toString())));
        assertTrue(e.getMessage().contains(notALibrary.toString()), e.getMessage());
        assertEquals(1, e.getSuppressed().length, Arrays.toString(e.getSuppressed()));
        assertTrue(e.getSuppressed()[0] instanceof UnsatisfiedLinkError, e.getSuppressed()[0].toString());
    }

    @Test
    void directoryWithoutTheLibraryListsEachFileNameTried(@TempDir Path dir) {
        NativeLibraryException e = assertThrows(NativeLibraryException.class,
                () -> LibrarySearch.search(Library.CUDART, explicitProperty(dir.toString())));
        String message = e.getMessage();
        assertTrue(message.contains(dir.resolve("libcudart.so.13") + ": no such file"), message);
        assertTrue(message.contains(dir.resolve("libcudart.so.12") + ": no such file"), message);
    }

    @Test
    void anotherLibraryAtTheExplicitPathIsRejected() {
        Path cudart = NativeLibraries.cudart().path();
        NativeLibraryException e = assertThrows(NativeLibraryException.class,
                () -> LibrarySearch.search(Library.NCCL, explicitProperty(cudart.toString())));
        assertTrue(e.getMessage().contains("loaded, but it does not define ncclGetVersion: it is not NCCL (libnccl)"),
                e.getMessage());
    }

    @Test
    void failedSearchNamesEveryPlaceTried() {
        List<Path> driverDirs = List.of(Path.of("/usr/local/nvidia/lib64"), Path.of("/usr/local/nvidia/lib"),
                Path.of("/usr/lib/x86_64-linux-gnu"), Path.of("/usr/lib64"), Path.of("/usr/lib/wsl/lib"));
        Assumptions.assumeTrue(driverDirs.stream().noneMatch(d -> Files.exists(d.resolve("libcuda.so.1"))),
                "this machine has an NVIDIA driver (libcuda.so.1); the test checks the failure text without one");
        NativeLibraryException e = assertThrows(NativeLibraryException.class,
                () -> LibrarySearch.search(Library.CUDA_DRIVER, new SearchInputs(null, null, name -> null, true, true)));
        String message = e.getMessage();
        assertTrue(message.contains("1. system property ar4j.cuda.path: not set"), message);
        assertTrue(message.contains("2. environment variable AR4J_CUDA_PATH: not set"), message);
        assertTrue(message.contains("3. OS loader name libcuda.so.1: "), message);
        for (Path dir : driverDirs) {
            assertTrue(message.contains(dir.resolve("libcuda.so.1") + ": no such file"), message);
        }
        assertTrue(message.contains("-Dar4j.cuda.path=/path/to/libcuda.so.1 or the environment variable AR4J_CUDA_PATH"),
                message);
        assertTrue(message.contains("libcuda.so.1 comes with the NVIDIA driver"), message);
        assertEquals(2 + 1 + driverDirs.size(), e.attempts().size(), e.attempts().toString());
        assertTrue(Arrays.stream(e.getSuppressed()).anyMatch(t -> t instanceof IllegalArgumentException
                && t.getMessage().contains("libcuda.so.1")), "the dlopen failure is attached");
    }

    @Test
    void pythonEnvironmentsAreScannedForNvidiaWheels(@TempDir Path venv) throws IOException {
        Path ncclLib = Files.createDirectories(venv.resolve("lib/python3.12/site-packages/nvidia/nccl/lib"));
        Path cudaLib = Files.createDirectories(venv.resolve("lib/python3.12/site-packages/nvidia/cu13/lib"));
        Files.createDirectories(venv.resolve("lib/python3.12/site-packages/nvidia/nolib"));
        assertEquals(List.of(cudaLib, ncclLib), LibrarySearch.pythonNvidiaLibDirs(venv));

        Assumptions.assumeFalse(Files.exists(Path.of("/usr/local/cuda/lib64/libnccl.so.2"))
                || Files.exists(Path.of("/opt/torch/.venv")), "a real NCCL is installed in a usual place here");
        Path fake = Files.copy(executable(), ncclLib.resolve("libnccl.so.2"));
        Map<String, String> env = Map.of("VIRTUAL_ENV", venv.toString());
        NativeLibraryException e = assertThrows(NativeLibraryException.class,
                () -> LibrarySearch.search(Library.NCCL, new SearchInputs(null, null, env::get, false, true)));
        assertTrue(e.attempts().stream().anyMatch(line -> line.startsWith(fake + ": UnsatisfiedLinkError")),
                e.getMessage());
        assertTrue(e.getMessage().contains("$CUDA_HOME/lib64: CUDA_HOME not set"), e.getMessage());
        assertTrue(e.getMessage().contains("Python environment $CONDA_PREFIX: CONDA_PREFIX not set"), e.getMessage());
    }

    @Test
    void bindingsFindLibrariesLoadedAfterTheirClassWasInitialised(@TempDir Path dir) throws Exception {
        ChildJvm child = ChildJvm.start(LateLoadMain.class, List.of(), dir.resolve("child.log"));
        int exit = child.await(60);
        String output = child.output();
        assertEquals(0, exit, output);
        assertTrue(output.contains("RUNTIME " + Cuda.runtimeVersion() + " 0"), output);
    }

    @Test
    void nativeAccessFlagMatchesTheClassPathDeployment() {
        assertFalse(NativeLibraries.class.getModule().isNamed(), "the tests run on the class path");
        assertEquals("--enable-native-access=ALL-UNNAMED", NativeLibraries.nativeAccessFlag());
        assertTrue(NativeLibraries.nativeAccessEnabled(), "surefire passes " + NativeLibraries.nativeAccessFlag());
    }
}
