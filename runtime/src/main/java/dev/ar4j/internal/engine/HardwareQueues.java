package dev.ar4j.internal.engine;

import dev.ar4j.ConfigurationException;

import java.util.Map;
import java.util.TreeMap;

/**
 * Whether the ranks of one process that share a GPU have a hardware work queue for each of their
 * streams. CUDA maps a context's streams onto {@code CUDA_DEVICE_MAX_CONNECTIONS} queues per device
 * (8 unless set, at most 32); two streams on one queue run in the order their work was queued. Each
 * rank issues on its own stream and its communicator on a side stream, so k ranks sharing a GPU use
 * at least 2k streams (a split's communicators add a side stream each): past the queues, a rank's kernels can be queued behind a peer's all-reduce that
 * spins waiting for them, and the group fails at the kernel timeout ({@code PeerTimeoutException};
 * seen with eight ranks on one H100, a test in ten). One rank per GPU never shares a queue with a peer.
 */
public final class HardwareQueues {

    /** CUDA's number of queues when {@code CUDA_DEVICE_MAX_CONNECTIONS} is unset. */
    static final int CUDA_DEFAULT = 8;
    /** The most CUDA allows. */
    static final int CUDA_MAX = 32;
    /** A rank's stream and its communicator's side stream. */
    static final int STREAMS_PER_RANK = 2;
    /** The environment variable CUDA reads when a context is created. */
    public static final String VARIABLE = "CUDA_DEVICE_MAX_CONNECTIONS";

    private HardwareQueues() {
    }

    /**
     * The queues CUDA gives a device for {@code value} of {@link #VARIABLE}: 8 when unset or not a
     * number, else the value within 1 .. 32.
     *
     * @param value the variable's value, or null
     * @return the number of hardware queues per device
     */
    static int queues(String value) {
        if (value == null || value.isBlank()) {
            return CUDA_DEFAULT;
        }
        try {
            return Math.clamp(Long.parseLong(value.strip()), 1, CUDA_MAX);
        } catch (NumberFormatException e) {
            return CUDA_DEFAULT;
        }
    }

    /**
     * Why {@code ranks} ranks of this process on GPU {@code device} may stall each other, or null
     * when their streams fit the queues.
     *
     * @param device the GPU
     * @param ranks  the ranks of this process on it
     * @param value  the value of {@link #VARIABLE}, or null
     * @return the hazard and its remedy, or null
     */
    static String hazard(int device, int ranks, String value) {
        int queues = queues(value);
        int streams = STREAMS_PER_RANK * ranks;
        if (ranks < 2 || streams <= queues) {
            return null;
        }
        String setting = VARIABLE + "=" + (value == null || value.isBlank() ? "unset, " + CUDA_DEFAULT + " by default"
                : value.strip() + (String.valueOf(queues).equals(value.strip()) ? "" : ", read as " + queues));
        String remedy = streams <= CUDA_MAX
                ? "Start the process with " + VARIABLE + "=" + CUDA_MAX + ", or run one process per GPU"
                : "At most " + CUDA_MAX / STREAMS_PER_RANK + " ranks of one process can share a GPU; run fewer, "
                        + "or one process per GPU";
        return ranks + " ranks of this process share GPU " + device + ": with each communicator's side stream "
                + "they use at least " + streams + " CUDA streams over " + queues + " hardware queues (" + setting
                + "), so a rank's kernels can be queued behind a peer's all-reduce that spins waiting for them, "
                + "and the group then fails at the kernel timeout (PeerTimeoutException). " + remedy;
    }

    /**
     * Refuses a group of this process whose ranks sharing a GPU would outnumber its queues.
     *
     * @param devices the GPU of each rank
     * @param value   the value of {@link #VARIABLE}, or null
     * @throws ConfigurationException naming the GPU, the ranks, the setting and the remedy
     */
    public static void checkLocalGroup(int[] devices, String value) {
        Map<Integer, Integer> perDevice = new TreeMap<>();  // by device: the lowest of equally busy GPUs is named
        for (int d : devices) {
            perDevice.merge(d, 1, Integer::sum);
        }
        int busiest = -1;
        int most = 0;
        for (Map.Entry<Integer, Integer> e : perDevice.entrySet()) {
            if (e.getValue() > most) {
                most = e.getValue();
                busiest = e.getKey();
            }
        }
        String hazard = hazard(busiest, most, value);
        if (hazard != null) {
            throw new ConfigurationException("ar4j: this local group cannot run safely: " + hazard);
        }
    }
}
