#!/usr/bin/env python3
"""same_code.py - do two tkc builds give the same machine code? (no GPU needed: nvcc only)

    python3 bench/same_code.py OLD_TKC NEW_TKC [VARIANT ...]

For each harness variant (default: gemm and the attention defaults, D = 64, causal, SHORT = 1),
both tkc builds generate the CUDA, nvcc compiles each to a cubin for sm_90a under the same file
name, and the kernels' .text sections (the SASS) are compared byte for byte. A change that only
touches comments, names or how the emitter spells its arithmetic gives 'identical', and then a
timing of the old code stands for the new. Exits 1 if any variant differs."""
import os
import re
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import tkc_command  # noqa: E402

DEFAULT = ["gemm", "attn_d128", "attn_d128_causal", "attn_d64", "attn_d64_causal", "attn_d128_short",
           "attn_d64_causal_short"]


def text_sections(path):
    d = open(path, "rb").read()
    shoff = struct.unpack_from("<Q", d, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", d, 0x3A)
    secs = []
    for i in range(shnum):
        name, _typ, _flags, _addr, off, size = struct.unpack_from("<IIQQQQ", d, shoff + i * shentsize)
        secs.append((name, off, size))
    strtab = secs[shstrndx][1]

    def nm(n):
        s = d[strtab + n:]
        # the anonymous namespace's hash follows the file's contents: leave it out
        return re.sub(r"__N__[0-9a-f]+_", "__N__X_", s[:s.index(b"\0")].decode())

    return {nm(n): d[o:o + s] for n, o, s in secs if nm(n).startswith(".text")}


def cubin(tkc, variant, tmp, tag):
    d = os.path.join(tmp, tag, variant)
    os.makedirs(d, exist_ok=True)
    cu = os.path.join(d, "k.cu")
    subprocess.run(tkc_command(tkc, variant, "-o", cu), check=True)
    subprocess.run(["nvcc", "-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-cubin", "-o", "k.cubin", "k.cu"],
                   cwd=d, check=True)
    return text_sections(os.path.join(d, "k.cubin"))


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    old, new = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    variants = sys.argv[3:] or DEFAULT
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for v in variants:
            a, b = cubin(old, v, tmp, "old"), cubin(new, v, tmp, "new")
            same = a.keys() == b.keys() and all(a[k] == b[k] for k in a)
            bad += not same
            print(f"{v:24s} {'identical' if same else 'DIFFERENT'} ({sum(len(x) for x in b.values())} bytes of SASS)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
