package dev.ar4j.examples.llama.text;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * A deterministic corpus for comparing tokenizers: each line joins a few fragments drawn with a fixed
 * seed from scripts (Latin with accents and combining marks, CJK, Japanese, Korean, Arabic, Hebrew,
 * Devanagari, Thai, Cyrillic, Greek), emoji (skin tones, ZWJ families, flags, keycaps, variation
 * selectors), code, digit runs (ASCII, fullwidth, Arabic-Indic, Devanagari, superscripts), whitespace
 * runs (tabs, CR LF, trailing spaces, blank lines, NBSP, ideographic and other Unicode spaces),
 * contractions in mixed case, both models' special tokens (whole and broken), and random code points
 * from long-assigned blocks.
 */
final class TestCorpus {

    static final String[] WORDS = {
        "Hello", "world", "the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "naïve", "café", "résumé",
        "Ångström", "straße", "ŒUVRE", "İstanbul", "ﬁnance", "e\u0301te\u0301", "Z\u0351\u0317a\u0300l\u036Cg\u0310o",
        "我们今天去公园散步", "中文分词测试", "東京タワー", "こんにちは世界", "カタカナ", "안녕하세요", "한국어 문장",
        "مرحبا بالعالم", "العربية", "שלום עולם", "नमस्ते दुनिया", "हिन्दी", "क्षत्रिय", "สวัสดีครับ", "Привет мир",
        "Ёлка", "Καλημέρα κόσμε", "ΣΊΣΥΦΟΣ", "Tiếng Việt", "ḍḥṭ", "ᏣᎳᎩ", "ⲁⲛⲟⲕ", "𐌰𐌱𐌲", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "𝟘𝟙𝟚",
        "ſ", "ǅungla", "ǈ", "K", "Ω", "µ", "ℌ", "ⅷ", "①②", "½", "°C", "™", "§¶", "«quoted»", "„Zitat“", "「かぎ」",
    };
    static final String[] CONTRACTIONS = {
        "don't", "DON'T", "Don'T", "it's", "IT'S", "It'S", "we're", "WE'RE", "they've", "THEY'VE", "I'm", "I'M",
        "you'll", "YOU'LL", "he'd", "HE'D", "'s", "'S", "'t", "'re", "'ve", "'m", "'ll", "'d", "''", "'", "’s",
        "rock'n'roll", "o'clock", "'ſ", "'Ś", "x's's", "'tis", "'RE'", "' s",
    };
    static final String[] EMOJI = {
        "😀", "😂", "👍", "👍🏽", "👍🏿", "👨‍👩‍👧‍👦", "👩‍💻", "🧑🏾‍🚀", "🏳️‍🌈", "🏴‍☠️", "🇫🇷", "🇯🇵🇺🇸", "🇩🇪",
        "❤️", "❤", "♥️", "1️⃣", "#️⃣", "☺️", "✌🏻", "🫠", "🦀", "🐍", "☕", "🏴󠁧󠁢󠁳󠁣󠁴󠁿", "👁️‍🗨️", "🤷‍♀️", "💯",
    };
    static final String[] CODE = {
        "for (int i = 0; i < n; i++) {", "    return x ** 2", "def f(x):\n    return x", "}\n", "if (a && b || !c) {",
        "<div class=\"a\">&amp;</div>", "{\"key\": [1, 2.5, null, true]}", "SELECT * FROM t WHERE id = 42;",
        "/usr/local/bin/java -Xmx4g", "https://example.com/path?q=1&r=2#frag", "a->b", "x := <-ch", "λx. x + 1",
        "#include <stdio.h>", "printf(\"%d\\n\", n);", "0x1F600", "1e-5", "i++;", "/* comment */", "// TODO: fix",
        "\tindented();", "    four_spaces", "__init__", "std::vector<int>", "@Override", "$HOME", "`backtick`",
        "===", "!==", "...", "?!", "~~", "^_^", "¯\\_(ツ)_/¯", "C:\\Windows\\System32", "a_b-c.d",
    };
    static final String[] SPACES = {
        " ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\n\n\n", "\r\n", "\r\n\r\n", " \n", "\n ", "  \n  ", "\r",
        "\u00A0", "\u3000", "\u2003", "\u2028", "\u2029", "\u000B", "\u000C", "\u0085", " \t \n", "    \n\n\t",
        "\u200B", "\u200D", "\uFEFF", "\u202F", "\u205F", "\u1680",
    };
    static final String[] SPECIALS = {
        "<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>",
        "<|reserved_special_token_0|>", "<|reserved_special_token_250|>", "<|python_tag|>", "<|eom_id|>",
        "<s>", "</s>", "<unk>", "<|eot_id", "<|", "|>", "<s", "s>", "<<s>>", "<|eot_id|><|eot_id|>", " <s> ",
        "<0x41>", "▁", "▁▁", "Ġ", "Ċ",
    };
    /** Blocks assigned since Unicode 6 or earlier, so Java and Oniguruma agree on their categories. */
    static final int[][] BLOCKS = {
        {0x20, 0x7E}, {0xA0, 0x24F}, {0x300, 0x36F}, {0x370, 0x3FF}, {0x400, 0x4FF}, {0x590, 0x5FF},
        {0x600, 0x6FF}, {0x900, 0x97F}, {0xE00, 0xE7F}, {0x1100, 0x11FF}, {0x2000, 0x206F}, {0x2100, 0x214F},
        {0x2190, 0x23FF}, {0x2500, 0x27BF}, {0x3000, 0x30FF}, {0x4E00, 0x9FA5}, {0xAC00, 0xD7A3},
        {0xE000, 0xE0FF}, {0xFF00, 0xFFEF}, {0x1D400, 0x1D7FF}, {0x1F300, 0x1F5FF}, {0x1F600, 0x1F64F},
        {0x10000, 0x1007F}, {0x20000, 0x2A6D6},
    };

