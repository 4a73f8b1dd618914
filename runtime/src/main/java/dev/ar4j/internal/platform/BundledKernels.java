package dev.ar4j.internal.platform;

import dev.ar4j.ConfigurationException;
import dev.ar4j.internal.platform.NativeLibraries.Library;
import dev.ar4j.internal.platform.NativeLibraries.LoadedLibrary;
import dev.ar4j.natives.BundledLibraries;
import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.CodeSource;
import java.util.EnumSet;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;

/**
 * The kernels library inside the {@code ar4j-cuda} jar (module {@code dev.ar4j.cuda}): finds the
 * variants it holds for this platform, with the right diagnosis when the jar is absent (class path
 * or module path), chooses one by the driver's CUDA version ({@link KernelsVariantChoice}), puts it
 * in the {@link NativeCache} and loads it from there. Where the cache cannot be used (not
 * writable, or on a file system mounted {@code noexec}), it loads a temporary copy that is deleted
 * right after {@code dlopen}, so that nothing is left behind either way.
 */
final class BundledKernels {

    private static final System.Logger LOG = System.getLogger(BundledKernels.class.getName());

    /** The last choice of a variant (the driver's version, the variant and why), for {@code Ar4j}. */
    private static volatile String lastChoice;

    private BundledKernels() {
    }

    /**
     * This JVM's platform as the jar's directories name it.
     *
     * @return e.g. {@code linux-x86_64}, or empty on an operating system or CPU ar4j has no build for
     */
    static Optional<String> platform(String osName, String osArch) {
        String os = osName.toLowerCase(Locale.ROOT);
        String arch = osArch.toLowerCase(Locale.ROOT);
        if (!os.contains("linux")) {
            return Optional.empty();
        }
        return switch (arch) {
            case "amd64", "x86_64" -> Optional.of("linux-x86_64");
            case "aarch64", "arm64" -> Optional.of("linux-aarch64");
            default -> Optional.empty();
        };
    }

    static LoadedLibrary load(Library library, LibrarySearch.Attempts attempts) {
        String osName = System.getProperty("os.name", "");
        String osArch = System.getProperty("os.arch", "");
        Optional<String> platform = platform(osName, osArch);
        if (platform.isEmpty()) {
            attempts.note("the ar4j-cuda jar", "ar4j's kernels are built for Linux (x86-64; aarch64 where built"
                    + " there) only; this JVM runs on " + osName + "/" + osArch);
            return null;
        }
        Optional<Set<KernelsVariant>> bundled = find(platform.get(), attempts);
        if (bundled.isEmpty()) {
            return null;
        }
        KernelsVariantChoice choice = KernelsVariantChoice.choose(
                KernelsVariantChoice.Forced.from(System.getProperty(KernelsVariantChoice.PROPERTY),
                        System.getenv(KernelsVariantChoice.ENVIRONMENT_VARIABLE)),
                DriverCudaVersion.read(), bundled.get());
        attempts.note("the kernels variant", choice.reason());
        lastChoice = choice.reason();
        if (choice.variant().isEmpty()) {
            return null;
        }
        LOG.log(System.Logger.Level.INFO, "ar4j kernels: " + choice.reason());
        String variant = choice.variant().get().directory();
        Optional<URL> resource = BundledLibraries.kernels(platform.get(), variant);
        if (resource.isEmpty()) {
            attempts.note("the ar4j-cuda jar", BundledLibraries.kernelsResourceName(platform.get(), variant)
                    + " vanished after it was listed");
            return null;
        }
        String place = "ar4j-cuda jar resource " + BundledLibraries.kernelsResourceName(platform.get(), variant);
        NativeCache cache;
        try {
            cache = NativeCache.configured(System::getProperty, System::getenv);
        } catch (ConfigurationException | IllegalStateException e) {
            attempts.failed(place + " (choosing the cache directory)", e);
            return loadTemporaryCopy(library, resource.get(), place, attempts);
        }
        NativeCache.Entry entry;
        try {
            entry = cache.store(resource.get(), BundledLibraries.KERNELS_FILE_NAME);
        } catch (IOException | RuntimeException e) {
            attempts.failed(place + " -> cache " + cache.root() + " (" + cache.rootSource() + ")", e);
            return loadTemporaryCopy(library, resource.get(), place, attempts);
        }
        String how = entry.written() ? "extracted to" : "reused from";
        LoadedLibrary loaded = LibrarySearch.tryFile(library, entry.file(), place + " -> " + entry.file(),
                "ar4j-cuda jar, " + how + " the cache " + entry.file().getParent() + " (" + cache.rootSource() + ")",
                attempts);
        return loaded != null ? loaded : loadTemporaryCopy(library, resource.get(), place, attempts);
    }

