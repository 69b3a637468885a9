#!/usr/bin/env python3
"""based_2wg_sim.py - numpy model of the two-warpgroup Based variants in this folder, step by step
with their bf16 roundings and fp32 orderings, against the fp64 quadratic form (bench/based.py's
reference): based_ksplit.tk, based_ksbal.tk (the 256 order-2 features split over the warpgroups,
o = (qf_1 a2s_1 + qw a1s^T + bf16(A) v) + qf_0 a2s_0), based_2wg.tk (the 64 value columns split:
per column half o = qf a2s + qw a1s + bf16(A) v). Differences from kernels.tk/based.tk's arithmetic
(bench/based.py simulate): the feature scale as fp32(q) * (w * c), A and its row sum over the 64 keys
at once, and the summation orders above.   python3 bench/experiments/based/based_2wg_sim.py
"""
import sys

import numpy as np

from sim_common import C, CF, DK, DV, bf16, f32, run


def feat2(x):
    c = f32(CF)
    return np.concatenate([bf16(x * (x[:, a:a + 1] * c)) for a in range(DK)], axis=1)


def kernel(q, k, v, variant):
    q, k, v = (x.astype(f32) for x in (q, k, v))
    T = q.shape[0]
    nc = -(-T // C)
    pad = nc * C - T
    q, k, v = (np.concatenate([x, np.zeros((pad, x.shape[1]), f32)]) for x in (q, k, v))
    a2 = np.zeros((256, DV), f32)
    a1 = np.zeros((DV, 32), f32)          # v^T [k | 1 | 0]  (based_2wg keeps its transpose: same values)
    m = np.zeros((64, DK), f32)
    one = np.zeros((C, 16), f32); one[:, 0] = 1
    rsel = np.where(np.arange(64)[:, None] < 16, f32(0.125), f32(0.25))
    r, t = np.arange(C)[:, None], np.arange(C)[None, :]
    o_all, z_all = np.zeros((nc * C, DV), f32), np.zeros(nc * C, f32)
    for c in range(nc):
        sl = slice(c * C, (c + 1) * C)
        qr, kr, vv = q[sl], k[sl], v[sl]
        kw = np.concatenate([kr, one], axis=1)
        kx = np.concatenate([kr, one, np.zeros((C, 32), f32)], axis=1)
        qa = np.concatenate([bf16(qr * f32(0.25)), one], axis=1)
        a2s, a1s, ms = bf16(a2), bf16(a1), bf16(m * rsel)
        qf, kf = feat2(qr), feat2(kr)
        s = (qr @ kr.T) * f32(0.25)
        A = np.where(t <= r, f32(1) + s + f32(0.5) * s * s, f32(0)).astype(f32)
        rA = A.sum(axis=1, dtype=f32)
        x = qa @ ms[0:32]
        rq = (qr * x).sum(axis=1, dtype=f32)
        p = bf16(A)
        if variant in ("ksplit", "ksbal"):
            o0 = qf[:, :128] @ a2s[:128]
            o1 = qf[:, 128:] @ a2s[128:]
            o1 = o1 + qa @ a1s.T
            o1 = o1 + p @ vv
            o = o1 + o0
            den = (f32(64 * c) + rA) + rq if variant == "ksplit" else rq + (f32(64 * c) + rA)
            a2 = np.concatenate([a2[:128] + kf[:, :128].T @ vv, a2[128:] + kf[:, 128:].T @ vv])
        else:   # 2wg: per 32-column half, the shipped order with A v at once
            o = np.concatenate([(qf @ a2s[:, h] + qa @ a1s.T[:, h]) + p @ vv[:, h]
                                for h in (slice(0, 32), slice(32, 64))], axis=1)
            den = (f32(64 * c) + rq) + rA
            a2 = a2 + kf.T @ vv
        a1 = a1 + vv.T @ kw
        m = m + kx.T @ kr
        o_all[sl] = bf16(o * (f32(1) / den)[:, None])
        z_all[sl] = den
    return o_all[:T], z_all[:T]


def main():
    return run("based_2wg_sim", [(v, lambda q, k, v_, v0=v: kernel(q, k, v_, v0)) for v in ("ksplit", "ksbal", "2wg")],
               variants_outer=True)


if __name__ == "__main__":
    sys.exit(main())
