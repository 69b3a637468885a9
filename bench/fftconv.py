#!/usr/bin/env python3
"""fftconv.py - tkc's FFT long convolution (kernels.tk/fftconv.tk, issue 16): the causal convolution
y = irfft(rfft(u, 2N) * rfft(k, 2N))[:N] per channel through the Monarch decomposition, two batch
elements a step as one complex signal (with per-channel scale equalisation; the .tk's header says how).

    python3 bench/fftconv.py simulate                  # CPU only (numpy): the kernel's arithmetic
    python3 bench/fftconv.py build --tkc build/tkc --out .carry/fftconv   # needs nvcc, no GPU
    python3 bench/fftconv.py gpu --lib .carry/fftconv [--out DIR] [--quick] [--rounds N]

`simulate` runs exactly the kernel's arithmetic in numpy (kernel_np): the same [B, D/G, 64, 64] tiles,
the same block-diagonal F1, twiddles and filter spectrum as bf16 constants, batch pairs z = u_a + i t u_b
with the kernel's per-channel t = 2^k, the same real products with fp32 accumulation (K = 32 where the
block-diagonal F1 allows) and the bf16 roundings of S, V and W, then the bf16 output; it checks against
an fp64 np.fft reference of the causal convolution from the same bf16 inputs (relative error
||y - ref|| / ||ref|| < 1e-2, for the tensor and, under 100x scale differences within a pair, for
every sequence) and also checks the tile algebra in fp64 (no roundings: the decomposition itself, error
~1e-14). kernel_single_np is the kernel before run 205 (one batch element a step).

`build` runs tkc for each N (-D NN=1024, 2048, 4096), compiles each to a shared library with nvcc
(sm_90a) and writes manifest.json: the variants, the launcher's declaration and ptxas' registers and
spills. `gpu` loads the libraries with ctypes and:
- checks each N against torch.fft in fp64 (from the same bf16 u and k): B = 2, D = 8 and D = 2 G + G
  (several channel groups), the output NaN-filled first, every element finite, relative error < 1e-2;
  once with u a strided view (every other batch of a larger tensor, B = 3: odd);
- checks every (batch, channel) sequence against its own reference with a batch element at 1/100 and at
  100x its partner, and one channel at 1/100 (relative error < 1e-2 per sequence);
- checks that a launch with the wrong n returns TKC_ERR_REQUIRE;
- times B = 16, D = 1024 at N = 1024, 2048, 4096 against torch.fft (rfft of u, product with the
  precomputed rfft of k, irfft, [:N]; the filter spectrum precomputed for both), each in a CUDA graph
  of 10 launches, median over rounds, and prints the ratio.
FLOPs: ThunderKittens' convention 2 x 10 x L log2(L) x D x B with L = 2N (the FFT size); see flops().
Rows go to OUT/fftconv.jsonl; the exit status is 1 if a check failed.
"""
import argparse
import ctypes
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
TK_FILE = os.path.join(ROOT, "kernels.tk", "fftconv.tk")
NS = (1024, 2048, 4096)
NVCC = ["nvcc", "-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-Xcompiler", "-fPIC", "-shared"]
DECL = ("int tkc_fftconv(const void *U, const int64_t *U_strides, const void *F1, const int64_t *F1_strides, "
        "const void *F2, const int64_t *F2_strides, const void *Tw, const int64_t *Tw_strides, const void *Kf, "
        "const int64_t *Kf_strides, void *Y, const int64_t *Y_strides, int64_t B, int64_t DG, int32_t n, "
        "tkc_stream_t stream)")
TKC_ERR_REQUIRE = None      # read from the generated CUDA in build (manifest "err_require")


def flops(B, D, N):
    """ThunderKittens' convention (kernels/fftconv/benchmark.py) with the FFT size L = 2N"""
    L = 2 * N
    return 2 * 10 * L * math.log2(L) * D * B


def shape(N):
    """H rows of 64 samples per sequence, G channels per 64 x 64 tile, N1 = L / 64"""
    assert N in NS, N
    H = N // 64
    return H, 64 // H, N // 32