    private TestCorpus() {
    }

    /** {@code count} lines from {@code seed}. */
    static List<String> lines(long seed, int count) {
        Random r = new Random(seed);
        List<String> lines = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            lines.add(line(r));
        }
        return lines;
    }

    private static String line(Random r) {
        StringBuilder s = new StringBuilder();
        int fragments = 1 + r.nextInt(12);
        for (int f = 0; f < fragments; f++) {
            switch (r.nextInt(10)) {
                case 0, 1 -> s.append(pick(r, WORDS));
                case 2 -> s.append(pick(r, CONTRACTIONS));
                case 3 -> s.append(pick(r, EMOJI));
                case 4 -> s.append(pick(r, CODE));
                case 5 -> s.append(digits(r));
                case 6 -> s.append(pick(r, SPACES));
                case 7 -> s.append(pick(r, SPECIALS));
                case 8 -> randomCodePoints(r, s);
                default -> s.append(ascii(r));
            }
            int sep = r.nextInt(8);
            if (sep < 4) {
                s.append(' ');
            } else if (sep == 4) {
                s.append(pick(r, SPACES));
            }
        }
        return s.toString();
    }

    private static String pick(Random r, String[] from) {
        return from[r.nextInt(from.length)];
    }

    private static String digits(Random r) {
        String[] zeros = {"0", "0", "0", "\uFF10", "\u0660", "\u0966"};
        int zero = zeros[r.nextInt(zeros.length)].codePointAt(0);
        StringBuilder s = new StringBuilder();
        int n = 1 + r.nextInt(20);
        for (int i = 0; i < n; i++) {
            s.appendCodePoint(zero + r.nextInt(10));
            if (r.nextInt(12) == 0) {
                s.append(",.²³ -".charAt(r.nextInt(6)));
            }
        }
        return s.toString();
    }

    private static String ascii(Random r) {
        StringBuilder s = new StringBuilder();
        int n = 1 + r.nextInt(24);
        for (int i = 0; i < n; i++) {
            s.append((char) (0x20 + r.nextInt(0x5F)));
        }
        return s.toString();
    }

    private static void randomCodePoints(Random r, StringBuilder s) {
        int[] block = BLOCKS[r.nextInt(BLOCKS.length)];
        int n = 1 + r.nextInt(6);
        for (int i = 0; i < n; i++) {
            int cp = block[0] + r.nextInt(block[1] - block[0] + 1);
            int type = Character.getType(cp);
            if (type != Character.UNASSIGNED && type != Character.SURROGATE) {
                s.appendCodePoint(cp);
            }
        }
    }
}
