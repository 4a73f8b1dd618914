package dev.ar4j.benchmarks.perf;

import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.CodeSource;
import java.util.jar.Attributes;
import java.util.jar.JarFile;
import java.util.jar.Manifest;

/**
 * The version and commit of the ar4j build this program runs from, read from its jar's manifest
 * ({@code Implementation-Version} and {@code Ar4j-Commit}); printed by {@code -V} and written into
 * every result file.
 *
 * @param version the {@code Implementation-Version}, or {@link #UNKNOWN} followed by why
 * @param commit  the {@code Ar4j-Commit}, or {@link #UNKNOWN} followed by why
 * @param source  where it was read: the jar's path, or the class directory
 */
public record Ar4jVersion(String version, String commit, String source) {
    /** The manifest attribute naming the commit a jar was built from. */
    public static final String COMMIT_ATTRIBUTE = "Ar4j-Commit";
    /** The start of every value that could not be read. */
    public static final String UNKNOWN = "unknown";

    /** {@return the version of the jar holding this class (the shaded benchmarks.jar on a GPU host)} */
    public static Ar4jVersion current() {
        return of(Ar4jVersion.class);
    }

    /** The version of the jar holding {@code type}. */
    static Ar4jVersion of(Class<?> type) {
        CodeSource code = type.getProtectionDomain().getCodeSource();
        if (code == null || code.getLocation() == null || !code.getLocation().getProtocol().equals("file")) {
            return new Ar4jVersion(UNKNOWN + " (not from a jar)", UNKNOWN + " (not from a jar)", "no code source");
        }
        Path location;
        try {
            location = Path.of(code.getLocation().toURI());
        } catch (URISyntaxException | IllegalArgumentException e) {
            return new Ar4jVersion(UNKNOWN + " (not from a jar)", UNKNOWN + " (not from a jar)",
                    code.getLocation().toString());
        }
        return fromLocation(location);
    }

    /** Reads the manifest of a jar; a class directory (a build tree, an IDE) has none. */
    static Ar4jVersion fromLocation(Path location) {
        if (Files.isDirectory(location)) {
            String why = UNKNOWN + " (not from a jar: classes in " + location + ")";
            return new Ar4jVersion(why, why, location.toString());
        }
        try (JarFile jar = new JarFile(location.toFile())) {
            Manifest manifest = jar.getManifest();
            if (manifest == null) {
                String why = UNKNOWN + " (" + location.getFileName() + " has no manifest)";
                return new Ar4jVersion(why, why, location.toString());
            }
            return fromManifest(manifest, location.toString());
        } catch (IOException e) {
            String why = UNKNOWN + " (cannot read " + location + ": " + e.getMessage() + ")";
            return new Ar4jVersion(why, why, location.toString());
        }
    }

    /** The two attributes of a manifest, each {@link #UNKNOWN} with the reason when absent. */
    static Ar4jVersion fromManifest(Manifest manifest, String source) {
        Attributes main = manifest.getMainAttributes();
        String version = main.getValue(Attributes.Name.IMPLEMENTATION_VERSION);
        String commit = main.getValue(COMMIT_ATTRIBUTE);
        return new Ar4jVersion(
                blank(version) ? UNKNOWN + " (no Implementation-Version in the manifest)" : version.trim(),
                blank(commit) ? UNKNOWN + " (no " + COMMIT_ATTRIBUTE + " in the manifest)" : commit.trim(),
                source);
    }

    /** {@return the version and commit in one line, e.g. "0.1.0 (commit 1a2b3c4)"} */
    public String describe() {
        return version + " (commit " + commit + ")";
    }

    private static boolean blank(String s) {
        return s == null || s.isBlank();
    }
}
