/**
 * The ar4j CUDA kernels library ({@code libar4j_custom_ar.so}), packaged as a resource of this
 * module under {@code META-INF/native/<platform>/}, and {@link dev.ar4j.natives.BundledLibraries},
 * which finds it. {@code dev.ar4j.runtime} requires this module, so on the module path it is
 * resolved without {@code --add-modules}.
 */
module dev.ar4j.cuda {
    // Only the runtime finds the library; to every other module this one is its resources alone.
    exports dev.ar4j.natives to dev.ar4j.runtime;
}
