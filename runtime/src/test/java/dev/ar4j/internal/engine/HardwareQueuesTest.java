package dev.ar4j.internal.engine;

import dev.ar4j.ConfigurationException;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Ranks of one process sharing a GPU against CUDA's hardware queues: a local group whose ranks on one
 * GPU need more streams than CUDA_DEVICE_MAX_CONNECTIONS gives queues is refused, naming the GPU, the
 * count, the setting and the remedy; groups that fit, and ranks on GPUs of their own, are not.
 */
class HardwareQueuesTest {

    @Test
    void theVariableIsReadAsCudaReadsIt() {
        assertEquals(8, HardwareQueues.queues(null));
        assertEquals(8, HardwareQueues.queues(" "));
        assertEquals(8, HardwareQueues.queues("many"));
        assertEquals(32, HardwareQueues.queues("32"));
        assertEquals(32, HardwareQueues.queues("64"));
        assertEquals(1, HardwareQueues.queues("0"));
        assertEquals(16, HardwareQueues.queues(" 16 "));
    }

    @Test
    void eightRanksOnOneGpuUnderTheDefaultAreRefused() {
        ConfigurationException e = assertThrows(ConfigurationException.class,
                () -> HardwareQueues.checkLocalGroup(new int[] {0, 0, 0, 0, 0, 0, 0, 0}, null));
        String m = e.getMessage();
        assertTrue(m.contains("8 ranks of this process share GPU 0") && m.contains("16 CUDA streams")
                && m.contains("8 hardware queues") && m.contains("CUDA_DEVICE_MAX_CONNECTIONS=unset, 8 by default")
                && m.contains("CUDA_DEVICE_MAX_CONNECTIONS=32") && m.contains("PeerTimeoutException"), m);
        String small = assertThrows(ConfigurationException.class,
                () -> HardwareQueues.checkLocalGroup(new int[] {1, 1, 1}, "4")).getMessage();
        assertTrue(small.contains("3 ranks of this process share GPU 1") && small.contains("6 CUDA streams over 4")
                && small.contains("(CUDA_DEVICE_MAX_CONNECTIONS=4)"), small);
        String odd = assertThrows(ConfigurationException.class,
                () -> HardwareQueues.checkLocalGroup(new int[] {2, 2, 2, 2, 2}, "4x")).getMessage();
        assertTrue(odd.contains("CUDA_DEVICE_MAX_CONNECTIONS=4x, read as 8"), odd);
    }

    @Test
    void theBusiestGpuIsNamed() {
        String m = assertThrows(ConfigurationException.class,
                () -> HardwareQueues.checkLocalGroup(new int[] {0, 1, 1, 1, 1, 1, 0}, "8")).getMessage();
        assertTrue(m.contains("5 ranks of this process share GPU 1") && m.contains("10 CUDA streams"), m);
    }

    @Test
    void moreThanSixteenRanksOnOneGpuAreRefusedWhateverTheSetting() {
        int[] devices = new int[17];
        String m = assertThrows(ConfigurationException.class,
                () -> HardwareQueues.checkLocalGroup(devices, "32")).getMessage();
        assertTrue(m.contains("At most 16 ranks of one process can share a GPU"), m);
    }

    @Test
    void groupsThatFitTheQueuesAreAccepted() {
        assertDoesNotThrow(() -> HardwareQueues.checkLocalGroup(new int[] {0, 0, 0, 0}, null));
        assertDoesNotThrow(() -> HardwareQueues.checkLocalGroup(new int[] {0, 0, 0, 0, 0, 0, 0, 0}, "32"));
        assertDoesNotThrow(() -> HardwareQueues.checkLocalGroup(new int[] {0, 1, 2, 3, 4, 5, 6, 7}, null));
        assertDoesNotThrow(() -> HardwareQueues.checkLocalGroup(new int[16], "32"));
        assertNull(HardwareQueues.hazard(0, 1, "1"));
        assertNull(HardwareQueues.hazard(0, 3, "6"));
    }
}
