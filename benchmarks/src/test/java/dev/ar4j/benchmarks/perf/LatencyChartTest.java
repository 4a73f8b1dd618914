package dev.ar4j.benchmarks.perf;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.imageio.ImageIO;
import java.awt.image.BufferedImage;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
        assertEquals(1200, image.getWidth());
        assertEquals(800, image.getHeight());
        assertEquals(5, LatencyChart.draw(ResultFiles.readCsv(csv), dir.resolve("again.png"), "t"));
        Path keep = Path.of(System.getProperty("ar4j.perf.keepChart", ""));
        if (!keep.toString().isEmpty()) {
            Files.copy(png, keep, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        }
    }

    @Test
    void aCsvWithoutTimesIsRefused(@TempDir Path dir) throws Exception {
        Path csv = Files.writeString(dir.resolve("bad.csv"), "algorithm,bytes\npush,1024\n");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> LatencyChart.draw(ResultFiles.readCsv(csv), dir.resolve("x.png"), "t"));
        assertTrue(e.getMessage().contains("time_us"), e.getMessage());
        assertEquals(2, Ar4jPerf.run("plot", csv.toString(), dir.resolve("x.png").toString()));
    }
}
