package dev.ar4j.benchmarks.perf;

import org.jfree.chart.axis.AxisState;
import org.jfree.chart.axis.LogAxis;
import org.jfree.chart.axis.NumberTick;
import org.jfree.chart.axis.TickType;
import org.jfree.chart.ui.RectangleEdge;
import org.jfree.chart.ui.TextAnchor;

import java.awt.Graphics2D;
import java.awt.geom.Rectangle2D;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;

/**
 * A base-10 logarithmic axis with labelled ticks inside each decade, so that a value between 2.5
 * and 8 can be read off: 1, 1.5, 2, 3, 4, 5, 6, 8 when the range spans up to about one decade,
 * 1, 2, 3, 4, 5, 7 up to three, and 1, 2, 5 beyond.
 */
final class DecadeLogAxis extends LogAxis {
    private static final long serialVersionUID = 1L;
    private static final double[] FINE = {1, 1.5, 2, 3, 4, 5, 6, 8};
    private static final double[] MEDIUM = {1, 2, 3, 4, 5, 7};
    private static final double[] COARSE = {1, 2, 5};

    DecadeLogAxis(String label) {
        super(label);
        setBase(10);
        setSmallestValue(1e-3);
    }

    /** The tick values in [lower, upper]. */
    static List<Double> tickValues(double lower, double upper) {
        List<Double> ticks = new ArrayList<>();
        if (!(lower > 0) || !(upper > lower)) {
            return ticks;
        }
        double decades = Math.log10(upper / lower);
        double[] mantissas = decades <= 1.2 ? FINE : decades <= 3 ? MEDIUM : COARSE;
        int first = (int) Math.floor(Math.log10(lower));
        int last = (int) Math.ceil(Math.log10(upper));
        for (int e = first; e <= last; e++) {
            for (double m : mantissas) {
                double v = BigDecimal.valueOf(m).scaleByPowerOfTen(e).doubleValue();
                if (v >= lower * (1 - 1e-9) && v <= upper * (1 + 1e-9)) {
                    ticks.add(v);
                }
            }
        }
        return ticks;
    }

    /** "2.5", "10", "0.2", "1000". */
    static String label(double value) {
        return BigDecimal.valueOf(value).stripTrailingZeros().toPlainString();
    }

    @Override
    @SuppressWarnings({"rawtypes", "unchecked"})
    public List refreshTicks(Graphics2D g2, AxisState state, Rectangle2D dataArea, RectangleEdge edge) {
        boolean vertical = RectangleEdge.isLeftOrRight(edge);
        TextAnchor anchor = vertical
                ? (edge == RectangleEdge.LEFT ? TextAnchor.CENTER_RIGHT : TextAnchor.CENTER_LEFT)
                : (edge == RectangleEdge.TOP ? TextAnchor.BOTTOM_CENTER : TextAnchor.TOP_CENTER);
        List ticks = new ArrayList();
        for (double v : tickValues(getLowerBound(), getUpperBound())) {
            ticks.add(new NumberTick(TickType.MAJOR, v, label(v), anchor, TextAnchor.CENTER, 0.0));
        }
        return ticks;
    }
}
