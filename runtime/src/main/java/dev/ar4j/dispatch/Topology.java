package dev.ar4j.dispatch;

/**
 * The facts about an all-reduce group that the dispatcher needs. The runtime fills it from CUDA
 * (device count, peer access, NVLink) at group creation; tests and benchmarks construct it
 * directly, or override single facts with the {@code with...} methods.
 *
 * @param worldSize   ranks in the group (at least 1)
 * @param fullNvlink  every pair of GPUs is linked by NVLink (directly or through NVSwitch)
 * @param p2pAllPairs every GPU can access every other GPU's memory (CUDA peer access / IPC)
 * @param singleHost  all ranks run on one host
 */
public record Topology(int worldSize, boolean fullNvlink, boolean p2pAllPairs, boolean singleHost) {

    /**
     * Creates a topology, checking the world size.
     *
     * @throws IllegalArgumentException if {@code worldSize < 1}
     */
    public Topology {
        if (worldSize < 1) {
            throw new IllegalArgumentException("world size must be at least 1, got " + worldSize);
        }
    }

    /**
     * {@code worldSize} GPUs of one host, P2P-capable, with or without NVLink between every pair.
     *
     * @param worldSize the number of GPUs (ranks), at least 1
     * @param fullNvlink whether NVLink joins every pair
     * @return a single-host topology with P2P between every pair
     * @throws IllegalArgumentException if {@code worldSize < 1}
     */
    public static Topology singleHost(int worldSize, boolean fullNvlink) {
        return new Topology(worldSize, fullNvlink, true, true);
    }

    /**
     * This topology with another world size.
     *
     * @param newWorldSize the new world size, at least 1
     * @return a copy with that world size
     * @throws IllegalArgumentException if {@code newWorldSize < 1}
     */
    public Topology withWorldSize(int newWorldSize) {
        return new Topology(newWorldSize, fullNvlink, p2pAllPairs, singleHost);
    }

    /**
     * This topology with NVLink between every pair set as given.
     *
     * @param newFullNvlink whether NVLink joins every pair
     * @return a copy with that fact
     */
    public Topology withFullNvlink(boolean newFullNvlink) {
        return new Topology(worldSize, newFullNvlink, p2pAllPairs, singleHost);
    }

    /**
     * This topology with P2P between every pair set as given.
     *
     * @param newP2pAllPairs whether every GPU can access every other GPU's memory
     * @return a copy with that fact
     */
    public Topology withP2pAllPairs(boolean newP2pAllPairs) {
        return new Topology(worldSize, fullNvlink, newP2pAllPairs, singleHost);
    }

    /**
     * This topology with the single-host fact set as given.
     *
     * @param newSingleHost whether all ranks run on one host
     * @return a copy with that fact
     */
    public Topology withSingleHost(boolean newSingleHost) {
        return new Topology(worldSize, fullNvlink, p2pAllPairs, newSingleHost);
    }

    /**
     * One phrase, e.g. "4 ranks on one host, NVLink between every pair, P2P between every pair".
     *
     * @return the world size, hosts, NVLink and P2P facts in one phrase
     */
    public String describe() {
        return worldSize + (worldSize == 1 ? " rank" : " ranks")
                + (singleHost ? " on one host" : " on several hosts")
                + (fullNvlink ? ", NVLink between every pair" : ", not NVLink between every pair")
                + (p2pAllPairs ? ", P2P between every pair" : ", no P2P between every pair");
    }
}
