package dev.ar4j.benchmarks.perf;

import org.jfree.chart.plot.DefaultDrawingSupplier;

import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Paint;
import java.awt.Shape;
import java.awt.Stroke;
import java.util.Map;

/**
 * One colour per algorithm, the same in every panel and chart; the NCCL baselines black and dark
 * grey, thicker and dashed, so that they stand out where ar4j's lines run close to them.
 */
final class SeriesStyle {
    private static final Map<String, Color> COLORS = Map.of(
            "auto", new Color(0x1f77b4),
            "1stage", new Color(0xd62728),
            "2stage", new Color(0x2ca02c),
            "push", new Color(0x9467bd),
            "nccl", Color.BLACK,
            "nccl-symm", new Color(0x6b6b6b));
    private static final Color[] OTHERS = {new Color(0xff7f0e), new Color(0x8c564b), new Color(0xe377c2),
        new Color(0x17becf), new Color(0xbcbd22)};
    /** Light fill of a bar whose forced kernel fell back to NCCL. */
    static final Color FELL_BACK = new Color(0xcfcfcf);

    private static final Shape[] SHAPES = DefaultDrawingSupplier.createStandardSeriesShapes();
    /** Index into JFreeChart's standard shapes: square, circle, up-triangle, diamond, ..., down-triangle, ... */
    private static final Map<String, Integer> SHAPE_INDEX = Map.of(
            "nccl", 0, "nccl-symm", 1, "auto", 2, "1stage", 3, "push", 5, "2stage", 7);

    private SeriesStyle() {
    }

    /** The marker of a series, the same in both panels. */
    static Shape shape(String seriesName) {
        Integer i = SHAPE_INDEX.get(algorithm(seriesName));
        return SHAPES[(i != null ? i : Math.floorMod(algorithm(seriesName).hashCode(), SHAPES.length)) % SHAPES.length];
    }

    /** The algorithm of a series name: "push" of "push (eager, in-place)" and of "push+norm" (verify-fused). */
    static String algorithm(String seriesName) {
        int space = seriesName.indexOf(' ');
        String name = space < 0 ? seriesName : seriesName.substring(0, space);
        return name.endsWith(FusedVariant.NORM_SUFFIX) ? name.substring(0, name.length()
                - FusedVariant.NORM_SUFFIX.length()) : name;
    }

    static boolean isBaseline(String seriesName) {
        return algorithm(seriesName).startsWith("nccl");
    }

    /** The algorithm's colour; a "pdl off" variant gets it lightened, so that both settings of a run show. */
    static Paint paint(String seriesName) {
        Color c = COLORS.get(algorithm(seriesName));
        Color base = c != null ? c : OTHERS[Math.floorMod(algorithm(seriesName).hashCode(), OTHERS.length)];
        return isPdlOff(seriesName) ? lighter(base) : base;
    }

    /** Whether a series or bar name is the PDL-off variant of a {@code --pdl on,off} run. */
    static boolean isPdlOff(String seriesName) {
        return seriesName.contains("pdl off");
    }

    /** Halfway to white. */
    static Color lighter(Color c) {
        return new Color((c.getRed() + 255) / 2, (c.getGreen() + 255) / 2, (c.getBlue() + 255) / 2);
    }

    /**
     * Baselines 3 px dashed (nccl-symm with a shorter dash); ar4j's 2 px solid; eager variants
     * dotted; a "pdl off" variant 1.5 px with a long dash, under its lightened colour.
     */
    static Stroke stroke(String seriesName) {
        boolean eager = seriesName.contains("(eager");
        if (isPdlOff(seriesName)) {
            return new BasicStroke(1.5f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_ROUND, 1f,
                    eager ? new float[] {2f, 3f} : new float[] {14f, 4f}, 0f);
        }
        if (isBaseline(seriesName)) {
            float[] dash = algorithm(seriesName).equals("nccl") ? new float[] {10f, 5f} : new float[] {4f, 4f};
            return new BasicStroke(3f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_ROUND, 1f, dash, 0f);
        }
        return eager ? new BasicStroke(2f, BasicStroke.CAP_ROUND, BasicStroke.JOIN_ROUND, 1f, new float[] {2f, 4f}, 0f)
                : new BasicStroke(2f);
    }
}
