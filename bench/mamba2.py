#!/usr/bin/env python3
"""mamba2.py - tkc's Mamba-2 SSD chunked forward (kernels.tk/mamba2.tk) on the GPU: checks against an
fp64 PyTorch reference of the SSD recurrence, then times it in CUDA graphs.

    python3 bench/mamba2.py simulate                   # CPU only (numpy): the kernel's chunked math
    python3 bench/mamba2.py build --tkc build/tkc --out .carry/mamba2   # needs nvcc, no GPU
    python3 bench/mamba2.py gpu --lib .carry/mamba2 [--out DIR] [--quick] [--rounds N]
    python3 bench/mamba2.py triton --mamba-ssm DIR [--lib LIB] [--t 2048 ...] [--ns 64 128]
                                                       # mamba-ssm's Triton baseline (and tkc's, with --lib)

`build` runs tkc for each variant (d_state NS = 64 with BPS = 2 and 1 blocks per SM, NS = 128 with 1), compiles
each to a shared library with nvcc (sm_90a) and writes manifest.json: the variants, the launcher's
declaration from `tkc --emit=report` (the parameter order `gpu` calls it with) and ptxas' registers
and spills. `gpu` loads those libraries with ctypes (no compiler needed on the GPU machine) and:
- checks every variant against an fp64 reference, Y[t] = sum_{s <= t} exp(cs_t - cs_s) (C_t . B_s) X_s
  (cs the cumsum of A dt along t; the quadratic form, one (b, h) at a time, from the same bf16 inputs),
  at T = 1024, 2048, 4096, 8192 and the ragged T = 1000, 333, 100, 1, in mamba-ssm's layout
  (x, y [B, T, H, P] passed as [B, H, T, P] transposed views) and once contiguous [B, H, T, P]:
  relative error ||y - ref|| / ||ref|| < 1e-2, outputs NaN-filled first and every element finite;
- times B = 16, H = 32, P = 64 at T = 1024, 2048, 4096, 8192 for each variant (10 launches captured
  in a CUDA graph, median over rounds).
Aa is the [B, H, T] view of a [B, H, 4 cdiv(T, 4)] tensor (TMA needs 16-byte row pitches; the
launcher rejects others with TKC_ERR_STRIDE). Inputs as ThunderKittens' benchmark draws them: x ~ N(0, 1), dt = softplus(N(0, 1) - 4),
A = -exp(U(0, 1)) per head, B, C ~ N(0, 1); the kernel takes X = bf16(x dt), Aa = A dt (fp32
[B, H, T]), bf16 B and C.
FLOPs: ThunderKittens' count (kernels/mamba2/benchmark.py, get_flops) with N for its state
dimension, written out in kernels.tk/mamba2.tk and in flops() below.
Rows go to OUT/mamba2.jsonl; the exit status is 1 if a check failed.
"""
import argparse
import ctypes
import json
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
TK_FILE = os.path.join(ROOT, "kernels.tk", "mamba2.tk")
Q = 64                                   # the kernel's chunk
PD = 64                                  # head dim P
VARIANTS = [(64, 2), (64, 1), (128, 1)]   # (NS, BPS): at NS = 128 two blocks do not fit the shared memory (tkc rejects BPS = 2)
CHECK_T = (1024, 2048, 4096, 8192, 1000, 333, 100, 1)
TIME_T = (1024, 2048, 4096, 8192)
NVCC = ["nvcc", "-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-Xcompiler", "-fPIC", "-shared"]
DECL = ("int tkc_mamba2(const void *X, const int64_t *X_strides, const void *Aa, const int64_t *Aa_strides, "
        "const void *Cm, const int64_t *Cm_strides, const void *Bm, const int64_t *Bm_strides, void *Y, "
        "const int64_t *Y_strides, int64_t B, int64_t H, int64_t T, tkc_stream_t stream)")


def flops(B, H, T, N, P=PD, G=1):
    """ThunderKittens' get_flops (kernels/mamba2/benchmark.py), its state dimension 64 replaced by N."""
    nc = T // Q
    f = T * H * (1 + 2 * Q)                       # cumsum, segsum, exp
    f += 2 * nc * G * Q * Q * N                   # C B^T, once per group
    f += nc * H * Q * Q                           # L mask
    f += 2 * nc * H * Q * Q * P                   # (C B^T o L) X
    f += 2 * nc * H * Q                           # decay states
    f += 2 * nc * H * Q * P * N                   # chunk states
    f += 2 * H * nc * nc                          # chunk decay
    f += nc * H * P * N                           # state update
    f += nc * H * Q                               # decay out
    f += 2 * nc * H * Q * P * N                   # C H
    f += nc * H * Q * P                           # state multiply
    f += nc * Q * H * P                           # final addition
    return B * f


