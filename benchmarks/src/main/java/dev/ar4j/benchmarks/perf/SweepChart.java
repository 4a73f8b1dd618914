package dev.ar4j.benchmarks.perf;

import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.LogAxis;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.axis.NumberTickUnit;
import org.jfree.chart.plot.CombinedDomainXYPlot;
import org.jfree.chart.plot.DatasetRenderingOrder;
import org.jfree.chart.plot.ValueMarker;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.chart.title.TextTitle;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.util.List;
import java.util.Map;

/**
 * The sweep chart: on top, time per all-reduce against message size (log axes, labelled ticks
 * inside each decade, NCCL baselines drawn over ar4j's lines); below, on the same size axis, the
 * speed-up of each ar4j series over the best NCCL baseline at that size, with a line at 1×.
 */
final class SweepChart {
    private SweepChart() {
    }

    /** @param operation what a point times, for the axis: "all-reduce", "all-gather", ... */
    static JFreeChart build(SweepSeries series, ChartTitle title, String operation) {
        LogAxis sizeAxis = new LogAxis("message size (bytes)");
        sizeAxis.setBase(2);
        sizeAxis.setSmallestValue(1);
        sizeAxis.setTickUnit(new NumberTickUnit(1));
        sizeAxis.setNumberFormatOverride(new ByteSizeTickFormat());

        XYPlot latency = new XYPlot();
        latency.setRangeAxis(new DecadeLogAxis("time per " + operation + " (µs)"));
        // Dataset 0 (the baselines) is drawn last, over ar4j's lines: REVERSE draws the highest index first.
        latency.setDataset(0, collection(series.baselines()));
        latency.setRenderer(0, renderer(series.baselines(), true));
        latency.setDataset(1, collection(series.ar4j()));
        latency.setRenderer(1, renderer(series.ar4j(), true));
        latency.setDatasetRenderingOrder(DatasetRenderingOrder.REVERSE);
        style(latency);

        XYPlot speedup = new XYPlot();
        NumberAxis speedAxis = new NumberAxis("speed-up vs best NCCL (×)");
        speedAxis.setAutoRangeIncludesZero(false);
        speedup.setRangeAxis(speedAxis);
        speedup.setDataset(0, collection(series.speedups()));
        speedup.setRenderer(0, renderer(series.speedups(), false));
        ValueMarker parity = new ValueMarker(1.0, Color.BLACK, new BasicStroke(2f,
                BasicStroke.CAP_BUTT, BasicStroke.JOIN_ROUND, 1f, new float[] {10f, 5f}, 0f));
        parity.setLabel("1× = best NCCL");
        parity.setLabelFont(new Font(Font.SANS_SERIF, Font.PLAIN, 11));
        parity.setLabelAnchor(org.jfree.chart.ui.RectangleAnchor.TOP_LEFT);
        parity.setLabelTextAnchor(org.jfree.chart.ui.TextAnchor.BOTTOM_LEFT);
        speedup.addRangeMarker(parity);
        style(speedup);

        boolean ncclOnly = series.ar4j().isEmpty();
        CombinedDomainXYPlot plot = new CombinedDomainXYPlot(sizeAxis);
        plot.setGap(12);
        plot.add(latency, 3);
        if (!ncclOnly) {
            plot.add(speedup, 2); // nothing to compare where only NCCL ran (-o allgather etc.)
        }
        JFreeChart chart = new JFreeChart(title.title(), new Font(Font.SANS_SERIF, Font.BOLD, 16), plot, true);
        chart.setBackgroundPaint(Color.WHITE);
        if (!title.subtitle().isEmpty()) {
            chart.addSubtitle(new TextTitle(title.subtitle(), new Font(Font.SANS_SERIF, Font.PLAIN, 12)));
        }
        chart.addSubtitle(new TextTitle(ncclOnly ? "lower is better; NCCL only: ar4j's kernels do all-reduce, the "
                + "other collectives run through NCCL (nccl: cudaMalloc buffers, nccl-symm: symmetric windows)"
                : "top: lower is better; dashed black/grey: NCCL baselines (drawn on top). "
                + "bottom: above 1× ar4j is faster than the better of nccl and nccl-symm",
                new Font(Font.SANS_SERIF, Font.PLAIN, 12)));
        String note = series.fallbackNote();
        if (!note.isEmpty()) {
            TextTitle fallback = new TextTitle(note, new Font(Font.SANS_SERIF, Font.ITALIC, 12));
            fallback.setPaint(new Color(0x8b0000));
            chart.addSubtitle(fallback);
        }
        return chart;
    }

    private static void style(XYPlot plot) {
        plot.setBackgroundPaint(Color.WHITE);
        plot.setDomainGridlinePaint(new Color(0xdddddd));
        plot.setRangeGridlinePaint(new Color(0xcccccc));
        plot.setDomainGridlineStroke(new BasicStroke(1f));
        plot.setRangeGridlineStroke(new BasicStroke(1f));
    }

    private static XYSeriesCollection collection(Map<String, List<SweepSeries.Point>> series) {
        XYSeriesCollection data = new XYSeriesCollection();
        for (Map.Entry<String, List<SweepSeries.Point>> e : series.entrySet()) {
            XYSeries s = new XYSeries(e.getKey(), true, false);
            e.getValue().forEach(p -> s.add(p.bytes(), p.value()));
            data.addSeries(s);
        }
        return data;
    }

    private static XYLineAndShapeRenderer renderer(Map<String, List<SweepSeries.Point>> series, boolean inLegend) {
        XYLineAndShapeRenderer renderer = new XYLineAndShapeRenderer(true, true);
        int i = 0;
        for (String name : series.keySet()) {
            renderer.setSeriesPaint(i, SeriesStyle.paint(name));
            renderer.setSeriesStroke(i, SeriesStyle.stroke(name));
            renderer.setSeriesShape(i, SeriesStyle.shape(name));
            renderer.setSeriesVisibleInLegend(i, inLegend);
            i++;
        }
        return renderer;
    }
}
