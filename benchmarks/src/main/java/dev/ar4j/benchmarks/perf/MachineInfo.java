package dev.ar4j.benchmarks.perf;

import dev.ar4j.Communicator;
import dev.ar4j.cuda.Cuda;
import dev.ar4j.cuda.DeviceAttribute;
import dev.ar4j.nccl.Nccl;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Where and how a run happened: date, host, command line, GPUs, driver, CUDA, NCCL and ar4j
 * versions, topology and environment. Rank 0 collects it; it goes to the CSV header, the JSON
 * and the printed table's header.
 *
 * @param fields ordered name/value pairs
 * @param gpus   one line per GPU of the run
 */
public record MachineInfo(Map<String, String> fields, List<String> gpus) {

    /** Environment variables recorded because they change what NCCL or ar4j do. */
    static final List<String> RECORDED_ENVIRONMENT = List.of("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
            "NVSHMEM_DISABLE_NVLS", "NCCL_SOCKET_IFNAME", "NCCL_ALGO", "NCCL_PROTO", "AR4J_ALLREDUCE_ALGO",
            "AR4J_FORCE_CUSTOM_AR_PCIE", "AR4J_PDL", "CUDA_VISIBLE_DEVICES");

    /** Copies the inputs. */
    public MachineInfo {
        fields = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(fields));
        gpus = List.copyOf(gpus);
    }

    /**
     * Collects the description on rank 0 (its communicator built, its device current). Every
     * query that fails leaves a note in place of its value instead of failing the run.
     *
     * @param gpuCount the GPUs to describe, 0 to {@code gpuCount - 1} (1 with {@code --share-gpu})
     */
    static MachineInfo collect(Communicator comm, String commandLine, String processModel, int gpuCount) {
        Map<String, String> f = new LinkedHashMap<>();
        f.put("date", ZonedDateTime.now().format(DateTimeFormatter.ISO_OFFSET_DATE_TIME));
        f.put("host", hostName());
        f.put("command", commandLine);
        f.put("java", System.getProperty("java.vm.name", "?") + " " + Runtime.version());
        f.put("process_model", processModel);
        f.put("world_size", Integer.toString(comm.worldSize()));
        f.put("topology", comm.topology().describe());
        f.put("custom_kernels", comm.hasCustomKernels() ? "set up" : "not set up (every ar4j call goes to NCCL)");
        f.put("staging_bytes", Long.toString(comm.stagingBytes()));
        f.put("cuda_runtime", query(() -> Cuda.formatVersion(Cuda.runtimeVersion())));
        f.put("cuda_driver", query(() -> Cuda.formatVersion(Cuda.driverVersion())));
        f.put("nccl", query(Nccl::versionString));
        f.put("ar4j_kernels_abi", query(() -> Integer.toString(dev.ar4j.Ar4j.kernelsAbiVersion())));
        Map<String, String[]> smi = nvidiaSmi();
        String driver = smi.values().stream().map(v -> v[1]).findFirst().orElse("unknown (nvidia-smi gave nothing)");
        f.put("nvidia_driver", driver);
        for (String name : RECORDED_ENVIRONMENT) {
            String value = System.getenv(name);
            if (value != null) {
                f.put("env." + name, value);
            }
        }
        List<String> gpus = new ArrayList<>();
        for (int d = 0; d < gpuCount; d++) {
            int device = d;
            gpus.add(query(() -> describeGpu(device, smi)));
        }
        return new MachineInfo(f, gpus);
    }

    private static String describeGpu(int device, Map<String, String[]> smi) {
        String bus = Cuda.pciBusId(device);
        String[] row = smi.get(busKey(bus));
        String name = row != null ? row[0] : "(name unknown: nvidia-smi not available)";
        return "GPU " + device + ": " + name + ", sm_" + Cuda.deviceAttribute(DeviceAttribute.COMPUTE_CAPABILITY_MAJOR, device)
                + Cuda.deviceAttribute(DeviceAttribute.COMPUTE_CAPABILITY_MINOR, device) + ", "
                + Cuda.deviceAttribute(DeviceAttribute.MULTI_PROCESSOR_COUNT, device) + " SMs, PCI " + bus;
    }

    /** {@code nvidia-smi} rows by PCI bus key: {name, driver version}; empty if it is missing or fails. */
    private static Map<String, String[]> nvidiaSmi() {
        Map<String, String[]> rows = new LinkedHashMap<>();
        try {
            Process p = new ProcessBuilder("nvidia-smi", "--query-gpu=pci.bus_id,name,driver_version",
                    "--format=csv,noheader").redirectErrorStream(true).start();
            p.getOutputStream().close();
            if (!p.waitFor(15, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return rows;
            }
            String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (p.exitValue() != 0) {
                return rows;
            }
            for (String line : text.split("\n")) {
                String[] cells = line.split(",");
                if (cells.length >= 3) {
                    rows.put(busKey(cells[0].trim()), new String[] {cells[1].trim(), cells[2].trim()});
                }
            }
        } catch (IOException e) {
            return rows;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return rows;
    }

    /** "1b:00.0" from "00000000:1B:00.0" (nvidia-smi) or "0000:1B:00.0" (CUDA). */
    static String busKey(String busId) {
        String t = busId.toLowerCase(Locale.ROOT);
        int first = t.indexOf(':');
        return first >= 0 && t.indexOf(':', first + 1) > 0 ? t.substring(first + 1) : t;
    }

    private static String hostName() {
        try {
            return Files.readString(Path.of("/proc/sys/kernel/hostname"), StandardCharsets.UTF_8).trim();
        } catch (IOException e) {
            String env = System.getenv("HOSTNAME");
            return env != null ? env : "unknown";
        }
    }

    private interface Query {
        String get();
    }

    private static String query(Query q) {
        try {
            return q.get();
        } catch (RuntimeException | LinkageError e) {
            return "unknown (" + e.getClass().getSimpleName() + ": " + e.getMessage() + ")";
        }
    }
}
