package dev.ar4j.examples.llama.text;

import dev.ar4j.examples.llama.model.ModelFileException;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;

/**
 * A model folder's Hugging Face tokenizer ({@code tokenizer.json}, {@code tokenizer_config.json}), in
 * plain Java, giving the same ids and text as Hugging Face's {@code tokenizers} for what it supports:
 * BPE models with Llama-3's byte-level pre-tokenization or Llama-2's SentencePiece-style normalization
 * and byte fallback, added and special tokens, {@code TemplateProcessing}. Any other component is
 * refused when loading, naming it and what is supported. Immutable and thread-safe.
 */
public final class Tokenizer {

    private final AddedTokenSplitter splitter;
    private final PreTokenizer preTokenizer;
    private final BpeModel model;
    private final PostProcessor postProcessor;
    private final TokenDecoder decoder;
    private final Map<Integer, String> addedById = new HashMap<>();
    private final Map<String, Integer> addedByContent = new HashMap<>();
    private final Set<String> specialContents = new HashSet<>();
    private final int vocabularySize;
    private final int bosId;
    private final int[] eosIds;

    private Tokenizer(TokenizerJson.Parts parts, Map<String, Object> tokenConfig, Path folder) {
        splitter = new AddedTokenSplitter(parts.addedTokens(), parts.normalizer());
        preTokenizer = parts.preTokenizer();
        model = parts.model();
        decoder = parts.decoder();
        int size = model.size();
        for (AddedToken t : parts.addedTokens()) {
            addedById.put(t.id(), t.content());
            addedByContent.put(t.content(), t.id());
            if (t.special()) {
                specialContents.add(t.content());
            }
            size = Math.max(size, t.id() + 1);
        }
        vocabularySize = size;
        TokenizerSettings settings = TokenizerSettings.read(folder, tokenConfig, this::idOrNull);
        bosId = settings.bosId();
        eosIds = settings.eosIds();
        postProcessor = llamaTemplate(tokenConfig, settings, parts.postProcessor(), folder);
    }

    /**
     * Transformers' {@code LlamaTokenizer(Fast)} builds its template from {@code add_bos_token} and
     * {@code add_eos_token} when the config gives them; every other tokenizer class keeps
     * {@code tokenizer.json}'s post-processor.
     */
    private static PostProcessor llamaTemplate(Map<String, Object> tokenConfig, TokenizerSettings s,
                                               PostProcessor fromJson, Path folder) {
        Object tokenizerClass = tokenConfig.get("tokenizer_class");
        boolean llama = "LlamaTokenizer".equals(tokenizerClass) || "LlamaTokenizerFast".equals(tokenizerClass);
        if (!llama || (s.addBos() == null && s.addEos() == null)) {
            return fromJson;
        }
        boolean addBos = Boolean.TRUE.equals(s.addBos());
        boolean addEos = Boolean.TRUE.equals(s.addEos());
        if ((addBos && s.bosId() < 0) || (addEos && s.eosTokenId() < 0)) {
            throw new ModelFileException(folder.resolve("tokenizer_config.json") + ": add_bos_token or "
                    + "add_eos_token is true but its token (bos_token, eos_token) is not given");
        }
        return new PostProcessor(addBos ? new int[]{s.bosId()} : new int[0],
                addEos ? new int[]{s.eosTokenId()} : new int[0]);
    }

    /**
     * Loads the tokenizer of a model folder: {@code tokenizer.json} (required), {@code tokenizer_config.json}
     * (BOS and EOS tokens, {@code add_bos_token}; optional), and for the end-of-sequence ids
     * {@code generation_config.json} and {@code config.json} if present.
     *
     * @param modelFolder the folder
     * @return the tokenizer
     * @throws ModelFileException if a file is missing, malformed, or uses a component not supported; the
     *                            message names the file, the component and what is supported
     */
    public static Tokenizer load(Path modelFolder) {
        Objects.requireNonNull(modelFolder, "modelFolder");
        Path folder = modelFolder.toAbsolutePath();
        Path json = folder.resolve("tokenizer.json");
        TokenizerJson.Parts parts = TokenizerJson.parse(JsonFiles.read(json), json.toString());
        Map<String, Object> config = JsonFiles.readIfPresent(folder.resolve("tokenizer_config.json"));
        return new Tokenizer(parts, config == null ? Map.of() : config, folder);
    }

