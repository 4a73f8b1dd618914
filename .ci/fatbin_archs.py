#!/usr/bin/env python3
"""Lists the GPU code in a shared library's .nv_fatbin section, without the CUDA toolkit.

  fatbin_archs.py LIB.so                         prints each fatbin's entries: sm_90 (machine code), compute_90 (PTX)
  fatbin_archs.py LIB.so --expect SET --units N  also fails (exit 1) unless exactly N fatbins hold exactly
                                                 SET (comma-separated, e.g. sm_80,sm_90,compute_90)

The section holds one fatbin per translation unit with device code; each is a header
(magic 0xBA55ED50, u16 version, u16 header size, u64 size of the entries) followed by entries,
each with its own header: u16 kind (1 PTX, 2 ELF machine code), u16, u32 header size,
u64 payload size, ..., u32 architecture at offset 28 (e.g. 90). N is the number of translation
units with kernels: each must hold the whole set. Other fatbins (the static CUDA runtime brings
one of its own, sm_52 in CUDA 12.4) are listed and not checked.
"""
import struct
import sys

FATBIN_MAGIC = 0xBA55ED50
KINDS = {1: "compute", 2: "sm"}


def section(data, name):
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise SystemExit(f"not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_offset = headers[shstrndx][4]
    for h in headers:
        start = names_offset + h[0]
        if data[start:data.index(b"\0", start)].decode() == name:
            return data[h[4]:h[4] + h[5]]
    return None


def fatbins(blob):
    """Yields, per fatbin in the section, the list of its entries' names."""
    pos = 0
    while pos + 16 <= len(blob):
        magic, version, header_size, size = struct.unpack_from("<IHHQ", blob, pos)
        if magic != FATBIN_MAGIC:
            pos += 8  # padding between fatbins (8-byte aligned)
            continue
        entries = []
        entry = pos + header_size
        end = entry + size
        while entry < end:
            kind, _, entry_header, payload = struct.unpack_from("<HHIQ", blob, entry)
            arch, = struct.unpack_from("<I", blob, entry + 28)
            if kind not in KINDS or entry_header == 0:
                raise SystemExit(f"unexpected fatbin entry kind {kind} at section offset {entry}")
            entries.append(f"{KINDS[kind]}_{arch}")
            entry += entry_header + payload
        yield entries
        pos = end


def main(argv):
    if len(argv) not in (2, 6) or (len(argv) == 6 and (argv[2], argv[4]) != ("--expect", "--units")):
        raise SystemExit(__doc__)
    with open(argv[1], "rb") as f:
        data = f.read()
    blob = section(data, ".nv_fatbin")
    if blob is None:
        print(f"fatbin: {argv[1]} has no .nv_fatbin section (no GPU code)", file=sys.stderr)
        return 1
    found = list(fatbins(blob))
    if not found:
        print(f"fatbin: {argv[1]}: no fatbin in .nv_fatbin", file=sys.stderr)
        return 1
    for i, entries in enumerate(found):
        print(f"fatbin {i}: {' '.join(sorted(set(entries)))}")
    if len(argv) == 6:
        expected = set(argv[3].split(","))
        units = int(argv[5])
        matching = [i for i, entries in enumerate(found) if set(entries) == expected]
        if len(matching) != units:
            print(f"fatbin: {argv[1]}: {len(matching)} fatbins hold exactly {sorted(expected)}, expected {units}"
                  f" (one per kernel unit); see the list above", file=sys.stderr)
            return 1
        print(f"fatbin: {units} fatbins hold exactly {','.join(sorted(expected))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