def variant_name(ns, bps):
    return "mamba2_n%d_b%d" % (ns, bps)


# ---- simulate: the kernel's chunked algorithm in numpy, with its bf16 roundings ------------------

def simulate(_args):
    import numpy as np

    def bf16(x):  # round to nearest even, to bf16, back to fp32
        x = np.ascontiguousarray(x, dtype=np.float32)
        u = x.view(np.uint32).astype(np.uint64)
        u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
        return u.astype(np.uint32).view(np.float32).reshape(x.shape)

    def kernel(X, a, Cm, Bm, ns):
        """one (b, h): X [T, P], a [T], Cm, Bm [T, N], as kernels.tk/mamba2.tk computes it"""
        T = X.shape[0]
        nc = -(-T // Q)
        pad = nc * Q - T        # TMA's zero fill of the last chunk
        X, Cm, Bm = (np.concatenate([v, np.zeros((pad, v.shape[1]), np.float32)]) for v in (X, Cm, Bm))
        a = np.concatenate([a, np.zeros(pad, np.float32)])
        ht = np.zeros((PD, ns), np.float32)              # the transposed state, P x N
        r = np.arange(Q)[:, None]
        t = np.arange(Q)[None, :]
        y_all = np.zeros((nc * Q, PD), np.float32)
        for c in range(nc):
            sl = slice(c * Q, (c + 1) * Q)
            x, cc, bb, ac = X[sl], Cm[sl], Bm[sl], a[sl]
            cs = np.cumsum(ac).astype(np.float32)
            hs = bf16(ht)
            y = (cc @ hs.T) * np.exp(cs)[:, None]
            s = cc @ bb.T
            s = np.where(t <= r, s * np.exp(cs[:, None] - cs[None, :]), 0).astype(np.float32)
            y = y + bf16(s) @ x
            e = cs[-1]
            bs = bf16(bb * np.exp(e - cs)[:, None])
            ht = ht * np.float32(np.exp(e)) + x.T @ bs
            y_all[sl] = bf16(y)
        return y_all[:T]

    def ref(X, a, Cm, Bm):
        X, a, Cm, Bm = (v.astype(np.float64) for v in (X, a, Cm, Bm))
        cs = np.cumsum(a)
        d = cs[:, None] - cs[None, :]
        T = X.shape[0]
        m = np.tril(np.ones((T, T), bool))
        L = np.where(m, np.exp(np.where(m, d, 0)), 0)
        return ((Cm @ Bm.T) * L) @ X

    rng = np.random.default_rng(0)
    bad = 0
    for ns in (64, 128):
        for T in (1024, 333, 100, 1):
            H = 2
            A = -np.exp(rng.uniform(0, 1, H))
            for h in range(H):
                x = rng.standard_normal((T, PD)).astype(np.float32)
                dt = np.log1p(np.exp(rng.standard_normal(T) - 4)).astype(np.float32)
                X = bf16(x * dt[:, None])
                a = (A[h] * dt).astype(np.float32)
                Cm, Bm = (bf16(rng.standard_normal((T, ns)).astype(np.float32)) for _ in range(2))
                y, want = kernel(X, a, Cm, Bm, ns), ref(X, a, Cm, Bm)
                err = np.linalg.norm(y - want) / max(np.linalg.norm(want), 1e-30)
                ok = err < 1e-2 and np.isfinite(y).all()
                bad += not ok
                print(json.dumps(dict(kind="simulate", NS=ns, T=T, h=h, A=float(A[h]), rel_err=float(err),
                                      status="ok" if ok else "FAIL")), flush=True)
    print("simulate: %s" % ("all ok" if not bad else "%d FAILED" % bad))
    return 1 if bad else 0


# ---- build: the libraries, on a machine with nvcc ---------------------------------------------

def build(args):
    os.makedirs(args.out, exist_ok=True)
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--", "src", "kernels.tk/mamba2.tk",
                                 "templates"], capture_output=True, text=True).stdout.strip())
    man = dict(commit=commit, dirty=dirty, variants=[])
    extra = [d for d in args.defines.split(",") if d]
    for ns, bps in VARIANTS:
        name = variant_name(ns, bps) + "".join("_" + d.replace("=", "") for d in extra)
        defs = ["-D", "NS=%d" % ns, "-D", "BPS=%d" % bps] + sum((["-D", d] for d in extra), [])
        rep = json.loads(subprocess.run([args.tkc, TK_FILE, "--emit=report"] + defs, check=True, capture_output=True,
                                        text=True).stdout)
        decl = rep["kernels"][0]["launcher"]["declaration"]
        if decl != DECL:
            raise SystemExit("launcher changed: %s (this script calls %s)" % (decl, DECL))
        cu = os.path.join(args.out, name + ".cu")
        subprocess.run([args.tkc, TK_FILE, "-o", cu] + defs, check=True)
        r = subprocess.run(NVCC + ["-Xptxas", "-v", cu, "-o", cu[:-3] + ".so"], capture_output=True, text=True)
        if r.returncode:
            raise SystemExit(r.stderr[-2000:])
        regs = re.findall(r"Used (\d+) registers", r.stderr)
        spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", r.stderr)
        man["variants"].append(dict(name=name, NS=ns, BPS=bps, lib=name + ".so", declaration=decl,
                                    registers=[int(x) for x in regs], spills=[list(map(int, s)) for s in spills]))
        os.remove(cu)
        print("built %s: registers %s, spills %s" % (name, regs, spills), flush=True)
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(man, f, indent=1)
    return 0


