package dev.ar4j.cuda;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Value and lifecycle rules of device buffers that need no GPU: borrowed and adopted wrappers. */
class DeviceBufferTest {
    // An address no allocation ever had: if close() freed it, CUDA would fail loudly.
    private static final long FOREIGN = 0x7f00_dead_0000L;

    @Test
    void borrowedBufferDescribesTheMemoryItWraps() {
        try (DeviceBuffer buffer = DeviceBuffer.borrow(FOREIGN, 4096, 1)) {
            assertEquals(FOREIGN, buffer.address());
            assertEquals(FOREIGN, buffer.segment().address());
            assertEquals(0, buffer.segment().byteSize(), "device memory is an address, not a host view");
            assertEquals(4096, buffer.byteSize());
            assertEquals(1, buffer.device());
            assertFalse(buffer.isOwned());
            assertTrue(buffer.isOpen());
            assertEquals("DeviceBuffer[0x7f00dead0000, 4096 bytes, device 1, borrowed]", buffer.toString());
        }
        assertEquals(FOREIGN, DeviceBuffer.borrow(MemorySegment.ofAddress(FOREIGN), 1, 0).address());
    }

    @Test
    void borrowRejectsNullNegativeAndWrappingRanges() {
        assertThrows(IllegalArgumentException.class, () -> DeviceBuffer.borrow(0, 16, 0));
        assertThrows(IllegalArgumentException.class, () -> DeviceBuffer.borrow(FOREIGN, -1, 0));
        assertThrows(IllegalArgumentException.class, () -> DeviceBuffer.borrow(FOREIGN, 16, -1));
        assertThrows(IllegalArgumentException.class, () -> DeviceBuffer.borrow(-16L, 32, 0));
        assertDoesNotThrow(() -> DeviceBuffer.borrow(FOREIGN, 0, 0));
    }

    @Test
    void closingABorrowedBufferNeverFreesItAndIsIdempotent() {
        DeviceBuffer buffer = DeviceBuffer.borrow(FOREIGN, 4096, 0);
        buffer.close(); // would throw a CudaException if it called cudaFree on this address
        buffer.close();
        assertFalse(buffer.isOpen());
    }

    @Test
    void useAfterCloseThrowsIllegalState() {
        DeviceBuffer buffer = DeviceBuffer.borrow(FOREIGN, 4096, 0);
        buffer.close();
        IllegalStateException e = assertThrows(IllegalStateException.class, buffer::address);
        assertTrue(e.getMessage().contains("is closed"), e.getMessage());
        assertThrows(IllegalStateException.class, buffer::segment);
        assertThrows(IllegalStateException.class, () -> buffer.slice(0, 16));
        assertThrows(IllegalStateException.class, () -> buffer.copyFrom(MemorySegment.ofArray(new byte[16])));
        assertThrows(IllegalStateException.class, () -> buffer.copyTo(MemorySegment.ofArray(new byte[16])));
        assertThrows(IllegalStateException.class, () -> buffer.fill(0));
        assertEquals(4096, buffer.byteSize(), "size and device stay readable");
    }

    @Test
    void slicesAreBorrowedViewsWithBoundsChecks() {
        try (DeviceBuffer buffer = DeviceBuffer.borrow(FOREIGN, 4096, 2)) {
            DeviceBuffer slice = buffer.slice(1024, 2048);
            assertEquals(FOREIGN + 1024, slice.address());
            assertEquals(2048, slice.byteSize());
            assertEquals(2, slice.device());
            assertFalse(slice.isOwned());

            DeviceBuffer nested = slice.slice(16, 32);
            assertEquals(FOREIGN + 1040, nested.address());

            assertEquals(0, buffer.slice(4096, 0).byteSize(), "an empty slice at the end is allowed");
            assertEquals(4096, buffer.slice(0, 4096).byteSize());
            assertThrows(IndexOutOfBoundsException.class, () -> buffer.slice(-1, 16));
            assertThrows(IndexOutOfBoundsException.class, () -> buffer.slice(0, 4097));
            assertThrows(IndexOutOfBoundsException.class, () -> buffer.slice(4096, 1));
            assertThrows(IndexOutOfBoundsException.class, () -> buffer.slice(16, -1));
            assertThrows(IndexOutOfBoundsException.class, () -> buffer.slice(Long.MAX_VALUE, 2));
            assertThrows(IndexOutOfBoundsException.class, () -> slice.slice(2000, 100),
                    "a slice is bounded by its own range, not its parent's");
        }
    }

