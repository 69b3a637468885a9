#!/usr/bin/env python3
"""ab_la.py - same-run A/B of linear attention libraries (each DIR/linear_attn_d128[_decay].so exporting
tkc_linear_attn with kernels.tk/linear_attn.tk's launcher), on the GPU machine:
    python3 bench/experiments/linear_attn/ab_la.py --lib .carry/la --variants shipped order 2wg 2wg_mem [--rounds 9]
Checks every variant against an fp32 reference (bench/linear_attn.py's, B1 H2 at T = 1024 and the ragged 333), then
times B16 H16 D128 at T = 1024 and 4096, plain and decayed, each variant a CUDA graph of 10 calls, rounds
alternating the order (bench/tk_baselines.py's time_alternated); TFLOP/s by bench/linear_attn.py's count."""
import argparse
import ctypes
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(os.path.dirname(HERE))


def module(name):
    spec = importlib.util.spec_from_file_location("ab_la_" + name, os.path.join(BENCH, name + ".py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--variants", nargs="+", required=True)
    ap.add_argument("--rounds", type=int, default=9)
    a = ap.parse_args()
    import torch
    la, tkb = module("linear_attn"), module("tk_baselines")
    keep = []
    bad = 0

    def fn_of(v, decay):
        f = ctypes.CDLL(os.path.join(a.lib, v, "linear_attn_d128%s.so" % ("_decay" if decay else ""))).tkc_linear_attn
        f.restype = ctypes.c_int
        return f

    def call(f, q, k, v, sl, o, scale):
        args = []
        for t in (q, k, v, sl, o):
            s = (ctypes.c_int64 * t.dim())(*t.stride())
            keep.append(s)
            args += [ctypes.c_void_p(t.data_ptr()), s]
        B, H, T, _ = q.shape
        rc = f(*args, ctypes.c_int64(B), ctypes.c_int64(H), ctypes.c_int64(T), ctypes.c_float(scale),
               ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        if rc:
            raise RuntimeError("tkc_linear_attn returned %d" % rc)

    for decay in (0, 1):
        fns = {v: fn_of(v, decay) for v in a.variants}
        for T in (1024, 333):
            torch.manual_seed(T)
            q, k, v = (torch.randn(1, 2, T, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
            sl = torch.tensor(la.alibi_slopes(2), device="cuda", dtype=torch.float32)
            want = la.reference(q, k, v, sl, 128 ** -0.5, decay)
            for name, f in fns.items():
                o = torch.full((1, 2, T, 128), float("nan"), device="cuda", dtype=torch.bfloat16)
                call(f, q, k, v, sl, o, 128 ** -0.5)
                torch.cuda.synchronize()
                err = ((o.float() - want).norm() / want.norm()).item()
                ok = err < 1e-2 and bool(torch.isfinite(o).all().item())
                bad += not ok
                print("check decay=%d T=%d %-10s rel_err %.2e %s" % (decay, T, name, err, "ok" if ok else "FAIL"), flush=True)
        for T in (1024, 4096):
            B, H = 16, 16
            q, k, v = (torch.randn(B, H, T, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
            sl = torch.tensor(la.alibi_slopes(H), device="cuda", dtype=torch.float32)
            o = torch.empty(B, H, T, 128, device="cuda", dtype=torch.bfloat16)
            impls = {n: (lambda f=f: call(f, q, k, v, sl, o, 128 ** -0.5)) for n, f in fns.items()}
            ms = tkb.time_alternated(torch, impls, a.rounds)
            fl = la.flops(B, H, T, 128)
            base = ms[a.variants[0]]
            print("time decay=%d T=%d " % (decay, T) + "  ".join(
                "%s %.4f ms %.1f TF/s (%.3fx)" % (n, ms[n], fl / ms[n] / 1e9, base / ms[n]) for n in a.variants), flush=True)
    # the device copy's bandwidth (bytes read + written), the roof of a kernel that moves q, k, v and o once
    x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    ms = tkb.time_alternated(torch, {"copy": lambda: y.copy_(x)}, a.rounds)["copy"]
    roof = 2 * x.numel() / ms / 1e9                         # TB/s
    per_pos = 4 * 128 * 2                                   # q, k, v read and o written, bf16, D = 128
    print("copy: %.4f ms for 2 x 1 GiB: %.2f TB/s; a D = 128 kernel at that rate: %.1f TFLOP/s by the chunked count"
          % (ms, roof, la.flops(1, 1, 1, 128) / per_pos * roof), flush=True)
    print("ab_la: %d failed checks" % bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
