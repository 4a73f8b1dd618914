package dev.ar4j.internal.platform;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;

/**
 * Which build of the kernels to load, and why: a pure function of the driver's CUDA version, a
 * forcing setting and the builds the jar holds, so that it is tested without a GPU.
 *
 * <p>Unforced, the newest variant the driver runs wins; with no driver to ask (no
 * {@code libcuda.so.1}: a machine without a GPU), the newest in the jar, which loads but runs
 * nothing there. {@value #PROPERTY} (or {@value #ENVIRONMENT_VARIABLE}) {@code =cu12|cu13} forces
 * one, even on a driver too old for it (then the reason says that its kernels will not run).
 *
 * @param variant the build to load, or empty when none can be (the reason says what to do)
 * @param reason  the driver's version, the variant chosen and why, for the log and messages
 */
record KernelsVariantChoice(Optional<KernelsVariant> variant, String reason) {

    /** The system property that forces a variant. */
    static final String PROPERTY = "ar4j.kernels.variant";
    /** The environment variable that forces a variant (after the property). */
    static final String ENVIRONMENT_VARIABLE = "AR4J_KERNELS_VARIANT";

    KernelsVariantChoice {
        Objects.requireNonNull(variant, "variant");
        Objects.requireNonNull(reason, "reason");
    }

    /**
     * A setting that forces a variant.
     *
     * @param value  what it says, e.g. {@code cu12}
     * @param source where it is set, e.g. "environment variable AR4J_KERNELS_VARIANT"
     */
    record Forced(String value, String source) {
        Forced {
            Objects.requireNonNull(value, "value");
            Objects.requireNonNull(source, "source");
        }

        /** The property, else the environment variable, else empty. */
        static Optional<Forced> from(String propertyValue, String environmentValue) {
            if (propertyValue != null) {
                return Optional.of(new Forced(propertyValue, "system property " + PROPERTY));
            }
            if (environmentValue != null) {
                return Optional.of(new Forced(environmentValue, "environment variable " + ENVIRONMENT_VARIABLE));
            }
            return Optional.empty();
        }
    }

    /**
     * What the driver says.
     *
     * @param cudaVersion    {@code cuDriverGetVersion}'s answer (e.g. 12080), or empty when it could not be asked
     * @param unknownBecause why it could not be asked (empty string when it was)
     */
    record Driver(OptionalInt cudaVersion, String unknownBecause) {
        Driver {
            Objects.requireNonNull(cudaVersion, "cudaVersion");
            Objects.requireNonNull(unknownBecause, "unknownBecause");
        }

        static Driver of(int cudaVersion) {
            return new Driver(OptionalInt.of(cudaVersion), "");
        }

        static Driver unknown(String because) {
            return new Driver(OptionalInt.empty(), because);
        }

        String describe() {
            if (cudaVersion.isEmpty()) {
                return "the CUDA driver's version is unknown (" + unknownBecause + ")";
            }
            int v = cudaVersion.getAsInt();
            return "the driver supports CUDA " + (v / 1000) + "." + (v % 1000) / 10 + " (cuDriverGetVersion " + v + ")";
        }
    }

    /**
     * Chooses.
     *
     * @param forced  the forcing setting, if any
     * @param driver  the driver's version, or why it is unknown
     * @param bundled the variants the jar holds for this platform
     * @return the choice; its variant is empty when nothing can be loaded
     */
    static KernelsVariantChoice choose(Optional<Forced> forced, Driver driver, Set<KernelsVariant> bundled) {
        Objects.requireNonNull(forced, "forced");
        Objects.requireNonNull(driver, "driver");
        Set<KernelsVariant> held = bundled.isEmpty() ? EnumSet.noneOf(KernelsVariant.class) : EnumSet.copyOf(bundled);
        if (held.isEmpty()) {
            return none("the ar4j-cuda jar holds no kernels variant for this platform (built with"
                    + " -Dar4j.native.skip=true?)");
        }
        if (forced.isPresent()) {
            return forcedChoice(forced.get(), driver, held);
        }
        if (driver.cudaVersion().isEmpty()) {
            KernelsVariant newest = held.iterator().next();
            return new KernelsVariantChoice(Optional.of(newest), driver.describe() + ": loading " + newest.describe()
                    + ", the newest variant in the jar (no kernel runs without a driver)");
        }
        int version = driver.cudaVersion().getAsInt();
        List<String> passedOver = new ArrayList<>();
        for (KernelsVariant variant : KernelsVariant.values()) {
            if (!variant.runsOn(version)) {
                passedOver.add(variant.describe() + " needs a newer driver");
            } else if (!held.contains(variant)) {
                passedOver.add(variant.directory() + " is not in this jar" + whyMissing(variant));
            } else {
                String why = passedOver.isEmpty() ? "the newest variant" : String.join("; ", passedOver);
                return new KernelsVariantChoice(Optional.of(variant), driver.describe() + ": loading "
                        + variant.describe() + " (" + why + ")");
            }
        }
        KernelsVariant oldest = KernelsVariant.values()[KernelsVariant.values().length - 1];
        return none(driver.describe() + ", and no kernels variant this jar holds runs on it ("
                + String.join("; ", passedOver) + "). ar4j's kernels need an NVIDIA driver of CUDA "
                + (oldest.minimumDriverCudaVersion() / 1000) + ".0 or newer: >= " + minimumDrivers(held)
                + ". Update the NVIDIA driver");
    }

    private static KernelsVariantChoice forcedChoice(Forced forced, Driver driver, Set<KernelsVariant> held) {
        Optional<KernelsVariant> named = KernelsVariant.named(forced.value());
        if (named.isEmpty()) {
            return none(forced.source() + " is '" + forced.value() + "', which names no kernels variant: set it to"
                    + " cu13 or cu12, or unset it to choose by the driver");
        }
        KernelsVariant variant = named.get();
        if (!held.contains(variant)) {
            return none(forced.source() + " forces " + variant.directory() + ", but this jar holds only "
                    + directories(held) + whyMissing(variant));
        }
        String warning = driver.cudaVersion().isPresent() && !variant.runsOn(driver.cudaVersion().getAsInt())
                ? "; the driver is too old for it: its kernels will fail to launch" : "";
        return new KernelsVariantChoice(Optional.of(variant), driver.describe() + ": loading " + variant.describe()
                + ", forced by " + forced.source() + warning);
    }

    private static String whyMissing(KernelsVariant variant) {
        return variant == KernelsVariant.CU12 ? " (a jar built without -Dar4j.nvcc.cu12)" : "";
    }

    private static String directories(Set<KernelsVariant> held) {
        List<String> names = new ArrayList<>();
        held.forEach(v -> names.add(v.directory()));
        return String.join(", ", names);
    }

    private static String minimumDrivers(Set<KernelsVariant> held) {
        List<String> lines = new ArrayList<>();
        held.forEach(v -> lines.add(v.minimumDriver() + " for " + v.directory() + " (" + v.toolkit() + ")"));
        return String.join(", ", lines);
    }

    private static KernelsVariantChoice none(String reason) {
        return new KernelsVariantChoice(Optional.empty(), reason);
    }
}
