package dev.ar4j.benchmarks.perf;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The printed tables. The sweep table has nccl-tests' columns: size, count, type, then per
 * algorithm what ran, time (µs, CUDA events; eager tables add the host time per call from the
 * first Java call to the completion of the last), algbw and busbw (GB/s) and #wrong, then the speed-up of the best
 * ar4j kernel over the best NCCL baseline and which kernel that was; one table per timing mode and
 * placement. The verify table has one row per algorithm with the time of the whole pass.
 */
public final class ResultTable {
    private ResultTable() {
    }

    /**
     * Prints every table of the report, its skipped columns and its verdict on correctness.
     *
     * @param out    where the tables are printed (stdout in ar4j-perf)
     * @param report the finished run
     */
    public static void print(PrintStream out, PerfReport report) {
        MachineInfo machine = report.machine();
        if (machine != null) {
            out.println("# ar4j-perf  " + machine.fields().getOrDefault("date", "") + "  ar4j "
                    + Ar4jVersion.current().describe());
            out.println("# command: " + report.commandLine());
            for (String gpu : machine.gpus()) {
                out.println("# " + gpu);
            }
            out.println("# nvidia driver " + machine.fields().get("nvidia_driver") + ", CUDA runtime "
                    + machine.fields().get("cuda_runtime") + ", NCCL " + machine.fields().get("nccl") + "; "
                    + machine.fields().get("topology"));
        }
        Map<String, List<PerfResult>> groups = new LinkedHashMap<>();
        for (PerfResult r : report.results()) {
            groups.computeIfAbsent(r.operation() + " " + r.pdl() + " " + r.mode() + " " + r.placement(),
                    k -> new ArrayList<>()).add(r);
        }
        for (List<PerfResult> group : groups.values()) {
            out.println();
            if (report.settings().scenario().isVerify()) {
                printVerify(out, report, group);
            } else {
                printSweep(out, report, group);
            }
        }
        PdlComparison.print(out, report.results());
        out.println();
        for (Map.Entry<String, String> skip : report.skippedInOrder()) {
            out.println("# " + skip.getKey() + " not measured: " + skip.getValue());
        }
        for (String note : report.notes()) {
            out.println("# note: " + note);
        }
        long wrong = report.totalWrong();
        String against = report.settings().scenario() == Scenario.VERIFY_FUSED
                ? "the exact sum and a host RMSNorm within " + FusedNormCheck.tolerance(report.settings().dtype())
                + " relative" : "the exact " + report.settings().operation().title() + " of the inputs";
        out.println(wrong == 0 ? "# #wrong: 0 in every result (checked against " + against + ")"
                : "# FAILED: " + wrong + " wrong elements in total; see the #wrong columns");
        out.flush();
    }

    private static String groupTitle(PerfReport report, PerfResult first) {
        PerfSettings s = report.settings();
        String calls = Operation.parse(first.operation()).title() + "s";
        String timing = first.mode().equals("graph")
                ? "CUDA graph (" + (s.scenario().isVerify() ? "one pass per graph, " + s.iterations()
                + " replays timed one by one" : s.iterations() + " " + calls + " per graph") + ")"
                : "eager (" + s.iterations() + (s.scenario().isVerify() ? " passes" : " " + calls)
                + " back to back)";
        String pdl = first.pdl().equals(PdlSetting.DEFAULT.label()) ? "" : "pdl " + first.pdl() + ", ";
        String what = s.scenario() == Scenario.VERIFY_FUSED ? "verify-fused (all-reduce + RMSNorm)" : first.operation();
        return "# " + what + ": " + report.worldSize() + " ranks (" + report.processModel() + "), " + pdl
                + first.dtype() + ", " + timing
                + ", " + first.placement() + ", " + (first.registered() ? "registered" : "unregistered")
                + " input, median of " + s.repetitions() + " repetitions after " + s.warmup() + " warm-up rounds";
    }

