package dev.ar4j.dispatch;

import java.util.Objects;

/**
 * Where a configuration value came from: the builder, a system property, an environment
 * variable, or the built-in default. {@link #describe()} (also {@code toString()}) says it in
 * words, for error messages and {@code explain()}.
 */
public sealed interface SettingSource {

    /**
     * One phrase: "builder", "system property ar4j.allreduce.algo", "default", ...
     *
     * @return the source in words, never blank
     */
    String describe();

    /** The value was set on {@link DispatchConfig.Builder}. */
    record BuilderValue() implements SettingSource {
        @Override
        public String describe() {
            return "builder";
        }

        @Override
        public String toString() {
            return describe();
        }
    }

    /**
     * The value came from the named system property.
     *
     * @param name the property's name
     */
    record SystemProperty(String name) implements SettingSource {
        /**
         * Creates the source, checking the name.
         *
         * @throws IllegalArgumentException if the name is blank
         * @throws NullPointerException if the name is {@code null}
         */
        public SystemProperty {
            requireName(name);
        }

        @Override
        public String describe() {
            return "system property " + name;
        }

        @Override
        public String toString() {
            return describe();
        }
    }

    /**
     * The value came from the named environment variable.
     *
     * @param name the variable's name
     */
    record EnvironmentVariable(String name) implements SettingSource {
        /**
         * Creates the source, checking the name.
         *
         * @throws IllegalArgumentException if the name is blank
         * @throws NullPointerException if the name is {@code null}
         */
        public EnvironmentVariable {
            requireName(name);
        }

        @Override
        public String describe() {
            return "environment variable " + name;
        }

        @Override
        public String toString() {
            return describe();
        }
    }

    /** Nothing was set; the built-in default applies. */
    record DefaultValue() implements SettingSource {
        @Override
        public String describe() {
            return "default";
        }

        @Override
        public String toString() {
            return describe();
        }
    }

    private static void requireName(String name) {
        Objects.requireNonNull(name, "name");
        if (name.isBlank()) {
            throw new IllegalArgumentException("a setting source needs a non-blank name");
        }
    }
}
