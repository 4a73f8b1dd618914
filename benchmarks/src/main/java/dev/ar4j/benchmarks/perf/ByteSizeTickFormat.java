package dev.ar4j.benchmarks.perf;

import java.text.FieldPosition;
import java.text.NumberFormat;
import java.text.ParsePosition;

/** Tick labels of the message-size axis: "1K", "64M", "512" ({@link ByteSizes#format}). */
final class ByteSizeTickFormat extends NumberFormat {
    private static final long serialVersionUID = 1L;

    @Override
    public StringBuffer format(double number, StringBuffer toAppendTo, FieldPosition pos) {
        long bytes = Math.round(number);
        return toAppendTo.append(bytes >= 1 ? ByteSizes.format(bytes) : "");
    }

    @Override
    public StringBuffer format(long number, StringBuffer toAppendTo, FieldPosition pos) {
        return format((double) number, toAppendTo, pos);
    }

    @Override
    public Number parse(String source, ParsePosition parsePosition) {
        throw new UnsupportedOperationException("size tick labels are not parsed");
    }
}