    private static void printSweep(PrintStream out, PerfReport report, List<PerfResult> rows) {
        out.println(groupTitle(report, rows.getFirst()));
        Set<Long> sizes = new LinkedHashSet<>();
        Set<String> algorithms = new LinkedHashSet<>();
        for (PerfAlgorithm a : report.settings().algorithms()) {
            if (rows.stream().anyMatch(r -> r.algorithm().equals(a.label()))) {
                algorithms.add(a.label());
            }
        }
        Map<String, PerfResult> cell = new LinkedHashMap<>();
        for (PerfResult r : rows) {
            sizes.add(r.bytes());
            cell.put(r.bytes() + "/" + r.algorithm(), r);
        }
        boolean eager = rows.getFirst().mode().equals("eager");
        TextTable table = new TextTable();
        table.column("", "size", "(B)", false).column("", "count", "(elements)", false).column("", "type", "", true);
        for (String a : algorithms) {
            boolean ar4j = !a.startsWith("nccl");
            if (ar4j) {
                table.column(a, "ran", "", true);
            }
            table.column(ar4j ? "" : a, "time", "(us)", false);
            if (eager) {
                table.column("", "host", "(us)", false);
            }
            table.column("", "algbw", "(GB/s)", false).column("", "busbw", "(GB/s)", false).column("", "#wrong", "", false);
        }
        boolean withSpeedup = algorithms.stream().anyMatch(a -> !a.startsWith("nccl"));
        if (withSpeedup) {
            table.ungrouped().column("", "speedup", "(NCCL/ar4j)", false).column("", "best", "ar4j", true);
        }
        for (long size : sizes) {
            List<String> line = new ArrayList<>();
            PerfResult any = rows.stream().filter(r -> r.bytes() == size).findFirst().orElseThrow();
            line.add(Long.toString(size));
            line.add(Long.toString(any.count()));
            line.add(any.dtype());
            for (String a : algorithms) {
                PerfResult r = cell.get(size + "/" + a);
                if (!a.startsWith("nccl")) {
                    line.add(r == null ? "-" : r.ran());
                }
                if (r == null) {
                    line.addAll(eager ? List.of("-", "-", "-", "-", "-") : List.of("-", "-", "-", "-"));
                } else {
                    line.add(fixed(r.timeUs()));
                    if (eager) {
                        line.add(fixed(r.hostUs()));
                    }
                    line.add(fixed(r.algbwGBps()));
                    line.add(fixed(r.busbwGBps()));
                    line.add(Long.toString(r.wrong()));
                }
            }
            List<PerfResult> atSize = rows.stream().filter(r -> r.bytes() == size).toList();
            Optional<PerfResult> bestNccl = best(atSize, false);
            Optional<PerfResult> bestAr4j = best(atSize, true);
            if (!withSpeedup) {
                table.row(line);
                continue;
            }
            if (bestNccl.isPresent() && bestAr4j.isPresent()) {
                line.add(String.format(Locale.ROOT, "%.2fx", bestNccl.get().timeUs() / bestAr4j.get().timeUs()));
                line.add(bestAr4j.get().algorithm() + (bestAr4j.get().algorithm().equals(bestAr4j.get().ran()) ? ""
                        : "(" + bestAr4j.get().ran() + ")"));
            } else {
                line.add("-");
                line.add(bestAr4j.isPresent() ? bestAr4j.get().algorithm() : "-");
            }
            table.row(line);
        }
        table.print(out);
    }

    private static void printVerify(PrintStream out, PerfReport report, List<PerfResult> rows) {
        out.println(groupTitle(report, rows.getFirst()));
        PerfResult first = rows.getFirst();
        boolean fused = report.settings().scenario() == Scenario.VERIFY_FUSED;
        out.println("# --scenario " + report.settings().scenario().label() + ": " + first.allReducesPerPass()
                + (fused ? " x (all-reduce of " + first.bytes() + " bytes " + first.dtype() + " = " + FusedNormCheck.ROWS
                + " x " + FusedNormCheck.HIDDEN + ", then residual add + RMSNorm)" : " all-reduces of " + first.bytes()
                + " bytes " + first.dtype()) + " per pass" + (first.mode().equals("graph") ? ", captured in one CUDA graph"
                : ""));
        Optional<PerfResult> bestNccl = best(rows, false);
        TextTable table = new TextTable();
        table.column("", "algorithm", "", true).column("", "ran", "", true).column("", "pass", "(us)", false)
                .column("", fused ? "per all-reduce + norm" : "per all-reduce", "(us)", false).column("", "busbw", "(GB/s)", false)
                .column("", "#wrong", "", false).column("", "vs best NCCL", "(NCCL/this)", false);
        if (first.mode().equals("eager")) {
            table.column("", "host pass", "(us)", false);
        }
        for (PerfResult r : rows) {
            List<String> line = new ArrayList<>(List.of(r.algorithm(), r.ran(), fixed(r.passUs()), fixed(r.timeUs()),
                    fixed(r.busbwGBps()), Long.toString(r.wrong()), bestNccl.map(b -> String.format(Locale.ROOT, "%.2fx",
                            b.timeUs() / r.timeUs())).orElse("-")));
            if (first.mode().equals("eager")) {
                line.add(fixed(r.hostUs() * r.allReducesPerPass()));
            }
            table.row(line);
        }
        table.print(out);
    }

