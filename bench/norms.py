#!/usr/bin/env python3
"""norms.py - GPU benchmark of issue 13's memory-bound kernels against their baselines, in one
process (runs on the GPU machine; the quack baselines come with ../shared/tools/peer-wheels.sh).

  python3 bench/norms.py [--kernels layernorm,rmsnorm,softmax,rotary,layernorm_plain]
                         [--widths 1024,2048,4096,8192] [--rows 65536,4096,1000]
                         [--impls tkc,quack,eager,compile,copy] [--rounds 5] [--budget-s S]
                         [--tkc MODULE_DIR] [--out FILE.jsonl] [--commit HASH] [--quick]

Kernels (bf16 tensors, fp32 arithmetic; each row says what was timed):
  layernorm        out = LN(dropout(x) + residual) * weight + bias, new_residual = dropout(x) +
                   residual; x, residual [M, D]; weight, bias fp32 [D]; eps 1e-5; p = 0.1.
                   Bytes: read x and residual, write out and new_residual, read weight and bias.
                   quack has no dropout: its row is residual + LayerNorm (`_rmsnorm_fwd` with
                   is_layernorm, residual and residual_out), the same bytes, p = 0.
  layernorm_plain  quack.rmsnorm.layernorm_fwd (x -> LN(x), no residual, no dropout), for the
                   numbers in ../shared/docs/anchors.md; bytes: read x, write out.
  rmsnorm          residual add + RMSNorm, pre-norm form: out = RMSNorm(x + residual) * weight,
                   new_residual = x + residual; weight fp32 [D]; eps 1e-6 (quack.rmsnorm.rmsnorm
                   with residual and prenorm=True).
  rotary           rotate-half: out[..., :D/2] = x1 cos - x2 sin, out[..., D/2:] = x2 cos + x1 sin,
                   x bf16 [B, N, H, D] (layout bnhd) or stored [B, H, N, D] and passed as the
                   [B, N, H, D] view (layout bhnd); cos, sin fp32 [N, D/2] (quack.rotary.apply_rotary).
  softmax          row softmax, bf16 in and out (quack.softmax.softmax_fwd).
  copy             a device copy of the same number of bytes (half read, half written), three
                   ways: cudaMemcpyAsync captured in the graph (copy), cudaMemcpyAsync launched in
                   a loop (copy_loop), an SM kernel in the graph (copy_sm); the roof is the fastest.
                   (Run 72: the memcpy node in a graph ran at 2.77 TB/s for some sizes, 4.2 for
                   others.)

Effective GB/s = bytes that must move (each input read once, each output written once) / time.
Timing (see /work/.library/device/METHOD.md): each implementation is checked first against an fp32
reference (relative error, NaN never passes; the allocator's blocks are filled with NaN before that
call), then captured in a CUDA graph of n launches (an event-timed loop where capture fails: the
row says `timing`), each launch on its own set of inputs and keeping its own outputs, the sets
together over 3x the 60 MB L2 so that no launch finds its data in the cache; rounds alternate the
implementations (forward, then backward order); the median round over n is reported.

tkc's kernels plug in with --tkc MODULE_DIR: each kernel NAME is imported from MODULE_DIR/NAME/NAME.py
(what `tkc kernels.tk/NAME.tk --emit=torch -o MODULE_DIR/NAME` writes) or MODULE_DIR/NAME.py, and
its function NAME must have the signature in TKC_API below. Without --tkc only the baselines run.
Rows go to --out as JSON lines (default $OUT/norms.jsonl, else bench/out/norms.jsonl); the table
comes last.
"""
import argparse
import datetime
import importlib.util
import json
import math
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# bench/ off sys.path: no script here may shadow a standard-library module (ctest bench.names checks it)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]


def _load_philox_ref():
    # from its file, not through sys.path (bench/ is off it)
    spec = importlib.util.spec_from_file_location("philox_ref", os.path.join(HERE, "philox_ref.py"))
    m = importlib.util.module_from_spec(spec)
    sys.modules["philox_ref"] = m
    spec.loader.exec_module(m)
    return m


philox_ref = _load_philox_ref()

LN_EPS, RMS_EPS, P_DROP = 1e-5, 1e-6, 0.1
L2_BYTES = 60 * 2**20
TOL = 1e-2

