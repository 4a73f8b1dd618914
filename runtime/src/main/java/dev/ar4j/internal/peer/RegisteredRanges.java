package dev.ar4j.internal.peer;

import java.util.Arrays;

/**
 * The device address ranges registered with a communicator, for the per-call question
 * "does this input lie in a registered buffer?". Sorted, non-overlapping; lookups are a binary
 * search over two primitive arrays and allocate nothing. Registration (rare) copies the arrays.
 *
 * <p>Thread-safe: the two arrays live in one immutable table published through a volatile field,
 * so a lookup always sees a consistent table (before or after a concurrent registration, never a
 * mix of the two, which answered "not registered" for a registered buffer). Changes are
 * serialised.
 */
public final class RegisteredRanges {

    private record Table(long[] starts, long[] ends, Object[] owners) {
    }

    private volatile Table table = new Table(new long[0], new long[0], new Object[0]);

    /** Adds [start, start + bytes); rejects an overlap with a registered range. */
    public void add(long start, long bytes) {
        add(start, bytes, null);
    }

    /**
     * Adds [start, start + bytes) with an owner object (for example the buffer it belongs to,
     * returned by {@link #ownerOf}); rejects an overlap with a registered range.
     */
    public synchronized void add(long start, long bytes, Object owner) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("a registered buffer needs a positive size, got " + bytes);
        }
        long end = start + bytes;
        if (end < start) {
            throw new IllegalArgumentException(String.format("buffer [0x%x, +%d) wraps the address space", start, bytes));
        }
        Table t = table;
        int at = insertionPoint(t.starts, start);
        if ((at > 0 && t.ends[at - 1] > start) || (at < t.starts.length && t.starts[at] < end)) {
            throw new IllegalArgumentException(String.format(
                    "buffer [0x%x, 0x%x) overlaps a buffer registered before; register each buffer once", start, end));
        }
        int n = t.starts.length;
        long[] s = new long[n + 1];
        long[] e = new long[n + 1];
        Object[] o = new Object[n + 1];
        System.arraycopy(t.starts, 0, s, 0, at);
        System.arraycopy(t.ends, 0, e, 0, at);
        System.arraycopy(t.owners, 0, o, 0, at);
        s[at] = start;
        e[at] = end;
        o[at] = owner;
        System.arraycopy(t.starts, at, s, at + 1, n - at);
        System.arraycopy(t.ends, at, e, at + 1, n - at);
        System.arraycopy(t.owners, at, o, at + 1, n - at);
        table = new Table(s, e, o);
    }

    /**
     * Removes the range that starts at {@code start} and has {@code bytes} bytes.
     *
     * @return whether it was registered
     */
    public synchronized boolean remove(long start, long bytes) {
        Table t = table;
        int i = Arrays.binarySearch(t.starts, start);
        if (i < 0 || t.ends[i] != start + bytes) {
            return false;
        }
        int n = t.starts.length;
        long[] s = new long[n - 1];
        long[] e = new long[n - 1];
        Object[] o = new Object[n - 1];
        System.arraycopy(t.starts, 0, s, 0, i);
        System.arraycopy(t.ends, 0, e, 0, i);
        System.arraycopy(t.owners, 0, o, 0, i);
        System.arraycopy(t.starts, i + 1, s, i, n - i - 1);
        System.arraycopy(t.ends, i + 1, e, i, n - i - 1);
        System.arraycopy(t.owners, i + 1, o, i, n - i - 1);
        table = new Table(s, e, o);
        return true;
    }

    /** Whether [address, address + bytes) lies inside one registered range. */
    public boolean contains(long address, long bytes) {
        return find(address, bytes) >= 0;
    }

    /** Whether [address, address + bytes) overlaps any registered range. */
    public boolean overlaps(long address, long bytes) {
        Table t = table;
        long end = address + bytes;
        int at = insertionPoint(t.starts, address + 1) - 1;  // last range starting at or before address
        if (at >= 0 && t.ends[at] > address) {
            return true;
        }
        return at + 1 < t.starts.length && t.starts[at + 1] < end;
    }

    /** Marks "not registered" in {@link #ownerOf}. */
    public static final Object NOT_REGISTERED = new Object();

    /**
     * The owner given to {@link #add(long, long, Object)} for the range holding
     * [address, address + bytes) (null if none was given), or {@link #NOT_REGISTERED}.
     */
    public Object ownerOf(long address, long bytes) {
        Table t = table;
        int at = find(t, address, bytes);
        return at < 0 ? NOT_REGISTERED : t.owners[at];
    }

    /** The start of the registered range holding [address, address + bytes), or -1. */
    public long rangeStart(long address, long bytes) {
        Table t = table;
        int at = find(t, address, bytes);
        return at < 0 ? -1 : t.starts[at];
    }

    private int find(long address, long bytes) {
        return find(table, address, bytes);
    }

    private static int find(Table t, long address, long bytes) {
        int at = insertionPoint(t.starts, address + 1) - 1;  // last range starting at or before address
        return at >= 0 && address >= t.starts[at] && address + bytes <= t.ends[at] ? at : -1;
    }

    public int size() {
        return table.starts.length;
    }

    private static int insertionPoint(long[] starts, long start) {
        int i = Arrays.binarySearch(starts, start);
        return i >= 0 ? i : -i - 1;
    }
}
