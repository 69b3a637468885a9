"""Numpy model of the linear attention variants in this folder against an fp64 reference.
PYTHONPATH=/tmp/np python3 bench/experiments/linear_attn/la_sim.py

  shipped: kernels.tk/linear_attn.tk (bench/linear_attn.py simulate's model): kd = bf16(d_t k_t)
           (the chunk's decay on the keys), ss = bf16(S_{c-1}), p = bf16(masked scores), fp32 sums.
  order:   la_order.tk: the same values in another issue order; S scaled by e^{-64 s} right after
           its copy instead of before the fold (the same fp32 product, the same sum): the model is shipped's.
  2wg:     la_2wg.tk: the value columns split over two warpgroups (columns are independent: the same
           arithmetic per column) and, with DECAY, vd = bf16(d_t v_t) (the decay on the values) instead
           of kd; the scores' mask and roundings as shipped.
Every case must be within rel. error 1e-2 of fp64 (the bench's tolerance); the script prints shipped's
error beside each variant's.
"""
import json
import numpy as np

C = 64


def bf16(x):  # round to nearest even, to bf16, back to fp32
    x = np.ascontiguousarray(x, dtype=np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return u.astype(np.uint32).view(np.float32).reshape(x.shape)


def kernel(q, k, v, sl, scale, decay, d, variant):
    T = q.shape[0]
    nc = -(-T // C)
    pad = nc * C - T        # TMA's zero fill of the last chunk
    q, k, v = (np.concatenate([x, np.zeros((pad, d), np.float32)]) for x in (q, k, v))
    sl = np.float32(sl)
    r = np.arange(C, dtype=np.float32)[:, None]
    t = np.arange(C, dtype=np.float32)[None, :]
    dk = np.exp(-sl * (np.float32(64) - r)).astype(np.float32)       # per row t of the chunk's keys
    g = np.float32(np.exp(np.float32(-64.0) * sl))
    halves = [slice(0, d // 2), slice(d // 2, d)] if variant == "2wg" else [slice(0, d)]
    st = np.zeros((d, d), np.float32)
    o_all = np.zeros((nc * C, d), np.float32)
    for c in range(nc):
        qc, kc, vc = (x[c * C:(c + 1) * C] for x in (q, k, v))
        s = qc @ kc.T
        s = np.where(t <= r, s * np.exp(sl * (t - r)).astype(np.float32) if decay else s, 0).astype(np.float32)
        p = bf16(s)
        for h in halves:                       # one warpgroup's value columns
            ss = bf16(st[:, h])
            if decay:
                if variant == "2wg":
                    upd = kc.T @ bf16(dk * vc[:, h])
                else:
                    upd = bf16(kc * dk).T @ vc[:, h]
                st[:, h] = st[:, h] * g + upd
            else:
                st[:, h] = st[:, h] + kc.T @ vc[:, h]
            o = qc @ ss
            if decay:
                o = o * np.exp(-sl * r).astype(np.float32)
            o = o + p @ vc[:, h]
            o_all[c * C:(c + 1) * C, h] = bf16(o * np.float32(scale))
    return o_all[:T]


def ref(q, k, v, sl, scale):
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    T = q.shape[0]
    i = np.arange(T, dtype=np.float64)
    diff = i[:, None] - i[None, :]
    m = np.where(diff >= 0, np.exp(-sl * np.maximum(diff, 0)), 0)
    return scale * ((q @ k.T) * m) @ v


def main():
    rng = np.random.default_rng(0)
    bad = 0
    slopes = [2.0 ** (-8.0 * (h + 1) / 16) for h in range(16)]
    for d in (128, 64):
        for decay in (0, 1):
            for T in (1024, 1000, 333, 100, 64, 65, 1):
                for sl in ((slopes[0], slopes[7], slopes[-1], 2.0) if decay else (0.0,)):
                    q, k, v = (bf16(rng.standard_normal((T, d)).astype(np.float32)) for _ in range(3))
                    want = ref(q, k, v, sl, d ** -0.5)
                    errs = {}
                    for var in ("shipped", "2wg"):
                        o = kernel(q, k, v, sl, d ** -0.5, decay, d, var)
                        err = float(np.linalg.norm(o - want) / max(np.linalg.norm(want), 1e-30))
                        ok = err < 1e-2 and bool(np.isfinite(o).all())
                        bad += not ok
                        errs[var] = err if ok else "FAIL %.3g" % err
                    print(json.dumps(dict(D=d, DECAY=decay, T=T, slope=round(sl, 5), **errs)), flush=True)
    print("la_sim: %s" % ("all ok" if not bad else "%d FAILED" % bad))
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
