#!/usr/bin/env python3
"""tune_linear.py - times builds of kernels.tk/linear.tk with different params (tile width, super-M
group, pipeline depth, persistence, clusters) against cuBLAS over issue 17's shapes, as
bench/linear.py times them (10 back-to-back launches, median of alternated rounds, bf16, the
bias kernel without activation), and prints one row per (shape, variant) and a geometric mean per
variant and M. The first step towards a tuning table: it measures, it does not choose.

    python3 bench/tune_linear.py build --tkc TKC --out LIB [--variants NAME=K:V,K:V;...]   # nvcc, no GPU
    python3 bench/tune_linear.py run --lib LIB [--ms 4096,16384] [--rounds 5] [--fn linear_auto]  # on the GPU

Variant names and their -D params are in LIB/variants.json (written by build); a variant's key TK
names another .tk to build instead of kernels.tk/linear.tk (`parts=TK:bench/experiments/linear/decode_parts.tk,XROUTE:3`, timed with --fn linear_exp),
and its key TKC another tkc binary to build it with (`nopdl=ROUTE:2,TKC:.carry/tkc-old`: the same
source by an older compiler, for a same-run A/B of a compiler change).
With --graph, each implementation is a CUDA graph of launches that cycle over copies of W (as many
as make up three L2s, 180 MB, so no launch finds its weight in the L2), cuBLAS included, and a device
copy of the same weights (W.copy_, bytes read + written) is timed with them: each row also gives
every variant's weight bandwidth (N K 2 bytes / time) as a fraction of that copy's bandwidth, issue
17's M <= 16 target (85%). Without it, 10 back-to-back eager launches of one W (host launch costs
included, which dominate at M = 1 for the smaller weights).
"""
import argparse
import ctypes
import importlib.util
import json
import math
import os
import random
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
DEFAULT = ("base=;g4=GROUP:4;g16=GROUP:16;np=PERSISTENT:0;cl2=CLUSTER:2;s3=STAGES:3;bn192=BNB:192;"
           "g16cl2=GROUP:16,CLUSTER:2")


