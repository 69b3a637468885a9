#!/usr/bin/env python3
"""GPU determinism suite (issue 18): every kernel variant of kernels.tk/ launched several times on
the same inputs, its outputs compared byte for byte.

  determinism.py build --tkc PATH --out LIB [--only V,...]     tkc + report + nvcc, one library per build
  determinism.py run   --lib LIB --out DIR [--only V,...] [--reps N] [--quick] [--csv FILE]
                       [--timeout S] [--fake[=MODE]]            every (variant, shape), a row each, a table last
  determinism.py launch --lib LIB --variant V --dir D [--reps N] [--quick] [--fake[=MODE]]
                                                               one variant's shapes, in a process of its own
  determinism.py selftest --lib LIB [--only V,...]             launch --fake, and the failures it must see
  (bench/run_gpu.sh determinism drives build and run)

It reuses bench/sanitize.py's machinery: the build (sanitize.build_one: tkc, tkc --emit=report,
nvcc with bench/sanitize_shim.cu linked in), the tensors of a launch (sanitize.plan_tensors, from
the report's launcher parameters), the device memory (sanitize.Device: cudaMalloc and cudaMemcpy
through the shim; sanitize.HostMemory under --fake) and the C launchers called through ctypes. No
PyTorch: inputs are made on the host (values exact in their dtype, from a seeded generator) and
copied once per shape.

Per (variant, shape): the variant's kernels (attn_bwd: attn_fwd, attn_bwd_prep, attn_bwd, attn_bwd_dq in turn)
run REPS times (default 5), each time into outputs freshly filled with NaN, then once more into the
outputs as the last run left them (what a kernel accumulating with += into a 'zeroed' output must
clear itself). Every run's outputs are compared with the first run's:
  - outputs written with atomics (read from tkc --emit=report: a store whose path is 'red' or
    'tma.add', a += store, a 'zeroed' output; attn_bwd's dK and dV, which the query
    heads of a group add into) are "atomic: not bit-exact by design": fp32 additions in a
    different order round differently. They must stay within a tolerance of the first run
    (elementwise |a - b| / (|a| + rms(a)) <= 1e-3 and normwise ||a - b|| / ||a|| <= 1e-5); the row
    says how many runs differed in their bits.
  - every other output must be bit-identical in every run, else the row FAILs (with the number of
    elements that differ and the first).
  - NaN left in an output of the first run (an element no kernel wrote) FAILs the row too.
A row's status: 'exact' (every output bit-identical), 'atomic' (its atomic outputs within the
tolerance, the others bit-identical), 'FAIL'. 'run' exits 1 if any row FAILs.
"""
import argparse
import importlib.util
import json
import math
import os
import random
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
# bench/ off sys.path: no script here may shadow a standard-library module (ctest bench.names checks it)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]


