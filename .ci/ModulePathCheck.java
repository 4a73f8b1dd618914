/**
 * Checks the jars as JPMS modules: run by .ci/run with the java source launcher on the module
 * path (dev.ar4j.runtime, dev.ar4j.bindings, dev.ar4j.cuda), with only dev.ar4j.runtime named in
 * --add-modules (the source file itself is in the unnamed module): dev.ar4j.cuda must be resolved
 * because the runtime requires it. It loads cudart, NCCL and the kernels library through the
 * runtime's loader, checks that the internal packages are not exported, and exits non-zero on any
 * failure.
 */
public class ModulePathCheck {
    public static void main(String[] args) {
        Module runtime = dev.ar4j.Communicator.class.getModule();
        require(runtime.isNamed() && runtime.getName().equals("dev.ar4j.runtime"), "runtime module is " + runtime);
        require(runtime.isExported("dev.ar4j") && runtime.isExported("dev.ar4j.cuda"), "API packages exported");
        require(runtime.isExported("dev.ar4j.dispatch") && runtime.isExported("dev.ar4j.nccl")
                && runtime.isExported("dev.ar4j.rendezvous"), "API packages exported");
        for (String internal : new String[] {"dev.ar4j.internal.engine", "dev.ar4j.internal.kernels",
                "dev.ar4j.internal.nccl", "dev.ar4j.internal.peer", "dev.ar4j.internal.rendezvous", "dev.ar4j.internal.platform",
                "dev.ar4j.internal.cuda"}) {
            require(!runtime.isExported(internal), internal + " must not be exported");
        }
        Module bindings = ModuleLayer.boot().findModule("dev.ar4j.bindings").orElse(null);
        require(bindings != null, "dev.ar4j.bindings is resolved");
        for (String pkg : bindings.getPackages()) {
            require(!bindings.isExported(pkg) && bindings.isExported(pkg, runtime),
                    pkg + " must be exported to dev.ar4j.runtime only");
        }
        require(runtime.isNativeAccessEnabled(), "native access enabled for dev.ar4j.runtime");
        Module cuda = ModuleLayer.boot().findModule("dev.ar4j.cuda").orElse(null);
        require(cuda != null, "dev.ar4j.cuda is resolved without --add-modules dev.ar4j.cuda");
        require(!cuda.getDescriptor().isAutomatic(), "dev.ar4j.cuda is a named (not automatic) module");
        require(runtime.canRead(cuda), "dev.ar4j.runtime reads dev.ar4j.cuda");
        require(!cuda.isExported("dev.ar4j.natives") && cuda.isExported("dev.ar4j.natives", runtime),
                "dev.ar4j.cuda exports dev.ar4j.natives to dev.ar4j.runtime only");
        int abi = dev.ar4j.Ar4j.kernelsAbiVersion();
        String nccl = dev.ar4j.nccl.Nccl.versionString();
        int cudart = dev.ar4j.cuda.Cuda.runtimeVersion();
        System.out.println("module path: dev.ar4j.runtime OK (dev.ar4j.cuda resolved by requires; kernels ABI " + abi
                + ", NCCL " + nccl + ", CUDA runtime " + cudart + ", ar4j " + dev.ar4j.Ar4j.version() + ")");
    }

    private static void require(boolean ok, String what) {
        if (!ok) {
            System.err.println("module path check failed: " + what);
            System.exit(1);
        }
    }
}
