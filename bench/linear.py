#!/usr/bin/env python3
"""linear.py - tkc's linear layers (kernels.tk/linear.tk: Y = act(X @ W^T + bias), W stored [N, K] as
torch.nn.Linear stores it) on the GPU: correctness against an fp32 reference with NaN-poisoned
outputs, then time against cuBLAS (torch.nn.functional.linear in bf16, its epilogue fused where
cuBLASLt fuses it, else the activation after it) in the same process, rounds alternated.

    python3 bench/linear.py --tkc .carry/tkc [--out DIR] [--quick] [--rounds N] [--lib DIR]
    python3 bench/linear.py --tkc .carry/tkc --out DIR --build-only     # nvcc only, no GPU

First run: bench/RESULTS.md, run 100. Shapes: the Llama-3-8B and -70B projections of issue 17 at
M = 128, 1024, 4096, 16384 (M = 1 and 16 need the decode path, not built yet), plus ragged ones
(M, N not multiples of the tile) for the checks. Up to M = SPLITK_MAX_M the split-K pair
(linear_splitk + linear_splitk_out) is checked and timed at SPLITS split counts as well; the
summary gives the geometric mean of linear_bias alone and of the best of it and split-K per shape
(a choice made after the fact: the launch-time dispatch that would make it is not built). TFLOP/s = 2 M N K / time; CUDA
events, the median over rounds, each round a fresh order of implementations.
"""
import argparse
import ctypes
import os
import random
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
NVCC = ["nvcc", "-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-Xcompiler", "-fPIC", "-shared"]
P, LL = ctypes.c_void_p, ctypes.c_longlong
ACTS = {0: "none", 1: "relu", 2: "gelu_tanh", 3: "silu", 4: "gelu_erf"}
SPLITK_MAX_M = 1024            # split-K is timed up to this M
SPLITS = (2, 4, 8)             # the split counts timed
SHAPES = [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336), (128256, 4096), (10240, 8192), (8192, 8192),
          (57344, 8192), (8192, 28672)]  # (N, K)


