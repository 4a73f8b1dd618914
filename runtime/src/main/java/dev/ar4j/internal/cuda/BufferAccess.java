package dev.ar4j.internal.cuda;

import dev.ar4j.internal.platform.Lifetime;

import dev.ar4j.cuda.DeviceBuffer;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.invoke.VarHandle;
import java.util.OptionalLong;

/**
 * The engine's way into {@link DeviceBuffer}'s non-public parts, so that the buffer's public API
 * grows no member that only the engine names: a view that ends with an IPC mapping's lifetime, and
 * the base of the allocation a buffer lies in (for an IPC export). The handles are looked up once,
 * within this module; {@link DeviceBuffer} itself knows nothing of this class.
 */
public final class BufferAccess {
    private static final MethodHandle VIEW;
    private static final VarHandle ALLOCATION_BASE;
    private static final VarHandle ALLOCATION_BASE_KNOWN;

    static {
        try {
            MethodHandles.Lookup lookup = MethodHandles.privateLookupIn(DeviceBuffer.class, MethodHandles.lookup());
            VIEW = lookup.findStatic(DeviceBuffer.class, "view", MethodType.methodType(DeviceBuffer.class,
                    long.class, long.class, int.class, String.class, Lifetime.class));
            ALLOCATION_BASE = lookup.findVarHandle(DeviceBuffer.class, "allocationBase", long.class);
            ALLOCATION_BASE_KNOWN = lookup.findVarHandle(DeviceBuffer.class, "allocationBaseKnown", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private BufferAccess() {
    }

    /**
     * A borrowed view of {@code [address, address + byteSize)} that ends with {@code parent}.
     *
     * @param address the view's device address, not 0
     * @param byteSize its size in bytes, 0 or more
     * @param device the device the memory lives on
     * @param origin what the view is of, for messages ("IPC mapping")
     * @param parent the lifetime whose end ends the view
     * @return the view
     * @throws IllegalArgumentException if the range is invalid
     */
    public static DeviceBuffer view(long address, long byteSize, int device, String origin, Lifetime parent) {
        try {
            return (DeviceBuffer) VIEW.invokeExact(address, byteSize, device, origin, parent);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /**
     * The base of the CUDA allocation the buffer lies in, where ar4j allocated or adopted it.
     *
     * @param buffer the buffer
     * @return the allocation's base, or empty where the buffer is borrowed
     */
    public static OptionalLong allocationBase(DeviceBuffer buffer) {
        return (boolean) ALLOCATION_BASE_KNOWN.get(buffer) ? OptionalLong.of((long) ALLOCATION_BASE.get(buffer))
                : OptionalLong.empty();
    }
}
