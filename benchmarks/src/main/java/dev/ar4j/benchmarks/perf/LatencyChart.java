package dev.ar4j.benchmarks.perf;

import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.LogAxis;
import org.jfree.chart.axis.LogarithmicAxis;
import org.jfree.chart.axis.NumberTickUnit;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.chart.title.TextTitle;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.io.IOException;
import java.text.FieldPosition;
import java.text.NumberFormat;
import java.text.ParsePosition;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The PNG chart: latency per all-reduce against message size, both axes logarithmic, one series
 * per algorithm (and per timing mode and placement when a run has several). Drawn with JFreeChart
 * in headless AWT, so the Java runtime needs the {@code java.desktop} module and fonts; where it
 * has neither, draw it later from the CSV with {@code ar4j-perf plot}.
 */
public final class LatencyChart {
    private static final Color[] PALETTE = {
        new Color(0x1f77b4), new Color(0xd62728), new Color(0x2ca02c), new Color(0x9467bd), new Color(0x7f7f7f),
        new Color(0x000000), new Color(0xff7f0e), new Color(0x8c564b), new Color(0xe377c2), new Color(0x17becf),
        new Color(0xbcbd22), new Color(0x393b79),
    };

    private LatencyChart() {
    }

    /**
     * Draws the rows of an ar4j-perf CSV ({@link ResultFiles#readCsv}) into a PNG.
     *
     * @return the number of series drawn
     * @throws IllegalArgumentException if the rows have no {@code bytes}, {@code time_us} or
     *                                  {@code algorithm} column, or no timed row
     */
    public static int draw(List<Map<String, String>> rows, Path png, String title) throws IOException {
        System.setProperty("java.awt.headless", "true");
        if (rows.isEmpty()) {
            throw new IllegalArgumentException("no results to plot");
        }
        for (String column : List.of("bytes", "time_us", "algorithm")) {
            if (!rows.getFirst().containsKey(column)) {
                throw new IllegalArgumentException("the CSV has no '" + column + "' column (is it an ar4j-perf CSV?)");
            }
        }
        Set<String> variants = new LinkedHashSet<>();
        for (Map<String, String> row : rows) {
            variants.add(variant(row));
        }
        boolean nameVariants = variants.size() > 1;
        Map<String, XYSeries> series = new LinkedHashMap<>();
        for (Map<String, String> row : rows) {
            String time = row.get("time_us");
            if (time == null || time.isEmpty()) {
                continue;
            }
            String name = row.get("algorithm") + (nameVariants ? " (" + variant(row) + ")" : "");
            series.computeIfAbsent(name, n -> new XYSeries(n, true, false))
                    .add(Double.parseDouble(row.get("bytes")), Double.parseDouble(time));
        }
        if (series.isEmpty()) {
            throw new IllegalArgumentException("no timed rows to plot");
        }
        XYSeriesCollection data = new XYSeriesCollection();
        series.values().forEach(data::addSeries);

        LogAxis sizeAxis = new LogAxis("message size (bytes)");
        sizeAxis.setBase(2);
        sizeAxis.setSmallestValue(1);
        sizeAxis.setTickUnit(new NumberTickUnit(1));
        sizeAxis.setNumberFormatOverride(new ByteSizeFormat());
        LogarithmicAxis timeAxis = new LogarithmicAxis("time per all-reduce (µs)");
        timeAxis.setStrictValuesFlag(false);
        timeAxis.setAutoRangeNextLogFlag(true);
        XYLineAndShapeRenderer renderer = new XYLineAndShapeRenderer(true, true);
        for (int i = 0; i < data.getSeriesCount(); i++) {
            renderer.setSeriesPaint(i, PALETTE[i % PALETTE.length]);
            String key = data.getSeriesKey(i).toString();
            boolean baseline = key.startsWith("nccl");
            renderer.setSeriesStroke(i, baseline
                    ? new BasicStroke(2f, BasicStroke.CAP_ROUND, BasicStroke.JOIN_ROUND, 1f, new float[] {6f, 4f}, 0f)
                    : new BasicStroke(2f));
        }
        XYPlot plot = new XYPlot(data, sizeAxis, timeAxis, renderer);
        plot.setBackgroundPaint(Color.WHITE);
        plot.setDomainGridlinePaint(new Color(0xdddddd));
        plot.setRangeGridlinePaint(new Color(0xdddddd));
        JFreeChart chart = new JFreeChart(title, new Font(Font.SANS_SERIF, Font.BOLD, 16), plot, true);
        chart.setBackgroundPaint(Color.WHITE);
        chart.addSubtitle(new TextTitle("lower is better; dashed: NCCL baselines"));
        Path parent = png.toAbsolutePath().getParent();
        if (parent != null) {
            Files.createDirectories(parent);
        }
        ChartUtils.saveChartAsPNG(png.toFile(), chart, 1200, 800);
        return series.size();
    }

    /** "graph, out-of-place" (plus ", registered" when so). */
    private static String variant(Map<String, String> row) {
        String mode = row.getOrDefault("mode", "");
        String placement = row.getOrDefault("placement", "");
        boolean registered = Boolean.parseBoolean(row.getOrDefault("registered", "false"));
        return mode + ", " + placement + (registered ? ", registered" : "");
    }

    /** Tick labels of the size axis: "1K", "64M", "512". */
    private static final class ByteSizeFormat extends NumberFormat {
        private static final long serialVersionUID = 1L;

        @Override
        public StringBuffer format(double number, StringBuffer toAppendTo, FieldPosition pos) {
            long bytes = Math.round(number);
            return toAppendTo.append(bytes >= 1 ? ByteSizes.format(bytes) : "");
        }

        @Override
        public StringBuffer format(long number, StringBuffer toAppendTo, FieldPosition pos) {
            return format((double) number, toAppendTo, pos);
        }

        @Override
        public Number parse(String source, ParsePosition parsePosition) {
            throw new UnsupportedOperationException("size tick labels are not parsed");
        }
    }
}
