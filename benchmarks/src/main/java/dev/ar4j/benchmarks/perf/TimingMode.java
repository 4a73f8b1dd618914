package dev.ar4j.benchmarks.perf;

/** How all-reduces are launched while they are timed. */
public enum TimingMode {
    /** Captured into one CUDA graph and replayed; timed with CUDA events around replays. */
    GRAPH("graph"),
    /** Called back to back from Java; timed with CUDA events and with the host clock. */
    EAGER("eager");

    private final String label;

    TimingMode(String label) {
        this.label = label;
    }

    /** {@return the name in the table, CSV and JSON: "graph" or "eager"} */
    public String label() {
        return label;
    }
}
