package dev.ar4j.examples.llama.text;

import dev.ar4j.examples.llama.model.JsonValues;
import dev.ar4j.examples.llama.model.ModelFileException;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Reads the parts of a Hugging Face {@code tokenizer.json} this tokenizer implements, refusing every
 * other component by name with the list of what is supported.
 */
final class TokenizerJson {

    /** The parsed parts. */
    record Parts(List<AddedToken> addedTokens, Normalizer normalizer, PreTokenizer preTokenizer, BpeModel model,
                 PostProcessor postProcessor, TokenDecoder decoder) {
    }

    static final String NORMALIZERS = "Prepend, Replace with a String pattern, a Sequence of them, or none";
    static final String PRE_TOKENIZERS = "Split on the Llama-3 regex (Isolated), ByteLevel without use_regex and "
            + "add_prefix_space, a Sequence of them, or none";
    static final String POST_PROCESSORS = "TemplateProcessing, ByteLevel, a Sequence of them, or none";
    static final String DECODERS = "ByteLevel, or Replace (String pattern), ByteFallback, Fuse and Strip (start only)"
            + " in that order, alone or in a Sequence";

    private final String file;

    private TokenizerJson(String file) {
        this.file = file;
    }

    static Parts parse(Map<String, Object> root, String file) {
        return new TokenizerJson(file).parts(root);
    }

    private Parts parts(Map<String, Object> root) {
        for (String key : List.of("truncation", "padding")) {
            if (root.get(key) != null) {
                throw refused(key, "a " + key + " setting", "none (null): this tokenizer encodes whole texts");
            }
        }
        List<AddedToken> added = addedTokens(root.get("added_tokens"));
        Normalizer normalizer = new Normalizer(normalizerSteps(root.get("normalizer"), "normalizer"));
        PreTokenizer pre = new PreTokenizer(preTokenizerSteps(root.get("pre_tokenizer"), "pre_tokenizer"));
        BpeModel model = model(JsonValues.object(root.get("model"), at("model")));
        checkAddedIds(added, model);
        PostProcessor post = postProcessor(root.get("post_processor"), "post_processor", added, model);
        TokenDecoder decoder = decoder(root.get("decoder"));
        return new Parts(added, normalizer, pre, model, post, decoder);
    }

    private String at(String key) {
        return file + ": " + key;
    }

    private ModelFileException refused(String where, String found, String supported) {
        return new ModelFileException(file + ": " + where + " is " + found + ", which this tokenizer does not "
                + "support; supported: " + supported);
    }

    private static String type(Map<String, Object> component) {
        Object t = component.get("type");
        return t instanceof String s ? s : "(no type)";
    }

    private List<AddedToken> addedTokens(Object value) {
        List<AddedToken> tokens = new ArrayList<>();
        if (value == null) {
            return tokens;
        }
        List<?> list = JsonValues.array(value, at("added_tokens"));
        for (int i = 0; i < list.size(); i++) {
            String where = at("added_tokens[" + i + "]");
            Map<String, Object> t = JsonValues.object(list.get(i), where);
            tokens.add(new AddedToken(JsonValues.intNumber(t.get("id"), where + ".id"),
                    JsonValues.string(t.get("content"), where + ".content"),
                    flag(t, "special", where), flag(t, "single_word", where), flag(t, "lstrip", where),
                    flag(t, "rstrip", where), flag(t, "normalized", where)));
        }
        return tokens;
    }