    /** The fastest correct result among the NCCL baselines, or among the cells that ran an ar4j kernel. */
    static Optional<PerfResult> best(List<PerfResult> rows, boolean ar4jKernels) {
        PerfResult best = null;
        for (PerfResult r : rows) {
            boolean isNcclBaseline = r.algorithm().startsWith("nccl");
            boolean eligible = ar4jKernels ? !isNcclBaseline && r.ranCustomKernel() : isNcclBaseline;
            if (eligible && r.wrong() == 0 && !Double.isNaN(r.timeUs()) && (best == null || r.timeUs() < best.timeUs())) {
                best = r;
            }
        }
        return Optional.ofNullable(best);
    }

    private static String fixed(double value) {
        return Double.isNaN(value) ? "-" : String.format(Locale.ROOT, "%.2f", value);
    }

    /**
     * Columns under optional group labels ({@code ---- label ----} spanning the group), right-aligned
     * numbers, left-aligned text. A column given a group label starts a group; the following
     * columns given "" belong to it until {@link #ungrouped()} or the next label.
     */
    static final class TextTable {
        private final List<String> names = new ArrayList<>();
        private final List<String> units = new ArrayList<>();
        private final List<Boolean> leftAligned = new ArrayList<>();
        private final List<Integer> groupOf = new ArrayList<>();
        private final List<String> groupNames = new ArrayList<>();
        private final List<List<String>> rows = new ArrayList<>();
        private boolean inGroup;

        TextTable column(String group, String name, String unit, boolean left) {
            if (!group.isEmpty()) {
                groupNames.add(group);
                inGroup = true;
            }
            groupOf.add(inGroup ? groupNames.size() - 1 : -1);
            names.add(name);
            units.add(unit);
            leftAligned.add(left);
            return this;
        }

        /** The next columns belong to no group. */
        TextTable ungrouped() {
            inGroup = false;
            return this;
        }

        void row(List<String> cells) {
            if (cells.size() != names.size()) {
                throw new IllegalArgumentException("a row has " + cells.size() + " cells for " + names.size() + " columns");
            }
            rows.add(List.copyOf(cells));
        }

        void print(PrintStream out) {
            int n = names.size();
            int[] width = new int[n];
            for (int c = 0; c < n; c++) {
                width[c] = Math.max(names.get(c).length(), units.get(c).length());
                for (List<String> row : rows) {
                    width[c] = Math.max(width[c], row.get(c).length());
                }
            }
            // Widen a group's last column until its label fits over the group.
            for (int g = 0; g < groupNames.size(); g++) {
                int first = groupOf.indexOf(g);
                int last = groupOf.lastIndexOf(g);
                int span = -2;
                for (int c = first; c <= last; c++) {
                    span += width[c] + 2;
                }
                int needed = groupNames.get(g).length() + 6;
                if (span < needed) {
                    width[last] += needed - span;
                }
            }
            if (!groupNames.isEmpty()) {
                StringBuilder groupLine = new StringBuilder("#");
                for (int c = 0; c < n; c++) {
                    groupLine.append("  ");
                    int g = groupOf.get(c);
                    if (g < 0 || groupOf.indexOf(g) != c) {
                        if (g < 0) {
                            groupLine.append(" ".repeat(width[c]));
                        }
                        continue;
                    }
                    int last = groupOf.lastIndexOf(g);
                    int span = -2;
                    for (int k = c; k <= last; k++) {
                        span += width[k] + 2;
                    }
                    String label = " " + groupNames.get(g) + " ";
                    int dashes = span - label.length();
                    groupLine.append("-".repeat(dashes / 2)).append(label).append("-".repeat(dashes - dashes / 2));
                }
                out.println(groupLine.toString().stripTrailing());
            }
            out.println(line(width, names, true));
            out.println(line(width, units, true));
            for (List<String> row : rows) {
                out.println(line(width, row, false));
            }
        }

        private String line(int[] width, List<String> cells, boolean header) {
            StringBuilder b = new StringBuilder(header ? "#" : " ");
            for (int c = 0; c < cells.size(); c++) {
                b.append("  ");
                String cell = cells.get(c);
                String pad = " ".repeat(width[c] - cell.length());
                b.append(leftAligned.get(c) ? cell + pad : pad + cell);
            }
            return b.toString().stripTrailing();
        }
    }
}
