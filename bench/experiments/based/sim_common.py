"""sim_common.py - what the numpy models of the Based experiments (based_*_sim.py) share: the constants,
bf16 rounding (round to nearest even), the fp64 quadratic form they are checked against, and the check
loop over the input distributions and lengths (normal and ThunderKittens' inputs, T = 1024, 333, 100, 1,
64, 65, 128, 129), a JSON line a case."""
import json

import numpy as np

C, DK, DV, CF = 64, 16, 64, 0.1767766952966369   # chunk, feature dim, value dim, 1 / (4 sqrt 2)
f32 = np.float32


def bf16(x):
    x = np.ascontiguousarray(x, dtype=np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return u.astype(np.uint32).view(np.float32).reshape(x.shape)


def ref(q, k, v):
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    s = (q @ k.T) / 4
    A = np.tril(1 + s + s * s / 2)
    z = A.sum(axis=1)
    return (A @ v) / z[:, None], z


def run(name, variants, variants_outer=False):
    """check every (label, kernel(q, k, v) -> (O, Z)) of variants against ref; with variants_outer each
    variant walks all the cases in turn (the generator goes on between them), else each case runs every
    variant on the same inputs. Returns the exit status."""
    rng = np.random.default_rng(0)
    bad = 0

    def cases():
        for dist in ("normal", "tk"):
            for T in (1024, 333, 100, 1, 64, 65, 128, 129):
                if dist == "normal":
                    q, k, v = (bf16(rng.standard_normal((T, d)).astype(f32)) for d in (DK, DK, DV))
                else:
                    q, k = (bf16((rng.standard_normal((T, DK)) / DK).astype(f32)) for _ in range(2))
                    v = bf16((rng.standard_normal((T, DV)) / DV).astype(f32))
                yield dist, T, q, k, v

    def check(label, kernel, dist, T, q, k, v):
        (o, z), (want, wz) = kernel(q, k, v), ref(q, k, v)
        err = float(np.linalg.norm(o - want) / max(np.linalg.norm(want), 1e-30))
        zerr = float(np.linalg.norm(z - wz) / max(np.linalg.norm(wz), 1e-30))
        ok = err < 1e-2 and zerr < 1e-2 and np.isfinite(o).all()
        print(json.dumps(dict(variant=label, inputs=dist, T=T, rel_err=round(err, 6),
                              z_rel_err=round(zerr, 7), status="ok" if ok else "FAIL")), flush=True)
        return not ok

    if variants_outer:
        for label, kernel in variants:
            for case in cases():
                bad += check(label, kernel, *case)
    else:
        for case in cases():
            for label, kernel in variants:
                bad += check(label, kernel, *case)
    print("%s: %s" % (name, "all ok" if not bad else "%d FAILED" % bad))
    return 1 if bad else 0
