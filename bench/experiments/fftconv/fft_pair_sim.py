#!/usr/bin/env python3
# numpy: fft_pair.tk's (and fft_pair2.tk's) arithmetic - two batch elements as one complex signal z = u_a + i u_b,
# column halves, K = 32 first products at N <= 2048, F1 as register A of the last product - against the fp64
# reference of the causal convolution, at N = 1024, 2048, 4096 and odd B (the last pair's U[B] reads as zeros,
# its store is dropped). Every bf16 rounding of the kernel is modelled: inputs and constants, S, V, W, the
# output; products and elementwise products in fp32. PYTHONPATH=/tmp/np python3 fft_pair_sim.py
import os, sys
import numpy as np
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')); import fftconv as fc


def kernel_pair(u, k, N, exact=False, il=False):
    """exact: fp64 and no roundings (checks the tile algebra of pairing alone); il: fft_pair_il.tk's order of the
    last product's fp32 sums (half 0's terms, then half 1's) instead of fft_pair.tk's and fft_pair2.tk's (F1r, then F1i)"""
    r, f = ((lambda x: x), np.float64) if exact else (fc.bf16_np, np.float32)
    H, G, N1 = fc.shape(N); B, D, _ = u.shape; DG = D // G
    F1, F2, Tw = fc.constants(N, np); Kf = fc.filter_spectrum(k, N, np)
    f1r, f1i, f2r, f2i, twr, twi = (r(v.astype(f)) for v in (F1.real, F1.imag, F2.real, F2.imag, Tw.real, Tw.imag))
    kfr, kfi = r(Kf.real.astype(f)), r(Kf.imag.astype(f))
    U = u.astype(f).reshape(B, DG, 64, 64); Y = np.full((B, DG, 64, 64), np.nan, f)
    zero = np.zeros((64, 64), f)
    for g in range(DG):
        for b in range((B + 1) // 2):                                  # the pipeline: batch pairs
            xa = U[2 * b, g]
            xb = U[2 * b + 1, g] if 2 * b + 1 < B else zero            # TMA fills zeros past B
            W = []
            for h in (0, 1):
                cs = slice(64 * h, 64 * h + 64)
                ks = slice(0, 64) if N == 4096 else slice(32 * h, 32 * h + 32)   # F1's nonzero rows of half h
                pr = xa[ks].T @ f1r[ks, cs] - xb[ks].T @ f1i[ks, cs]   # P = Z^T F1
                pi = xa[ks].T @ f1i[ks, cs] + xb[ks].T @ f1r[ks, cs]
                ar, ai = twr[:, cs], twi[:, cs]
                sr = r(pr * ar - pi * ai); si = r(pr * ai + pi * ar)   # S = bf16(P o Tw)
                pr = f2r @ sr - f2i @ si; pi = f2r @ si + f2i @ sr     # Z = F2 S
                br, bi = kfr[g][:, cs], kfi[g][:, cs]
                vr = r(pr * br - pi * bi); vi = r(pr * bi + pi * br)   # V = bf16(Z o Kf)
                pr = f2r @ vr + f2i @ vi; pi = f2r @ vi - f2i @ vr     # R = conj(F2) V
                W.append((r(pr * ar + pi * ai), r(pi * ar - pr * ai)))  # W = bf16(R o conj(Tw))
            (w0r, w0i), (w1r, w1i) = W
            if not il:
                ya = f1r[:, :64] @ w0r.T + f1r[:, 64:] @ w1r.T + f1i[:, :64] @ w0i.T + f1i[:, 64:] @ w1i.T   # Re conj(F1) W^T
                yb = f1r[:, :64] @ w0i.T + f1r[:, 64:] @ w1i.T - f1i[:, :64] @ w0r.T - f1i[:, 64:] @ w1r.T   # Im
            else:
                ya = f1r[:, :64] @ w0r.T + f1i[:, :64] @ w0i.T + f1r[:, 64:] @ w1r.T + f1i[:, 64:] @ w1i.T
                yb = f1r[:, :64] @ w0i.T - f1i[:, :64] @ w0r.T + f1r[:, 64:] @ w1i.T - f1i[:, 64:] @ w1r.T
            Y[2 * b, g] = r(ya)
            if 2 * b + 1 < B: Y[2 * b + 1, g] = r(yb)                 # the store past B is dropped
    return Y.reshape(B, D, N)


def main():
    rng = np.random.default_rng(0); ok = True
    cases = ((1024, 3, 8, 'randn'), (1024, 2, 4, 'decay'), (2048, 3, 4, 'randn'), (2048, 1, 2, 'decay'),
             (4096, 3, 2, 'randn'), (4096, 2, 1, 'decay'), (2048, 2, 2, 'scaled'))
    for N, B, D, kind in cases:
        u = rng.standard_normal((B, D, N))
        if kind == 'scaled':                       # the pair's second element 100x smaller than the first
            u[1] *= 0.01
        u = fc.bf16_np(u.astype(np.float32))
        kk = rng.standard_normal((D, N))
        if kind == 'decay':
            kk = kk * np.exp(-np.arange(N) / (N / 8.0))[None]
        k = fc.bf16_np((kk / np.sqrt(N)).astype(np.float32))
        y = kernel_pair(u, k, N); ref = fc.reference_np(u, k, N); y1 = fc.kernel_single_np(u, k, N)
        yil = kernel_pair(u, k, N, il=True)
        eil = np.linalg.norm(yil - ref) / np.linalg.norm(ref)
        print("  fft_pair_il order: rel err vs fp64 %.3e, max |il - pair| %.2e" % (eil, np.abs(yil - y).max()))
        ok &= bool(eil < 1e-2 and np.isfinite(yil).all())
        e = np.linalg.norm(y - ref) / np.linalg.norm(ref); e1 = np.linalg.norm(y1 - ref) / np.linalg.norm(ref)
        eb = [float(np.linalg.norm(y[i] - ref[i]) / np.linalg.norm(ref[i])) for i in range(B)]
        fin = bool(np.isfinite(y).all())
        good = e < 1e-2 and fin and (kind == 'scaled' or max(eb) < 1e-2)
        print("N %d B %d D %d %-6s: rel err vs fp64 %.3e (shipped kernel_np %.3e), per batch element %s, finite %s  %s"
              % (N, B, D, kind, e, e1, ' '.join('%.2e' % x for x in eb), fin, 'ok' if good else 'FAIL'))
        ok &= good
    for N in fc.NS:                                # the tile algebra alone (fp64, no roundings): pairing is exact
        u = rng.standard_normal((3, 64 // fc.shape(N)[0] * 2, N)); k = rng.standard_normal((u.shape[1], N)) / np.sqrt(N)
        ref = fc.reference_np(u, k, N); e = np.linalg.norm(kernel_pair(u, k, N, exact=True) - ref) / np.linalg.norm(ref)
        print("N %d B 3 fp64, no roundings: rel err %.2e  %s" % (N, e, 'ok' if e < 1e-12 else 'FAIL')); ok &= e < 1e-12
    print("ok" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
