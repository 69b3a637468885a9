#!/usr/bin/env python3
# numpy: fft_pair2s.tk's arithmetic - fft_pair2.tk (two batch elements as one complex signal z = u_a + i u_b, see
# fft_pair_sim.py) plus scale equalisation: per pair and channel c, k_c = rint(clip(log2 max|u_a,c| -
# log2 max|u_b,c|, -60, 60)) (each max floored at 1e-30), u_b's rows of channel c multiplied by 2^k_c (exact in
# bf16) before the chain, y_b's rows divided by 2^k_c (exact in fp32) before the bf16 output. Reports the
# PER-BATCH-ELEMENT relative error ||y_i - ref_i|| / ||ref_i|| (and the worst single channel's) against the fp64
# reference for the shipped arithmetic (kernels.tk/fftconv.tk: fftconv.kernel_single_np), fft_pair2 (no scaling),
# fft_pair2s (per channel, the kernel) and a per-tile variant (one k per tile, for comparison only), with the pair's
# disparities 1x, 10x, 100x, 1000x in both directions, for a whole batch element and for a single channel.
#   PYTHONPATH=/tmp/np python3 fft_pair2s_sim.py [--quick]
import os, sys
import numpy as np
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..')); import fftconv as fc
sys.path.insert(0, HERE); import fft_pair_sim as fps


def scale_k(xa, xb, H, mode):
    """k per row (fp32 integers) as the kernels compute it: mode 'l2' (fft_pair2s.tk: the channel's sum of squares,
    k = rint(log2 ratio / 2)), 'max' (fft_pair2s_max.tk: max|u| over the channel's H rows), 'l2-tile' (one k for the
    whole 64 x 64 tile; for comparison, no kernel), None (fft_pair2.tk: k = 0)"""
    if mode is None:
        return np.zeros(64, np.float32)
    f = np.float32
    if mode == 'l2':
        return fc.scale_k(xa, xb, H)                                          # the shipped kernel's (bench/fftconv.py)
    seg = 64 if mode.endswith('tile') else H
    if mode.startswith('l2'):
        sa = (xa * xa).sum(axis=1, dtype=f).reshape(-1, seg).sum(axis=1, dtype=f)    # rowsum, colsum of cq
        sb = (xb * xb).sum(axis=1, dtype=f).reshape(-1, seg).sum(axis=1, dtype=f)
        la = np.log2(np.clip(sa, f(1e-36), f(1e38))).astype(f).repeat(seg)           # clamp, log2 (lg2.approx)
        lb = np.log2(np.clip(sb, f(1e-36), f(1e38))).astype(f).repeat(seg)
        return np.rint(np.clip(((la - lb) * f(0.5)).astype(f), f(-60), f(60))).astype(f)   # rowsum, clamp, rint
    la = np.log2(np.maximum(np.abs(xa).max(axis=1), f(1e-30))).astype(f)      # rowmax, floor, log2
    lb = np.log2(np.maximum(np.abs(xb).max(axis=1), f(1e-30))).astype(f)
    la = la.reshape(-1, seg).max(axis=1).repeat(seg); lb = lb.reshape(-1, seg).max(axis=1).repeat(seg)   # colmax
    return np.rint(np.clip((la - lb).astype(f), f(-60), f(60))).astype(f)    # rowsum (+a, -b), clamp, rint


