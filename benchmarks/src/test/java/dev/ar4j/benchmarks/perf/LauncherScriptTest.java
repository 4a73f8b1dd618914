package dev.ar4j.benchmarks.perf;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** benchmarks/bin/ar4j-perf refuses a Java older than 25 with a message, and pipes nothing into grep -q. */
class LauncherScriptTest {
    private static final Path SCRIPT = Path.of("bin/ar4j-perf");

    /** A fake JAVA_HOME whose java prints the properties a Java of {@code spec} prints. */
    private static Path fakeJavaHome(Path dir, String spec) throws Exception {
        Path bin = Files.createDirectories(dir.resolve("jdk-" + spec + "/bin"));
        Path java = bin.resolve("java");
        Files.writeString(java, "#!/usr/bin/env bash\n"
                + "if [[ \"$1\" == -XshowSettings:properties ]]; then\n"
                + "  echo 'Property settings:' >&2; echo '    java.specification.version = " + spec + "' >&2;"
                + " echo 'openjdk version \"" + spec + "\"' >&2; exit 0\nfi\n"
                + "echo \"ran $*\"\n", StandardCharsets.UTF_8);
        Files.setPosixFilePermissions(java, PosixFilePermissions.fromString("rwxr-xr-x"));
        return dir.resolve("jdk-" + spec);
    }

    private static String[] run(Path javaHome, Path jar) throws Exception {
        ProcessBuilder pb = new ProcessBuilder("bash", SCRIPT.toString(), "-V").redirectErrorStream(true);
        pb.environment().put("JAVA_HOME", javaHome.toString());
        pb.environment().put("AR4J_PERF_JAR", jar.toString());
        Process p = pb.start();
        p.getOutputStream().close();
        String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(30, TimeUnit.SECONDS), "the script finished");
        return new String[] {Integer.toString(p.exitValue()), text};
    }

    @Test
    void anOlderJavaIsRefusedNamingJava25AndJavaHome(@TempDir Path dir) throws Exception {
        Path jar = Files.writeString(dir.resolve("benchmarks.jar"), "");
        String[] result = run(fakeJavaHome(dir, "17"), jar);
        assertEquals("2", result[0], result[1]);
        assertTrue(result[1].contains("Java 17") && result[1].contains("Java 25") && result[1].contains("JAVA_HOME"),
                result[1]);
        assertFalse(result[1].contains("UnsupportedClassVersionError"), result[1]);
    }

    @Test
    void java25RunsAr4jPerf(@TempDir Path dir) throws Exception {
        Path jar = Files.writeString(dir.resolve("benchmarks.jar"), "");
        String[] result = run(fakeJavaHome(dir, "25"), jar);
        assertEquals("0", result[0], result[1]);
        assertTrue(result[1].contains("ran --enable-native-access=ALL-UNNAMED") && result[1].contains("Ar4jPerf -V"),
                result[1]);
    }

    @Test
    void aMissingJavaOrJarExitsWithTwo(@TempDir Path dir) throws Exception {
        String[] noJava = run(dir.resolve("nowhere"), Files.writeString(dir.resolve("b.jar"), ""));
        assertEquals("2", noJava[0], noJava[1]);
        assertTrue(noJava[1].contains("Java 25"), noJava[1]);
        String[] noJar = run(fakeJavaHome(dir, "25"), dir.resolve("missing.jar"));
        assertEquals("2", noJar[0], noJar[1]);
        assertTrue(noJar[1].contains("missing.jar missing"), noJar[1]);
    }

    @Test
    void noProducerIsPipedIntoGrepQ() throws Exception {
        List<String> lines = Files.readAllLines(SCRIPT, StandardCharsets.UTF_8);
        for (String line : lines) {
            assertFalse(line.matches(".*\\|\\s*grep\\s+(-[a-zA-Z]*q|--quiet|--silent).*"), "pipe into grep -q: " + line);
        }
    }
}
