package dev.ar4j.internal.platform;

import dev.ar4j.NativeLibraryException;
import dev.ar4j.internal.platform.NativeLibraries.Library;
import dev.ar4j.internal.platform.NativeLibraries.LoadedLibrary;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.UnaryOperator;

/**
 * The search for one library, in the order {@link NativeLibraries} documents: the explicit
 * setting, the OS loader's names, the usual places; for the kernels, the {@code ar4j-cuda} jar
 * ({@link BundledKernels}). Package-private so that tests can drive it with their own inputs.
 */
final class LibrarySearch {

    private static final System.Logger LOG = System.getLogger(LibrarySearch.class.getName());

    private LibrarySearch() {
    }

    /**
     * What the search reads from the outside world.
     *
     * @param propertyValue the system property's value or null
     * @param environmentValue the environment variable's value or null
     * @param environment reads other environment variables (CUDA_HOME, CUDA_PATH, VIRTUAL_ENV, CONDA_PREFIX)
     * @param useOsLoader whether to try the OS loader's default names
     * @param usualPlaces whether to scan the usual directories
     */
    record SearchInputs(String propertyValue, String environmentValue, UnaryOperator<String> environment,
                        boolean useOsLoader, boolean usualPlaces) {
        static SearchInputs fromSystem(Library library) {
            return new SearchInputs(blankToNull(System.getProperty(library.systemProperty())),
                    blankToNull(System.getenv(library.environmentVariable())),
                    name -> blankToNull(System.getenv(name)), true, true);
        }
    }

    static String blankToNull(String s) {
        return s == null || s.isBlank() ? null : s.trim();
    }

    /** The places tried, and what happened at each. */
    static final class Attempts {
        final List<String> lines = new ArrayList<>();
        final List<Throwable> failures = new ArrayList<>();

        void note(String place, String outcome) {
            lines.add(place + ": " + outcome);
        }

        void failed(String place, Throwable failure) {
            lines.add(place + ": " + failure.getClass().getSimpleName() + ": " + failure.getMessage());
            failures.add(failure);
        }
    }

    static LoadedLibrary search(Library library, SearchInputs inputs) {
        Attempts attempts = new Attempts();
        String explicitSource = null;
        String explicitValue = null;
        if (inputs.propertyValue() != null) {
            explicitSource = "system property " + library.systemProperty();
            explicitValue = inputs.propertyValue();
        } else {
            attempts.note("system property " + library.systemProperty(), "not set");
            if (inputs.environmentValue() != null) {
                explicitSource = "environment variable " + library.environmentVariable();
                explicitValue = inputs.environmentValue();
            } else {
                attempts.note("environment variable " + library.environmentVariable(), "not set");
            }
        }
        if (explicitSource != null) {
            LoadedLibrary loaded = tryExplicit(library, explicitSource, explicitValue, attempts);
            if (loaded != null) {
                return loaded;
            }
            throw failure(library, attempts, "the search stops at an explicit setting; fix " + explicitSource);
        }
        if (library == Library.CUSTOM_ALL_REDUCE) {
            LoadedLibrary loaded = BundledKernels.load(library, attempts);
            if (loaded != null) {
                return loaded;
            }
            throw failure(library, attempts, null);
        }
        if (inputs.useOsLoader()) {
            for (String name : library.fileNames()) {
                LoadedLibrary loaded = tryOsLoaderName(library, name, attempts);
                if (loaded != null) {
                    return loaded;
                }
            }
        }
        if (inputs.usualPlaces()) {
            for (UsualPlace place : usualPlaces(library, inputs.environment())) {
                if (place.directory() == null) {
                    attempts.note(place.description(), place.skippedBecause());
                    continue;
                }
                Path dir = place.directory();
                for (String name : library.fileNames()) {
                    Path file = dir.resolve(name);
                    if (!Files.isRegularFile(file)) {
                        attempts.note(file.toString(), "no such file");
                        continue;
                    }
                    LoadedLibrary loaded = tryFile(library, file, file.toString(), "usual place " + dir, attempts);
                    if (loaded != null) {
                        return loaded;
                    }
                }
            }
        }
        throw failure(library, attempts, null);
    }

