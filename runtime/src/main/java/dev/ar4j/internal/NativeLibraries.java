package dev.ar4j.internal;

import dev.ar4j.NativeLibraryException;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.net.URL;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.function.UnaryOperator;

/**
 * The one place that loads ar4j's native libraries: the CUDA runtime ({@code libcudart}), the
 * CUDA driver ({@code libcuda}, loaded lazily: only the few driver calls need it), NCCL
 * ({@code libnccl}) and ar4j's own kernels ({@code libar4j_custom_ar}).
 *
 * <p>Every library is loaded with {@link System#load(String)} from an absolute path, so the
 * jextract bindings (generated without a library name) find its symbols through
 * {@link SymbolLookup#loaderLookup()}. That lookup belongs to a class loader: the
 * {@code ar4j-bindings} and {@code ar4j-runtime} jars must be in the same one (the class path, or
 * both on the module path); {@link #load} checks it.
 *
 * <h2>Search order</h2>
 * For each library, the first of these that is set or succeeds wins:
 * <ol>
 *   <li>the system property ({@code ar4j.cudart.path}, {@code ar4j.cuda.path},
 *       {@code ar4j.nccl.path}, {@code ar4j.customar.path}), else the environment variable
 *       ({@code AR4J_CUDART_PATH}, {@code AR4J_CUDA_PATH}, {@code AR4J_NCCL_PATH},
 *       {@code AR4J_CUSTOMAR_PATH}): a path to the library file, or to a directory holding it under
 *       its usual name. An explicit setting is final: if it does not load, the search stops there
 *       and fails, rather than quietly taking another copy;</li>
 *   <li>the operating system loader's default names ({@code libcudart.so.13},
 *       {@code libcudart.so.12}; {@code libcuda.so.1}; {@code libnccl.so.2}), found the way
 *       {@code dlopen} finds them ({@code LD_LIBRARY_PATH}, {@code ld.so.cache}, system
 *       directories) and then loaded by the path the loader resolved;</li>
 *   <li>the usual places: {@code $CUDA_HOME/lib64}, {@code $CUDA_PATH/lib64},
 *       {@code /usr/local/cuda/lib64}; for the driver {@code /usr/local/nvidia/lib64},
 *       {@code /usr/local/nvidia/lib}, {@code /usr/lib/x86_64-linux-gnu}, {@code /usr/lib64},
 *       {@code /usr/lib/wsl/lib}; for cudart and NCCL the Python wheels'
 *       {@code lib/python3.*}{@code /site-packages/nvidia/*}{@code /lib} under {@code $VIRTUAL_ENV},
 *       {@code $CONDA_PREFIX} and {@code /opt/torch/.venv} (directories are scanned; no Python is
 *       run).</li>
 * </ol>
 * {@code libar4j_custom_ar} has no search: an explicit path, else the copy inside the
 * {@code ar4j-cuda} jar ({@value #CUSTOM_AR_RESOURCE}), extracted once per JVM to a private
 * temporary directory that is deleted on exit. It needs libcudart, which is loaded first.
 *
 * <p>A failure throws {@link NativeLibraryException} naming every place tried, what happened
 * there, and the property and variable to set; each attempt that threw is attached as suppressed.
 *
 * <h2>Native access</h2>
 * The bindings and the runtime call restricted methods. Run with
 * {@code --enable-native-access=ALL-UNNAMED} on the class path, or
 * {@code --enable-native-access=dev.ar4j.runtime,dev.ar4j.bindings} on the module path;
 * {@link #nativeAccessFlag()} gives the one that fits this deployment. Without it the JDK warns
 * (or, with {@code --illegal-native-access=deny}, refuses); ar4j logs the flag to add once, and a
 * refusal becomes a {@link NativeLibraryException} that names it.
 */
public final class NativeLibraries {

    /** Class-path resource of the bundled kernels in the {@code ar4j-cuda} jar. */
    public static final String CUSTOM_AR_RESOURCE = "META-INF/native/linux-x86_64/libar4j_custom_ar.so";

    private static final System.Logger LOG = System.getLogger(NativeLibraries.class.getName());