def _load_sanitize():
    mod = sys.modules.get("tkc_bench_sanitize")
    if mod is None:
        spec = importlib.util.spec_from_file_location("tkc_bench_sanitize", os.path.join(HERE, "sanitize.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        sys.modules["tkc_bench_sanitize"] = mod
    return mod


S = _load_sanitize()
try:
    import numpy as np
except ImportError:  # optional: the comparisons have a (slower) pure-Python path
    np = None

ATOMIC_PATHS = ("red", "tma.add")  # tkc --emit=report's store paths that add with atomics
ATOL_ELEM = 1e-3   # atomic outputs: max |a - b| / (|a| + rms(a)) between runs
ATOL_NORM = 1e-5   # atomic outputs: ||a - b|| / ||a|| between runs

# ---------------------------------------------------------------------------------------------
# the suite: builds (one library each: a .tk and its -D overrides) and variants (a build, the
# kernels of it that run, in order, scalars, shapes). Small ragged and strided shapes are the
# sanitizer suite's; each variant has one shape large enough to fill the GPU ("large": --quick
# leaves them out).

BUILDS = {
    "gemm": dict(tk="gemm.tk"),
    "linear": dict(tk="linear.tk"),
    "linear_gelu": dict(tk="linear.tk", defines={"ACT": 2}),
    "attn_fwd": dict(tk="attn_fwd.tk"),
    "attn_fwd_d64_causal": dict(tk="attn_fwd.tk", defines={"D": 64, "CAUSAL": 1}),
    "attn_bwd": dict(tk="attn_bwd.tk"),
    "attn_bwd_d128_causal": dict(tk="attn_bwd.tk", defines={"D": 128, "CAUSAL": 1}),
    "layernorm": dict(tk="layernorm.tk"),
    "rmsnorm": dict(tk="rmsnorm.tk"),
    "softmax": dict(tk="softmax.tk"),
    "rotary": dict(tk="rotary.tk"),
    "linear_attn": dict(tk="linear_attn.tk"),
    "linear_attn_d64_decay": dict(tk="linear_attn.tk", defines={"D": 64, "DECAY": 1}),
    "based": dict(tk="based.tk"),
    "hedgehog": dict(tk="hedgehog.tk"),
    "mamba2": dict(tk="mamba2.tk"),
    "mamba2_n128": dict(tk="mamba2.tk", defines={"NS": 128}),
    "fftconv": dict(tk="fftconv.tk"),
}


def _small(name):
    return [dict(c) for c in S.VARIANTS[name]["cases"]]


GEMM_SMALL = _small("gemm")
GEMM_LARGE = dict(M=4096, K=4096, N=4096, large=True)
ATTN_LARGE = dict(B=2, H=16, HKV=16, N=4096, large=True)
ROWS_LARGE = dict(M=65536, large=True)
# linear attention: one block per (b, h), so the large shape has 256 of them
LA_CASES = [dict(B=1, H=2, T=333), dict(B=1, H=3, T=200, strided=True), dict(B=8, H=32, T=1024, large=True)]
SCALE = {"scale": S.attn_scale}
MAMBA_LARGE = dict(B=8, H=32, T=1024, large=True)  # one block per (b, h): 256 blocks


def slopes(n, rng):
    """linear_attn.tk's per-head decays: small and positive (a negative one grows without bound)."""
    return b"".join(struct.pack("<f", (1 + rng.randrange(16)) / 256.0) for _ in range(n))


VARIANTS = {
    "gemm": dict(build="gemm", kernels=["gemm"], cases=GEMM_SMALL + [GEMM_LARGE]),
    "linear": dict(build="linear", kernels=["linear"], cases=GEMM_SMALL + [GEMM_LARGE]),
    "linear_bias": dict(build="linear", kernels=["linear_bias"], cases=GEMM_SMALL + [GEMM_LARGE]),
    "linear_bias_f32": dict(build="linear", kernels=["linear_bias_f32"], cases=GEMM_SMALL + [GEMM_LARGE]),
    "linear_bias_gelu": dict(build="linear_gelu", kernels=["linear_bias"], cases=GEMM_SMALL + [GEMM_LARGE]),
    "linear_bias_f32_gelu": dict(build="linear_gelu", kernels=["linear_bias_f32"], cases=GEMM_SMALL + [GEMM_LARGE]),
    "attn_fwd": dict(build="attn_fwd", kernels=["attn_fwd"], scalars=SCALE, cases=_small("attn_fwd") + [ATTN_LARGE]),
    "attn_fwd_d64_causal": dict(build="attn_fwd_d64_causal", kernels=["attn_fwd"], scalars=SCALE,
                                cases=_small("attn_fwd_d64_causal") + [ATTN_LARGE]),
    "attn_bwd": dict(build="attn_bwd", scalars=SCALE, cases=_small("attn_bwd") + [ATTN_LARGE]),
    "attn_bwd_d128_causal": dict(build="attn_bwd_d128_causal", scalars=SCALE,
                                 cases=_small("attn_bwd_d128_causal") + [ATTN_LARGE]),
    "layernorm": dict(build="layernorm", scalars={"p": 0.1, "seed": 1234}, cases=_small("layernorm") + [ROWS_LARGE]),
    "rmsnorm": dict(build="rmsnorm", cases=_small("rmsnorm") + [ROWS_LARGE]),
    "softmax": dict(build="softmax", cases=_small("softmax") + [ROWS_LARGE]),
    "rotary": dict(build="rotary", kernels=["rotary"], cases=_small("rotary") + [dict(B=4, H=16, N=4096, large=True)]),
    "linear_attn": dict(build="linear_attn", scalars=SCALE, cases=LA_CASES),
    "linear_attn_d64_decay": dict(build="linear_attn_d64_decay", scalars=SCALE, inputs={"Slope": slopes},
                                  cases=LA_CASES),
    "hedgehog": dict(build="hedgehog", inputs=dict(S.VARIANTS["hedgehog"]["inputs"]),
                     cases=_small("hedgehog") + [dict(B=8, H=32, T=1024, large=True)]),
    "based": dict(build="based", cases=_small("based") + [dict(B=8, H=32, T=1024, large=True)]),
    "mamba2": dict(build="mamba2", inputs={"Aa": S.VARIANTS["mamba2"]["inputs"]["Aa"]}, cases=_small("mamba2") + [MAMBA_LARGE]),
    "mamba2_n128": dict(build="mamba2_n128", inputs={"Aa": S.VARIANTS["mamba2"]["inputs"]["Aa"]},
                        cases=_small("mamba2_n128") + [MAMBA_LARGE]),
    "fftconv": dict(build="fftconv", scalars={"n": 1024}, cases=_small("fftconv") + [dict(B=16, DG=256, large=True)]),
}


def case_dims(c):
    return {k: v for k, v in c.items() if k not in ("strided", "large")}


def case_label(c):
    return " ".join(f"{k}={v}" for k, v in case_dims(c).items()) + (" strided" if c.get("strided") else "")


def cases_of(name, quick):
    return [c for c in VARIANTS[name]["cases"] if not (quick and c.get("large"))]


def selected(only):
    names = list(VARIANTS)
    if only:
        want = [w for w in only.split(",") if w]
        bad = [w for w in want if w not in VARIANTS]
        if bad:
            sys.exit(f"determinism.py: unknown variant(s) {', '.join(bad)}; known: {', '.join(names)}")
        names = [n for n in names if n in want]
    return names


# ---------------------------------------------------------------------------------------------
# build: sanitize.py's, for the builds the selected variants need

def build(args):
    os.makedirs(args.out, exist_ok=True)
    builds = sorted({VARIANTS[v]["build"] for v in selected(args.only)}, key=list(BUILDS).index)
    with ThreadPoolExecutor(max_workers=args.jobs or os.cpu_count() or 4) as ex:
        results = list(ex.map(lambda b: S.build_one(args.tkc, args.out, b, args.timeout, spec=BUILDS[b]), builds))
    for r in results:
        print(f"build {r['name']:20s} {'ok    ' if r['ok'] else 'FAILED'} {r['msg'][:200]} ({r['seconds']}s)", flush=True)
    print(f"determinism build: {sum(r['ok'] for r in results)} of {len(results)} libraries built", flush=True)
    return 0 if all(r["ok"] for r in results) else 1


# ---------------------------------------------------------------------------------------------
# values and comparisons

def _tables(dtype):
    """Per byte b of a random byte string: the bytes of the value (b - 128) / 64 (bf16, fp16) or
    (b - 128) / 128 (fp32), exact in its dtype; one translate table per byte of the element."""
    vals = {"bf16": lambda b: struct.pack("<f", (b - 128) / 64.0)[2:], "fp16": lambda b: struct.pack("<e", (b - 128) / 64.0),
            "fp32": lambda b: struct.pack("<f", (b - 128) / 128.0), "i32": lambda b: struct.pack("<i", b - 128)}[dtype]
    elems = [vals(b) for b in range(256)]
    return [bytes(v[j] for v in elems) for j in range(len(elems[0]))]


TABLES = {d: _tables(d) for d in S.ELEM}


def values(dtype, n, rng):
    """n random elements of dtype as little-endian bytes (fast enough for 10^8 elements)."""
    r = rng.randbytes(n)
    tabs = TABLES[dtype]
    out = bytearray(n * len(tabs))
    for j, tab in enumerate(tabs):
        out[j::len(tabs)] = r.translate(tab)
    return bytes(out)


def floats(data, dtype):
    """The elements as float64: a numpy array, or a list without numpy."""
    if np is not None:
        if dtype == "bf16":
            return (np.frombuffer(data, np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        return np.frombuffer(data, {"fp16": np.float16, "fp32": np.float32, "i32": np.int32}[dtype]).astype(np.float64)
    n = len(data) // S.ELEM[dtype]
    if dtype == "bf16":
        wide = bytearray(2 * len(data))
        wide[2::4], wide[3::4] = data[0::2], data[1::2]
        return list(struct.unpack(f"<{n}f", wide))
    return list(struct.unpack(f"<{n}{ {'fp16': 'e', 'fp32': 'f', 'i32': 'i'}[dtype]}", data))


def count_nan(data, dtype):
    """NaN elements, from the bits (exponent all ones, mantissa not zero)."""
    if dtype == "i32":
        return 0
    if np is not None:
        if dtype == "fp32":
            return int(((np.frombuffer(data, np.uint32) & 0x7FFFFFFF) > 0x7F800000).sum())
        inf = 0x7F80 if dtype == "bf16" else 0x7C00
        return int(((np.frombuffer(data, np.uint16) & 0x7FFF) > inf).sum())
    return sum(1 for v in floats(data, dtype) if v != v)


def bits_differ(a, b, elem):
    """(elements whose bytes differ, index of the first) of two equal-length byte strings."""
    if np is not None:
        dt = {2: np.uint16, 4: np.uint32}[elem]
        idx = np.flatnonzero(np.frombuffer(a, dt) != np.frombuffer(b, dt))
        return int(idx.size), (int(idx[0]) if idx.size else None)
    n, first = 0, None
    for i in range(0, len(a), elem):
        if a[i:i + elem] != b[i:i + elem]:
            n += 1
            first = i // elem if first is None else first
    return n, first


def value_diff(a, b, dtype):
    """(max |a - b| / (|a| + rms(a)), ||a - b|| / ||a||) of two runs' outputs; elements equal in
    both (or NaN in both) differ by 0, NaN in one only by inf."""
    x, y = floats(a, dtype), floats(b, dtype)
    if np is not None:
        with np.errstate(invalid="ignore", over="ignore"):
            x0 = np.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0)
            rms = float(np.sqrt(np.mean(x0 * x0))) if x.size else 1.0
            d = np.where((x == y) | (np.isnan(x) & np.isnan(y)), 0.0, np.abs(x - y))
            d = np.nan_to_num(d, nan=np.inf)
            elem = float(np.max(d / (np.abs(x0) + max(rms, 1e-30)))) if x.size else 0.0
            if math.isinf(elem):
                return math.inf, math.inf
            return elem, float(np.sqrt(np.sum(d * d)) / max(float(np.sqrt(np.sum(x0 * x0))), 1e-30))
    x0 = [v if math.isfinite(v) else 0.0 for v in x]
    rms = math.sqrt(sum(v * v for v in x0) / len(x0)) if x0 else 1.0
    elem, ss = 0.0, 0.0
    for u, v, u0 in zip(x, y, x0):
        if u == v or (u != u and v != v):
            continue
        d = abs(u - v) if math.isfinite(u - v) else math.inf
        elem = max(elem, d / (abs(u0) + max(rms, 1e-30)))
        ss += d * d
    if math.isinf(elem):
        return math.inf, math.inf
    return elem, math.sqrt(ss) / max(math.sqrt(sum(v * v for v in x0)), 1e-30)


def atomic_outputs(kernels):
    """{tensor: [why, ...]} for the outputs written with atomics, from --emit=report: a store whose
    path adds atomically (red: red.global.add from registers; tma.add: TMA reduce-adds), a +=
    store, or an output the launcher zeroes for the kernel to add into."""
    out = {}
    for k in kernels:
        for p in k["launcher"]["params"]:
            if p["kind"] == "tensor" and p.get("zeroed"):
                out.setdefault(p["name"], []).append("zeroed")
        for st in k.get("stores", []):
            if st["path"] in ATOMIC_PATHS or "+=" in st["statement"]:
                name = st["statement"].split("[", 1)[0].strip()
                why = st["path"] if st["path"] in ATOMIC_PATHS else "+="
                if why not in out.get(name, []):
                    out.setdefault(name, []).append(why)
    return out


# ---------------------------------------------------------------------------------------------
# launch: one variant's shapes, each run REPS + 1 times

def fake_kernel(mode, run, reuse, ci, outs, tensors, atomic, dev, ptrs):
    """--fake (no GPU): writes what a deterministic kernel would (the same values every run), and
    for MODE breaks one thing the comparison must catch: ok (atomic outputs' lowest bit flipped in
    odd runs: within the tolerance), flip (one bit of a non-atomic output in the third run), nan (one
    element never written), drift (an atomic output off by far more than the tolerance in the third run),
    stale (the run into the previous result adds to it: an output not zeroed)."""
    exact = [n for n in outs if n not in atomic]
    for n in outs:
        t = tensors[n]
        e, lay, dt = S.ELEM[t["dtype"]], t["layout"], t["dtype"]
        data = bytearray(values(dt, math.prod(t["shape"]), random.Random(7 + 131 * ci + sum(map(ord, n)))))

        def set0(v):
            data[0:e] = struct.pack("<f", v)[4 - e:] if dt == "bf16" else struct.pack("<e" if dt == "fp16" else "<f", v)
        v0 = floats(bytes(data[0:e]), dt)[0]
        if n in atomic:
            if mode == "ok" and run % 2 == 1:
                data[0] ^= 1
            if mode == "drift" and run == 2:
                set0(v0 + 1000.0)
            if mode == "stale" and reuse:
                set0(2 * v0 + 1.0)
        elif exact and n == exact[0] and mode == "flip" and run == 2:
            data[0] ^= 1
        if mode == "nan" and n == outs[0]:
            data[e:2 * e] = S.NAN_BITS[dt]
        buf = bytearray(dev.d2h(ptrs[n], lay.elems * e))
        S.scatter(buf, lay, e, data)
        dev.h2d(ptrs[n], buf)


def run_case(args, dev, fns, sub, spec, ci, case, scalars, atomic):
    dims, strided = case_dims(case), bool(case.get("strided"))
    row = dict(variant=args.variant, case=case_label(case), large=bool(case.get("large")), reps=args.reps,
               atomic={n: atomic[n] for n in atomic}, outputs={}, notes=[], status="FAIL")
    t0 = time.time()
    rng = random.Random(2000 + 17 * ci)
    tensors = S.plan_tensors(sub, dims, strided)
    ptrs, keep = {}, []
    try:
        for name, t in tensors.items():
            e, lay = S.ELEM[t["dtype"]], t["layout"]
            if t["role"] == "in" or t["inout"]:
                buf = bytearray(S.GUARD_BITS[t["dtype"]] * lay.elems)
                make = spec.get("inputs", {}).get(name, lambda n, r: values(t["dtype"], n, r))
                S.scatter(buf, lay, e, make(math.prod(t["shape"]), rng))
            else:
                buf = bytearray(S.NAN_BITS[t["dtype"]] * lay.elems)
            t["init"] = bytes(buf)
            ptrs[name] = dev.alloc(lay.elems * e)
            dev.h2d(ptrs[name], buf)
        outs = [n for n, t in tensors.items() if t["role"] == "out" or t["inout"]]
        argvs = []
        for L, fn in fns:
            argv = []
            for p in L["params"]:
                if p["kind"] == "tensor":
                    lay = tensors[p["name"]]["layout"]
                    st = None if lay.strides is None else (S.ctypes.c_int64 * len(lay.strides))(*lay.strides)
                    keep.append(st)
                    argv += [ptrs[p["name"]], st]
                elif p["kind"] == "dim":
                    argv.append(dims[p["name"]])
                elif p["kind"] == "scalar":
                    argv.append(scalars[p["name"]])
                elif p["kind"] == "stream":
                    argv.append(None)  # the default stream: the shim's copies order with it
            argvs.append(argv)
        first = {}
        res = {n: dict(dtype=tensors[n]["dtype"], atomic=n in atomic, runs_differ=0, elems_differ=0, first_diff=None,
                       max_elem=0.0, max_norm=0.0, nan=0) for n in outs}
        row["outputs"] = res
        for run in range(args.reps + 1):
            reuse = run == args.reps  # the last run: into the outputs as the previous run left them
            for n in outs:
                if not reuse or tensors[n]["inout"]:
                    dev.h2d(ptrs[n], tensors[n]["init"])
            rcs = []
            for (L, fn), argv in zip(fns, argvs):
                rc = fn(*argv)
                rcs.append(rc)
                # --fake: host pointers pass every argument check, then the tensor map or the launch fails
                if rc != 0 and not (args.fake and rc in (6, 7)):
                    break
            code, msg = dev.sync()
            row.setdefault("launcher_status", rcs)  # the first run's (under --fake: 6 or 7, no GPU)
            if len(rcs) < len(fns) or code or any(rc and not args.fake for rc in rcs):
                row["notes"].append(f"run {run + 1}: not launched: launcher status {rcs}, sync {code} {msg}".strip())
                return row
            if args.fake:
                fake_kernel(args.fake, run, reuse, ci, outs, tensors, atomic, dev, ptrs)
            for n in outs:
                t = tensors[n]
                e, lay = S.ELEM[t["dtype"]], t["layout"]
                data = S.gather(dev.d2h(ptrs[n], lay.elems * e), lay, e)
                r = res[n]
                if run == 0:
                    first[n] = data
                    r["nan"] = count_nan(data, t["dtype"])
                    continue
                if data == first[n]:
                    continue
                r["runs_differ"] += 1
                cnt, idx = bits_differ(first[n], data, e)
                if cnt > r["elems_differ"]:
                    r["elems_differ"], r["first_diff"] = cnt, dict(run=run + 1, index=idx, reuse=reuse)
                if n in atomic:
                    el, nm = value_diff(first[n], data, t["dtype"])
                    r["max_elem"], r["max_norm"] = max(r["max_elem"], el), max(r["max_norm"], nm)
        row["status"], row["why"] = verdict(res, args.reps)
    except Exception as ex:  # reported in the row; the process goes on to the next shape
        row["notes"].append(f"exception: {type(ex).__name__}: {ex}"[:300])
    finally:
        for p in ptrs.values():
            dev.free(p)
        row["seconds"] = round(time.time() - t0, 1)
    return row


def verdict(res, compared):
    """(status, why) of a shape from its outputs' comparisons with the first run (`compared` runs)."""
    bad, atomic_notes, exact_names = [], [], []
    for n, r in res.items():
        if r["nan"]:
            bad.append(f"{n}: {r['nan']} NaN in run 1 (unwritten?)")
            continue
        if r["atomic"]:
            tol = r["max_elem"] > ATOL_ELEM or r["max_norm"] > ATOL_NORM
            where = "" if not r["first_diff"] else (" (the run into the previous result)" if r["first_diff"]["reuse"] else "")
            s = f"{n} max diff {r['max_elem']:.1e} norm {r['max_norm']:.1e}, bits differ in {r['runs_differ']} of {compared} runs"
            if tol:
                bad.append(f"{n} (atomic) beyond tolerance: {s}{where}")
            else:
                atomic_notes.append(s)
        elif r["runs_differ"]:
            f = r["first_diff"]
            bad.append(f"{n}: not bit-identical in {r['runs_differ']} of {compared} runs ({r['elems_differ']} elements, first at "
                       f"element {f['index']} in run {f['run']}{', into the previous result' if f['reuse'] else ''})")
        else:
            exact_names.append(n)
    ident = f"{', '.join(exact_names)} bit-identical" if exact_names else ""
    if bad:
        return "FAIL", "; ".join(bad + ([ident] if ident else []))
    if atomic_notes:
        return "atomic", "; ".join(["atomic: not bit-exact by design: " + "; ".join(atomic_notes)] + ([ident] if ident else []))
    return "exact", ident


def launch(args):
    features = S._bench("features")
    spec = VARIANTS[args.variant]
    os.makedirs(args.dir, exist_ok=True)
    result = dict(variant=args.variant, device="", error="", rows=[])
    out_json = os.path.join(args.dir, "result.json")

    def save():
        with open(out_json, "w") as f:
            json.dump(result, f, indent=1)
    try:
        report, lib = S.load_variant(args.lib, spec["build"])
        kernels = [k for k in report["kernels"] if not spec.get("kernels") or k["name"] in spec["kernels"]]
        missing = [k for k in spec.get("kernels", []) if k not in {x["name"] for x in kernels}]
        if missing:
            raise ValueError(f"{spec['build']} has no kernel {', '.join(missing)}")
        dev = S.HostMemory() if args.fake else S.Device(lib)
        result["device"] = dev.name()
    except (OSError, ValueError, RuntimeError) as ex:  # no library, no GPU, no driver
        result["error"] = f"{type(ex).__name__}: {ex}"[:300]
        print(f"# {args.variant}: {result['error']}", flush=True)
        save()
        return 3
    print(f"# {args.variant} on {result['device']}: kernels {', '.join(k['name'] for k in kernels)}", flush=True)
    fns = []
    for k in kernels:
        L = k["launcher"]
        fn = getattr(lib, L["function"])
        fn.restype = S.ctypes.c_int
        fn.argtypes = [t for p in L["params"] for t in features.ctype_of(p)]
        fns.append((L, fn))
    sub = dict(report, kernels=kernels)
    scalars = S.scalar_values(spec, report)
    atomic = atomic_outputs(kernels)
    for ci, case in enumerate(cases_of(args.variant, args.quick)):
        row = run_case(args, dev, fns, sub, spec, ci, case, scalars, atomic)
        result["rows"].append(row)
        save()  # what is done survives a crash in a later shape
        print(fmt_row(row), flush=True)
    return 0 if all(r["status"] != "FAIL" for r in result["rows"]) else 1


# ---------------------------------------------------------------------------------------------
# run: every variant in a process of its own (a fault cannot take the others with it)

HEADER = f"{'variant':21s} {'shape':30s} {'runs':>5s} {'time':>7s}  {'status':6s}  outputs"


def fmt_row(r):
    s = f"{r['variant']:21s} {r['case']:30s} {str(r['reps']) + '+1':>5s} {r.get('seconds', 0.0):6.1f}s  {r['status']:6s}"
    why = "; ".join(([r["why"]] if r.get("why") else []) + r["notes"])
    return s + ("  " + why[:400] if why else "")


def write_csv(path, r):
    import csv
    cols = S._bench("harness").CSV_COLUMNS
    kind = "atomic" if r["atomic"] else ("exact" if r["outputs"] else "-")
    worst = max([o["max_elem"] for o in r["outputs"].values() if o["atomic"]] or [0.0])
    note = [f"kind={kind}", f"seconds={r.get('seconds', 0.0)}"]
    if r["atomic"]:
        note.append("atomic outputs " + ", ".join(f"{n} ({'/'.join(w)})" for n, w in r["atomic"].items()))
    note += ([r["why"]] if r.get("why") else []) + r["notes"]
    out = dict(suite="determinism", case=r["case"], variant=r["variant"], reps=f"{r['reps']}+1",
               status="FAIL" if r["status"] == "FAIL" else "ok", rel_err=f"{worst:.3g}" if r["atomic"] else "",
               note="; ".join(note))
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, restval="")
        if f.tell() == 0:
            w.writeheader()
        w.writerow(out)


def failed_row(v, case, reps, why):
    return dict(variant=v, case=case_label(case), reps=reps, atomic={}, outputs={}, notes=[why], status="FAIL", seconds=0.0)


def run_variant(args, v):
    d = os.path.join(args.out, v)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    cases = cases_of(v, args.quick)
    st = os.path.join(args.lib, VARIANTS[v]["build"] + ".build.json")
    b = json.load(open(st)) if os.path.exists(st) else dict(ok=False, msg="not built (run determinism.py build)")
    if not b["ok"]:
        return [failed_row(v, c, args.reps, "build: " + b["msg"][:200]) for c in cases], ""
    cmd = [sys.executable, "-u", os.path.abspath(__file__), "launch", "--lib", args.lib, "--variant", v, "--dir", d,
           "--reps", str(args.reps)] + (["--quick"] if args.quick else []) + ([f"--fake={args.fake}"] if args.fake else [])
    with open(os.path.join(d, "launch.out"), "w") as out:
        out.write(" ".join(shlex.quote(c) for c in cmd) + "\n")
        out.flush()
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = p.wait(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            rc = None
    res_path = os.path.join(d, "result.json")
    res = json.load(open(res_path)) if os.path.exists(res_path) else dict(rows=[], error="", device="")
    rows = res["rows"]
    if len(rows) < len(cases):
        why = (f"timed out after {args.timeout}s" if rc is None else
               res.get("error") or f"the launch process exited with status {rc} before this shape")
        rows += [failed_row(v, c, args.reps, why + f" (see {os.path.join(d, 'launch.out')})") for c in cases[len(rows):]]
    return rows, res.get("device", "")


def run(args):
    names = selected(args.only)
    os.makedirs(args.out, exist_ok=True)
    print(f"# determinism: {args.reps} runs into NaN-filled outputs + 1 into the previous result, per shape;"
          f" atomic outputs within {ATOL_ELEM:g} elementwise, {ATOL_NORM:g} normwise; the rest bit-identical", flush=True)
    print(HEADER, flush=True)
    rows, device = [], ""
    for v in names:
        got, dev = run_variant(args, v)
        if dev and dev != device:
            device = dev
            print(f"# device: {dev}", flush=True)
        for r in got:
            print(fmt_row(r), flush=True)
            if args.csv:
                write_csv(args.csv, r)
        rows += got
    print("\n" + HEADER)
    for r in rows:
        print(fmt_row(r))
    n = {s: sum(r["status"] == s for r in rows) for s in ("exact", "atomic", "FAIL")}
    print(f"determinism: {n['exact']} bit-identical, {n['atomic']} atomic (within tolerance, not bit-exact by design),"
          f" {n['FAIL']} failed ({len(names)} variants, {len(rows)} shapes)", flush=True)
    return 1 if n["FAIL"] or not rows else 0


# ---------------------------------------------------------------------------------------------
# selftest (no GPU): launch --fake on every built variant, and the failures it must see

def selftest(args):
    names = selected(args.only)
    wrong = 0
    base = args.dir or os.path.join(args.lib, "selftest")
    for v in names:
        spec = VARIANTS[v]
        try:
            report, _ = S.load_variant(args.lib, spec["build"])
        except OSError as ex:
            print(f"selftest {v:21s} not built: {ex}", flush=True)
            wrong += 1
            continue
        kernels = [k for k in report["kernels"] if not spec.get("kernels") or k["name"] in spec["kernels"]]
        has_atomic = bool(atomic_outputs(kernels))
        modes = [("ok", "atomic" if has_atomic else "exact"), ("flip", "FAIL"), ("nan", "FAIL")]
        modes += [("drift", "FAIL"), ("stale", "FAIL")] if has_atomic else []
        for mode, want in modes:
            d = os.path.join(base, v, mode)
            shutil.rmtree(d, ignore_errors=True)
            la = argparse.Namespace(lib=args.lib, variant=v, dir=d, reps=args.reps, quick=not args.large, fake=mode)
            with open(os.devnull, "w") as devnull:
                old = sys.stdout
                sys.stdout = devnull
                try:
                    launch(la)
                finally:
                    sys.stdout = old
            rows = json.load(open(os.path.join(d, "result.json")))["rows"]
            got = [r["status"] for r in rows]
            good = bool(rows) and all(s == want for s in got)
            wrong += not good
            first = next((r for r in rows if r["status"] != want), rows[0] if rows else None)
            why = "; ".join(([first.get("why", "")] if first else []) + (first["notes"] if first else []))
            rcs = sorted({rc for r in rows for rc in r.get("launcher_status", [])})
            print(f"selftest {v:21s} {mode:6s} {len(rows)} shapes {','.join(sorted(set(got))) or '-'} (want {want})"
                  f" {'pass' if good else 'WRONG'}, launchers returned {rcs}  {why[:140]}", flush=True)
    print(f"determinism selftest: {wrong} wrong", flush=True)
    return 1 if wrong else 0


# ---------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--tkc", required=True)
    b.add_argument("--out", required=True)
    b.add_argument("--only", default="")
    b.add_argument("--jobs", type=int, default=0)
    b.add_argument("--timeout", type=int, default=600, help="seconds per tkc or nvcc command")
    fakes = ["ok", "flip", "nan", "drift", "stale"]
    r = sub.add_parser("run")
    r.add_argument("--lib", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--only", default="")
    r.add_argument("--reps", type=int, default=5, help="runs into NaN-filled outputs (then one into the last result)")
    r.add_argument("--quick", action="store_true", help="small shapes only")
    r.add_argument("--csv", default="")
    r.add_argument("--timeout", type=int, default=900, help="seconds per variant")
    r.add_argument("--fake", nargs="?", const="ok", default="", choices=fakes, help="host memory, no GPU")
    la = sub.add_parser("launch")
    la.add_argument("--lib", required=True)
    la.add_argument("--variant", required=True)
    la.add_argument("--dir", required=True)
    la.add_argument("--reps", type=int, default=5)
    la.add_argument("--quick", action="store_true")
    la.add_argument("--fake", nargs="?", const="ok", default="", choices=fakes)
    s = sub.add_parser("selftest")
    s.add_argument("--lib", required=True)
    s.add_argument("--dir", default="")
    s.add_argument("--only", default="")
    s.add_argument("--reps", type=int, default=3)
    s.add_argument("--large", action="store_true", help="the large shapes too (slow on host memory)")
    args = ap.parse_args()
    if getattr(args, "reps", 2) < 2:
        sys.exit("determinism.py: --reps must be at least 2")
    if getattr(args, "variant", None) and args.variant not in VARIANTS:
        sys.exit(f"determinism.py: unknown variant {args.variant}; known: {', '.join(VARIANTS)}")
    sys.exit({"build": build, "run": run, "launch": launch, "selftest": selftest}[args.cmd](args))


if __name__ == "__main__":
    main()