    private static LoadedLibrary tryExplicit(Library library, String source, String value, Attempts attempts) {
        Path path = Path.of(value).toAbsolutePath().normalize();
        String place = source + " = " + value;
        if (Files.isDirectory(path)) {
            for (String name : library.fileNames()) {
                Path file = path.resolve(name);
                if (!Files.isRegularFile(file)) {
                    attempts.note(place + " -> " + file, "no such file");
                    continue;
                }
                LoadedLibrary loaded = tryFile(library, file, place + " -> " + file, source, attempts);
                if (loaded != null) {
                    return loaded;
                }
            }
            return null;
        }
        if (!Files.exists(path)) {
            attempts.note(place, "no such file or directory (" + path + ")");
            return null;
        }
        return tryFile(library, path, place, source, attempts);
    }

    /**
     * Loads one file and checks that it is the library asked for (and, for the CUDA runtime, one
     * that ar4j can use).
     *
     * @return the loaded library, or null after noting why not in {@code attempts}
     * @throws NativeLibraryException when native access is refused, or the file is a CUDA runtime
     *                                too old to use (it is in the process now; no other copy is taken)
     */
    static LoadedLibrary tryFile(Library library, Path file, String place, String origin, Attempts attempts) {
        Path absolute = file.toAbsolutePath();
        try {
            System.load(absolute.toString());
        } catch (IllegalCallerException e) {
            throw nativeAccessRefused(library, "Loading " + library.description() + " from " + absolute, place, e);
        } catch (UnsatisfiedLinkError | SecurityException e) {
            attempts.failed(place, e);
            return null;
        }
        try (Arena arena = Arena.ofConfined()) { // a second handle to the same object, just to ask this file
            SymbolLookup own = SymbolLookup.libraryLookup(absolute, arena);
            Optional<MemorySegment> marker = own.find(library.markerSymbol());
            if (marker.isEmpty()) {
                attempts.note(place, "loaded, but it does not define " + library.markerSymbol() + ": it is not "
                        + library.description());
                return null;
            }
            if (library == Library.CUDART) {
                CudaRuntimeRequirement.check(absolute, marker.get(), place, attempts);
            }
        } catch (IllegalArgumentException e) {
            attempts.failed(place + " (looking up " + library.markerSymbol() + ")", e);
            return null;
        }
        if (SymbolLookup.loaderLookup().find(library.markerSymbol()).isEmpty()) {
            throw new NativeLibraryException(library.name(), "System.load(" + absolute + ") succeeded but "
                    + library.markerSymbol() + " is not visible through the class loader's lookup: load ar4j-runtime"
                    + " and ar4j-bindings in one class loader", List.copyOf(attempts.lines), null);
        }
        return new LoadedLibrary(library, absolute, origin);
    }

    private static NativeLibraryException nativeAccessRefused(Library library, String what, String place,
                                                              IllegalCallerException e) {
        return new NativeLibraryException(library.name(), what + " was refused: native access is not enabled for"
                + " ar4j. Add " + NativeLibraries.nativeAccessFlag() + " to the java command line.",
                List.of(place + ": " + e.getMessage()), e);
    }

    private static LoadedLibrary tryOsLoaderName(Library library, String name, Attempts attempts) {
        String place = "OS loader name " + name;
        MemorySegment marker;
        try {
            SymbolLookup lookup = SymbolLookup.libraryLookup(name, Arena.global());
            Optional<MemorySegment> found = lookup.find(library.markerSymbol());
            if (found.isEmpty()) {
                attempts.note(place, "found, but it does not define " + library.markerSymbol());
                return null;
            }
            marker = found.get();
        } catch (IllegalArgumentException e) { // dlopen failed: not on the loader's paths
            attempts.failed(place, e);
            return null;
        } catch (IllegalCallerException e) {
            throw nativeAccessRefused(library, "Looking up " + name, place, e);
        }
        Path resolved;
        try {
            resolved = SharedObjectPaths.pathContaining(marker);
        } catch (RuntimeException e) {
            attempts.failed(place + " (asking the loader for its path)", e);
            return null;
        }
        return tryFile(library, resolved, place + " -> " + resolved, "OS loader name " + name, attempts);
    }

    /** A directory to look in, or (directory null) a place that was skipped and why. */
    private record UsualPlace(Path directory, String description, String skippedBecause) {
        static UsualPlace of(Path directory) {
            return new UsualPlace(directory, directory.toString(), null);
        }

        static UsualPlace skipped(String description, String because) {
            return new UsualPlace(null, description, because);
        }
    }

