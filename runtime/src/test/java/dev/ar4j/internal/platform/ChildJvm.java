package dev.ar4j.internal.platform;

import dev.ar4j.bindings.cudart.cuda_runtime_api_h;
import org.junit.jupiter.api.Assumptions;

import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.CodeSource;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
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
        return start(mainClass, List.of(), args, log);
    }

    /**
     * Starts {@code mainClass} with JVM options (after the ones passed on, so they win) and
     * {@code args}; stdout and stderr go to {@code log}.
     */
    public static ChildJvm start(Class<?> mainClass, List<String> jvmOptions, List<String> args, Path log)
            throws IOException {
        return start(mainClass, jvmOptions, args, Map.of(), log);
    }

    /**
     * Starts {@code mainClass} with JVM options, {@code args} and extra environment variables
     * (set last, so they win over this JVM's and the defaults below); stdout and stderr go to
     * {@code log}.
     */
    public static ChildJvm start(Class<?> mainClass, List<String> jvmOptions, List<String> args,
                                 Map<String, String> environment, Path log) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add(NativeLibraries.nativeAccessFlag());
        for (Map.Entry<Object, Object> property : System.getProperties().entrySet()) {
            String key = property.getKey().toString();
            if (key.startsWith("ar4j.")) {
                command.add("-D" + key + "=" + property.getValue());
            }
        }
        command.addAll(jvmOptions);
        command.add("-cp");
        command.add(classPath(mainClass));
        command.add(mainClass.getName());
        command.addAll(args);
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
        Map<String, String> env = builder.environment();
        env.put("NCCL_NVLS_ENABLE", "0");
        env.put("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1");
        env.put("NVSHMEM_DISABLE_NVLS", "1");
        env.putIfAbsent("NCCL_SOCKET_IFNAME", "lo");
        env.putAll(environment);
        return new ChildJvm(builder.start(), log, mainClass.getSimpleName() + " " + String.join(" ", args));
    }

    /**
     * This JVM's class path, plus the places the classes a child needs were loaded from: a test
     * launcher may load them through its own class loader ({@code junit-platform-console-standalone
     * --class-path}), and Surefire runs tests from a manifest-only jar, keeping the real class path
     * in {@code surefire.test.class.path}.
     */
    private static String classPath(Class<?> mainClass) {
        Set<String> entries = new LinkedHashSet<>();
        String own = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        for (String entry : own.split(File.pathSeparator)) {
            if (!entry.isBlank()) {
                entries.add(entry);
            }
        }
        for (Class<?> type : List.of(mainClass, ChildJvm.class, NativeLibraries.class, cuda_runtime_api_h.class,
                Assumptions.class)) {
            CodeSource source = type.getProtectionDomain().getCodeSource();
            if (source != null && source.getLocation() != null) {
                entries.add(toPath(source.getLocation()));
            }
        }
        ClassLoader loader = ChildJvm.class.getClassLoader();
        URL kernels = loader.getResource(NativeLibraries.CUSTOM_AR_RESOURCE);
        if (kernels != null && kernels.getProtocol().equals("jar")) {
            String jar = kernels.getPath(); // file:/path/ar4j-cuda.jar!/META-INF/...
            entries.add(toPath(URI.create(jar.substring(0, jar.indexOf("!/"))).toString()));
        } else if (kernels != null && kernels.getProtocol().equals("file")) {
            Path file = Path.of(URI.create(kernels.toString()));
            entries.add(file.getRoot().resolve(file.subpath(0, file.getNameCount() - 5)).toString()); // strip META-INF/native/linux-x86_64/cu13/x.so
        }
        return String.join(File.pathSeparator, entries);
    }

    private static String toPath(URL location) {
        return toPath(location.toString());
    }

    private static String toPath(String uri) {
        return Path.of(URI.create(uri)).toString();
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

    /**
     * Waits until the JVM's output contains {@code text}.
     *
     * @return whether it did within {@code timeoutSeconds} (false also when the JVM exited first)
     */
    public boolean awaitOutput(String text, long timeoutSeconds) throws InterruptedException, IOException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSeconds);
        while (System.nanoTime() < deadline) {
            if (output().contains(text)) {
                return true;
            }
            if (!process.isAlive()) {
                return output().contains(text);
            }
            Thread.sleep(50);
        }
        return false;
    }

    /**
     * Kills the JVM with SIGKILL ({@code kill -9}: no shutdown hooks, no deleteOnExit) and waits
     * for it to be gone.
     */
    public void killHard() throws InterruptedException {
        process.destroyForcibly();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            throw new AssertionError(name + " still runs 30 s after SIGKILL");
        }
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
