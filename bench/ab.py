#!/usr/bin/env python3
"""Same-run A/B of two builds of the same kernel variants (runs on the GPU machine).

  ab.py --old DIR --new DIR [--rounds 3]

DIR holds lib<variant>.so files built by `harness.py build` from two tkc binaries. Each case is
timed old against new in one Timer.run (alternating launches, L2 flushed before each), in
several rounds; the row gives the median times and new's speed relative to old (old_ms / new_ms,
above 1: new is faster). The outputs of old and new are compared too (they must agree exactly
where the generated code only differs in comments and barrier ids; otherwise to bf16 rounding).
"""
import argparse
import ctypes
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

CASES = [
    ("gemm", "gemm", dict(M=4096, N=4096, K=4096)),
    ("gemm", "gemm", dict(M=8192, N=8192, K=8192)),
    ("attn", "attn_d128", dict(B=16, H=16, N=4096, D=128, causal=False)),
    ("attn", "attn_d128_causal", dict(B=16, H=16, N=4096, D=128, causal=True)),
    ("attn", "attn_d64", dict(B=16, H=16, N=4096, D=64, causal=False)),
    ("attn", "attn_d64_causal", dict(B=16, H=16, N=4096, D=64, causal=True)),
    ("attn", "attn_d128", dict(B=16, H=16, N=1024, D=128, causal=False)),
    ("attn", "attn_d128_short", dict(B=16, H=16, N=1024, D=128, causal=False)),
    ("attn", "attn_d64_causal_short", dict(B=16, H=16, N=1024, D=64, causal=True)),
    ("attn", "attn_d128_causal", dict(B=16, H=16, N=1024, D=128, causal=True)),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    import torch
    timer = harness.Timer(torch)
    stream = harness.cuda_stream(torch)
    print(f"{'case':28s} {'shape':22s} {'old ms':>9s} {'new ms':>9s} {'new/old speed':>14s}  outputs")
    for kind, variant, s in CASES:
        g = torch.Generator(device="cuda").manual_seed(7)
        calls, outs = {}, {}
        for tag, d in (("old", args.old), ("new", args.new)):
            if kind == "gemm":
                f = harness.load(d, variant, "tkc_gemm", harness.GEMM_ARGTYPES)
                if "A" not in outs:
                    outs["A"] = torch.randn(s["M"], s["K"], device="cuda", dtype=torch.bfloat16, generator=g)
                    outs["B"] = torch.randn(s["K"], s["N"], device="cuda", dtype=torch.bfloat16, generator=g)
                C = torch.full((s["M"], s["N"]), float("nan"), device="cuda", dtype=torch.bfloat16)
                argv = (outs["A"].data_ptr(), None, outs["B"].data_ptr(), None, C.data_ptr(), None, s["M"], s["K"], s["N"], stream)
                outs[tag] = (C,)
                flops = 2.0 * s["M"] * s["N"] * s["K"]
                shape = f"{s['M']}x{s['N']}x{s['K']}"
            else:
                f = harness.load(d, variant, "tkc_attn_fwd", harness.ATTN_ARGTYPES)
                if "q" not in outs:
                    outs["q"], outs["k"], outs["v"] = (torch.randn(s["B"], s["H"], s["N"], s["D"], device="cuda",
                                                                   dtype=torch.bfloat16, generator=g) for _ in range(3))
                o = torch.full_like(outs["q"], float("nan"))
                lse = torch.full((s["B"], s["H"], s["N"]), float("nan"), device="cuda", dtype=torch.float32)
                argv = (outs["q"].data_ptr(), None, outs["k"].data_ptr(), None, outs["v"].data_ptr(), None, o.data_ptr(), None,
                        lse.data_ptr(), None, s["B"], s["H"], s["N"], s["H"], ctypes.c_float(1 / math.sqrt(s["D"])), stream)
                outs[tag] = (o, lse)
                flops = 4.0 * s["B"] * s["H"] * s["N"] ** 2 * s["D"] / (2 if s["causal"] else 1)
                shape = f"B{s['B']} H{s['H']} N{s['N']} D{s['D']}"
            calls[tag] = (lambda f=f, argv=argv: f(*argv))
            rc = calls[tag]()
            torch.cuda.synchronize()
            if rc:
                print(f"{variant:28s} {shape:22s} {tag} launch error {rc}")
                calls = None
                break
        if not calls:
            continue
        same = all(torch.equal(a, b) for a, b in zip(outs["old"], outs["new"]))
        olds, news = [], []
        for r in range(args.rounds):
            order = {"old": calls["old"], "new": calls["new"]} if r % 2 == 0 else {"new": calls["new"], "old": calls["old"]}
            ms, _ = timer.run(order)
            olds.append(ms["old"])
            news.append(ms["new"])
        mo, mn = sorted(olds)[len(olds) // 2], sorted(news)[len(news) // 2]
        print(f"{variant:28s} {shape:22s} {mo:9.4f} {mn:9.4f} {mo / mn:14.4f}  {'identical' if same else 'DIFFER'}"
              f"  ({flops / mn / 1e9:.1f} TFLOP/s new)", flush=True)


if __name__ == "__main__":
    main()
