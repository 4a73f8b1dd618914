package dev.ar4j.nccl;

/**
 * An NCCL release, major.minor.patch. NCCL encodes it as {@code major * 10000 + minor * 100 + patch}
 * since 2.9 and as {@code major * 1000 + minor * 100 + patch} before; {@link #fromCode} reads both.
 *
 * @param major the major number, >= 0
 * @param minor the minor number, 0 to 99
 * @param patch the patch number, 0 to 99
 */
public record NcclVersion(int major, int minor, int patch) implements Comparable<NcclVersion> {

    /**
     * Creates a version, checking its parts.
     *
     * @throws IllegalArgumentException if a part is negative, or minor or patch exceed 99
     */
    public NcclVersion {
        if (major < 0 || minor < 0 || patch < 0 || minor > 99 || patch > 99) {
            throw new IllegalArgumentException("an NCCL version is major.minor.patch with minor and patch in [0, 99], got "
                    + major + "." + minor + "." + patch);
        }
    }

    /**
     * The version an {@code ncclGetVersion} code names: 23007 is 2.30.7, the pre-2.9 code 2708 is 2.7.8.
     *
     * @param code a version code, >= 0, in either encoding
     * @return the version
     * @throws IllegalArgumentException if {@code code} is negative
     */
    public static NcclVersion fromCode(int code) {
        if (code < 0) {
            throw new IllegalArgumentException("an NCCL version code is >= 0, got " + code);
        }
        if (code >= 10000) {
            return new NcclVersion(code / 10000, (code % 10000) / 100, code % 100);
        }
        return new NcclVersion(code / 1000, (code % 1000) / 100, code % 100);
    }

    /**
     * The installed library's version ({@link Nccl#version()}).
     *
     * @return the loaded NCCL's version
     * @throws dev.ar4j.NativeLibraryException if libcudart or libnccl cannot be loaded
     */
    public static NcclVersion installed() {
        return fromCode(Nccl.version());
    }

    /**
     * The code in the encoding of NCCL 2.9 and later: {@code major * 10000 + minor * 100 + patch}.
     *
     * @return the code, e.g. 23007 for 2.30.7
     */
    public int code() {
        return major * 10000 + minor * 100 + patch;
    }

    /**
     * True if this version is {@code other} or newer.
     *
     * @param other the version to compare with
     * @return {@code true} if this version is equal to or newer than {@code other}
     */
    public boolean atLeast(NcclVersion other) {
        return compareTo(other) >= 0;
    }

    @Override
    public int compareTo(NcclVersion other) {
        return Integer.compare(code(), other.code());
    }

    @Override
    public String toString() {
        return major + "." + minor + "." + patch;
    }
}
