"""tk_baselines.py - ThunderKittens' own based, hedgehog, linear_attention, mamba2 and fftconv kernels
(issues 15 and 16) as same-run baselines for tkc's kernels on the GPU.

    bash bench/tk/build.sh && bash bench/tk/build.sh tkc    # here: TK's and tkc's .so files under .carry/tk/
    python3 bench/tk_baselines.py [--out DIR] [--rounds 5] [--only based hedgehog ...]
    python3 bench/tk_baselines.py selftest                  # CPU only: the fftconv factor algebra

ThunderKittens (HazyResearch/ThunderKittens, kernels/) is never committed here: bench/tk/build.sh cuts
each kernel out of a fetched, git-ignored copy (.carry/tk/src) and compiles it with a C-ABI wrapper of
ours (bench/tk/tk_*.cu) that launches TK's kernel with TK's launch configuration on our stream.
.carry/tk/lib/tk_*.so are those; .carry/tk/tkclib/ holds tkc's libraries (bench/<kernel>.py build, and
the decayed D = 128 linear attention compiled with its C launcher).

Each kernel family runs in its own process (a TK kernel that faults or hangs cannot take the others
down; each has a time limit). For each it checks TK's output (and tkc's, on the same inputs) against
an fp64/fp32 torch reference, then times TK and tkc alternated round by round in the same process:
each implementation a CUDA graph of 10 calls, per round one warm replay and one timed replay, median of
the rounds. The same inputs (contiguous [B, H, T, D], TK's layout) go to both; the FLOP count for both
is the one bench/<kernel>.py uses (ThunderKittens' get_flops):
- based (B 16, H 16, T 1024..8192; q, k randn/16, v randn/64 as TK's benchmark): TK returns the
  numerator sum_j A_ij v_j (and the states), tkc the normalised O and Z: tkc's O * Z is compared.
- hedgehog (B 16, H 16, D 128, F 64): TK takes W [H, 128, 64], tkc [W | -W]; same function.
- linear_attention (decayed, D 128, no scale; slopes U(0, 1)): TK accumulates into O with TMA
  store-add, so O must be zeroed: 'tk' is memset + kernel (what a caller needs), 'tk_kernel' the kernel
  alone (its output then wrong: timing only).
- mamba2 (B 16, H 32, P 64, d_state 64, one group): TK's Q, K, V, A are C, B, x dt, A dt; tkc's
  BPS = 1 and 2 variants are both timed, the faster one compared.
- fftconv (B 16, D 1024): TK's kernel with seqlen L is the CIRCULAR convolution of length L (an FFT of
  size L); tkc's N is the causal convolution of length N (FFT size 2N). Rows: 'N=1024' and 'N=4096'
  pair tkc N with TK L = N (same input and output size, TK's FFT half as long); 'N=2048 causal' pairs
  tkc N = 2048 with TK L = 4096 on u and k zero-padded to 4096 (the same function and FFT size; TK
  reads and writes twice the data). The N = 1024 TK kernel has build.sh's head-indexing fix.
Rows go to OUT/tk_baselines.jsonl; the table is printed last.
"""
import argparse
import ctypes
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
TKLIB = os.path.join(ROOT, ".carry", "tk", "lib")
TKCLIB = os.path.join(ROOT, ".carry", "tk", "tkclib")
FAMILIES = ("based", "hedgehog", "linear_attention", "mamba2", "fftconv")
LIMIT_S = {"based": 90, "hedgehog": 90, "linear_attention": 45, "mamba2": 45, "fftconv": 60}
P_, LL, I_ = ctypes.c_void_p, ctypes.c_longlong, ctypes.c_int


