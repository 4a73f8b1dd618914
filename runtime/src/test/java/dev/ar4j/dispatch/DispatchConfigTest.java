package dev.ar4j.dispatch;

import dev.ar4j.ConfigurationException;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Precedence of configuration sources, value parsing, and the error messages. */
class DispatchConfigTest {

    /** The policy sources from highest to lowest precedence, each with a distinct value. */
    private enum PolicySlot {
        BUILDER(Algorithm.TWO_STAGE, "builder"),
        PROPERTY(Algorithm.NCCL, "system property ar4j.allreduce.algo"),
        AR4J_ENV(Algorithm.ONE_STAGE, "environment variable AR4J_ALLREDUCE_ALGO"),
        SGLANG_ENV(Algorithm.TWO_STAGE, "environment variable SGLANG_CUSTOM_ALLREDUCE_ALGO"),
        VLLM_ENV(Algorithm.PUSH, "environment variable VLLM_CUSTOM_ALLREDUCE_ALGO");

        final Algorithm value;
        final String description;

        PolicySlot(Algorithm value, String description) {
            this.value = value;
            this.description = description;
        }
    }

    private static DispatchConfig.Builder isolated(Map<String, String> env, Properties props) {
        return DispatchConfig.builder().environment(env).systemProperties(props);
    }

    @Test
    void policyPrecedenceOverEverySubsetOfSources() {
        int slots = PolicySlot.values().length;
        for (int mask = 0; mask < 1 << slots; mask++) {
            Map<String, String> env = new HashMap<>();
            Properties props = new Properties();
            DispatchConfig.Builder builder = isolated(env, props);
            List<PolicySlot> set = new ArrayList<>();
            for (PolicySlot slot : PolicySlot.values()) {
                if ((mask & (1 << slot.ordinal())) == 0) {
                    continue;
                }
                set.add(slot);
                switch (slot) {
                    case BUILDER -> builder.algorithmPolicy(Algorithm.TWO_STAGE);
                    case PROPERTY -> props.setProperty("ar4j.allreduce.algo", "NCCL");
                    case AR4J_ENV -> env.put("AR4J_ALLREDUCE_ALGO", " 1stage ");
                    case SGLANG_ENV -> env.put("SGLANG_CUSTOM_ALLREDUCE_ALGO", "twoshot");
                    case VLLM_ENV -> env.put("VLLM_CUSTOM_ALLREDUCE_ALGO", "Lamport");
                }
            }
            DispatchConfig config = builder.build();
            if (set.isEmpty()) {
                assertEquals(Algorithm.AUTO, config.algorithmPolicy(), "nothing set");
                assertEquals("default", config.algorithmPolicySource().describe());
            } else {
                PolicySlot winner = set.getFirst(); // enum order is precedence order
                assertEquals(winner.value, config.algorithmPolicy(), "sources set: " + set);
                assertEquals(winner.description, config.algorithmPolicySource().describe(), "sources set: " + set);
            }
        }
    }

    @Test
    void pcieOverridePrecedenceOverEverySubsetOfSources() {
        for (int mask = 0; mask < 8; mask++) {
            Map<String, String> env = new HashMap<>();
            Properties props = new Properties();
            DispatchConfig.Builder builder = isolated(env, props);
            boolean builderSet = (mask & 1) != 0;
            boolean propertySet = (mask & 2) != 0;
            boolean envSet = (mask & 4) != 0;
            if (builderSet) {
                builder.forceCustomOnPcie(true);
            }
            if (propertySet) {
                props.setProperty("ar4j.force.custom.ar.pcie", "false");
            }
            if (envSet) {
                env.put("AR4J_FORCE_CUSTOM_AR_PCIE", "1");
            }
            DispatchConfig config = builder.build();
            String expectedSource = builderSet ? "builder"
                    : propertySet ? "system property ar4j.force.custom.ar.pcie"
                    : envSet ? "environment variable AR4J_FORCE_CUSTOM_AR_PCIE"
                    : "default";
            boolean expectedValue = builderSet || (!propertySet && envSet);
            assertEquals(expectedSource, config.forceCustomOnPcieSource().describe(), "mask " + mask);
            assertEquals(expectedValue, config.forceCustomOnPcie(), "mask " + mask);
        }
    }

    @Test
    void blankValuesCountAsUnset() {
        Properties props = new Properties();
        props.setProperty("ar4j.allreduce.algo", "  ");
        props.setProperty("ar4j.force.custom.ar.pcie", "");
        DispatchConfig config = isolated(Map.of("AR4J_ALLREDUCE_ALGO", "", "VLLM_CUSTOM_ALLREDUCE_ALGO", "nccl",
                "AR4J_FORCE_CUSTOM_AR_PCIE", "true"), props).build();
        assertEquals(Algorithm.NCCL, config.algorithmPolicy());
        assertEquals(new SettingSource.EnvironmentVariable("VLLM_CUSTOM_ALLREDUCE_ALGO"), config.algorithmPolicySource());
        assertTrue(config.forceCustomOnPcie());
        assertEquals(new SettingSource.EnvironmentVariable("AR4J_FORCE_CUSTOM_AR_PCIE"), config.forceCustomOnPcieSource());
    }

