/**
 * ar4j's runtime: the {@link dev.ar4j.Communicator} API, the CUDA and NCCL facades, the
 * dispatch policy and the rendezvous. On the module path, pass
 * {@code --enable-native-access=dev.ar4j.runtime,dev.ar4j.bindings}, and resolve the
 * {@code dev.ar4j.cuda} jar (it holds the kernels library) with
 * {@code --add-modules dev.ar4j.cuda}, or keep it on the class path.
 */
module dev.ar4j.runtime {
    requires dev.ar4j.bindings;

    exports dev.ar4j;
    exports dev.ar4j.cuda;
    exports dev.ar4j.dispatch;
    exports dev.ar4j.kernels;
    exports dev.ar4j.nccl;
    exports dev.ar4j.rendezvous;
    // dev.ar4j.group and dev.ar4j.internal are implementation: not exported.
}