def constants(N, np, dtype=None):
    """the kernel's constant inputs as complex arrays (the launcher takes [2, ...] real/imag stacks):
    F1 [64, 128] block diagonal, F2 [64, 64], Tw [64, 128] (see kernels.tk/fftconv.tk)"""
    H, G, N1 = shape(N)
    L = 2 * N
    a = np.arange(H)[:, None]
    k1 = np.arange(N1)[None, :]
    f1 = np.exp(-2j * np.pi * a * k1 / N1)                        # rows 0 .. H - 1 of F_N1
    F1 = np.zeros((64, G * N1), np.complex128)
    for c in range(G):
        F1[c * H:(c + 1) * H, c * N1:(c + 1) * N1] = f1
    j = np.arange(64)
    F2 = np.exp(-2j * np.pi * np.outer(j, j) / 64)
    Tw = np.tile(np.exp(-2j * np.pi * np.outer(j, np.arange(N1)) / L), (1, G))
    return F1, F2, Tw


def filter_spectrum(k, N, np):
    """Kf [D/G, 64, 128] complex from the filters k [D, N]: Kf[g, k2, c N1 + k1] = fft(k_{G g + c}, L)[k1 + N1 k2] / L"""
    H, G, N1 = shape(N)
    D = k.shape[0]
    L = 2 * N
    kh = np.fft.fft(k.astype(np.float64), L, axis=-1) / L          # [D, L]
    kh = kh.reshape(D // G, G, 64, N1)                             # [g, c, k2, k1]: index k1 + N1 k2
    return kh.transpose(0, 2, 1, 3).reshape(D // G, 64, G * N1)


def split(z, np):
    """complex [..., R, C] -> real [..., 2, R, C] (the launcher's layout: real part, imaginary part)"""
    return np.stack([z.real, z.imag], axis=-3)


# ---- simulate: the kernel's arithmetic in numpy, with its bf16 roundings -----------------------

def bf16_np(x):
    import numpy as np
    x = np.ascontiguousarray(x, dtype=np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return u.astype(np.uint32).view(np.float32).reshape(x.shape)


def kernel_single_np(u, k, N, exact=False):
    """u [B, D, N], k [D, N] (values already bf16) -> y [B, D, N] as kernels.tk/fftconv.tk computed it before
    run 205, one batch element a step (bench/experiments/fftconv/fft_shipped_run203.tk; the experiments' numpy
    models compare against it). exact: fp64 and no roundings (checks the tile algebra alone)."""
    import numpy as np
    H, G, N1 = shape(N)
    B, D, _ = u.shape
    DG = D // G
    if exact:
        r = lambda x: x
        f = np.float64
    else:
        r = bf16_np
        f = np.float32
    F1, F2, Tw = constants(N, np)
    Kf = filter_spectrum(k, N, np)
    f1r, f1i, f2r, f2i, twr, twi = (r(v.astype(f)) for v in (F1.real, F1.imag, F2.real, F2.imag, Tw.real, Tw.imag))
    kfr, kfi = r(Kf.real.astype(f)), r(Kf.imag.astype(f))
    U = u.astype(f).reshape(B, DG, 64, 64)
    Y = np.empty((B, DG, 64, 64), f)
    for g in range(DG):
        for b in range(B):                                   # the pipeline
            x = U[b, g]
            pr = x.T @ f1r                                   # P = X^T F1, fp32 accumulation
            pi = x.T @ f1i
            sr = r(pr * twr - pi * twi)                      # S = bf16(P o Tw)
            si = r(pr * twi + pi * twr)
            pr = f2r @ sr - f2i @ si                         # Z = F2 S
            pi = f2r @ si + f2i @ sr
            vr = r(pr * kfr[g] - pi * kfi[g])                # V = bf16(Z o Kf)
            vi = r(pr * kfi[g] + pi * kfr[g])
            pr = f2r @ vr + f2i @ vi                         # R = conj(F2) V
            pi = f2r @ vi - f2i @ vr
            sr = r(pr * twr + pi * twi)                      # W = bf16(R o conj(Tw))
            si = r(pi * twr - pr * twi)
            Y[b, g] = r(f1r @ sr.T + f1i @ si.T)             # y = Re(conj(F1) W^T), bf16 out
    return Y.reshape(B, D, N)


def scale_k(xa, xb, H):
    """the kernel's k per row (fp32 integers): per channel (H rows), k = rint(clamp(log2 ||u_a|| - log2 ||u_b||,
    -60, 60)) from the channels' sums of squares, each clamped to [1e-36, 1e38]"""
    import numpy as np
    f = np.float32
    sa = (xa * xa).sum(axis=1, dtype=f).reshape(-1, H).sum(axis=1, dtype=f)
    sb = (xb * xb).sum(axis=1, dtype=f).reshape(-1, H).sum(axis=1, dtype=f)
    la = np.log2(np.clip(sa, f(1e-36), f(1e38))).astype(f).repeat(H)
    lb = np.log2(np.clip(sb, f(1e-36), f(1e38))).astype(f).repeat(H)
    return np.rint(np.clip(((la - lb) * f(0.5)).astype(f), f(-60), f(60))).astype(f)


def kernel_np(u, k, N, exact=False):
    """u [B, D, N], k [D, N] (values already bf16) -> y [B, D, N] as kernels.tk/fftconv.tk computes it: batch
    elements 2b, 2b + 1 as z = u_a + i t u_b (t = 2^k per channel), the chain on two column halves (K = 32 in
    P's products at N <= 2048), y_a = Re, y_b = Im / t. exact: fp64 and no roundings."""
    import numpy as np
    r, f = ((lambda x: x), np.float64) if exact else (bf16_np, np.float32)
    H, G, N1 = shape(N)
    B, D, _ = u.shape
    DG = D // G
    F1, F2, Tw = constants(N, np)
    Kf = filter_spectrum(k, N, np)
    f1r, f1i, f2r, f2i, twr, twi = (r(v.astype(f)) for v in (F1.real, F1.imag, F2.real, F2.imag, Tw.real, Tw.imag))
    kfr, kfi = r(Kf.real.astype(f)), r(Kf.imag.astype(f))
    U = u.astype(f).reshape(B, DG, 64, 64)
    Y = np.full((B, DG, 64, 64), np.nan, f)
    zero = np.zeros((64, 64), f)
    for g in range(DG):
        for b in range((B + 1) // 2):                        # the pipeline: batch pairs
            xa = U[2 * b, g]
            xb = U[2 * b + 1, g] if 2 * b + 1 < B else zero  # TMA fills zeros past B
            kk = scale_k(xa.astype(np.float32), xb.astype(np.float32), H).astype(f)
            t = np.exp2(kk)[:, None]                         # 2^k per row: exact
            xs = r(xb * t)                                   # t u_b in bf16: exact (a power of two)
            W = []
            for h in (0, 1):                                 # warpgroup h: column half h
                cs = slice(64 * h, 64 * h + 64)
                ks = slice(0, 64) if N == 4096 else slice(32 * h, 32 * h + 32)
                pr = xa[ks].T @ f1r[ks, cs] - xs[ks].T @ f1i[ks, cs]     # P = Z^T F1
                pi = xa[ks].T @ f1i[ks, cs] + xs[ks].T @ f1r[ks, cs]
                ar, ai = twr[:, cs], twi[:, cs]
                sr, si = r(pr * ar - pi * ai), r(pr * ai + pi * ar)     # S = bf16(P o Tw)
                pr, pi = f2r @ sr - f2i @ si, f2r @ si + f2i @ sr        # Z = F2 S
                br, bi = kfr[g][:, cs], kfi[g][:, cs]
                vr, vi = r(pr * br - pi * bi), r(pr * bi + pi * br)     # V = bf16(Z o Kf)
                pr, pi = f2r @ vr + f2i @ vi, f2r @ vi - f2i @ vr        # R = conj(F2) V
                W.append((r(pr * ar + pi * ai), r(pi * ar - pr * ai)))  # W = bf16(R o conj(Tw))
            wr, wi = np.concatenate([W[0][0], W[1][0]], 1), np.concatenate([W[0][1], W[1][1]], 1)
            Y[2 * b, g] = r(f1r @ wr.T + f1i @ wi.T)         # y_a = Re(conj(F1) W^T)
            if 2 * b + 1 < B:
                Y[2 * b + 1, g] = r((f1r @ wi.T - f1i @ wr.T) * np.exp2(-kk)[:, None])   # y_b = Im / t
    return Y.reshape(B, D, N)


def reference_np(u, k, N):
    import numpy as np
    L = 2 * N
    uh = np.fft.rfft(u.astype(np.float64), L, axis=-1)
    kh = np.fft.rfft(k.astype(np.float64), L, axis=-1)
    return np.fft.irfft(uh * kh[None], L, axis=-1)[..., :N]


def simulate(_args):
    import numpy as np
    rng = np.random.default_rng(0)
    bad = 0
    for N in NS:
        H, G, N1 = shape(N)
        for B, D, kind in ((2, 2 * G, "randn"), (1, G, "decay"), (3, 2 * G, "randn, batch 1 at 1/100"),
                           (2, 2 * G, "randn, channel 0 of batch 1 at 1/100")):
            u = rng.standard_normal((B, D, N)).astype(np.float32)
            if "batch 1" in kind:
                u[1] *= 1e-2 if "channel" not in kind else 1.0
                u[1, 0] *= 1e-2 if "channel" in kind else 1.0
            u = bf16_np(u)
            k = rng.standard_normal((D, N))
            if kind == "decay":                              # a long-convolution filter: decaying, smooth spectrum
                k = k * np.exp(-np.arange(N) / (N / 8.0))[None]
            k = bf16_np((k / math.sqrt(N)).astype(np.float32))
            want = reference_np(u, k, N)
            for exact in (True, False):
                y = kernel_np(u, k, N, exact=exact)
                err = float(np.linalg.norm(y - want) / max(np.linalg.norm(want), 1e-30))
                seq = float((np.linalg.norm(y - want, axis=-1) / np.maximum(np.linalg.norm(want, axis=-1), 1e-30)).max())
                tol = 1e-12 if exact else 1e-2
                ok = err < tol and seq < tol and bool(np.isfinite(y).all())
                bad += not ok
                print(json.dumps(dict(kind="simulate", N=N, B=B, D=D, inputs=kind,
                                      arithmetic="fp64, no roundings" if exact else "kernel (bf16 roundings)",
                                      rel_err=err, worst_sequence_rel_err=seq, status="ok" if ok else "FAIL")), flush=True)
    print("simulate: %s" % ("all ok" if not bad else "%d FAILED" % bad))
    return 1 if bad else 0


# ---- build: the libraries, on a machine with nvcc ---------------------------------------------

def build(args):
    os.makedirs(args.out, exist_ok=True)
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--", "src", "kernels.tk/fftconv.tk",
                                 "templates"], capture_output=True, text=True).stdout.strip())
    man = dict(commit=commit, dirty=dirty, variants=[])
    for N in NS:
        name = "fftconv_n%d" % N
        defs = ["-D", "NN=%d" % N]
        rep = json.loads(subprocess.run([args.tkc, args.tk, "--emit=report"] + defs, check=True, capture_output=True,
                                        text=True).stdout)
        decl = rep["kernels"][0]["launcher"]["declaration"]
        if decl != DECL:
            raise SystemExit("launcher changed: %s (this script calls %s)" % (decl, DECL))
        cu = os.path.join(args.out, name + ".cu")
        subprocess.run([args.tkc, args.tk, "-o", cu] + defs, check=True)
        with open(cu) as f:
            m = re.search(r"TKC_ERR_REQUIRE\s*=\s*(\d+)", f.read())
        r = subprocess.run(NVCC + ["-Xptxas", "-v", cu, "-o", cu[:-3] + ".so"], capture_output=True, text=True)
        if r.returncode:
            raise SystemExit(r.stderr[-2000:])
        regs = re.findall(r"Used (\d+) registers", r.stderr)
        spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", r.stderr)
        man["variants"].append(dict(name=name, N=N, lib=name + ".so", declaration=decl,
                                    err_require=int(m.group(1)) if m else None,
                                    registers=[int(x) for x in regs], spills=[list(map(int, s)) for s in spills]))
        os.remove(cu)
        print("built %s: registers %s, spills %s" % (name, regs, spills), flush=True)
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(man, f, indent=1)
    return 0


# ---- the GPU run (written, not run yet) --------------------------------------------------------

P_, LL = ctypes.c_void_p, ctypes.c_longlong


def call(fn, U, cst, Kf, Y, n, stream, keep):
    """the launcher, in DECL's order: each tensor with its strides (elements), then B, DG, n, the stream"""
    args = []
    for t in (U, cst["F1"], cst["F2"], cst["Tw"], Kf, Y):
        st = (LL * t.dim())(*t.stride())
        keep.append(st)
        args += [P_(t.data_ptr()), st]
    B, DG = U.shape[0], U.shape[1]
    args += [LL(B), LL(DG), ctypes.c_int32(n), P_(stream)]
    return fn(*args)


def device_constants(torch, N, k):
    """the bf16 [2, ...] constants and the filter spectrum Kf [D/G, 2, 64, 128] for filters k [D, N] (on the GPU)"""
    import numpy as np
    F1, F2, Tw = constants(N, np)
    to = lambda z: torch.from_numpy(np.ascontiguousarray(split(z, np))).float().cuda().bfloat16()
    Kf = to(filter_spectrum(k.double().cpu().numpy(), N, np))
    return dict(F1=to(F1), F2=to(F2), Tw=to(Tw)), Kf


def gpu(args):
    import torch
    t0 = time.time()
    with open(os.path.join(args.lib, "manifest.json")) as f:
        man = json.load(f)
    os.makedirs(args.out, exist_ok=True)
    rows = []

    def emit(row):
        rows.append(row)
        print(json.dumps(row), flush=True)

    print("# libraries built from %s%s" % (man["commit"], " (with uncommitted changes)" if man["dirty"] else ""))
    libs = {}
    for v in man["variants"]:
        assert v["declaration"] == DECL, v["declaration"]
        fn = ctypes.CDLL(os.path.join(os.path.abspath(args.lib), v["lib"])).tkc_fftconv
        fn.restype = ctypes.c_int
        libs[v["N"]] = (fn, v["err_require"])
    keep = []
    stream = lambda: torch.cuda.current_stream().cuda_stream

    def reference(u, k, N):
        L = 2 * N
        return torch.fft.irfft(torch.fft.rfft(u.double(), L) * torch.fft.rfft(k.double(), L), L)[..., :N]

    # ---- correctness
    for N, (fn, err_require) in libs.items():
        H, G, N1 = shape(N)
        g = torch.Generator(device="cuda")
        g.manual_seed(N)
        for B, D, strided in ((2, 8, False), (2, 3 * G, False), (3, 2 * G, True)):
            if strided:
                big = torch.randn(2 * B, D, N, device="cuda", generator=g).bfloat16()
                u = big[::2]                                        # every other batch: a strided view
            else:
                u = torch.randn(B, D, N, device="cuda", generator=g).bfloat16()
            k = (torch.randn(D, N, device="cuda", generator=g) / math.sqrt(N)).bfloat16()
            cst, Kf = device_constants(torch, N, k)
            U = u.view(B, D // G, 64, 64) if not strided else u.as_strided(
                (B, D // G, 64, 64), (u.stride(0), 64 * 64, 64, 1))
            Y = torch.full((B, D // G, 64, 64), float("nan"), device="cuda", dtype=torch.bfloat16)
            rc = call(fn, U, cst, Kf, Y, N, stream(), keep)
            torch.cuda.synchronize()
            want = reference(u, k, N)
            y = Y.view(B, D, N).double()
            err = ((y - want).norm() / want.norm().clamp(min=1e-30)).item() if rc == 0 else float("nan")
            finite = bool(torch.isfinite(y).all().item())
            ok = rc == 0 and err < 1e-2 and finite
            emit(dict(kind="check", N=N, B=B, D=D, strided=strided, rc=rc, rel_err=err, finite=finite,
                      status="ok" if ok else "FAIL"))
        # batch elements (and channels) of very different scales: the error of each (batch, channel) sequence
        # against its own reference, not the tensor's (a kernel that packs two batch elements into one complex
        # signal must not let the larger one swamp the smaller's roundings)
        for case, scale_b1, scale_c0 in (("batch 1 at 1/100 of batch 0", 1e-2, 1.0),
                                         ("batch 1 at 100x batch 0", 1e2, 1.0),
                                         ("channel 0 of batch 1 at 1/100", 1.0, 1e-2)):
            B, D = 2, 2 * G
            u = torch.randn(B, D, N, device="cuda", generator=g)
            u[1] *= scale_b1
            u[1, 0] *= scale_c0
            u = u.bfloat16()
            k = (torch.randn(D, N, device="cuda", generator=g) / math.sqrt(N)).bfloat16()
            cst, Kf = device_constants(torch, N, k)
            Y = torch.full((B, D // G, 64, 64), float("nan"), device="cuda", dtype=torch.bfloat16)
            rc = call(fn, u.view(B, D // G, 64, 64), cst, Kf, Y, N, stream(), keep)
            torch.cuda.synchronize()
            want = reference(u, k, N)
            y = Y.view(B, D, N).double()
            per = ((y - want).norm(dim=-1) / want.norm(dim=-1).clamp(min=1e-30)) if rc == 0 else None
            worst = per.max().item() if per is not None else float("nan")
            ok = rc == 0 and worst < 1e-2 and bool(torch.isfinite(y).all().item())
            emit(dict(kind="check", N=N, case="scales: " + case, rc=rc, worst_sequence_rel_err=worst,
                      status="ok" if ok else "FAIL"))
        # a launch with the wrong sequence length: the launcher's requirement n == NN
        rc = call(fn, U, cst, Kf, Y, N // 2, stream(), keep)
        ok = rc != 0 and (err_require is None or rc == err_require)
        emit(dict(kind="check", N=N, case="n = %d rejected" % (N // 2), rc=rc, status="ok" if ok else "FAIL"))
    print("# checks took %.1f s" % (time.time() - t0), flush=True)

    # ---- timing against torch.fft, the filter spectrum precomputed for both
    if not args.quick:
        B, D = 16, 1024
        for N, (fn, _) in libs.items():
            H, G, N1 = shape(N)
            L = 2 * N
            u = torch.randn(B, D, N, device="cuda").bfloat16()
            k = (torch.randn(D, N, device="cuda") / math.sqrt(N)).bfloat16()
            cst, Kf = device_constants(torch, N, k)
            U = u.view(B, D // G, 64, 64)
            Y = torch.empty(B, D // G, 64, 64, device="cuda", dtype=torch.bfloat16)
            kh = torch.fft.rfft(k.float(), L)                       # torch's precomputed filter spectrum

            def tkc_run():
                call(fn, U, cst, Kf, Y, N, stream(), keep)

            def torch_run():
                return torch.fft.irfft(torch.fft.rfft(u.float(), L) * kh, L)[..., :N].bfloat16()

            ms, how = time_graph(torch, tkc_run, args.rounds)
            ms_t, how_t = time_graph(torch, torch_run, args.rounds)
            err = ((Y.view(B, D, N).float() - torch_run().float()).norm() / torch_run().float().norm()).item()
            fl = flops(B, D, N)
            emit(dict(kind="time", N=N, B=B, D=D, flops=fl, ms=ms, tflops=fl / ms / 1e9, timed=how,
                      torch_ms=ms_t, torch_timed=how_t, ratio=ms_t / ms, rel_err_vs_torch=err))
            del u, k, U, Y, kh
    with open(os.path.join(args.out, "fftconv.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    bad = [r for r in rows if r.get("status") == "FAIL"]
    print("fftconv: %d checks, %d failed; %.1f s" % (len([r for r in rows if r["kind"] == "check"]), len(bad),
                                                      time.time() - t0))
    for r in rows:
        if r["kind"] == "time":
            print("fftconv B16 D1024 N%d: tkc %.3f ms, torch.fft %.3f ms, ratio %.2f" % (
                r["N"], r["ms"], r["torch_ms"], r["ratio"]))
    return 1 if bad else 0


def time_graph(torch, f, rounds):
    f()
    torch.cuda.synchronize()
    try:
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            f()
        torch.cuda.current_stream().wait_stream(s)
        with torch.cuda.graph(g):
            for _ in range(10):
                f()
        run = g.replay
        how = "graph"
    except Exception as ex:
        print("# timed without a CUDA graph (%s)" % str(ex)[:160])
        how = "eager"

        def run():
            for _ in range(10):
                f()
    ts = []
    for _ in range(rounds):
        run()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        run()
        e1.record()
        torch.cuda.synchronize()
        ts.append(e0.elapsed_time(e1) / 10)
    return statistics.median(ts), how


def main():
    if sys.argv[1:2] == ["simulate"]:
        return simulate(sys.argv[2:])
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("build", "gpu"))
    ap.add_argument("--tkc", default=os.path.join(ROOT, "build", "tkc"))
    ap.add_argument("--tk", default=TK_FILE, help="build: the .tk (a variant of kernels.tk/fftconv.tk with its launcher)")
    ap.add_argument("--lib", default=os.path.join(ROOT, ".carry", "fftconv"))
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp") + "/fftconv")
    ap.add_argument("--quick", action="store_true", help="checks only, no timing")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    return build(a) if a.mode == "build" else gpu(a)


if __name__ == "__main__":
    sys.exit(main())
