#!/usr/bin/env python3
"""GPU correctness and speed harness for tkc's kernels (runs on the GPU machine).

  harness.py build  --tkc PATH --out DIR [--only NAME,...]     generate + compile every variant
  harness.py run    --lib DIR --suite SUITE [--quick]           check + time one suite, print rows
  (bench/run_gpu.sh drives both and collects the CSV)

Every kernel is checked against a higher-precision reference on fresh random normal inputs
(output poisoned with NaN first) and timed with CUDA events in the same process as its
baseline: warm-up, then alternating rounds (tkc, baseline, baseline, tkc, ...) with the L2
flushed before each launch; the median is reported. Baselines: cuBLAS through torch.matmul for
GEMM; PyTorch scaled_dot_product_attention with the cuDNN and FlashAttention backends forced
in turn for attention.
"""
import argparse
import csv
import ctypes
import json
import math
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# name -> (.tk file, -D overrides)
VARIANTS = {
    "gemm": ("gemm.tk", {}),
    "gemm_s1": ("gemm.tk", {"STAGES": 1}),
    "gemm_s2": ("gemm.tk", {"STAGES": 2}),
    "gemm_s3": ("gemm.tk", {"STAGES": 3}),
    "gemm_np": ("gemm.tk", {"PERSISTENT": 0}),
    "gemm_g1": ("gemm.tk", {"GROUP": 1}),
    "gemm_g4": ("gemm.tk", {"GROUP": 4}),
    "gemm_g16": ("gemm.tk", {"GROUP": 16}),
    "gemm_c2": ("gemm.tk", {"CLUSTER": 2}),
    "gemm_c2_g16": ("gemm.tk", {"CLUSTER": 2, "GROUP": 16}),
    "gemm_c2_np": ("gemm.tk", {"CLUSTER": 2, "PERSISTENT": 0}),
    # attention: the .tk's defaults pick the block shape and grid per head dim and mask
    "attn_d128": ("attn_fwd.tk", {"D": 128}),
    "attn_d128_causal": ("attn_fwd.tk", {"D": 128, "CAUSAL": 1}),
    "attn_d64": ("attn_fwd.tk", {"D": 64}),
    "attn_d64_causal": ("attn_fwd.tk", {"D": 64, "CAUSAL": 1}),
    # tuned for short sequences: D128 with 128-key blocks and two copies of q (setup_stages = 2),
    # causal D64 with 128-row query blocks (two consumers: less work past the diagonal)
    "attn_d128_short": ("attn_fwd.tk", {"D": 128, "SHORT": 1}),
    "attn_d64_causal_short": ("attn_fwd.tk", {"D": 64, "CAUSAL": 1, "SHORT": 1}),
    # the narrow last step without pingpong, and without a persistent grid (correctness)
    "attn_d128_nopp": ("attn_fwd.tk", {"D": 128, "PINGPONG": 0}),
    "attn_d128_np": ("attn_fwd.tk", {"D": 128, "PERSISTENT": 0}),
    # D128 without the narrow last step (every step on all 176 columns)
    "attn_d128_nt0": ("attn_fwd.tk", {"D": 128, "NARROW_TAIL": 0}),
    # D128 without clusters (each block loads its own K and V; the default before clusters of 2)
    "attn_d128_cl1": ("attn_fwd.tk", {"D": 128, "CLUSTER": 1}),
    # clusters with two copies of q (SHORT = 1, setup_stages = 2): correctness (slower at N = 1024, run 59)
    "attn_d128_short_cl": ("attn_fwd.tk", {"D": 128, "SHORT": 1, "CLUSTER": 2}),
    # D64 with one copy of q (the default before setup_stages = 2)
    "attn_d64_s1": ("attn_fwd.tk", {"D": 64, "SETUP_STAGES": 1}),
    # causal grids: one block per tile, longest first (the default before folded pairs)
    "attn_d128_causal_np": ("attn_fwd.tk", {"D": 128, "CAUSAL": 1, "PERSISTENT": 0}),
    "attn_d64_causal_np": ("attn_fwd.tk", {"D": 64, "CAUSAL": 1, "PERSISTENT": 0}),
    # lookahead off: the next tile's first S = Q K^T waits for this tile's epilogue
    "attn_d128_nola": ("attn_fwd.tk", {"D": 128, "LOOKAHEAD": 0}),
    "attn_d128_causal_nola": ("attn_fwd.tk", {"D": 128, "CAUSAL": 1, "LOOKAHEAD": 0}),
    "attn_d64_causal_nola": ("attn_fwd.tk", {"D": 64, "CAUSAL": 1, "LOOKAHEAD": 0}),
    # staging = 0: O from registers straight to global memory (no staging buffer, no TMA store)
    "attn_d128_st0": ("attn_fwd.tk", {"D": 128, "STAGING": 0}),
    "attn_d128_causal_st0": ("attn_fwd.tk", {"D": 128, "CAUSAL": 1, "STAGING": 0}),
    "attn_d64_st0": ("attn_fwd.tk", {"D": 64, "STAGING": 0}),
    "attn_d64_causal_st0": ("attn_fwd.tk", {"D": 64, "CAUSAL": 1, "STAGING": 0}),
    # persistent without overlap and pingpong: lookahead on the plain schedule (correctness)
    "attn_d128_plain_p": ("attn_fwd.tk", {"D": 128, "OVERLAP": 0, "PINGPONG": 0}),
    # D64 with 128-row query blocks (2 consumers): no ragged query block at N = 1024, less diagonal waste
    # D128 non-causal with 128-key blocks, persistent (N = 1024 is 8 whole blocks)
    "attn_d128_k128p": ("attn_fwd.tk", {"D": 128, "BKV": 128}),
    # ablations of the schedule, D128 with 128 x 128 blocks, one block per tile
    "attn_d128_k128": ("attn_fwd.tk", {"D": 128, "BKV": 128, "PERSISTENT": 0}),
    "attn_d128_plain": ("attn_fwd.tk", {"D": 128, "BKV": 128, "PERSISTENT": 0, "OVERLAP": 0, "PINGPONG": 0}),
    "attn_d128_ov": ("attn_fwd.tk", {"D": 128, "BKV": 128, "PERSISTENT": 0, "PINGPONG": 0}),
}

