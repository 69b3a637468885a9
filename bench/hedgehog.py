#!/usr/bin/env python3
"""hedgehog.py - tkc's Hedgehog forward (kernels.tk/hedgehog.tk): the kernel's chunked arithmetic in
numpy, the ctypes library, and a GPU check and timing.

    python3 bench/hedgehog.py simulate                      # CPU only (numpy): the kernel's chunked math
    python3 bench/hedgehog.py build --tkc build/tkc --out .carry/hedgehog   # needs nvcc, no GPU
    python3 bench/hedgehog.py gpu --lib .carry/hedgehog [--out DIR] [--quick]

STATUS: `simulate` and `build` have been run (on a machine with nvcc and no GPU); `gpu` is written
but has NOT been run on a GPU: no check or timing of the kernel on hardware exists.

The function (per batch b, head h, position i < T; q, k, v: bf16 [T, 128]; Wq, Wk: bf16 [128, 64]):
    phi(x) = [softmax(x W), softmax(-x W)]  (128 features); chunk c(i) = i // 64
    window W(i) = chunk c(i) - 1 and j <= i in chunk c(i);  m_i = max_{j in W(i)} q_i . k_j
    a_ij = beta exp((q_i . k_j - m_i) / sqrt(128)) (j in W(i)),  alpha phi_q(q_i) . phi_k(k_j) (chunks < c(i) - 1)
    O_i = sum_j a_ij v_j / sum_j a_ij
KV = sum phi_k(k_j) v_j^T and KS = sum phi_k(k_j) over the positions before the last chunk.
The kernel takes Wq, Wk as [H, 128, 128] = [W | -W] (see kernels.tk/hedgehog.tk).

`simulate` runs kernels.tk/hedgehog.tk's chunked algorithm step by step in numpy with its bf16
roundings (fq, the state copies kvs and ksh, the window weights as product operands, O) against an
fp64 evaluation of the formula above, at T = 1024, 333, 100 and 1: relative error
||O - ref|| / ||ref|| < 1e-2 (and KV, KS against fp64).

FLOPs (ThunderKittens' kernels/hedgehog/benchmark.py get_flops; the same count for every
implementation): p_swa attn + p_lin lin with lin = 2 B T H F D + 7 B T H D 2F, attn = 2 B T^2 H D
and p_swa, p_lin the shares of the causal pairs in the window and in the linear part.
"""
import argparse
import ctypes
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
TK_FILE = os.path.join(ROOT, "kernels.tk", "hedgehog.tk")
C, D, F = 64, 128, 64
NVCC = ["nvcc", "-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-Xcompiler", "-fPIC", "-shared"]
DECL = ("int tkc_hedgehog(const void *Q, const int64_t *Q_strides, const void *K, const int64_t *K_strides, "
        "const void *V, const int64_t *V_strides, const void *Wq, const int64_t *Wq_strides, const void *Wk, "
        "const int64_t *Wk_strides, const void *Alpha, const int64_t *Alpha_strides, const void *Beta, "
        "const int64_t *Beta_strides, void *O, const int64_t *O_strides, void *KV, const int64_t *KV_strides, "
        "void *KS, const int64_t *KS_strides, int64_t B, int64_t H, int64_t T, tkc_stream_t stream)")


