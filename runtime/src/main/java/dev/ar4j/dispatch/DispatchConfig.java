package dev.ar4j.dispatch;

import dev.ar4j.ConfigurationException;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;

/**
 * The dispatcher's user-facing configuration, resolved once, with the source each value came
 * from.
 *
 * <p>Precedence, first set wins:
 * <ul>
 *   <li>algorithm policy: builder &gt; system property {@value #ALGORITHM_PROPERTY} &gt;
 *       environment variable {@value #ALGORITHM_ENV} &gt; {@value #SGLANG_ALGORITHM_ENV} &gt;
 *       {@value #VLLM_ALGORITHM_ENV} &gt; {@link Algorithm#AUTO};</li>
 *   <li>PCIe gate override: builder &gt; system property {@value #FORCE_PCIE_PROPERTY} &gt;
 *       environment variable {@value #FORCE_PCIE_ENV} &gt; {@code false}.</li>
 * </ul>
 * A system property or environment variable whose value is empty or blank counts as not set.
 * Only the winning value is parsed; a bad value there fails {@link Builder#build()} with an
 * {@link IllegalArgumentException} that names the source and the accepted values. Values shadowed
 * by a higher-precedence source are ignored.
 *
 * @param algorithmPolicy         the policy in force
 * @param algorithmPolicySource   where it came from
 * @param forceCustomOnPcie       whether the PCIe gate is lifted (custom kernels allowed on more
 *                                than two GPUs without NVLink between every pair)
 * @param forceCustomOnPcieSource where that came from
 */