    @Test
    void closingTheParentEndsItsSlicesButNotTheOtherWayRound() {
        DeviceBuffer buffer = DeviceBuffer.borrow(FOREIGN, 4096, 0);
        DeviceBuffer slice = buffer.slice(0, 1024);
        DeviceBuffer nested = slice.slice(0, 16);

        nested.close();
        assertTrue(slice.isOpen());
        assertTrue(buffer.isOpen());

        buffer.close();
        assertFalse(slice.isOpen());
        IllegalStateException e = assertThrows(IllegalStateException.class, slice::address);
        assertTrue(e.getMessage().contains("the buffer or mapping it is a view of was closed"), e.getMessage());
    }

    @Test
    void adoptedMemoryIsReleasedExactlyOnce() {
        List<Long> released = new ArrayList<>();
        DeviceBuffer buffer = DeviceBuffer.adopt(FOREIGN, 4096, 0, released::add);
        assertTrue(buffer.isOwned());
        DeviceBuffer slice = buffer.slice(0, 1024);
        slice.close();
        assertEquals(List.of(), released, "closing a slice frees nothing");
        buffer.close();
        buffer.close();
        assertEquals(List.of(FOREIGN), released);
    }

    @Test
    void concurrentClosesReleaseExactlyOnce() throws Exception {
        List<Long> released = new CopyOnWriteArrayList<>();
        DeviceBuffer buffer = DeviceBuffer.adopt(FOREIGN, 4096, 0, released::add);
        int threads = 8;
        CountDownLatch start = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                futures.add(pool.submit(() -> {
                    start.await(10, TimeUnit.SECONDS);
                    buffer.close();
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> f : futures) {
                f.get(10, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals(List.of(FOREIGN), released);
    }

    @Test
    void adoptRequiresARelease() {
        assertThrows(NullPointerException.class, () -> DeviceBuffer.adopt(FOREIGN, 16, 0, null));
    }

    @Test
    void copiesCheckSizesAndHostMemoryKindBeforeCallingCuda() {
        try (DeviceBuffer buffer = DeviceBuffer.borrow(FOREIGN, 64, 0); Arena arena = Arena.ofConfined()) {
            IllegalArgumentException tooBig = assertThrows(IllegalArgumentException.class,
                    () -> buffer.copyFrom(MemorySegment.ofArray(new byte[65])));
            assertTrue(tooBig.getMessage().contains("65 bytes, more than this buffer's 64"), tooBig.getMessage());
            assertThrows(IllegalArgumentException.class, () -> buffer.copyTo(arena.allocate(65)));
            assertThrows(IllegalArgumentException.class, () -> buffer.copyFrom(DeviceBuffer.borrow(FOREIGN, 128, 0)));

            CudaStream stream = CudaStream.borrow(0, 0);
            IllegalArgumentException heap = assertThrows(IllegalArgumentException.class,
                    () -> buffer.copyFromAsync(MemorySegment.ofArray(new byte[16]), stream));
            assertTrue(heap.getMessage().contains("native (off-heap) host memory"), heap.getMessage());
            assertThrows(IllegalArgumentException.class, () -> buffer.copyToAsync(MemorySegment.ofArray(new byte[16]), stream));
            assertThrows(IllegalArgumentException.class,
                    () -> buffer.copyTo(MemorySegment.ofArray(new byte[16]).asReadOnly()));
            assertDoesNotThrow(() -> buffer.copyFrom(MemorySegment.ofArray(new byte[0])), "an empty copy does nothing");
        }
    }

    @Test
    void borrowedStreamsAreNeverDestroyed() {
        CudaStream stream = CudaStream.borrow(FOREIGN, 0);
        assertFalse(stream.isOwned());
        assertEquals(FOREIGN, stream.handle());
        stream.close(); // cudaStreamDestroy on this handle would fail
        stream.close();
        assertThrows(IllegalStateException.class, stream::handle);
    }
}
