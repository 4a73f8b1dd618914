/**
 * Checks the jars as JPMS modules: run by .ci/run with the java source launcher on the module
 * path (dev.ar4j.runtime, dev.ar4j.bindings, automatic dev.ar4j.cuda). It loads cudart, NCCL and
 * the kernels library through the runtime's loader, checks that the internal packages are not
 * exported, and exits non-zero on any failure.
 */
public class ModulePathCheck {
    public static void main(String[] args) {
        Module runtime = dev.ar4j.Communicator.class.getModule();
        require(runtime.isNamed() && runtime.getName().equals("dev.ar4j.runtime"), "runtime module is " + runtime);
        require(runtime.isExported("dev.ar4j") && runtime.isExported("dev.ar4j.cuda"), "API packages exported");
        require(!runtime.isExported("dev.ar4j.group") && !runtime.isExported("dev.ar4j.internal"),
                "internal packages must not be exported");
        require(runtime.isNativeAccessEnabled(), "native access enabled for dev.ar4j.runtime");
        int abi = dev.ar4j.kernels.CustomAllReduceKernels.abiVersion();
        String status = dev.ar4j.kernels.CustomAllReduceKernels.statusName(8);
        require(status.equals("AR4J_ERROR_NOT_REGISTERED"), "status 8 is " + status);
        String nccl = dev.ar4j.nccl.Nccl.versionString();
        int cudart = dev.ar4j.cuda.Cuda.runtimeVersion();
        System.out.println("module path: dev.ar4j.runtime OK (kernels ABI " + abi + ", NCCL " + nccl + ", CUDA runtime "
                + cudart + ")");
    }

    private static void require(boolean ok, String what) {
        if (!ok) {
            System.err.println("module path check failed: " + what);
            System.exit(1);
        }
    }
}
