#!/usr/bin/env python3
"""hh_2wg_sim.py - numpy model of bench/experiments/hedgehog/hh_2wg.tk (two consumer warpgroups, the
value columns split), with its bf16 roundings, against the fp64 formula of bench/hedgehog.py (its
ref_np; bf16_np its rounding). Needs numpy only: python3 bench/experiments/hedgehog/hh_2wg_sim.py
The fp64 line ("fp64 algebra") runs the same steps without roundings: it checks the chunking, the
at() rows and the j = 0 handling alone."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from hedgehog import C, D, F, bf16_np as bf16_, ref_np as ref  # noqa: E402
f32 = np.float32


def kernel(q, k, v, w_q, w_k, alpha, beta, exact=False):
    f = np.float64 if exact else np.float32
    bf = (lambda x: np.asarray(x, np.float64)) if exact else bf16_
    q, k, v, w_q, w_k = (np.asarray(x, f) for x in (q, k, v, w_q, w_k))
    c = f(1.4426950408889634 / np.sqrt(128.0))
    T = q.shape[0]
    nc = -(-T // C)
    pad = nc * C - T
    q, k, v = (np.concatenate([x, np.zeros((pad, D), f)]) for x in (q, k, v))
    kv = [np.zeros((2 * F, 64), f), np.zeros((2 * F, 64), f)]      # per warpgroup: kv[:, D_w]
    ks = [np.zeros((F, 16), f), np.zeros((F, 16), f)]              # per warpgroup: features 64 w ..
    on = np.ones((C, 16), f)
    O = np.zeros((nc * C, D), f)
    r_ = np.arange(C)[:, None]; c_ = np.arange(C)[None, :]
    for j in range(nc):
        qj = q[j * C:(j + 1) * C]
        lo = j * C - C                       # at(64 j - 64): rows above the tensor are zeros
        def rows(x):
            out = np.zeros((2 * C, D), f)
            for i in range(2 * C):
                if 0 <= lo + i < nc * C: out[i] = x[lo + i]
            return out
        kk, vv = rows(k), rows(v)
        z = f(1.0) if j > 0 else f(0.0)
        # phase 1
        def feat(x, w, scale):
            s = (x @ w).astype(f)
            m = s.max(1, keepdims=True); r = s.min(1, keepdims=True)
            t = np.exp(s - m).astype(f); den = (f(scale) / t.sum(1, keepdims=True, dtype=f)).astype(f)
            a = bf(t * den)
            t = np.exp(r - s).astype(f); den = (f(scale) / t.sum(1, keepdims=True, dtype=f)).astype(f)
            b = bf(t * den)
            return np.concatenate([a, b], 1)
        fq = feat(qj, w_q, alpha)
        fk = feat(kk[0:64], w_k, z)
        kvs = np.concatenate([bf(kv[0]), bf(kv[1])], 1)
        ksh = np.concatenate([bf(ks[0]), bf(ks[1])], 0)
        # phase 2 (both warpgroups, identical)
        s = (qj @ kk[64:128].T).astype(f)
        t = (qj @ kk[0:64].T).astype(f)
        s = np.where(c_ <= r_, s, -np.inf).astype(f)
        t = t if j > 0 else np.full_like(t, -np.inf)
        m = np.maximum(s.max(1, keepdims=True), t.max(1, keepdims=True))
        s = np.exp2((s - m) * c).astype(f); den = s.sum(1, keepdims=True, dtype=f); ps = bf(s)
        t = np.exp2((t - m) * c).astype(f); den = (den + t.sum(1, keepdims=True, dtype=f)).astype(f); pt = bf(t)
        # phase 3, per warpgroup
        x = (fq @ ksh).astype(f)
        den = (den * f(beta) + x.max(1, keepdims=True)).astype(f)
        for w in (0, 1):
            cols = slice(64 * w, 64 * w + 64)
            o = (ps @ vv[64:128, cols]).astype(f)
            o = (o + pt @ vv[0:64, cols]).astype(f)
            o = (o * f(beta)).astype(f)
            o = (o + fq @ kvs[:, cols]).astype(f)
            kv[w] = (kv[w] + fk.T @ vv[0:64, cols]).astype(f)
            ks[w] = (ks[w] + fk[:, 64 * w:64 * w + 64].T @ on).astype(f)
            O[j * C:(j + 1) * C, cols] = bf(o * (f(1) / den))
    KV = np.concatenate(kv, 1)
    KS = np.concatenate([ks[0][:, 0], ks[1][:, 0]])
    return O[:T], KV, KS

rng = np.random.default_rng(0)
worst = ex_worst = 0.0
def rel(a, b):
    nb = np.linalg.norm(b)
    return float(np.linalg.norm(a - b) / nb) if nb else float(np.linalg.norm(a))
for T in (1024, 333, 100, 1, 64, 65, 128, 129, 191, 200):
    q, k = (bf16_(rng.standard_normal((T, D))) for _ in range(2))
    v = bf16_(rng.standard_normal((T, D)) / 5)
    wq, wk = (bf16_(rng.standard_normal((D, F))) for _ in range(2))
    alpha, beta = f32(rng.random() * 3), f32(rng.random())
    O, KV, KS = kernel(q, k, v, wq, wk, alpha, beta)
    Or, KVr, KSr = ref(q, k, v, wq, wk, float(alpha), float(beta))
    eo, ekv, eks = rel(O, Or), rel(KV, KVr), rel(KS, KSr)
    Ox, KVx, KSx = kernel(q, k, v, wq, wk, float(alpha), float(beta), exact=True)
    ex = max(rel(Ox, Or), rel(KVx, KVr), rel(KSx, KSr))
    worst = max(worst, eo, ekv, eks); ex_worst = max(ex_worst, ex)
    print("T = %4d: O %.2e KV %.2e KS %.2e (alpha %.3f beta %.3f) fp64 algebra %.1e nan %s" % (T, eo, ekv, eks, alpha, beta, ex, np.isnan(O).any()))
print("worst %.2e, fp64 algebra %.1e" % (worst, ex_worst))