# the launchers' C signatures (src/api.h): each tensor with its strides, the run-time dims, the
# scalars, the stream
P, LL = ctypes.c_void_p, ctypes.c_longlong
GEMM_ARGTYPES = [P] * 6 + [LL] * 3 + [P]                   # A, B, C; M, K, N; stream
ATTN_ARGTYPES = [P] * 10 + [LL] * 4 + [ctypes.c_float, P]  # Q, K, V, O, L; B, H, N, HKV; scale; stream


def tkc_command(tkc, name, *extra):
    """tkc's command line for the variant name (its .tk and -D overrides), then extra."""
    tk, defs = VARIANTS[name]
    cmd = [tkc, os.path.join(ROOT, "kernels.tk", tk)]
    for k, v in defs.items():
        cmd += ["-D", f"{k}={v}"]
    return cmd + list(extra)


NVCC = ["nvcc", "-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-Xcompiler", "-fPIC", "-shared",
        "-Xptxas", "-v"]


def build(args):
    os.makedirs(args.out, exist_ok=True)
    names = [n for n in VARIANTS if not args.only or n in args.only.split(",")]

    def one(name):
        cu = os.path.join(args.out, name + ".cu")
        so = os.path.join(args.out, "lib" + name + ".so")
        cmd = tkc_command(args.tkc, name, "-o", cu)
        t0 = time.time()
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            return name, False, "tkc: " + r.stderr
        r = subprocess.run(NVCC + [cu, "-o", so], capture_output=True, text=True)
        info = [l for l in r.stderr.splitlines() if "registers" in l or "spill" in l]
        return name, r.returncode == 0, (r.stderr if r.returncode else " | ".join(info)) + f" ({time.time() - t0:.1f}s)"

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as ex:
        results = list(ex.map(one, names))
    ok = True
    for name, good, msg in results:
        print(f"build {name:20s} {'ok' if good else 'FAILED'}  {msg.strip()[:300]}", flush=True)
        ok &= good
    return 0 if ok else 1