    /**
     * Hugging Face ignores an added token's id in the file: a token of the vocabulary keeps its vocabulary
     * id, the others are numbered on from the vocabulary's size in the order of the list (it warns when
     * that differs from the file). A file where it differs is refused here rather than read either way.
     */
    private void checkAddedIds(List<AddedToken> added, BpeModel model) {
        Map<String, Integer> assigned = new HashMap<>();
        int vocabEntries = model.entries();
        int max = -1;
        for (int i = 0; i < added.size(); i++) {
            AddedToken t = added.get(i);
            Integer inVocab = model.id(t.content());
            Integer before = assigned.get(t.content());
            int expected = before != null ? before : inVocab != null ? inVocab
                    : max < 0 ? vocabEntries : max >= vocabEntries ? max + 1 : vocabEntries;
            if (t.id() != expected) {
                throw new ModelFileException(at("added_tokens[" + i + "]") + ": \"" + t.content() + "\" has the id "
                        + t.id() + ", but Hugging Face tokenizers gives it " + expected
                        + (inVocab != null ? " (its id in model.vocab)" : " (the next id after the vocabulary and "
                        + "the added tokens before it)") + "; a file whose added-token ids disagree is refused");
            }
            assigned.put(t.content(), expected);
            max = Math.max(max, expected);
        }
    }

    private static boolean flag(Map<String, Object> t, String key, String where) {
        Object v = t.get(key);
        return v != null && JsonValues.bool(v, where + "." + key);
    }

    private List<Normalizer.Step> normalizerSteps(Object value, String where) {
        List<Normalizer.Step> steps = new ArrayList<>();
        if (value == null) {
            return steps;
        }
        Map<String, Object> n = JsonValues.object(value, at(where));
        switch (type(n)) {
            case "Sequence" -> {
                List<?> list = JsonValues.array(n.get("normalizers"), at(where + ".normalizers"));
                for (int i = 0; i < list.size(); i++) {
                    steps.addAll(normalizerSteps(list.get(i), where + ".normalizers[" + i + "]"));
                }
            }
            case "Prepend" -> steps.add(new Normalizer.Prepend(JsonValues.string(n.get("prepend"),
                    at(where + ".prepend"))));
            case "Replace" -> steps.add(new Normalizer.Replace(stringPattern(n, where),
                    JsonValues.string(n.get("content"), at(where + ".content"))));
            default -> throw refused(where, "the normalizer " + type(n), NORMALIZERS);
        }
        return steps;
    }

    private String stringPattern(Map<String, Object> replace, String where) {
        Map<String, Object> pattern = JsonValues.object(replace.get("pattern"), at(where + ".pattern"));
        if (!(pattern.get("String") instanceof String s)) {
            throw refused(where + ".pattern", "a " + String.join("/", pattern.keySet()) + " pattern",
                    "a String pattern");
        }
        return s;
    }

    private List<PreTokenizer.Step> preTokenizerSteps(Object value, String where) {
        List<PreTokenizer.Step> steps = new ArrayList<>();
        if (value == null) {
            return steps;
        }
        Map<String, Object> p = JsonValues.object(value, at(where));
        switch (type(p)) {
            case "Sequence" -> {
                List<?> list = JsonValues.array(p.get("pretokenizers"), at(where + ".pretokenizers"));
                for (int i = 0; i < list.size(); i++) {
                    steps.addAll(preTokenizerSteps(list.get(i), where + ".pretokenizers[" + i + "]"));
                }
            }
            case "Split" -> {
                Map<String, Object> pattern = JsonValues.object(p.get("pattern"), at(where + ".pattern"));
                Object regex = pattern.get("Regex");
                if (!(regex instanceof String r) || !PreTokenizer.ACCEPTED_PATTERNS.contains(r)) {
                    throw refused(where + ".pattern", regex instanceof String r ? "the regex " + r
                            : "a " + String.join("/", pattern.keySet()) + " pattern", "the Llama-3 regex "
                            + PreTokenizer.LLAMA3_PATTERN);
                }
                Object behavior = p.get("behavior");
                if (!"Isolated".equals(behavior)) {
                    throw refused(where + ".behavior", String.valueOf(behavior), "Isolated");
                }
                if (Boolean.TRUE.equals(p.get("invert"))) {
                    throw refused(where + ".invert", "true", "false");
                }
                steps.add(new PreTokenizer.Split(PreTokenizer.compile(r)));
            }
            case "ByteLevel" -> {
                if (Boolean.TRUE.equals(p.get("add_prefix_space")) || !Boolean.FALSE.equals(p.get("use_regex"))) {
                    throw refused(where, "ByteLevel with add_prefix_space " + p.get("add_prefix_space")
                            + " and use_regex " + p.get("use_regex"), PRE_TOKENIZERS);
                }
                steps.add(new PreTokenizer.ByteLevel());
            }
            default -> throw refused(where, "the pre-tokenizer " + type(p), PRE_TOKENIZERS);
        }
        return steps;
    }

