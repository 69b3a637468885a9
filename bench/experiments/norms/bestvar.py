#!/usr/bin/env python3
"""Picks, per kernel and width, the fastest variant of an abnorms.py run and lays its library out as
a module directory bench/norms.py takes with --tkc-variant NAME=DIR, so that the winner is timed
against quack in the same process as the shipped kernel (bench/norms_tkc.py's modules):

    python3 bench/experiments/norms/bestvar.py --tkcnorms /tmp/tkcnorms --out /tmp/tkcbest \
        --ab rotary.txt=.carry/pend/nv6 --ab rowvalues.txt=.carry/pend/nv7

An abnorms.py line is `TITLE  VARIANT GBPS (RATIO)[ DIFFERS E]  ...`; a variant whose outputs differ
from the first variant's is never picked. Rotary picks per D by the geometric mean over both
layouts; layernorm by its p = 0.1 line. Prints what it picked.
"""
import argparse
import math
import os
import re
import shutil

ENTRY = re.compile(r"(\S+) (\d+) \(([\d.]+)\)( DIFFERS)?")
# abnorms title -> (module, library prefix in the variants' directory)
KINDS = {"layernorm": ("layernorm", "ln"), "rmsnorm": ("rmsnorm", "rms"), "rotary": ("rotary", "rot")}


def parse(path):
    """{(kernel, D): {variant: [GB/s of each line]}} of the lines that count"""
    got = {}
    for line in open(path):
        m = re.match(r"(layernorm|rmsnorm|rotary) D(\d+)( p=(\S+)| (bnhd|bhnd))?\s+(.*)", line)
        if not m or (m.group(1) == "layernorm" and m.group(4) != "0.1"):
            continue
        key = (m.group(1), int(m.group(2)))
        for v, gbps, _, differs in ENTRY.findall(m.group(6)):
            if not differs:
                got.setdefault(key, {}).setdefault(v, []).append(float(gbps))
    return got


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tkcnorms", required=True, help="bench/norms_tkc.py's output (the module files)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--ab", action="append", default=[], metavar="ABNORMS_OUTPUT=LIBDIR")
    a = ap.parse_args()
    for ab in a.ab:
        txt, _, lib = ab.partition("=")
        if not os.path.exists(txt):
            print("bestvar: no %s" % txt)
            continue
        for (kern, d), vs in sorted(parse(txt).items()):
            full = {v: g for v, g in vs.items() if len(g) == max(len(x) for x in vs.values())}
            best = max(full, key=lambda v: math.exp(sum(math.log(x) for x in full[v]) / len(full[v])))
            mod, pre = KINDS[kern]
            so = os.path.join(lib, "%s_%s_D%d.so" % (pre, best, d))
            dst = os.path.join(a.out, mod)
            os.makedirs(dst, exist_ok=True)
            shutil.copy(os.path.join(a.tkcnorms, mod, mod + ".py"), dst)
            names = ["%s_D%d.so" % (mod, d)] + (["%s_p0_D%d.so" % (mod, d)] if kern == "layernorm" else [])
            for n in names:
                shutil.copy(so, os.path.join(dst, n))
            print("bestvar: %s D%d -> %s (%s)" % (kern, d, best, "  ".join(
                "%s %.0f" % (v, sum(g) / len(g)) for v, g in sorted(full.items()))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
