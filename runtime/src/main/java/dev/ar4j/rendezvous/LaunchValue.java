package dev.ar4j.rendezvous;

/**
 * A resolved launch value and where it came from, for messages and {@link LaunchEnvironment#explain()}.
 *
 * @param value the value
 * @param origin the variable or builder call it came from
 * @param <T> the value's type
 */
record LaunchValue<T>(T value, String origin) {
    @Override
    public String toString() {
        return value + " (from " + origin + ")";
    }
}
