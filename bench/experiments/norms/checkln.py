#!/usr/bin/env python3
"""Checks the layernorm variants gen4.sh built (LIB/ln_VARIANT_DD.so) at p = 0 against an fp32
reference (Y and S), twice each, M = 65536: the largest error and the rows over 0.05.

    python3 bench/experiments/norms/checkln.py --lib .carry/nv
"""
import argparse
import ctypes
import glob
import os

import torch

P, LL = ctypes.c_void_p, ctypes.c_longlong


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default=".carry/nv")
    ap.add_argument("--m", type=int, default=65536)
    a = ap.parse_args()
    M = a.m
    for d in (1024, 2048, 4096, 8192):
        g = torch.Generator(device="cuda").manual_seed(d)
        x = torch.randn(M, d, device="cuda", dtype=torch.bfloat16, generator=g)
        r = torch.randn(M, d, device="cuda", dtype=torch.bfloat16, generator=g)
        w = torch.randn(d, device="cuda", generator=g)
        b = torch.randn(d, device="cuda", generator=g)
        s = x.float() + r.float()
        yref = torch.nn.functional.layer_norm(s, (d,), eps=1e-5) * w + b
        for f in sorted(glob.glob(os.path.join(a.lib, "ln_*_D%d.so" % d))):
            lib = ctypes.CDLL(f)
            res = []
            for rep in range(2):
                y = torch.full((M, d), float("nan"), device="cuda", dtype=torch.bfloat16)
                sm = torch.full((M, d), float("nan"), device="cuda", dtype=torch.bfloat16)
                args = []
                keep = []
                for t in (x, r, w, b, y, sm):
                    k = (LL * t.dim())(*t.stride())
                    keep.append(k)
                    args += [P(t.data_ptr()), k]
                args += [LL(M), ctypes.c_float(0.0), ctypes.c_int(1234), P(torch.cuda.current_stream().cuda_stream)]
                assert lib.tkc_layernorm(*args) == 0
                torch.cuda.synchronize()
                ey = (y.float() - yref).abs().nan_to_num(1e9)
                es = (sm.float() - s.bfloat16().float()).abs().nan_to_num(1e9)
                bad = int(((ey.amax(1) > 0.05) | (es.amax(1) > 0.05)).sum())
                res.append("max |dY| %.2e |dS| %.2e rows over 0.05: %d" % (ey.max().item(), es.max().item(), bad))
                if rep == 1:
                    same = torch.equal(y, y0) and torch.equal(sm, s0)
                y0, s0 = y.clone(), sm.clone()
            print("D%-5d %-10s %s; again: %s%s" % (d, os.path.basename(f).split("_")[1], res[0], res[1],
                                                   "" if same else " (runs differ)"), flush=True)


if __name__ == "__main__":
    main()
