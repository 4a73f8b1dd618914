package dev.ar4j.benchmarks.perf;

/** Where an all-reduce writes its result. */
public enum Placement {
    /** Into a separate output buffer. */
    OUT_OF_PLACE("out-of-place"),
    /** Over its input. */
    IN_PLACE("in-place");

    private final String label;

    Placement(String label) {
        this.label = label;
    }

    /** {@return the name in the table, CSV and JSON: "out-of-place" or "in-place"} */
    public String label() {
        return label;
    }
}