def kernel_pair2s(u, k, N, mode='l2', exact=False):
    """fft_pair2.tk (mode None; bit-identical to fft_pair_sim.kernel_pair), fft_pair2s.tk (mode 'l2'),
    fft_pair2s_max.tk (mode 'max'); see scale_k"""
    r, f = ((lambda x: x), np.float64) if exact else (fc.bf16_np, np.float32)
    H, G, N1 = fc.shape(N); B, D, _ = u.shape; DG = D // G
    F1, F2, Tw = fc.constants(N, np); Kf = fc.filter_spectrum(k, N, np)
    f1r, f1i, f2r, f2i, twr, twi = (r(v.astype(f)) for v in (F1.real, F1.imag, F2.real, F2.imag, Tw.real, Tw.imag))
    kfr, kfi = r(Kf.real.astype(f)), r(Kf.imag.astype(f))
    U = u.astype(f).reshape(B, DG, 64, 64); Y = np.full((B, DG, 64, 64), np.nan, f)
    zero = np.zeros((64, 64), f)
    for g in range(DG):
        for b in range((B + 1) // 2):
            xa = U[2 * b, g]
            xb = U[2 * b + 1, g] if 2 * b + 1 < B else zero             # TMA fills zeros past B
            kk = scale_k(xa.astype(np.float32), xb.astype(np.float32), H, mode).astype(f)
            t = np.exp2(kk)[:, None]                                     # 2^k per row: exact
            xs = r(xb * t)                                               # t u_b, bf16 (exact: a power of two)
            assert exact or np.array_equal(xs, xb * t)
            W = []
            for h in (0, 1):
                cs = slice(64 * h, 64 * h + 64)
                ks = slice(0, 64) if N == 4096 else slice(32 * h, 32 * h + 32)
                pr = xa[ks].T @ f1r[ks, cs] - xs[ks].T @ f1i[ks, cs]     # P = Z^T F1 (u_a terms first)
                pi = xa[ks].T @ f1i[ks, cs] + xs[ks].T @ f1r[ks, cs]
                ar, ai = twr[:, cs], twi[:, cs]
                sr = r(pr * ar - pi * ai); si = r(pr * ai + pi * ar)
                pr = f2r @ sr - f2i @ si; pi = f2r @ si + f2i @ sr
                br, bi = kfr[g][:, cs], kfi[g][:, cs]
                vr = r(pr * br - pi * bi); vi = r(pr * bi + pi * br)
                pr = f2r @ vr + f2i @ vi; pi = f2r @ vi - f2i @ vr
                W.append((r(pr * ar + pi * ai), r(pi * ar - pr * ai)))
            (w0r, w0i), (w1r, w1i) = W
            ya = f1r[:, :64] @ w0r.T + f1r[:, 64:] @ w1r.T + f1i[:, :64] @ w0i.T + f1i[:, 64:] @ w1i.T
            yb = f1r[:, :64] @ w0i.T + f1r[:, 64:] @ w1i.T - f1i[:, :64] @ w0r.T - f1i[:, 64:] @ w1r.T
            yb = yb * np.exp2(-kk)[:, None]                              # / t (exact)
            Y[2 * b, g] = r(ya)
            if 2 * b + 1 < B: Y[2 * b + 1, g] = r(yb)
    return Y.reshape(B, D, N)


def rel(y, ref):
    return float(np.linalg.norm(y - ref) / max(np.linalg.norm(ref), 1e-300))


VARIANTS = (('shipped', lambda u, k, N: fc.kernel_single_np(u, k, N)),
            ('pair2', lambda u, k, N: kernel_pair2s(u, k, N, mode=None)),
            ('pair2s', lambda u, k, N: kernel_pair2s(u, k, N, mode='l2')),
            ('pair2s_max', lambda u, k, N: kernel_pair2s(u, k, N, mode='max')),
            ('l2 per tile', lambda u, k, N: kernel_pair2s(u, k, N, mode='l2-tile')))


def main():
    quick = '--quick' in sys.argv
    ok = True
    rng = np.random.default_rng(1)
    # 0. fft_pair2's path of this model is fft_pair_sim.kernel_pair, bit for bit; the scaled algebra is exact in fp64
    for N in fc.NS:
        H, G, N1 = fc.shape(N)
        u = fc.bf16_np(rng.standard_normal((3, 2 * G, N)).astype(np.float32)); u[1] *= 2.0 ** -7
        k = fc.bf16_np((rng.standard_normal((2 * G, N)) / np.sqrt(N)).astype(np.float32))
        same = np.array_equal(kernel_pair2s(u, k, N, mode=None), fps.kernel_pair(u, k, N), equal_nan=True)
        ex = rel(kernel_pair2s(u.astype(np.float64), k, N, mode='l2', exact=True), fc.reference_np(u, k, N))
        print("N %d: mode None == fft_pair_sim.kernel_pair bit for bit: %s; fp64 no roundings, scaled: rel err %.1e  %s"
              % (N, same, ex, 'ok' if same and ex < 1e-12 else 'FAIL'))
        ok &= same and ex < 1e-12
    # 1. the error table
    print("\nper batch element relative error ||y_i - ref_i|| / ||ref_i|| (fp64 np.fft reference from the same bf16 inputs)")
    print("B = 2 (one pair: a = element 0, b = element 1), D = 2 G channels (2 tiles), u ~ randn, decaying filter;")
    print("'elem b/d': all of u_b divided by d; 'chan b/d': only channel 1 of u_b (err of that element, and [that channel]);")
    print("'spiky b/d': u_b sparse (1% of its samples nonzero) and divided by d")
    hdr = "%-5s %-10s %5s" + " | %-23s" * len(VARIANTS)
    print(hdr % (('N', 'case', 'd') + tuple("%s: a  b" % v for v, _ in VARIANTS)))
    table = []
    for N in fc.NS:
        H, G, N1 = fc.shape(N); D = 2 * G
        u0 = rng.standard_normal((2, D, N))
        kk = rng.standard_normal((D, N)) * np.exp(-np.arange(N) / (N / 8.0))[None]
        k = fc.bf16_np((kk / np.sqrt(N)).astype(np.float32))
        for case in ('elem b', 'elem a', 'chan b', 'chan a', 'spiky b', 'spiky a'):
            for d in ((1, 10, 100, 1000) if not quick else (1, 100)) if not case.startswith('spiky') else (1, 10):
                if d == 1 and case[:4] in ('elem', 'chan') and case != 'elem b':
                    continue
                u = u0.copy(); e = 1 if case.endswith('b') else 0
                if case.startswith('elem'):
                    u[e] /= d
                elif case.startswith('chan'):
                    u[e, 1] /= d
                else:                    # element e sparse (1% of the samples nonzero), its max d x the dense one's
                    u[e] *= (rng.random(u[e].shape) < 0.01) * (1.0 / d)
                u = fc.bf16_np(u.astype(np.float32)); ref = fc.reference_np(u, k, N)
                cells = []
                for name, fn in VARIANTS:
                    y = fn(u, k, N)
                    ea, eb = rel(y[0], ref[0]), rel(y[1], ref[1])
                    ec = rel(y[e, 1], ref[e, 1]) if case.startswith('chan') else None
                    ok &= bool(np.isfinite(y).all())
                    cells.append((ea, eb, ec)); table.append((N, case, d, name, ea, eb, ec))
                print(hdr % ((N, case if d > 1 or case.startswith('spiky') else 'none', d) + tuple(
                    "%.1e %.1e" % (ea, eb) + (" [%.1e]" % ec if ec is not None else "") for ea, eb, ec in cells)))
                es = [c for c in cells[2] if c is not None]         # fft_pair2s: every element and channel < 1e-2
                ok &= max(es) < 1e-2
    # 2. odd B (u_b = 0: k = 60, finite) and both of a pair zero
    for N in fc.NS:
        H, G, N1 = fc.shape(N)
        u = fc.bf16_np(rng.standard_normal((3, 2 * G, N)).astype(np.float32)); u[0, 0] = 0
        k = fc.bf16_np((rng.standard_normal((2 * G, N)) / np.sqrt(N)).astype(np.float32))
        uz = u.copy(); uz[0:2] = 0
        good = True; eb = []
        for mode in ('l2', 'max'):
            y = kernel_pair2s(u, k, N, mode=mode); ref = fc.reference_np(u, k, N); yz = kernel_pair2s(uz, k, N, mode=mode)
            eb += [rel(y[i], ref[i]) for i in range(3)]
            good &= bool(np.isfinite(y).all() and np.isfinite(yz).all() and not yz[:2].any()) and max(eb) < 1e-2
        print("N %d B 3 (odd: U[3] = 0; channel 0 of element 0 zero), pair 0 all zero: per element (l2, max) %s, finite  %s"
              % (N, ' '.join('%.2e' % x for x in eb), 'ok' if good else 'FAIL'))
        ok &= good
    print("ok" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