def bench_module(name):
    """bench/<name>.py as a module (its flops, call and input helpers)"""
    spec = importlib.util.spec_from_file_location("tkc_bench_" + name, os.path.join(HERE, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def tk_fn(name, argtypes):
    fn = getattr(ctypes.CDLL(os.path.join(TKLIB, "tk_%s.so" % name)), "tk_" + name)
    fn.restype = ctypes.c_int
    fn.argtypes = argtypes
    return fn


def variant_fns(args, fam):
    """--variant FAM=PATH ...: other tkc builds of a family's kernel (the same launcher), as
    {"tkc_var1": fn, ...}, checked and timed beside the default"""
    fns = {}
    for i, path in enumerate(args.variant.get(fam, [])):
        fn = getattr(ctypes.CDLL(path), "tkc_" + fam)
        fn.restype = ctypes.c_int
        fns["tkc_var%d" % (i + 1)] = fn
    return fns


def rel(a, b):
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm().clamp(min=1e-30)).item()


def time_alternated(torch, impls, rounds):
    """{name: fn()} -> {name: ms per call}: each a CUDA graph of 10 calls; rounds alternate the order"""
    runners = {}
    for n, f in impls.items():
        f()
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            f()
        torch.cuda.current_stream().wait_stream(s)
        with torch.cuda.graph(g):
            for _ in range(10):
                f()
        runners[n] = g
    ts = {n: [] for n in runners}
    for r in range(rounds):
        for n in (list(runners) if r % 2 == 0 else list(runners)[::-1]):
            runners[n].replay()
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            runners[n].replay()
            e1.record()
            torch.cuda.synchronize()
            ts[n].append(e0.elapsed_time(e1) / 10)
    return {n: statistics.median(v) for n, v in ts.items()}


# ---- based ------------------------------------------------------------------------------------

def run_based(torch, args, emit):
    bm = bench_module("based")
    fn_tkc = ctypes.CDLL(os.path.join(TKCLIB, "based", "based.so")).tkc_based
    fn_tkc.restype = ctypes.c_int
    fn_tk = tk_fn("based", [P_] * 7 + [I_] * 3 + [P_])
    fn_vars = variant_fns(args, "based")
    keep = []
    st = lambda: torch.cuda.current_stream().cuda_stream

    def bufs(B, H, T):
        e = lambda *s: torch.empty(*s, device="cuda", dtype=torch.bfloat16)
        return e(B, H, T, 64), e(B, H, 256, 64), e(B, H, 64, 16), e(B, H, 1, 64)

    def tk(Q, K, V, o, a2, a1, a0):
        B, H, T, _ = Q.shape
        rc = fn_tk(Q.data_ptr(), K.data_ptr(), V.data_ptr(), o.data_ptr(), a2.data_ptr(), a1.data_ptr(),
                   a0.data_ptr(), B, H, T, st())
        if rc:
            raise RuntimeError("tk_based returned %d" % rc)

    for T, dist in ((1024, "normal"), (2048, "tk")):
        B, H = 2, 3
        Q, K, V = bm.make_inputs(torch, B, H, T, seed=T, layout="bhtd", dist=dist)
        o, a2, a1, a0 = bufs(B, H, T)
        o.fill_(float("nan"))
        tk(Q, K, V, o, a2, a1, a0)
        O = torch.full((B, H, T, 64), float("nan"), device="cuda", dtype=torch.bfloat16)
        Z = torch.full((B, H, T), float("nan"), device="cuda", dtype=torch.float32)
        bm.call(fn_tkc, Q, K, V, O, Z, st(), keep)
        torch.cuda.synchronize()
        want, wz = bm.reference(torch, Q, K, V)
        num = want * wz[..., None]
        emit(dict(kind="check", family="based", impl="tk", T=T, inputs=dist, rel_err=rel(o, num),
                  finite=bool(torch.isfinite(o).all()), what="TK O vs fp64 numerator (A v)"))
        emit(dict(kind="check", family="based", impl="tkc", T=T, inputs=dist, rel_err=rel(O.double() * Z.double()[..., None], num),
                  what="tkc O*Z vs fp64 numerator"))
        emit(dict(kind="check", family="based", impl="tk_vs_tkc", T=T, inputs=dist,
                  rel_err=rel(o, O.double() * Z.double()[..., None]), what="TK O vs tkc O*Z"))
        for name, fn in fn_vars.items():
            O.fill_(float("nan"))
            Z.fill_(float("nan"))
            bm.call(fn, Q, K, V, O, Z, st(), keep)
            torch.cuda.synchronize()
            emit(dict(kind="check", family="based", impl=name, T=T, inputs=dist,
                      rel_err=rel(O.double() * Z.double()[..., None], num), what="O*Z vs fp64 numerator (--variant)"))
    B, H = 16, 16
    for T in args.t:
        Q, K, V = bm.make_inputs(torch, B, H, T, seed=1, layout="bhtd", dist="tk")
        o, a2, a1, a0 = bufs(B, H, T)
        O = torch.empty(B, H, T, 64, device="cuda", dtype=torch.bfloat16)
        Z = torch.empty(B, H, T, device="cuda", dtype=torch.float32)
        impls = {"tkc": lambda: bm.call(fn_tkc, Q, K, V, O, Z, st(), keep), "tk": lambda: tk(Q, K, V, o, a2, a1, a0)}
        for name, fn in fn_vars.items():
            impls[name] = lambda fn=fn: bm.call(fn, Q, K, V, O, Z, st(), keep)
        ms = time_alternated(torch, impls, args.rounds)
        fl = bm.flops(B, H, T)
        emit(dict(kind="time", family="based", shape="B16 H16 T%d" % T, T=T, flops=fl,
                  **{n + "_ms": v for n, v in ms.items()}, **{n + "_tflops": fl / v / 1e9 for n, v in ms.items()}))


# ---- hedgehog ---------------------------------------------------------------------------------

def hedgehog_ref(torch, q, k, v, wq, wk, A, Bt, C=64):
    q, k, v, wq, wk = (x.double() for x in (q, k, v, wq, wk))
    T = q.shape[2]

    def phi(x, w):
        t = torch.einsum("bhtd,hdf->bhtf", x, w)
        return torch.cat([torch.softmax(t, -1), torch.softmax(-t, -1)], -1)

    fq, fk = phi(q, wq), phi(k, wk)
    i = torch.arange(T, device=q.device)[:, None]
    j = torch.arange(T, device=q.device)[None, :]
    win = (j <= i) & (j // C >= i // C - 1)
    lin = j // C < i // C - 1
    s = q @ k.transpose(-1, -2)
    m = s.masked_fill(~win, float("-inf")).amax(-1, keepdim=True)
    a = torch.where(win, Bt.double().view(1, -1, 1, 1) * torch.exp((s - m) / 128 ** 0.5), 0.0)
    a = a + torch.where(lin, A.double().view(1, -1, 1, 1) * (fq @ fk.transpose(-1, -2)), 0.0)
    last = (-(-T // C) - 1) * C
    return ((a @ v) / a.sum(-1, keepdim=True), fk[:, :, :last].transpose(-1, -2) @ v[:, :, :last],
            fk[:, :, :last].sum(2))


def run_hedgehog(torch, args, emit):
    hm = bench_module("hedgehog")
    fn_tkc = ctypes.CDLL(os.path.join(TKCLIB, "hedgehog", "hedgehog.so")).tkc_hedgehog
    fn_tkc.restype = ctypes.c_int
    fn_tk = tk_fn("hedgehog", [P_] * 10 + [I_] * 3 + [P_])
    fns = {"tkc": fn_tkc, **variant_fns(args, "hedgehog")}
    st = lambda: torch.cuda.current_stream().cuda_stream
    keep = []

    def tkc(Q, K, V, Wq2, Wk2, A, Bt, O, KV, KS, fn=fn_tkc):
        if len(keep) > 1000:
            del keep[:500]
        hm.call(fn, Q, K, V, Wq2, Wk2, A, Bt, O, KV, KS, st(), keep)

    def tk(Q, K, V, O, Wq, Wk, KS, KV, A, Bt):
        B, H, T, _ = Q.shape
        rc = fn_tk(Q.data_ptr(), K.data_ptr(), V.data_ptr(), O.data_ptr(), Wq.data_ptr(), Wk.data_ptr(),
                   KS.data_ptr(), KV.data_ptr(), A.data_ptr(), Bt.data_ptr(), B, H, T, st())
        if rc:
            raise RuntimeError("tk_hedgehog returned %d" % rc)

    def inputs(B, H, T, seed, vscale):
        g = torch.Generator(device="cuda").manual_seed(seed)
        Q, K, V = (torch.randn((B, H, T, 128), device="cuda", generator=g).bfloat16() for _ in range(3))
        V = (V.float() * vscale).bfloat16()
        Wq, Wk = (torch.randn((H, 128, 64), device="cuda", generator=g).bfloat16() for _ in range(2))
        A = torch.rand(H, device="cuda", generator=g) * 3
        Bt = torch.rand(H, device="cuda", generator=g)
        Wq2, Wk2 = (torch.cat([w, -w], -1).contiguous() for w in (Wq, Wk))
        return Q, K, V, Wq, Wk, Wq2, Wk2, A, Bt

    def outs(B, H, T, fill):
        f = lambda *s, dt=torch.float32: torch.full(s, fill, device="cuda", dtype=dt)
        return (f(B, H, T, 128, dt=torch.bfloat16), f(B, H, 128, 128), f(B, H, 128),   # tkc O, KV, KS
                f(B, H, T, 128, dt=torch.bfloat16), f(B, H, 128, 128), f(B, H, 1, 128))  # TK O, kv_state, k_state

    for T in (1024, 2048):
        B, H = 2, 4
        Q, K, V, Wq, Wk, Wq2, Wk2, A, Bt = inputs(B, H, T, T, 0.2)
        O, KV, KS, o, kv, ks = outs(B, H, T, float("nan"))
        tkc(Q, K, V, Wq2, Wk2, A, Bt, O, KV, KS)
        tk(Q, K, V, o, Wq, Wk, ks, kv, A, Bt)
        torch.cuda.synchronize()
        Or, KVr, KSr = hedgehog_ref(torch, Q, K, V, Wq, Wk, A, Bt)
        emit(dict(kind="check", family="hedgehog", impl="tk", T=T, rel_err=rel(o, Or), kv_rel_err=rel(kv, KVr),
                  ks_rel_err=rel(ks.view(B, H, 128), KSr), finite=bool(torch.isfinite(o).all())))
        emit(dict(kind="check", family="hedgehog", impl="tkc", T=T, rel_err=rel(O, Or), kv_rel_err=rel(KV, KVr),
                  ks_rel_err=rel(KS, KSr)))
        emit(dict(kind="check", family="hedgehog", impl="tk_vs_tkc", T=T, rel_err=rel(o, O.double())))
        for name, fn in fns.items():
            if name == "tkc":
                continue
            O2, KV2, KS2 = outs(B, H, T, float("nan"))[:3]
            tkc(Q, K, V, Wq2, Wk2, A, Bt, O2, KV2, KS2, fn=fn)
            torch.cuda.synchronize()
            emit(dict(kind="check", family="hedgehog", impl=name, T=T, rel_err=rel(O2, Or), kv_rel_err=rel(KV2, KVr),
                      ks_rel_err=rel(KS2, KSr)))
    B, H = 16, 16
    for T in args.t:
        Q, K, V, Wq, Wk, Wq2, Wk2, A, Bt = inputs(B, H, T, 1, 1.0)
        O, KV, KS, o, kv, ks = outs(B, H, T, 0.0)
        impls = {name: (lambda fn=fn: tkc(Q, K, V, Wq2, Wk2, A, Bt, O, KV, KS, fn=fn)) for name, fn in fns.items()}
        impls["tk"] = lambda: tk(Q, K, V, o, Wq, Wk, ks, kv, A, Bt)
        ms = time_alternated(torch, impls, args.rounds)
        fl = hm.flops(B, H, T)
        emit(dict(kind="time", family="hedgehog", shape="B16 H16 T%d" % T, T=T, flops=fl,
                  **{n + "_ms": v for n, v in ms.items()}, **{n + "_tflops": fl / v / 1e9 for n, v in ms.items()}))


# ---- linear attention (decayed, D = 128) ------------------------------------------------------

def run_linear_attention(torch, args, emit):
    lm = bench_module("linear_attn")
    fn_tkc = ctypes.CDLL(os.path.join(TKCLIB, "linear_attn", "linear_attn_d128_decay.so")).tkc_linear_attn
    fn_tkc.restype = ctypes.c_int
    fn_tk = tk_fn("linear_attention", [P_] * 5 + [I_] * 4 + [P_])
    st = lambda: torch.cuda.current_stream().cuda_stream
    keep = []

    def tkc(q, k, v, sl, o):
        a = []
        for t in (q, k, v, sl, o):
            s = (LL * t.dim())(*t.stride())
            keep.append(s)
            a += [P_(t.data_ptr()), s]
        if len(keep) > 1000:
            del keep[:500]
        B, H, T, _ = q.shape
        rc = fn_tkc(*a, LL(B), LL(H), LL(T), ctypes.c_float(1.0), P_(st()))
        if rc:
            raise RuntimeError("tkc_linear_attn returned %d" % rc)

    def tk(q, k, v, sl, o, zero=1):
        B, H, T, _ = q.shape
        rc = fn_tk(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), sl.data_ptr(), B, H, T, zero, st())
        if rc:
            raise RuntimeError("tk_linear_attention returned %d" % rc)

    for T in (1024, 2048):
        B, H = 2, 4
        torch.manual_seed(T)
        q, k, v = (torch.randn(B, H, T, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        sl = torch.rand(H, device="cuda", dtype=torch.float32)
        o = torch.full((B, H, T, 128), float("nan"), device="cuda", dtype=torch.bfloat16)
        O = o.clone()
        tk(q, k, v, sl, o)
        tkc(q, k, v, sl, O)
        torch.cuda.synchronize()
        want = lm.reference(q, k, v, sl, 1.0, 1)
        emit(dict(kind="check", family="linear_attention", impl="tk", T=T, rel_err=rel(o, want),
                  finite=bool(torch.isfinite(o).all())))
        emit(dict(kind="check", family="linear_attention", impl="tkc", T=T, rel_err=rel(O, want)))
        emit(dict(kind="check", family="linear_attention", impl="tk_vs_tkc", T=T, rel_err=rel(o, O.double())))
    B, H = 16, 16
    for T in args.t:
        torch.manual_seed(0)
        q, k, v = (torch.randn(B, H, T, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        sl = torch.rand(H, device="cuda", dtype=torch.float32)
        o = torch.empty(B, H, T, 128, device="cuda", dtype=torch.bfloat16)
        o2 = torch.empty_like(o)
        O = torch.empty_like(o)
        ms = time_alternated(torch, {"tkc": lambda: tkc(q, k, v, sl, O), "tk": lambda: tk(q, k, v, sl, o),
                                     "tk_kernel": lambda: tk(q, k, v, sl, o2, 0)}, args.rounds)
        fl = lm.flops(B, H, T, 128)
        emit(dict(kind="time", family="linear_attention", shape="B16 H16 T%d D128 decay" % T, T=T, flops=fl,
                  **{n + "_ms": v for n, v in ms.items()}, **{n + "_tflops": fl / v / 1e9 for n, v in ms.items()}))


# ---- mamba2 -----------------------------------------------------------------------------------

def run_mamba2(torch, args, emit):
    mm = bench_module("mamba2")
    libs = {bps: mm.launcher(ctypes.CDLL(os.path.join(TKCLIB, "mamba2", mm.variant_name(64, bps) + ".so")))
            for bps in (1, 2)}
    fn_tk = tk_fn("mamba2", [P_] * 5 + [I_] * 3 + [P_])
    st = lambda: torch.cuda.current_stream().cuda_stream
    keep = []

    def tkc(fn, d, Y):
        if len(keep) > 1000:
            del keep[:500]
        mm.call(fn, d["X"], d["Aa"], d["Cm"], d["Bm"], Y, st(), keep)

    def tk(d, Y):
        B, H, T, _ = d["X"].shape
        assert d["X"].is_contiguous() and d["Aa"].is_contiguous() and d["Cm"].is_contiguous()
        rc = fn_tk(d["Cm"].data_ptr(), d["Bm"].data_ptr(), d["X"].data_ptr(), Y.data_ptr(), d["Aa"].data_ptr(),
                   B, H, T, st())
        if rc:
            raise RuntimeError("tk_mamba2 returned %d" % rc)

    for T in (1024, 2048):
        B, H = 2, 4
        d = mm.make_inputs(torch, B, H, T, 64, seed=T, layout="bhtp")
        y = torch.full((B, H, T, 64), float("nan"), device="cuda", dtype=torch.bfloat16)
        Y = y.clone()
        tk(d, y)
        tkc(libs[2], d, Y)
        torch.cuda.synchronize()
        want = mm.reference(torch, d["X"], d["Aa"], d["Cm"], d["Bm"])
        emit(dict(kind="check", family="mamba2", impl="tk", T=T, rel_err=rel(y, want),
                  finite=bool(torch.isfinite(y).all())))
        emit(dict(kind="check", family="mamba2", impl="tkc_b2", T=T, rel_err=rel(Y, want)))
        emit(dict(kind="check", family="mamba2", impl="tk_vs_tkc", T=T, rel_err=rel(y, Y.double())))
    B, H = 16, 32
    for T in args.t:
        d = mm.make_inputs(torch, B, H, T, 64, seed=1, layout="bhtp")
        y = torch.empty(B, H, T, 64, device="cuda", dtype=torch.bfloat16)
        Y1, Y2 = torch.empty_like(y), torch.empty_like(y)
        ms = time_alternated(torch, {"tkc_b1": lambda: tkc(libs[1], d, Y1), "tkc_b2": lambda: tkc(libs[2], d, Y2),
                                     "tk": lambda: tk(d, y)}, args.rounds)
        fl = mm.flops(B, H, T, 64)
        emit(dict(kind="time", family="mamba2", shape="B16 H32 P64 N64 T%d" % T, T=T, flops=fl,
                  **{n + "_ms": v for n, v in ms.items()}, **{n + "_tflops": fl / v / 1e9 for n, v in ms.items()}))


# ---- fftconv ----------------------------------------------------------------------------------

def tk_fft_factors_np(k, L):
    """TK's inputs for its seqlen-L kernel (L = 1024 or 4096, N1 = sqrt(L)) from filters k [D, <= L]
    (numpy, zero-padded to L), as complex128: the DFT factors, twiddles (the forward ones scaled by
    1 / L) and the filter spectrum fft(k, L) as [D, N1, N1] transposed; for L = 1024 the 32 x 32 pieces
    are placed in 64 x 64 tiles as TK's Python module does (block diagonal DFTs, the rest tiled 2 x 2)."""
    import numpy as np
    n1 = int(round(math.sqrt(L)))
    a = np.arange(n1, dtype=np.float64)
    ph = 2 * np.pi * a[:, None] * a[None, :] / n1
    f, finv = np.exp(-1j * ph), np.exp(1j * ph)
    tw, twinv = np.exp(-1j * ph / n1) / L, np.exp(1j * ph / n1)
    kf = np.fft.fft(k, n=L, axis=-1).reshape(-1, n1, n1).transpose(0, 2, 1)
    if L == 1024:
        z = np.zeros((n1, n1))
        diag = lambda m: np.block([[m, z], [z, m]])
        tile = lambda m: np.tile(m, (1,) * (m.ndim - 2) + (2, 2))
        f, finv, tw, twinv, kf = diag(f), diag(finv), tile(tw), tile(twinv), tile(kf)
    return dict(kf=kf, f=f, finv=finv, tw=tw, twinv=twinv)


def bf16_np(x):
    """round to nearest even bf16, back to float32"""
    import numpy as np
    x = np.ascontiguousarray(x, dtype=np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return u.astype(np.uint32).view(np.float32).reshape(x.shape)


def tk_fft_factors(torch, k, L):
    """tk_fft_factors_np as bf16 CUDA tensors {name, name_imag} (k: a torch tensor [D, <= L])"""
    import numpy as np
    out = {}
    for n, m in tk_fft_factors_np(k.double().cpu().numpy(), L).items():
        for suf, part in (("", m.real), ("_imag", m.imag)):
            out[n + suf] = torch.from_numpy(np.ascontiguousarray(part, dtype=np.float32)).cuda().bfloat16()
    return out


def tk_fft_emulate_np(u, fac, L):
    """the TK kernel's tile algebra (fftconv_pc.cu, consumer compute) in complex128 on numpy,
    u [B, D, L] -> y [B, D, L]: X <- ((((F X) o Tw) F) o Kf) Finv o Twinv_t, y = Re(Finv X)"""
    n1 = int(round(math.sqrt(L)))
    B, D, _ = u.shape
    x = u.reshape(B, D, n1, n1)
    if L == 1024:   # four sequences per 64 x 64 tile: b, b+1 on top, b+2, b+3 below
        assert B % 4 == 0
        x = x.reshape(B // 4, 2, 2, D, 32, 32).transpose(0, 3, 1, 4, 2, 5).reshape(B // 4, D, 64, 64)
    acc = (fac["f"] @ x) * fac["tw"]
    acc = (acc @ fac["f"]) * fac["kf"]
    acc = (acc @ fac["finv"]) * fac["twinv"]
    y = (fac["finv"] @ acc).real
    if L == 1024:
        y = y.reshape(B // 4, D, 2, 32, 2, 32).transpose(0, 2, 4, 1, 3, 5).reshape(B, D, 32, 32)
    return y.reshape(B, D, L)


def selftest(_args):
    """CPU (numpy): TK's tile algebra with these factors is the circular convolution of length L, in
    fp64 and with the factors rounded to bf16 as the kernel gets them"""
    import numpy as np
    rng = np.random.default_rng(0)
    bad = 0
    for L, B, D in ((1024, 8, 3), (4096, 2, 3)):
        u = rng.standard_normal((B, D, L))
        k = rng.standard_normal((D, L)) / math.sqrt(L)
        want = np.fft.irfft(np.fft.rfft(u, L) * np.fft.rfft(k, L), L)
        fac = tk_fft_factors_np(k, L)
        fac_bf = {n: bf16_np(m.real) + 1j * bf16_np(m.imag) for n, m in fac.items()}
        for name, fc, tol in (("fp64", fac, 1e-12), ("bf16 factors", fac_bf, 2e-2)):
            y = tk_fft_emulate_np(u, fc, L)
            e = float(np.linalg.norm(y - want) / np.linalg.norm(want))
            ok = e < tol
            bad += not ok
            print("selftest L=%d %s: TK tile algebra vs circular convolution: rel_err %.2e %s" % (
                L, name, e, "ok" if ok else "FAIL"))
    return 1 if bad else 0


def circular_ref(torch, u, k, L):
    return torch.fft.irfft(torch.fft.rfft(u.double(), L) * torch.fft.rfft(k.double(), L), L)


def run_fftconv(torch, args, emit):
    fm = bench_module("fftconv")
    tkc_fns = {}
    with open(os.path.join(TKCLIB, "fftconv", "manifest.json")) as f:
        for v in json.load(f)["variants"]:
            fn = ctypes.CDLL(os.path.join(TKCLIB, "fftconv", v["lib"])).tkc_fftconv
            fn.restype = ctypes.c_int
            tkc_fns[v["N"]] = fn
    fn_tk = tk_fn("fftconv", [P_] * 12 + [I_] * 4 + [P_])
    st = lambda: torch.cuda.current_stream().cuda_stream
    keep = []
    names = ("kf", "kf_imag", "f", "f_imag", "finv", "finv_imag", "tw", "tw_imag", "twinv", "twinv_imag")

    def tk(U, fac, O, L):
        B, D = U.shape[0], U.shape[1]
        n1 = int(round(math.sqrt(L)))
        rc = fn_tk(U.data_ptr(), *[fac[n].data_ptr() for n in names], O.data_ptr(), B, D, L, n1, st())
        if rc:
            raise RuntimeError("tk_fftconv returned %d" % rc)

    def tkc(N, U, cst, Kf, Y):
        if len(keep) > 1000:
            del keep[:500]
        rc = fm.call(tkc_fns[N], U, cst, Kf, Y, N, st(), keep)
        if rc:
            raise RuntimeError("tkc_fftconv returned %d" % rc)

    # checks: TK against the circular reference (B > 2 and more channels than blocks: the fixed
    # head indexing), and TK's L = 4096 on zero-padded inputs against tkc N = 2048
    g = torch.Generator(device="cuda").manual_seed(5)
    for L, B, D in ((1024, 8, 300), (4096, 4, 300)):
        u = torch.randn(B, D, L, device="cuda", generator=g).bfloat16()
        k = (torch.randn(D, L, device="cuda", generator=g) / math.sqrt(L)).bfloat16()
        fac = tk_fft_factors(torch, k, L)
        O = torch.full_like(u, float("nan"))
        tk(u, fac, O, L)
        torch.cuda.synchronize()
        emit(dict(kind="check", family="fftconv", impl="tk", L=L, B=B, D=D, what="circular conv, length L",
                  rel_err=rel(O, circular_ref(torch, u, k, L)), finite=bool(torch.isfinite(O).all())))
    B, D, N = 4, 300 - 300 % 8, 2048
    u = torch.randn(B, D, N, device="cuda", generator=g).bfloat16()
    k = (torch.randn(D, N, device="cuda", generator=g) / math.sqrt(N)).bfloat16()
    up = torch.nn.functional.pad(u, (0, N))
    fac = tk_fft_factors(torch, k, 2 * N)
    O = torch.full_like(up, float("nan"))
    tk(up, fac, O, 2 * N)
    H_, G, _ = fm.shape(N)
    cst, Kf = fm.device_constants(torch, N, k)
    Y = torch.full((B, D // G, 64, 64), float("nan"), device="cuda", dtype=torch.bfloat16)
    tkc(N, u.view(B, D // G, 64, 64), cst, Kf, Y)
    torch.cuda.synchronize()
    want = circular_ref(torch, u, k, 2 * N)[..., :N]
    emit(dict(kind="check", family="fftconv", impl="tk", L=2 * N, B=B, D=D, what="causal N=2048 via L=4096 zero-padded",
              rel_err=rel(O[..., :N], want)))
    emit(dict(kind="check", family="fftconv", impl="tkc", N=N, B=B, D=D, rel_err=rel(Y.view(B, D, N), want)))
    emit(dict(kind="check", family="fftconv", impl="tk_vs_tkc", N=N, B=B, D=D,
              rel_err=rel(O[..., :N], Y.view(B, D, N).double())))

    B, D = 16, 1024
    for label, N, L, pad in (("N=1024 (TK circular L=1024)", 1024, 1024, False),
                             ("N=2048 causal (TK L=4096, padded)", 2048, 4096, True),
                             ("N=4096 (TK circular L=4096)", 4096, 4096, False)):
        u = torch.randn(B, D, N, device="cuda").bfloat16()
        k = (torch.randn(D, N, device="cuda") / math.sqrt(N)).bfloat16()
        H_, G, _ = fm.shape(N)
        cst, Kf = fm.device_constants(torch, N, k)
        U = u.view(B, D // G, 64, 64)
        Y = torch.empty(B, D // G, 64, 64, device="cuda", dtype=torch.bfloat16)
        ut = torch.nn.functional.pad(u, (0, L - N)).contiguous() if pad else u
        fac = tk_fft_factors(torch, k, L)
        O = torch.empty_like(ut)
        ms = time_alternated(torch, {"tkc": lambda: tkc(N, U, cst, Kf, Y), "tk": lambda: tk(ut, fac, O, L)},
                             args.rounds)
        ref_c = circular_ref(torch, u[:2, :64].float(), k[:64].float(), 2 * N)[..., :N]
        ref_t = circular_ref(torch, ut[:2, :64].float(), torch.nn.functional.pad(k[:64], (0, L - N)).float(), L)
        emit(dict(kind="time", family="fftconv", shape="B16 D1024 " + label, N=N, L_tk=L,
                  tkc_ms=ms["tkc"], tk_ms=ms["tk"], tkc_flops=fm.flops(B, D, N),
                  tk_flops=2 * 10 * L * math.log2(L) * D * B,
                  tkc_tflops=fm.flops(B, D, N) / ms["tkc"] / 1e9,
                  tk_tflops=2 * 10 * L * math.log2(L) * D * B / ms["tk"] / 1e9,
                  tkc_rel_err=rel(Y.view(B, D, N)[:2, :64], ref_c), tk_rel_err=rel(O[:2, :64], ref_t)))


# ---- driver -----------------------------------------------------------------------------------

def child(args):
    import torch
    fam = args.only[0]
    rows = []
    path = os.path.join(args.out, "tk_%s.jsonl" % fam)

    def emit(r):
        rows.append(r)
        print(json.dumps(r), flush=True)
        with open(path, "a") as f:
            f.write(json.dumps(r) + "\n")

    t0 = time.time()
    globals()["run_" + fam](torch, args, emit)
    print("# %s done in %.1f s" % (fam, time.time() - t0), flush=True)
    return 0


def table(rows):
    print("\nkernel            shape                                    tkc          TK           tkc/TK")
    for r in rows:
        if r["kind"] != "time":
            continue
        fam = r["family"]
        if fam == "fftconv":
            print("%-17s %-40s %7.3f ms   %7.3f ms   %.2f (by time)" % (fam, r["shape"], r["tkc_ms"], r["tk_ms"],
                                                                        r["tk_ms"] / r["tkc_ms"]))
            continue
        tkc_keys = [k for k in r if k.startswith("tkc") and k.endswith("_ms")]
        best = min(tkc_keys, key=lambda k: r[k])
        tag = "" if best == "tkc_ms" else " (%s)" % best[:-3]
        line = "%-17s %-40s %7.1f TF/s   %7.1f TF/s   %.2f%s" % (
            fam, r["shape"], r[best[:-3] + "_tflops"], r["tk_tflops"], r[best[:-3] + "_tflops"] / r["tk_tflops"], tag)
        if "tk_kernel_tflops" in r:
            line += "; TK kernel alone %.1f TF/s (%.2f)" % (r["tk_kernel_tflops"], r[best[:-3] + "_tflops"] / r["tk_kernel_tflops"])
        print(line)


def main():
    if sys.argv[1:2] == ["selftest"]:
        return selftest(sys.argv[2:])
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "/tmp"), "tk_baselines"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", nargs="*", default=list(FAMILIES), choices=FAMILIES)
    ap.add_argument("--t", type=int, nargs="*", default=[1024, 2048, 4096, 8192])
    ap.add_argument("--variant", nargs="*", default=[], metavar="FAMILY=LIB",
                    help="another tkc library of a family (based, hedgehog), checked and timed beside the default")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    variants = args.variant
    args.variant = {}
    for v in variants:
        fam, path = v.split("=", 1)
        args.variant.setdefault(fam, []).append(path)
    os.makedirs(args.out, exist_ok=True)
    if args.child:
        return child(args)
    with open(os.path.join(TKLIB, "manifest.json")) as f:
        print("# ThunderKittens libraries: %s" % f.read().strip())
    rows, failed = [], []
    for fam in args.only:
        path = os.path.join(args.out, "tk_%s.jsonl" % fam)
        if os.path.exists(path):
            os.remove(path)
        cmd = [sys.executable, os.path.abspath(__file__), "--child", "--only", fam, "--out", args.out,
               "--rounds", str(args.rounds), "--t", *map(str, args.t)] + (["--variant", *variants] if variants else [])
        t0 = time.time()
        try:
            rc = subprocess.run(cmd, timeout=LIMIT_S[fam]).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout after %d s" % LIMIT_S[fam]
        print("# %s: rc %s, %.1f s" % (fam, rc, time.time() - t0), flush=True)
        if rc != 0:
            failed.append("%s (rc %s)" % (fam, rc))
        if os.path.exists(path):
            with open(path) as f:
                rows += [json.loads(x) for x in f]
    with open(os.path.join(args.out, "tk_baselines.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    print("\nchecks (relative error; impl tk_vs_tkc: the two kernels' outputs against each other):")
    for r in rows:
        if r["kind"] == "check":
            extra = "".join(" %s %.2e" % (k, r[k]) for k in ("kv_rel_err", "ks_rel_err") if k in r)
            print("  %-16s %-10s %s rel_err %.2e%s%s" % (r["family"], r["impl"],
                  " ".join("%s=%s" % (k, r[k]) for k in ("T", "L", "N", "B", "D", "inputs") if k in r),
                  r["rel_err"], extra, ("  [%s]" % r["what"]) if "what" in r else ""))
    if failed:
        print("\nfailed: " + ", ".join(failed))
    table(rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
