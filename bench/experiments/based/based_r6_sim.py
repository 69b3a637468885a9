#!/usr/bin/env python3
"""based_r6_sim.py - numpy model of based_r6_order.tk, based_r6_gh.tk and based_r6_gh3.tk (the same values; built on
based_r3_sim.py's packed features with the reversal, and based_r4_sim.py's 32-key score halves). What differs from
based_r5_halves.tk's arithmetic:
  - the scores come from h = bf16(q / 4) (or its copy in g): s = (q / 4) k^T. Scaling bf16 q by 1/4 is exact (a power
    of two, no underflow for bf16 inputs above 2^-124) and so is every fp32 partial sum of the product, so s is the
    value r5 gets as (q k^T) * 0.25; the model computes it both ways and checks they agree bit for bit.
  - A = s (1 + s / 2) + 1 as two FMAs (fma(s, fma(0.5, s, 1), 1)) instead of (1 + s) + (s / 2) s: the same real
    number, a different fp32 rounding (an ulp or so). FMA is modelled in fp64 (the product of two fp32 values is
    exact there) then rounded to fp32.
  - the A v operands are bf16(A) packed once (the same bf16 values r5 gets: r5 rounded then packed the rounded value).
  Everything else (features, states, g, ms, den's order: 64 c + rowsum(q x), then + rowsum(A_0:32), + rowsum(A_32:64))
  is r5_halves' as modelled by based_r4_sim.py with piece = 32 and based_r3_sim.py's feature map.
  PYTHONPATH=/tmp/np python3 bench/experiments/based/based_r6_sim.py
"""
import json
import sys

import numpy as np

from sim_common import C, DK, DV, bf16, f32, run
from based_r3_sim import feat2, check_packing


def fma32(a, b, c):
    return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(f32)


def kernel(q, k, v, r6=True):
    q, k, v = (x.astype(f32) for x in (q, k, v))
    T = q.shape[0]
    nc = -(-T // C)
    pad = nc * C - T
    q, k, v = (np.concatenate([x, np.zeros((pad, x.shape[1]), f32)]) for x in (q, k, v))
    a2 = np.zeros((144, DV), f32)
    a1 = np.zeros((DV, 32), f32)
    m = np.zeros((64, DK), f32)
    one = np.zeros((C, 16), f32); one[:, 0] = 1
    rsel = np.where(np.arange(64)[:, None] < 16, f32(0.125), f32(0.25))
    r = np.arange(C)[:, None]
    o_all, z_all = np.zeros((nc * C, DV), f32), np.zeros(nc * C, f32)
    for c in range(nc):
        sl = slice(c * C, (c + 1) * C)
        qr, kr, vv = q[sl], k[sl], v[sl]
        kw = np.concatenate([kr, one], axis=1)
        kx = np.concatenate([kr, one, np.zeros((C, 32), f32)], axis=1)
        q4 = bf16(qr * f32(0.25))
        qa = np.concatenate([q4, one], axis=1)
        a1s = bf16(a1)
        a2s = bf16(a2)
        ms = bf16(m * rsel)
        kf = feat2(kr, 0.0625, 0.03125, True)
        qf = feat2(qr, 1.0, 1.0, False)
        o = qf @ a2s
        o = o + qa @ a1s.T
        x = qa @ ms[0:32]
        den = f32(64 * c) + (qr * x).sum(axis=1, dtype=f32)
        for i in range(2):
            t = np.arange(32 * i, 32 * i + 32)[None, :]
            kk = kr[32 * i:32 * i + 32]
            if r6:
                s = (q4 @ kk.T).astype(f32)
                s_r5 = (qr @ kk.T).astype(f32) * f32(0.25)
                assert np.array_equal(s, s_r5), "q / 4 scores differ from (q k^T) / 4"
                A = fma32(s, fma32(np.full_like(s, 0.5), s, np.ones_like(s)), np.ones_like(s))
            else:
                s = (qr @ kk.T).astype(f32) * f32(0.25)
                A = fma32(f32(0.5) * s, s, f32(1) + s)
            A = np.where(t <= r, A, f32(0)).astype(f32)
            den = den + A.sum(axis=1, dtype=f32)
            for h in range(2):
                o = o + bf16(A[:, 16 * h:16 * h + 16]) @ vv[32 * i + 16 * h:32 * i + 16 * h + 16]
        a2 = a2 + kf.T @ vv                   # the fold after the q side (its value is read only by the next chunk)
        a1 = a1 + vv.T @ kw
        m = m + kx.T @ kr
        o_all[sl] = bf16(o * (f32(1) / den)[:, None])
        z_all[sl] = den
    return o_all[:T], z_all[:T]


def main():
    if not check_packing():
        print("based_r6_sim: packing FAILED")
        return 1
    return run("based_r6_sim", [("r5_halves", lambda q, k, v: kernel(q, k, v, False)), ("r6", kernel)])


if __name__ == "__main__":
    sys.exit(main())
