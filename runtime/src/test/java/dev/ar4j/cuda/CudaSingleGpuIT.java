package dev.ar4j.cuda;

import dev.ar4j.internal.cuda.IpcBufferExport;
import dev.ar4j.internal.cuda.AllocationRange;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The CUDA facade on one GPU: memory, copies, pinned memory, streams, events, graphs. */
@Tag("gpu")
@Timeout(60)
class CudaSingleGpuIT {

    @BeforeEach
    void useDeviceZero() {
        GpuTestSupport.requireGpus(1);
        Cuda.setDevice(0);
    }

    private static MemorySegment pattern(Arena arena, long ints, int seed) {
        MemorySegment segment = arena.allocate(ValueLayout.JAVA_INT, ints);
        for (long i = 0; i < ints; i++) {
            segment.setAtIndex(ValueLayout.JAVA_INT, i, (int) (seed * 1_000_003L + i * 7));
        }
        return segment;
    }

    private static void assertSameBytes(MemorySegment expected, MemorySegment actual) {
        long mismatch = expected.mismatch(actual);
        assertEquals(-1, mismatch, "first differing byte at " + mismatch);
    }

    @Test
    void allocateCopyInCopyOutCompare() {
        long bytes = 1 << 20;
        try (Arena arena = Arena.ofConfined(); DeviceBuffer buffer = DeviceBuffer.allocate(bytes)) {
            assertTrue(buffer.isOwned());
            assertEquals(0, buffer.device());
            MemorySegment in = pattern(arena, bytes / 4, 1);
            buffer.copyFrom(in);
            MemorySegment out = arena.allocate(bytes);
            buffer.copyTo(out);
            assertSameBytes(in, out);

            byte[] heap = new byte[(int) bytes];
            buffer.copyTo(MemorySegment.ofArray(heap));
            assertSameBytes(in, MemorySegment.ofArray(heap));

            // A slice writes into the middle; the rest stays.
            MemorySegment patch = pattern(arena, 256, 9);
            buffer.slice(4096, 1024).copyFrom(patch);
            buffer.copyTo(out);
            assertSameBytes(patch, out.asSlice(4096, 1024));
            assertSameBytes(in.asSlice(0, 4096), out.asSlice(0, 4096));
            assertSameBytes(in.asSlice(5120), out.asSlice(5120));

            buffer.fill(0x5a);
            buffer.copyTo(out);
            for (long i = 0; i < bytes; i += 4093) {
                assertEquals((byte) 0x5a, out.get(ValueLayout.JAVA_BYTE, i));
            }

            try (DeviceBuffer copy = DeviceBuffer.allocate(bytes)) {
                buffer.copyFrom(in);
                copy.copyFrom(buffer);
                MemorySegment back = arena.allocate(bytes);
                copy.copyTo(back);
                assertSameBytes(in, back);
            }

            PointerAttributes attributes = Cuda.pointerAttributes(buffer.address());
            assertEquals(MemoryType.DEVICE, attributes.type());
            assertEquals(0, attributes.device());
        }
    }

    @Test
    void ownedBufferIsFreedOnceAndUnusableAfterwards() {
        DeviceBuffer buffer = DeviceBuffer.allocate(4096);
        DeviceBuffer slice = buffer.slice(0, 16);
        buffer.close();
        buffer.close(); // a second cudaFree of the same address would fail
        assertFalse(slice.isOpen());
        assertThrows(IllegalStateException.class, buffer::address);
        assertThrows(IllegalStateException.class, () -> slice.fill(0));
    }

    @Test
    void pinnedMemoryAndAsyncCopies() {
        long bytes = 4 << 20;
        try (Arena arena = Arena.ofConfined();
             PinnedHostBuffer source = PinnedHostBuffer.allocate(bytes);
             PinnedHostBuffer target = PinnedHostBuffer.allocate(bytes, true, false, false);
             DeviceBuffer device = DeviceBuffer.allocate(bytes);
             CudaStream stream = CudaStream.create()) {
            MemorySegment expected = pattern(arena, bytes / 4, 2);
            source.segment().copyFrom(expected);
            assertEquals(MemoryType.HOST, Cuda.pointerAttributes(source.address()).type());

            device.copyFromAsync(source.segment(), stream);
            device.copyToAsync(target.segment(), stream);
            stream.synchronize();
            assertTrue(stream.isIdle());
            assertSameBytes(expected, target.segment());

            device.fillAsync(0, stream);
            device.copyToAsync(target.segment(), stream);
            stream.synchronize();
            assertEquals(-1, target.segment().mismatch(arena.allocate(bytes)), "zero-filled");
        }
    }

    @Test
    void pinnedSegmentIsInaccessibleAfterClose() {
        PinnedHostBuffer pinned = PinnedHostBuffer.allocate(4096);
        MemorySegment segment = pinned.segment();
        segment.set(ValueLayout.JAVA_INT, 0, 42);
        pinned.close();
        pinned.close();
        assertThrows(IllegalStateException.class, () -> segment.get(ValueLayout.JAVA_INT, 0));
        assertThrows(IllegalStateException.class, pinned::segment);
    }

    @Test
    void streamAndEventTiming() {
        long bytes = 256L << 20;
        try (DeviceBuffer a = DeviceBuffer.allocate(bytes); DeviceBuffer b = DeviceBuffer.allocate(bytes);
             CudaStream stream = CudaStream.create(true, 0);
             CudaEvent start = CudaEvent.create(); CudaEvent end = CudaEvent.create()) {
            a.fill(1);
            start.record(stream);
            for (int i = 0; i < 4; i++) {
                b.copyFromAsync(a, stream);
            }
            end.record(stream);
            end.synchronize();
            assertTrue(end.isComplete());
            assertTrue(stream.isIdle());
            float millis = end.elapsedMillisSince(start);
            // The events measured the copies: a positive, finite time. How fast is a benchmark's
            // business, not this test's.
            assertTrue(millis > 0 && Float.isFinite(millis), "elapsed " + millis + " ms");

            try (CudaEvent untimed = CudaEvent.create(false, false)) {
                untimed.record(stream);
                untimed.synchronize();
                assertThrows(IllegalStateException.class, () -> untimed.elapsedMillisSince(start));
            }
        }
    }