    private static List<UsualPlace> usualPlaces(Library library, UnaryOperator<String> environment) {
        List<UsualPlace> places = new ArrayList<>();
        if (library == Library.CUDA_DRIVER) {
            for (String d : List.of("/usr/local/nvidia/lib64", "/usr/local/nvidia/lib", "/usr/lib/x86_64-linux-gnu",
                    "/usr/lib64", "/usr/lib/wsl/lib")) {
                places.add(UsualPlace.of(Path.of(d)));
            }
            return places;
        }
        for (String variable : List.of("CUDA_HOME", "CUDA_PATH")) {
            String value = environment.apply(variable);
            places.add(value == null ? UsualPlace.skipped("$" + variable + "/lib64", variable + " not set")
                    : UsualPlace.of(Path.of(value, "lib64")));
        }
        places.add(UsualPlace.of(Path.of("/usr/local/cuda/lib64")));
        List<Path> roots = new ArrayList<>();
        for (String variable : List.of("VIRTUAL_ENV", "CONDA_PREFIX")) {
            String value = environment.apply(variable);
            if (value == null) {
                places.add(UsualPlace.skipped("Python environment $" + variable, variable + " not set"));
            } else {
                roots.add(Path.of(value));
            }
        }
        roots.add(Path.of("/opt/torch/.venv"));
        for (Path root : roots) {
            List<Path> found = pythonNvidiaLibDirs(root);
            if (found.isEmpty()) {
                places.add(UsualPlace.skipped(root + "/lib/python3*/site-packages/nvidia/*/lib", "no such directory"));
            }
            found.forEach(dir -> places.add(UsualPlace.of(dir)));
        }
        Set<Path> seen = new HashSet<>();
        places.removeIf(place -> place.directory() != null && !seen.add(place.directory())); // e.g. CUDA_HOME=/usr/local/cuda
        return places;
    }

    /** {@code root/lib/python3.X/site-packages/nvidia/PKG/lib} directories, sorted. */
    static List<Path> pythonNvidiaLibDirs(Path root) {
        List<Path> result = new ArrayList<>();
        Path lib = root.resolve("lib");
        if (!Files.isDirectory(lib)) {
            return result;
        }
        for (Path python : sortedChildren(lib, "python3*")) {
            Path nvidia = python.resolve("site-packages").resolve("nvidia");
            for (Path pkg : sortedChildren(nvidia, "*")) {
                Path pkgLib = pkg.resolve("lib");
                if (Files.isDirectory(pkgLib)) {
                    result.add(pkgLib);
                }
            }
        }
        return result;
    }

    private static List<Path> sortedChildren(Path dir, String glob) {
        List<Path> children = new ArrayList<>();
        if (!Files.isDirectory(dir)) {
            return children;
        }
        try (DirectoryStream<Path> stream = Files.newDirectoryStream(dir, glob)) {
            for (Path p : stream) {
                if (Files.isDirectory(p)) {
                    children.add(p);
                }
            }
        } catch (IOException e) {
            LOG.log(System.Logger.Level.DEBUG, () -> "cannot list " + dir + ": " + e);
        }
        children.sort(null);
        return children;
    }

    static NativeLibraryException failure(Library library, Attempts attempts, String note) {
        StringBuilder message = new StringBuilder();
        message.append("Could not load ").append(library.description()).append(". Tried, in order:");
        int i = 1;
        for (String line : attempts.lines) {
            message.append("\n  ").append(i++).append(". ").append(line);
        }
        if (note != null) {
            message.append("\n(").append(note).append(")");
        }
        message.append("\nTo use a specific file, set -D").append(library.systemProperty())
                .append("=/path/to/").append(library.fileNames().getFirst())
                .append(" or the environment variable ").append(library.environmentVariable())
                .append(" (a file, or a directory holding ").append(String.join(" or ", library.fileNames()))
                .append(").");
        if (library == Library.CUDA_DRIVER) {
            message.append(" libcuda.so.1 comes with the NVIDIA driver; machines without a GPU driver have none.");
        }
        if (library == Library.CUSTOM_ALL_REDUCE) {
            message.append(" The copy in the ar4j-cuda jar is extracted into -D").append(NativeCache.PROPERTY)
                    .append(" (or ").append(NativeCache.ENVIRONMENT_VARIABLE)
                    .append("): a writable directory on a file system not mounted noexec.");
        }
        NativeLibraryException exception = new NativeLibraryException(library.name(), message.toString(), attempts.lines,
                null);
        attempts.failures.forEach(exception::addSuppressed);
        return exception;
    }
}
