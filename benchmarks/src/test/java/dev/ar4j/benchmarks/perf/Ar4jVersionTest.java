package dev.ar4j.benchmarks.perf;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.jar.Attributes;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class Ar4jVersionTest {

    private static Manifest manifest(String version, String commit) {
        Manifest m = new Manifest();
        m.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        if (version != null) {
            m.getMainAttributes().put(Attributes.Name.IMPLEMENTATION_VERSION, version);
        }
        if (commit != null) {
            m.getMainAttributes().putValue(Ar4jVersion.COMMIT_ATTRIBUTE, commit);
        }
        return m;
    }

    @Test
    void aJarsManifestGivesVersionAndCommit(@TempDir Path dir) throws Exception {
        Path jar = dir.resolve("benchmarks.jar");
        try (OutputStream out = Files.newOutputStream(jar);
             JarOutputStream j = new JarOutputStream(out, manifest("0.1.0", "1a2b3c4d"))) {
            j.flush();
        }
        Ar4jVersion v = Ar4jVersion.fromLocation(jar);
        assertEquals("0.1.0", v.version());
        assertEquals("1a2b3c4d", v.commit());
        assertEquals("0.1.0 (commit 1a2b3c4d)", v.describe());
    }

    @Test
    void missingAttributesAreNamed() {
        Ar4jVersion v = Ar4jVersion.fromManifest(manifest("0.1.0", null), "x.jar");
        assertEquals("0.1.0", v.version());
        assertEquals("unknown (no Ar4j-Commit in the manifest)", v.commit());
        assertEquals("unknown (no Implementation-Version in the manifest)",
                Ar4jVersion.fromManifest(manifest(null, "abc"), "x.jar").version());
    }

    @Test
    void classesOutsideAJarSaySo(@TempDir Path dir) {
        Ar4jVersion v = Ar4jVersion.fromLocation(dir);
        assertTrue(v.version().startsWith("unknown (not from a jar"), v.version());
        assertTrue(v.commit().startsWith("unknown (not from a jar"), v.commit());
    }

    @Test
    void anUnreadableJarSaysWhy(@TempDir Path dir) throws Exception {
        Path broken = Files.writeString(dir.resolve("broken.jar"), "not a zip");
        Ar4jVersion v = Ar4jVersion.fromLocation(broken);
        assertTrue(v.version().startsWith("unknown (cannot read"), v.version());
    }
}
