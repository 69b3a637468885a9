#!/usr/bin/env python3
"""tune_attn.py - the measurement behind kernels.tk/attn_fwd.dispatch, the table with which
`tkc attn_fwd.tk --dispatch kernels.tk/attn_fwd.dispatch` picks a variant of the attention forward
at every launch (issue 17: no user flag for short sequences).

    python3 bench/tune_attn.py build --tkc TKC --out LIB [--table FILE]   # nvcc here, no GPU
    python3 bench/tune_attn.py run --lib LIB [--rounds 5] [--write FILE]  # on the GPU
    python3 bench/tune_attn.py table --rows RUN/tune_attn.jsonl [--write FILE]   # the table from a run's rows

build compiles, for each head dimension and causality (D = 64, 128 x CAUSAL = 0, 1: the -D options a
user gives), every variant the table lists as a library of its own, and the dispatched program
(the table as it is, for the check below). run times each variant's tkc_attn_fwd at B*H = 256 (B16
H16) over N = 512 .. 8192 (CUDA events, 10 launches, median of alternated rounds, the variants
interleaved), then chooses the rules: per config, `when D == d && CAUSAL == c && N <= T: short`,
T the measured N that maximises the config's geometric-mean speed over the measured N (written
halfway, a multiple of 64, to the next measured N; no rule when the gain over the N it changes is
under 1%, the noise of a run), then `otherwise:
long`; it prints the table and, with --write, writes it (deterministically: the same measurements
give the same bytes; `table` makes it again from the rows). It also runs the dispatched library at each N and checks that it returns what the
chosen variant returns (bit for bit) and is within 2e-2 of fp32 attention.
"""
import argparse
import ctypes
import json
import math
import os
import re
import statistics
import subprocess
import sys
import concurrent.futures

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
NVCC = ["nvcc", "-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-Xcompiler", "-fPIC", "-shared"]
TABLE = os.path.join(ROOT, "kernels.tk", "attn_fwd.dispatch")
CONFIGS = [(128, 0), (128, 1), (64, 0), (64, 1)]
NS = [512, 1024, 1536, 2048, 3072, 4096, 8192]
MARGIN = 1.01   # a config's short rule must gain at least 1% (geomean over the N it changes)
P, LL = ctypes.c_void_p, ctypes.c_longlong


def variants_of(table):
    """{name: ["K=V", ...]} in the table's order"""
    out = {}
    for line in open(table):
        w = line.split("#")[0].split()
        if len(w) >= 2 and w[0] == "variant":
            out[w[1]] = w[2:]
    return out


