package dev.ar4j.examples.llama.text;

import dev.ar4j.examples.llama.model.ModelFileException;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Hugging Face's {@code BPE} model on one pre-tokenized word: the word's characters (code points) become
 * vocabulary symbols (a missing one becomes its {@code <0xXX>} byte tokens under {@code byte_fallback},
 * else the unknown token, consecutive ones fused under {@code fuse_unk}), then merges are applied lowest
 * rank first, leftmost first among equal ranks, exactly as {@code Word::merge_all} does. Merge ranks
 * live in an open-addressing hash map over packed pair keys ({@link PairRanks}); results of words shorter than 256 bytes are cached.
 * Thread-safe.
 */
final class BpeModel {

    /** Hugging Face caches words shorter than this many bytes. */
    private static final int CACHE_WORD_BYTES = 256;
    private static final int CACHE_CAPACITY = 10_000;

    private final Map<String, Integer> vocab;
    private final String[] idToToken;
    private final PairRanks mergeRank;
    private final int[] mergeResult;
    private final boolean ignoreMerges;
    private final boolean byteFallback;
    private final boolean fuseUnk;
    private final int unkId;
    private final int[] byteTokens;
    private final Map<String, int[]> cache = new ConcurrentHashMap<>();

    /**
     * @param vocab        token to id
     * @param merges       the merge list in rank order, each a pair of token texts
     * @param ignoreMerges a word that is a vocabulary token is that token, merges unapplied
     * @param byteFallback unknown characters become {@code <0xXX>} tokens
     * @param fuseUnk      consecutive unknown characters become one unknown token
     * @param unkToken     the unknown token, or {@code null}
     * @param where        the file, for messages
     */
    BpeModel(Map<String, Integer> vocab, java.util.List<String[]> merges, boolean ignoreMerges,
             boolean byteFallback, boolean fuseUnk, String unkToken, String where) {
        this.vocab = vocab;
        int max = -1;
        for (int id : vocab.values()) {
            if (id < 0) {
                throw new ModelFileException(where + ": model.vocab has the negative id " + id);
            }
            max = Math.max(max, id);
        }
        idToToken = new String[max + 1];
        vocab.forEach((token, id) -> idToToken[id] = token);
        mergeRank = new PairRanks(merges.size());
        mergeResult = new int[merges.size()];
        for (int rank = 0; rank < merges.size(); rank++) {
            String[] m = merges.get(rank);
            Integer a = vocab.get(m[0]);
            Integer b = vocab.get(m[1]);
            Integer ab = vocab.get(m[0] + m[1]);
            if (a == null || b == null || ab == null) {
                throw new ModelFileException(where + ": model.merges[" + rank + "] (\"" + m[0] + "\" \"" + m[1]
                        + "\") names a token that is not in model.vocab");
            }
            mergeRank.put(PairRanks.pair(a, b), rank);
            mergeResult[rank] = ab;
        }
        this.ignoreMerges = ignoreMerges;
        this.byteFallback = byteFallback;
        this.fuseUnk = fuseUnk;
        if (unkToken != null && !vocab.containsKey(unkToken)) {
            throw new ModelFileException(where + ": model.unk_token \"" + unkToken + "\" is not in model.vocab");
        }
        this.unkId = unkToken == null ? -1 : vocab.get(unkToken);
        byteTokens = new int[256];
        for (int b = 0; b < 256; b++) {
            Integer id = vocab.get(String.format("<0x%02X>", b));
            byteTokens[b] = id == null ? -1 : id;
        }
    }

    /** The token of an id, or {@code null} if the vocabulary has none. */
    String token(int id) {
        return id >= 0 && id < idToToken.length ? idToToken[id] : null;
    }

    /** The id of a token, or {@code null}. */
    Integer id(String token) {
        return vocab.get(token);
    }

    /** The number of entries of the vocabulary. */
    int entries() {
        return vocab.size();
    }

    /** One more than the largest id of the vocabulary. */
    int size() {
        return idToToken.length;
    }

    /** Appends the ids of one pre-tokenized word. */
    void tokenize(String word, IntList out) {
        if (word.isEmpty()) {
            return;
        }
        if (ignoreMerges) {
            Integer id = vocab.get(word);
            if (id != null) {
                out.add(id);
                return;
            }
        }
        int[] cached = cache.get(word);
        if (cached == null) {
            cached = merge(word);
            if (cache.size() < CACHE_CAPACITY
                    && word.getBytes(StandardCharsets.UTF_8).length < CACHE_WORD_BYTES) {
                cache.put(word, cached);
            }
        }
        out.addAll(cached);
    }

