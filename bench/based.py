#!/usr/bin/env python3
"""based.py - tkc's Based linear attention forward (kernels.tk/based.tk): the kernel's chunked
arithmetic in numpy, the ctypes libraries, and a GPU check and timing.

    python3 bench/based.py simulate                   # CPU only (numpy): the kernel's chunked math
    python3 bench/based.py build --tkc build/tkc --out .carry/based   # needs nvcc, no GPU
    python3 bench/based.py gpu --lib .carry/based [--out DIR] [--quick] [--rounds N] [--no-fla]

STATUS: `simulate` and `build` have been run (on a machine with nvcc and no GPU); `gpu` is written
but has NOT been run on a GPU yet: no check or timing of the kernel on hardware exists.

The function (per batch b, head h, position i < T; q, k: bf16 [T, 16], v: bf16 [T, 64]):
    phi(x) = [1, x / 16^(1/4), vec(x x^T) / (sqrt(2) sqrt(16))]     (1 + 16 + 256 = 273 features)
    A_ij = phi(q_i) . phi(k_j) = 1 + s + s^2 / 2,  s = q_i . k_j / 4   (j <= i)
    O_i = (sum_{j <= i} A_ij v_j) / Z_i,  Z_i = sum_{j <= i} A_ij = phi(q_i) . sum_{j <= i} phi(k_j)
The kernel returns the quotient O (bf16 [B, H, T, 64], what fla-core's fused_chunk_based /
parallel_based return with use_norm=True, there with + 1e-6 in the denominator) and the denominator
Z (fp32 [B, H, T]); ThunderKittens' based kernel returns the numerator O Z (and the recurrent
states, which this kernel does not write), so O * Z is what compares with it.

`simulate` runs kernels.tk/based.tk's chunked algorithm step by step in numpy with its bf16 roundings
(the order-2 feature tiles qf, kf, the states' bf16 copies a2s, a1s, ms, the score pieces as product
operands, the output) against an fp64 quadratic-form reference, at T = 1024, 333, 100 and 1:
relative error ||O - ref|| / ||ref|| < 1e-2 (and the same for Z).

`build` runs tkc, compiles the CUDA to a shared library with nvcc (sm_90a) and writes manifest.json:
the launcher's declaration from `tkc --emit=report` and ptxas' registers and spills.

`gpu` loads the library with ctypes (no compiler needed on the GPU machine) and:
- checks it against a torch fp64 quadratic-form reference (one (b, h) at a time, from the same bf16
  inputs) at T = 1024, 2048, 4096, 8192 and the ragged T = 1000, 333, 100, 1 in the [B, T, H, D]
  layout (q, k, v, O as [B, H, T, D] transposed views, as fla stores them), and once contiguous
  [B, H, T, D]: relative error < 1e-2 for O and for Z; O and Z NaN-filled first, every element
  finite afterwards;
- times B = 16, H = 16, T = 1024, 2048, 4096, 8192 (10 launches captured in a CUDA graph, median
  over rounds) against fla-core 0.6.0's fused_chunk_based and parallel_based (use_norm=True, when
  `fla` imports; carried as wheels in .whl/), each on its own contiguous [B, T, H, D] inputs.
Inputs: q, k, v ~ N(0, 1) in bf16 for the checks (s = q . k / 4 then has unit spread, so the order-2
term matters); the timing uses ThunderKittens' benchmark inputs (randn / 16, randn / 64).
FLOPs (the same count for every implementation; ThunderKittens' kernels/based/benchmark.py,
get_flops, with F = 273 features and Dv = 64):  2 B T H F + 4 B T H Dv F.
Rows go to OUT/based.jsonl; the exit status is 1 if a check failed.
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
TK_FILE = os.path.join(ROOT, "kernels.tk", "based.tk")
C = 64                                   # the kernel's chunk
DK, DV = 16, 64                          # feature dim of q and k, value dim
NF = 1 + DK + DK * DK                    # 273 features
SK = 16                                  # keys per score piece
CF = 0.1767766952966369                  # 1 / (4 sqrt 2): the order-2 features' scale
CHECK_T = (1024, 2048, 4096, 8192, 1000, 333, 100, 1)
TIME_T = (1024, 2048, 4096, 8192)
NVCC = ["nvcc", "-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-Xcompiler", "-fPIC", "-shared"]
DECL = ("int tkc_based(const void *Q, const int64_t *Q_strides, const void *K, const int64_t *K_strides, "
        "const void *V, const int64_t *V_strides, void *O, const int64_t *O_strides, void *Z, "
        "const int64_t *Z_strides, int64_t B, int64_t H, int64_t T, tkc_stream_t stream)")


def flops(B, H, T, D=DV):
    """ThunderKittens' get_flops (kernels/based/benchmark.py): feature maps of q and k, then four
    B T H D F terms (k v, its cumsum, q times it, the sum)"""
    f = 2 * B * T * H * NF
    f += 4 * B * T * H * D * NF
    return f


# ---- simulate: the kernel's chunked algorithm in numpy, with its bf16 roundings ------------------

def simulate(_args):
    import numpy as np
    f32 = np.float32

    def bf16r(x):  # round to nearest even, to bf16, back to fp32
        x = np.ascontiguousarray(x, dtype=np.float32)
        u = x.view(np.uint32).astype(np.uint64)
        u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
        return u.astype(np.uint32).view(np.float32).reshape(x.shape)

    bf16 = bf16r

    def feat2(x, bf16):
        """the order-2 feature tile: column 16 a + b = bf16(x_b * x_a * CF), built per 16-column block a
        in the kernel (x @ es_a^T puts column a of x in every column; exact in fp32)"""
        blocks = [bf16(x * x[:, a:a + 1] * x.dtype.type(CF)) for a in range(DK)]
        return np.concatenate(blocks, axis=1)

    def kernel(q, k, v, exact=False):
        """one (b, h): q, k [T, 16], v [T, 64] (bf16 values), as kernels.tk/based.tk computes it; with
        exact, the same tile algebra in fp64 without roundings (checks the decomposition alone)"""
        f32 = np.float64 if exact else np.float32
        bf16 = (lambda x: x) if exact else bf16r
        q, k, v = (x.astype(f32) for x in (q, k, v))
        T = q.shape[0]
        nc = -(-T // C)
        pad = nc * C - T        # TMA's zero fill of the last chunk
        q, k, v = (np.concatenate([x, np.zeros((pad, x.shape[1]), f32)]) for x in (q, k, v))
        a2 = np.zeros((DK * DK, DV), f32)          # sum kf^T v
        a1 = np.zeros((DV, 32), f32)               # sum v^T [k | 1 | 0]
        m = np.zeros((64, DK), f32)                # sum [k | 1 | 0]^T k: rows 0..15 K^T K, row 16 sum k
        one = np.zeros((C, 16), f32)
        one[:, 0] = 1
        rsel = np.where(np.arange(64)[:, None] < 16, f32(0.125), f32(0.25))
        r = np.arange(C)[:, None]
        t = np.arange(SK)[None, :]
        o_all = np.zeros((nc * C, DV), f32)
        z_all = np.zeros(nc * C, f32)
        for c in range(nc):
            sl = slice(c * C, (c + 1) * C)
            qr, kr, vv = q[sl], k[sl], v[sl]
            kw = np.concatenate([kr, one], axis=1)                        # [64, 32]
            kx = np.concatenate([kr, one, np.zeros((C, 32), f32)], axis=1)  # [64, 64]
            qa = np.concatenate([bf16(qr * f32(0.25)), one], axis=1)      # [64, 32]
            a2s, a1s, ms = bf16(a2), bf16(a1), bf16(m * rsel)
            qf, kf = feat2(qr, bf16), feat2(kr, bf16)
            o = qf @ a2s                                                 # order 2, earlier chunks
            o = o + qa @ a1s.T                                           # orders 0 and 1
            x = qa @ ms[0:32]
            den = f32(64 * c) + (qr * x).sum(axis=1, dtype=f32)
            for s in range(C // SK):                                     # this chunk, 16 keys at a time
                x = (qr @ kr[s * SK:(s + 1) * SK].T) * f32(0.25)
                x = np.where(t + s * SK <= r, f32(1) + x + f32(0.5) * x * x, f32(0)).astype(f32)
                den = den + x.sum(axis=1, dtype=f32)
                o = o + bf16(x) @ vv[s * SK:(s + 1) * SK]
            a2 = a2 + kf.T @ vv
            a1 = a1 + vv.T @ kw
            m = m + kx.T @ kr
            o_all[sl] = bf16(o * (f32(1) / den)[:, None])
            z_all[sl] = den
        return o_all[:T], z_all[:T]

    def ref(q, k, v):
        q, k, v = (x.astype(np.float64) for x in (q, k, v))
        s = (q @ k.T) / 4
        A = np.tril(1 + s + s * s / 2)
        z = A.sum(axis=1)
        return (A @ v) / z[:, None], z

    def phi_check():
        """phi(q) . phi(k) with the stated scaling is 1 + s + s^2 / 2 (fp64)"""
        x = rng.standard_normal((5, DK))
        y = rng.standard_normal((5, DK))

        def phi(u):
            return np.concatenate([np.ones((u.shape[0], 1)), u / DK ** 0.25,
                                   (u[:, :, None] * u[:, None, :]).reshape(u.shape[0], -1) / (2 ** 0.5 * DK ** 0.5)], 1)
        got = (phi(x) * phi(y)).sum(1)
        s = (x * y).sum(1) / 4
        return float(np.abs(got - (1 + s + s * s / 2)).max())

    rng = np.random.default_rng(0)
    bad = 0
    e = phi_check()
    print(json.dumps(dict(kind="phi", features=NF, max_abs_err=e, status="ok" if e < 1e-12 else "FAIL")))
    bad += e >= 1e-12
    for dist in ("normal", "tk"):
        for T in (1024, 333, 100, 1):
            for h in range(2):
                if dist == "normal":        # s = q . k / 4 with unit spread: the order-2 term matters
                    q, k, v = (bf16(rng.standard_normal((T, d)).astype(f32)) for d in (DK, DK, DV))
                else:                       # ThunderKittens' benchmark inputs: randn / 16, randn / 64
                    q, k = (bf16((rng.standard_normal((T, DK)) / DK).astype(f32)) for _ in range(2))
                    v = bf16((rng.standard_normal((T, DV)) / DV).astype(f32))
                (o, z), (want, wz) = kernel(q, k, v), ref(q, k, v)
                err = np.linalg.norm(o - want) / max(np.linalg.norm(want), 1e-30)
                zerr = np.linalg.norm(z - wz) / max(np.linalg.norm(wz), 1e-30)
                xo, xz = kernel(q, k, v, exact=True)       # the tile algebra alone, fp64, no roundings
                xerr = max(np.linalg.norm(xo - want) / max(np.linalg.norm(want), 1e-30),
                           np.linalg.norm(xz - wz) / max(np.linalg.norm(wz), 1e-30))
                ok = err < 1e-2 and zerr < 1e-2 and xerr < 1e-12 and np.isfinite(o).all()
                bad += not ok
                print(json.dumps(dict(kind="simulate", inputs=dist, T=T, h=h, rel_err=float(err),
                                      z_rel_err=float(zerr), fp64_algebra_err=float(xerr),
                                      status="ok" if ok else "FAIL")), flush=True)
    print("simulate: %s" % ("all ok" if not bad else "%d FAILED" % bad))
    return 1 if bad else 0


# ---- build: the library, on a machine with nvcc -----------------------------------------------

def build(args):
    os.makedirs(args.out, exist_ok=True)
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--", "src", "kernels.tk/based.tk",
                                 "templates"], capture_output=True, text=True).stdout.strip())
    man = dict(commit=commit, dirty=dirty, variants=[])
    name = "based"
    rep = json.loads(subprocess.run([args.tkc, TK_FILE, "--emit=report"], check=True, capture_output=True,
                                    text=True).stdout)
    decl = rep["kernels"][0]["launcher"]["declaration"]
    if decl != DECL:
        raise SystemExit("launcher changed: %s (this script calls %s)" % (decl, DECL))
    cu = os.path.join(args.out, name + ".cu")
    subprocess.run([args.tkc, TK_FILE, "-o", cu], check=True)
    r = subprocess.run(NVCC + ["-Xptxas", "-v", cu, "-o", cu[:-3] + ".so"], capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(r.stderr[-2000:])
    regs = re.findall(r"Used (\d+) registers", r.stderr)
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", r.stderr)
    man["variants"].append(dict(name=name, lib=name + ".so", declaration=decl, registers=[int(x) for x in regs],
                                spills=[list(map(int, s)) for s in spills]))
    os.remove(cu)
    print("built %s: registers %s, spills %s" % (name, regs, spills), flush=True)
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(man, f, indent=1)
    return 0


# ---- the GPU run (first run: bench/RESULTS.md run 109) ---------------------------------------------

P_, LL = ctypes.c_void_p, ctypes.c_longlong


def call(fn, Q, K, V, O, Z, stream, keep):
    """the launcher, in DECL's order: each tensor with its strides (elements), then B, H, T, the stream"""
    args = []
    for t in (Q, K, V, O, Z):
        st = (LL * t.dim())(*t.stride())
        keep.append(st)
        args += [P_(t.data_ptr()), st]
    B, H, T, _ = Q.shape
    args += [LL(B), LL(H), LL(T), P_(stream)]
    rc = fn(*args)
    if rc:
        raise RuntimeError("tkc_based returned %d" % rc)


