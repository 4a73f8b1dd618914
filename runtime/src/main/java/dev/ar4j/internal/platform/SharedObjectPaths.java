package dev.ar4j.internal.platform;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;

/** Asks the dynamic loader which file holds an address ({@code dladdr}). */
final class SharedObjectPaths {
    private static final MethodHandle DLADDR;

    static {
        Linker linker = Linker.nativeLinker();
        DLADDR = linker.defaultLookup().find("dladdr")
                .map(address -> linker.downcallHandle(address,
                        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS)))
                .orElse(null);
    }

    private SharedObjectPaths() {
    }

    static Path pathContaining(MemorySegment address) {
        if (DLADDR == null) {
            throw new IllegalStateException("dladdr is not available from the C library");
        }
        try (Arena arena = Arena.ofConfined()) {
            // Dl_info { const char *dli_fname; void *dli_fbase; const char *dli_sname; void *dli_saddr; }
            MemorySegment info = arena.allocate(4 * ValueLayout.ADDRESS.byteSize(), ValueLayout.ADDRESS.byteAlignment());
            int ok = (int) DLADDR.invokeExact(address, info);
            MemorySegment name = info.get(ValueLayout.ADDRESS, 0);
            if (ok == 0 || name.address() == 0) {
                throw new IllegalStateException("dladdr does not know the address " + address);
            }
            String file = name.reinterpret(4096).getString(0);
            return Path.of(file).toAbsolutePath();
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("dladdr failed", t);
        }
    }
}
