package dev.ar4j.examples.llama.text;

/**
 * What encoding with special tokens adds around the text's ids: the {@code single} template of a
 * {@code TemplateProcessing} (special tokens before and after {@code $A}); {@code ByteLevel} adds nothing.
 *
 * @param prefix ids put before the text's
 * @param suffix ids put after them
 */
record PostProcessor(int[] prefix, int[] suffix) {

    /** Adds nothing. */
    static final PostProcessor NONE = new PostProcessor(new int[0], new int[0]);

    int[] apply(int[] ids) {
        int[] out = new int[prefix.length + ids.length + suffix.length];
        System.arraycopy(prefix, 0, out, 0, prefix.length);
        System.arraycopy(ids, 0, out, prefix.length, ids.length);
        System.arraycopy(suffix, 0, out, prefix.length + ids.length, suffix.length);
        return out;
    }

    /** This processor followed by another. */
    PostProcessor then(PostProcessor next) {
        int[] p = new int[next.prefix.length + prefix.length];
        System.arraycopy(next.prefix, 0, p, 0, next.prefix.length);
        System.arraycopy(prefix, 0, p, next.prefix.length, prefix.length);
        int[] s = new int[suffix.length + next.suffix.length];
        System.arraycopy(suffix, 0, s, 0, suffix.length);
        System.arraycopy(next.suffix, 0, s, suffix.length, next.suffix.length);
        return new PostProcessor(p, s);
    }
}
