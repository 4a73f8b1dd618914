/**
 * ar4j's runtime: the {@link dev.ar4j.Communicator} API, the availability probe
 * {@link dev.ar4j.Ar4j}, the CUDA and NCCL facades, the dispatch policy and the rendezvous. On the
 * module path, pass {@code --enable-native-access=dev.ar4j.runtime,dev.ar4j.bindings}; the
 * {@code dev.ar4j.cuda} module (the kernels library) is required, so it is resolved without
 * {@code --add-modules}.
 */
module dev.ar4j.runtime {
    requires dev.ar4j.bindings;
    requires dev.ar4j.cuda;

    exports dev.ar4j;
    exports dev.ar4j.cuda;
    exports dev.ar4j.dispatch;
    exports dev.ar4j.nccl;
    exports dev.ar4j.rendezvous;
    // Not exported: dev.ar4j.internal.* (the engine behind Communicator: group setup, the
    // custom-kernel path, peer memory, the rendezvous server and wire protocol) and
    // dev.ar4j.internal.platform (native library loading, build information).
}
