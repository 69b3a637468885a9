#!/usr/bin/env python3
"""Times the variants gen.sh built (LIB/ln_VARIANT_DD.so, LIB/rot_VARIANT_DD.so), tkc alone, on
the GPU machine: each group's variants alternate round by round (a CUDA graph of 20 launches over
input sets larger than the L2, median of the rounds), and every variant's outputs must equal the
first variant's bit for bit (same inputs, same seed). Effective GB/s = bytes that must move / time.

    python3 bench/experiments/norms/abnorms.py --lib .carry/nv [--rounds 7]
"""
import argparse
import ctypes
import glob
import os
import statistics

import torch

P, LL = ctypes.c_void_p, ctypes.c_longlong


def st(t):
    return (LL * t.dim())(*t.stride())


def graph_time(launch, sets, rounds_out, reps=20):
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for i in range(sets):
            launch(i, s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        for r in range(reps):
            launch(r % sets, s)
    torch.cuda.synchronize()
    return lambda: (rounds_out.append(run(g) / reps))


def run(g):
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    g.replay()
    e1.record()
    torch.cuda.synchronize()
    return e0.elapsed_time(e1)


def layernorm_group(lib, d, p, rounds):
    M = 65536
    per = 4 * M * d * 2
    sets = max(2, int(3 * 60e6 // per) + 1)
    gen = torch.Generator(device="cuda").manual_seed(d)
    bufs = [dict(x=torch.randn(M, d, device="cuda", dtype=torch.bfloat16, generator=gen),
                 r=torch.randn(M, d, device="cuda", dtype=torch.bfloat16, generator=gen),
                 w=torch.randn(d, device="cuda", generator=gen), b=torch.randn(d, device="cuda", generator=gen))
            for _ in range(sets)]
    variants = sorted({os.path.basename(f).split("_")[1] for f in glob.glob(os.path.join(lib, "ln_*_D%d.so" % d))},
                      key=lambda v: (v != "old", v))
    libs = {v: ctypes.CDLL(os.path.join(lib, "ln_%s_D%d.so" % (v, d))) for v in variants}
    outs = {v: [(torch.empty(M, d, device="cuda", dtype=torch.bfloat16), torch.empty(M, d, device="cuda", dtype=torch.bfloat16))
                for _ in range(sets)] for v in variants}
    keep = []

    def launcher(v):
        def launch(i, s):
            b, (y, sm) = bufs[i], outs[v][i]
            a = []
            for t in (b["x"], b["r"], b["w"], b["b"], y, sm):
                k = st(t)
                keep.append(k)
                a += [P(t.data_ptr()), k]
            a += [LL(M), ctypes.c_float(p), ctypes.c_int(1234), P(s.cuda_stream)]
            rc = libs[v].tkc_layernorm(*a)
            assert rc == 0, rc
        return launch
    return variants, {v: launcher(v) for v in variants}, sets, lambda v: [t for o in outs[v] for t in o], per + d * 8


def rotary_args(x, cos, sin, o, stream, keep):
    """tkc_rotary's arguments for x, o: [B, N, H, D] views (the kernel takes their [B, H, N, D]
    transposes); keep holds the stride arrays while the launch may read them"""
    B, N, H, _ = x.shape
    a = []
    for t in (x.transpose(1, 2), cos, sin, o.transpose(1, 2)):
        k = st(t)
        keep.append(k)
        a += [P(t.data_ptr()), k]
    return a + [LL(B), LL(H), LL(N), P(stream)]


def rotary_group(lib, d, layout, rounds):
    B, N, H = 16, 4096, 16
    per = 2 * B * N * H * d * 2
    sets = max(2, int(3 * 60e6 // per) + 1)
    gen = torch.Generator(device="cuda").manual_seed(d)
    shape = (B, N, H, d) if layout == "bnhd" else (B, H, N, d)
    xs = [torch.randn(*shape, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(sets)]
    xs = [x if layout == "bnhd" else x.transpose(1, 2) for x in xs]   # [B, N, H, D] views
    cos = torch.randn(N, d // 2, device="cuda", generator=gen)
    sin = torch.randn(N, d // 2, device="cuda", generator=gen)
    variants = sorted({os.path.basename(f).split("_")[1] for f in glob.glob(os.path.join(lib, "rot_*_D%d.so" % d))},
                      key=lambda v: (v != "base", v))
    libs = {v: ctypes.CDLL(os.path.join(lib, "rot_%s_D%d.so" % (v, d))) for v in variants}
    outs = {v: [torch.empty_like(x) for x in xs] for v in variants}
    keep = []

    def launcher(v):
        def launch(i, s):
            rc = libs[v].tkc_rotary(*rotary_args(xs[i], cos, sin, outs[v][i], s.cuda_stream, keep))
            assert rc == 0, rc
        return launch
    return variants, {v: launcher(v) for v in variants}, sets, lambda v: outs[v], per + N * d * 4


def rms_group(lib, d, rounds, kind="rms"):
    """rmsnorm (kind rms: X, R, W -> Y, S) or softmax (kind sm: X -> Y) variants LIB/KIND_VARIANT_DD.so"""
    M = 65536
    ins, outs_n = (2, 2) if kind == "rms" else (1, 1)
    per = (ins + outs_n) * M * d * 2
    sets = max(2, int(3 * 60e6 // per) + 1)
    gen = torch.Generator(device="cuda").manual_seed(d)
    bufs = [dict(x=[torch.randn(M, d, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(ins)],
                 w=torch.randn(d, device="cuda", generator=gen)) for _ in range(sets)]
    variants = sorted({os.path.basename(f)[len(kind) + 1:].rsplit("_", 1)[0]
                       for f in glob.glob(os.path.join(lib, "%s_*_D%d.so" % (kind, d)))}, key=lambda v: (v != "old", v))
    libs = {v: ctypes.CDLL(os.path.join(lib, "%s_%s_D%d.so" % (kind, v, d))) for v in variants}
    outs = {v: [[torch.empty(M, d, device="cuda", dtype=torch.bfloat16) for _ in range(outs_n)] for _ in range(sets)]
            for v in variants}
    keep = []

    def launcher(v):
        def launch(i, s):
            b = bufs[i]
            ts = b["x"] + ([b["w"]] if kind == "rms" else []) + outs[v][i]
            a = []
            for t in ts:
                k = st(t)
                keep.append(k)
                a += [P(t.data_ptr()), k]
            a += [LL(M), P(s.cuda_stream)]
            rc = (libs[v].tkc_rmsnorm if kind == "rms" else libs[v].tkc_softmax)(*a)
            assert rc == 0, rc
        return launch
    return variants, {v: launcher(v) for v in variants}, sets, lambda v: [t for o in outs[v] for t in o], per + d * 4


def rel_diff(ref, got):
    """the largest |a - b| / max |a| over the output tensors"""
    worst = 0.0
    for a, b in zip(ref, got):
        a, b = a.float(), b.float()
        worst = max(worst, ((a - b).abs().max() / a.abs().max().clamp_min(1e-30)).item())
    return worst


def time_group(title, group, rounds):
    variants, launchers, sets, outputs, bytes_ = group
    if not variants:  # no library of this group was built
        return
    ts = {v: [] for v in variants}
    timers = {v: graph_time(launchers[v], sets, ts[v]) for v in variants}
    # the outputs compared: every variant launched once more on every set, after all the captures
    # (comparing the outputs of the launches before them flagged the first variant of some groups
    # as different, runs 170-177, where direct launches agree: cmpln.py, cmprot.py)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for v in variants:
            for i in range(sets):
                launchers[v](i, s)
    torch.cuda.synchronize()
    ref = outputs(variants[0])
    same = {v: all(torch.equal(a, b) for a, b in zip(ref, outputs(v))) for v in variants}
    diff = {v: 0.0 if same[v] else rel_diff(ref, outputs(v)) for v in variants}
    for _ in range(rounds):
        for v in variants:
            timers[v]()
    base = statistics.median(ts[variants[0]])
    row = []
    for v in variants:
        ms = statistics.median(ts[v])
        row.append("%s %.0f (%.3f)%s" % (v, bytes_ / ms / 1e6, base / ms, "" if same[v] else " DIFFERS %.1e" % diff[v]))
    print("%-28s %s" % (title, "  ".join(row)), flush=True)
    torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default=".carry/nv")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--only", default="ln,rot", help="comma list of ln, rms, sm, rot")
    a = ap.parse_args()
    print("GB/s (ratio to the first variant); %d rounds alternated" % a.rounds)
    if "ln" in a.only.split(","):
        for d in (1024, 2048, 4096, 8192):
            for p in (0.1, 0.0):
                time_group("layernorm D%d p=%g" % (d, p), layernorm_group(a.lib, d, p, a.rounds), a.rounds)
    for kind in ("rms", "sm"):
        if kind in a.only.split(","):
            for d in (1024, 2048, 4096, 8192):
                time_group("%s D%d" % ("rmsnorm" if kind == "rms" else "softmax", d), rms_group(a.lib, d, a.rounds, kind),
                           a.rounds)
    if "rot" in a.only.split(","):
        for d in (64, 128):
            for lay in ("bnhd", "bhnd"):
                time_group("rotary D%d %s" % (d, lay), rotary_group(a.lib, d, lay, a.rounds), a.rounds)


if __name__ == "__main__":
    main()
