package dev.ar4j.internal.platform;

import dev.ar4j.ConfigurationException;
import dev.ar4j.NativeLibraryException;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * The one place that loads ar4j's native libraries: the CUDA runtime ({@code libcudart}), the
 * CUDA driver ({@code libcuda}, loaded lazily: only the few driver calls need it), NCCL
 * ({@code libnccl}) and ar4j's own kernels ({@code libar4j_custom_ar}). This class keeps what was
 * loaded and checks the deployment; the search is {@link LibrarySearch}, the kernels' extraction
 * {@link BundledKernels} and {@link NativeCache}, the CUDA runtime's version check
 * {@link CudaRuntimeRequirement}.
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
 * {@code ar4j-cuda} jar (module {@code dev.ar4j.cuda}) of the newest variant the driver runs
 * ({@code cu13}: CUDA 13.0, driver 580 or newer; {@code cu12}: CUDA 12.4, driver 525.60.13 or
 * newer; {@code ar4j.kernels.variant} or {@code AR4J_KERNELS_VARIANT} {@code =cu12|cu13} forces
 * one; the choice is logged and {@link #kernelsVariantChoice()}), extracted into a content-addressed cache
 * directory ({@link NativeCache}: {@code ar4j.native.cacheDir}, {@code AR4J_NATIVE_CACHE_DIR},
 * default {@code ${XDG_CACHE_HOME:-~/.cache}/ar4j/native/<sha256>/}) and reused by later JVMs; where
 * that directory cannot be used, into a temporary file deleted right after it is loaded.
 *
 * <p>A CUDA runtime older than {@value CudaRuntimeRequirement#MINIMUM_VERSION_TEXT} is refused
 * ({@link CudaRuntimeRequirement}). A failure throws {@link NativeLibraryException} naming every
 * place tried, what happened there, and the property and variable to set; each attempt that
 * threw is attached as suppressed.
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

    /**
     * Class-path resource of the bundled kernels' cu13 variant in the {@code ar4j-cuda} jar on
     * linux-x86_64 (the platform built and tested; {@link BundledKernels} picks the platform and
     * variant for this JVM).
     */
    public static final String CUSTOM_AR_RESOURCE = "META-INF/native/linux-x86_64/cu13/libar4j_custom_ar.so";

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

        /**
         * What the library is, for messages.
         *
         * @return e.g. "NCCL (libnccl)"
         */
        public String description() {
            return description;
        }

        /**
         * The system property that gives the library's path.
         *
         * @return e.g. {@code ar4j.nccl.path}
         */
        public String systemProperty() {
            return systemProperty;
        }

        /**
         * The environment variable that gives the library's path (after the property).
         *
         * @return e.g. {@code AR4J_NCCL_PATH}
         */
        public String environmentVariable() {
            return environmentVariable;
        }

        /**
         * The file names (sonames) looked for, preferred first.
         *
         * @return e.g. {@code [libnccl.so.2]}
         */
        public List<String> fileNames() {
            return fileNames;
        }

        /**
         * A symbol every build of the library defines; checked after loading.
         *
         * @return e.g. {@code ncclGetVersion}
         */
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
        /**
         * Checks that no component is null.
         *
         * @param library which one
         * @param path    the absolute path passed to {@link System#load(String)}
         * @param origin  how it was found
         */
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

    /**
     * Loads the CUDA runtime (once) and says where it came from.
     *
     * @return the loaded library
     * @throws NativeLibraryException if none is found, or the one found is older than CUDA 12.0
     */
    public static LoadedLibrary cudart() {
        LoadedLibrary loaded = cudart;
        return loaded != null ? loaded : load(Library.CUDART);
    }

    /**
     * Loads the CUDA driver library (once). Only the driver API calls need it; machines without an
     * NVIDIA driver have none, and this then throws {@link NativeLibraryException}.
     *
     * @return the loaded library
     */
    public static LoadedLibrary cudaDriver() {
        LoadedLibrary loaded = cudaDriver;
        return loaded != null ? loaded : load(Library.CUDA_DRIVER);
    }

    /**
     * Loads NCCL (once).
     *
     * @return the loaded library
     */
    public static LoadedLibrary nccl() {
        LoadedLibrary loaded = nccl;
        return loaded != null ? loaded : load(Library.NCCL);
    }

    /**
     * Loads libcudart (which the Java facades beside the kernels call) and then ar4j's custom
     * all-reduce kernels (once). The kernels themselves carry a static CUDA runtime and need only
     * the NVIDIA driver.
     *
     * @return the loaded kernels library
     */
    public static LoadedLibrary customAllReduce() {
        LoadedLibrary loaded = customAllReduce;
        return loaded != null ? loaded : load(Library.CUSTOM_ALL_REDUCE);
    }

    /**
     * Which variant of the kernels was chosen from the {@code ar4j-cuda} jar, and why: the driver's
     * CUDA version, the variant ({@code cu13} or {@code cu12}) and the reason, or why none could
     * be loaded.
     *
     * @return the choice, or empty when the kernels have not been loaded from the jar (not yet, or
     *         from an explicit path)
     */
    public static Optional<String> kernelsVariantChoice() {
        return BundledKernels.lastChoice();
    }

    /**
     * The library if it has been loaded, without loading it.
     *
     * @param library which one
     * @return the loaded library, or empty
     */
    public static synchronized Optional<LoadedLibrary> loaded(Library library) {
        return Optional.ofNullable(LOADED.get(library));
    }

    /**
     * Loads a library (once per JVM) following the documented search order.
     *
     * @param library which one
     * @return the loaded library
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
            load(Library.CUDART); // the Java side of the kernels (buffers, streams) calls it
        }
        LoadedLibrary found = LibrarySearch.search(library, LibrarySearch.SearchInputs.fromSystem(library));
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
     *
     * @return e.g. {@code --enable-native-access=ALL-UNNAMED}
     */
    public static String nativeAccessFlag() {
        Set<String> names = new LinkedHashSet<>();
        for (Module module : List.of(NativeLibraries.class.getModule(), bindingsModule())) {
            names.add(module.isNamed() ? module.getName() : "ALL-UNNAMED");
        }
        return "--enable-native-access=" + String.join(",", names);
    }

    /**
     * Whether both the runtime's and the bindings' modules may call restricted methods without warnings.
     *
     * @return true when native access is enabled for both
     */
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
            throw new ConfigurationException("ar4j-runtime and ar4j-bindings are in different class loaders ("
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
}