def flops(B, H, T):
    """ThunderKittens' get_flops (kernels/hedgehog/benchmark.py): window 64, terraced mask"""
    nc = -(-T // C)
    # causal pairs (i, j <= i): window = same chunk (causal) or the chunk before; the rest linear
    swa = lin_pairs = 0
    for c in range(nc):
        rows = min(C, T - c * C)
        swa += rows * (rows + 1) // 2 + (rows * C if c > 0 else 0)
        lin_pairs += rows * max(0, c - 1) * C
    pct_swa, pct_lin = swa / (swa + lin_pairs), lin_pairs / (swa + lin_pairs)
    lin = 2 * B * T * H * F * D + 7 * B * T * H * D * 2 * F
    attn = 4 * B * T * T * H * D // 2
    return attn * pct_swa + lin * pct_lin


def bf16_np(x):
    """round to nearest even, to bf16, back to fp32 (numpy)"""
    import numpy as np
    x = np.ascontiguousarray(x, dtype=np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return u.astype(np.uint32).view(np.float32).reshape(x.shape)


def ref_np(q, k, v, wq, wk, alpha, beta):
    """O, KV, KS of the formula in fp64 (the quadratic form; wq, wk: W, not [W | -W])"""
    import numpy as np
    q, k, v, wq, wk = (x.astype(np.float64) for x in (q, k, v, wq, wk))
    T = q.shape[0]

    def phi(x, w):
        t = x @ w
        a = np.exp(t - t.max(1, keepdims=True))
        b = np.exp(-t - (-t).max(1, keepdims=True))
        return np.concatenate([a / a.sum(1, keepdims=True), b / b.sum(1, keepdims=True)], 1)

    fq, fk = phi(q, wq), phi(k, wk)
    i = np.arange(T)[:, None]
    jj = np.arange(T)[None, :]
    ci, cj = i // C, jj // C
    win = (jj <= i) & (cj >= ci - 1)
    lin = cj < ci - 1
    s = q @ k.T
    m = np.where(win, s, -np.inf).max(1, keepdims=True)
    a = np.where(win, beta * np.exp((np.where(win, s, m) - m) / np.sqrt(128.0)), 0.0)
    a = a + np.where(lin, alpha * (fq @ fk.T), 0.0)
    O = (a @ v) / a.sum(1, keepdims=True)
    last = (-(-T // C) - 1) * C
    return O, fk[:last].T @ v[:last], fk[:last].sum(0)


def simulate(_args):
    import numpy as np
    f32 = np.float32
    bf16 = bf16_np

    def feat(x, w2, scale, f32, bf16):  # o = x @ [W | -W]; each half: exp(o - rowmax) * (scale / rowsum), bf16
        o = (x @ w2).astype(f32)
        out = np.empty_like(o)
        for h in (0, F):
            e = np.exp(o[:, h:h + F] - o[:, h:h + F].max(1, keepdims=True)).astype(f32)
            out[:, h:h + F] = bf16(e * (f32(scale) / e.sum(1, keepdims=True, dtype=f32)))
        return out

    def kernel(q, k, v, wq2, wk2, alpha, beta, exact=False):
        """exact: the same tile algebra in fp64 with no roundings (checks the chunking alone)"""
        f32, bf16r = (np.float64, lambda x: np.asarray(x, np.float64)) if exact else (np.float32, bf16_np)
        bf16 = bf16r
        q, k, v, wq2, wk2 = (np.asarray(x, f32) for x in (q, k, v, wq2, wk2))
        L2E_RS = f32(1.4426950408889634 / np.sqrt(128.0))
        T = q.shape[0]
        nc = -(-T // C)
        pad = nc * C - T
        q, k, v = (np.concatenate([x, np.zeros((pad, D), f32)]) for x in (q, k, v))   # TMA's zero fill
        kv = np.zeros((2 * F, D), f32)
        ks = np.zeros((2 * F, 16), f32)
        O = np.zeros((nc * C, D), f32)
        r = np.arange(C)[:, None]
        cc = np.arange(16)[None, :]
        for j in range(nc):
            qj, kj, vj = (x[j * C:(j + 1) * C] for x in (q, k, v))
            kvs, ksh = bf16(kv), bf16(ks)
            if j > 0:
                kp, vp = k[(j - 1) * C:j * C], v[(j - 1) * C:j * C]
                fk = feat(kp, wk2, 1.0, f32, bf16)
                kv = (kv + fk.T @ vp).astype(f32)
                ks = (ks + fk.T @ np.ones((C, 16), f32)).astype(f32)
            fq = feat(qj, wq2, alpha, f32, bf16)
            pieces = [(kj, vj, i, True) for i in range(4)]
            if j > 0:
                pieces += [(kp, vp, i, False) for i in range(4)]
            m = None
            for kt, vt, i, causal in pieces:
                s = (qj @ kt[16 * i:16 * i + 16].T).astype(f32)
                if causal:
                    s = np.where(cc + 16 * i <= r, s, -np.inf).astype(f32)
                if m is None:
                    m = s.max(1, keepdims=True)
                    p = np.exp2((s - m) * L2E_RS).astype(f32)
                    den = p.sum(1, keepdims=True, dtype=f32)
                    o = (bf16(p) @ vt[16 * i:16 * i + 16]).astype(f32)
                else:
                    mn = np.maximum(m, s.max(1, keepdims=True))
                    sc = np.exp2((m - mn) * L2E_RS).astype(f32)
                    o, den, m = o * sc, den * sc, mn
                    p = np.exp2((s - m) * L2E_RS).astype(f32)
                    den = den + p.sum(1, keepdims=True, dtype=f32)
                    o = o + (bf16(p) @ vt[16 * i:16 * i + 16]).astype(f32)
            o = o * f32(beta) + (fq @ kvs).astype(f32)
            den = den * f32(beta) + (fq @ ksh).astype(f32).max(1, keepdims=True)
            O[j * C:(j + 1) * C] = bf16(o / den)
        return O[:T], kv, ks[:, 0]

    rng = np.random.default_rng(0)
    worst = exact_worst = 0.0
    for T in (1024, 333, 100, 1):
        # ThunderKittens' benchmark inputs: q, k ~ N(0, 1), v ~ N(0, 1) / 5, maps ~ N(0, 1), alpha in [0, 3), beta in [0, 1)
        q, k = (bf16(rng.standard_normal((T, D))) for _ in range(2))
        v = bf16(rng.standard_normal((T, D)) / 5)
        wq, wk = (bf16(rng.standard_normal((D, F))) for _ in range(2))
        alpha, beta = f32(rng.random() * 3), f32(rng.random())
        wq2, wk2 = (np.concatenate([w, -w], 1) for w in (wq, wk))
        O, KV, KS = kernel(q, k, v, wq2, wk2, alpha, beta)
        Or, KVr, KSr = ref_np(q, k, v, wq, wk, float(alpha), float(beta))

        def rel(a, b):
            nb = np.linalg.norm(b)
            return float(np.linalg.norm(a - b) / nb) if nb else float(np.linalg.norm(a))

        eo, ekv, eks = rel(O, Or), rel(KV, KVr), rel(KS, KSr)
        worst = max(worst, eo, ekv, eks)
        Ox, KVx, KSx = kernel(q, k, v, wq2, wk2, float(alpha), float(beta), exact=True)
        ex = max(rel(Ox, Or), rel(KVx, KVr), rel(KSx, KSr))
        exact_worst = max(exact_worst, ex)
        print("T = %4d: rel. error O %.2e, KV %.2e, KS %.2e (alpha %.3f, beta %.3f); the tile algebra in fp64: %.1e"
              % (T, eo, ekv, eks, alpha, beta, ex))
    ok = worst < 1e-2 and exact_worst < 1e-12
    print("simulate: %s (worst %.2e, bound 1e-2; fp64 tile algebra %.1e, bound 1e-12)"
          % ("ok" if ok else "FAILED", worst, exact_worst))
    return 0 if ok else 1


def build(args):
    os.makedirs(args.out, exist_ok=True)
    rep = json.loads(subprocess.run([args.tkc, TK_FILE, "--emit=report"], check=True, capture_output=True,
                                    text=True).stdout)
    decl = rep["kernels"][0]["launcher"]["declaration"]
    if decl != DECL:
        raise SystemExit("launcher changed: %s (this script calls %s)" % (decl, DECL))
    cu = os.path.join(args.out, "hedgehog.cu")
    subprocess.run([args.tkc, TK_FILE, "-o", cu], check=True)
    r = subprocess.run(NVCC + ["-Xptxas", "-v", cu, "-o", cu[:-3] + ".so"], capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(r.stderr[-2000:])
    regs = re.findall(r"Used (\d+) registers", r.stderr)
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", r.stderr)
    os.remove(cu)
    man = dict(lib="hedgehog.so", declaration=decl, registers=[int(x) for x in regs],
               spills=[list(map(int, s)) for s in spills])
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(man, f, indent=1)
    print("built hedgehog: registers %s, spills %s" % (regs, spills), flush=True)
    return 0


# ---- the GPU run (first run: bench/RESULTS.md run 109) -------------------------------------------------

P_, LL = ctypes.c_void_p, ctypes.c_longlong


def call(fn, Q, K, V, Wq2, Wk2, A, Bt, O, KV, KS, stream, keep):
    """the launcher, in DECL's order: each tensor with its strides (elements), then B, H, T, the stream"""
    a = []
    for t in (Q, K, V, Wq2, Wk2, A, Bt, O, KV, KS):
        st = (LL * t.dim())(*t.stride())
        keep.append(st)
        a += [P_(t.data_ptr()), st]
    B, H, T, _ = Q.shape
    rc = fn(*a, LL(B), LL(H), LL(T), P_(stream))
    if rc:
        raise RuntimeError("tkc_hedgehog returned %d" % rc)


def gpu(args):
    """Checks O, KV, KS against a torch fp64 evaluation of the formula (NaN-filled
    outputs, [B, T, H, D] views and contiguous inputs, ragged T) and times the kernel with CUDA events."""
    import torch
    lib = ctypes.CDLL(os.path.join(args.lib, "hedgehog.so"))
    fn = lib.tkc_hedgehog
    fn.restype = ctypes.c_int
    failed = 0

    def run(*tensors):
        call(fn, *tensors, torch.cuda.current_stream().cuda_stream, [])

    def ref(Q, K, V, Wq, Wk, A, Bt):
        q, k, v, wq, wk = (x.double() for x in (Q, K, V, Wq, Wk))
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

    B, H = 2, 4
    for T in ((1024, 333, 100, 1) if args.quick else (1024, 2048, 4096, 1000, 333, 100, 65, 64, 1)):
        for layout in ("bthd", "bhtd"):
            g = torch.Generator(device="cuda").manual_seed(T)
            shape = (B, T, H, D) if layout == "bthd" else (B, H, T, D)
            Q, K, V = (torch.randn(shape, device="cuda", generator=g).bfloat16() for _ in range(3))
            V = (V.float() / 5).bfloat16()
            if layout == "bthd":
                Q, K, V = (x.transpose(1, 2) for x in (Q, K, V))
            Wq, Wk = (torch.randn((H, D, F), device="cuda", generator=g).bfloat16() for _ in range(2))
            A = torch.rand(H, device="cuda", generator=g) * 3
            Bt = torch.rand(H, device="cuda", generator=g)
            Wq2, Wk2 = (torch.cat([w, -w], -1).contiguous() for w in (Wq, Wk))
            O = torch.full((B, H, T, D), float("nan"), device="cuda").bfloat16()
            KV = torch.full((B, H, 2 * F, D), float("nan"), device="cuda")
            KS = torch.full((B, H, 2 * F), float("nan"), device="cuda")
            run(Q, K, V, Wq2, Wk2, A, Bt, O, KV, KS)
            torch.cuda.synchronize()
            Or, KVr, KSr = ref(Q, K, V, Wq, Wk, A, Bt)
            errs = [float((x.double() - y).norm() / max(y.norm(), 1e-30)) for x, y in ((O, Or), (KV, KVr), (KS, KSr))]
            fin = all(bool(torch.isfinite(x).all()) for x in (O, KV, KS))
            ok = fin and errs[0] < 1e-2 and (T <= C or max(errs[1:]) < 1e-2)
            failed += not ok
            print("T = %5d %s: O %.2e KV %.2e KS %.2e finite %s %s" % (T, layout, *errs, fin, "ok" if ok else "FAILED"))
    if not args.quick:
        for T in (1024, 2048, 4096, 8192):
            B, H = 16, 16
            Q, K, V = (torch.randn((B, H, T, D), device="cuda").bfloat16() for _ in range(3))
            W2 = torch.randn((H, D, 2 * F), device="cuda").bfloat16()
            A, Bt = torch.rand(H, device="cuda"), torch.rand(H, device="cuda")
            O = torch.empty_like(Q)
            KV, KS = torch.empty((B, H, 2 * F, D), device="cuda"), torch.empty((B, H, 2 * F), device="cuda")
            for _ in range(3):
                run(Q, K, V, W2, W2, A, Bt, O, KV, KS)
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(10):
                run(Q, K, V, W2, W2, A, Bt, O, KV, KS)
            e1.record()
            torch.cuda.synchronize()
            ms = e0.elapsed_time(e1) / 10
            print("T = %5d: %.3f ms, %.1f TFLOP/s (ThunderKittens' count)" % (T, ms, flops(B, H, T) / ms / 1e9))
    return 1 if failed else 0


def main():
    if sys.argv[1:2] == ["simulate"]:
        return simulate(sys.argv[2:])
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("build", "gpu"))
    ap.add_argument("--tkc", default=os.path.join(ROOT, "build", "tkc"))
    ap.add_argument("--lib", default=os.path.join(ROOT, ".carry", "hedgehog"))
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp") + "/hedgehog")
    ap.add_argument("--quick", action="store_true", help="a few checks, no timing")
    a = ap.parse_args()
    if a.mode == "build":
        return build(a)
    return gpu(a)


if __name__ == "__main__":
    sys.exit(main())
