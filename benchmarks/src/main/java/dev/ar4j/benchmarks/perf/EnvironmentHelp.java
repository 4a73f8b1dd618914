package dev.ar4j.benchmarks.perf;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The environment variables that ar4j-perf and the ar4j runtime read, for {@code --help}. The
 * runtime's list follows its sources (library paths: {@code NativeLibraries}; algorithm policy:
 * {@code DispatchConfig}; rendezvous: {@code LaunchEnvironment}); builder values and system
 * properties win over these.
 */
final class EnvironmentHelp {
    /** ar4j-perf's own variables and the NCCL ones it sets or records. */
    static final Map<String, String> PERF = ordered(
            "AR4J_PERF_JAVA_OPTS", "extra JVM options of the worker JVMs, split at spaces (e.g. \"-Xmx8g\")",
            "AR4J_PERF_JAR", "benchmarks/bin/ar4j-perf: the jar to run (default benchmarks/target/benchmarks.jar)",
            "JAVA_HOME", "benchmarks/bin/ar4j-perf: the Java 25 (or newer) to run; else java on PATH",
            "NCCL_NVLS_ENABLE", "must be 0 in the workers (set so for them, and by the scripts): NVLink multicast stays off",
            "TORCH_SYMM_MEM_DISABLE_MULTICAST", "set to 1 for the workers (multicast off)",
            "NVSHMEM_DISABLE_NVLS", "set to 1 for the workers (multicast off)",
            "NCCL_SOCKET_IFNAME", "NCCL's bootstrap interface; the workers default it to lo",
            "NCCL_ALGO, NCCL_PROTO", "passed to NCCL as set, and recorded in the result files",
            "CUDA_VISIBLE_DEVICES", "the GPUs the run sees (recorded in the result files)");

    /** The ar4j runtime's variables. */
    static final Map<String, String> RUNTIME = ordered(
            "AR4J_ALLREDUCE_ALGO", "auto, 1stage|oneshot, 2stage|twoshot, push|lamport or nccl (system property "
                    + "ar4j.allreduce.algo wins); then SGLANG_CUSTOM_ALLREDUCE_ALGO, VLLM_CUSTOM_ALLREDUCE_ALGO",
            "AR4J_FORCE_CUSTOM_AR_PCIE", "1: lift the PCIe gate for more than 2 GPUs without full NVLink "
                    + "(property ar4j.force.custom.ar.pcie)",
            "AR4J_PDL", "0|1 (false|true, off|on): programmatic dependent launch in the custom kernels on compute "
                    + "capability 9.0 and newer (default on; property ar4j.pdl wins); recorded in the result files. "
                    + "ar4j-perf --pdl on,off sets Builder.pdl(..) and the property per communicator build instead",
            "AR4J_NCCL_PATH", "libnccl.so.2 to load (property ar4j.nccl.path); else the search order of docs/DEPLOYING.md",
            "AR4J_CUDART_PATH", "libcudart to load (property ar4j.cudart.path)",
            "AR4J_CUDA_PATH", "libcuda (the driver) to load (property ar4j.cuda.path)",
            "AR4J_CUSTOMAR_PATH", "libar4j_custom_ar.so to load instead of the one in the ar4j-cuda jar "
                    + "(property ar4j.customar.path)",
            "CUDA_HOME, CUDA_PATH, VIRTUAL_ENV, CONDA_PREFIX", "searched for libcudart and libnccl",
            "AR4J_MASTER_ADDR, AR4J_MASTER_PORT", "the rendezvous address (then MASTER_ADDR, MASTER_PORT)",
            "RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE", "torchrun-style launch; Slurm (SLURM_*) and Open MPI "
                    + "(OMPI_COMM_WORLD_*) variables are read too");

    private EnvironmentHelp() {
    }

    /** The --help footer: both tables, each variable on its line and its meaning below, wrapped to 80 columns. */
    static List<String> footer() {
        List<String> lines = new ArrayList<>();
        lines.add("");
        lines.add("Environment (ar4j-perf):");
        PERF.forEach((k, v) -> entry(lines, k, v));
        lines.add("");
        lines.add("Environment (ar4j runtime; a builder value or system property wins):");
        RUNTIME.forEach((k, v) -> entry(lines, k, v));
        lines.add("");
        return lines;
    }

    private static void entry(List<String> lines, String name, String meaning) {
        lines.add("  " + name);
        StringBuilder line = new StringBuilder("      ");
        for (String word : meaning.split(" ")) {
            if (line.length() + word.length() > 78 && line.length() > 6) {
                lines.add(line.toString().stripTrailing());
                line.setLength(0);
                line.append("      ");
            }
            line.append(word).append(' ');
        }
        lines.add(line.toString().stripTrailing());
    }

    private static Map<String, String> ordered(String... pairs) {
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; i < pairs.length; i += 2) {
            m.put(pairs[i], pairs[i + 1]);
        }
        return java.util.Collections.unmodifiableMap(m);
    }
}
