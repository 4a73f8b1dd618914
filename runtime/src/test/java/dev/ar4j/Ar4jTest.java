package dev.ar4j;

import dev.ar4j.internal.platform.BuildInfo;
import dev.ar4j.cuda.CudaDriverMissingException;
import dev.ar4j.internal.platform.TestLibraries;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.jar.Attributes;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class Ar4jTest {

    @Test
    void probeIsConsistentAndOnAMachineWithoutADriverNamesTheDriver() {
        boolean available = Ar4j.isAvailable();
        assertEquals(available, Ar4j.unavailabilityCause().isEmpty(), "available exactly when there is no cause");
        assertEquals(available, Ar4j.isAvailable(), "the probe runs once and keeps its answer");
        if (!TestLibraries.cudaDriverInstalled()) {
            TestLibraries.requireNccl();           // the probe loads them before it asks for a GPU:
            TestLibraries.requireCustomAllReduce(); // without them, their absence is the cause
            Throwable cause = Ar4j.unavailabilityCause().orElseThrow();
            assertInstanceOf(CudaDriverMissingException.class, cause, "the cause on a CPU-only machine: " + cause);
            assertTrue(cause.getMessage().contains("cudaGetDeviceCount"), cause.getMessage());
        }
    }

    @Test
    void versionAndCommitComeFromTheJarsManifest(@TempDir Path dir) throws IOException {
        Path jar = dir.resolve("ar4j-runtime.jar");
        writeJar(jar, "1.2.3", "0123456789abcdef0123456789abcdef01234567");
        assertEquals(new BuildInfo("1.2.3", "0123456789abcdef0123456789abcdef01234567"), BuildInfo.ofJar(jar));

        Path unfiltered = dir.resolve("unfiltered.jar");
        writeJar(unfiltered, "2.0", "${ar4j.git.commit.id}");
        assertEquals(new BuildInfo("2.0", BuildInfo.UNKNOWN), BuildInfo.ofJar(unfiltered));

        Path noCommit = dir.resolve("no-commit.jar");
        writeJar(noCommit, null, null);
        assertEquals(new BuildInfo(BuildInfo.UNKNOWN, BuildInfo.UNKNOWN), BuildInfo.ofJar(noCommit));
    }

    @Test
    void fromAClassesDirectoryTheVersionIsUnknown() {
        // Surefire runs the runtime's tests from target/classes, not from the jar.
        assertTrue(Files.isDirectory(Path.of("target/classes/dev/ar4j")), "the tests run from target/classes");
        assertEquals(BuildInfo.UNKNOWN, Ar4j.version());
        assertEquals(BuildInfo.UNKNOWN, Ar4j.commit());
        assertNotNull(BuildInfo.current());
    }

    private static void writeJar(Path jar, String version, String commit) throws IOException {
        Manifest manifest = new Manifest();
        Attributes main = manifest.getMainAttributes();
        main.put(Attributes.Name.MANIFEST_VERSION, "1.0");
        if (version != null) {
            main.put(Attributes.Name.IMPLEMENTATION_VERSION, version);
        }
        if (commit != null) {
            main.putValue(BuildInfo.COMMIT_ATTRIBUTE, commit);
        }
        try (OutputStream out = Files.newOutputStream(jar); JarOutputStream ignored = new JarOutputStream(out, manifest)) {
            // a manifest is all this jar needs
        }
    }
}