    private BpeModel model(Map<String, Object> m) {
        if (!"BPE".equals(m.get("type")) && m.get("type") != null) {
            throw refused("model", "a " + type(m) + " model", "BPE (Llama-2, Llama-3)");
        }
        Object dropout = m.get("dropout");
        if (dropout != null && JsonValues.realNumber(dropout, at("model.dropout")) != 0.0) {
            throw refused("model.dropout", String.valueOf(dropout), "none (null or 0)");
        }
        for (String key : List.of("continuing_subword_prefix", "end_of_word_suffix")) {
            Object v = m.get(key);
            if (v != null && !"".equals(v)) {
                throw refused("model." + key, "\"" + v + "\"", "none (null)");
            }
        }
        Map<String, Object> vocabJson = JsonValues.object(m.get("vocab"), at("model.vocab"));
        Map<String, Integer> vocab = new HashMap<>(vocabJson.size() * 2);
        vocabJson.forEach((token, id) -> vocab.put(token, id instanceof Integer i ? i
                : JsonValues.intNumber(id, at("model.vocab[\"" + token + "\"]"))));
        List<?> mergesJson = JsonValues.array(m.get("merges"), at("model.merges"));
        List<String[]> merges = new ArrayList<>(mergesJson.size());
        for (int i = 0; i < mergesJson.size(); i++) {
            merges.add(merge(mergesJson.get(i), i));
        }
        Object unk = m.get("unk_token");
        return new BpeModel(vocab, merges, flag(m, "ignore_merges", at("model")), flag(m, "byte_fallback",
                at("model")), flag(m, "fuse_unk", at("model")),
                unk == null ? null : JsonValues.string(unk, at("model.unk_token")), file);
    }

    private String[] merge(Object value, int index) {
        if (value instanceof String s) {
            String[] parts = s.split(" ", -1);
            if (parts.length == 2) {
                return parts;
            }
        } else if (value instanceof List<?> l && l.size() == 2 && l.get(0) instanceof String a
                && l.get(1) instanceof String b) {
            return new String[]{a, b};
        }
        throw new ModelFileException(at("model.merges[" + index + "]") + ": expected \"left right\" or [\"left\", \"right\"], found "
                + JsonValues.describe(value));
    }

    private PostProcessor postProcessor(Object value, String where, List<AddedToken> added, BpeModel model) {
        if (value == null) {
            return PostProcessor.NONE;
        }
        Map<String, Object> p = JsonValues.object(value, at(where));
        return switch (type(p)) {
            case "ByteLevel" -> PostProcessor.NONE;
            case "Sequence" -> {
                List<?> list = JsonValues.array(p.get("processors"), at(where + ".processors"));
                PostProcessor all = PostProcessor.NONE;
                for (int i = 0; i < list.size(); i++) {
                    all = all.then(postProcessor(list.get(i), where + ".processors[" + i + "]", added, model));
                }
                yield all;
            }
            case "TemplateProcessing" -> template(p, where);
            default -> throw refused(where, "the post-processor " + type(p), POST_PROCESSORS);
        };
    }

