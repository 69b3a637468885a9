#!/usr/bin/env python3
# numpy: fft_2wg.tk's arithmetic (batch pairs, column halves, F2 as register A) vs bench/fftconv.py's kernel_single_np and fp64 reference
import sys, numpy as np
import os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')); import fftconv as fc
def kernel_2wg(u, k, N):
    r = fc.bf16_np; f = np.float32
    H, G, N1 = fc.shape(N); B, D, _ = u.shape; DG = D // G
    F1, F2, Tw = fc.constants(N, np); Kf = fc.filter_spectrum(k, N, np)
    f1r, f1i, f2r, f2i, twr, twi = (r(v.astype(f)) for v in (F1.real, F1.imag, F2.real, F2.imag, Tw.real, Tw.imag))
    kfr, kfi = r(Kf.real.astype(f)), r(Kf.imag.astype(f))
    U = u.astype(f).reshape(B, DG, 64, 64); Y = np.full((B, DG, 64, 64), np.nan, f)
    for g in range(DG):
        for b in range((B + 1) // 2):
            for w in (0, 1):
                e = 2 * b + w
                x = U[e, g] if e < B else np.zeros((64, 64), f)     # TMA zeros past B
                W = []
                for h in (slice(0, 64), slice(64, 128)):
                    pr = x.T @ f1r[:, h]; pi = x.T @ f1i[:, h]
                    ar, ai = twr[:, h], twi[:, h]
                    sr = r(pr * ar - pi * ai); si = r(pr * ai + pi * ar)
                    pr = f2r @ sr - f2i @ si; pi = f2r @ si + f2i @ sr
                    br, bi = kfr[g][:, h], kfi[g][:, h]
                    vr = r(pr * br - pi * bi); vi = r(pr * bi + pi * br)
                    pr = f2r @ vr + f2i @ vi; pi = f2r @ vi - f2i @ vr
                    W.append((r(pr * ar + pi * ai), r(pi * ar - pr * ai)))
                y = f1r[:, :64] @ W[0][0].T + f1r[:, 64:] @ W[1][0].T + f1i[:, :64] @ W[0][1].T + f1i[:, 64:] @ W[1][1].T
                if e < B: Y[e, g] = r(y)                            # the store past B is dropped
    return Y.reshape(B, D, N)
rng = np.random.default_rng(0); ok = True
for N, B, D in ((1024, 3, 8), (2048, 1, 4), (4096, 3, 2)):
    u = fc.bf16_np(rng.standard_normal((B, D, N)).astype(np.float32))
    k = fc.bf16_np((rng.standard_normal((D, N)) / np.sqrt(N)).astype(np.float32))
    y2 = kernel_2wg(u, k, N); y1 = fc.kernel_single_np(u, k, N); ref = fc.reference_np(u, k, N)
    e = np.linalg.norm(y2 - ref) / np.linalg.norm(ref); d = np.abs(y2 - y1).max()
    print("N %d B %d D %d: rel err vs fp64 %.3e, max |2wg - kernel_np| %.3e, finite %s" % (N, B, D, e, d, np.isfinite(y2).all()))
    ok &= e < 1e-2 and np.isfinite(y2).all()
print("ok" if ok else "FAIL")
