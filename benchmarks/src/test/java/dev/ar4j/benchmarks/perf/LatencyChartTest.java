package dev.ar4j.benchmarks.perf;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.imageio.ImageIO;
import java.awt.image.BufferedImage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LatencyChartTest {

    @Test
    void plotSubcommandDrawsOneSeriesPerAlgorithmFromTheCsv(@TempDir Path dir) throws Exception {
        Path csv = dir.resolve("results.csv");
        ResultFiles.writeCsv(csv, SyntheticResults.sweep());
        Path png = dir.resolve("chart.png");
        assertEquals(0, Ar4jPerf.run("plot", csv.toString(), png.toString()));
        BufferedImage image = ImageIO.read(png.toFile());
        assertEquals(LatencyChart.WIDTH, image.getWidth());
        assertEquals(LatencyChart.HEIGHT, image.getHeight());
        assertEquals(5, LatencyChart.draw(ResultFiles.readCsvFile(csv), dir.resolve("again.png"), "t"));
        Path keep = Path.of(System.getProperty("ar4j.perf.keepChart", ""));
        if (!keep.toString().isEmpty()) {
            Files.copy(png, keep, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        }
    }

    @Test
    void theCommittedSweepsAndVerifyRunDraw(@TempDir Path dir) throws Exception {
        for (String name : List.of("graph", "eager")) {
            ResultCsv csv = ResultFiles.readCsvFile(Path.of("results/perf/2026-11-30-ar4j-perf-" + name + ".csv"));
            Path png = dir.resolve(name + ".png");
            assertEquals(6, LatencyChart.draw(csv, png, null), name);
            assertEquals(LatencyChart.HEIGHT, ImageIO.read(png.toFile()).getHeight());
        }
        ResultCsv verify = ResultFiles.readCsvFile(Path.of("results/perf/2026-11-30-ar4j-perf-verify.csv"));
        Path png = dir.resolve("verify.png");
        assertEquals(6, LatencyChart.draw(verify, png, null), "one bar per algorithm");
        assertEquals(LatencyChart.VERIFY_HEIGHT, ImageIO.read(png.toFile()).getHeight());
    }

    @Test
    void aCsvWithoutTimesIsRefused(@TempDir Path dir) throws Exception {
        Path csv = Files.writeString(dir.resolve("bad.csv"), "algorithm,bytes\npush,1024\n");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> LatencyChart.draw(ResultFiles.readCsvFile(csv), dir.resolve("x.png"), "t"));
        assertTrue(e.getMessage().contains("time_us"), e.getMessage());
        assertEquals(ExitCodes.USAGE, Ar4jPerf.run("plot", csv.toString(), dir.resolve("x.png").toString()));
    }

    @Test
    void verifyRowsBecomeBarsWithFallbacksMarked() {
        List<Map<String, String>> rows = List.of(
                verifyRow("push", "push", "false", "3.0"),
                verifyRow("2stage", "2stage→nccl", "true", "7.0"),
                verifyRow("nccl", "nccl", "false", "7.3"),
                verifyRow("nccl-symm", "nccl-symm", "false", "6.1"));
        List<VerifyChart.Bar> bars = VerifyChart.bars(rows);
        assertEquals(List.of(SweepSeries.Kind.AR4J, SweepSeries.Kind.FELL_BACK, SweepSeries.Kind.BASELINE,
                SweepSeries.Kind.BASELINE), bars.stream().map(VerifyChart.Bar::kind).toList());
        assertEquals(3.0 * 122, bars.getFirst().passUs(), 1e-9, "pass time from the per-all-reduce time when absent");
        assertEquals(6.1 * 122, VerifyChart.bestNccl(bars), 1e-9);
    }

    private static Map<String, String> verifyRow(String algorithm, String ran, String fellBack, String time) {
        return Map.of("scenario", "verify", "mode", "graph", "placement", "out-of-place", "bytes", "43008",
                "algorithm", algorithm, "ran", ran, "fell_back", fellBack, "time_us", time, "allreduces_per_pass", "122");
    }

    @Test
    void decadeTicksLabelValuesInsideEachDecade() {
        List<Double> fine = DecadeLogAxis.tickValues(2.4, 9);
        assertEquals(List.of(3.0, 4.0, 5.0, 6.0, 8.0), fine);
        List<Double> medium = DecadeLogAxis.tickValues(2.4, 310);
        assertTrue(medium.containsAll(List.of(3.0, 4.0, 5.0, 7.0, 10.0, 20.0, 300.0)), medium.toString());
        List<Double> coarse = DecadeLogAxis.tickValues(0.5, 50_000);
        assertTrue(coarse.containsAll(List.of(0.5, 1.0, 2.0, 5.0, 10.0, 20000.0)), coarse.toString());
        assertFalse(coarse.contains(3.0), "1, 2, 5 only over many decades: " + coarse);
        assertEquals("2.5", DecadeLogAxis.label(2.5));
        assertEquals("1000", DecadeLogAxis.label(1000.0));
        assertEquals("0.2", DecadeLogAxis.label(0.2));
    }
}
