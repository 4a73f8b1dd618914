package dev.ar4j;

import dev.ar4j.dispatch.Algorithm;

import dev.ar4j.cuda.CudaDriverMissingException;
import dev.ar4j.cuda.CudaException;
import dev.ar4j.internal.rendezvous.InProcessRendezvous;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What a user gets from the builder on a machine without a GPU: bad configuration is rejected
 * before anything touches the GPU or the network, with the accepted values; a missing driver is
 * a clear exception, not a crash.
 */
class CommunicatorBuilderTest {

    @Test
    void unknownAlgorithmPolicyIsRejectedWithTheAcceptedValues() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Algorithm.parse("fastest", "AR4J_ALGORITHM"));
        assertTrue(e.getMessage().contains("fastest"), e.getMessage());
        assertTrue(e.getMessage().contains("auto, 1stage, oneshot, force_1stage, 2stage, twoshot, force_2stage, push, lamport, nccl"), e.getMessage());
    }

    @Test
    void theTypedPolicyTakesPoliciesOnly() {
        Communicator.Builder b = Communicator.builder().algorithmPolicy(Algorithm.PUSH).rank(0);
        org.junit.jupiter.api.Assertions.assertEquals(Algorithm.PUSH, b.settings().dispatchConfig().algorithmPolicy());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Communicator.builder().algorithmPolicy(Algorithm.LOCAL));
        assertTrue(e.getMessage().contains("not an algorithm policy"), e.getMessage());
        assertThrows(NullPointerException.class, () -> Communicator.builder().algorithmPolicy((Algorithm) null));
    }

    @Test
    void unknownValueInTheEnvironmentIsRejectedNamingTheVariable() {
        ConfigurationException e = assertThrows(ConfigurationException.class,
                () -> Communicator.builder().environment(Map.of("SGLANG_CUSTOM_ALLREDUCE_ALGO", "3stage"))
                        .rank(0).worldSize(2).build());
        assertTrue(e.getMessage().contains("SGLANG_CUSTOM_ALLREDUCE_ALGO"), e.getMessage());
        assertTrue(e.getMessage().contains("3stage"), e.getMessage());
    }

    @Test
    void missingRankAndWorldSizeSayWhatToSet() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Communicator.builder().build());
        assertTrue(e.getMessage().contains("rank(") && e.getMessage().contains("fromEnvironment()"), e.getMessage());
    }

    @Test
    void environmentWithoutLauncherVariablesIsExplained() {
        ConfigurationException e = assertThrows(ConfigurationException.class,
                () -> Communicator.builder().fromEnvironment().environment(Map.of()).worldSize(2).build());
        assertTrue(e.getMessage().toLowerCase().contains("rank"), e.getMessage());
    }

    @Test
    void builderArgumentsAreValidated() {
        assertThrows(IllegalArgumentException.class, () -> Communicator.builder().stagingBytes(100));
        assertThrows(IllegalArgumentException.class, () -> Communicator.builder().stagingBytes(0));
        assertThrows(IllegalArgumentException.class, () -> Communicator.builder().device(-1));
        assertThrows(IllegalArgumentException.class, () -> Communicator.builder().kernelTimeout(Duration.ZERO));
        assertThrows(IllegalArgumentException.class, () -> Communicator.builder().rendezvousTimeout(Duration.ofSeconds(-1)));
        assertThrows(IllegalArgumentException.class, () -> Communicator.builder().maxRegistrations(0));
    }

    @Test
    void withoutADriverBuildingFailsWithTheDriverNamed() {
        // A one-rank in-process group: nothing to wait for, so the first CUDA call decides.
        InProcessRendezvous group = InProcessRendezvous.create(1);
        CudaException e = assertThrows(CudaException.class,
                () -> Communicator.builder().rendezvous(group.forRank(0)).build());
        assertTrue(e instanceof CudaDriverMissingException, "expected the driver-missing exception, got " + e);
        assertTrue(e.getMessage().toLowerCase().contains("driver"), e.getMessage());
    }
}