# The functions tkc's generated torch modules are expected to provide (the proposal for issue 13;
# tensors in, tensors out, allocated on x's device and launched on the current stream).
TKC_API = {
    "layernorm": "layernorm(x, residual, weight, bias, p, seed) -> (out, new_residual): x, residual "
                 "bf16 [M, D] (any row stride, columns contiguous); weight, bias fp32 [D]; p a float "
                 "(0 <= p < 1), seed an int (64-bit); eps = 1e-5. new_residual = residual + x * keep * "
                 "(1.0f / (1.0f - p)) with keep = bench/philox_ref.keep(seed, p, (M, D)) (keep(): 16 bits an element); out = "
                 "LN(new_residual before its bf16 rounding) * weight + bias; both bf16 [M, D].",
    "rmsnorm": "rmsnorm(x, residual, weight) -> (out, new_residual): x, residual bf16 [M, D], weight "
               "fp32 [D], eps = 1e-6; new_residual = x + residual, out = new_residual * rsqrt(mean("
               "new_residual^2) + eps) * weight (fp32 sum, not its bf16 rounding), both bf16.",
    "rotary": "rotary(x, cos, sin) -> out: x bf16 [B, N, H, D] through strides (a [B, H, N, D] tensor "
              "comes as x.transpose(1, 2)), cos, sin fp32 [N, D/2], D = 64 or 128; out bf16 "
              "[B, N, H, D], rotate-half (x1 = x[..., :D/2], x2 = x[..., D/2:]).",
    "softmax": "softmax(x) -> out: x bf16 [M, D], out bf16 [M, D], fp32 arithmetic.",
}

T0 = time.time()
ROWS = []
OUTF = None


def log(*a):
    print(*a, flush=True)


def emit(row):
    row = {k: v for k, v in row.items() if v is not None}
    ROWS.append(row)
    log(json.dumps(row))
    if OUTF:
        with open(OUTF, "a") as f:
            f.write(json.dumps(row) + "\n")


def rel_err(out, ref):
    out, ref = out.double(), ref.double()
    if not bool(out.isfinite().all()):
        return float("nan")
    return (out - ref).norm().item() / max(ref.norm().item(), 1e-30)


def poison(torch, nbytes):
    """Leaves blocks of the caching allocator filled with NaN (0xFF bytes), so that an output an
    implementation allocates next and fails to write shows up as NaN in its check."""
    try:
        t = torch.empty(max(nbytes, 1), dtype=torch.uint8, device="cuda")
        t.fill_(0xFF)
        del t
    except RuntimeError:
        pass


# ---- implementations -------------------------------------------------------------------------------
def load_tkc(d):
    mods = {}
    for name in TKC_API:
        for cand in (os.path.join(d, name, name + ".py"), os.path.join(d, name + ".py")):
            if os.path.exists(cand):
                spec = importlib.util.spec_from_file_location("tkc_norms_" + name, cand)
                m = importlib.util.module_from_spec(spec)
                sys.path.insert(0, os.path.dirname(cand))
                spec.loader.exec_module(m)
                mods[name] = getattr(m, name)
                log(f"# tkc {name}: {cand}")
                break
        else:
            log(f"# tkc {name}: not found in {d} (expected {name}/{name}.py)")
    return mods


def tkc_fns(tkc, kernel):
    """(impl name, function) of each tkc build that has KERNEL: "tkc" (--tkc) and "tkc_NAME"
    (--tkc-variant NAME=DIR)"""
    return [(iname, mods[kernel]) for iname, mods in tkc.items() if kernel in mods]


def quack_mods():
    """quack's modules by name: quack/__init__.py imports the functions rmsnorm and softmax, which
    hide the submodules of those names as attributes of the package (quack.rmsnorm is a function)."""
    try:
        import importlib
        import types
        q = types.SimpleNamespace(**{m: importlib.import_module("quack." + m) for m in ("rmsnorm", "rotary", "softmax")})
        q.__version__ = importlib.import_module("quack").__version__
        return q, None
    except Exception as e:  # noqa: BLE001
        return None, f"{type(e).__name__}: {e}"


class Compiled:
    """torch.compile'd eager functions, one per (kernel, width), the row count dynamic."""

    def __init__(self, torch):
        self.torch, self.cache = torch, {}

    def get(self, key, fn):
        if key not in self.cache:
            self.cache[key] = self.torch.compile(fn)
        return self.cache[key]


def mark_rows_dynamic(torch, *ts):
    for t in ts:
        torch._dynamo.mark_dynamic(t, 0)


# ---- cases -----------------------------------------------------------------------------------------
class Case:
    """One kernel at one shape: inputs (k sets), bytes, implementations, the reference and its check."""

    def __init__(self, kernel, shape, label):
        self.kernel, self.shape, self.label = kernel, shape, label
        self.impls = {}       # name -> fn(inputs dict) -> outputs tuple
        self.notes = {}       # name -> note for the row
        self.bytes = 0
        self.in_bytes = 0