    private PostProcessor template(Map<String, Object> p, String where) {
        Map<String, Object> specials = JsonValues.object(p.get("special_tokens"), at(where + ".special_tokens"));
        List<?> single = JsonValues.array(p.get("single"), at(where + ".single"));
        IntList prefix = new IntList(2);
        IntList suffix = new IntList(2);
        boolean seenA = false;
        for (int i = 0; i < single.size(); i++) {
            String w = where + ".single[" + i + "]";
            Map<String, Object> piece = JsonValues.object(single.get(i), at(w));
            if (piece.get("Sequence") != null) {
                Object id = JsonValues.object(piece.get("Sequence"), at(w + ".Sequence")).get("id");
                if (!"A".equals(id) || seenA) {
                    throw refused(w, "the sequence " + id, "one sequence A in the single template");
                }
                seenA = true;
            } else if (piece.get("SpecialToken") != null) {
                String name = JsonValues.string(JsonValues.object(piece.get("SpecialToken"), at(w + ".SpecialToken"))
                        .get("id"), at(w + ".SpecialToken.id"));
                Object entry = specials.get(name);
                if (entry == null) {
                    throw new ModelFileException(at(w) + ": the special token \"" + name + "\" is not in "
                            + where + ".special_tokens");
                }
                List<?> ids = JsonValues.array(JsonValues.object(entry, at(where + ".special_tokens." + name))
                        .get("ids"), at(where + ".special_tokens." + name + ".ids"));
                for (Object id : ids) {
                    (seenA ? suffix : prefix).add(JsonValues.intNumber(id, at(where + ".special_tokens." + name)));
                }
            } else {
                throw refused(w, "a " + String.join("/", piece.keySet()) + " piece", "SpecialToken, Sequence");
            }
        }
        if (!seenA) {
            throw refused(where + ".single", "a template without the sequence A", "a template holding $A");
        }
        return new PostProcessor(prefix.toArray(), suffix.toArray());
    }

    private TokenDecoder decoder(Object value) {
        if (value == null) {
            throw refused("decoder", "missing", DECODERS);
        }
        Map<String, Object> d = JsonValues.object(value, at("decoder"));
        if ("ByteLevel".equals(type(d))) {
            return new TokenDecoder.ByteLevel();
        }
        boolean sequence = "Sequence".equals(type(d));
        List<?> chain = sequence
                ? JsonValues.array(d.get("decoders"), at("decoder.decoders")) : List.of(d);
        List<String> from = new ArrayList<>();
        List<String> to = new ArrayList<>();
        boolean byteFallback = false;
        boolean fuse = false;
        char strip = 0;
        int stripCount = 0;
        int stage = 0; // 0 replaces, 1 after ByteFallback, 2 after Fuse, 3 after Strip
        for (int i = 0; i < chain.size(); i++) {
            String where = !sequence ? "decoder" : "decoder.decoders[" + i + "]";
            Map<String, Object> step = JsonValues.object(chain.get(i), at(where));
            String t = type(step);
            int stepStage = switch (t) {
                case "Replace" -> 0;
                case "ByteFallback" -> 1;
                case "Fuse" -> 2;
                case "Strip" -> 3;
                default -> throw refused(where, "the decoder " + t, DECODERS);
            };
            if (stepStage < stage || (stepStage == stage && stepStage > 0)) {
                throw refused(where, t + " after the steps before it", DECODERS);
            }
            stage = stepStage;
            switch (t) {
                case "Replace" -> {
                    from.add(stringPattern(step, where));
                    to.add(JsonValues.string(step.get("content"), at(where + ".content")));
                }
                case "ByteFallback" -> byteFallback = true;
                case "Fuse" -> fuse = true;
                default -> {
                    String content = JsonValues.string(step.get("content"), at(where + ".content"));
                    int stop = JsonValues.intNumber(step.get("stop"), at(where + ".stop"));
                    stripCount = JsonValues.intNumber(step.get("start"), at(where + ".start"));
                    if (content.length() != 1 || stop != 0 || stripCount < 0 || (!fuse && stripCount > 0)) {
                        throw refused(where, "Strip of \"" + content + "\" start " + stripCount + " stop " + stop
                                + (fuse ? "" : " without Fuse before it"),
                                "Strip of one BMP character, start >= 0, stop 0, after Fuse");
                    }
                    strip = content.charAt(0);
                }
            }
        }
        return new TokenDecoder.Pieces(List.copyOf(from), List.copyOf(to), byteFallback, strip, stripCount);
    }
}