    private int[] merge(String word) {
        // Initial symbols, as BPE::merge_word makes them.
        IntList ids = new IntList(word.length());
        int unk = -1;
        for (int i = 0; i < word.length(); ) {
            int cp = word.codePointAt(i);
            int end = i + Character.charCount(cp);
            String ch = word.substring(i, end);
            i = end;
            Integer id = vocab.get(ch);
            if (id != null) {
                if (unk >= 0) {
                    ids.add(unk);
                    unk = -1;
                }
                ids.add(id);
                continue;
            }
            if (byteFallback && allBytesKnown(ch)) {
                for (byte b : ch.getBytes(StandardCharsets.UTF_8)) {
                    ids.add(byteTokens[b & 0xFF]);
                }
                continue;
            }
            if (unkId >= 0) {
                if (unk >= 0 && !fuseUnk) {
                    ids.add(unk);
                }
                unk = unkId;
            }
        }
        if (unk >= 0) {
            ids.add(unk);
        }
        return mergeAll(ids.toArray());
    }

    private boolean allBytesKnown(String ch) {
        for (byte b : ch.getBytes(StandardCharsets.UTF_8)) {
            if (byteTokens[b & 0xFF] < 0) {
                return false;
            }
        }
        return true;
    }

    /** Word::merge_all: a min-heap of (rank, position), stale entries skipped. */
    private int[] mergeAll(int[] sym) {
        int n = sym.length;
        if (n < 2) {
            return sym;
        }
        int[] prev = new int[n];
        int[] next = new int[n];
        boolean[] removed = new boolean[n];
        LongHeap heap = new LongHeap(n);
        for (int i = 0; i < n; i++) {
            prev[i] = i - 1;
            next[i] = i + 1 < n ? i + 1 : -1;
            if (i + 1 < n) {
                push(heap, sym[i], sym[i + 1], i);
            }
        }
        while (!heap.isEmpty()) {
            long top = heap.pop();
            int rank = (int) (top >>> 32);
            int pos = (int) top;
            if (removed[pos] || next[pos] < 0) {
                continue;
            }
            int right = next[pos];
            int current = mergeRank.get(PairRanks.pair(sym[pos], sym[right]));
            if (current < 0 || mergeResult[current] != mergeResult[rank]) {
                continue;
            }
            sym[pos] = mergeResult[rank];
            removed[right] = true;
            next[pos] = next[right];
            if (next[pos] >= 0) {
                prev[next[pos]] = pos;
            }
            if (prev[pos] >= 0) {
                push(heap, sym[prev[pos]], sym[pos], prev[pos]);
            }
            if (next[pos] >= 0) {
                push(heap, sym[pos], sym[next[pos]], pos);
            }
        }
        IntList out = new IntList(n);
        for (int i = 0; i >= 0; i = next[i]) {
            out.add(sym[i]);
        }
        return out.toArray();
    }

    private void push(LongHeap heap, int a, int b, int pos) {
        int rank = mergeRank.get(PairRanks.pair(a, b));
        if (rank >= 0) {
            heap.push(((long) rank << 32) | pos);
        }
    }

    /** A binary min-heap of longs. */
    private static final class LongHeap {
        private long[] a;
        private int size;

        LongHeap(int capacity) {
            a = new long[Math.max(4, capacity)];
        }

        boolean isEmpty() {
            return size == 0;
        }

        void push(long v) {
            if (size == a.length) {
                a = Arrays.copyOf(a, size * 2);
            }
            int i = size++;
            while (i > 0) {
                int p = (i - 1) >>> 1;
                if (a[p] <= v) {
                    break;
                }
                a[i] = a[p];
                i = p;
            }
            a[i] = v;
        }

        long pop() {
            long top = a[0];
            long last = a[--size];
            int i = 0;
            while (true) {
                int c = 2 * i + 1;
                if (c >= size) {
                    break;
                }
                if (c + 1 < size && a[c + 1] < a[c]) {
                    c++;
                }
                if (a[c] >= last) {
                    break;
                }
                a[i] = a[c];
                i = c;
            }
            a[i] = last;
            return top;
        }
    }
}
