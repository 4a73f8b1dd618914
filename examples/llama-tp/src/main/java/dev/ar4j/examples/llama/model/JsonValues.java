package dev.ar4j.examples.llama.model;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.List;
import java.util.Map;

/**
 * Typed reads of values from a parsed JSON object ({@code Map}s, {@code List}s, numbers, strings,
 * booleans, as jackson-jr returns them), each failure a {@link ModelFileException} naming the file
 * and the key.
 */
public final class JsonValues {

    private JsonValues() {
    }

    /**
     * A whole number that fits a {@code long}.
     *
     * @param value the parsed value
     * @param where the file and key, for the message
     * @return the number
     * @throws ModelFileException if the value is not a whole number or does not fit a long
     */
    public static long wholeNumber(Object value, String where) {
        if (value instanceof Integer || value instanceof Long || value instanceof Short || value instanceof Byte) {
            return ((Number) value).longValue();
        }
        if (value instanceof BigInteger big) {
            if (big.bitLength() < 64) {
                return big.longValue();
            }
            throw new ModelFileException(where + ": " + big + " does not fit a 64-bit integer");
        }
        if (value instanceof Double || value instanceof Float || value instanceof BigDecimal) {
            BigDecimal d = new BigDecimal(value.toString());
            try {
                return d.longValueExact();
            } catch (ArithmeticException notWhole) {
                throw new ModelFileException(where + ": " + value + " is not a whole number that fits 64 bits");
            }
        }
        throw new ModelFileException(where + ": expected a whole number, found " + describe(value));
    }

    /**
     * A whole number that fits an {@code int}.
     *
     * @param value the parsed value
     * @param where the file and key, for the message
     * @return the number
     * @throws ModelFileException if the value is not a whole number or does not fit an int
     */
    public static int intNumber(Object value, String where) {
        long v = wholeNumber(value, where);
        if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
            throw new ModelFileException(where + ": " + v + " does not fit a 32-bit integer");
        }
        return (int) v;
    }

    /**
     * A finite number.
     *
     * @param value the parsed value
     * @param where the file and key, for the message
     * @return the number as a double
     * @throws ModelFileException if the value is not a finite number
     */
    public static double realNumber(Object value, String where) {
        if (value instanceof Number n) {
            double d = n.doubleValue();
            if (Double.isFinite(d)) {
                return d;
            }
        }
        throw new ModelFileException(where + ": expected a finite number, found " + describe(value));
    }

    /**
     * A string.
     *
     * @param value the parsed value
     * @param where the file and key, for the message
     * @return the string
     * @throws ModelFileException if the value is not a string
     */
    public static String string(Object value, String where) {
        if (value instanceof String s) {
            return s;
        }
        throw new ModelFileException(where + ": expected a string, found " + describe(value));
    }

    /**
     * A boolean.
     *
     * @param value the parsed value
     * @param where the file and key, for the message
     * @return the boolean
     * @throws ModelFileException if the value is not a boolean
     */
    public static boolean bool(Object value, String where) {
        if (value instanceof Boolean b) {
            return b;
        }
        throw new ModelFileException(where + ": expected true or false, found " + describe(value));
    }

    /**
     * An object.
     *
     * @param value the parsed value
     * @param where the file and key, for the message
     * @return the object's members
     * @throws ModelFileException if the value is not an object
     */
    @SuppressWarnings("unchecked")
    public static Map<String, Object> object(Object value, String where) {
        if (value instanceof Map<?, ?> m) {
            return (Map<String, Object>) m;
        }
        throw new ModelFileException(where + ": expected an object, found " + describe(value));
    }

    /**
     * An array.
     *
     * @param value the parsed value
     * @param where the file and key, for the message
     * @return the array's elements
     * @throws ModelFileException if the value is not an array
     */
    public static List<?> array(Object value, String where) {
        if (value instanceof List<?> l) {
            return l;
        }
        throw new ModelFileException(where + ": expected an array, found " + describe(value));
    }

    /**
     * How a parsed value reads in a message: its JSON kind and, for scalars, the value.
     *
     * @param value the parsed value, may be {@code null}
     * @return e.g. {@code null}, {@code the string "x"}, {@code an array}
     */
    public static String describe(Object value) {
        if (value == null) {
            return "null";
        }
        if (value instanceof String s) {
            return "the string \"" + (s.length() > 40 ? s.substring(0, 40) + "..." : s) + "\"";
        }
        if (value instanceof Map<?, ?>) {
            return "an object";
        }
        if (value instanceof List<?>) {
            return "an array";
        }
        return value.getClass().getSimpleName().toLowerCase(java.util.Locale.ROOT) + " " + value;
    }
}
