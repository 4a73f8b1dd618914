package dev.ar4j.examples.llama.cli;

import picocli.CommandLine;

/**
 * {@code --version}: the example's version from its jar's manifest ({@code Implementation-Version}, which the
 * shaded {@code ar4j-llama.jar} carries), or why it is unknown, and the Java runtime.
 */
final class LlamaVersion implements CommandLine.IVersionProvider {

    @Override
    public String[] getVersion() {
        String v = LlamaVersion.class.getPackage().getImplementationVersion();
        return new String[] {"ar4j-llama " + (v != null ? v : "unknown (not from the ar4j-llama jar)"),
            "Java " + Runtime.version() + " (" + System.getProperty("java.home") + ")"};
    }
}