def ln_case(torch, F, args, M, D, quack, tkc, comp, plain=False):
    c = Case("layernorm_plain" if plain else "layernorm", (M, D), f"M={M} D={D}")
    bf = torch.bfloat16
    w = (1 + 0.1 * torch.randn(D, device="cuda")).float()
    b = (0.1 * torch.randn(D, device="cuda")).float()
    wb, bb = w.to(bf), b.to(bf)
    if plain:
        c.bytes = 2 * M * D * 2 + 2 * D * 4
        c.in_bytes = M * D * 2
        c.make = lambda: {"x": torch.randn(M, D, device="cuda", dtype=bf)}
        c.ref = lambda s, rows: (F.layer_norm(s["x"][rows].float(), (D,), w, b, LN_EPS),)
        if quack:
            c.impls["quack"] = lambda s: (quack.rmsnorm.layernorm_fwd(s["x"], w, b, LN_EPS),)
        c.impls["eager"] = lambda s: (F.layer_norm(s["x"], (D,), wb, bb, LN_EPS),)
        c.notes["eager"] = "bf16 weight and bias (F.layer_norm needs one dtype)"
        return c
    c.bytes = 4 * M * D * 2 + 2 * D * 4
    c.in_bytes = 2 * M * D * 2
    seed_base = 0x5EED0000

    def make():
        make.i = getattr(make, "i", 0) + 1
        return {"x": torch.randn(M, D, device="cuda", dtype=bf),
                "res": torch.randn(M, D, device="cuda", dtype=bf), "seed": seed_base + make.i}
    c.make = make

    def ref(s, rows, p, keep):
        x, res = s["x"][rows].float(), s["res"][rows].float()
        if p:
            x = torch.where(keep, x * philox_ref.dropout_scale(p), 0.0)
        h = x + res
        return F.layer_norm(h, (D,), w, b, LN_EPS), h
    c.ref_p = ref

    def eager(s, p=P_DROP):
        h = F.dropout(s["x"], p, training=True) + s["res"]
        return F.layer_norm(h, (D,), wb, bb, LN_EPS), h
    c.impls["eager"] = eager
    c.notes["eager"] = f"p={P_DROP} with torch's RNG; bf16 weight and bias"
    if "compile" in args.impls:
        def comp_fn(x, res, w, b):
            h = F.dropout(x, P_DROP, training=True) + res
            return F.layer_norm(h.float(), (x.shape[1],), w, b, LN_EPS).to(torch.bfloat16), h
        f = comp.get(("layernorm", D), comp_fn)

        def compiled(s):
            mark_rows_dynamic(torch, s["x"], s["res"])
            return f(s["x"], s["res"], w, b)
        c.impls["compile"] = compiled
        c.notes["compile"] = f"p={P_DROP} with inductor's RNG"
    if quack:
        def q(s):
            out, ro = torch.empty_like(s["x"]), torch.empty_like(s["x"])
            quack.rmsnorm._rmsnorm_fwd(s["x"], w, out, b, None, None, s["res"], ro, LN_EPS, True)
            return out, ro
        c.impls["quack"] = q
        c.notes["quack"] = "residual + LayerNorm, no dropout (p=0): the same bytes"
    for iname, fn in tkc_fns(tkc, "layernorm"):
        c.impls[iname] = lambda s, fn=fn: fn(s["x"], s["res"], w, b, P_DROP, s["seed"])
        c.notes[iname] = f"p={P_DROP}, Philox mask from the seed"
        if iname == "tkc":
            c.impls["tkc_p0"] = lambda s, fn=fn: fn(s["x"], s["res"], w, b, 0.0, s["seed"])
            c.notes["tkc_p0"] = "p=0"
    return c


def rms_case(torch, F, args, M, D, quack, tkc, comp):
    c = Case("rmsnorm", (M, D), f"M={M} D={D}")
    bf = torch.bfloat16
    w = (1 + 0.1 * torch.randn(D, device="cuda")).float()
    c.bytes = 4 * M * D * 2 + D * 4
    c.in_bytes = 2 * M * D * 2
    c.make = lambda: {"x": torch.randn(M, D, device="cuda", dtype=bf),
                      "res": torch.randn(M, D, device="cuda", dtype=bf)}

    def ref(s, rows):
        h = s["x"][rows].float() + s["res"][rows].float()
        return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + RMS_EPS) * w, h
    c.ref = ref

    def eager_fn(x, res, w):
        h = x + res
        hf = h.float()
        return (hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + RMS_EPS) * w).to(torch.bfloat16), h
    c.impls["eager"] = lambda s: eager_fn(s["x"], s["res"], w)
    if "compile" in args.impls:
        f = comp.get(("rmsnorm", D), eager_fn)

        def compiled(s):
            mark_rows_dynamic(torch, s["x"], s["res"])
            return f(s["x"], s["res"], w)
        c.impls["compile"] = compiled
    if quack:
        c.impls["quack"] = lambda s: quack.rmsnorm.rmsnorm(s["x"], w, residual=s["res"], prenorm=True, eps=RMS_EPS)
    for iname, fn in tkc_fns(tkc, "rmsnorm"):
        c.impls[iname] = lambda s, fn=fn: fn(s["x"], s["res"], w)
    return c


