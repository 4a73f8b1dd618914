package dev.ar4j.group;

import java.util.Arrays;

/**
 * The device address ranges registered with a communicator, for the per-call question
 * "does this input lie in a registered buffer?". Sorted, non-overlapping; lookups are a binary
 * search over two primitive arrays and allocate nothing. Registration (rare) copies the arrays.
 *
 * <p>Not thread-safe for registration; lookups may race with nothing because a communicator is
 * used by one thread at a time.
 */
public final class RegisteredRanges {

    private long[] starts = new long[0];
    private long[] ends = new long[0];

    /** Adds [start, start + bytes); rejects an overlap with a registered range. */
    public void add(long start, long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("a registered buffer needs a positive size, got " + bytes);
        }
        long end = start + bytes;
        int at = insertionPoint(start);
        if ((at > 0 && ends[at - 1] > start) || (at < starts.length && starts[at] < end)) {
            throw new IllegalArgumentException(String.format(
                    "buffer [0x%x, 0x%x) overlaps a buffer registered before; register each buffer once", start, end));
        }
        long[] s = new long[starts.length + 1];
        long[] e = new long[ends.length + 1];
        System.arraycopy(starts, 0, s, 0, at);
        System.arraycopy(ends, 0, e, 0, at);
        s[at] = start;
        e[at] = end;
        System.arraycopy(starts, at, s, at + 1, starts.length - at);
        System.arraycopy(ends, at, e, at + 1, ends.length - at);
        starts = s;
        ends = e;
    }

    /** Whether [address, address + bytes) lies inside one registered range. */
    public boolean contains(long address, long bytes) {
        int at = insertionPoint(address + 1) - 1;  // last range starting at or before address
        return at >= 0 && address >= starts[at] && address + bytes <= ends[at];
    }

    public int size() {
        return starts.length;
    }

    private int insertionPoint(long start) {
        int i = Arrays.binarySearch(starts, start);
        return i >= 0 ? i : -i - 1;
    }
}