    @Test
    void streamWaitsForAnEventOnAnotherStream() {
        long bytes = 64L << 20;
        try (Arena arena = Arena.ofConfined();
             DeviceBuffer a = DeviceBuffer.allocate(bytes); DeviceBuffer b = DeviceBuffer.allocate(bytes);
             CudaStream producer = CudaStream.create(); CudaStream consumer = CudaStream.create();
             CudaEvent ready = CudaEvent.create(false, false)) {
            a.fill(7);
            b.fill(0);
            a.fillAsync(3, producer);
            ready.record(producer);
            consumer.waitFor(ready);
            b.copyFromAsync(a, consumer);
            consumer.synchronize();
            MemorySegment out = arena.allocate(bytes);
            b.copyTo(out);
            assertEquals(3, out.get(ValueLayout.JAVA_BYTE, bytes - 1));
        }
    }

    @Test
    void captureAndReplayAGraphOfCopies() {
        long bytes = 1 << 20;
        try (Arena arena = Arena.ofConfined();
             DeviceBuffer a = DeviceBuffer.allocate(bytes); DeviceBuffer b = DeviceBuffer.allocate(bytes);
             DeviceBuffer c = DeviceBuffer.allocate(bytes); CudaStream stream = CudaStream.create()) {
            assertEquals(CaptureStatus.NONE, stream.captureStatus());
            long[] captureId = new long[1];
            try (CudaGraph graph = CudaGraph.capture(stream, CaptureMode.THREAD_LOCAL, () -> {
                assertEquals(CaptureStatus.ACTIVE, stream.captureStatus());
                captureId[0] = stream.captureInfo().id();
                b.copyFromAsync(a, stream);
                c.copyFromAsync(b, stream);
            }); CudaGraphExec exec = graph.instantiate()) {
                assertEquals(CaptureStatus.NONE, stream.captureStatus());
                assertTrue(captureId[0] != 0, "a capture has an id");
                MemorySegment out = arena.allocate(bytes);
                for (int replay = 0; replay < 3; replay++) {
                    MemorySegment input = pattern(arena, bytes / 4, 10 + replay);
                    a.copyFrom(input);
                    c.fill(0);
                    exec.launch(stream);
                    stream.synchronize();
                    c.copyTo(out);
                    assertSameBytes(input, out);
                }
            }
        }
    }

    @Test
    void failedCaptureWorkEndsTheCapture() {
        try (CudaStream stream = CudaStream.create()) {
            RuntimeException failure = new RuntimeException("work failed");
            RuntimeException thrown = assertThrows(RuntimeException.class,
                    () -> CudaGraph.capture(stream, CaptureMode.THREAD_LOCAL, () -> {
                        throw failure;
                    }));
            assertTrue(thrown == failure);
            assertEquals(CaptureStatus.NONE, stream.captureStatus(), "the stream is usable again");
        }
    }

    @Test
    void allocationRangeFindsTheBaseOfAnInteriorPointer() {
        try (DeviceBuffer buffer = DeviceBuffer.allocate(1 << 20)) {
            DeviceBuffer slice = buffer.slice(4096, 8192);
            AllocationRange range = AllocationRange.of(slice.address());
            assertEquals(buffer.address(), range.base());
            assertTrue(range.byteSize() >= 1 << 20, range.toString());
            assertEquals(4096, range.offsetOf(slice.address()));

            // An owned slice knows its allocation's base; a borrowed pointer's base comes from the driver.
            IpcBufferExport known = IpcBufferExport.of(slice);
            IpcBufferExport looked = IpcBufferExport.of(DeviceBuffer.borrow(slice.address(), 8192, 0));
            assertEquals(4096, known.offset());
            assertEquals(4096, looked.offset(), "the driver finds the base ar4j recorded");
            assertEquals(8192, looked.byteSize());
        }
    }

    @Test
    void deviceQueries() {
        int count = Cuda.deviceCount();
        assertTrue(count >= 1);
        assertEquals(0, Cuda.currentDevice());
        assertTrue(Cuda.deviceAttribute(DeviceAttribute.COMPUTE_CAPABILITY_MAJOR, 0) >= 7);
        assertTrue(Cuda.deviceAttribute(DeviceAttribute.MULTI_PROCESSOR_COUNT, 0) > 0);
        assertEquals(1, Cuda.deviceAttribute(DeviceAttribute.UNIFIED_ADDRESSING, 0));
        assertTrue(Cuda.pciBusId(0).matches("[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\\.[0-9]"), Cuda.pciBusId(0));
        assertTrue(Cuda.driverVersion() >= Cuda.runtimeVersion(), "the driver supports this runtime");
        if (count >= 2) {
            boolean peer = Cuda.canAccessPeer(0, 1);
            assertEquals(peer ? 1 : 0, Cuda.p2pAttribute(P2PAttribute.ACCESS_SUPPORTED, 0, 1));
            if (peer) {
                Cuda.enablePeerAccess(1);
                assertFalse(Cuda.enablePeerAccess(1), "enabling twice is reported, not an error");
                assertEquals(0, Cuda.takeLastError(), "and leaves no sticky error");
            }
        }
    }
}