# ---------------------------------------------------------------------------------------------
# running

def load(libdir, name, fn, argtypes):
    lib = ctypes.CDLL(os.path.join(libdir, "lib" + name + ".so"))
    f = getattr(lib, fn)
    f.restype = ctypes.c_int
    f.argtypes = argtypes
    return f


def strides(t):
    """A tensor's element strides as the int64_t array a launcher takes."""
    return (ctypes.c_int64 * t.dim())(*t.stride())


def cuda_stream(torch):
    """The current CUDA stream as the tkc_stream_t a launcher takes."""
    return ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)


class Timer:
    """Median of CUDA-event times, L2 flushed before each launch, candidates alternated."""

    def __init__(self, torch):
        self.torch = torch
        self.flush_buf = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device="cuda")

    def run(self, fns, min_reps=10, max_reps=100, budget_s=0.6):
        torch = self.torch
        for f in fns.values():  # warm-up
            for _ in range(3):
                f()
        torch.cuda.synchronize()
        t0 = time.time()
        for f in fns.values():
            f()
        torch.cuda.synchronize()
        one = (time.time() - t0) / len(fns)
        reps = int(max(min_reps, min(max_reps, budget_s / max(one, 1e-5))))
        ev = {n: [] for n in fns}
        names = list(fns)
        for r in range(reps):
            for n in (names if r % 2 == 0 else names[::-1]):
                self.flush_buf.zero_()
                s = torch.cuda.Event(enable_timing=True)
                e = torch.cuda.Event(enable_timing=True)
                s.record()
                fns[n]()
                e.record()
                ev[n].append((s, e))
        torch.cuda.synchronize()
        out = {}
        for n, v in ev.items():
            ts = sorted(s.elapsed_time(e) for s, e in v)
            out[n] = ts[len(ts) // 2]
        return out, reps


CSV = None
# results.csv: one row per case of every suite, these columns (empty where a suite has none);
# anything else a row carries (why a baseline could not run) goes into 'note' as key=value pairs.
CSV_COLUMNS = ["suite", "case", "variant", "M", "N", "K", "B", "H", "HKV", "D", "causal", "layout",
               "rel_err", "rel_err_cublas", "rel_err_o", "rel_err_lse", "unwritten", "status", "reps",
               "ms_tkc", "tflops_tkc", "ms_base", "tflops_base", "ms_cudnn", "tflops_cudnn",
               "ms_flash", "tflops_flash", "ratio", "note"]


def emit(row):
    """Prints a result row (JSON) and appends it to the CSV at once, so a later timeout loses nothing."""
    print(json.dumps(row), flush=True)
    if CSV:
        rest = [f"{k}={v}" for k, v in row.items() if k not in CSV_COLUMNS]
        out = {k: v for k, v in row.items() if k in CSV_COLUMNS}
        if rest:
            out["note"] = "; ".join(rest)
        with open(CSV, "a", newline="") as f:
            w = csv.DictWriter(f, fieldnames=CSV_COLUMNS, restval="")
            if f.tell() == 0:
                w.writeheader()
            w.writerow(out)


def rel_err(out, ref):
    d = (out.double() - ref.double()).norm().item()
    return d / max(ref.double().norm().item(), 1e-30)


# correctness shapes: ragged tails, tiny, not multiples of the tile, and K or N whose rows are not
# 16-byte multiples (the launcher stages those operands through padded copies)
GEMM_RAGGED = [(128, 256, 64), (1000, 1000, 1000), (200, 72, 8), (4000, 3000, 2040), (129, 257, 65 + 7),
               (777, 1531, 4093), (1, 1, 1), (5, 3, 7), (33, 17, 1000), (300, 200, 9)]


def gemm_cases(args, torch):
    """The GEMM case function (check one variant and shape against fp32, optionally time it against
    cuBLAS) and the list of rows it fills."""
    timer = Timer(torch)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    fns = {}
    rows = []

    def case(label, variant, M, N, K, time_it=True, base=True, pad=0):
        if variant not in fns:
            fns[variant] = load(args.lib, variant, "tkc_gemm", GEMM_ARGTYPES)
        f = fns[variant]
        g = torch.Generator(device="cuda").manual_seed(M * 131 + N * 7 + K)
        # pad > 0: each operand is a view into a wider matrix, so its rows are longer than its width
        A = torch.randn(M, K + pad, device="cuda", dtype=torch.bfloat16, generator=g)[:, :K]
        B = torch.randn(K, N + pad, device="cuda", dtype=torch.bfloat16, generator=g)[:, :N]
        C = torch.full((M, N + pad), float("nan"), device="cuda", dtype=torch.bfloat16)[:, :N]
        sa, sb, sc = (strides(A), strides(B), strides(C)) if pad else (None, None, None)
        argv = (A.data_ptr(), sa, B.data_ptr(), sb, C.data_ptr(), sc, M, K, N, cuda_stream(torch))
        call = lambda: f(*argv)
        rc = call()
        torch.cuda.synchronize()
        if rc:
            rows.append(dict(suite="gemm", case=label, variant=variant, M=M, N=N, K=K, status=f"launch error {rc}"))
            emit(rows[-1])
            return
        unwritten = int(torch.isnan(C).sum().item())
        ref = A.float() @ B.float()
        err = rel_err(C, ref)
        cub = A @ B
        err_cublas = rel_err(cub, ref)
        ok = unwritten == 0 and err < 1e-2
        row = dict(suite="gemm", case=label, variant=variant, M=M, N=N, K=K, rel_err=err, rel_err_cublas=err_cublas,
                   unwritten=unwritten, status="ok" if ok else "WRONG")
        del ref
        if time_it and ok:
            ms, reps = timer.run({"tkc": call, "cublas": (lambda: torch.matmul(A, B, out=cub))} if base else {"tkc": call})
            flops = 2.0 * M * N * K
            row.update(reps=reps, ms_tkc=ms["tkc"], tflops_tkc=flops / ms["tkc"] / 1e9)
            if base:
                row.update(ms_base=ms["cublas"], tflops_base=flops / ms["cublas"] / 1e9, ratio=ms["cublas"] / ms["tkc"])
        rows.append(row)
        emit(row)

    return case, rows


def gemm_checks(case, variant, extra=()):
    """variant on the awkward shapes (and extra ones) and on strided views, untimed."""
    for (M, N, K) in GEMM_RAGGED + list(extra):
        case("ragged", variant, M, N, K, time_it=False)
    case("strided", variant, 1000, 1000, 1000, time_it=False, pad=24)
    case("strided_odd", variant, 1000, 1000, 1000, time_it=False, pad=3)  # row pitches of 2006 bytes: staged


def gemm_suite(args, torch):
    case, rows = gemm_cases(args, torch)
    gemm_checks(case, "gemm")
    if args.quick:
        return rows
    for n in (4096, 8192, 16384):
        case("square", "gemm", n, n, n)
    for (M, N, K) in [(8192, 14336, 4096), (8192, 4096, 14336), (4096, 28672, 8192), (16384, 8192, 1024)]:
        case("model", "gemm", M, N, K)
    # K or N that breaks TMA's 16-byte row rule: the launcher stages those operands through padded
    # copies (issue 17: correct, and at least 0.8x cuBLAS)
    for (M, N, K) in [(4096, 4096, 4095), (4096, 4095, 4096), (4095, 4095, 4095), (777, 1531, 4093), (8192, 8191, 8192)]:
        case("odd", "gemm", M, N, K)
    # ablations from the ThunderKittens paper, same .tk, parameters only
    for v in ("gemm_s1", "gemm_s2", "gemm_s3"):
        case("stages", v, 4096, 4096, 4096, base=False)
    for K in (64, 128, 256, 512, 1024):
        case("persistent", "gemm", 4096, 4096, K)
        case("persistent", "gemm_np", 4096, 4096, K, base=False)
    case("order", "gemm_g1", 16384, 16384, 16384, base=False)
    for v in ("gemm_g4", "gemm_g16"):
        case("tune", v, 4096, 4096, 4096)
    case("repeat", "gemm", 4096, 4096, 4096)
    return rows


def gemm_cluster_suite(args, torch):
    """2-block clusters with B multicast, checked on awkward shapes, then (unless --quick) timed
    beside the plain kernel."""
    case, rows = gemm_cases(args, torch)
    gemm_checks(case, "gemm_c2_np", extra=[(300, 520, 136)])
    if args.quick:
        return rows
    for (M, N, K) in [(4096, 4096, 4096), (8192, 8192, 8192)]:
        for v in ("gemm", "gemm_c2", "gemm_c2_np"):
            case("timed", v, M, N, K)
    return rows


def attn_ref(torch, q, k, v, scale, causal, bh):
    """fp32 reference for the (b, h) pairs in bh: O rows and natural-log LSE."""
    outs, lses = [], []
    H, HKV = q.shape[1], k.shape[1]
    for (b, h) in bh:
        qq = q[b, h].float()
        kk = k[b, h // (H // HKV)].float()
        vv = v[b, h // (H // HKV)].float()
        N = qq.shape[0]
        o = torch.empty_like(qq)
        lse = torch.empty(N, device=q.device)
        for r0 in range(0, N, 1024):
            s = (qq[r0:r0 + 1024] @ kk.T) * scale
            if causal:
                i = torch.arange(r0, min(r0 + 1024, N), device=q.device)[:, None]
                j = torch.arange(N, device=q.device)[None, :]
                s = s.masked_fill(j > i, float("-inf"))
            lse[r0:r0 + 1024] = torch.logsumexp(s, dim=1)
            o[r0:r0 + 1024] = torch.softmax(s, dim=1) @ vv
        outs.append(o)
        lses.append(lse)
    return outs, lses


def attn_suite(args, torch):
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    timer = Timer(torch)
    rows = []
    fns = {}
    fa4 = None
    if getattr(args, "fa4", False):  # through ../shared/tools/peer-python.py (peer-wheels.sh)
        try:
            from flash_attn.cute import flash_attn_func
            fa4 = [flash_attn_func]
        except Exception as ex:
            print("# fa4 not importable: %s" % str(ex)[:300], flush=True)

    def kernel(variant, fn="tkc_attn_fwd"):
        if (variant, fn) not in fns:
            fns[(variant, fn)] = load(args.lib, variant, fn, ATTN_ARGTYPES)
        return fns[(variant, fn)]

    def case(label, variant, Bn, H, HKV, N, D, causal, time_it=True, bshd=False, entry=False):
        if not os.path.exists(os.path.join(args.lib, "lib" + variant + ".so")):
            return  # a build with --only left this variant out
        f = kernel(variant)
        g = torch.Generator(device="cuda").manual_seed(Bn * 1000 + H * 10 + N + D)
        if bshd:  # [B, N, H, D] in memory, passed as [B, H, N, D] views with strides
            mk = lambda h: torch.randn(Bn, N, h, D, device="cuda", dtype=torch.bfloat16, generator=g).transpose(1, 2)
            q, k, v = mk(H), mk(HKV), mk(HKV)
            o = torch.full((Bn, N, H, D), float("nan"), device="cuda", dtype=torch.bfloat16).transpose(1, 2)
        else:
            q = torch.randn(Bn, H, N, D, device="cuda", dtype=torch.bfloat16, generator=g)
            k = torch.randn(Bn, HKV, N, D, device="cuda", dtype=torch.bfloat16, generator=g)
            v = torch.randn(Bn, HKV, N, D, device="cuda", dtype=torch.bfloat16, generator=g)
            o = torch.full_like(q, float("nan"))
        lse = torch.full((Bn, H, N), float("nan"), device="cuda", dtype=torch.float32)
        scale = 1.0 / math.sqrt(D)
        st = [strides(t) for t in (q, k, v, o, lse)] if bshd else [None] * 5
        argv = (q.data_ptr(), st[0], k.data_ptr(), st[1], v.data_ptr(), st[2], o.data_ptr(), st[3], lse.data_ptr(),
                st[4], Bn, H, N, HKV, ctypes.c_float(scale), cuda_stream(torch))
        call = lambda: f(*argv)
        rc = call()
        torch.cuda.synchronize()
        row = dict(suite="attn", case=label, variant=variant, B=Bn, H=H, HKV=HKV, N=N, D=D, causal=int(causal),
                   layout="bshd" if bshd else "bhsd")
        if rc:
            row["status"] = f"launch error {rc}"
            rows.append(row)
            emit(row)
            return
        unwritten = int(torch.isnan(o).sum().item()) + int(torch.isnan(lse).sum().item())
        bh = [(0, 0), (Bn - 1, H - 1)] + ([(Bn // 2, H // 2)] if Bn * H > 2 else [])
        ro, rl = attn_ref(torch, q, k, v, scale, causal, bh)
        eo = max(rel_err(o[b, h], r) for (b, h), r in zip(bh, ro))
        el = max(rel_err(lse[b, h], r) for (b, h), r in zip(bh, rl))
        ok = unwritten == 0 and eo < 1e-2 and el < 1e-3
        row.update(rel_err_o=eo, rel_err_lse=el, unwritten=unwritten, status="ok" if ok else "WRONG")
        calle = None
        if entry:  # the entry attention() (attn_fwd, or the split pair where the dispatch table says), checked too
            fe = kernel(variant, "tkc_attention")
            o.fill_(float("nan"))
            lse.fill_(float("nan"))
            calle = lambda: fe(*argv)
            rc = calle()
            torch.cuda.synchronize()
            ue = int(torch.isnan(o).sum().item()) + int(torch.isnan(lse).sum().item())
            eoe = max(rel_err(o[b, h], r) for (b, h), r in zip(bh, ro))
            ele = max(rel_err(lse[b, h], r) for (b, h), r in zip(bh, rl))
            oke = rc == 0 and ue == 0 and eoe < 1e-2 and ele < 1e-3
            row.update(entry_rel_err_o=eoe, entry_rel_err_lse=ele, entry_unwritten=ue, entry_rc=rc)
            if not oke:
                row["status"] = "WRONG (entry)"
                ok = False
        if time_it and ok:
            flops = 4.0 * Bn * H * N * N * D / (2 if causal else 1)
            cand = {"tkc": call}
            if calle:
                cand["entry"] = calle
            gqa = H != HKV
            if fa4 and not bshd:  # FlashAttention-4's CuTe-DSL forward on [B, N, H, D] copies of the inputs
                q4, k4, v4 = (t.transpose(1, 2).contiguous() for t in (q, k, v))

                def fa4_fwd():
                    return fa4[0](q4, k4, v4, softmax_scale=scale, causal=bool(causal))
                try:
                    t0 = time.time()
                    r4 = fa4_fwd()
                    o4 = r4[0] if isinstance(r4, tuple) else r4
                    torch.cuda.synchronize()
                    row["fa4_first_call_s"] = time.time() - t0
                    row["fa4_rel_err_o"] = rel_err(o4.transpose(1, 2)[0, 0], ro[0])
                    cand["fa4"] = fa4_fwd
                except Exception as ex:
                    row["no_fa4"] = str(ex).splitlines()[0][:120] if str(ex) else type(ex).__name__
            for name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
                def base(be=be):
                    with sdpa_kernel(be):
                        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale, enable_gqa=gqa)
                try:
                    base()
                    torch.cuda.synchronize()
                    cand[name] = base
                except Exception as ex:  # a backend that does not take this case
                    row["no_" + name] = str(ex).splitlines()[0][:120]
            ms, reps = timer.run(cand)
            row.update(reps=reps)
            for n, t in ms.items():
                row["ms_" + n] = t
                row["tflops_" + n] = flops / t / 1e9
            best = min((ms[n] for n in ms if n not in ("tkc", "entry")), default=None)
            if best:
                row["ratio"] = best / ms["tkc"]
                if "entry" in ms:
                    row["ratio_entry"] = best / ms["entry"]
        rows.append(row)
        emit(row)

    # correctness: ragged lengths, GQA, both head dims, causal and not
    for (variant, D, causal) in [("attn_d128", 128, False), ("attn_d128_causal", 128, True), ("attn_d64", 64, False),
                                 ("attn_d64_causal", 64, True), ("attn_d128_short", 128, False),
                                 ("attn_d64_causal_short", 64, True),
                                 ("attn_d128_k128", 128, False),
                                 ("attn_d128_causal_np", 128, True), ("attn_d128_k128p", 128, False),
                                 ("attn_d128_nola", 128, False), ("attn_d64_causal_nola", 64, True),
                                 ("attn_d128_st0", 128, False), ("attn_d64_causal_st0", 64, True),
                                 ("attn_d128_plain_p", 128, False),
                                 ("attn_d128_plain", 128, False), ("attn_d128_ov", 128, False),
                                 ("attn_d128_nopp", 128, False), ("attn_d128_np", 128, False),
                                 ("attn_d128_short_cl", 128, False), ("attn_d128_cl1", 128, False)]:
        for (Bn, H, HKV, N) in [(1, 2, 2, 128), (2, 4, 2, 1000), (1, 4, 1, 333), (1, 2, 2, 240)]:
            case("check", variant, Bn, H, HKV, N, D, causal, time_it=False)
    # many work tiles per block (both copies of q, their barriers' phases wrapping), ragged
    for (variant, D) in [("attn_d64", 64), ("attn_d128_short", 128), ("attn_d128", 128)]:
        case("check", variant, 4, 33, 3, 2000, D, False, time_it=False)
    case("strided", "attn_d128", 2, 4, 2, 1000, 128, False, time_it=False, bshd=True)
    case("strided", "attn_d128", 2, 4, 2, 1100, 128, False, time_it=False, bshd=True)  # a narrow last step
    case("strided", "attn_d64_causal", 2, 4, 2, 333, 64, True, time_it=False, bshd=True)
    case("strided", "attn_d128_st0", 2, 4, 2, 1000, 128, False, time_it=False, bshd=True)
    if args.quick:
        return rows
    # few heads at long N (issue 17: B * H <= 8, N >= 8192): fewer work tiles than the grid has SMs
    for (variant, D, causal) in [("attn_d128", 128, False), ("attn_d128_causal", 128, True), ("attn_d64", 64, False),
                                 ("attn_d64_causal", 64, True)]:
        for (Bn, H, N) in ((1, 1, 8192), (1, 2, 8192), (1, 4, 8192), (1, 8, 8192), (1, 2, 16384), (1, 1, 32768)):
            case("fewheads", variant, Bn, H, H, N, D, causal, entry=True)
        # ragged N, GQA and strided views through the split pair (untimed)
        case("fewheads-check", variant, 1, 2, 1, 8200, D, causal, time_it=False, entry=True)
        case("fewheads-check", variant, 1, 1, 1, 9000, D, causal, time_it=False, entry=True, bshd=True)
    if args.fewheads:  # and issue 17's N = 1024 forward without flags (the dispatched build), B16 H16
        for (variant, D, causal) in [("attn_d128", 128, False), ("attn_d128_causal", 128, True), ("attn_d64", 64, False),
                                     ("attn_d64_causal", 64, True)]:
            case("n1024", variant, 16, 16, 16, 1024, D, causal, entry=True)
        return rows
    for (variant, D, causal) in [("attn_d128", 128, False), ("attn_d128_causal", 128, True), ("attn_d64", 64, False),
                                 ("attn_d64_causal", 64, True)]:
        case("n4096", variant, 16, 16, 16, 4096, D, causal)
        case("n16384", variant, 4, 16, 16, 16384, D, causal)
        case("n1024", variant, 16, 16, 16, 1024, D, causal)
    case("gqa", "attn_d128", 4, 32, 8, 4096, 128, False)
    case("gqa", "attn_d128_causal", 4, 32, 8, 4096, 128, True)
    # SHORT = 1 (D128, 128-key blocks, two copies of q) at N = 1024 and, for the trade-off, 4096
    case("short", "attn_d128_short", 16, 16, 16, 1024, 128, False)
    case("short", "attn_d128_short", 16, 16, 16, 4096, 128, False)
    case("short", "attn_d128_short", 4, 32, 8, 4096, 128, False)
    case("short", "attn_d64_causal_short", 16, 16, 16, 1024, 64, True)
    case("short", "attn_d64_causal_short", 16, 16, 16, 4096, 64, True)
    # the schedule's ablation at N4096 D128 (128 x 128 blocks): plain, + overlap, + pingpong
    case("ablation", "attn_d128_plain", 16, 16, 16, 4096, 128, False)
    case("ablation", "attn_d128_ov", 16, 16, 16, 4096, 128, False)
    case("ablation", "attn_d128_k128", 16, 16, 16, 4096, 128, False)
    # causal: persistent folded pairs (the default) against one block per tile
    for (variant, D) in [("attn_d128_causal_np", 128), ("attn_d64_causal_np", 64)]:
        case("ablation", variant, 16, 16, 16, 4096, D, True)
        case("ablation", variant, 16, 16, 16, 1024, D, True)
    case("ablation", "attn_d128_k128p", 16, 16, 16, 1024, 128, False)
    case("ablation", "attn_d128_k128p", 16, 16, 16, 4096, 128, False)
    for n in (1024, 4096):
        case("ablation", "attn_d128_nola", 16, 16, 16, n, 128, False)
        case("ablation", "attn_d128_causal_nola", 16, 16, 16, n, 128, True)
        case("ablation", "attn_d64_causal_nola", 16, 16, 16, n, 64, True)
    # staging = 0 (O straight from registers to global memory) against the staged TMA store
    for (variant, D, causal) in [("attn_d128_st0", 128, False), ("attn_d128_causal_st0", 128, True),
                                 ("attn_d64_st0", 64, False), ("attn_d64_causal_st0", 64, True)]:
        case("ablation", variant, 16, 16, 16, 4096, D, causal)
    case("ablation", "attn_d128_st0", 16, 16, 16, 1024, 128, False)
    # D128 without the narrow last step (N = 4096: a last block of 48 keys)
    case("ablation", "attn_d128_nt0", 16, 16, 16, 4096, 128, False)
    case("ablation", "attn_d128_nt0", 4, 32, 8, 4096, 128, False)
    case("check", "attn_d128_nt0", 2, 4, 2, 1000, 128, False, time_it=False)
    # D128 without clusters (K and V loaded by every block) against clusters of 2 (multicast)
    for n in (1024, 4096, 16384):
        case("ablation", "attn_d128_cl1", 16 if n < 16384 else 4, 16, 16, n, 128, False)
    case("ablation", "attn_d128_cl1", 4, 32, 8, 4096, 128, False)
    # D64 with one copy of q (setup_stages = 1)
    for n in (1024, 4096):
        case("ablation", "attn_d64_s1", 16, 16, 16, n, 64, False)
    return rows


def run(args):
    import torch
    print(f"# {torch.cuda.get_device_name()}  torch {torch.__version__}", flush=True)
    suites = {"gemm": gemm_suite, "attn": attn_suite, "gemm_cluster": gemm_cluster_suite}
    global CSV
    CSV = args.csv or None
    rows = suites[args.suite](args, torch)
    bad = [r for r in rows if r.get("status") != "ok"]
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--tkc", required=True)
    b.add_argument("--out", required=True)
    b.add_argument("--only", default="")
    r = sub.add_parser("run")
    r.add_argument("--lib", required=True)
    r.add_argument("--suite", required=True)
    r.add_argument("--quick", action="store_true")
    r.add_argument("--fewheads", action="store_true",
                   help="attn: the checks, then only the few-heads long-N cases and N = 1024 at B16 H16")
    r.add_argument("--fa4", action="store_true", help="attn: also FlashAttention-4's forward (flash_attn.cute; start "
                   "through peer-python.py of ../shared/tools/peer-wheels.sh)")
    r.add_argument("--csv", default="")
    args = ap.parse_args()
    sys.exit(build(args) if args.cmd == "build" else run(args))


if __name__ == "__main__":
    main()
