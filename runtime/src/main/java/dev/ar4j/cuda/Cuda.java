package dev.ar4j.cuda;


import dev.ar4j.bindings.cudart.cudaPointerAttributes;
import dev.ar4j.bindings.cudart.cuda_runtime_api_h;
import dev.ar4j.internal.platform.NativeLibraries;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;

/**
 * The CUDA runtime: versions, devices, peer access and pointer queries. Every method loads
 * libcudart on first use ({@link NativeLibraries#cudart()}) and checks every return code through
 * {@link CudaChecks}.
 *
 * <p>Device discovery on a machine without a driver throws {@link CudaDriverMissingException}; with
 * a driver but no visible GPU, {@link CudaNoDeviceException}.
 */
public final class Cuda {
    private Cuda() {
    }

    static void ensureLoaded() {
        NativeLibraries.cudart();
    }

    /**
     * The CUDA runtime's version, {@code major * 1000 + minor * 10} (13000 for CUDA 13.0).
     *
     * @return the runtime's version, e.g. 13000 for CUDA 13.0
     * @throws CudaException if {@code cudaRuntimeGetVersion} fails
     */
    public static int runtimeVersion() {
        ensureLoaded();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
            CudaChecks.check(cuda_runtime_api_h.cudaRuntimeGetVersion(out), "cudaRuntimeGetVersion");
            return out.get(ValueLayout.JAVA_INT, 0);
        }
    }

    /**
     * The newest CUDA version the installed driver supports, in the same encoding as
     * {@link #runtimeVersion()}; 0 when no driver is installed.
     *
     * @return the driver's newest supported CUDA version, e.g. 13000, or 0 without a driver
     * @throws CudaException if {@code cudaDriverGetVersion} fails
     */
    public static int driverVersion() {
        ensureLoaded();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
            CudaChecks.check(cuda_runtime_api_h.cudaDriverGetVersion(out), "cudaDriverGetVersion");
            return out.get(ValueLayout.JAVA_INT, 0);
        }
    }

    /**
     * Formats a CUDA version number: 13000 as "13.0", 12080 as "12.8".
     *
     * @param version a version in the {@code major * 1000 + minor * 10} encoding, 0 or more
     * @return {@code "major.minor"}
     * @throws IllegalArgumentException if {@code version} is negative
     */
    public static String formatVersion(int version) {
        return CudaChecks.formatVersion(version);
    }

    /**
     * Number of visible CUDA devices.
     *
     * @return the number of devices the process sees (after {@code CUDA_VISIBLE_DEVICES}), at least 1
     * @throws CudaDriverMissingException when no NVIDIA driver is installed
     * @throws CudaNoDeviceException      when the driver sees no device
     */
    public static int deviceCount() {
        ensureLoaded();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
            CudaChecks.check(cuda_runtime_api_h.cudaGetDeviceCount(out), "cudaGetDeviceCount");
            int count = out.get(ValueLayout.JAVA_INT, 0);
            if (count == 0) {
                throw CudaChecks.exception(cuda_runtime_api_h.cudaErrorNoDevice(), "cudaGetDeviceCount (returned 0 devices)");
            }
            return count;
        }
    }

    /**
     * Makes {@code device} the calling thread's current device.
     *
     * @param device the device ordinal, 0 to {@link #deviceCount()} - 1
     * @throws CudaException if {@code cudaSetDevice} refuses the ordinal (e.g.
     *     {@code cudaErrorInvalidDevice})
     */
    public static void setDevice(int device) {
        ensureLoaded();
        int status = cuda_runtime_api_h.cudaSetDevice(device);
        if (status != 0) {
            throw CudaChecks.exception(status, "cudaSetDevice(" + device + ")");
        }
    }

    /**
     * The calling thread's current device.
     *
     * @return the ordinal of the calling thread's current device (0 unless set)
     * @throws CudaException if {@code cudaGetDevice} fails
     */
    public static int currentDevice() {
        ensureLoaded();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
            CudaChecks.check(cuda_runtime_api_h.cudaGetDevice(out), "cudaGetDevice");
            return out.get(ValueLayout.JAVA_INT, 0);
        }
    }

    /**
     * Waits until the current device has finished all work.
     *
     * @throws CudaException if {@code cudaDeviceSynchronize} fails, including an earlier asynchronous error
     *     of a kernel on the device
     */
    public static void deviceSynchronize() {
        ensureLoaded();
        CudaChecks.check(cuda_runtime_api_h.cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    }

    /**
     * Reads a device attribute.
     *
     * @param attribute the attribute to read
     * @param device the device ordinal, 0 to {@link #deviceCount()} - 1
     * @return the attribute's value
     * @throws NullPointerException if {@code attribute} is {@code null}
     * @throws CudaException if {@code cudaDeviceGetAttribute} fails (for example an invalid ordinal)
     */
    public static int deviceAttribute(DeviceAttribute attribute, int device) {
        return deviceAttribute(Objects.requireNonNull(attribute, "attribute").code(), device);
    }

    /**
     * Reads a device attribute by its {@code cudaDeviceAttr} code.
     *
     * @param attributeCode a {@code cudaDeviceAttr} value of the installed CUDA runtime
     * @param device the device ordinal, 0 to {@link #deviceCount()} - 1
     * @return the attribute's value
     * @throws CudaException if {@code cudaDeviceGetAttribute} fails (an unknown code or an invalid ordinal)
     */
    public static int deviceAttribute(int attributeCode, int device) {
        ensureLoaded();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
            int status = cuda_runtime_api_h.cudaDeviceGetAttribute(out, attributeCode, device);
            if (status != 0) {
                throw CudaChecks.exception(status, "cudaDeviceGetAttribute(attr " + attributeCode + ", device " + device + ")");
            }
            return out.get(ValueLayout.JAVA_INT, 0);
        }
    }

    /**
     * The device's PCI bus id, e.g. {@code 0000:1B:00.0}.
     *
     * @param device the device ordinal, 0 to {@link #deviceCount()} - 1
     * @return the bus id as {@code cudaDeviceGetPCIBusId} writes it ({@code domain:bus:device.function},
     *     hexadecimal)
     * @throws CudaException if {@code cudaDeviceGetPCIBusId} fails
     */
    public static String pciBusId(int device) {
        ensureLoaded();
        try (Arena arena = Arena.ofConfined()) {
            int length = 64;
            MemorySegment out = arena.allocate(length);
            int status = cuda_runtime_api_h.cudaDeviceGetPCIBusId(out, length, device);
            if (status != 0) {
                throw CudaChecks.exception(status, "cudaDeviceGetPCIBusId(device " + device + ")");
            }
            return out.getString(0);
        }
    }

    /**
     * Whether {@code device} can access {@code peer}'s memory directly.
     *
     * @param device the ordinal of the device that would access
     * @param peer the ordinal of the device whose memory would be accessed
     * @return {@code true} if peer access from {@code device} to {@code peer} is possible
     * @throws CudaException if {@code cudaDeviceCanAccessPeer} fails (for example an invalid ordinal)
     */
    public static boolean canAccessPeer(int device, int peer) {
        ensureLoaded();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
            int status = cuda_runtime_api_h.cudaDeviceCanAccessPeer(out, device, peer);
            if (status != 0) {
                throw CudaChecks.exception(status, "cudaDeviceCanAccessPeer(" + device + ", " + peer + ")");
            }
            return out.get(ValueLayout.JAVA_INT, 0) != 0;
        }
    }

    /**
     * Lets the current device access {@code peer}'s memory. Idempotent: a peer already enabled is
     * not an error (CUDA's sticky {@code cudaErrorPeerAccessAlreadyEnabled} is cleared).
     *
     * @param peer the ordinal of the device whose memory the current device may then access; not the current
     *     device
     * @return true if this call enabled it, false if it was already enabled
     * @throws CudaException if {@code cudaDeviceEnablePeerAccess} fails for another reason than already being
     *     enabled
     */
    public static boolean enablePeerAccess(int peer) {
        ensureLoaded();
        int status = cuda_runtime_api_h.cudaDeviceEnablePeerAccess(peer, 0);
        if (status == cuda_runtime_api_h.cudaErrorPeerAccessAlreadyEnabled()) {
            cuda_runtime_api_h.cudaGetLastError(); // the runtime records it as the last error; clear it
            return false;
        }
        if (status != 0) {
            throw CudaChecks.exception(status, "cudaDeviceEnablePeerAccess(peer " + peer + ")");
        }
        return true;
    }

    /**
     * Reads an attribute of the link from {@code sourceDevice} to {@code destinationDevice}.
     *
     * @param attribute the link attribute to read
     * @param sourceDevice the ordinal of the accessing device
     * @param destinationDevice the ordinal of the accessed device, not {@code sourceDevice}
     * @return the attribute's value (for example 1 if the link supports access, or its performance rank)
     * @throws NullPointerException if {@code attribute} is {@code null}
     * @throws CudaException if {@code cudaDeviceGetP2PAttribute} fails
     */
    public static int p2pAttribute(P2PAttribute attribute, int sourceDevice, int destinationDevice) {
        Objects.requireNonNull(attribute, "attribute");
        ensureLoaded();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
            int status = cuda_runtime_api_h.cudaDeviceGetP2PAttribute(out, attribute.code(), sourceDevice, destinationDevice);
            if (status != 0) {
                String newInCuda13 = attribute == P2PAttribute.ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED
                        ? "; this attribute is new in CUDA 13.0, unknown to a CUDA 12 runtime" : "";
                throw CudaChecks.exception(status, "cudaDeviceGetP2PAttribute(" + attribute + ", " + sourceDevice
                        + " -> " + destinationDevice + ")" + newInCuda13);
            }
            return out.get(ValueLayout.JAVA_INT, 0);
        }
    }

    /**
     * What CUDA knows about an address (host, device, managed or unregistered memory).
     *
     * @param address any address, device or host
     * @return its memory type, device, and device and host pointers
     * @throws CudaException if {@code cudaPointerGetAttributes} fails
     */
    public static PointerAttributes pointerAttributes(long address) {
        ensureLoaded();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attributes = cudaPointerAttributes.allocate(arena);
            int status = cuda_runtime_api_h.cudaPointerGetAttributes(attributes, MemorySegment.ofAddress(address));
            if (status != 0) {
                throw CudaChecks.exception(status, "cudaPointerGetAttributes(0x" + Long.toHexString(address) + ")");
            }
            return new PointerAttributes(MemoryType.ofCode(cudaPointerAttributes.type(attributes)),
                    cudaPointerAttributes.device(attributes),
                    cudaPointerAttributes.devicePointer(attributes).address(),
                    cudaPointerAttributes.hostPointer(attributes).address());
        }
    }

    /**
     * Returns and clears the runtime's last error for this thread ({@code cudaGetLastError}):
     * e.g. a failed kernel launch made by a library. 0 means none.
     *
     * @return the {@code cudaError_t} of the last error of this thread, or 0
     */
    public static int takeLastError() {
        ensureLoaded();
        return cuda_runtime_api_h.cudaGetLastError();
    }

    /**
     * Throws the runtime's last error of this thread, if any, clearing it.
     *
     * @param afterWhat what was done before, for the message (e.g. the library call that launched a kernel)
     * @throws CudaException if the thread has a last error
     */
    public static void checkLastError(String afterWhat) {
        int status = takeLastError();
        if (status != 0) {
            throw CudaChecks.exception(status, "last CUDA error after " + afterWhat);
        }
    }

    /**
     * {@code cudaMemcpyAsync} device to device on raw addresses and a raw stream handle (0 = the
     * legacy default stream): the staging copy of the all-reduce path, which has no buffer objects.
     *
     * @param dst the destination's device address
     * @param src the source's device address; the two ranges must not overlap
     * @param bytes the number of bytes, 0 or more (0 enqueues nothing)
     * @param streamHandle the {@code cudaStream_t} to enqueue the copy on, 0 for the legacy default stream
     * @throws CudaException if {@code cudaMemcpyAsync} fails
     */
    public static void memcpyDeviceToDeviceAsync(long dst, long src, long bytes, long streamHandle) {
        memcpyAsync(MemorySegment.ofAddress(dst), MemorySegment.ofAddress(src), bytes,
                cuda_runtime_api_h.cudaMemcpyDeviceToDevice(), MemorySegment.ofAddress(streamHandle),
                "cudaMemcpyAsync(device -> device)");
    }

    /** The one checked {@code cudaMemcpyAsync} of the facade; a zero-byte copy enqueues nothing. */
    static void memcpyAsync(MemorySegment dst, MemorySegment src, long bytes, int kind, MemorySegment stream,
                            String call) {
        if (bytes == 0) {
            return;
        }
        int status = cuda_runtime_api_h.cudaMemcpyAsync(dst, src, bytes, kind, stream);
        if (status != 0) {
            throw CudaChecks.exception(status, call + " of " + bytes + " bytes");
        }
    }
}