# ---- the GPU run ------------------------------------------------------------------------------

P_, LL = ctypes.c_void_p, ctypes.c_longlong


def launcher(lib):
    fn = lib.tkc_mamba2
    fn.restype = ctypes.c_int
    return fn


def call(fn, X, Aa, Cm, Bm, Y, stream, keep):
    """the launcher, in DECL's order: each tensor with its strides (elements), then B, H, T, the stream"""
    args = []
    for t in (X, Aa, Cm, Bm, Y):
        st = (LL * t.dim())(*t.stride())
        keep.append(st)
        args += [P_(t.data_ptr()), st]
    B, H, T, _ = X.shape
    args += [LL(B), LL(H), LL(T), P_(stream)]
    rc = fn(*args)
    if rc:
        raise RuntimeError("tkc_mamba2 returned %d" % rc)


def make_inputs(torch, B, H, T, N, seed, layout="mamba"):
    """mamba-ssm's tensors and the kernel's: X = bf16(x dt) and Y as [B, H, T, P] views of [B, T, H, P]
    tensors (layout 'mamba') or contiguous [B, H, T, P] ('bhtp')"""
    g = torch.Generator(device="cuda")
    g.manual_seed(seed)
    x = torch.randn(B, T, H, PD, device="cuda", generator=g)
    dt = torch.nn.functional.softplus(torch.randn(B, T, H, device="cuda", generator=g) - 4)
    A = -torch.exp(torch.rand(H, device="cuda", generator=g))
    Bm = torch.randn(B, T, N, device="cuda", generator=g).bfloat16()
    Cm = torch.randn(B, T, N, device="cuda", generator=g).bfloat16()
    Xm = (x * dt[..., None]).bfloat16()                     # [B, T, H, P]
    X = Xm.transpose(1, 2) if layout == "mamba" else Xm.transpose(1, 2).contiguous()
    # fp32 [B, H, T]: TMA wants 16-byte row pitches, so a T that is not a multiple of 4 is padded
    # (the [B, H, T] view of a [B, H, 4 cdiv(T, 4)] tensor; the launcher rejects an odd pitch)
    Aa = torch.zeros(B, H, (T + 3) // 4 * 4, device="cuda")
    Aa[:, :, :T] = (A * dt).transpose(1, 2)
    Aa = Aa[:, :, :T]
    return dict(x=x, dt=dt, A=A, X=X, Aa=Aa, Bm=Bm, Cm=Cm)


def reference(torch, X, Aa, Cm, Bm):
    """fp64 quadratic form per (b, h): Y = ((C B^T) o L) X, L[t, s] = exp(cs_t - cs_s) for s <= t"""
    B, H, T, P = X.shape
    y = torch.empty(B, H, T, P, device=X.device, dtype=torch.float64)
    m = torch.ones(T, T, device=X.device, dtype=torch.bool).tril()
    for b in range(B):
        cb = Cm[b].double() @ Bm[b].double().T
        for h in range(H):
            cs = Aa[b, h].double().cumsum(0)
            L = torch.where(m, torch.exp((cs[:, None] - cs[None, :]).masked_fill(~m, 0)), 0)
            y[b, h] = (cb * L) @ X[b, h].double()
    return y


def time_graph(torch, f, rounds):
    f()
    torch.cuda.synchronize()
    run = None
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
    libs, names = {}, {}
    for v in man["variants"]:
        assert v["declaration"] == DECL, v["declaration"]
        libs[(v["NS"], v["BPS"])] = launcher(ctypes.CDLL(os.path.join(os.path.abspath(args.lib), v["lib"])))
        names[(v["NS"], v["BPS"])] = v["name"]
    keep = []

    def run(fn, d, Y):
        call(fn, d["X"], d["Aa"], d["Cm"], d["Bm"], Y, torch.cuda.current_stream().cuda_stream, keep)

    # ---- correctness
    check_t = CHECK_T if not args.quick else (1024, 333, 1)
    for (ns, bps), fn in libs.items():
        cases = [(T, "mamba") for T in check_t] + [(333, "bhtp")]
        for T, layout in cases:
            B, H = (2, 3) if T <= 2048 else (1, 2)
            d = make_inputs(torch, B, H, T, ns, seed=T + ns + bps, layout=layout)
            ym = torch.full((B, T, H, PD), float("nan"), device="cuda", dtype=torch.bfloat16)
            Y = ym.transpose(1, 2) if layout == "mamba" else torch.full((B, H, T, PD), float("nan"), device="cuda",
                                                                        dtype=torch.bfloat16)
            run(fn, d, Y)
            torch.cuda.synchronize()
            want = reference(torch, d["X"], d["Aa"], d["Cm"], d["Bm"])
            err = ((Y.double() - want).norm() / want.norm().clamp(min=1e-30)).item()
            finite = bool(torch.isfinite(Y).all().item())
            ok = err < 1e-2 and finite
            emit(dict(kind="check", variant=names[(ns, bps)], NS=ns, BPS=bps, B=B, H=H, T=T, layout=layout,
                      rel_err=err, finite=finite, status="ok" if ok else "FAIL"))
    print("# checks took %.1f s" % (time.time() - t0), flush=True)

    # ---- timing
    if not args.quick:
        B, H = 16, 32
        for (ns, bps), fn in libs.items():
            for T in TIME_T:
                d = make_inputs(torch, B, H, T, ns, seed=1, layout="mamba")
                Y = torch.empty(B, T, H, PD, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
                ms, how = time_graph(torch, lambda: run(fn, d, Y), args.rounds)
                fl = flops(B, H, T, ns)
                emit(dict(kind="time", variant=names[(ns, bps)], NS=ns, BPS=bps, B=B, H=H, P=PD, T=T, flops=fl,
                          ms=ms, tflops=fl / ms / 1e9, timed=how))
                del d, Y
    with open(os.path.join(args.out, "mamba2.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    bad = [r for r in rows if r.get("status") == "FAIL"]
    checks = [r for r in rows if r["kind"] == "check"]
    print("mamba2: %d checks, %d failed, worst rel_err %.2e; %.1f s" % (
        len(checks), len(bad), max(r["rel_err"] for r in checks), time.time() - t0))
    for r in rows:
        if r["kind"] == "time":
            print("%s B16 H32 P64 N%d T%d: %.3f ms, %.1f TFLOP/s" % (r["variant"], r["NS"], r["T"], r["ms"], r["tflops"]))
    return 1 if bad else 0


# ---- mamba-ssm's Triton baseline --------------------------------------------------------------

def graph_of(torch, f):
    """f captured 10 times in a CUDA graph (after a warm call): the replay, and how it is timed"""
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
        return g.replay, "graph", g
    except Exception as ex:
        print("# timed without a CUDA graph (%s)" % str(ex)[:160])

        def run():
            for _ in range(10):
                f()
        return run, "eager", None


def triton_baseline(args):
    """mamba_chunk_scan_combined from mamba-ssm's Triton files alone (the package root needs its CUDA
    extensions): a stub package 'mamba_ssm' whose path is the unpacked source's mamba_ssm folder.
    With --lib (a `build` output) tkc's variants of each d_state run in the same process on the same
    inputs, alternated with the Triton function round by round (one warm and one timed replay of a
    10-call CUDA graph each per round, median of the rounds)."""
    import importlib
    import types
    import torch
    root = os.path.abspath(args.mamba_ssm)
    pkg = types.ModuleType("mamba_ssm")
    pkg.__path__ = [os.path.join(root, "mamba_ssm")]
    sys.modules["mamba_ssm"] = pkg
    for sub in ("ops", "ops.triton", "utils"):
        m = types.ModuleType("mamba_ssm." + sub)
        m.__path__ = [os.path.join(root, "mamba_ssm", *sub.split("."))]
        sys.modules["mamba_ssm." + sub] = m
    sc = importlib.import_module("mamba_ssm.ops.triton.ssd_combined")
    f = sc.mamba_chunk_scan_combined
    libs, names = {}, {}
    if args.lib and os.path.exists(os.path.join(args.lib, "manifest.json")):
        with open(os.path.join(args.lib, "manifest.json")) as fh:
            man = json.load(fh)
        for v in man["variants"]:
            assert v["declaration"] == DECL, v["declaration"]
            libs[(v["NS"], v["BPS"])] = launcher(ctypes.CDLL(os.path.join(os.path.abspath(args.lib), v["lib"])))
            names[(v["NS"], v["BPS"])] = v["name"]
    keep = []
    rows = []
    B, H = 16, 32
    for T in args.t:
        for ns in args.ns:
            d = make_inputs(torch, B, H, T, ns, seed=1)
            x = d["x"].bfloat16()
            Bg, Cg = d["Bm"][:, :, None, :], d["Cm"][:, :, None, :]
            t0 = time.time()
            y = f(x, d["dt"], d["A"], Bg, Cg, Q)
            torch.cuda.synchronize()
            first = time.time() - t0
            # a check on two heads of the first batch: the same function as tkc's
            sub = dict(X=(x * d["dt"][..., None]).bfloat16().transpose(1, 2)[:1, :2], Aa=d["Aa"][:1, :2],
                       Cm=d["Cm"][:1], Bm=d["Bm"][:1])
            want = reference(torch, sub["X"], sub["Aa"], sub["Cm"], sub["Bm"])
            impls = {"mamba_ssm_triton": (lambda: f(x, d["dt"], d["A"], Bg, Cg, Q),
                                          ((y.transpose(1, 2)[:1, :2].double() - want).norm() / want.norm()).item())}
            for (lns, bps), fn in libs.items():
                if lns != ns:
                    continue
                Y = torch.empty(B, T, H, PD, device="cuda", dtype=torch.bfloat16).transpose(1, 2)

                def run(fn=fn, Y=Y):
                    call(fn, d["X"], d["Aa"], d["Cm"], d["Bm"], Y, torch.cuda.current_stream().cuda_stream, keep)
                run()
                torch.cuda.synchronize()
                err = ((Y[:1, :2].double() - want).norm() / want.norm()).item()
                impls[names[(ns, bps)]] = (run, err)
            graphs = {k: graph_of(torch, fn) for k, (fn, _) in impls.items()}
            ts = {k: [] for k in impls}
            for _ in range(args.rounds):
                for k, (rep, _, _) in graphs.items():
                    rep()
                    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    e0.record()
                    rep()
                    e1.record()
                    torch.cuda.synchronize()
                    ts[k].append(e0.elapsed_time(e1) / 10)
            fl = flops(B, H, T, ns)
            for k in impls:
                ms = statistics.median(ts[k])
                row = dict(kind="time", variant=k, NS=ns, B=B, H=H, P=PD, T=T, flops=fl, ms=ms, tflops=fl / ms / 1e9,
                           timed=graphs[k][1], rel_err=impls[k][1])
                if k == "mamba_ssm_triton":
                    row["first_call_s"] = first
                rows.append(row)
                print(json.dumps(row), flush=True)
            del graphs, impls, d
            torch.cuda.empty_cache()
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "mamba2_triton.jsonl"), "w") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    for r in rows:
        print("%-18s B16 H32 P64 N%d T%d: %.3f ms, %.1f TFLOP/s (rel_err %.1e)" % (
            r["variant"], r["NS"], r["T"], r["ms"], r["tflops"], r["rel_err"]))
    bad = [r for r in rows if not r["rel_err"] < 1e-2]
    return 1 if bad else 0


def main():
    if sys.argv[1:2] == ["simulate"]:
        return simulate(sys.argv[2:])
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("build", "gpu", "triton"))
    ap.add_argument("--tkc", default=os.path.join(ROOT, "build", "tkc"))
    ap.add_argument("--lib", default=os.path.join(ROOT, ".carry", "mamba2"), help="build's output (triton mode: also time these)")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp") + "/mamba2")
    ap.add_argument("--quick", action="store_true", help="a few checks, no timing")
    ap.add_argument("--defines", default="", help="build: more -D for every variant, comma-separated (STAGES=3)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--mamba-ssm", default="", help="the unpacked mamba-ssm 2.3.2 source (triton mode)")
    ap.add_argument("--t", type=int, nargs="*", default=[2048])
    ap.add_argument("--ns", type=int, nargs="*", default=[64])
    a = ap.parse_args()
    if a.mode == "build":
        return build(a)
    if a.mode == "triton":
        return triton_baseline(a)
    return gpu(a)


if __name__ == "__main__":
    sys.exit(main())
