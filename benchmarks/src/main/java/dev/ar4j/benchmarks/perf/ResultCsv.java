package dev.ar4j.benchmarks.perf;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A CSV result file as read back ({@link ResultFiles#readCsvFile}).
 *
 * @param metadata the {@code # name: value} comment lines: ar4j version and commit, date, host,
 *                 command, NCCL, CUDA and driver versions, topology, environment
 * @param gpus     the {@code # GPU n: ...} lines
 * @param skipped  column to why it was not measured
 * @param rows     one map per row, column name to cell, in file order
 */
public record ResultCsv(Map<String, String> metadata, List<String> gpus, Map<String, String> skipped,
                        List<Map<String, String>> rows) {

    /** Copies the inputs (keeping their order). */
    public ResultCsv {
        metadata = Collections.unmodifiableMap(new LinkedHashMap<>(metadata));
        gpus = List.copyOf(gpus);
        skipped = Collections.unmodifiableMap(new LinkedHashMap<>(skipped));
        rows = rows.stream().map(r -> Collections.unmodifiableMap(new LinkedHashMap<>(r))).toList();
    }
}