    /**
     * The ids of a text.
     *
     * @param text             the text; added and special tokens written in it are recognized
     * @param addSpecialTokens whether to add what the template adds (Llama-2: BOS; Llama-3 files with a
     *                         {@code TemplateProcessing}: {@code <|begin_of_text|>})
     * @return the ids
     * @throws IllegalArgumentException if the text holds a lone surrogate (no UTF-8 text does: Hugging Face
     *                                  tokenizes Rust strings, which cannot hold one)
     */
    public int[] encode(String text, boolean addSpecialTokens) {
        Objects.requireNonNull(text, "text");
        checkNoLoneSurrogate(text);
        IntList ids = new IntList(text.length() / 3 + 4);
        for (AddedTokenSplitter.Piece piece : splitter.split(text)) {
            if (piece.id() >= 0) {
                ids.add(piece.id());
                continue;
            }
            for (String word : preTokenizer.words(piece.text())) {
                model.tokenize(word, ids);
            }
        }
        int[] out = ids.toArray();
        return addSpecialTokens ? postProcessor.apply(out) : out;
    }

    /**
     * The text of ids, as Hugging Face's {@code decode}: ids with no token are left out.
     *
     * @param ids               the ids
     * @param skipSpecialTokens whether special tokens (BOS, EOS, ...) are left out
     * @return the text
     */
    public String decode(int[] ids, boolean skipSpecialTokens) {
        List<String> tokens = new ArrayList<>(ids.length);
        for (int id : ids) {
            String token = tokenOrNull(id, skipSpecialTokens);
            if (token != null) {
                tokens.add(token);
            }
        }
        return decoder.decode(tokens);
    }

    /**
     * The number of ids: one more than the largest id of the vocabulary and the added tokens.
     *
     * @return the vocabulary size
     */
    public int vocabularySize() {
        return vocabularySize;
    }

    /**
     * The BOS token of {@code tokenizer_config.json}.
     *
     * @return its id, or empty if the config names none
     */
    public OptionalInt bosTokenId() {
        return bosId < 0 ? OptionalInt.empty() : OptionalInt.of(bosId);
    }

    /**
     * The ids that end generation: {@code generation_config.json}'s {@code eos_token_id} if it has one,
     * else {@code config.json}'s, else {@code tokenizer_config.json}'s {@code eos_token}.
     *
     * @return the ids, at least one
     */
    public int[] eosTokenIds() {
        return eosIds.clone();
    }

    /**
     * The id of a token of the vocabulary or the added tokens.
     *
     * @param token the token's text as the vocabulary writes it (e.g. {@code "<|eot_id|>"})
     * @return its id, or empty
     */
    public OptionalInt tokenId(String token) {
        Integer id = idOrNull(token);
        return id == null ? OptionalInt.empty() : OptionalInt.of(id);
    }

    /**
     * The token of an id as the vocabulary writes it.
     *
     * @param id the id
     * @return the token, or empty if no token has that id
     */
    public Optional<String> token(int id) {
        return Optional.ofNullable(tokenOrNull(id, false));
    }

    /**
     * A new stream that turns generated ids into text as it becomes complete, special tokens left out.
     *
     * @return the stream
     */
    public TextStream newTextStream() {
        return newTextStream(true);
    }

    /**
     * A new stream that turns generated ids into text as it becomes complete.
     *
     * @param skipSpecialTokens whether special tokens are left out
     * @return the stream
     */
    public TextStream newTextStream(boolean skipSpecialTokens) {
        return new TextStream(decoder.incremental(), id -> tokenOrNull(id, skipSpecialTokens));
    }

    private static void checkNoLoneSurrogate(String text) {
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                throw new IllegalArgumentException("the text holds a lone surrogate U+"
                        + Integer.toHexString(c).toUpperCase(java.util.Locale.ROOT) + " at index " + i
                        + "; only valid Unicode text (as any UTF-8 text decodes to) can be encoded");
            }
        }
    }

    private Integer idOrNull(String token) {
        Integer id = addedByContent.get(token);
        return id != null ? id : model.id(token);
    }

    private String tokenOrNull(int id, boolean skipSpecial) {
        String token = addedById.get(id);
        if (token == null) {
            token = model.token(id);
        }
        if (token == null || (skipSpecial && specialContents.contains(token))) {
            return null;
        }
        return token;
    }
}
