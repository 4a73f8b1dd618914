package dev.ar4j.internal;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Starts a test's helper main class in a separate JVM: the same java, the same class path, native
 * access enabled, the {@code ar4j.*} system properties passed on, and the environment a GPU host
 * needs (NVLink multicast off, NCCL bootstrap on loopback).
 */
public final class ChildJvm {
    private final Process process;
    private final Path log;
    private final String name;

    private ChildJvm(Process process, Path log, String name) {
        this.process = process;
        this.log = log;
        this.name = name;
    }

    /** Starts {@code mainClass} with {@code args}; stdout and stderr go to {@code log}. */
    public static ChildJvm start(Class<?> mainClass, List<String> args, Path log) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add(NativeLibraries.nativeAccessFlag());
        for (Map.Entry<Object, Object> property : System.getProperties().entrySet()) {
            String key = property.getKey().toString();
            if (key.startsWith("ar4j.")) {
                command.add("-D" + key + "=" + property.getValue());
            }
        }
        command.add("-cp");
        // Surefire runs tests from a manifest-only jar and keeps the real class path in this property.
        command.add(System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")));
        command.add(mainClass.getName());
        command.addAll(args);
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
        Map<String, String> env = builder.environment();
        env.put("NCCL_NVLS_ENABLE", "0");
        env.put("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1");
        env.put("NVSHMEM_DISABLE_NVLS", "1");
        env.putIfAbsent("NCCL_SOCKET_IFNAME", "lo");
        return new ChildJvm(builder.start(), log, mainClass.getSimpleName() + " " + String.join(" ", args));
    }

    /**
     * Waits for the JVM to exit, killing it after {@code timeoutSeconds}.
     *
     * @return the exit code
     * @throws AssertionError if it had to be killed (with its output)
     */
    public int await(long timeoutSeconds) throws InterruptedException, IOException {
        if (!process.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            throw new AssertionError(name + " did not finish within " + timeoutSeconds + " s; its output:\n" + output());
        }
        return process.exitValue();
    }

    /** Kills the JVM if it is still running. */
    public void kill() {
        process.destroyForcibly();
    }

    /** What the JVM printed so far. */
    public String output() throws IOException {
        return Files.exists(log) ? Files.readString(log, StandardCharsets.UTF_8) : "";
    }

    /** A short description (main class and arguments). */
    public String name() {
        return name;
    }
}
