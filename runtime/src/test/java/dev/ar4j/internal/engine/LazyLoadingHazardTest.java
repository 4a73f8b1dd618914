package dev.ar4j.internal.engine;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The warning of a rank whose GPU other ranks of its process share under CUDA's lazy module loading:
 * given exactly there, naming the GPU, the setting and the remedy; absent under eager loading, with a
 * GPU of its own, or with ranks in other processes.
 */
class LazyLoadingHazardTest {

    @Test
    void ranksOfOneProcessOnOneGpuUnderLazyLoadingAreWarned() {
        String unset = Observation.lazyLoadingHazard(true, 0, List.of(0, 0, 0, 0), null);
        assertTrue(unset != null && unset.contains("GPU 0") && unset.contains("unset, LAZY by default")
                && unset.contains("CUDA_MODULE_LOADING=EAGER") && unset.contains("PeerTimeoutException"), unset);
        String lazy = Observation.lazyLoadingHazard(true, 1, List.of(0, 1, 1), "LAZY");
        assertTrue(lazy != null && lazy.contains("GPU 1") && lazy.contains("CUDA_MODULE_LOADING=LAZY"), lazy);
    }

    @Test
    void eagerLoadingOwnGpusOrSeveralProcessesAreNotWarned() {
        assertNull(Observation.lazyLoadingHazard(true, 0, List.of(0, 0), "EAGER"));
        assertNull(Observation.lazyLoadingHazard(true, 0, List.of(0, 0), "eager"));
        assertNull(Observation.lazyLoadingHazard(true, 0, List.of(0, 1, 1), null));  // GPU 0 is this rank's alone
        assertNull(Observation.lazyLoadingHazard(false, 0, List.of(0, 0), null));  // one context per process
    }
}
