#!/usr/bin/env python3
"""EXPERIMENT (issue 17: attention without flags, few heads at long N): the attention() entry of
kernels.tk/attn_fwd.tk compiled as fixed variants (--no-dispatch), timed against each other at B * H <= 8,
N >= 8192 and checked against each other and fp32 attention on one head. Libraries from gen.sh:
LIB/d{D}_c{C}_{variant}.so, variants long (SHORT 0: D = 64 192-row query blocks), q128 (-D BQ=128),
short (SHORT 1), split (SPLIT = 1 / 2: the keys in runs where the query blocks fill at most half the SMs /
always). Each timing: CUDA events around 10 launches, median of alternated rounds.
    python3 bench/experiments/attn_few/few.py LIB [ROUNDS]
"""
import ctypes
import glob
import math
import os
import statistics
import sys

import torch

LIB = sys.argv[1]
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 7
P, LL = ctypes.c_void_p, ctypes.c_longlong
ARGT = [P] * 10 + [LL] * 4 + [ctypes.c_float, P]
SHAPES = [(1, 1, 8192), (1, 2, 8192), (1, 4, 8192), (1, 8, 8192), (1, 2, 16384), (1, 1, 32768), (2, 8, 8192), (4, 8, 4096)]


def load(path):
    f = ctypes.CDLL(path).tkc_attention
    f.restype, f.argtypes = ctypes.c_int, ARGT
    return f


def main():
    libs = {}
    for p in sorted(glob.glob(os.path.join(LIB, "d*_c*_*.so"))):
        d, c, v = os.path.basename(p)[:-3].split("_", 2)
        libs.setdefault((int(d[1:]), int(c[1:])), {})[v] = load(p)
    s = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    for (D, C), vs in sorted(libs.items()):
        for (B, H, N) in SHAPES:
            g = torch.Generator(device="cuda").manual_seed(N + H)
            q, k, v = (torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))
            scale = 1.0 / math.sqrt(D)
            outs = {}
            for name, f in vs.items():
                o = torch.full_like(q, float("nan"))
                lse = torch.full((B, H, N), float("nan"), device="cuda")
                argv = (q.data_ptr(), None, k.data_ptr(), None, v.data_ptr(), None, o.data_ptr(), None, lse.data_ptr(),
                        None, B, H, N, H, ctypes.c_float(scale), s)
                rc = f(*argv)
                torch.cuda.synchronize()
                outs[name] = (o, lse, argv, rc)
            # fp32 reference on the last head, 1024 query rows
            qq, kk, vv = q[-1, -1].float(), k[-1, -1].float(), v[-1, -1].float()
            r0 = N - 1024
            sc = (qq[r0:] @ kk.T) * scale
            if C:
                sc = sc.masked_fill(torch.arange(N, device="cuda")[None, :] > torch.arange(r0, N, device="cuda")[:, None], float("-inf"))
            ref = torch.softmax(sc, -1) @ vv
            errs = {}
            for name, (o, lse, argv, rc) in outs.items():
                e = ((o[-1, -1, r0:].float() - ref).norm() / ref.norm()).item() if rc == 0 else float("inf")
                errs[name] = (e, int(torch.isnan(o).sum().item()), rc)
            t = {n: [] for n in vs}
            names = list(vs)
            ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
            for r in range(ROUNDS):
                for name in (names if r % 2 == 0 else names[::-1]):
                    f, argv = vs[name], outs[name][2]
                    f(*argv)
                    ev[0].record()
                    for _ in range(10):
                        f(*argv)
                    ev[1].record()
                    torch.cuda.synchronize()
                    t[name].append(ev[0].elapsed_time(ev[1]) / 10)
            flop = 4 * B * H * N * N * D / (2 if C else 1)
            med = {n: statistics.median(x) for n, x in t.items()}
            best = min(med, key=med.get)
            row = "  ".join("%s %.3f ms %.0f TF/s%s" % (n, med[n], flop / med[n] / 1e9,
                            "" if errs[n][0] < 1e-2 and errs[n][1] == 0 and errs[n][2] == 0 else " BAD(%.1e,%d,%d)" % errs[n])
                            for n in names)
            print("D%d C%d B%d H%d N%d: %s  | best %s (long/best %.3f)" % (D, C, B, H, N, row, best,
                  med.get("long", med[best]) / med[best]), flush=True)


main()
