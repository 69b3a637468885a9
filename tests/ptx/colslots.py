#!/usr/bin/env python3
"""colslots.py TKC NVCC SRCDIR WORKDIR: compiles tests/ptx/colslot.tk at several tile widths with
tkc and nvcc -ptx and checks the PTX: every bf16 pair the finish packs (cvt.rn.bf16x2.f32 of
acc * 0 + b) adds, to its even and its odd column, the per_col slots 2g and 2g + 1 of one column
group g, as the fragment layout says (src/emit_elem.c, colslot). Slots are numbered by the order of
the vector's loads (cvt.f32.bf16 of each loaded element, slot 0 first). Exit 0 when every pack is
right, 1 otherwise (the packs that are not), 77 when nvcc is missing."""
import os, re, shutil, subprocess, sys

tkc, nvcc, src, work = sys.argv[1:5]
if not nvcc or not shutil.which(nvcc):
    print("SKIP: no nvcc")
    sys.exit(77)
os.makedirs(work, exist_ok=True)
bad = 0
for bn in (64, 128, 192, 256):
    cu, ptx = os.path.join(work, f"colslot{bn}.cu"), os.path.join(work, f"colslot{bn}.ptx")
    subprocess.run([tkc, os.path.join(src, "tests", "ptx", "colslot.tk"), "-D", f"BN={bn}", "-o", cu], check=True)
    subprocess.run([nvcc, "-O3", "-std=c++17", "-arch=sm_90a", "-ptx", cu, "-o", ptx], check=True)
    s = open(ptx).read()
    slot = {}
    for m in re.finditer(r"cvt\.f32\.bf16 (%f\d+), %rs\d+", s):
        slot.setdefault(m.group(1), len(slot))
    fma = {d: b for d, b in re.findall(r"fma\.rn\.f32\s+(%f\d+), %f\d+, 0f00000000, (%f\d+);", s)}
    packs = re.findall(r"cvt\.rn\.bf16x2\.f32 %r\d+, (%f\d+), (%f\d+);", s)  # hi, lo
    wrong = []
    for n, (hi, lo) in enumerate(packs):
        a, b = slot.get(fma.get(lo)), slot.get(fma.get(hi))
        if a is None or b is None or a % 2 or b != a + 1:
            wrong.append(f"pack {n}: slots ({a}, {b})")
    want = bn // 4  # slots a thread holds
    if len(slot) != want or not packs:
        wrong.append(f"{len(slot)} loaded slots (want {want}), {len(packs)} packs")
    print(f"BN={bn}: {len(packs)} packs, {len(slot)} slots: " + ("ok" if not wrong else "WRONG: " + "; ".join(wrong[:6])))
    bad += bool(wrong)
sys.exit(1 if bad else 0)
