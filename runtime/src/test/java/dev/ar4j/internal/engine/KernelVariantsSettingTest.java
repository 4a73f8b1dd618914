package dev.ar4j.internal.engine;

import dev.ar4j.ConfigurationException;
import dev.ar4j.internal.kernels.KernelVariants;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.Properties;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Where the kernel variants come from: a parent group > ar4j.kernel.variants > none; never the environment. */
class KernelVariantsSettingTest {

    private static Settings settings(String builder, String property, String env) {
        Settings.Draft d = new Settings.Draft();
        Properties props = new Properties();
        if (property != null) {
            props.setProperty(BuilderChecks.KERNEL_VARIANTS_PROPERTY, property);
        }
        d.systemProperties = props;
        d.environment = env == null ? Map.of() : Map.of("AR4J_KERNEL_VARIANTS", env);
        d.kernelVariants = builder;
        return d.freeze();
    }

    @Test
    void noneByDefault() {
        assertEquals(0, BuilderChecks.kernelVariants(settings(null, null, null)));
        BuilderChecks.validate(settings(null, null, null));
    }

    @Test
    void inheritedThenPropertyAndNeverTheEnvironment() {
        assertEquals(KernelVariants.PUSH_EARLY_TRIGGER,
                BuilderChecks.kernelVariants(settings("early-trigger", "all", "clear-on-read")));
        assertEquals(KernelVariants.ALL, BuilderChecks.kernelVariants(settings(null, "all", "clear-on-read")));
        assertEquals(0, BuilderChecks.kernelVariants(settings(null, null, "clear-on-read")),
                "the variants are not public API: no environment variable turns them on");
    }

    @Test
    void anUnknownNameFailsTheBuildNamingItsSource() {
        ConfigurationException e = assertThrows(ConfigurationException.class,
                () -> BuilderChecks.validate(settings(null, "fast", null)));
        assertTrue(e.getMessage().contains("system property " + BuilderChecks.KERNEL_VARIANTS_PROPERTY), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> BuilderChecks.validate(settings("fast", null, null)));
    }

    @Test
    void theEarlyTriggerIsDroppedWhenSiblingGroupsShareTheGpus() {
        assertEquals(KernelVariants.ALL, CustomKernelPath.kernelVariantsFor(KernelVariants.ALL, 1));
        assertEquals(KernelVariants.ALL & ~KernelVariants.PUSH_EARLY_TRIGGER,
                CustomKernelPath.kernelVariantsFor(KernelVariants.ALL, 2));
    }

    @Test
    void aChildGetsTheResolvedVariants() {
        Settings snap = ChildSettings.snapshot(settings(null, "two-stage-push", null), 0, 1);
        assertEquals(KernelVariants.TWO_STAGE_PUSH, BuilderChecks.kernelVariants(snap));
    }
}
