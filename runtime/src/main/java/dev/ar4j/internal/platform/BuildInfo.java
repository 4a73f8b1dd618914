package dev.ar4j.internal.platform;

import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.CodeSource;
import java.util.Objects;
import java.util.jar.Attributes;
import java.util.jar.JarFile;
import java.util.jar.Manifest;

/**
 * The version and commit written into the runtime jar's manifest by the build
 * ({@value #VERSION_ATTRIBUTE}, {@value #COMMIT_ATTRIBUTE}). Read from the jar that holds this
 * class, so the answer is right on the class path and the module path alike.
 *
 * @param version the {@value #VERSION_ATTRIBUTE}, or {@value #UNKNOWN}
 * @param commit  the {@value #COMMIT_ATTRIBUTE}, or {@value #UNKNOWN}
 */
public record BuildInfo(String version, String commit) {

    /** The manifest attribute with the version (Maven's {@code project.version}). */
    public static final String VERSION_ATTRIBUTE = "Implementation-Version";

    /** The manifest attribute with the full git commit id. */
    public static final String COMMIT_ATTRIBUTE = "Ar4j-Commit";

    /** The value when the manifest does not say. */
    public static final String UNKNOWN = "unknown";

    public BuildInfo {
        Objects.requireNonNull(version, "version");
        Objects.requireNonNull(commit, "commit");
    }

    private static final class Current {
        static final BuildInfo INFO = ofJarHolding(BuildInfo.class);
    }

    public static BuildInfo current() {
        return Current.INFO;
    }

    /** The build info of the jar a class was loaded from; unknown for a classes directory. */
    public static BuildInfo ofJarHolding(Class<?> type) {
        CodeSource source = type.getProtectionDomain().getCodeSource();
        if (source == null || source.getLocation() == null) {
            return new BuildInfo(UNKNOWN, UNKNOWN);
        }
        try {
            Path location = Path.of(source.getLocation().toURI());
            return Files.isRegularFile(location) ? ofJar(location) : new BuildInfo(UNKNOWN, UNKNOWN);
        } catch (URISyntaxException | IOException | RuntimeException e) {
            return new BuildInfo(UNKNOWN, UNKNOWN);
        }
    }

    /** The build info in a jar's manifest. */
    public static BuildInfo ofJar(Path jar) throws IOException {
        try (JarFile file = new JarFile(jar.toFile())) {
            Manifest manifest = file.getManifest();
            if (manifest == null) {
                return new BuildInfo(UNKNOWN, UNKNOWN);
            }
            Attributes main = manifest.getMainAttributes();
            return new BuildInfo(valueOrUnknown(main.getValue(VERSION_ATTRIBUTE)),
                    valueOrUnknown(main.getValue(COMMIT_ATTRIBUTE)));
        }
    }

    private static String valueOrUnknown(String value) {
        return value == null || value.isBlank() || value.startsWith("${") ? UNKNOWN : value.trim();
    }
}