    /** The native libraries ar4j loads. */
    public enum Library {
        /** The CUDA runtime. */
        CUDART("the CUDA runtime (libcudart)", "ar4j.cudart.path", "AR4J_CUDART_PATH",
                List.of("libcudart.so.13", "libcudart.so.12"), "cudaRuntimeGetVersion"),
        /** The CUDA driver; ships with the NVIDIA driver, absent on machines without one. */
        CUDA_DRIVER("the CUDA driver (libcuda)", "ar4j.cuda.path", "AR4J_CUDA_PATH",
                List.of("libcuda.so.1"), "cuInit"),
        /** NCCL. */
        NCCL("NCCL (libnccl)", "ar4j.nccl.path", "AR4J_NCCL_PATH",
                List.of("libnccl.so.2"), "ncclGetVersion"),
        /** ar4j's custom all-reduce kernels. */
        CUSTOM_ALL_REDUCE("ar4j's custom all-reduce kernels (libar4j_custom_ar)", "ar4j.customar.path",
                "AR4J_CUSTOMAR_PATH", List.of("libar4j_custom_ar.so"), "ar4j_abi_version");

        private final String description;
        private final String systemProperty;
        private final String environmentVariable;
        private final List<String> fileNames;
        private final String markerSymbol;

        Library(String description, String systemProperty, String environmentVariable, List<String> fileNames,
                String markerSymbol) {
            this.description = description;
            this.systemProperty = systemProperty;
            this.environmentVariable = environmentVariable;
            this.fileNames = fileNames;
            this.markerSymbol = markerSymbol;
        }

        /** What the library is, for messages. */
        public String description() {
            return description;
        }

        /** The system property that gives the library's path. */
        public String systemProperty() {
            return systemProperty;
        }

        /** The environment variable that gives the library's path (after the property). */
        public String environmentVariable() {
            return environmentVariable;
        }

        /** The file names (sonames) looked for, preferred first. */
        public List<String> fileNames() {
            return fileNames;
        }

        /** A symbol every build of the library defines; checked after loading. */
        public String markerSymbol() {
            return markerSymbol;
        }
    }

    /**
     * A loaded library.
     *
     * @param library which one
     * @param path    the absolute path passed to {@link System#load(String)}
     * @param origin  how it was found, e.g. "system property ar4j.nccl.path" or "OS loader name libcudart.so.13"
     */
    public record LoadedLibrary(Library library, Path path, String origin) {
        public LoadedLibrary {
            Objects.requireNonNull(library);
            Objects.requireNonNull(path);
            Objects.requireNonNull(origin);
        }
    }

    private static final Map<Library, LoadedLibrary> LOADED = new EnumMap<>(Library.class);
    private static volatile LoadedLibrary cudart;
    private static volatile LoadedLibrary cudaDriver;
    private static volatile LoadedLibrary nccl;
    private static volatile LoadedLibrary customAllReduce;
    private static boolean nativeAccessChecked;

    private NativeLibraries() {
    }

    /** Loads the CUDA runtime (once) and says where it came from. */
    public static LoadedLibrary cudart() {
        LoadedLibrary loaded = cudart;
        return loaded != null ? loaded : load(Library.CUDART);
    }

    /**
     * Loads the CUDA driver library (once). Only the driver API calls need it; machines without an
     * NVIDIA driver have none, and this then throws {@link NativeLibraryException}.
     */
    public static LoadedLibrary cudaDriver() {
        LoadedLibrary loaded = cudaDriver;
        return loaded != null ? loaded : load(Library.CUDA_DRIVER);
    }

    /** Loads NCCL (once). */
    public static LoadedLibrary nccl() {
        LoadedLibrary loaded = nccl;
        return loaded != null ? loaded : load(Library.NCCL);
    }

    /** Loads libcudart and then ar4j's custom all-reduce kernels (once). */
    public static LoadedLibrary customAllReduce() {
        LoadedLibrary loaded = customAllReduce;
        return loaded != null ? loaded : load(Library.CUSTOM_ALL_REDUCE);
    }

    /** The library if it has been loaded, without loading it. */
    public static synchronized Optional<LoadedLibrary> loaded(Library library) {
        return Optional.ofNullable(LOADED.get(library));
    }

