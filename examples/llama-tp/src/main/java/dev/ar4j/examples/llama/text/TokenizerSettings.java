package dev.ar4j.examples.llama.text;

import dev.ar4j.examples.llama.model.JsonValues;
import dev.ar4j.examples.llama.model.ModelFileException;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * What the model folder says about special tokens besides {@code tokenizer.json}: the BOS and EOS
 * tokens and {@code add_bos_token} / {@code add_eos_token} of {@code tokenizer_config.json}, and the
 * end-of-sequence ids of {@code generation_config.json} or {@code config.json}.
 *
 * @param bosId       the BOS token's id, or -1
 * @param eosIds      the ids that end generation
 * @param addBos      {@code add_bos_token}, or {@code null} if not given
 * @param addEos      {@code add_eos_token}, or {@code null} if not given
 * @param eosTokenId  {@code tokenizer_config.json}'s EOS token's id, or -1
 */
record TokenizerSettings(int bosId, int[] eosIds, Boolean addBos, Boolean addEos, int eosTokenId) {

    /**
     * Reads the settings.
     *
     * @param folder      the model folder
     * @param tokenConfig {@code tokenizer_config.json}'s object (required by the caller)
     * @param idOf        a token's id, or {@code null} if it has none
     */
    static TokenizerSettings read(Path folder, Map<String, Object> tokenConfig, Function<String, Integer> idOf) {
        String configFile = folder.resolve("tokenizer_config.json").toString();
        int bos = tokenId(tokenConfig.get("bos_token"), configFile + ": bos_token", idOf);
        int eos = tokenId(tokenConfig.get("eos_token"), configFile + ": eos_token", idOf);
        Boolean addBos = optionalBool(tokenConfig.get("add_bos_token"), configFile + ": add_bos_token");
        Boolean addEos = optionalBool(tokenConfig.get("add_eos_token"), configFile + ": add_eos_token");
        int[] eosIds = eosIds(folder, eos, configFile);
        return new TokenizerSettings(bos, eosIds, addBos, addEos, eos);
    }

    /**
     * The end-of-sequence ids: {@code generation_config.json}'s {@code eos_token_id} if the file gives one,
     * else {@code config.json}'s, else the EOS token of {@code tokenizer_config.json}; each an int or a list.
     */
    static int[] eosIds(Path folder, int tokenizerEos, String tokenizerConfigFile) {
        for (String name : List.of("generation_config.json", "config.json")) {
            Path file = folder.resolve(name);
            Map<String, Object> json = JsonFiles.readIfPresent(file);
            if (json != null && json.get("eos_token_id") != null) {
                return ids(json.get("eos_token_id"), file + ": eos_token_id");
            }
        }
        if (tokenizerEos < 0) {
            throw new ModelFileException(folder + ": no end-of-sequence token: neither generation_config.json nor "
                    + "config.json has eos_token_id, and " + tokenizerConfigFile + " has no eos_token");
        }
        return new int[]{tokenizerEos};
    }

    private static int[] ids(Object value, String where) {
        if (value instanceof List<?> list) {
            if (list.isEmpty()) {
                throw new ModelFileException(where + ": an empty list; expected an id or a list of ids");
            }
            int[] ids = new int[list.size()];
            for (int i = 0; i < ids.length; i++) {
                ids[i] = nonNegative(JsonValues.intNumber(list.get(i), where + "[" + i + "]"), where);
            }
            return ids;
        }
        return new int[]{nonNegative(JsonValues.intNumber(value, where), where)};
    }

    private static int nonNegative(int id, String where) {
        if (id < 0) {
            throw new ModelFileException(where + ": the id " + id + " is negative");
        }
        return id;
    }

    private static Boolean optionalBool(Object value, String where) {
        return value == null ? null : JsonValues.bool(value, where);
    }

    /** A token given as a string or as an added-token object with {@code content}; -1 if absent. */
    private static int tokenId(Object value, String where, Function<String, Integer> idOf) {
        if (value == null) {
            return -1;
        }
        String content = value instanceof Map<?, ?> m
                ? JsonValues.string(m.get("content"), where + ".content")
                : JsonValues.string(value, where);
        Integer id = idOf.apply(content);
        if (id == null) {
            throw new ModelFileException(where + ": the token \"" + content + "\" is not in tokenizer.json's "
                    + "vocabulary or added tokens");
        }
        return id;
    }
}
