package dev.ar4j.internal.peer;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class RegisteredRangesTest {

    @Test
    void containsOnlyWholeRangesInsideOneRegistration() {
        RegisteredRanges r = new RegisteredRanges();
        r.add(0x2000, 0x1000);
        r.add(0x1000, 0x100);
        r.add(0x8000, 0x10);
        assertEquals(3, r.size());
        assertTrue(r.contains(0x2000, 0x1000));
        assertTrue(r.contains(0x2ff0, 0x10));
        assertFalse(r.contains(0x2ff0, 0x11), "runs past the end");
        assertFalse(r.contains(0x1ff0, 0x20), "starts before the registration");
        assertTrue(r.contains(0x1000, 1));
        assertFalse(r.contains(0x1100, 1), "just past the first range");
        assertFalse(r.contains(0x0, 0x10));
        assertTrue(r.contains(0x8000, 0x10));
        assertFalse(r.contains(0x9000, 0x10));
    }

    @Test
    void overlapsAndEmptyRangesAreRejected() {
        RegisteredRanges r = new RegisteredRanges();
        r.add(0x2000, 0x1000);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> r.add(0x2800, 0x1000));
        assertTrue(e.getMessage().contains("overlaps"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> r.add(0x1800, 0x1000));
        assertThrows(IllegalArgumentException.class, () -> r.add(0x4000, 0));
        r.add(0x3000, 0x10);  // adjacent is fine
        assertEquals(2, r.size());
    }
}
