package dev.ar4j.examples.llama.text;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import java.util.regex.Pattern;

/**
 * Cuts the added tokens out of a text, as Hugging Face's {@code AddedVocabulary} does: first the tokens
 * that are not {@code normalized} in the raw text, then each remaining piece is normalized and the
 * {@code normalized} tokens, themselves normalized first, are cut out of it. Matches are leftmost-longest
 * and do not overlap;
 * {@code single_word}, {@code lstrip} and {@code rstrip} are honoured as there.
 */
final class AddedTokenSplitter {

    /** A piece of the input: an added token's id, or text for the model ({@code id} &lt; 0). */
    record Piece(int id, String text) {
    }

    private static final Pattern WORD_CHAR = Pattern.compile("\\w", Pattern.UNICODE_CHARACTER_CLASS);

    private final Trie raw;
    private final Trie normalized;

    private final UnaryOperator<String> normalizer;

    AddedTokenSplitter(List<AddedToken> tokens, UnaryOperator<String> normalizer) {
        this.normalizer = normalizer;
        raw = new Trie();
        normalized = new Trie();
        for (AddedToken t : tokens) {
            if (t.normalized()) {
                normalized.add(normalizer.apply(t.content()), t);
            } else {
                raw.add(t.content(), t);
            }
        }
    }

    /** Splits the text; text pieces come out normalized. */
    List<Piece> split(String text) {
        List<Piece> out = new ArrayList<>();
        for (Piece p : find(text, raw)) {
            if (p.id() >= 0) {
                out.add(p);
            } else {
                out.addAll(find(normalizer.apply(p.text()), normalized));
            }
        }
        return out;
    }

    private static List<Piece> find(String s, Trie trie) {
        List<Piece> pieces = new ArrayList<>();
        if (trie.root.children.isEmpty()) {
            pieces.add(new Piece(-1, s));
            return pieces;
        }
        int offset = 0;
        int searchFrom = 0;
        while (searchFrom < s.length()) {
            int matchStart = -1;
            Node found = null;
            for (int i = searchFrom; i < s.length() && found == null; i++) {
                found = trie.longestAt(s, i);
                matchStart = i;
            }
            if (found == null) {
                break;
            }
            AddedToken match = found.token;
            int start = matchStart;
            int stop = matchStart + found.length;
            searchFrom = stop;
            if (match.singleWord()) {
                boolean spaceBefore = start == 0 || !isWordChar(s.codePointBefore(start));
                boolean spaceAfter = stop == s.length() || !isWordChar(s.codePointAt(stop));
                if (!spaceBefore || !spaceAfter) {
                    continue;
                }
            }
            if (match.lstrip()) {
                int newStart = start;
                while (newStart > 0 && isWhitespace(s.codePointBefore(newStart))) {
                    newStart -= Character.charCount(s.codePointBefore(newStart));
                }
                start = Math.max(newStart, offset);
            }
            if (match.rstrip()) {
                while (stop < s.length() && isWhitespace(s.codePointAt(stop))) {
                    stop += Character.charCount(s.codePointAt(stop));
                }
            }
            if (offset < start) {
                pieces.add(new Piece(-1, s.substring(offset, start)));
            }
            pieces.add(new Piece(match.id(), match.content()));
            offset = stop;
        }
        if (offset < s.length() || pieces.isEmpty()) {
            pieces.add(new Piece(-1, s.substring(Math.min(offset, s.length()))));
        }
        return pieces;
    }

    private static boolean isWordChar(int cp) {
        return WORD_CHAR.matcher(Character.toString(cp)).matches();
    }

    /** Rust's {@code char::is_whitespace}: the Unicode White_Space property. */
    static boolean isWhitespace(int cp) {
        return switch (cp) {
            case 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000 ->
                    true;
            default -> cp >= 0x2000 && cp <= 0x200A;
        };
    }

    private static final class Trie {
        final Node root = new Node();

        void add(String pattern, AddedToken token) {
            if (pattern.isEmpty()) {
                return;
            }
            Node n = root;
            for (int i = 0; i < pattern.length(); i++) {
                n = n.children.computeIfAbsent(pattern.charAt(i), c -> new Node());
            }
            if (n.token == null) {
                n.token = token;
                n.length = pattern.length();
            }
        }

        Node longestAt(String s, int from) {
            Node n = root;
            Node best = null;
            for (int i = from; i < s.length(); i++) {
                n = n.children.get(s.charAt(i));
                if (n == null) {
                    break;
                }
                if (n.token != null) {
                    best = n;
                }
            }
            return best;
        }
    }

    private static final class Node {
        final Map<Character, Node> children = new HashMap<>(4);
        AddedToken token;
        int length;
    }
}
