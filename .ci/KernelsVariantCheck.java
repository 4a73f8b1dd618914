import dev.ar4j.internal.platform.NativeLibraries;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.jar.JarFile;

/**
 * Checks the choice of the kernels variant in a real JVM: run by .ci/run with the java source
 * launcher on the class path (ar4j-runtime, ar4j-bindings, ar4j-cuda jars), once per variant
 * forced with -Dar4j.kernels.variant and once unforced. It loads the kernels through the runtime's
 * loader, then checks that Ar4j.kernelsVariant() names the expected variant and its reason, and
 * that the file loaded is byte for byte that variant's library in the ar4j-cuda jar.
 *
 * <p>Arguments: the ar4j-cuda jar, the variant expected (cu13 or cu12), a phrase the reason must hold.
 */
public class KernelsVariantCheck {
    public static void main(String[] args) throws Exception {
        String jar = args[0];
        String expected = args[1];
        String phrase = args[2];
        int abi = dev.ar4j.Ar4j.kernelsAbiVersion();
        String reason = dev.ar4j.Ar4j.kernelsVariant().orElse("");
        require(reason.contains("loading " + expected + " ("), "the reason names " + expected + ": " + reason);
        require(reason.contains(phrase), "the reason holds '" + phrase + "': " + reason);
        Path loaded = NativeLibraries.loaded(NativeLibraries.Library.CUSTOM_ALL_REDUCE).orElseThrow().path();
        String entry = "META-INF/native/linux-x86_64/" + expected + "/libar4j_custom_ar.so";
        String inJar;
        try (JarFile file = new JarFile(jar); InputStream in = file.getInputStream(file.getJarEntry(entry))) {
            inJar = sha256(in.readAllBytes());
        }
        String onDisk = sha256(Files.readAllBytes(loaded));
        require(inJar.equals(onDisk), "the loaded " + loaded + " (" + onDisk + ") is the jar's " + entry + " (" + inJar + ")");
        System.out.println("kernels variant: " + expected + " loaded (ABI " + abi + ", " + loaded + "): " + reason);
    }

    private static String sha256(byte[] bytes) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    }

    private static void require(boolean ok, String what) {
        if (!ok) {
            System.err.println("kernels variant check failed: " + what);
            System.exit(1);
        }
    }
}
