package dev.ar4j.examples.llama.text;

import java.util.Arrays;

/** A growable list of ints. */
final class IntList {
    private int[] a;
    private int size;

    IntList(int capacity) {
        a = new int[Math.max(4, capacity)];
    }

    void add(int v) {
        if (size == a.length) {
            a = Arrays.copyOf(a, size * 2);
        }
        a[size++] = v;
    }

    void addAll(int[] values) {
        if (size + values.length > a.length) {
            a = Arrays.copyOf(a, Math.max(size * 2, size + values.length));
        }
        System.arraycopy(values, 0, a, size, values.length);
        size += values.length;
    }

    int size() {
        return size;
    }

    int[] toArray() {
        return Arrays.copyOf(a, size);
    }
}
