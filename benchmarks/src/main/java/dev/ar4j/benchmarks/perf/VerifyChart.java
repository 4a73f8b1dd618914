package dev.ar4j.benchmarks.perf;

import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.CategoryAxis;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.labels.ItemLabelAnchor;
import org.jfree.chart.labels.ItemLabelPosition;
import org.jfree.chart.labels.StandardCategoryItemLabelGenerator;
import org.jfree.chart.plot.CategoryPlot;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.chart.renderer.category.BarRenderer;
import org.jfree.chart.renderer.category.StandardBarPainter;
import org.jfree.chart.title.TextTitle;
import org.jfree.chart.ui.TextAnchor;
import org.jfree.data.category.CategoryDataset;
import org.jfree.data.category.DefaultCategoryDataset;

import java.awt.Color;
import java.awt.Font;
import java.awt.Paint;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The verify scenario's chart: one horizontal bar per algorithm, the time of one pass (122
 * all-reduces of 43008 bytes in one CUDA graph), labelled with the time per all-reduce and the
 * speed-up over the best NCCL baseline. A forced kernel that fell back to NCCL is drawn light
 * grey and labelled with what ran.
 */
final class VerifyChart {
    /** A bar: its label, what ran, the pass time, the time per all-reduce, and how it is drawn. */
    record Bar(String label, String ran, double passUs, double timeUs, SweepSeries.Kind kind) {
    }

    private VerifyChart() {
    }

    /** The bars of the verify rows, in file order; rows without a time are left out. */
    static List<Bar> bars(List<Map<String, String>> rows) {
        List<Bar> bars = new ArrayList<>();
        for (Map<String, String> row : rows) {
            String time = row.getOrDefault("time_us", "");
            if (time.isBlank() || time.contains("inf")) {
                continue;
            }
            double t = Double.parseDouble(time);
            String pass = row.getOrDefault("pass_us", "");
            double passUs = pass.isBlank() || pass.contains("inf")
                    ? t * Double.parseDouble(row.getOrDefault("allreduces_per_pass", "1")) : Double.parseDouble(pass);
            String variant = SweepSeries.variant(row);
            String label = row.get("algorithm") + (rows.stream().map(SweepSeries::variant).distinct().count() > 1
                    ? " (" + variant + ")" : "");
            bars.add(new Bar(label, row.getOrDefault("ran", row.get("algorithm")), passUs, t, SweepSeries.classify(row)));
        }
        return bars;
    }

    /** The best NCCL pass time, or NaN without baselines. */
    static double bestNccl(List<Bar> bars) {
        return bars.stream().filter(b -> b.kind() == SweepSeries.Kind.BASELINE).mapToDouble(Bar::passUs).min()
                .orElse(Double.NaN);
    }

    /**
     * @param perPass what a pass is, for the axis
     * @param perCall what a call is, for the labels: "all-reduce" or "all-reduce + norm"
     * @param missing rows that were not measured, each with why (the fused row as files of earlier versions, which skipped it, record it), drawn as a red note
     */
    static JFreeChart build(List<Bar> bars, ChartTitle title, String perPass, String perCall, List<String> missing) {
        double best = bestNccl(bars);
        DefaultCategoryDataset data = new DefaultCategoryDataset();
        List<String> labels = new ArrayList<>();
        for (Bar b : bars) {
            String category = b.kind() == SweepSeries.Kind.FELL_BACK ? b.label() + " (ran " + b.ran() + ")" : b.label();
            data.addValue(b.passUs(), "time per pass", category);
            String speed = Double.isNaN(best) ? "" : String.format(Locale.ROOT, ", %.2f× best NCCL", best / b.passUs());
            String tail = switch (b.kind()) {
                case BASELINE -> "";
                case FELL_BACK -> ", measured NCCL, not " + b.label();
                case AR4J -> speed;
            };
            labels.add(String.format(Locale.ROOT, "%.1f µs (%.2f µs per %s%s)", b.passUs(), b.timeUs(), perCall,
                    tail));
        }
        BarRenderer renderer = new BarRenderer() {
            private static final long serialVersionUID = 1L;

            @Override
            public Paint getItemPaint(int row, int column) {
                Bar b = bars.get(column);
                return b.kind() == SweepSeries.Kind.FELL_BACK ? SeriesStyle.FELL_BACK : SeriesStyle.paint(b.label());
            }
        };
        renderer.setBarPainter(new StandardBarPainter());
        renderer.setShadowVisible(false);
        renderer.setMaximumBarWidth(0.12);
        renderer.setDefaultItemLabelGenerator(new StandardCategoryItemLabelGenerator() {
            private static final long serialVersionUID = 1L;

            @Override
            public String generateLabel(CategoryDataset dataset, int row, int column) {
                return labels.get(column);
            }
        });
        renderer.setDefaultItemLabelsVisible(true);
        renderer.setDefaultItemLabelFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
        renderer.setDefaultPositiveItemLabelPosition(new ItemLabelPosition(ItemLabelAnchor.OUTSIDE3,
                TextAnchor.CENTER_LEFT));
        NumberAxis valueAxis = new NumberAxis("time per pass (µs), " + perPass + "; lower is better");
        valueAxis.setUpperMargin(0.45); // room for the labels
        CategoryAxis categoryAxis = new CategoryAxis("algorithm");
        categoryAxis.setTickLabelFont(new Font(Font.SANS_SERIF, Font.PLAIN, 13));
        CategoryPlot plot = new CategoryPlot(data, categoryAxis, valueAxis, renderer);
        plot.setOrientation(PlotOrientation.HORIZONTAL);
        plot.setBackgroundPaint(Color.WHITE);
        plot.setRangeGridlinePaint(new Color(0xcccccc));
        JFreeChart chart = new JFreeChart(title.title(), new Font(Font.SANS_SERIF, Font.BOLD, 16), plot, false);
        chart.setBackgroundPaint(Color.WHITE);
        if (!title.subtitle().isEmpty()) {
            chart.addSubtitle(new TextTitle(title.subtitle(), new Font(Font.SANS_SERIF, Font.PLAIN, 12)));
        }
        chart.addSubtitle(new TextTitle("black/grey bars: NCCL baselines; light grey: a forced kernel that fell back "
                + "to NCCL; lighter colours: pdl off", new Font(Font.SANS_SERIF, Font.PLAIN, 12)));
        for (String line : missing) {
            TextTitle note = new TextTitle("not measured: " + line, new Font(Font.SANS_SERIF, Font.ITALIC, 12));
            note.setPaint(new Color(0x8b0000));
            chart.addSubtitle(note);
        }
        return chart;
    }
}
