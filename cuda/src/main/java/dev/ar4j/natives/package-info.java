/**
 * Where the native libraries bundled in the {@code ar4j-cuda} jar are: {@link
 * dev.ar4j.natives.BundledLibraries}. The runtime's loader ({@code dev.ar4j.runtime}) extracts
 * and loads them; applications do not call this package.
 */
package dev.ar4j.natives;
