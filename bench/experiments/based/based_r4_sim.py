#!/usr/bin/env python3
"""based_r4_sim.py - numpy model of based_r4_shift.tk (piece = 16) and based_r4_halves.tk (piece = 32: the scores and
rowsum(A) 32 keys at a time; the A v operands are the same bf16 values) (a copy of based_r3_sim.py): the lower
part of packed block a (column c <= a) is the pair (c + 8, a + 8) = xs_c x_{a+8}, xs = x shifted 8 columns left
(zeros past column 16, as TMA's overhang reads them: never selected), instead of the reversal's (15 - a, 15 - c);
the same 136 distinct pairs plus the diagonals 8 .. 15 at c = a (weight 2 / 32), block 8 unchanged.
Was: based_r3_sim.py - numpy model of based_r3_sym.tk and based_r3_fold.tk (the same values; a copy of based_r2_sim.py):
the order-2 features use the symmetry q_a q_b k_a k_b = q_b q_a k_b k_a: 8 packed blocks of 16 columns,
block a (0 .. 7) column c > a the pair (a, c), c < a the pair (15 - a, 15 - c) (column 15 - c of the
reversed copy times column 15 - a), c = a zero; block 8 the diagonal; the k side carries 2 / 32 for the
pairs and 1 / 32 for the diagonal (exact powers of two): qf = bf16(q_b q_a), kf = bf16(k_b (k_a / 16))
or bf16(k_c k_c / 32). Column a of block a holds the diagonal 15 - a with the pairs' weight 2 / 32, so block 8
(the diagonal, 1 / 32) is negated on the k side for c >= 8: 2 / 32 - 1 / 32. 144 feature columns instead of 256, the same sum exactly in real arithmetic.
Was: numpy model of based_r2_rsq.tk and based_r2_vt.tk (same roundings; a copy of based_1wg_sim.py):
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
memory (the same values).   PYTHONPATH=/tmp/np python3 bench/experiments/based/based_r4_sim.py
"""
import json
import sys

import numpy as np

from sim_common import C, DK, DV, bf16, f32, run


def feat2(x, c, cd, neg):
    """symmetric packing: 9 blocks of 16 columns. Block a (0 .. 7): column j > a: bf16(x_j (x_a c)), the pair
    (a, j); j <= a: bf16(xs_j (x_{a+8} c)), xs_j = x_{j+8}: the pair (j + 8, a + 8) (j = a: the diagonal a + 8).
    Block 8: bf16(x_j x_j cd), negated for j >= 8 when neg (k side: the diagonals 8 .. 15 came twice)."""
    c, cd = f32(c), f32(cd)
    xs = np.concatenate([x[:, 8:], np.zeros_like(x[:, 8:])], axis=1)   # TMA box at column 8
    col = np.arange(DK)[None, :]
    blocks = []
    for a in range(8):
        hi = x * (x[:, a:a + 1] * c)
        lo = xs * (x[:, a + 8:a + 9] * c)
        blocks.append(bf16(np.where(col > a, hi, lo).astype(f32)))
    sgn = np.where(col < 8, f32(1), f32(-1) if neg else f32(1)).astype(f32)
    blocks.append(bf16(x * x * (cd * sgn)))
    return np.concatenate(blocks, axis=1)


def kernel(q, k, v, piece=16):
    q, k, v = (x.astype(f32) for x in (q, k, v))
    T = q.shape[0]
    nc = -(-T // C)
    pad = nc * C - T
    q, k, v = (np.concatenate([x, np.zeros((pad, x.shape[1]), f32)]) for x in (q, k, v))
    a2 = np.zeros((144, DV), f32)
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
        a2s = bf16(a2)
        ms = bf16(m * rsel)
        kf = feat2(kr, 0.0625, 0.03125, True)
        a2 = a2 + kf.T @ vv                                             # fold chunk c (before the q side)
        a1 = a1 + vv.T @ kw
        m = m + kx.T @ kr
        qf = feat2(qr, 1.0, 1.0, False)
        o = qf @ a2s
        o = o + qa @ a1s.T
        x = qa @ ms[0:32]
        den = f32(64 * c) + (qr * x).sum(axis=1, dtype=f32)
        for i in range(64 // piece):
            t = np.arange(piece * i, piece * i + piece)[None, :]
            s = (qr @ kr[piece * i:piece * i + piece].T) * f32(0.25)
            A = np.where(t <= r, f32(1) + s + f32(0.5) * s * s, f32(0)).astype(f32)
            rA = A.sum(axis=1, dtype=f32)
            den = den + rA
            for h in range(piece // 16):
                o = o + bf16(A[:, 16 * h:16 * h + 16]) @ vv[piece * i + 16 * h:piece * i + 16 * h + 16]
        o_all[sl] = bf16(o * (f32(1) / den)[:, None])
        z_all[sl] = den
    return o_all[:T], z_all[:T]


def check_packing():
    """the packing in fp64 (no roundings): phi2(q) . phi2(k) = (q . k)^2 / 32"""
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((5, DK)), rng.standard_normal((7, DK))

    def pk(z, c, cd, neg):
        zs, col, out = np.concatenate([z[:, 8:], 0 * z[:, 8:]], axis=1), np.arange(DK)[None, :], []
        for a in range(8):
            out.append(np.where(col > a, z * z[:, a:a + 1] * c, zs * z[:, a + 8:a + 9] * c))
        out.append(z * z * cd * np.where(col < 8, 1.0, -1.0 if neg else 1.0))
        return np.concatenate(out, axis=1)
    want = ((x @ y.T) ** 2) / 32
    got = pk(x, 1.0, 1.0, False) @ pk(y, 2 / 32, 1 / 32, True).T
    err = float(np.abs(got - want).max() / np.abs(want).max())
    print(json.dumps(dict(check="symmetric packing in fp64", max_rel_err=err)))
    return err < 1e-12


def main():
    if not check_packing():
        print("based_r4_sim: packing FAILED")
        return 1
    return run("based_r4_sim", [("r4_shift", lambda q, k, v: kernel(q, k, v, 16)), ("r4_halves", lambda q, k, v: kernel(q, k, v, 32))])


if __name__ == "__main__":
    sys.exit(main())
