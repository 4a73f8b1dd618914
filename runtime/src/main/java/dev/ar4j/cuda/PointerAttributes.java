package dev.ar4j.cuda;

/**
 * What CUDA knows about a pointer ({@code cudaPointerAttributes}).
 *
 * @param type          the kind of memory
 * @param device        the device the memory belongs to (for host memory: the device that allocated it, or -1 as CUDA reports)
 * @param devicePointer the address usable from device code, 0 if none
 * @param hostPointer   the address usable from the host, 0 if none
 */
public record PointerAttributes(MemoryType type, int device, long devicePointer, long hostPointer) {
}
