package dev.ar4j.internal.platform;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CudaRuntimeRequirementTest {

    @Test
    void twelveAndThirteenAreUsableOlderRuntimesAreNot() {
        assertEquals(Optional.empty(), CudaRuntimeRequirement.refusal(12000));
        assertEquals(Optional.empty(), CudaRuntimeRequirement.refusal(12080));
        assertEquals(Optional.empty(), CudaRuntimeRequirement.refusal(13000));
        String why = CudaRuntimeRequirement.refusal(11080).orElseThrow();
        assertTrue(why.startsWith("it is the CUDA 11.8 runtime, and ar4j's Java side needs CUDA 12.0 or newer"), why);
    }

    /** A library that says it is CUDA 11.8 is refused with a message, in a JVM of its own. */
    @Test
    void anOldRuntimeIsRefusedNamingItsVersionAndTheSetting(@TempDir Path dir) throws Exception {
        Path source = Files.writeString(dir.resolve("fake.c"),
                "int cudaRuntimeGetVersion(int *v) { *v = 11080; return 0; }\n");
        Path library = dir.resolve("libcudart.so.11.0");
        Process cc;
        try {
            cc = new ProcessBuilder("cc", "-shared", "-fPIC", "-o", library.toString(), source.toString())
                    .redirectErrorStream(true).start();
        } catch (java.io.IOException e) {
            Assumptions.abort("needs a C compiler (cc) to build a fake old CUDA runtime: " + e.getMessage());
            return;
        }
        String ccOutput = new String(cc.getInputStream().readAllBytes());
        assertTrue(cc.waitFor(60, TimeUnit.SECONDS) && cc.exitValue() == 0, "cc failed: " + ccOutput);

        ChildJvm child = ChildJvm.start(CudartLoadMain.class, List.of("-Dar4j.cudart.path=" + library), List.of(),
                dir.resolve("child.log"));
        assertEquals(0, child.await(60), child.output());
        String output = child.output();
        assertTrue(output.startsWith("REFUSED Refusing the CUDA runtime " + library
                + ": it is the CUDA 11.8 runtime, and ar4j's Java side needs CUDA 12.0 or newer"), output);
        assertTrue(output.contains("Point -Dar4j.cudart.path or AR4J_CUDART_PATH at a CUDA 12.x or 13.x libcudart"),
                output);
    }
}