def build(tkc, out, act, lib=""):
    if lib:  # prebuilt (bench/linear.py build --out LIB on a machine with nvcc)
        return ctypes.CDLL(os.path.join(lib, "linear_act%d.so" % act))
    cu = os.path.join(out, "linear_act%d.cu" % act)
    subprocess.run([tkc, os.path.join(ROOT, "kernels.tk", "linear.tk"), "-D", "ACT=%d" % act, "-o", cu], check=True)
    r = subprocess.run(NVCC + ["-Xptxas", "-v", cu, "-o", cu[:-3] + ".so"], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(r.stderr[-2000:])
    return ctypes.CDLL(cu[:-3] + ".so")


def strides(t, keep):
    a = (LL * t.dim())(*t.stride())
    keep.append(a)
    return a


def launch(fn, tensors, dims, stream, ints=()):
    keep, args = [], []
    for t in tensors:
        args += [P(t.data_ptr()), strides(t, keep)]
    args += [LL(d) for d in dims] + [ctypes.c_int32(i) for i in ints] + [P(stream)]
    rc = fn(*args)
    if rc:
        raise RuntimeError("launcher returned %d" % rc)


def splitk(lib, x, w, b, p, y, M, K, N, splits, stream):
    """linear_splitk (partial products added into the fp32 p, zeroed by its launcher), then
    linear_splitk_out (bias, activation, bf16)"""
    launch(lib.tkc_linear_splitk, [x, w, p], [M, K, N], stream, ints=(splits,))
    launch(lib.tkc_linear_splitk_out, [p, b, y], [M, N], stream)


def activation(torch, y, act):
    F = torch.nn.functional
    if act == 1:
        return F.relu(y)
    if act == 2:
        return F.gelu(y, approximate="tanh")
    if act == 3:
        return F.silu(y)
    if act == 4:
        return F.gelu(y)
    return y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tkc", required=True)
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp") + "/linear")
    ap.add_argument("--quick", action="store_true", help="two shapes, M = 1024 and 4096")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--lib", default="", help="a folder with linear_act0..4.so built before (--build-only)")
    ap.add_argument("--build-only", action="store_true", help="build the five libraries (one per activation) into --out and stop")
    ap.add_argument("--ms", default="", help="the M values timed (default 128,1024,4096,16384)")
    ap.add_argument("--acts", default="0,2", help="the activations timed (0 none, 2 gelu_tanh)")
    ap.add_argument("--quack", action="store_true", help="also quack's CuTe-DSL GEMM (quack.gemm_interface.gemm, "
                    "bias fused, no activation; start through peer-python.py of ../shared/tools/peer-wheels.sh)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.build_only:
        for act in ACTS:
            build(a.tkc, a.out, act)
        return 0
    import torch
    libs = {act: build(a.tkc, a.out, act, a.lib) for act in ACTS}
    dev = torch.device("cuda")
    stream = torch.cuda.current_stream().cuda_stream
    rows, bad = [], 0

    # correctness: every kernel and activation, ragged shapes, fp32 reference
    # the last three: K or N whose rows are not 16-byte multiples (staged by the launcher)
    # (16, 4096, 4096) and (200, 1000, 14336): linear_auto's decode and split-K routes; (5, 34000, 520):
    # its decode kernel alone (linear_decode_direct: cdiv(N, BND) >= the SMs)
    for (M, N, K) in [(1, 8, 64), (777, 1536, 4096), (300, 200, 72), (4096, 4096, 4096), (777, 1531, 4093), (3, 5, 7),
                      (64, 100, 1), (16, 4096, 4096), (200, 1000, 14336), (5, 34000, 520)]:
        x = torch.randn(M, K, device=dev).bfloat16()
        w = (torch.randn(N, K, device=dev) / K ** 0.5).bfloat16()
        b = torch.randn(N, device=dev).bfloat16()
        for act in ACTS:
            ref = activation(torch, x.float() @ w.float().t() + b.float(), act)
            for kern, has_bias, dt in (("linear", False, torch.bfloat16), ("linear_bias", True, torch.bfloat16),
                                       ("linear_bias_f32", True, torch.float32), ("linear_auto", True, torch.bfloat16)):
                if not hasattr(libs[act], "tkc_" + kern):
                    continue
                if kern == "linear" and act:
                    continue
                y = torch.full((M, N), float("nan"), device=dev, dtype=dt)
                launch(getattr(libs[act], "tkc_" + kern), [x, w] + ([b] if has_bias else []) + [y], [M, K, N], stream)
                torch.cuda.synchronize()
                r = ref if has_bias else x.float() @ w.float().t()
                err = ((y.float() - r).norm() / r.norm().clamp_min(1e-30)).item()
                ok = err < 1e-2 and not torch.isnan(y).any().item()
                bad += not ok
                print("check %-16s act %-9s M %5d N %5d K %5d  rel err %.2e  %s" % (kern, ACTS[act], M, N, K, err,
                                                                                    "ok" if ok else "WRONG"))
            for splits in (1, 3, 8):  # split-K: any split count, ragged K included
                y = torch.full((M, N), float("nan"), device=dev, dtype=torch.bfloat16)
                p = torch.full((M, N), float("nan"), device=dev, dtype=torch.float32)  # the launcher zeroes it
                splitk(libs[act], x, w, b, p, y, M, K, N, splits, stream)
                torch.cuda.synchronize()
                err = ((y.float() - ref).norm() / ref.norm().clamp_min(1e-30)).item()
                ok = err < 1e-2 and not torch.isnan(y).any().item()
                bad += not ok
                print("check %-16s act %-9s M %5d N %5d K %5d  rel err %.2e  %s" % ("splitk/%d" % splits, ACTS[act], M, N,
                                                                                    K, err, "ok" if ok else "WRONG"))

    # speed: bf16 result, bias + activation, against F.linear (+ the activation) in bf16
    ms = [int(m) for m in a.ms.split(",")] if a.ms else [1024, 4096] if a.quick else [128, 1024, 4096, 16384]
    qgemm = None
    if a.quack:
        try:
            from quack.gemm_interface import gemm as qgemm
        except Exception as ex:
            print("# quack not importable: %s" % str(ex)[:300])
    shapes = SHAPES[:2] if a.quick else SHAPES
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for M in ms:
        for (N, K) in shapes:
            for act in [int(v) for v in a.acts.split(",")]:
                x = torch.randn(M, K, device=dev).bfloat16()
                w = (torch.randn(N, K, device=dev) / K ** 0.5).bfloat16()
                b = torch.randn(N, device=dev).bfloat16()
                y = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
                impls = {
                    "tkc": lambda: launch(libs[act].tkc_linear_bias, [x, w, b, y], [M, K, N], stream),
                    "cublas": lambda: activation(torch, torch.nn.functional.linear(x, w, b), act),
                }
                if hasattr(libs[act], "tkc_linear_auto"):  # the entry: its kernels chosen by the shape
                    impls["auto"] = lambda: launch(libs[act].tkc_linear_auto, [x, w, b, y], [M, K, N], stream)
                if M <= 16:  # linear_bias's tiles are 128 rows: the decode route is linear_auto's
                    del impls["tkc"]
                if qgemm is not None and act == 0:   # quack: Y = X @ W^T + b, W^T as a (K, N) view
                    yq = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
                    try:
                        qgemm(x, w.t(), out=yq, bias=b)
                        torch.cuda.synchronize()
                        rq = x.float() @ w.float().t() + b.float()
                        eq = ((yq.float() - rq).norm() / rq.norm()).item()
                        if not eq < 1e-2:
                            print("# quack M %d N %d K %d: rel err %.2e (not timed)" % (M, N, K, eq))
                        else:
                            impls["quack"] = lambda: qgemm(x, w.t(), out=yq, bias=b)
                    except Exception as ex:
                        print("# quack M %d N %d K %d: %s" % (M, N, K, str(ex)[:200]))
                if M <= SPLITK_MAX_M:  # split-K at a few split counts (the best is reported as tkc_splitk)
                    p = torch.empty(M, N, device=dev, dtype=torch.float32)
                    for sp in SPLITS:
                        impls["splitk%d" % sp] = (lambda sp=sp: splitk(libs[act], x, w, b, p, y, M, K, N, sp, stream))
                times = {k: [] for k in impls}
                for _ in range(a.rounds):
                    order = list(impls)
                    random.shuffle(order)
                    for k in order:
                        impls[k]()
                        start.record()
                        for _ in range(10):
                            impls[k]()
                        end.record()
                        end.synchronize()
                        times[k].append(start.elapsed_time(end) / 10)
                med = {k: statistics.median(v) for k, v in times.items()}
                tf = {k: 2 * M * N * K / (t * 1e-3) / 1e12 for k, t in med.items()}
                sk = {k: v for k, v in tf.items() if k.startswith("splitk")}
                tf.setdefault("tkc", tf.get("auto", 0.0))
                best = max([("tkc", tf["tkc"])] + list(sk.items()), key=lambda kv: kv[1])
                rows.append((M, N, K, ACTS[act], tf["tkc"], tf["cublas"], best[1], best[0], tf.get("quack"), tf.get("auto")))
                wb = M * N * 2 + N * K * 2 + M * K * 2  # bytes that must move (M <= 16: about the weight's)
                print("time M %5d N %6d K %5d act %-9s tkc %6.1f TFLOP/s  cublas %6.1f  ratio %.3f%s%s%s" % (
                    M, N, K, ACTS[act], tf["tkc"], tf["cublas"], tf["tkc"] / tf["cublas"],
                    "  auto %.1f (auto/cublas %.3f, %.0f GB/s; cublas %.0f GB/s)" % (
                        tf["auto"], tf["auto"] / tf["cublas"], wb / (med["auto"] * 1e-3) / 1e9,
                        wb / (med["cublas"] * 1e-3) / 1e9) if "auto" in tf else "",
                    "  quack %.1f (tkc/quack %.3f)" % (tf["quack"], tf["tkc"] / tf["quack"]) if "quack" in tf else "",
                    "  | " + " ".join("%s %.1f" % kv for kv in sk.items()) + "  best %s ratio %.3f" % (
                        best[0], best[1] / tf["cublas"]) if sk else ""))
    for M in ms:
        for what, col in (("linear_bias", 4), ("best of linear_bias and split-K", 6)):
            rs = [r[col] / r[5] for r in rows if r[0] == M]
            if rs and (col == 4 or M <= SPLITK_MAX_M):
                g = 1.0
                for v in rs:
                    g *= v
                print("M %5d: geometric mean tkc / cublas %.3f over %d shapes, worst %.3f (%s)" % (
                    M, g ** (1 / len(rs)), len(rs), min(rs), what))
        rs = [r[9] / r[5] for r in rows if r[0] == M and r[9]]
        if rs:
            g = 1.0
            for v in rs:
                g *= v
            print("M %5d: geometric mean tkc / cublas %.3f over %d shapes, worst %.3f (linear_auto)" % (
                M, g ** (1 / len(rs)), len(rs), min(rs)))
        qs = [r[4] / r[8] for r in rows if r[0] == M and r[8]]
        if qs:
            g = 1.0
            for v in qs:
                g *= v
            print("M %5d: geometric mean tkc / quack %.3f over %d shapes, worst %.3f (linear_bias, no activation)" % (
                M, g ** (1 / len(qs)), len(qs), min(qs)))
    print("correctness: %d wrong" % bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