    /**
     * The last choice of a kernels variant in this JVM: the driver's version, the variant loaded
     * (or why none could be) and why.
     *
     * @return the choice's reason, or empty when the kernels were not loaded from the jar
     */
    static Optional<String> lastChoice() {
        return Optional.ofNullable(lastChoice);
    }

    /**
     * The variants the jar holds for this platform, or empty after noting why there are none:
     * the jar is not there (and where it should be), or it carries no library for this platform.
     */
    private static Optional<Set<KernelsVariant>> find(String platform, LibrarySearch.Attempts attempts) {
        Set<KernelsVariant> held = EnumSet.noneOf(KernelsVariant.class);
        try {
            for (KernelsVariant variant : KernelsVariant.values()) {
                if (BundledLibraries.kernels(platform, variant.directory()).isPresent()) {
                    held.add(variant);
                }
            }
        } catch (NoClassDefFoundError e) {
            attempts.note("the ar4j-cuda jar (module dev.ar4j.cuda)", missingJar());
            return Optional.empty();
        }
        if (held.isEmpty()) {
            attempts.note("the ar4j-cuda jar (module dev.ar4j.cuda) at " + location(),
                    "it carries no " + BundledLibraries.kernelsResourceName(platform, "<cu13|cu12>") + " (built"
                            + " with -Dar4j.native.skip=true, or for another platform than " + platform + "); "
                            + BundledLibraries.KERNELS_FILE_NAME + " is not in it");
            return Optional.empty();
        }
        return Optional.of(held);
    }

    /** Why the {@code dev.ar4j.natives} classes are not visible here, for the deployment at hand. */
    static String missingJar() {
        Module runtime = BundledKernels.class.getModule();
        if (runtime.isNamed()) {
            return "module dev.ar4j.cuda is not readable from " + runtime.getName() + " (it requires it, so this"
                    + " happens only in a custom module layer): add the ar4j-cuda jar to that layer's module path";
        }
        return "not on the class path: ar4j-runtime is on the class path, so the ar4j-cuda jar must be there"
                + " too (a jar on the module path is not resolved for class-path code unless named with"
                + " --add-modules dev.ar4j.cuda; or put every ar4j jar on the module path). With Maven or Gradle,"
                + " do not exclude the dev.ar4j:ar4j-cuda dependency of ar4j-runtime";
    }

    private static String location() {
        CodeSource source = BundledLibraries.class.getProtectionDomain().getCodeSource();
        return source == null || source.getLocation() == null ? "(unknown location)" : source.getLocation().toString();
    }

    /**
     * The fallback: a private temporary copy, loaded, then deleted at once (the mapping stays
     * valid), so that even a JVM killed right after leaves nothing behind.
     */
    private static LoadedLibrary loadTemporaryCopy(Library library, URL resource, String place,
                                                   LibrarySearch.Attempts attempts) {
        Path dir;
        try {
            dir = Files.createTempDirectory("ar4j-native-");
        } catch (IOException | RuntimeException e) {
            attempts.failed(place + " -> a temporary copy in java.io.tmpdir", e);
            return null;
        }
        Path file = dir.resolve(BundledLibraries.KERNELS_FILE_NAME);
        try {
            try (InputStream in = resource.openStream()) {
                Files.copy(in, file);
            }
            LoadedLibrary loaded = LibrarySearch.tryFile(library, file, place + " -> temporary copy " + file,
                    "ar4j-cuda jar, a temporary copy deleted after loading (the cache was not usable)", attempts);
            if (loaded != null) {
                LOG.log(System.Logger.Level.WARNING, "ar4j loaded its kernels from a temporary copy, deleted after"
                        + " loading, because its native cache could not be used (see -D" + NativeCache.PROPERTY
                        + " or " + NativeCache.ENVIRONMENT_VARIABLE + "): " + String.join("; ", attempts.lines));
            }
            return loaded;
        } catch (IOException e) {
            attempts.failed(place + " -> temporary copy " + file, e);
            return null;
        } finally {
            deleteQuietly(file);
            deleteQuietly(dir);
        }
    }

    private static void deleteQuietly(Path path) {
        try {
            Files.deleteIfExists(path);
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "could not delete " + path + ": " + e);
        }
    }
}
