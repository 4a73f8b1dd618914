package dev.ar4j.internal.kernels;

import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The kernel variants' names and bits (no native library needed). */
class KernelVariantsTest {

    @Test
    void namesParseToTheHeadersBits() throws Exception {
        assertEquals(0, KernelVariants.parse("", "test"));
        assertEquals(0, KernelVariants.parse(" none ", "test"));
        assertEquals(KernelVariants.ALL, KernelVariants.parse("all", "test"));
        assertEquals(1, KernelVariants.parse("early-trigger", "test"));
        assertEquals(2 | 8, KernelVariants.parse("Clear-On-Read, two-stage-push", "test"));
        assertEquals(4, KernelVariants.parse("fused-grid-push,", "test"));
        String header = Files.readString(Path.of(System.getProperty("user.dir")).resolveSibling("cuda")
                .resolve("include/ar4j/custom_all_reduce.h"));
        assertTrue(header.contains("AR4J_VARIANT_PUSH_EARLY_TRIGGER = " + KernelVariants.PUSH_EARLY_TRIGGER + ","));
        assertTrue(header.contains("AR4J_VARIANT_PUSH_CLEAR_ON_READ = " + KernelVariants.PUSH_CLEAR_ON_READ + ","));
        assertTrue(header.contains("AR4J_VARIANT_FUSED_GRID_PUSH = " + KernelVariants.FUSED_GRID_PUSH + ","));
        assertTrue(header.contains("AR4J_VARIANT_TWO_STAGE_PUSH = " + KernelVariants.TWO_STAGE_PUSH + ","));
        assertTrue(header.contains("AR4J_VARIANT_PUSH_PASS_ON_POISON = " + KernelVariants.PUSH_PASS_ON_POISON + ","));
        assertTrue(header.contains("AR4J_VARIANTS_ALL = " + KernelVariants.ALL + ","));
        assertEquals(16, KernelVariants.parse("push-pass-on-poison", "test"));
    }

    @Test
    void anUnknownNameIsRefusedNamingTheSourceAndTheAcceptedNames() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> KernelVariants.parse("early-trigger,lamport", "system property ar4j.kernel.variants"));
        assertTrue(e.getMessage().contains("system property ar4j.kernel.variants"), e.getMessage());
        assertTrue(e.getMessage().contains("'lamport'"), e.getMessage());
        assertTrue(e.getMessage().contains(KernelVariants.ACCEPTED), e.getMessage());
    }

    @Test
    void describeNamesTheBitsAndRoundTrips() {
        assertEquals("none", KernelVariants.describe(0));
        assertEquals("early-trigger,clear-on-read,fused-grid-push,two-stage-push,push-pass-on-poison",
                KernelVariants.describe(KernelVariants.ALL));
        for (int flags = 0; flags <= KernelVariants.ALL; flags++) {
            assertEquals(flags, KernelVariants.parse(KernelVariants.describe(flags), "test"));
        }
    }
}
