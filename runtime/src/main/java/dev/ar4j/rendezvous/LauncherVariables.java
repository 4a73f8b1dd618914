package dev.ar4j.rendezvous;

import java.util.Arrays;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The launcher variables of one environment: which launcher set them (torchrun, Slurm, Open MPI, or
 * none), and readers for its rank, size and per-node variables, each value checked and named with
 * the variable it came from.
 */
final class LauncherVariables {
    private static final Pattern TASKS_PER_NODE_ITEM = Pattern.compile("(\\d+)(?:\\(x(\\d+)\\))?");
    private static final Pattern FIRST_PLAIN_HOST = Pattern.compile("^([A-Za-z0-9][A-Za-z0-9._-]*)(?:,|$)");
    private static final Pattern FIRST_RANGED_HOST =
            Pattern.compile("^([A-Za-z0-9][A-Za-z0-9._-]*)\\[(\\d+)[-,\\d]*\\](?:,|$)");
    private static final String[] SLURM_NODE_LISTS = {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"};

    private final Map<String, String> env;
    private final Launcher launcher;
    private final String detectedBy;

    /** Detects the launcher: the first of {@link Launcher#values()} one of whose variables is set. */
    LauncherVariables(Map<String, String> env) {
        this.env = env;
        Launcher found = null;
        String marker = null;
        for (Launcher candidate : Launcher.values()) {
            marker = Arrays.stream(candidate.markers).filter(this::isSet).findFirst().orElse(null);
            if (marker != null) {
                found = candidate;
                break;
            }
        }
        this.launcher = found;
        this.detectedBy = marker;
    }

    /** The detected launcher, or null when no launcher variables are set. */
    Launcher launcher() {
        return launcher;
    }

    /** The variable that revealed the launcher, or null when there is none. */
    String detectedBy() {
        return detectedBy;
    }

    boolean isSet(String variable) {
        String value = env.get(variable);
        return value != null && !value.isBlank();
    }

    /** The raw value of {@code variable}, or null. */
    String get(String variable) {
        return env.get(variable);
    }

    int parseInt(String variable) {
        String raw = env.get(variable);
        try {
            return Integer.parseInt(raw.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(variable + "='" + raw + "' is not an integer; expected a whole"
                    + " number such as 0 or 4");
        }
    }

    /**
     * The value of the detected launcher's variable for a field; without a launcher,
     * {@code fallback}, or where that is null an error asking for the builder value.
     */
    LaunchValue<Integer> fromLauncher(String torchrunVariable, String slurmVariable, String openMpiVariable,
                                      LaunchValue<Integer> fallback) {
        if (launcher == null) {
            if (fallback != null) {
                return fallback;
            }
            throw new IllegalArgumentException("no launcher variables found (torchrun RANK..., Slurm SLURM_PROCID...,"
                    + " Open MPI OMPI_COMM_WORLD_...) and the builder sets a world of more than one rank: pass"
                    + " localRank(...) and localWorldSize(...) to the builder as well");
        }
        String variable = switch (launcher) {
            case TORCHRUN -> torchrunVariable;
            case SLURM -> slurmVariable;
            case OPEN_MPI -> openMpiVariable;
        };
        if (launcher == Launcher.SLURM && variable.equals("SLURM_NTASKS") && !isSet(variable) && isSet("SLURM_NPROCS")) {
            variable = "SLURM_NPROCS";
        }
        return requiredInt(variable);
    }

    private LaunchValue<Integer> requiredInt(String variable) {
        if (!isSet(variable)) {
            throw new IllegalArgumentException(launcher.displayName + " launch detected (" + detectedBy
                    + " is set) but " + variable + " is not set; " + launcher.hint);
        }
        return new LaunchValue<>(parseInt(variable), variable + ", " + launcher.displayName);
    }

    /** Slurm: the number of tasks on this node, from the tasks-per-node variables. */
    LaunchValue<Integer> slurmTasksOnThisNode() {
        for (String variable : new String[] {"SLURM_STEP_TASKS_PER_NODE", "SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}) {
            if (!isSet(variable)) {
                continue;
            }
            if (variable.equals("SLURM_NTASKS_PER_NODE")) {
                return new LaunchValue<>(parseInt(variable), variable + ", Slurm");
            }
            int[] perNode = parseTasksPerNode(variable, env.get(variable));
            if (Arrays.stream(perNode).allMatch(n -> n == perNode[0])) {
                return new LaunchValue<>(perNode[0], variable + ", Slurm");
            }
            int node = isSet("SLURM_NODEID") ? parseInt("SLURM_NODEID") : -1;
            if (node < 0 || node >= perNode.length) {
                throw new IllegalArgumentException(variable + "='" + env.get(variable) + "' gives the nodes different"
                        + " task counts and SLURM_NODEID " + (node < 0 ? "is not set" : "=" + node + " is out of range")
                        + ", so this node's count is unknown; set SLURM_NTASKS_PER_NODE or pass localWorldSize(...)"
                        + " to the builder");
            }
            return new LaunchValue<>(perNode[node], variable + " entry of SLURM_NODEID=" + node + ", Slurm");
        }
        throw new IllegalArgumentException("Slurm launch detected (SLURM_PROCID is set) but none of"
                + " SLURM_STEP_TASKS_PER_NODE, SLURM_NTASKS_PER_NODE, SLURM_TASKS_PER_NODE is set, so the number of"
                + " ranks on this node is unknown; " + Launcher.SLURM.hint);
    }

    private static int[] parseTasksPerNode(String variable, String raw) {
        String[] items = raw.trim().split(",");
        int[][] expanded = new int[items.length][];
        for (int i = 0; i < items.length; i++) {
            Matcher m = TASKS_PER_NODE_ITEM.matcher(items[i].trim());
            if (!m.matches()) {
                throw new IllegalArgumentException(variable + "='" + raw + "' is not a Slurm tasks-per-node list;"
                        + " expected entries such as '4', '4(x2)' or '4(x2),3'");
            }
            try {
                int tasks = Integer.parseInt(m.group(1));
                int repeat = m.group(2) == null ? 1 : Integer.parseInt(m.group(2));
                if (repeat < 1 || repeat > 1_000_000) {
                    throw new NumberFormatException("repeat " + repeat);
                }
                expanded[i] = new int[repeat];
                Arrays.fill(expanded[i], tasks);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(variable + "='" + raw + "' has an entry out of range: '"
                        + items[i] + "'");
            }
        }
        return Arrays.stream(expanded).flatMapToInt(Arrays::stream).toArray();
    }

    /**
     * Slurm: the master address, the first host of the first node list set when that list is
     * simple, else {@code SLURM_LAUNCH_NODE_IPADDR}; null when neither gives one.
     */
    LaunchValue<String> slurmMasterAddr() {
        for (String variable : SLURM_NODE_LISTS) {
            if (isSet(variable)) {
                String first = firstHostOfNodeList(env.get(variable).trim());
                if (first != null) {
                    return new LaunchValue<>(first, "first host of " + variable + ", Slurm");
                }
                break;
            }
        }
        if (isSet("SLURM_LAUNCH_NODE_IPADDR")) {
            return new LaunchValue<>(env.get("SLURM_LAUNCH_NODE_IPADDR").trim(), "SLURM_LAUNCH_NODE_IPADDR, Slurm");
        }
        return null;
    }

    /**
     * Slurm: {@code VARIABLE='value'} of the first node list set when it is not a simple host list,
     * for the message; null when that list is simple or none is set.
     */
    String unreadableSlurmNodeList() {
        for (String variable : SLURM_NODE_LISTS) {
            if (isSet(variable)) {
                return firstHostOfNodeList(env.get(variable).trim()) == null
                        ? variable + "='" + env.get(variable) + "'" : null;
            }
        }
        return null;
    }

    /** The first host of a Slurm node list in its simple forms, or null when it is not that simple. */
    static String firstHostOfNodeList(String nodeList) {
        Matcher plain = FIRST_PLAIN_HOST.matcher(nodeList);
        if (plain.find()) {
            return plain.group(1);
        }
        Matcher ranged = FIRST_RANGED_HOST.matcher(nodeList);
        if (ranged.find()) {
            return ranged.group(1) + ranged.group(2);
        }
        return null;
    }

    /**
     * torchrun with {@code TORCHELASTIC_USE_AGENT_STORE=True}: its agent serves its own store on
     * {@code MASTER_PORT}.
     */
    boolean torchrunAgentServesStore() {
        return launcher == Launcher.TORCHRUN
                && "true".equalsIgnoreCase(env.getOrDefault("TORCHELASTIC_USE_AGENT_STORE", "").trim());
    }
}