def softmax_case(torch, F, args, M, D, quack, tkc, comp):
    c = Case("softmax", (M, D), f"M={M} D={D}")
    bf = torch.bfloat16
    c.bytes = 2 * M * D * 2
    c.in_bytes = M * D * 2
    c.make = lambda: {"x": torch.randn(M, D, device="cuda", dtype=bf) * 2}
    c.ref = lambda s, rows: (torch.softmax(s["x"][rows].float(), -1),)

    def eager_fn(x):
        return torch.softmax(x, -1)
    c.impls["eager"] = lambda s: (eager_fn(s["x"]),)
    if "compile" in args.impls:
        f = comp.get(("softmax", D), eager_fn)

        def compiled(s):
            mark_rows_dynamic(torch, s["x"])
            return (f(s["x"]),)
        c.impls["compile"] = compiled
    if quack:
        c.impls["quack"] = lambda s: (quack.softmax.softmax_fwd(s["x"]),)
    for iname, fn in tkc_fns(tkc, "softmax"):
        c.impls[iname] = lambda s, fn=fn: (fn(s["x"]),)
    return c


def rotary_case(torch, F, args, B, N, H, D, layout, quack, tkc, comp):
    c = Case("rotary", (B, N, H, D), f"B={B} N={N} H={H} D={D} {layout}")
    bf = torch.bfloat16
    half = D // 2
    c.bytes = 2 * B * N * H * D * 2 + 2 * N * half * 4
    c.in_bytes = B * N * H * D * 2
    inv = 1.0 / (10000 ** (torch.arange(0, half, device="cuda", dtype=torch.float32) / half))
    ang = torch.arange(N, device="cuda", dtype=torch.float32)[:, None] * inv[None, :]
    cos, sin = ang.cos().contiguous(), ang.sin().contiguous()

    def make():
        if layout == "bnhd":
            return {"x": torch.randn(B, N, H, D, device="cuda", dtype=bf)}
        return {"x": torch.randn(B, H, N, D, device="cuda", dtype=bf).transpose(1, 2)}
    c.make = make

    def ref(s, rows):
        x = s["x"][rows].float()
        x1, x2 = x[..., :half], x[..., half:]
        cc, ss = cos[:, None, :], sin[:, None, :]
        return (torch.cat([x1 * cc - x2 * ss, x2 * cc + x1 * ss], -1),)
    c.ref = ref

    def eager_fn(x, cos, sin):
        h = x.shape[-1] // 2
        x1, x2 = x[..., :h], x[..., h:]
        cc, ss = cos[:, None, :], sin[:, None, :]
        return torch.cat([x1 * cc - x2 * ss, x2 * cc + x1 * ss], -1).to(torch.bfloat16)
    c.impls["eager"] = lambda s: (eager_fn(s["x"], cos, sin),)
    if "compile" in args.impls:
        f = comp.get(("rotary", D, layout), eager_fn)
        c.impls["compile"] = lambda s: (f(s["x"], cos, sin),)
    if quack:
        c.impls["quack"] = lambda s: (quack.rotary.apply_rotary(s["x"], cos, sin),)
    for iname, fn in tkc_fns(tkc, "rotary"):
        c.impls[iname] = lambda s, fn=fn: (fn(s["x"], cos, sin),)
    return c


# ---- check and time --------------------------------------------------------------------------------
def check_rows(kernel, M):
    """The rows (batches, for rotary) checked against the fp32 reference: all of a small tensor,
    both ends of a large one."""
    if kernel == "rotary":
        return (slice(None), None) if M <= 2 else (slice(0, 1), slice(M - 1, M))
    if M <= 4096:
        return slice(None), None
    return slice(0, 1024), slice(M - 1024, M)