def make_inputs(torch, B, H, T, seed, layout="bthd", dist="normal"):
    """q, k, v as [B, H, T, D] views of [B, T, H, D] tensors (layout 'bthd') or contiguous ('bhtd')"""
    g = torch.Generator(device="cuda")
    g.manual_seed(seed)
    sc = (1.0, 1.0, 1.0) if dist == "normal" else (1.0 / DK, 1.0 / DK, 1.0 / DV)
    ts = [(torch.randn(B, T, H, d, device="cuda", generator=g) * s).bfloat16() for d, s in zip((DK, DK, DV), sc)]
    if layout == "bthd":
        return [t.transpose(1, 2) for t in ts]
    return [t.transpose(1, 2).contiguous() for t in ts]


def reference(torch, Q, K, V):
    """fp64 quadratic form per (b, h): A = tril(1 + s + s^2 / 2), s = q k^T / 4; O = (A v) / (A 1), Z = A 1"""
    B, H, T, _ = Q.shape
    o = torch.empty(B, H, T, DV, device=Q.device, dtype=torch.float64)
    z = torch.empty(B, H, T, device=Q.device, dtype=torch.float64)
    for b in range(B):
        for h in range(H):
            s = (Q[b, h].double() @ K[b, h].double().T) / 4
            A = (1 + s + 0.5 * s * s).tril()
            z[b, h] = A.sum(1)
            o[b, h] = (A @ V[b, h].double()) / z[b, h][:, None]
    return o, z


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

    print("# library built from %s%s" % (man["commit"], " (with uncommitted changes)" if man["dirty"] else ""))
    v0 = man["variants"][0]
    assert v0["declaration"] == DECL, v0["declaration"]
    fn = ctypes.CDLL(os.path.join(os.path.abspath(args.lib), v0["lib"])).tkc_based
    fn.restype = ctypes.c_int
    keep = []

    def run(Q, K, V, O, Z):
        call(fn, Q, K, V, O, Z, torch.cuda.current_stream().cuda_stream, keep)

    # ---- correctness
    check_t = CHECK_T if not args.quick else (1024, 333, 1)
    cases = [(T, "bthd", "normal") for T in check_t] + [(333, "bhtd", "normal"), (2048, "bthd", "tk")]
    for T, layout, dist in cases:
        B, H = (2, 3) if T <= 2048 else (1, 2)
        Q, K, V = make_inputs(torch, B, H, T, seed=T + len(layout), layout=layout, dist=dist)
        if layout == "bthd":
            O = torch.full((B, T, H, DV), float("nan"), device="cuda", dtype=torch.bfloat16).transpose(1, 2)
        else:
            O = torch.full((B, H, T, DV), float("nan"), device="cuda", dtype=torch.bfloat16)
        Z = torch.full((B, H, T), float("nan"), device="cuda", dtype=torch.float32)
        run(Q, K, V, O, Z)
        torch.cuda.synchronize()
        want, wz = reference(torch, Q, K, V)
        err = ((O.double() - want).norm() / want.norm().clamp(min=1e-30)).item()
        zerr = ((Z.double() - wz).norm() / wz.norm().clamp(min=1e-30)).item()
        finite = bool(torch.isfinite(O).all().item() and torch.isfinite(Z).all().item())
        ok = err < 1e-2 and zerr < 1e-2 and finite
        emit(dict(kind="check", B=B, H=H, T=T, layout=layout, inputs=dist, rel_err=err, z_rel_err=zerr,
                  finite=finite, status="ok" if ok else "FAIL"))
    print("# checks took %.1f s" % (time.time() - t0), flush=True)

    # ---- timing
    fla = {}
    if not args.no_fla:
        try:
            from fla.ops.based import fused_chunk_based, parallel_based
            fla = dict(fla_fused_chunk_based=fused_chunk_based, fla_parallel_based=parallel_based)
        except Exception as ex:
            print("# fla does not import (%s): no baselines" % str(ex)[:160])
    if not args.quick:
        B, H = 16, 16
        for T in TIME_T:
            Q, K, V = make_inputs(torch, B, H, T, seed=1, layout="bthd", dist="tk")
            O = torch.empty(B, T, H, DV, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
            Z = torch.empty(B, H, T, device="cuda", dtype=torch.float32)
            fl = flops(B, H, T)
            impls = [("tkc_based", lambda: run(Q, K, V, O, Z))]
            qc, kc, vc = (t.transpose(1, 2).contiguous() for t in (Q, K, V))   # fla's [B, T, H, D], not timed
            for name, f in fla.items():
                impls.append((name, lambda f=f: f(qc, kc, vc, 0.25, True)))
            for name, f in impls:
                try:
                    ms, how = time_graph(torch, f, args.rounds)
                except Exception as ex:
                    print("# %s failed at T = %d: %s" % (name, T, str(ex)[:200]))
                    continue
                emit(dict(kind="time", impl=name, B=B, H=H, T=T, flops=fl, ms=ms, tflops=fl / ms / 1e9, timed=how))
            del Q, K, V, O, Z, qc, kc, vc
    with open(os.path.join(args.out, "based.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    bad = [r for r in rows if r.get("status") == "FAIL"]
    checks = [r for r in rows if r["kind"] == "check"]
    print("based: %d checks, %d failed, worst rel_err %.2e; %.1f s" % (
        len(checks), len(bad), max(r["rel_err"] for r in checks), time.time() - t0))
    for r in rows:
        if r["kind"] == "time":
            print("%s B16 H16 T%d: %.3f ms, %.1f TFLOP/s" % (r["impl"], r["T"], r["ms"], r["tflops"]))
    return 1 if bad else 0


def main():
    if sys.argv[1:2] == ["simulate"]:
        return simulate(sys.argv[2:])
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("build", "gpu"))
    ap.add_argument("--tkc", default=os.path.join(ROOT, "build", "tkc"))
    ap.add_argument("--lib", default=os.path.join(ROOT, ".carry", "based"))
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp") + "/based")
    ap.add_argument("--quick", action="store_true", help="a few checks, no timing")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-fla", action="store_true", help="no fla-core baselines")
    a = ap.parse_args()
    if a.mode == "build":
        return build(a)
    return gpu(a)


if __name__ == "__main__":
    sys.exit(main())