public record DispatchConfig(Algorithm algorithmPolicy, SettingSource algorithmPolicySource,
                             boolean forceCustomOnPcie, SettingSource forceCustomOnPcieSource) {

    /** System property holding the algorithm policy. */
    public static final String ALGORITHM_PROPERTY = "ar4j.allreduce.algo";
    /** Environment variable holding the algorithm policy. */
    public static final String ALGORITHM_ENV = "AR4J_ALLREDUCE_ALGO";
    /** SGLang's environment variable for the algorithm policy, honoured after ar4j's own. */
    public static final String SGLANG_ALGORITHM_ENV = "SGLANG_CUSTOM_ALLREDUCE_ALGO";
    /** vLLM's environment variable for the algorithm policy, honoured last. */
    public static final String VLLM_ALGORITHM_ENV = "VLLM_CUSTOM_ALLREDUCE_ALGO";
    /** System property lifting the PCIe gate ({@code true/false/1/0}). */
    public static final String FORCE_PCIE_PROPERTY = "ar4j.force.custom.ar.pcie";
    /** Environment variable lifting the PCIe gate ({@code 1/0/true/false}). */
    public static final String FORCE_PCIE_ENV = "AR4J_FORCE_CUSTOM_AR_PCIE";
    /** The values accepted for the PCIe gate override. */
    public static final String ACCEPTED_BOOLEAN_VALUES = "1, 0, true, false";

    /** Validates that no component is null. */
    public DispatchConfig {
        Objects.requireNonNull(algorithmPolicy, "algorithmPolicy");
        Objects.requireNonNull(algorithmPolicySource, "algorithmPolicySource");
        if (!algorithmPolicy.isPolicy()) {
            throw new IllegalArgumentException(algorithmPolicy + " is not an algorithm policy (the dispatcher of a "
                    + "world size of 1 decides it itself); accepted: " + Algorithm.ACCEPTED_VALUES);
        }
        Objects.requireNonNull(forceCustomOnPcieSource, "forceCustomOnPcieSource");
    }

    /**
     * The built-in defaults (AUTO, gate in force), ignoring the environment and properties.
     *
     * @return the defaults, each from {@link SettingSource.DefaultValue}
     */
    public static DispatchConfig defaults() {
        return new DispatchConfig(Algorithm.AUTO, new SettingSource.DefaultValue(),
                false, new SettingSource.DefaultValue());
    }

    /**
     * Resolves from this process's system properties and environment, with no builder values.
     *
     * @return the resolved configuration
     * @throws ConfigurationException if a winning property or environment value is not accepted
     */
    public static DispatchConfig fromSystem() {
        return builder().build();
    }

    /**
     * A builder that reads this process's environment and system properties unless told otherwise.
     *
     * @return a new builder with no values set
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * One line naming each value and its source, for {@code explain()} and logs.
     *
     * @return the policy and PCIe gate with their sources
     */
    public String describe() {
        return "algorithm policy " + algorithmPolicy.configName() + " (from " + algorithmPolicySource.describe()
                + "), PCIe gate " + (forceCustomOnPcie ? "lifted" : "in force") + " (" + FORCE_PCIE_ENV + "="
                + (forceCustomOnPcie ? "1" : "0") + " from " + forceCustomOnPcieSource.describe() + ")";
    }

    /**
     * Collects builder values and the environment/properties to read, then resolves them.
     * Not thread-safe; build once.
     */
    public static final class Builder {
        private Algorithm algorithmPolicy;
        private Boolean forceCustomOnPcie;
        private Map<String, String> environment;
        private Properties systemProperties;

        private Builder() {
        }

        /**
         * Sets the policy, overriding every other source; {@code null} clears it.
         *
         * @param policy the policy, or {@code null} to let properties and the environment decide
         * @return this builder
         */
        public Builder algorithmPolicy(Algorithm policy) {
            this.algorithmPolicy = policy;
            return this;
        }

        /**
         * Lifts ({@code true}) or keeps ({@code false}) the PCIe gate, overriding every other source.
         *
         * @param force {@code true} to lift the gate, {@code false} to keep it
         * @return this builder
         */
        public Builder forceCustomOnPcie(boolean force) {
            this.forceCustomOnPcie = force;
            return this;
        }

        /**
         * The environment to read instead of {@link System#getenv()} (tests inject one).
         *
         * @param environment the variables to read; kept by reference
         * @return this builder
         * @throws NullPointerException if {@code environment} is {@code null}
         */
        public Builder environment(Map<String, String> environment) {
            this.environment = Objects.requireNonNull(environment, "environment");
            return this;
        }

        /**
         * The properties to read instead of {@link System#getProperties()} (tests inject them).
         *
         * @param properties the properties to read; kept by reference
         * @return this builder
         * @throws NullPointerException if {@code properties} is {@code null}
         */
        public Builder systemProperties(Properties properties) {
            this.systemProperties = Objects.requireNonNull(properties, "properties");
            return this;
        }

        /**
         * Resolves every value by precedence.
         *
         * @return the resolved configuration
         * @throws ConfigurationException if the winning value of a setting is not accepted; the
         *                                  message names its source and the accepted values
         */
        public DispatchConfig build() {
            Map<String, String> env = environment != null ? environment : System.getenv();
            Properties props = systemProperties != null ? systemProperties : System.getProperties();

            Algorithm policy;
            SettingSource policySource;
            if (algorithmPolicy != null) {
                policy = algorithmPolicy;
                policySource = new SettingSource.BuilderValue();
            } else {
                RawSetting raw = firstSet(env, props, List.of(
                        new SettingSource.SystemProperty(ALGORITHM_PROPERTY),
                        new SettingSource.EnvironmentVariable(ALGORITHM_ENV),
                        new SettingSource.EnvironmentVariable(SGLANG_ALGORITHM_ENV),
                        new SettingSource.EnvironmentVariable(VLLM_ALGORITHM_ENV)));
                if (raw == null) {
                    policy = Algorithm.AUTO;
                    policySource = new SettingSource.DefaultValue();
                } else {
                    policy = fromSetting(() -> Algorithm.parse(raw.value(), raw.source().describe()));
                    policySource = raw.source();
                }
            }

            boolean force;
            SettingSource forceSource;
            if (forceCustomOnPcie != null) {
                force = forceCustomOnPcie;
                forceSource = new SettingSource.BuilderValue();
            } else {
                RawSetting raw = firstSet(env, props, List.of(
                        new SettingSource.SystemProperty(FORCE_PCIE_PROPERTY),
                        new SettingSource.EnvironmentVariable(FORCE_PCIE_ENV)));
                if (raw == null) {
                    force = false;
                    forceSource = new SettingSource.DefaultValue();
                } else {
                    force = fromSetting(() -> parseBoolean(raw.value(), raw.source().describe()));
                    forceSource = raw.source();
                }
            }
            return new DispatchConfig(policy, policySource, force, forceSource);
        }
    }

    /**
     * Parses the PCIe gate override: {@code 1 | 0 | true | false}, case-insensitive, trimmed.
     *
     * @param source where the value came from, for the error message
     * @param value the text to parse
     * @return {@code true} for {@code 1} or {@code true}, {@code false} for {@code 0} or {@code false}
     * @throws IllegalArgumentException naming the source, the value and the accepted values
     * @throws NullPointerException if {@code value} or {@code source} is {@code null}
     */
    public static boolean parseBoolean(String value, String source) {
        Objects.requireNonNull(value, "value");
        Objects.requireNonNull(source, "source");
        return switch (value.trim().toLowerCase(Locale.ROOT)) {
            case "1", "true" -> true;
            case "0", "false" -> false;
            default -> throw new IllegalArgumentException(source + " has the value '" + value
                    + "', which is not a switch value; accepted (case-insensitive): " + ACCEPTED_BOOLEAN_VALUES);
        };
    }

    private record RawSetting(String value, SettingSource source) {
    }

    /** A value read from a property or the environment: refusing it is a configuration error, not an argument's. */
    private static <T> T fromSetting(java.util.function.Supplier<T> parse) {
        try {
            return parse.get();
        } catch (IllegalArgumentException e) {
            throw new ConfigurationException(e.getMessage(), e);
        }
    }

    private static RawSetting firstSet(Map<String, String> env, Properties props, List<SettingSource> order) {
        for (SettingSource source : order) {
            String value = switch (source) {
                case SettingSource.SystemProperty p -> props.getProperty(p.name());
                case SettingSource.EnvironmentVariable e -> env.get(e.name());
                case SettingSource.BuilderValue b -> throw new IllegalStateException("builder is not a lookup source");
                case SettingSource.DefaultValue d -> throw new IllegalStateException("default is not a lookup source");
            };
            if (value != null && !value.isBlank()) {
                return new RawSetting(value, source);
            }
        }
        return null;
    }
}
