package dev.ar4j.examples.llama.text;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.OptionalInt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/** A small SentencePiece-style tokenizer written by the test: encoding, decoding and the text stream. */
class SyntheticTokenizerTest {

    @TempDir
    Path dir;

    private Tokenizer tokenizer() {
        return Tokenizer.load(SyntheticTokenizerFiles.folder(dir, "tokenizer.json", SyntheticTokenizerFiles.sentencePiece(),
                "tokenizer_config.json", "{\"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"add_bos_token\": true}"));
    }

    @Test
    void mergesByRankAndFallsBackToBytes() {
        Tokenizer t = tokenizer();
        int sp = 259;
        int a = 260;
        int b = 261;
        int c = 262;
        int ab = 263;
        int spAb = 264;
        int abc = 265;
        // "▁abc": a b -> ab (rank 0), ▁ ab -> ▁ab (rank 1); "abc" is no longer reachable.
        assertArrayEquals(new int[]{spAb, c}, t.encode("abc", false));
        assertArrayEquals(new int[]{1, spAb, c}, t.encode("abc", true));
        // "▁ba▁abc": no merge for b a; the later "ab c" merge applies where "▁" did not take ab first.
        assertArrayEquals(new int[]{sp, b, a, spAb, c}, t.encode("ba abc", false));
        // "▁aabc": a b -> ab at the second a, then ab c -> abc.
        assertArrayEquals(new int[]{sp, a, abc}, t.encode("aabc", false));
        // "€" is not in the vocabulary: its three UTF-8 bytes; "é" is.
        assertArrayEquals(new int[]{sp, 3 + 0xE2, 3 + 0x82, 3 + 0xAC, 266}, t.encode("€é", false));
        // Special tokens are cut out before normalization; each remaining piece gets its own "▁".
        assertArrayEquals(new int[]{1, sp, a, 2, sp, sp, b}, t.encode("<s>a</s> b", false));
        assertArrayEquals(new int[0], t.encode("", false));
        assertArrayEquals(new int[]{1}, t.encode("", true));
    }

    @Test
    void refusesALoneSurrogate() {
        Tokenizer t = tokenizer();
        IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> t.encode("ab\uD83Dc", false));
        org.junit.jupiter.api.Assertions.assertTrue(e.getMessage().contains("lone surrogate U+D83D at index 2"),
                e.getMessage());
        org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class, () -> t.encode("\uDE00", true));
        assertEquals(5, t.encode("\uD83D\uDE00", false).length); // ▁ and the four bytes of U+1F600
    }

    @Test
    void decodesBytesSpacesAndSpecials() {
        Tokenizer t = tokenizer();
        assertEquals("abc €é", t.decode(t.encode("abc €é", true), true));
        assertEquals("<s> abc", t.decode(t.encode("abc", true), false));
        // A byte run that is not UTF-8: one U+FFFD per byte, as Hugging Face's ByteFallback writes.
        assertEquals("\uFFFD\uFFFDa", t.decode(new int[]{3 + 0xE2, 3 + 0x82, 260}, true));
        assertEquals("a", t.decode(new int[]{260, 99_999, -1}, true));
    }

    @Test
    void streamsACharacterOnlyWhenItsLastByteArrives() {
        Tokenizer t = tokenizer();
        TextStream s = t.newTextStream();
        assertEquals("", s.push(1));            // <s>, skipped
        assertEquals("", s.push(259));          // "▁" -> " ", stripped at the start
        assertEquals("a", s.push(260));
        assertEquals("", s.push(3 + 0xE2));
        assertEquals("", s.push(3 + 0x82));
        assertEquals("€", s.push(3 + 0xAC));
        assertEquals(" ab", s.push(264));
        assertEquals("", s.push(3 + 0xF0));
        assertEquals("\uFFFD", s.finish());
        TextStream keep = t.newTextStream(false);
        assertEquals("<s>", keep.push(1));
        assertEquals(" a", keep.push(sp()) + keep.push(260));
    }

    private static int sp() {
        return 259;
    }

    @Test
    void readsTheSpecialTokensOfTheConfig() {
        Tokenizer t = tokenizer();
        assertEquals(OptionalInt.of(1), t.bosTokenId());
        assertArrayEquals(new int[]{2}, t.eosTokenIds());
        assertEquals(259 + 8, t.vocabularySize());
        assertEquals(OptionalInt.of(263), t.tokenId("ab"));
        assertEquals("</s>", t.token(2).orElseThrow());
    }
}