    /**
     * Loads a library (once per JVM) following the documented search order.
     *
     * @throws NativeLibraryException naming every place tried
     */
    public static synchronized LoadedLibrary load(Library library) {
        Objects.requireNonNull(library, "library");
        LoadedLibrary loaded = LOADED.get(library);
        if (loaded != null) {
            return loaded;
        }
        checkDeploymentOnce();
        if (library == Library.CUSTOM_ALL_REDUCE) {
            load(Library.CUDART); // its NEEDED entry; must be in the process before dlopen resolves it
        }
        LoadedLibrary found = search(library, SearchInputs.fromSystem(library));
        LOADED.put(library, found);
        switch (library) {
            case CUDART -> cudart = found;
            case CUDA_DRIVER -> cudaDriver = found;
            case NCCL -> nccl = found;
            case CUSTOM_ALL_REDUCE -> customAllReduce = found;
        }
        LOG.log(System.Logger.Level.DEBUG, () -> "loaded " + library.description() + " from " + found.path()
                + " (" + found.origin() + ")");
        return found;
    }

    /**
     * The {@code --enable-native-access} option this deployment needs: {@code ALL-UNNAMED} when
     * ar4j is on the class path, the module names when it is on the module path.
     */
    public static String nativeAccessFlag() {
        Set<String> names = new LinkedHashSet<>();
        for (Module module : List.of(NativeLibraries.class.getModule(), bindingsModule())) {
            names.add(module.isNamed() ? module.getName() : "ALL-UNNAMED");
        }
        return "--enable-native-access=" + String.join(",", names);
    }

    /** Whether both the runtime's and the bindings' modules may call restricted methods without warnings. */
    public static boolean nativeAccessEnabled() {
        return NativeLibraries.class.getModule().isNativeAccessEnabled() && bindingsModule().isNativeAccessEnabled();
    }

    private static Module bindingsModule() {
        return dev.ar4j.bindings.cudart.cuda_runtime_api_h.class.getModule();
    }

    private static void checkDeploymentOnce() {
        if (nativeAccessChecked) {
            return;
        }
        if (NativeLibraries.class.getClassLoader() != dev.ar4j.bindings.cudart.cuda_runtime_api_h.class.getClassLoader()) {
            throw new IllegalStateException("ar4j-runtime and ar4j-bindings are in different class loaders ("
                    + NativeLibraries.class.getClassLoader() + " and "
                    + dev.ar4j.bindings.cudart.cuda_runtime_api_h.class.getClassLoader()
                    + "): the bindings find native symbols through their class loader's libraries, which are"
                    + " the ones the runtime loads. Put both jars in the same class loader.");
        }
        nativeAccessChecked = true;
        if (!nativeAccessEnabled()) {
            LOG.log(System.Logger.Level.WARNING, "ar4j calls native code (CUDA, NCCL) through the FFM API, but native"
                    + " access is not enabled for it; the JDK warns now and will refuse in a future release. Add "
                    + nativeAccessFlag() + " to the java command line.");
        }
    }

    // ----------------------------------------------------------------------------------------
    // The search (package-private so that tests can drive it with their own inputs)

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

    private static String blankToNull(String s) {
        return s == null || s.isBlank() ? null : s.trim();
    }

    /** One place tried, and what happened there. */
    private static final class Attempts {
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
            LoadedLibrary loaded = tryJarResource(library, attempts);
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