def _linear():
    spec = importlib.util.spec_from_file_location("tkc_bench_linear", os.path.join(HERE, "linear.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def parse_variants(text):
    out = {}
    for part in [p for p in text.split(";") if p]:
        name, _, kv = part.partition("=")
        out[name] = dict(x.split(":") for x in kv.split(",") if x)
    return out


def build(a):
    os.makedirs(a.out, exist_ok=True)
    vs = parse_variants(a.variants)
    nvcc = ["nvcc", "-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-Xcompiler", "-fPIC", "-shared",
            "-Xptxas", "-v"]
    for name, d in vs.items():
        cu = os.path.join(a.out, name + ".cu")
        src = d.pop("TK", os.path.join(ROOT, "kernels.tk", "linear.tk"))
        cmd = [d.pop("TKC", a.tkc), src, "-o", cu]
        for k, v in d.items():
            cmd += ["-D", "%s=%s" % (k, v)]
        subprocess.run(cmd, check=True)
        r = subprocess.run(nvcc + [cu, "-o", os.path.join(a.out, "lib%s.so" % name)], capture_output=True, text=True)
        spills = [l for l in r.stderr.splitlines() if "spill" in l and not l.strip().startswith("0 bytes stack frame, 0 bytes spill")]
        if r.returncode:
            sys.exit("nvcc failed for %s: %s" % (name, r.stderr[-800:]))
        os.remove(cu)
        print("built %-8s %s%s" % (name, d, "  SPILLS: " + "; ".join(spills) if spills else ""), flush=True)
    with open(os.path.join(a.out, "variants.json"), "w") as f:
        json.dump(vs, f, indent=1)
    return 0


def run(a):
    import torch
    lin = _linear()
    vs = json.load(open(os.path.join(a.lib, "variants.json")))
    libs = {n: ctypes.CDLL(os.path.join(a.lib, "lib%s.so" % n)) for n in vs}
    dev, stream = torch.device("cuda"), torch.cuda.current_stream().cuda_stream
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    rows = []
    for M in [int(m) for m in a.ms.split(",")]:
        for (N, K) in lin.SHAPES:
            x = torch.randn(M, K, device=dev).bfloat16()
            w = (torch.randn(N, K, device=dev) / K ** 0.5).bfloat16()
            b = torch.randn(N, device=dev).bfloat16()
            y = torch.empty(M, N, device=dev, dtype=torch.bfloat16)
            ref = torch.nn.functional.linear(x, w, b)
            impls = {"cublas": lambda: torch.nn.functional.linear(x, w, b)}
            for n, lib in libs.items():
                impls[n] = (lambda lib=lib: lin.launch(getattr(lib, "tkc_" + a.fn), [x, w, b, y], [M, K, N], stream))
                y.fill_(float("nan"))
                impls[n]()
                torch.cuda.synchronize()
                err = ((y.float() - ref.float()).norm() / ref.float().norm()).item()
                if not err < 1e-2:
                    print("WRONG %s M %d N %d K %d: rel err %.3g" % (n, M, N, K, err), flush=True)
            if a.graph:
                rows.append(graph_row(torch, a, lin, libs, vs, M, N, K, x, w, b))
                continue
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
            row = dict(M=M, N=N, K=K, **{k + "_tflops": v for k, v in tf.items()})
            rows.append(row)
            print("M %5d N %6d K %5d cublas %6.1f | " % (M, N, K, tf["cublas"]) +
                  " ".join("%s %.3f" % (n, tf[n] / tf["cublas"]) for n in vs), flush=True)
    print("geometric mean of tkc / cuBLAS per variant and M:")
    for M in sorted({r["M"] for r in rows}):
        rs = [r for r in rows if r["M"] == M]
        print("M %5d: %s" % (M, "  ".join("%s %.3f" % (n, gmean([r[n + "_tflops"] / r["cublas_tflops"] for r in rs]))
                                         for n in vs)))
    if a.graph:
        print("geometric mean of the weights' bandwidth as a fraction of the copy's, per M:")
        for M in sorted({r["M"] for r in rows}):
            rs = [r for r in rows if r["M"] == M]
            print("M %5d: cublas %.3f  %s" % (M, gmean([r["cublas_copyfrac"] for r in rs]), "  ".join(
                "%s %.3f" % (n, gmean([r[n + "_copyfrac"] for r in rs])) for n in vs)))
    if a.json:
        with open(a.json, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    return 0


def gmean(xs):
    return math.exp(sum(math.log(v) for v in xs) / len(xs))


def graph_row(torch, a, lin, libs, vs, M, N, K, x, w, b):
    """one shape, --graph: every implementation a CUDA graph over rotating copies of W, a copy too"""
    wbytes = N * K * 2
    nw = max(1, math.ceil(180e6 / wbytes))
    ws = [w] + [w.clone() for _ in range(nw - 1)]
    reps = nw * max(1, math.ceil(10 / nw))
    dst = torch.empty_like(w)
    y = torch.empty(M, N, device=w.device, dtype=torch.bfloat16)
    side = torch.cuda.Stream()

    def body(k):
        st = side.cuda_stream
        if k == "cublas":
            return lambda i: torch.nn.functional.linear(x, ws[i % nw], b)
        if k == "copy":
            return lambda i: dst.copy_(ws[i % nw])
        fn = getattr(libs[k], "tkc_" + a.fn)
        return lambda i: lin.launch(fn, [x, ws[i % nw], b, y], [M, K, N], st)
    graphs = {}
    for k in ["cublas", "copy"] + list(vs):
        f = body(k)
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for i in range(nw):
                f(i)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=side):
            for i in range(reps):
                f(i)
        graphs[k] = g
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = {k: [] for k in graphs}
    for _ in range(a.rounds):
        order = list(graphs)
        random.shuffle(order)
        for k in order:
            graphs[k].replay()
            start.record()
            graphs[k].replay()
            end.record()
            end.synchronize()
            times[k].append(start.elapsed_time(end) / reps)
    med = {k: statistics.median(v) for k, v in times.items()}
    copy_bw = 2 * wbytes / (med["copy"] * 1e-3)
    row = dict(M=M, N=N, K=K, copies=nw, copy_ms=med["copy"], copy_gbs=copy_bw / 1e9)
    for k in ["cublas"] + list(vs):
        row[k + "_ms"] = med[k]
        row[k + "_tflops"] = 2 * M * N * K / (med[k] * 1e-3) / 1e12
        row[k + "_copyfrac"] = wbytes / (med[k] * 1e-3) / copy_bw
    print("M %5d N %6d K %5d copy %6.0f GB/s | cublas %.3f ms (%.3f of copy) | " % (
        M, N, K, copy_bw / 1e9, med["cublas"], row["cublas_copyfrac"]) + " ".join(
        "%s %.3f ms %.3f of copy %.3f x cuBLAS" % (n, med[n], row[n + "_copyfrac"], med["cublas"] / med[n])
        for n in vs), flush=True)
    del ws, dst
    return row


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--tkc", required=True)
    b.add_argument("--out", required=True)
    b.add_argument("--variants", default=DEFAULT)
    r = sub.add_parser("run")
    r.add_argument("--lib", required=True)
    r.add_argument("--ms", default="4096,16384")
    r.add_argument("--rounds", type=int, default=5)
    r.add_argument("--json", default="")
    r.add_argument("--graph", action="store_true", help="CUDA graphs over rotating weights, with a device copy")
    r.add_argument("--fn", default="linear_bias", help="the launcher timed: linear_bias, or the entry linear_auto")
    a = ap.parse_args()
    return build(a) if a.cmd == "build" else run(a)


if __name__ == "__main__":
    sys.exit(main())
