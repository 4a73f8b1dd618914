package dev.ar4j.examples.llama.engine;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 29: a token id outside the vocabulary is refused on the host, named, before a step launches anything (the
 * engine stays usable); the device-side report resets the status word ({@code LlamaReferenceIT} on a GPU).
 */
class TokenIdCheckTest {

    @Test
    void refusesIdsOutsideTheVocabularyNamingTheFirst() {
        assertDoesNotThrow(() -> RankEngine.checkTokenIds("decode", new int[] {0, 4095}, 2, 4096));
        IllegalArgumentException high = assertThrows(IllegalArgumentException.class,
                () -> RankEngine.checkTokenIds("verify", new int[] {1, 4096, -1}, 3, 4096));
        assertTrue(high.getMessage().contains("verify: token 1 is id 4096"), high.getMessage());
        assertTrue(high.getMessage().contains("vocab_size 4096"), high.getMessage());
        IllegalArgumentException negative = assertThrows(IllegalArgumentException.class,
                () -> RankEngine.checkTokenIds("prefill", new int[] {-7}, 1, 10));
        assertTrue(negative.getMessage().contains("prefill: token 0 is id -7"), negative.getMessage());
        assertThrows(IllegalArgumentException.class, () -> RankEngine.checkTokenId("decode", 0, 10, 10));
        // Only the first count ids are the step's.
        assertDoesNotThrow(() -> RankEngine.checkTokenIds("decode", new int[] {3, 99}, 1, 10));
    }
}