def build(a):
    os.makedirs(a.out, exist_ok=True)
    vs = variants_of(a.table)
    jobs = []
    for D, C in CONFIGS:
        base = ["-D", "D=%d" % D, "-D", "CAUSAL=%d" % C]
        for name, defs in vs.items():
            jobs.append(("d%d_c%d_%s" % (D, C, name), base + sum((["-D", d] for d in defs), [])))
        jobs.append(("d%d_c%d_dispatch" % (D, C), base + ["--dispatch", a.table]))

    def one(job):
        tag, args = job
        cu = os.path.join(a.out, tag + ".cu")
        subprocess.run([a.tkc, os.path.join(ROOT, "kernels.tk", "attn_fwd.tk"), "-o", cu] + args, check=True)
        r = subprocess.run(NVCC + [cu, "-o", cu[:-3] + ".so"], capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(tag + ": " + r.stderr[-2000:])
        os.remove(cu)
        return tag

    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        for tag in ex.map(one, jobs):
            print("built", tag, flush=True)
    with open(os.path.join(a.out, "variants.json"), "w") as f:
        json.dump(dict(variants=vs, configs=CONFIGS, table=os.path.basename(a.table)), f, indent=1)
    return 0


GENERATED_RULE = re.compile(r"^when D == \d+ && CAUSAL == \d && N <= \d+: \w+$")


def hand_written(table):
    """(notes, rules) of the table that no measurement here writes: the comment lines between the
    measured ratios and the first variant, and every rule but the generated `N <= T` ones and
    `otherwise` (attn_fwd.dispatch's few-heads rules), which the new table keeps, first"""
    notes, rules, seen_variant, after_ratios = [], [], False, False
    if not table or not os.path.exists(table):
        return notes, rules
    for line in open(table):
        line = line.rstrip("\n")
        if line.startswith("#   D="):
            after_ratios = True
        elif line.startswith("#") and after_ratios and not seen_variant:
            notes.append(line)
        elif line.startswith("variant "):
            seen_variant = True
        elif line.startswith("when ") and not GENERATED_RULE.match(line):
            rules.append(line)
    return notes, rules


def table_text(variants, ratios, run="", keep=((), ())):
    """the table from the measurements {(D, CAUSAL, N): {variant: ms}}: per config, short for
    N <= T, T maximising that config's geometric-mean speed over the measured N (the smallest T
    among equals; T = 0: never short); T is written halfway (a multiple of 64) to the next measured N"""
    names = list(variants)
    long_, short = names[0], names[1]
    lines = ["# kernels.tk/attn_fwd.dispatch: the variants of the attention forward and the rule that picks one",
             "# at launch (tkc attn_fwd.tk -D D=.. -D CAUSAL=.. --dispatch kernels.tk/attn_fwd.dispatch). Written",
             "# by bench/tune_attn.py from its measurement on the H200 (%s), B16 H16;" % (run or "bench/RESULTS.md names the run"),
             "# time of %s / time of %s (above 1: %s is faster):" % (long_, short, short)]
    rules = []
    for D, C in CONFIGS:
        lines.append("#   D=%-3d CAUSAL=%d  " % (D, C) + "  ".join(
            "N%d %.3f" % (N, ratios[(D, C, N)][long_] / ratios[(D, C, N)][short]) for N in NS))

        def score(T):
            return sum(math.log(ratios[(D, C, N)][long_] / ratios[(D, C, N)][short if N <= T else long_]) for N in NS)
        best = max([0] + NS, key=lambda T: (round(score(T), 9), -T))
        changed = [N for N in NS if N <= best]
        if best and score(best) / len(changed) < math.log(MARGIN):
            best = 0  # within noise: keep the default
        if best:
            nxt = [N for N in NS if N > best]
            thr = best if not nxt else 64 * ((best + nxt[0]) // 2 // 64)
            rules.append("when D == %d && CAUSAL == %d && N <= %d: %s" % (D, C, thr, short))
    lines += list(keep[0])
    for n, defs in variants.items():
        lines.append("variant %s %s" % (n, " ".join(defs)))
    lines += list(keep[1]) + rules + ["otherwise: %s" % long_]
    return "\n".join(lines) + "\n"


def table(a):
    """the table from a run's rows (tune_attn.jsonl), without a GPU"""
    man = json.load(open(os.path.join(a.lib, "variants.json"))) if a.lib else dict(variants=variants_of(a.table))
    names = list(man["variants"])
    ratios = {}
    for line in open(a.rows):
        r = json.loads(line)
        if names[0] + "_ms" in r:
            ratios[(r["D"], r["CAUSAL"], r["N"])] = {n: r[n + "_ms"] for n in names if n + "_ms" in r}
    text = table_text(man["variants"], ratios, a.run, hand_written(a.table))
    if a.write:
        with open(a.write, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


def run(a):
    import torch
    import torch.nn.functional as F
    man = json.load(open(os.path.join(a.lib, "variants.json")))
    names = list(man["variants"])
    rows, ratios, checks = [], {}, []
    for D, C in CONFIGS:
        libs = {n: ctypes.CDLL(os.path.join(a.lib, "d%d_c%d_%s.so" % (D, C, n))) for n in names + ["dispatch"]}
        fns = {n: getattr(l, "tkc_attn_fwd") for n, l in libs.items()}
        for N in NS:
            B, H = 16, 16
            torch.manual_seed(N + D + C)
            q, k, v = (torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
            outs = {n: (torch.empty(B, H, N, D, device="cuda", dtype=torch.bfloat16),
                        torch.empty(B, H, N, device="cuda", dtype=torch.float32)) for n in fns}
            keep = []

            def strides(t):
                s = (LL * t.dim())(*t.stride())
                keep.append(s)
                return s

            def launcher(n):
                o, l = outs[n]
                args = [P(q.data_ptr()), strides(q), P(k.data_ptr()), strides(k), P(v.data_ptr()), strides(v),
                        P(o.data_ptr()), strides(o), P(l.data_ptr()), strides(l), LL(B), LL(H), LL(N), LL(H),
                        ctypes.c_float(D ** -0.5), P(torch.cuda.current_stream().cuda_stream)]
                fn = fns[n]

                def f():
                    rc = fn(*args)
                    if rc:
                        raise RuntimeError("%s returned %d" % (n, rc))
                return f
            impls = {n: launcher(n) for n in fns}
            times = {n: [] for n in impls}
            for r in range(a.rounds):
                order = list(impls) if r % 2 == 0 else list(impls)[::-1]
                for n in order:
                    f = impls[n]
                    f()
                    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    e0.record()
                    for _ in range(10):
                        f()
                    e1.record()
                    torch.cuda.synchronize()
                    times[n].append(e0.elapsed_time(e1) / 10)
            ms = {n: statistics.median(ts) for n, ts in times.items()}
            flops = 4 * B * H * N * N * D / (2 if C else 1)
            row = dict(D=D, CAUSAL=C, B=B, H=H, N=N, **{n + "_ms": ms[n] for n in ms},
                       **{n + "_tflops": flops / ms[n] / 1e9 for n in ms})
            rows.append(row)
            ratios[(D, C, N)] = {n: ms[n] for n in names}
            # the dispatched library against the variant the committed rule picks, and fp32 attention
            ref = F.scaled_dot_product_attention(q[:1, :2].float(), k[:1, :2].float(), v[:1, :2].float(),
                                                 is_causal=bool(C), scale=D ** -0.5)   # two heads suffice
            err = ((outs["dispatch"][0][:1, :2].float() - ref).norm() / ref.norm()).item()
            same = [n for n in names if torch.equal(outs[n][0], outs["dispatch"][0])]
            checks.append(dict(D=D, CAUSAL=C, N=N, rel_err=err, same_as=same, ok=err < 2e-2 and bool(same)))
            print(json.dumps(row), json.dumps(checks[-1]), flush=True)
    text = table_text(man["variants"], ratios, keep=hand_written(a.table))
    print(text, end="")
    bad = [c for c in checks if not c["ok"]]
    print("tune_attn: %d rows, %d dispatch checks, %d failed" % (len(rows), len(checks), len(bad)))
    if a.write:
        with open(a.write, "w") as f:
            f.write(text)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "tune_attn.jsonl"), "w") as f:
            for r in rows + checks:
                f.write(json.dumps(r) + "\n")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("build", "run", "table"))
    ap.add_argument("--rows", default="", help="table: a run's tune_attn.jsonl")
    ap.add_argument("--run", default="", help="table: the run's name, for the table's header")
    ap.add_argument("--tkc", default=os.path.join(ROOT, "build", "tkc"))
    ap.add_argument("--out", default="")
    ap.add_argument("--lib", default="")
    ap.add_argument("--table", default=TABLE)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--write", default="", help="write the chosen table here")
    a = ap.parse_args()
    return build(a) if a.mode == "build" else run(a) if a.mode == "run" else table(a)


if __name__ == "__main__":
    sys.exit(main())