    @Test
    void badPolicyValueNamesItsSourceAndTheAcceptedValues() {
        Map<String, Map<String, String>> envs = Map.of(
                "environment variable AR4J_ALLREDUCE_ALGO", Map.of("AR4J_ALLREDUCE_ALGO", "fastest"),
                "environment variable SGLANG_CUSTOM_ALLREDUCE_ALGO", Map.of("SGLANG_CUSTOM_ALLREDUCE_ALGO", "fastest"),
                "environment variable VLLM_CUSTOM_ALLREDUCE_ALGO", Map.of("VLLM_CUSTOM_ALLREDUCE_ALGO", "fastest"));
        for (Map.Entry<String, Map<String, String>> entry : envs.entrySet()) {
            ConfigurationException e = assertThrows(ConfigurationException.class,
                    () -> isolated(entry.getValue(), new Properties()).build());
            assertTrue(e.getMessage().contains(entry.getKey()), e.getMessage());
            assertTrue(e.getMessage().contains("'fastest'"), e.getMessage());
            assertTrue(e.getMessage().contains("auto, 1stage, oneshot, force_1stage, 2stage, twoshot, force_2stage, push, lamport, nccl"),
                    e.getMessage());
        }
        Properties props = new Properties();
        props.setProperty("ar4j.allreduce.algo", "3stage");
        ConfigurationException e = assertThrows(ConfigurationException.class,
                () -> isolated(Map.of(), props).build());
        assertTrue(e.getMessage().contains("system property ar4j.allreduce.algo"), e.getMessage());
        assertTrue(e.getMessage().contains(Algorithm.ACCEPTED_VALUES), e.getMessage());

    }

    @Test
    void badValueShadowedByAHigherSourceIsIgnored() {
        DispatchConfig config = isolated(Map.of("AR4J_ALLREDUCE_ALGO", "2stage", "VLLM_CUSTOM_ALLREDUCE_ALGO", "bogus",
                "AR4J_FORCE_CUSTOM_AR_PCIE", "maybe"), new Properties())
                .forceCustomOnPcie(false)
                .build();
        assertEquals(Algorithm.TWO_STAGE, config.algorithmPolicy());
        assertFalse(config.forceCustomOnPcie());
    }

    @Test
    void pcieOverrideAcceptsOnlySwitchValues() {
        for (String yes : List.of("1", "true", "TRUE", " True ")) {
            assertTrue(isolated(Map.of("AR4J_FORCE_CUSTOM_AR_PCIE", yes), new Properties()).build().forceCustomOnPcie(), yes);
        }
        for (String no : List.of("0", "false", "FALSE")) {
            assertFalse(isolated(Map.of("AR4J_FORCE_CUSTOM_AR_PCIE", no), new Properties()).build().forceCustomOnPcie(), no);
        }
        for (String bad : List.of("yes", "2", "on", "enabled")) {
            ConfigurationException e = assertThrows(ConfigurationException.class,
                    () -> isolated(Map.of("AR4J_FORCE_CUSTOM_AR_PCIE", bad), new Properties()).build());
            assertTrue(e.getMessage().contains("environment variable AR4J_FORCE_CUSTOM_AR_PCIE"), e.getMessage());
            assertTrue(e.getMessage().contains("'" + bad + "'"), e.getMessage());
            assertTrue(e.getMessage().contains("1, 0, true, false"), e.getMessage());
        }
        Properties props = new Properties();
        props.setProperty("ar4j.force.custom.ar.pcie", "nope");
        ConfigurationException e = assertThrows(ConfigurationException.class,
                () -> isolated(Map.of(), props).build());
        assertTrue(e.getMessage().contains("system property ar4j.force.custom.ar.pcie"), e.getMessage());
    }

    @Test
    void defaultsAndDescription() {
        DispatchConfig defaults = DispatchConfig.defaults();
        assertEquals(Algorithm.AUTO, defaults.algorithmPolicy());
        assertFalse(defaults.forceCustomOnPcie());
        assertEquals(defaults, isolated(Map.of(), new Properties()).build());
        assertEquals("algorithm policy auto (from default), PCIe gate in force (AR4J_FORCE_CUSTOM_AR_PCIE=0 from default)",
                defaults.describe());
        DispatchConfig push = isolated(Map.of("AR4J_ALLREDUCE_ALGO", "lamport"), new Properties()).build();
        assertEquals(Algorithm.PUSH, push.algorithmPolicy());
        assertEquals("algorithm policy push (from environment variable AR4J_ALLREDUCE_ALGO), PCIe gate in force"
                + " (AR4J_FORCE_CUSTOM_AR_PCIE=0 from default)", push.describe());
        assertEquals(Algorithm.ONE_STAGE,
                isolated(Map.of("SGLANG_CUSTOM_ALLREDUCE_ALGO", "oneshot"), new Properties()).build().algorithmPolicy());
        DispatchConfig lifted = isolated(Map.of(), new Properties()).algorithmPolicy(Algorithm.parse("TwoShot", "test")).forceCustomOnPcie(true).build();
        assertEquals("algorithm policy 2stage (from builder), PCIe gate lifted (AR4J_FORCE_CUSTOM_AR_PCIE=1 from builder)",
                lifted.describe());
    }
}
