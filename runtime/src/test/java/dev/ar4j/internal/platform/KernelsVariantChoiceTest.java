package dev.ar4j.internal.platform;

import dev.ar4j.internal.platform.KernelsVariantChoice.Driver;
import dev.ar4j.internal.platform.KernelsVariantChoice.Forced;
import org.junit.jupiter.api.Test;

import java.util.EnumSet;
import java.util.Optional;
import java.util.Set;

import static dev.ar4j.internal.platform.KernelsVariant.CU12;
import static dev.ar4j.internal.platform.KernelsVariant.CU13;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The choice of the kernels variant with fake driver versions (no GPU, no driver). */
class KernelsVariantChoiceTest {

    private static final Set<KernelsVariant> BOTH = EnumSet.of(CU12, CU13);

    private static KernelsVariantChoice unforced(Driver driver, Set<KernelsVariant> bundled) {
        return KernelsVariantChoice.choose(Optional.empty(), driver, bundled);
    }

    @Test
    void aCuda13DriverGetsCu13() {
        KernelsVariantChoice choice = unforced(Driver.of(13000), BOTH);
        assertEquals(Optional.of(CU13), choice.variant());
        assertTrue(choice.reason().startsWith("the driver supports CUDA 13.0 (cuDriverGetVersion 13000): loading cu13"
                + " (CUDA 13.0, driver >= 580) (the newest variant)"), choice.reason());
        assertEquals(Optional.of(CU13), unforced(Driver.of(13020), BOTH).variant());
    }

    @Test
    void everyCuda12DriverGetsCu12AndIsToldWhyNotCu13() {
        for (int version : new int[] {12000, 12020, 12040, 12080, 12090}) {
            KernelsVariantChoice choice = unforced(Driver.of(version), BOTH);
            assertEquals(Optional.of(CU12), choice.variant(), "driver " + version);
            assertTrue(choice.reason().contains("loading cu12 (CUDA 12.4, driver >= 525.60.13)"), choice.reason());
            assertTrue(choice.reason().contains("cu13 (CUDA 13.0, driver >= 580) needs a newer driver"), choice.reason());
        }
        assertTrue(unforced(Driver.of(12080), BOTH).reason().startsWith("the driver supports CUDA 12.8 (cuDriverGetVersion 12080)"));
    }

    @Test
    void aDriverTooOldForEveryVariantIsRefusedNamingTheMinimumDriver() {
        KernelsVariantChoice choice = unforced(Driver.of(11080), BOTH);
        assertEquals(Optional.empty(), choice.variant());
        assertTrue(choice.reason().startsWith("the driver supports CUDA 11.8 (cuDriverGetVersion 11080), and no kernels"
                + " variant this jar holds runs on it"), choice.reason());
        assertTrue(choice.reason().contains("need an NVIDIA driver of CUDA 12.0 or newer: >= 580 for cu13 (CUDA 13.0),"
                + " 525.60.13 for cu12 (CUDA 12.4). Update the NVIDIA driver"), choice.reason());
    }

    @Test
    void aJarWithoutCu12RefusesACuda12DriverAndSaysHowItWasBuilt() {
        KernelsVariantChoice choice = unforced(Driver.of(12080), EnumSet.of(CU13));
        assertEquals(Optional.empty(), choice.variant());
        assertTrue(choice.reason().contains("cu12 is not in this jar (a jar built without -Dar4j.nvcc.cu12)"), choice.reason());
        assertTrue(choice.reason().contains(">= 580 for cu13 (CUDA 13.0)"), choice.reason());
        assertEquals(Optional.of(CU13), unforced(Driver.of(13000), EnumSet.of(CU13)).variant());
    }

    @Test
    void aJarWithOnlyCu12ServesACuda13DriverWithIt() {
        KernelsVariantChoice choice = unforced(Driver.of(13000), EnumSet.of(CU12));
        assertEquals(Optional.of(CU12), choice.variant());
        assertTrue(choice.reason().contains("cu13 is not in this jar"), choice.reason());
    }

    @Test
    void withoutADriverTheNewestInTheJarIsLoaded() {
        KernelsVariantChoice choice = unforced(Driver.unknown("libcuda.so.1 did not load"), BOTH);
        assertEquals(Optional.of(CU13), choice.variant());
        assertEquals("the CUDA driver's version is unknown (libcuda.so.1 did not load): loading cu13 (CUDA 13.0,"
                + " driver >= 580), the newest variant in the jar (no kernel runs without a driver)", choice.reason());
        assertEquals(Optional.of(CU12), unforced(Driver.unknown("x"), EnumSet.of(CU12)).variant());
    }

    @Test
    void forcingPicksTheNamedVariantWhateverTheDriver() {
        Optional<Forced> cu12 = Forced.from(null, "cu12");
        KernelsVariantChoice choice = KernelsVariantChoice.choose(cu12, Driver.of(13000), BOTH);
        assertEquals(Optional.of(CU12), choice.variant());
        assertTrue(choice.reason().endsWith("loading cu12 (CUDA 12.4, driver >= 525.60.13), forced by environment"
                + " variable AR4J_KERNELS_VARIANT"), choice.reason());

        KernelsVariantChoice tooOld = KernelsVariantChoice.choose(Forced.from(" CU13 ", null), Driver.of(12040), BOTH);
        assertEquals(Optional.of(CU13), tooOld.variant());
        assertTrue(tooOld.reason().contains("forced by system property ar4j.kernels.variant; the driver is too old for"
                + " it: its kernels will fail to launch"), tooOld.reason());
    }

    @Test
    void thePropertyWinsOverTheEnvironmentVariable() {
        assertEquals(Optional.of(new Forced("cu13", "system property ar4j.kernels.variant")), Forced.from("cu13", "cu12"));
        assertEquals(Optional.empty(), Forced.from(null, null));
    }

    @Test
    void aForcedVariantThatIsUnknownOrAbsentIsRefused() {
        KernelsVariantChoice unknown = KernelsVariantChoice.choose(Forced.from(null, "cu11"), Driver.of(13000), BOTH);
        assertEquals(Optional.empty(), unknown.variant());
        assertEquals("environment variable AR4J_KERNELS_VARIANT is 'cu11', which names no kernels variant: set it to"
                + " cu13 or cu12, or unset it to choose by the driver", unknown.reason());

        KernelsVariantChoice absent = KernelsVariantChoice.choose(Forced.from("cu12", null), Driver.of(13000),
                EnumSet.of(CU13));
        assertEquals(Optional.empty(), absent.variant());
        assertEquals("system property ar4j.kernels.variant forces cu12, but this jar holds only cu13 (a jar built"
                + " without -Dar4j.nvcc.cu12)", absent.reason());
    }

    @Test
    void anEmptyJarLoadsNothing() {
        KernelsVariantChoice choice = unforced(Driver.of(13000), EnumSet.noneOf(KernelsVariant.class));
        assertEquals(Optional.empty(), choice.variant());
        assertTrue(choice.reason().contains("holds no kernels variant"), choice.reason());
    }

    @Test
    void variantsAreOrderedNewestFirstAndNamedByTheirDirectory() {
        assertEquals(CU13, KernelsVariant.values()[0]);
        assertTrue(CU13.minimumDriverCudaVersion() > CU12.minimumDriverCudaVersion());
        assertEquals(Optional.of(CU12), KernelsVariant.named("cu12"));
        assertEquals(Optional.empty(), KernelsVariant.named("cu12.4"));
        assertTrue(CU12.runsOn(12000));
        assertTrue(!CU12.runsOn(11080));
        assertTrue(!CU13.runsOn(12090));
    }
}
