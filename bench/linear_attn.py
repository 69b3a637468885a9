#!/usr/bin/env python3
"""linear_attn.py - tkc's causal linear attention (kernels.tk/linear_attn.tk) on the GPU: checks
against an fp32 PyTorch reference, then times it against flash-linear-attention's
chunk_linear_attn (plain) and ThunderKittens' linear attention kernel (decayed, D = 128) in the
same process.

    python3 bench/linear_attn.py --tkc .carry/tkc [--out DIR] [--quick] [--rounds N]
                                 [--no-fla] [--tk-module FILE.py]
    python3 bench/linear_attn.py simulate        # CPU only (numpy): the kernel's chunked math

Baselines from flash-linear-attention's fla-core 0.6.0 (pure Python on Triton; carried as wheels with
einops): chunk_linear_attn for the plain kernel, chunk_simple_gla (g_gamma = -slope) for the decayed one.

What it does on the GPU machine (an H200, nvcc, torch with CUDA):
- builds four torch modules with `tkc --emit=torch --module-name linear_attn_dD[_decay]` (D = 64
  and 128, DECAY = 0 and 1) and their extensions (in parallel);
- checks each against an fp32 reference, o_i = scale sum_{j <= i} e^{-s_h (i - j)} (q_i . k_j) v_j
  (quadratic form, one (b, h) at a time), at T = 1024, 2048, 4096, 8192 and the ragged T = 1000,
  333, 100 and 1: relative error ||o - ref|| / ||ref|| < 1e-2, every output finite. The outputs
  are NaN-poisoned first: the extension's raw function is called with an O tensor filled with NaN
  (the module function allocates its own; it is checked once against the raw call, bit for bit);
- times B = 16, H = 16, T = 1024 .. 8192 (each implementation captured in a CUDA graph of 10
  calls, so Python overhead does not count; median over rounds, implementations alternated):
  tkc plain against `fla.ops.linear_attn.chunk_linear_attn` (normalize=False, when fla imports),
  tkc decayed against `fla.ops.simple_gla.chunk_simple_gla` (g_gamma = -slope); fla gets its own
  contiguous [B, T, H, D] copies of q, k, v (made once, not timed),
  tkc decayed D = 128 against ThunderKittens when --tk-module names a Python file whose
  `linear_attention(q, k, v, slopes) -> o` runs TK's kernels/linear_attention kernel (bf16
  [B, H, T, 128], fp32 slopes [H], no scale; it must zero its output itself).
FLOPs (the same count for every implementation): the chunked algorithm's products with chunk
C = 64 and whole C x C tiles, B H T (4 C D + 4 D^2) (kernels.tk/linear_attn.tk says why).
Rows go to OUT/linear_attn.jsonl; the exit status is 1 if a check failed.
"""
import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
TK_FILE = os.path.join(ROOT, "kernels.tk", "linear_attn.tk")
C = 64                                   # the kernel's chunk
VARIANTS = [(d, decay) for d in (64, 128) for decay in (0, 1)]
CHECK_T = (1024, 2048, 4096, 8192, 1000, 333, 100, 1)
TIME_T = (1024, 2048, 4096, 8192)


def flops(B, H, T, D):
    return B * H * T * (4 * C * D + 4 * D * D)


def alibi_slopes(H):
    return [2.0 ** (-8.0 * (h + 1) / H) for h in range(H)]


# ---- simulate: the kernel's chunked algorithm in numpy, with its bf16 roundings ------------------

