package dev.ar4j.benchmarks.perf;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The table of a {@code --pdl on,off} run that puts the two settings side by side: per operation,
 * timing mode, placement, size and column, the time with PDL off, with it on, and off/on (above
 * 1: PDL made it faster). Only cells measured both ways and correct both ways are compared.
 */
final class PdlComparison {
    /** One compared cell. */
    record Pair(PerfResult off, PerfResult on) {
        /** Time off over time on: above 1, PDL on is faster. */
        double speedup() {
            return off.timeUs() / on.timeUs();
        }
    }

    private PdlComparison() {
    }

    /** The cells measured, correctly, with PDL both off and on, in the order of the off rows. */
    static List<Pair> pairs(List<PerfResult> results) {
        Map<String, PerfResult> on = new LinkedHashMap<>();
        for (PerfResult r : results) {
            if (r.pdl().equals(PdlSetting.ON.label()) && r.wrong() == 0) {
                on.put(key(r), r);
            }
        }
        List<Pair> pairs = new ArrayList<>();
        for (PerfResult r : results) {
            if (r.pdl().equals(PdlSetting.OFF.label()) && r.wrong() == 0 && on.containsKey(key(r))) {
                pairs.add(new Pair(r, on.get(key(r))));
            }
        }
        return pairs;
    }

    private static String key(PerfResult r) {
        return String.join("/", r.scenario(), r.operation(), r.mode(), r.placement(), Boolean.toString(r.registered()),
                Long.toString(r.bytes()), r.algorithm());
    }

    /** Prints the table, or nothing when no cell was measured both ways. */
    static void print(PrintStream out, List<PerfResult> results) {
        List<Pair> pairs = pairs(results);
        if (pairs.isEmpty()) {
            return;
        }
        out.println();
        out.println("# pdl off against on (time per " + (pairs.getFirst().off().allReducesPerPass() > 1 ? "call"
                : "operation") + ", us; off/on above 1: PDL on is faster)");
        ResultTable.TextTable table = new ResultTable.TextTable();
        table.column("", "operation", "", true).column("", "mode", "", true).column("", "placement", "", true)
                .column("", "size", "(B)", false).column("", "algorithm", "", true).column("", "ran (on)", "", true)
                .column("", "off", "(us)", false).column("", "on", "(us)", false).column("", "off/on", "", false);
        for (Pair p : pairs) {
            table.row(List.of(p.off().operation(), p.off().mode(), p.off().placement(), Long.toString(p.off().bytes()),
                    p.off().algorithm(), p.on().ran(), fixed(p.off().timeUs()), fixed(p.on().timeUs()),
                    String.format(Locale.ROOT, "%.3fx", p.speedup())));
        }
        table.print(out);
    }

    private static String fixed(double value) {
        return Double.isNaN(value) ? "-" : String.format(Locale.ROOT, "%.2f", value);
    }
}
