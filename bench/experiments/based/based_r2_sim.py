#!/usr/bin/env python3
"""based_r2_sim.py - numpy model of based_r2_rsq.tk and based_r2_vt.tk (same roundings; a copy of based_1wg_sim.py):
the q features unscaled, bf16(q_b * q_a) (register A operands), the k features bf16(k_b * (k_a / 32))
(c^2 = 1/32 carried by the k side, exact power of two), den = ((64 c + rowsum(q x)) + rowsum(A_0) ..
+ rowsum(A_3)) (the earlier chunks' term first).
Was: numpy model of based_1wg_lean.tk and based_1wg_dbuf.tk (one consumer warpgroup,
two blocks per SM; both have the same arithmetic, only their schedules differ), step by step with their
bf16 roundings and fp32 orderings, against the fp64 quadratic form (bench/based.py's reference).
Differences from kernels.tk/based.tk's arithmetic (bench/based.py simulate): the feature scale as
fp32(q) * (w * c); Z = ((64 c + rowsum(A_0)) + rowsum(A_1) + rowsum(A_2) + rowsum(A_3)) + rowsum(q x)
(the earlier chunks' term last); the score pieces enter A v as bf16 register operands (the same bf16
values the shipped kernel writes into f). a1 and m are fp32 in registers instead of fp32 in shared
memory (the same values).   PYTHONPATH=/tmp/np python3 bench/experiments/based/based_1wg_sim.py
"""
import sys

import numpy as np

from sim_common import C, DK, DV, bf16, f32, run


def feat2(x, c):
    c = f32(c)
    return np.concatenate([bf16(x * (x[:, a:a + 1] * c)) for a in range(DK)], axis=1)


def kernel(q, k, v):
    q, k, v = (x.astype(f32) for x in (q, k, v))
    T = q.shape[0]
    nc = -(-T // C)
    pad = nc * C - T
    q, k, v = (np.concatenate([x, np.zeros((pad, x.shape[1]), f32)]) for x in (q, k, v))
    a2lo, a2hi = np.zeros((128, DV), f32), np.zeros((128, DV), f32)
    a1 = np.zeros((DV, 32), f32)          # v^T [k | 1 | 0], in registers
    m = np.zeros((64, DK), f32)           # [k | 1 | 0 ..]^T k, in registers
    one = np.zeros((C, 16), f32); one[:, 0] = 1
    rsel = np.where(np.arange(64)[:, None] < 16, f32(0.125), f32(0.25))
    r = np.arange(C)[:, None]
    o_all, z_all = np.zeros((nc * C, DV), f32), np.zeros(nc * C, f32)
    for c in range(nc):
        sl = slice(c * C, (c + 1) * C)
        qr, kr, vv = q[sl], k[sl], v[sl]
        kw = np.concatenate([kr, one], axis=1)                          # h rows 64 .. 127
        kx = np.concatenate([kr, one, np.zeros((C, 32), f32)], axis=1)  # g rows 256 .. 319
        qa = np.concatenate([bf16(qr * f32(0.25)), one], axis=1)        # h rows 0 .. 63
        a1s = bf16(a1)                                                  # h rows 128 .. 191
        a2s = np.concatenate([bf16(a2lo), bf16(a2hi)])                  # g rows 0 .. 255
        ms = bf16(m * rsel)
        kf = feat2(kr, 0.03125)
        a2lo = a2lo + kf[:, :128].T @ vv                                # fold chunk c (before the q side)
        a2hi = a2hi + kf[:, 128:].T @ vv
        a1 = a1 + vv.T @ kw
        m = m + kx.T @ kr
        qf = feat2(qr, 1.0)
        o = qf[:, :128] @ a2s[:128]
        o = o + qf[:, 128:] @ a2s[128:]
        o = o + qa @ a1s.T
        x = qa @ ms[0:32]
        den = f32(64 * c) + (qr * x).sum(axis=1, dtype=f32)
        for i in range(4):
            t = np.arange(16 * i, 16 * i + 16)[None, :]
            s = (qr @ kr[16 * i:16 * i + 16].T) * f32(0.25)
            A = np.where(t <= r, f32(1) + s + f32(0.5) * s * s, f32(0)).astype(f32)
            rA = A.sum(axis=1, dtype=f32)
            den = den + rA
            o = o + bf16(A) @ vv[16 * i:16 * i + 16]
        o_all[sl] = bf16(o * (f32(1) / den)[:, None])
        z_all[sl] = den
    return o_all[:T], z_all[:T]


def main():
    return run("based_r2_sim", [("r2_rsq", kernel)])


if __name__ == "__main__":
    sys.exit(main())