    private static LoadedLibrary tryFile(Library library, Path file, String place, String origin, Attempts attempts) {
        Path absolute = file.toAbsolutePath();
        try {
            System.load(absolute.toString());
        } catch (IllegalCallerException e) {
            throw new NativeLibraryException(library.name(), "Loading " + library.description() + " from " + absolute
                    + " was refused: native access is not enabled for ar4j. Add " + nativeAccessFlag()
                    + " to the java command line.", List.of(place + ": " + e.getMessage()), e);
        } catch (UnsatisfiedLinkError | SecurityException e) {
            attempts.failed(place, e);
            return null;
        }
        boolean definesMarker;
        try (Arena arena = Arena.ofConfined()) { // a second handle to the same object, just to ask this file
            definesMarker = SymbolLookup.libraryLookup(absolute, arena).find(library.markerSymbol()).isPresent();
        } catch (IllegalArgumentException e) {
            attempts.failed(place + " (looking up " + library.markerSymbol() + ")", e);
            return null;
        }
        if (!definesMarker) {
            attempts.note(place, "loaded, but it does not define " + library.markerSymbol() + ": it is not "
                    + library.description());
            return null;
        }
        if (SymbolLookup.loaderLookup().find(library.markerSymbol()).isEmpty()) {
            throw new IllegalStateException("System.load(" + absolute + ") succeeded but " + library.markerSymbol()
                    + " is not visible through the class loader's lookup");
        }
        return new LoadedLibrary(library, absolute, origin);
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
            throw new NativeLibraryException(library.name(), "Looking up " + name + " was refused: native access is not"
                    + " enabled for ar4j. Add " + nativeAccessFlag() + " to the java command line.",
                    List.of(place + ": " + e.getMessage()), e);
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

    private static LoadedLibrary tryJarResource(Library library, Attempts attempts) {
        String place = "class-path resource " + CUSTOM_AR_RESOURCE;
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        if (!os.contains("linux") || !(arch.equals("amd64") || arch.equals("x86_64"))) {
            attempts.note(place, "the ar4j-cuda jar carries a linux-x86_64 build only; this JVM runs on "
                    + os + "/" + arch);
            return null;
        }
        ClassLoader loader = NativeLibraries.class.getClassLoader();
        URL url = loader == null ? ClassLoader.getSystemResource(CUSTOM_AR_RESOURCE) : loader.getResource(CUSTOM_AR_RESOURCE);
        if (url == null) {
            attempts.note(place, "not on the class path (the ar4j-cuda jar is missing, or was built with"
                    + " -Dar4j.native.skip=true and carries no library)");
            return null;
        }
        Path extracted;
        try {
            extracted = extract(url);
        } catch (IOException e) {
            attempts.failed(place + " (extracting " + url + ")", e);
            return null;
        }
        return tryFile(library, extracted, place + " -> " + extracted, "ar4j-cuda jar (" + url + ")", attempts);
    }

    private static Path extract(URL url) throws IOException {
        Path dir;
        try {
            dir = Files.createTempDirectory("ar4j-native-",
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        } catch (UnsupportedOperationException e) {
            dir = Files.createTempDirectory("ar4j-native-");
        }
        dir.toFile().deleteOnExit(); // registered first, so deleted after the file below
        Path file = dir.resolve("libar4j_custom_ar.so");
        file.toFile().deleteOnExit();
        try (InputStream in = url.openStream()) {
            Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
        }
        return file;
    }

    private static NativeLibraryException failure(Library library, Attempts attempts, String note) {
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
        NativeLibraryException exception = new NativeLibraryException(library.name(), message.toString(), attempts.lines,
                null);
        attempts.failures.forEach(exception::addSuppressed);
        return exception;
    }

    /** Asks the dynamic loader which file holds an address ({@code dladdr}). */
    static final class SharedObjectPaths {
        private static final MethodHandle DLADDR;

        static {
            Linker linker = Linker.nativeLinker();
            DLADDR = linker.defaultLookup().find("dladdr")
                    .map(address -> linker.downcallHandle(address,
                            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS)))
                    .orElse(null);
        }

        private SharedObjectPaths() {
        }

        static Path pathContaining(MemorySegment address) {
            if (DLADDR == null) {
                throw new IllegalStateException("dladdr is not available from the C library");
            }
            try (Arena arena = Arena.ofConfined()) {
                // Dl_info { const char *dli_fname; void *dli_fbase; const char *dli_sname; void *dli_saddr; }
                MemorySegment info = arena.allocate(4 * ValueLayout.ADDRESS.byteSize(), ValueLayout.ADDRESS.byteAlignment());
                int ok = (int) DLADDR.invokeExact(address, info);
                MemorySegment name = info.get(ValueLayout.ADDRESS, 0);
                if (ok == 0 || name.address() == 0) {
                    throw new IllegalStateException("dladdr does not know the address " + address);
                }
                String file = name.reinterpret(4096).getString(0);
                return Path.of(file).toAbsolutePath();
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IllegalStateException("dladdr failed", t);
            }
        }
    }
}