def check_impl(torch, c, name, s):
    """Runs one implementation once on set s and compares it with the reference; returns the row
    fields (errors, status) and the outputs."""
    poison(torch, 3 * c.bytes // 4)
    t = time.time()
    outs = c.impls[name](s)
    torch.cuda.synchronize()
    first_s = time.time() - t
    if not isinstance(outs, (tuple, list)):
        outs = (outs,)
    f = {"first_call_s": round(first_s, 2)}
    M = c.shape[0]
    parts = check_rows(c.kernel, M)
    errs = []
    kern = c.kernel
    for rows in [p for p in parts if p is not None]:
        if kern == "layernorm":
            if name in ("eager", "compile"):
                # torch's own RNG: the mask is read off the new residual (kept where it differs
                # from the residual; an x too small to move the bf16 sum counts as dropped, which
                # changes the reference by less than that rounding)
                p, keep = P_DROP, outs[1][rows] != s["res"][rows]
            else:
                p = 0.0 if name in ("quack", "tkc_p0") else P_DROP
                keep = philox_ref.keep(s["seed"], p, c.shape, device="cuda")[rows] if p else None
            if keep is not None:
                f["kept"] = round(keep.float().mean().item(), 5)
            refs = c.ref_p(s, rows, p, keep)
            names = ("out", "new_residual")
        elif kern == "rotary":
            refs = c.ref(s, rows)
            names = ("out",)
        else:
            refs = c.ref(s, rows)
            names = ("out", "new_residual")
        for nm, o, r in zip(names, outs, refs):
            errs.append((nm, rel_err(o[rows], r)))
    worst = {}
    for nm, e in errs:
        worst[nm] = max(worst.get(nm, 0.0), e) if e == e else float("nan")
    for nm, e in worst.items():
        f[f"err_{nm}"] = float(f"{e:.3e}") if e == e else "nan"
    bad = [nm for nm, e in worst.items() if not (e <= TOL)]
    if kern == "layernorm" and name == "tkc" and "kept" in f:
        n = (1024 * 2 if M > 4096 else M) * c.shape[1]
        q = philox_ref.threshold16(P_DROP) / 2**16   # keep() drops with p rounded up to 16 bits
        sigma = math.sqrt(q * (1 - q) / n)
        if abs(f["kept"] - (1 - q)) > 3 * sigma:
            bad.append("kept fraction")
        again = c.impls[name](s)
        if not torch.equal(again[0], outs[0]) or not torch.equal(again[1], outs[1]):
            bad.append("not reproducible from the seed")
    f["status"] = "ok" if not bad else "FAIL " + ",".join(bad)
    return f, outs


def time_impls(torch, fns, k, est_s, rounds, verify=None, no_graph=(), target_s=2e-3, max_n=200):
    """fns: name -> fn(j) running launch j (on input set j % k). verify: name -> fn(outputs of
    launch 0) -> None or what is wrong, run on the graph's outputs after one replay (a launch that
    went to another stream than the captured one would leave them unwritten). Returns name ->
    (ms per launch, timing, n)."""
    verify = verify or {}
    n = int(min(max_n, max(k, math.ceil(target_s / max(est_s, 1e-7)))))
    runners = {}
    for name, fn in fns.items():
        keep = []
        try:
            if name in no_graph:
                raise RuntimeError("not captured by choice")
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for j in range(2):
                    fn(j)
            torch.cuda.current_stream().wait_stream(side)
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for j in range(n):
                    keep.append(fn(j))
            g.replay()
            torch.cuda.synchronize()
            wrong = verify[name](keep[0]) if name in verify else None
            if wrong:
                raise RuntimeError(f"the graph's outputs are wrong ({wrong})")
            runners[name] = (g.replay, "graph", (g, keep))
        except Exception as e:  # noqa: BLE001
            keep.clear()
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            if name not in no_graph:
                log(f"#   {name}: graph capture failed ({type(e).__name__}: {str(e)[:120]}); timing a loop")

            def loop(fn=fn):
                for j in range(n):
                    fn(j)
            loop()
            torch.cuda.synchronize()
            runners[name] = (loop, "loop", None)
    ev = {name: [] for name in fns}
    names = list(fns)
    for r in range(rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            runners[name][0]()
            e.record()
            ev[name].append((s, e))
    torch.cuda.synchronize()
    out = {}
    for name, v in ev.items():
        ts = sorted(s.elapsed_time(e) for s, e in v)
        out[name] = (ts[len(ts) // 2] / n, runners[name][1], n)
    runners.clear()
    return out


def graph_check(torch, c, name, s, outs):
    """What the outputs of a captured launch on set s must satisfy: those of the checked call (the
    same function of the same inputs), or, for dropout with torch's RNG, a new residual that
    differs from the residual in about 1 - p of the elements."""
    def first(o):
        return o[0] if isinstance(o, (tuple, list)) else o
    if c.kernel == "layernorm" and name in ("eager", "compile"):
        def rng(o):
            frac = (o[1][:512] != s["res"][:512]).float().mean().item()
            return None if abs(frac - (1 - P_DROP)) < 0.02 else f"{frac:.3f} of the residual changed"
        return rng
    ref = first(outs)

    def same(o):
        a = first(o)
        e = max(rel_err(a[:256], ref[:256]), rel_err(a[-256:], ref[-256:]))
        return None if e <= 1e-3 else f"relative difference {e:.2e} from the checked call"
    return same


def run_case(torch, args, c):
    """Checks and times every implementation of one case; emits a row each."""
    k = int(min(64, max(1, math.ceil(3 * L2_BYTES / max(c.in_bytes, 1)))))
    sets = [c.make() for _ in range(k)]
    torch.cuda.synchronize()
    base = {"kernel": c.kernel, "shape": c.label, "bytes": c.bytes, "sets": k}
    fields, fns, verify = {}, {}, {}
    for name in list(c.impls):
        if name not in args.impls and not (name.startswith("tkc_") and "tkc" in args.impls):
            continue
        if name == "compile" and args.budget_s and time.time() - T0 > args.budget_s - 25:
            fields[name] = {"status": "skipped (time budget)"}
            continue
        try:
            f, outs = check_impl(torch, c, name, sets[0])
        except Exception as e:  # noqa: BLE001
            fields[name] = {"status": f"ERROR {type(e).__name__}: {str(e)[:300]}"}
            torch.cuda.synchronize()
            continue
        fields[name] = f
        fns[name] = (lambda j, fn=c.impls[name]: fn(sets[j % k]))
        verify[name] = graph_check(torch, c, name, sets[0], outs)
    if "copy" in args.impls:
        # three copies of the same bytes: cudaMemcpyAsync captured in the graph (a memcpy node),
        # cudaMemcpyAsync launched in a loop, and an SM kernel (an int32 elementwise op) in the graph
        half = (c.bytes // 2) // 4 * 4
        src = [torch.empty(half, dtype=torch.uint8, device="cuda").random_(0, 255) for _ in range(k)]
        dst = [torch.empty(half, dtype=torch.uint8, device="cuda") for _ in range(k)]
        s32, d32 = [t.view(torch.int32) for t in src], [t.view(torch.int32) for t in dst]
        fns["copy"] = lambda j: dst[j % k].copy_(src[j % k])
        fns["copy_loop"] = lambda j: dst[j % k].copy_(src[j % k])
        fns["copy_sm"] = lambda j: torch.bitwise_xor(s32[j % k], 0, out=d32[j % k])
        for nm, how in (("copy", "memcpy in the graph"), ("copy_loop", "memcpy launched in a loop"),
                        ("copy_sm", "an SM kernel (int32 xor 0) in the graph")):
            fields[nm] = {"status": "ok", "note": f"{half} bytes read and written: {how}"}
    est = c.bytes / 3.0e12
    times = time_impls(torch, fns, k, est, args.rounds, verify, no_graph={"copy_loop"}) if fns else {}
    verify.clear()
    for name, f in fields.items():
        row = dict(base, impl=name, **f)
        if name in c.notes:
            row["note"] = c.notes[name]
        if name in times:
            ms, how, n = times[name]
            row.update(ms=round(ms, 5), gbps=round(c.bytes / (ms * 1e-3) / 1e9, 1), timing=how, launches=n,
                       rounds=args.rounds)
        emit(row)
    sets.clear()
    fns.clear()
    torch.cuda.empty_cache()


def philox_device_check(torch):
    """Compiles templates/tkc_philox.cuh for the GPU (cupy's NVRTC) and compares its words with
    bench/philox_ref.py's torch path on the GPU: checks the device code path (__umulhi) that the
    host unit test cannot run, and the reference's int64 arithmetic on CUDA."""
    try:
        import cupy
    except Exception as e:  # noqa: BLE001
        emit({"kernel": "philox", "impl": "device", "status": f"skipped (cupy: {e})"})
        return
    src = open(os.path.join(ROOT, "templates", "tkc_philox.cuh")).read()
    code = ("typedef unsigned int uint32_t; typedef unsigned long long uint64_t;\n"
            "#define TKC_DEVICE __device__ __forceinline__\n" + src +
            "\nextern \"C\" __global__ void words(uint32_t *out, uint64_t seed, uint64_t g0, int n) {\n"
            "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;\n"
            "  uint32_t w[4]; tkc_philox_group(seed, g0 + i, w);\n"
            "  for (int j = 0; j < 4; j++) out[4 * i + j] = w[j]; }\n")
    try:
        kern = cupy.RawKernel(code, "words", options=("-std=c++17",))
        n, g0, seed = 1 << 20, (1 << 40) - 12345, 0xDEADBEEFCAFEF00D
        out = cupy.zeros(4 * n, dtype=cupy.uint32)
        kern(((n + 255) // 256,), (256,), (out, cupy.uint64(seed), cupy.uint64(g0), cupy.int32(n)))
        got = torch.as_tensor(out.astype(cupy.int64), device="cuda").reshape(n, 4)
        want = philox_ref.group_words_torch(seed, torch.arange(g0, g0 + n, device="cuda", dtype=torch.int64))
        kat_ok = all(philox_ref.philox4x32_10(c_, k_) == w_ for c_, k_, w_ in philox_ref.KAT)
        same = bool(torch.equal(got, want))
        first = tuple(int(v) for v in got[0])
        scal = philox_ref.group_words(seed, g0)
        emit({"kernel": "philox", "impl": "device", "shape": f"{n} groups from {g0}",
              "status": "ok" if same and kat_ok and first == scal else "FAIL device words differ from philox_ref"})
    except Exception as e:  # noqa: BLE001
        emit({"kernel": "philox", "impl": "device", "status": f"ERROR {type(e).__name__}: {str(e)[:300]}"})


def table(rows, impls, variants=()):
    cols = [i for i in ["tkc", "tkc_p0", *variants, "quack", "compile", "eager"] if i in impls or
            (i.startswith("tkc_") and "tkc" in impls)]
    if "copy" in impls:
        cols += ["copy", "copy_loop", "copy_sm"]
    cases = []
    for r in rows:
        key = (r["kernel"], r.get("shape", ""))
        if key not in cases:
            cases.append(key)
    lines = ["", "effective GB/s (bytes that must move / time); copy: memcpy in a graph, copy_loop: memcpy "
             "in a loop, copy_sm: a copy kernel in a graph; roof = the fastest copy; q/roof = quack / roof"
             + ("; tkc/q, tkc/roof" if "tkc" in impls else "")]
    head = f"{'kernel':16s} {'shape':28s}" + "".join(f"{c:>10s}" for c in cols) + f"{'q/roof':>8s}"
    if "tkc" in impls:
        head += f"{'tkc/q':>7s}{'tkc/roof':>9s}" + "".join(f"{v[4:] + '/q':>7s}" for v in variants)
    lines.append(head)
    for kern, shape in cases:
        rs = {r["impl"]: r for r in rows if r["kernel"] == kern and r.get("shape", "") == shape}
        if kern == "philox":
            lines.append(f"{'philox (device)':16s} {shape:28s} {rs['device']['status']}")
            continue

        def g(i):
            r = rs.get(i)
            return r.get("gbps") if r and r.get("status", "").startswith("ok") else None
        line = f"{kern:16s} {shape:28s}"
        for c in cols:
            v = g(c)
            r = rs.get(c)
            line += f"{v:10.0f}" if v else f"{('-' if not r else 'FAIL' if 'FAIL' in r.get('status', '') else 'err' if 'ERROR' in r.get('status', '') else 'skip'):>10s}"
        cps = [v for v in (g("copy"), g("copy_loop"), g("copy_sm")) if v]
        q, cp, t = g("quack"), max(cps) if cps else None, g("tkc")
        line += f"{q / cp:8.3f}" if q and cp else f"{'':8s}"
        if "tkc" in impls:
            line += (f"{t / q:7.3f}" if t and q else f"{'':7s}") + (f"{t / cp:9.3f}" if t and cp else f"{'':9s}")
            for v in variants:
                tv = g(v)
                line += f"{tv / q:7.3f}" if tv and q else f"{'':7s}"
        lines.append(line)
    bad = [r for r in rows if not r.get("status", "").startswith(("ok", "skipped"))]
    lines.append(f"norms: {sum(1 for r in rows if r.get('status', '').startswith('ok'))} passed, {len(bad)} failed"
                 + (f" ({'; '.join(r['kernel'] + ' ' + r.get('shape', '') + ' ' + r['impl'] + ': ' + r['status'][:80] for r in bad)})" if bad else ""))
    return "\n".join(lines)


def main():
    global OUTF
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernels", default="layernorm,rmsnorm,softmax,rotary,layernorm_plain")
    ap.add_argument("--widths", help="D of layernorm, rmsnorm, softmax (default 1024,2048,4096,8192)")
    ap.add_argument("--rows", help="M, the first the issue's target (default 65536,4096,1000)")
    ap.add_argument("--rotary", help="BxNxH of the rotary cases, D = 128 and 64, both layouts (default 16x4096x16)")
    ap.add_argument("--impls", default="tkc,quack,eager,compile,copy")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--budget-s", type=float, default=0, help="stop starting cases after this many seconds")
    ap.add_argument("--tkc", default="", help="directory of tkc's generated torch modules")
    ap.add_argument("--tkc-variant", action="append", default=[], metavar="NAME=DIR",
                    help="another build of tkc's modules, timed in the same rounds as impl tkc_NAME")
    ap.add_argument("--out", default="")
    ap.add_argument("--commit", default="")
    ap.add_argument("--quick", action="store_true", help="small shapes, 2 rounds: a smoke test")
    ap.add_argument("--no-philox-check", action="store_true")
    args = ap.parse_args()
    for k, full, quick in (("widths", "1024,2048,4096,8192", "1024,8192"), ("rows", "65536,4096,1000", "1000"),
                           ("rotary", "16x4096x16", "2x512x4"), ("rounds", 5, 2)):
        if getattr(args, k) is None:
            setattr(args, k, quick if args.quick else full)
    args.impls = set(args.impls.split(","))
    OUTF = args.out or os.path.join(os.environ.get("OUT") or os.path.join(ROOT, "bench", "out"), "norms.jsonl")
    os.makedirs(os.path.dirname(OUTF), exist_ok=True)
    open(OUTF, "w").close()

    import torch
    import torch.nn.functional as F
    if not torch.cuda.is_available():
        log("norms.py needs a CUDA GPU")
        return 2
    commit = args.commit
    if not commit:
        try:
            commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                                    text=True).stdout.strip()
        except OSError:
            commit = ""
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.sm,power.limit",
                              "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    except OSError:
        smi = ""
    quack, qerr = quack_mods() if "quack" in args.impls else (None, "not asked for")
    try:
        import triton
        triton_v = triton.__version__
    except ImportError:
        triton_v = None
    hdr = {"kernel": "header", "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "commit": commit, "gpu": torch.cuda.get_device_name(), "smi": smi, "torch": torch.__version__,
           "triton": triton_v, "python": platform.python_version(),
           "quack": getattr(quack, "__version__", None) if quack else f"missing ({qerr})"}
    emit(hdr)
    tkc = {"tkc": load_tkc(args.tkc)} if args.tkc else {}
    for nv in args.tkc_variant:
        name, _, d = nv.partition("=")
        tkc["tkc_" + name] = load_tkc(d)
    if not args.tkc:
        args.impls.discard("tkc")
    comp = Compiled(torch)
    if not args.no_philox_check:
        philox_device_check(torch)
    kernels = args.kernels.split(",")
    widths = [int(v) for v in args.widths.split(",")]
    rows = [int(v) for v in args.rows.split(",")]
    B, N, H = (int(v) for v in args.rotary.split("x"))
    plan = []
    # the targets first (M = 65536 for every kernel and width, rotary), then M = 4096 and 1000
    for mi, M in enumerate(rows):
        for kern in ("layernorm", "rmsnorm", "softmax"):
            if kern in kernels:
                plan += [(kern, M, D) for D in widths]
        if mi == 0:
            if "rotary" in kernels:
                plan += [("rotary", D, lay) for D in (128, 64) for lay in ("bnhd", "bhnd")]
            if "layernorm_plain" in kernels:
                plan += [("layernorm_plain", M, D) for D in widths]
    for item in plan:
        if args.budget_s and time.time() - T0 > args.budget_s:
            emit({"kernel": item[0], "shape": " ".join(map(str, item[1:])), "impl": "-", "status": "skipped (time budget)"})
            continue
        t = time.time()
        if item[0] == "rotary":
            c = rotary_case(torch, F, args, B, N, H, item[1], item[2], quack, tkc, comp)
        elif item[0] == "rmsnorm":
            c = rms_case(torch, F, args, item[1], item[2], quack, tkc, comp)
        elif item[0] == "softmax":
            c = softmax_case(torch, F, args, item[1], item[2], quack, tkc, comp)
        else:
            c = ln_case(torch, F, args, item[1], item[2], quack, tkc, comp, plain=item[0] == "layernorm_plain")
        try:
            run_case(torch, args, c)
        except Exception as e:  # noqa: BLE001
            emit({"kernel": c.kernel, "shape": c.label, "impl": "-", "status": f"ERROR {type(e).__name__}: {str(e)[:300]}"})
            torch.cuda.synchronize()
        log(f"# {c.kernel} {c.label}: {time.time() - t:.1f} s (total {time.time() - T0:.0f} s)")
    log(table([r for r in ROWS if r["kernel"] != "header"], args.impls, [i for i in tkc if i != "tkc"]))
    log(f"# rows: {OUTF}; {time.time() - T0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
