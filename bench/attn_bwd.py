#!/usr/bin/env python3
"""attn_bwd.py - tkc's attention backward (kernels.tk/attn_bwd.tk) on the GPU: gradients against
PyTorch autograd of attention in fp32, then time against PyTorch SDPA's backward (cuDNN and
FlashAttention backends) in the same process.

    python3 bench/attn_bwd.py --tkc .carry/tkc [--out DIR] [--quick] [--lib DIR] [--n 1024 4096] [--fa4]
    python3 bench/attn_bwd.py --tkc .carry/tkc --out DIR --build-only      # nvcc only, no GPU

Builds attn_fwd.tk (for O and the log-sum-exp L the backward consumes) and attn_bwd.tk with nvcc
into shared libraries and calls the C launchers through ctypes. The backward is timed alone: the
prep kernel (Dl = rowsum(dO O)) then the entry attn_bwd_main (dK, dV and dQ in fp32, zeroed by the
launchers where they add), on inputs made once by the forward; D = 64 and 128, the .tk's defaults
("main": dQ added by attn_bwd_fused at D = 64, by attn_bwd_split at D = 128) and -D DETERMINISTIC=1 ("det": dQ by attn_bwd_dq,
checked bit-identical over two runs, with dK and dV when no query heads share a KV head); the baselines' backward is timed as torch.autograd.grad on a saved
forward graph, and forward + backward as the forward then torch.autograd.grad (tkc: attn_fwd then the
backward). --fa4 adds FlashAttention-4's CuTe-DSL kernels (flash_attn.cute.flash_attn_func on [B, N, H, D]
copies; its gradients compared with tkc's, and its first call, JIT included, reported). FLOPs = 2.5 x the forward's 4 B H N^2 D (halved when causal). CUDA events, median
of rounds, tkc and baselines alternated.
"""
import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
NVCC = ["nvcc", "-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-Xcompiler", "-fPIC", "-shared"]
P, LL = ctypes.c_void_p, ctypes.c_longlong


