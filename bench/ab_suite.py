#!/usr/bin/env python3
"""ab_suite.py - same-run A/B of two tkc builds of the suite's Based, Hedgehog, Mamba-2 and FFT
convolution kernels (ab.py does GEMM and attention forward; experiments/norms/abnorms.py the
memory-bound ones).
    python3 bench/ab_suite.py build --old OLD_TKC --new NEW_TKC --out .carry/abs   # nvcc, no GPU
    python3 bench/ab_suite.py run --lib .carry/abs [--rounds 7] [--only based,hedgehog,mamba2,fftconv]
`build` runs each kernel's own `build` (bench/based.py, hedgehog.py, mamba2.py, fftconv.py) once
with each tkc into OUT/old/KERNEL and OUT/new/KERNEL. `run` times old against new on one shape per
variant, in rounds that alternate the order (old first in even rounds), each a CUDA graph of 10
launches; the row gives the median times and old_ms / new_ms (above 1: new is faster). The two
outputs are compared too: they must be bit-identical where only barriers and fences differ.
"""
import argparse
import ctypes
import importlib.util
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = ("based", "hedgehog", "mamba2", "fftconv")


def _tk_baselines():
    spec = importlib.util.spec_from_file_location("tkc_bench_tk_baselines", os.path.join(HERE, "tk_baselines.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


TKB = _tk_baselines()      # its bench_module (a kernel's script by path) and time_alternated


def build(args):
    for side, tkc in (("old", args.old), ("new", args.new)):
        for k in KERNELS:
            out = os.path.join(args.out, side, k)
            subprocess.run([sys.executable, os.path.join(HERE, k + ".py"), "build", "--tkc", tkc, "--out", out],
                           check=True)
    return 0


def libs(args, k):
    """{variant: (old fn, new fn)} from the two manifests"""
    r = {}
    for side in ("old", "new"):
        d = os.path.join(args.lib, side, k)
        man = json.load(open(os.path.join(d, "manifest.json")))
        for v in man.get("variants", [dict(man, name=k)]):   # hedgehog's manifest is its one variant
            fn = getattr(ctypes.CDLL(os.path.join(d, v["lib"])), "tkc_" + k)
            fn.restype = ctypes.c_int
            r.setdefault(v["name"], {})[side] = (fn, v)
    return r


def cases(torch, k, v, fn):
    """(a launch of fn on the timing shape, the outputs to compare) for kernel k's variant v"""
    keep = []
    stream = lambda: torch.cuda.current_stream().cuda_stream
    if k == "based":
        based = TKB.bench_module("based")
        Q, K, V = based.make_inputs(torch, 16, 16, 4096, 1)
        O = torch.empty(16, 16, 4096, based.DV, device="cuda", dtype=torch.bfloat16)
        Z = torch.empty(16, 16, 4096, device="cuda")
        return (lambda: based.call(fn, Q, K, V, O, Z, stream(), keep)), (O, Z)
    if k == "hedgehog":
        hedgehog = TKB.bench_module("hedgehog")
        B, H, T, D, F = 16, 16, 4096, hedgehog.D, hedgehog.F
        g = torch.Generator(device="cuda").manual_seed(1)
        Q, K, V = (torch.randn((B, H, T, D), device="cuda", generator=g).bfloat16() for _ in range(3))
        W2 = torch.randn((H, D, 2 * F), device="cuda", generator=g).bfloat16()
        A, Bt = torch.rand(H, device="cuda", generator=g), torch.rand(H, device="cuda", generator=g)
        O = torch.empty_like(Q)
        KV, KS = torch.empty((B, H, 2 * F, D), device="cuda"), torch.empty((B, H, 2 * F), device="cuda")
        return (lambda: hedgehog.call(fn, Q, K, V, W2, W2, A, Bt, O, KV, KS, stream(), keep)), (O, KV, KS)
    if k == "mamba2":
        mamba2 = TKB.bench_module("mamba2")
        m = mamba2.make_inputs(torch, 16, 32, 4096, v["NS"], 1)
        Y = torch.empty_like(m["X"])
        return (lambda: mamba2.call(fn, m["X"], m["Aa"], m["Cm"], m["Bm"], Y, stream(), keep)), (Y,)
    if k == "fftconv":
        import math
        fftconv = TKB.bench_module("fftconv")
        N, B, D = v["N"], 16, 1024
        _, G, _ = fftconv.shape(N)
        g = torch.Generator(device="cuda").manual_seed(1)
        u = torch.randn(B, D, N, device="cuda", generator=g).bfloat16()
        kk = (torch.randn(D, N, device="cuda", generator=g) / math.sqrt(N)).bfloat16()
        cst, Kf = fftconv.device_constants(torch, N, kk)
        U = u.view(B, D // G, 64, 64)
        Y = torch.empty(B, D // G, 64, 64, device="cuda", dtype=torch.bfloat16)

        def run():
            if fftconv.call(fn, U, cst, Kf, Y, N, stream(), keep):
                raise RuntimeError("tkc_fftconv failed")
        return run, (Y,)
    raise SystemExit("unknown kernel " + k)


def run(args):
    import torch
    only = args.only.split(",") if args.only else KERNELS
    rows = []
    for k in only:
        for name, sides in sorted(libs(args, k).items()):
            if set(sides) != {"old", "new"}:
                print("%s: only in %s" % (name, ",".join(sides)))
                continue
            impls, outs = {}, {}
            for side in ("old", "new"):
                fn, v = sides[side]
                impls[side], outs[side] = cases(torch, k, v, fn)
            ms = TKB.time_alternated(torch, impls, args.rounds)   # CUDA graphs of 10 launches each
            same = all(torch.equal(a, b) for a, b in zip(outs["old"], outs["new"]))
            mo, mn = ms["old"], ms["new"]
            row = dict(kernel=k, variant=name, old_ms=mo, new_ms=mn, speed=mo / mn, identical=same)
            rows.append(row)
            print("%-9s %-22s old %8.4f ms  new %8.4f ms  old/new %.3f  outputs %s" % (
                k, name, mo, mn, mo / mn, "identical" if same else "DIFFER"), flush=True)
            del impls, outs
            torch.cuda.empty_cache()
    if args.out:
        with open(args.out, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    return 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--old", required=True)
    b.add_argument("--new", required=True)
    b.add_argument("--out", required=True)
    r = sub.add_parser("run")
    r.add_argument("--lib", required=True)
    r.add_argument("--rounds", type=int, default=7)
    r.add_argument("--only", default="")
    r.add_argument("--out", default="")
    a = ap.parse_args()
    return build(a) if a.cmd == "build" else run(a)


if __name__ == "__main__":
    sys.exit(main())