def simulate(_args):
    import numpy as np

    def bf16(x):  # round to nearest even, to bf16, back to fp32
        x = np.ascontiguousarray(x, dtype=np.float32)
        u = x.view(np.uint32).astype(np.uint64)
        u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
        return u.astype(np.uint32).view(np.float32).reshape(x.shape)

    def kernel(q, k, v, sl, scale, decay, d):
        T = q.shape[0]
        nc = -(-T // C)
        pad = nc * C - T        # TMA's zero fill of the last chunk
        q, k, v = (np.concatenate([x, np.zeros((pad, d), np.float32)]) for x in (q, k, v))
        st = np.zeros((d, d), np.float32)
        r = np.arange(C, dtype=np.float32)[:, None]
        t = np.arange(C, dtype=np.float32)[None, :]
        o_all = np.zeros((nc * C, d), np.float32)
        for c in range(nc):
            qc, kc, vc = (x[c * C:(c + 1) * C] for x in (q, k, v))
            ss = bf16(st)
            if decay:
                kd = bf16(kc * np.exp(-sl * (64 - r)))
                st = st * np.float32(np.exp(-64.0 * sl)) + kd.T @ vc
            else:
                st = st + kc.T @ vc
            o = qc @ ss
            if decay:
                o = o * np.exp(-sl * r)
            s = qc @ kc.T
            s = np.where(t <= r, s * np.exp(sl * (t - r)) if decay else s, 0)
            o = o + bf16(s) @ vc
            o_all[c * C:(c + 1) * C] = bf16(o * scale)
        return o_all[:T]

    def ref(q, k, v, sl, scale):
        q, k, v = (x.astype(np.float64) for x in (q, k, v))
        T = q.shape[0]
        i = np.arange(T, dtype=np.float64)
        diff = i[:, None] - i[None, :]
        m = np.where(diff >= 0, np.exp(-sl * np.maximum(diff, 0)), 0)
        return scale * ((q @ k.T) * m) @ v

    rng = np.random.default_rng(0)
    bad = 0
    for d in (64, 128):
        for decay in (0, 1):
            for T in (1024, 333, 100, 1):
                for sl in ((alibi_slopes(16)[0], alibi_slopes(16)[-1]) if decay else (0.0,)):
                    q, k, v = (bf16(rng.standard_normal((T, d)).astype(np.float32)) for _ in range(3))
                    o, want = kernel(q, k, v, np.float32(sl), d ** -0.5, decay, d), ref(q, k, v, sl, d ** -0.5)
                    err = np.linalg.norm(o - want) / max(np.linalg.norm(want), 1e-30)
                    ok = err < 1e-2 and np.isfinite(o).all()
                    bad += not ok
                    print(json.dumps(dict(kind="simulate", D=d, DECAY=decay, T=T, slope=sl, rel_err=float(err),
                                          status="ok" if ok else "FAIL")), flush=True)
    print("simulate: %s" % ("all ok" if not bad else "%d FAILED" % bad))
    return 1 if bad else 0


# ---- the GPU run ------------------------------------------------------------------------------

def build(tkc, out, d, decay):
    name = "linear_attn_d%d%s" % (d, "_decay" if decay else "")
    dst = os.path.join(out, name)
    subprocess.run([tkc, TK_FILE, "--emit=torch", "--module-name", name, "-o", dst, "-D", "D=%d" % d,
                    "-D", "DECAY=%d" % decay], check=True)
    spec = importlib.util.spec_from_file_location(name, os.path.join(dst, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    ext = mod.tkc_build()
    return name, mod, ext


def reference(q, k, v, slopes, scale, decay):
    """fp32 quadratic form, one (b, h) at a time: o = scale ((q k^T) o M) v, M[i, j] = e^{-s (i - j)}, j <= i."""
    import torch
    B, H, T, D = q.shape
    o = torch.empty(B, H, T, D, device=q.device, dtype=torch.float32)
    i = torch.arange(T, device=q.device, dtype=torch.float32)
    diff = i[:, None] - i[None, :]
    causal = diff >= 0
    for h in range(H):
        sl = float(slopes[h]) if decay else 0.0
        m = torch.where(causal, torch.exp(-sl * diff.clamp(min=0)), torch.zeros_like(diff))
        for b in range(B):
            o[b, h] = scale * (((q[b, h].float() @ k[b, h].float().T) * m) @ v[b, h].float())
    return o


def fla_functions():
    """{"fla": plain, "fla_gla": decayed} baselines from flash-linear-attention (fla-core), each
    fn(q, k, v, slopes, scale) -> o on contiguous [B, T, H, D] tensors (fla's own layout): the plain
    one is chunk_linear_attn (normalize=False), the decayed one chunk_simple_gla with the per-head log
    decay g_gamma = -slope, which is o_i = scale sum_{j <= i} e^{-s (i - j)} (q_i . k_j) v_j."""
    out = {}
    try:
        from fla.ops.linear_attn import chunk_linear_attn

        def plain(q, k, v, slopes, scale):
            o = chunk_linear_attn(q, k, v, scale=scale, normalize=False)
            return o[0] if isinstance(o, tuple) else o
        out["fla"] = plain
    except Exception as ex:  # not installed, or it does not import here
        print("# fla chunk_linear_attn: not used (%s)" % str(ex)[:200])
    try:
        from fla.ops.simple_gla import chunk_simple_gla

        def decayed(q, k, v, slopes, scale):
            o = chunk_simple_gla(q, k, v, g_gamma=-slopes, scale=scale)
            return o[0] if isinstance(o, tuple) else o
        out["fla_gla"] = decayed
    except Exception as ex:
        print("# fla chunk_simple_gla: not used (%s)" % str(ex)[:200])
    return out


def tk_function(path):
    if not path:
        return None
    spec = importlib.util.spec_from_file_location("tk_linear_attention", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.linear_attention


def time_impls(impls, rounds):
    """impls: {name: fn()}; each captured in a CUDA graph of 10 calls (eager if capture fails)."""
    import torch
    runners = {}
    for n, f in impls.items():
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
            runners[n] = g.replay
        except Exception as ex:
            print("# %s: timed without a CUDA graph (%s)" % (n, str(ex)[:160]))

            def eager(f=f):
                for _ in range(10):
                    f()
            runners[n] = eager
    times = {n: [] for n in runners}
    for r in range(rounds):
        order = list(runners) if r % 2 == 0 else list(runners)[::-1]
        for n in order:
            runners[n]()
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            runners[n]()
            e1.record()
            torch.cuda.synchronize()
            times[n].append(e0.elapsed_time(e1) / 10)
    return {n: statistics.median(ts) for n, ts in times.items()}


def gpu(args):
    import concurrent.futures
    import torch
    os.makedirs(args.out, exist_ok=True)
    with concurrent.futures.ThreadPoolExecutor(len(VARIANTS)) as ex:
        built = dict(zip(VARIANTS, ex.map(lambda v: build(args.tkc, args.out, *v), VARIANTS)))
    rows = []

    def emit(row):
        rows.append(row)
        print(json.dumps(row), flush=True)

    keep = []

    def raw(ext, q, k, v, slopes, o, scale):
        B, H, T, _ = q.shape
        if hasattr(ext, "linear_attn"):        # a C++ extension (torch.utils.cpp_extension)
            st = ext.linear_attn(q, k, v, slopes, o, B, H, T, scale)
        else:                                  # the module's ctypes library (_TkcLib): the C launcher
            import ctypes
            fn = ext.lib.tkc_linear_attn
            fn.restype = ctypes.c_int
            a = []
            for t in (q, k, v, slopes, o):
                s = (ctypes.c_int64 * t.dim())(*t.stride())
                keep.append(s)
                a += [ctypes.c_void_p(t.data_ptr()), s]
            if len(keep) > 1000:
                del keep[:500]
            st = fn(*a, ctypes.c_int64(B), ctypes.c_int64(H), ctypes.c_int64(T), ctypes.c_float(scale),
                    ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        if st:
            raise RuntimeError("linear_attn launcher returned %s" % st)

    # ---- correctness
    check_t = CHECK_T if not args.quick else (1024, 333, 1)
    for (d, decay), (name, mod, ext) in built.items():
        for T in check_t:
            B, H = (2, 4) if T <= 4096 else (1, 2)
            torch.manual_seed(T)
            q, k, v = (torch.randn(B, H, T, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
            slopes = torch.tensor(alibi_slopes(H), device="cuda", dtype=torch.float32)
            scale = d ** -0.5
            o = torch.full((B, H, T, d), float("nan"), device="cuda", dtype=torch.bfloat16)
            raw(ext, q, k, v, slopes, o, scale)
            o2 = getattr(mod, "linear_attn")(q, k, v, slopes, scale)   # the module's own function
            torch.cuda.synchronize()
            want = reference(q, k, v, slopes, scale, decay)
            err = ((o.float() - want).norm() / want.norm().clamp(min=1e-30)).item()
            finite = bool(torch.isfinite(o).all().item())
            same = bool(torch.equal(o, o2))
            ok = err < 1e-2 and finite and same
            emit(dict(kind="check", variant=name, D=d, DECAY=decay, B=B, H=H, T=T, rel_err=err, finite=finite,
                      module_same=same, status="ok" if ok else "FAIL"))
        # strided: a [B, T, H, D] tensor passed as its [B, H, T, D] transpose
        B, H, T = 2, 3, 333
        q, k, v = (torch.randn(B, T, H, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2) for _ in range(3))
        slopes = torch.tensor(alibi_slopes(H), device="cuda", dtype=torch.float32)
        o = getattr(mod, "linear_attn")(q, k, v, slopes, d ** -0.5)
        want = reference(q, k, v, slopes, d ** -0.5, decay)
        err = ((o.float() - want).norm() / want.norm()).item()
        emit(dict(kind="check", variant=name, D=d, DECAY=decay, B=B, H=H, T=T, strided=True, rel_err=err,
                  status="ok" if err < 1e-2 and bool(torch.isfinite(o).all().item()) else "FAIL"))

    # ---- timing
    fla = {} if args.no_fla else fla_functions()
    tk = tk_function(args.tk_module)
    if not args.quick:
        B, H = 16, 16
        for (d, decay), (name, mod, ext) in built.items():
            for T in TIME_T:
                torch.manual_seed(0)
                q, k, v = (torch.randn(B, H, T, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
                slopes = torch.rand(H, device="cuda", dtype=torch.float32) if decay else torch.zeros(H, device="cuda")
                scale = 1.0 if decay else d ** -0.5        # TK's kernel has no scale
                o = torch.empty(B, H, T, d, device="cuda", dtype=torch.bfloat16)
                impls = {"tkc": lambda: raw(ext, q, k, v, slopes, o, scale)}
                base, fla_layout = {}, set()
                qt, kt, vt = (x.transpose(1, 2).contiguous() for x in (q, k, v))  # [B, T, H, D] for fla
                f_name = "fla_gla" if decay else "fla"
                if f_name in fla:
                    base[f_name] = lambda f=fla[f_name]: f(qt, kt, vt, slopes, scale)
                    fla_layout.add(f_name)
                if tk is not None and decay and d == 128:
                    base["tk"] = lambda: tk(q, k, v, slopes)
                for n, f in list(base.items()):  # a baseline is timed only if it computes the same thing
                    try:
                        got = f()
                        if n in fla_layout:
                            got = got.transpose(1, 2)
                        want = reference(q[:1, :2], k[:1, :2], v[:1, :2], slopes, scale, decay)
                        e = ((got[:1, :2].float() - want).norm() / want.norm()).item()
                        print("# %s %s T=%d: rel_err %.2e against the reference" % (n, name, T, e))
                        if not e < 1e-2:
                            base.pop(n)
                    except Exception as ex:
                        print("# %s %s T=%d: not timed (%s)" % (n, name, T, str(ex)[:200]))
                        base.pop(n)
                impls.update(base)
                ms = time_impls(impls, args.rounds)
                fl = flops(B, H, T, d)
                row = dict(kind="time", variant=name, D=d, DECAY=decay, B=B, H=H, T=T, flops=fl)
                for n, t in ms.items():
                    row[n + "_ms"] = t
                    row[n + "_tflops"] = fl / t / 1e9
                for n in base:
                    row["ratio_" + n] = ms[n] / ms["tkc"]
                emit(row)
    with open(os.path.join(args.out, "linear_attn.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    bad = [r for r in rows if r.get("status") == "FAIL"]
    print("linear_attn: %d checks, %d failed" % (sum(1 for r in rows if r["kind"] == "check"), len(bad)))
    for r in rows:
        if r["kind"] == "time":
            print("%s B16 H16 T%d: tkc %.1f TFLOP/s%s" % (r["variant"], r["T"], r["tkc_tflops"], "".join(
                ", %s %.1f (%.2fx)" % (n, r[n + "_tflops"], r["ratio_" + n]) for n in ("fla", "fla_gla", "tk")
                if n + "_tflops" in r)))
    return 1 if bad else 0


def main():
    if sys.argv[1:2] == ["simulate"]:
        return simulate(sys.argv[2:])
    ap = argparse.ArgumentParser()
    ap.add_argument("--tkc", required=True)
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp") + "/linear_attn")
    ap.add_argument("--quick", action="store_true", help="a few checks, no timing")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-fla", action="store_true")
    ap.add_argument("--tk-module", default="", help="a .py file with linear_attention(q, k, v, slopes) -> o (TK)")
    return gpu(ap.parse_args())


if __name__ == "__main__":
    sys.exit(main())