def build(tkc, out, name, defs, lib=""):
    tag = name + "".join("_%s%s" % tuple(d.split("=")) for d in defs)
    if lib:  # prebuilt by --build-only
        return ctypes.CDLL(os.path.join(lib, tag + ".so"))
    cu = os.path.join(out, tag + ".cu")
    subprocess.run([tkc, os.path.join(ROOT, "kernels.tk", name + ".tk"), "-o", cu] + sum((["-D", d] for d in defs), []),
                   check=True)
    r = subprocess.run(NVCC + ["-Xptxas", "-v", cu, "-o", cu[:-3] + ".so"], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(r.stderr[-2000:])
    return ctypes.CDLL(cu[:-3] + ".so")


def st(t, keep):
    a = (LL * t.dim())(*t.stride())
    keep.append(a)
    return a


def call(fn, tensors, dims, scalars, stream):
    keep, args = [], []
    for t in tensors:
        args += [P(t.data_ptr()), st(t, keep)]
    args += [LL(d) for d in dims] + [ctypes.c_float(s) for s in scalars] + [P(stream)]
    rc = fn(*args)
    if rc:
        raise RuntimeError("launcher returned %d" % rc)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tkc", required=True)
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp") + "/attn_bwd")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--lib", default="", help="libraries built before by --build-only")
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--n", type=int, nargs="*", default=[4096], help="sequence lengths timed (B16 H16)")
    ap.add_argument("--fa4", action="store_true", help="also FlashAttention-4 (flash_attn.cute; start through "
                    "peer-python.py of ../shared/tools/peer-wheels.sh)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rows = []
    import concurrent.futures
    # head dimensions and modes: "main", the .tk's defaults (its entry attn_bwd_main: dQ added inside
    # attn_bwd_fused at D = 64, attn_bwd_split at D = 128), and "det", -D DETERMINISTIC=1 (dQ's own pass
    # at every D; checked bit-identical); run 103 also timed register atomics (DQ_ATOMIC of d59f899)
    modes = [(64, "main"), (128, "main"), (64, "det"), (128, "det")]
    specs = sorted({("attn_fwd", (d, c, 0)) for d, _ in modes for c in (0, 1)} |
                   {("attn_bwd", (d, c, int(m == "det"))) for d, m in modes for c in (0, 1)})

    def defs(sp):
        return ["D=%d" % sp[1][0], "CAUSAL=%d" % sp[1][1]] + (["DETERMINISTIC=1"] if sp[1][2] else [])
    with concurrent.futures.ThreadPoolExecutor(min(len(specs), os.cpu_count() or 2)) as ex:
        libs = dict(zip(specs, ex.map(lambda sp: build(args.tkc, args.out, sp[0], defs(sp), args.lib), specs)))
    if args.build_only:
        return 0
    import torch
    import torch.nn.functional as F
    fa4 = None
    if args.fa4:
        try:
            from flash_attn.cute import flash_attn_func as fa4
        except Exception as ex:
            print("# fa4 not importable: %s" % str(ex)[:300])
    for (D, mode), causal in [(m, c) for m in modes for c in (0, 1)]:
        fwd, bwd = libs[("attn_fwd", (D, causal, 0))], libs[("attn_bwd", (D, causal, int(mode == "det")))]
        s = torch.cuda.current_stream().cuda_stream

        def tkc_grads(q, k, v, do, scale):
            B, H, N, _ = q.shape
            HKV = k.shape[1]
            o = torch.empty_like(q)
            # L and Dl are TMA-loaded vectors: rows padded to 16 bytes (a view of the first N)
            npad = (N + 3) // 4 * 4
            lse = torch.empty(B, H, npad, device="cuda")[..., :N]
            call(fwd.tkc_attn_fwd, (q, k, v, o, lse), (B, H, N, HKV), (scale,), s)
            dl = torch.empty(B, H, npad, device="cuda")[..., :N]
            dq = torch.full((B, H, N, D), float("nan"), device="cuda")  # written whole (attn_bwd_dq) or zeroed first
            dk = torch.empty(B, HKV, N, D, device="cuda")
            dv = torch.empty(B, HKV, N, D, device="cuda")

            def run():
                call(bwd.tkc_attn_bwd_prep, (o, do, dl), (B, H, N), (), s)
                call(bwd.tkc_attn_bwd_main, (q, k, v, do, lse, dl, dk, dv, dq), (B, H, N, HKV), (scale,), s)

            def run_fb():   # forward (O and L again) then the backward: what a training step runs
                call(fwd.tkc_attn_fwd, (q, k, v, o, lse), (B, H, N, HKV), (scale,), s)
                run()
            run.fwd_bwd = run_fb
            return run, (dq, dk, dv)

        # correctness: fp32 autograd of the same attention (GQA by repeating K and V)
        cases = [(2, 4, 2, 333), (1, 2, 2, 1000), (2, 2, 1, 128)] if not args.quick else [(1, 2, 2, 333)]
        for (B, H, HKV, N) in cases:
            torch.manual_seed(0)
            q = torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16)
            k = torch.randn(B, HKV, N, D, device="cuda", dtype=torch.bfloat16)
            v = torch.randn(B, HKV, N, D, device="cuda", dtype=torch.bfloat16)
            do = torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16)
            scale = D ** -0.5
            run, (dq, dk, dv) = tkc_grads(q, k, v, do, scale)
            run()
            torch.cuda.synchronize()
            qf, kf, vf = (t.float().requires_grad_() for t in (q, k, v))
            rep = H // HKV
            of = F.scaled_dot_product_attention(qf, kf.repeat_interleave(rep, 1), vf.repeat_interleave(rep, 1),
                                                is_causal=bool(causal), scale=scale)
            gq, gk, gv = torch.autograd.grad(of, (qf, kf, vf), do.float())
            errs = {n: ((a - b).norm() / b.norm()).item() for n, a, b in (("dQ", dq, gq), ("dK", dk, gk), ("dV", dv, gv))}
            ok = all(e < 2e-2 for e in errs.values()) and all(torch.isfinite(t).all().item() for t in (dq, dk, dv))
            same = ""
            if mode == "det":  # run again: dQ bit-identical (dK and dV too when no heads share a KV head)
                saved = [t.clone() for t in (dq, dk, dv)]
                run()
                torch.cuda.synchronize()
                same = "dQ" if torch.equal(saved[0], dq) else "dQ DIFFERS"
                if HKV == H:
                    same += ", dK, dV" if torch.equal(saved[1], dk) and torch.equal(saved[2], dv) else ", dK/dV DIFFER"
                ok = ok and "DIFF" not in same
            row = dict(kind="check", mode=mode, causal=causal, B=B, H=H, HKV=HKV, N=N, D=D,
                       **{"err_" + n: e for n, e in errs.items()}, bit_identical=same, status="ok" if ok else "FAIL")
            rows.append(row)
            print(json.dumps(row), flush=True)
        if args.quick:
            continue
        # timing, B16 H16 at each N: the backward alone, and forward + backward (a training step's
        # attention: for tkc the forward kernel then the backward's prep and entry; for the baselines the
        # forward then torch.autograd.grad)
        for N in args.n:
            B, H = 16, 16
            q, k, v, do = (torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16) for _ in range(4))
            scale = D ** -0.5
            run, tkc_out = tkc_grads(q, k, v, do, scale)
            qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))
            bwd_impls, fb_impls = dict(tkc=run), dict(tkc=run.fwd_bwd)
            for name, be in (("cudnn", torch.nn.attention.SDPBackend.CUDNN_ATTENTION),
                             ("flash", torch.nn.attention.SDPBackend.FLASH_ATTENTION)):
                try:
                    with torch.nn.attention.sdpa_kernel(be):
                        o = F.scaled_dot_product_attention(qg, kg, vg, is_causal=bool(causal), scale=scale)
                        torch.autograd.grad(o, (qg, kg, vg), do, retain_graph=True)

                    def brun(o=o):
                        torch.autograd.grad(o, (qg, kg, vg), do, retain_graph=True)

                    def fbrun(be=be):
                        with torch.nn.attention.sdpa_kernel(be):
                            o2 = F.scaled_dot_product_attention(qg, kg, vg, is_causal=bool(causal), scale=scale)
                        torch.autograd.grad(o2, (qg, kg, vg), do)
                    bwd_impls[name], fb_impls[name] = brun, fbrun
                except Exception as ex:  # a backend that does not take the case
                    print("# %s: %s" % (name, str(ex)[:200]))
            if fa4 is not None:   # FlashAttention-4's CuTe-DSL kernels take [B, N, H, D]
                try:
                    q4, k4, v4 = (t.transpose(1, 2).contiguous().requires_grad_() for t in (q, k, v))
                    do4 = do.transpose(1, 2).contiguous()

                    def fa4_fwd():
                        o4 = fa4(q4, k4, v4, softmax_scale=scale, causal=bool(causal))
                        return o4[0] if isinstance(o4, tuple) else o4
                    t0 = time.time()
                    o4 = fa4_fwd()
                    torch.autograd.grad(o4, (q4, k4, v4), do4, retain_graph=True)
                    torch.cuda.synchronize()
                    print("# fa4 D%d causal=%d N%d: first forward + backward %.1f s (its JIT)" % (D, causal, N, time.time() - t0))
                    # FA4 against tkc on these inputs: same function, bf16 outputs
                    g4 = torch.autograd.grad(o4, (q4, k4, v4), do4, retain_graph=True)
                    run()
                    torch.cuda.synchronize()
                    fa4_err = {"err_" + n: ((a.float() - b.float().transpose(1, 2)).norm() / b.float().norm()).item()
                               for n, a, b in (("dQ", tkc_out[0], g4[0]), ("dK", tkc_out[1], g4[1]), ("dV", tkc_out[2], g4[2]))}
                    row = dict(kind="fa4_vs_tkc", causal=causal, B=B, H=H, N=N, D=D, first_call_s=time.time() - t0,
                               **fa4_err, status="ok" if all(e < 2e-2 for e in fa4_err.values()) else "FAIL")
                    rows.append(row)
                    print(json.dumps(row), flush=True)

                    def fa4_b(o4=o4):
                        torch.autograd.grad(o4, (q4, k4, v4), do4, retain_graph=True)

                    def fa4_fb():
                        torch.autograd.grad(fa4_fwd(), (q4, k4, v4), do4)
                    bwd_impls["fa4"], fb_impls["fa4"] = fa4_b, fa4_fb
                except Exception as ex:
                    print("# fa4: %s" % str(ex)[:300])
            flops = 2.5 * 4 * B * H * N * N * D / (2 if causal else 1)
            for what, impls, fl in (("bwd", bwd_impls, flops), ("fwd_bwd", fb_impls, flops * 3.5 / 2.5)):
                times = {n: [] for n in impls}
                for r in range(args.rounds):
                    order = list(impls) if r % 2 == 0 else list(impls)[::-1]
                    for n in order:
                        f = impls[n]
                        f()
                        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                        e0.record()
                        for _ in range(5):
                            f()
                        e1.record()
                        torch.cuda.synchronize()
                        times[n].append(e0.elapsed_time(e1) / 5)
                row = dict(kind="time", what=what, mode=mode, causal=causal, B=B, H=H, N=N, D=D)
                for n, ts in times.items():
                    ms = statistics.median(ts)
                    row[n + "_ms"] = ms
                    row[n + "_tflops"] = fl / ms / 1e9
                rows.append(row)
                print(json.dumps(row), flush=True)
            del q, k, v, do, qg, kg, vg, bwd_impls, fb_impls
            torch.cuda.empty_cache()
    with open(os.path.join(args.out, "attn_bwd.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    bad = [r for r in rows if r.get("status") == "FAIL"]
    print("attn_bwd: %d checks, %d failed" % (sum(1 for r in rows if r["kind"] == "check"), len(bad)))
    for r in rows:
        if r["kind"] == "time":
            print("%-7s D%d causal=%d B16 H16 N%d: tkc %.1f TFLOP/s%s" % (
                r["what"], r["D"], r["causal"], r["N"], r["tkc_tflops"], "".join(
                    ", %s %.1f (%.2fx)" % (n, r[n + "_tflops"], r["tkc_tflops"] / r[n + "_tflops"])
                    for n in ("fa4", "cudnn", "flash") if n + "_tflops" in r)))
        elif r["kind"] == "fa4_vs_tkc":
            print("fa4 vs tkc D%d causal=%d N%d: dQ %.1e dK %.1e dV %.1e (FA4's first call %.1f s)" % (
                r["D"], r["causal"], r["N"], r["err_dQ"], r["err_dK"], r["err_dV"], r["first_call_s"]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
