#!/usr/bin/env python3
"""torch_check.py - tkc --emit=torch end to end on the GPU machine (an sm_90 GPU, torch with CUDA, nvcc).

    python3 bench/torch_check.py [TKC] [--out DIR] [--no-timing] [--build-only]

TKC is the tkc binary (default: build/tkc, else build-gpu/tkc). For kernels.tk/gemm.tk and
kernels.tk/attn_fwd.tk (default, -D CAUSAL=1, -D D=64, -D D=64 -D CAUSAL=1) it generates the
torch extension into DIR/<variant> (default bench/out/torch), builds the five extensions at
once with the generated modules (tkc_build(), torch.utils.cpp_extension.load), then calls them:
results against PyTorch references (torch.matmul in fp32; an fp32 softmax reference with the
natural-log LSE and grouped-query heads, and scaled_dot_product_attention), legal non-contiguous
views, ragged lengths, GQA, the current stream, same input same bytes; and that bad inputs raise
the right Python errors (dtype, CPU tensors, shapes, compile-time dims, strides and alignment TMA
cannot use, a failed require). Prints one line per check, a few timings (info, not checks), and
'torch_check: N passed, N failed' last; exits 1 on any failure. Takes a few minutes, mostly nvcc;
a second run reuses the builds. --build-only generates and builds without a GPU.
"""
import argparse
import importlib.util
import math
import os
import subprocess
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

from harness import ROOT, VARIANTS, rel_err, tkc_command

# the harness's variants (their .tk and -D overrides) that get a PyTorch extension
TORCH_VARIANTS = ("gemm", "attn_d128", "attn_d128_causal", "attn_d64", "attn_d64_causal")

RESULTS = []


def report(ok, name, detail=""):
    RESULTS.append(bool(ok))
    print("%s %s%s" % ("PASS" if ok else "FAIL", name, (": " + detail) if detail else ""), flush=True)


def info(text):
    print("info " + text, flush=True)


def check(name):
    """Used as a decorator, runs the function at once; an exception it did not expect is a failed check."""
    def run(fn):
        try:
            fn()
        except Exception as e:  # a check that crashed is a failed check
            where = [l.strip() for l in traceback.format_exc().splitlines() if l.strip().startswith("File ")]
            report(False, name, "%s: %s (%s)" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "",
                                                 " <- ".join(reversed(where[-4:])) if where else "?"))
    return run


def expect_error(name, exc, fn, *needles):
    """fn() must raise exc with every needle in its message."""
    try:
        fn()
    except exc as e:
        msg = str(e)
        missing = [n for n in needles if n not in msg]
        report(not missing, name, msg if not missing else "message lacks %r: %s" % (missing, msg))
        return
    except Exception as e:
        report(False, name, "raised %s, expected %s: %s" % (type(e).__name__, exc.__name__, e))
        return
    report(False, name, "no exception, expected %s" % exc.__name__)


# ---- generate and build ----------------------------------------------------------------------

def generate(tkc, out):
    dirs = {}
    for name in TORCH_VARIANTS:
        d = os.path.join(out, name)
        cmd = tkc_command(tkc, name, "--emit=torch", "-o", d)
        r = subprocess.run(cmd, capture_output=True, text=True)
        stem = os.path.splitext(VARIANTS[name][0])[0]
        files = [stem + ".py", stem + "_kernels.cu", stem + "_binding.cpp"]
        ok = r.returncode == 0 and all(os.path.isfile(os.path.join(d, f)) for f in files)
        report(ok, "generate %s" % name, " ".join(cmd[1:]) if ok else (r.stderr.strip() or "files missing"))
        if not ok:
            continue
        # deterministic: the same command into another directory writes the same bytes
        d2 = os.path.join(out, "again", name)
        cmd[cmd.index("-o") + 1] = d2
        subprocess.run(cmd, capture_output=True, text=True)
        same = all(open(os.path.join(d, f), "rb").read() == open(os.path.join(d2, f), "rb").read() for f in files)
        report(same, "deterministic %s" % name, "two runs write the same bytes" if same else "files differ")
        dirs[name] = (d, stem)
    return dirs


def build_all(dirs):
    """Builds every extension at once, each in its own process (its own build directory)."""
    def one(item):
        name, (d, stem) = item
        code = "import sys; sys.path.insert(0, %r); import %s as m; m.tkc_build()" % (d, stem)
        t0 = time.time()
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        return name, r.returncode, time.time() - t0, (r.stdout + r.stderr).strip()

    built = {}
    with ThreadPoolExecutor(max_workers=len(dirs) or 1) as ex:
        for name, rc, secs, log in ex.map(one, sorted(dirs.items())):
            report(rc == 0, "build %s" % name, "%.0f s" % secs if rc == 0 else "\n" + "\n".join(log.splitlines()[-25:]))
            if rc == 0:
                built[name] = dirs[name]
    return built


def load_module(name, d, stem):
    spec = importlib.util.spec_from_file_location("tkc_check_" + name, os.path.join(d, stem + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.tkc_build()  # up to date: loads the library
    return mod


def timed(torch, fn, reps=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e))
    return sorted(ts)[len(ts) // 2]


def poison(torch, shape, dtype):
    """Leaves a NaN-filled block in the caching allocator, so that the next torch.empty of this
    size most likely gets it: elements a kernel does not write then show up as NaN."""
    t = torch.full(shape, float("nan"), dtype=dtype, device="cuda")
    del t


# ---- GEMM --------------------------------------------------------------------------------------

def gemm_checks(torch, mod, timing):
    gemm = mod.gemm
    bf = torch.bfloat16
    dev = "cuda"

    def rnd(*shape, seed=0):
        g = torch.Generator(device=dev).manual_seed(seed)
        return torch.randn(*shape, device=dev, dtype=bf, generator=g)

    def ref(A, B):
        return A.float() @ B.float()

    for (M, N, K) in [(128, 256, 64), (1000, 1000, 1000), (200, 72, 8), (129, 264, 72), (4000, 3000, 2040)]:
        @check("gemm %dx%dx%d" % (M, N, K))
        def _():
            A, B = rnd(M, K, seed=M + K), rnd(K, N, seed=N)
            poison(torch, (M, N), bf)
            C = gemm(A, B)
            torch.cuda.synchronize()
            e = rel_err(C, ref(A, B))
            ok = C.shape == (M, N) and C.dtype == bf and C.is_contiguous() and not torch.isnan(C).any().item() and e < 1e-2
            report(ok, "gemm %dx%dx%d vs fp32 matmul" % (M, N, K), "rel err %.2e" % e)

    @check("gemm strided views")
    def _():
        M, N, K = 1000, 520, 1000
        A = rnd(M, K + 24, seed=1)[:, :K]          # rows longer than the width
        B = rnd(2 * K, N, seed=2)[::2]              # every other row
        C = gemm(A, B)
        e = rel_err(C, ref(A, B))
        report(e < 1e-2 and not A.is_contiguous() and not B.is_contiguous(),
               "gemm non-contiguous legal views (A[:, :K], B[::2]) passed without a copy", "rel err %.2e" % e)

    @check("gemm one row")
    def _():
        A = rnd(8, 256 + 24, seed=3)[3:4, :256]      # M = 1: a size-1 dimension with an odd stride
        B = rnd(256, 128, seed=4)
        C = gemm(A, B)
        e = rel_err(C, ref(A, B))
        report(e < 1e-2 and C.shape == (1, 128), "gemm M = 1 from a row view", "rel err %.2e" % e)

    @check("gemm deterministic")
    def _():
        A, B = rnd(1000, 1000, seed=5), rnd(1000, 1000, seed=6)
        C1, C2 = gemm(A, B), gemm(A, B)
        report(torch.equal(C1, C2), "gemm same input, same bytes")

    @check("gemm stream")
    def _():
        A, B = rnd(2048, 2048, seed=7), rnd(2048, 2048, seed=8)
        torch.cuda.synchronize()
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            torch.cuda._sleep(200_000_000)           # ~0.1 s of spinning on s, then the GEMM behind it
            C = gemm(A, B)
        on_side = not s.query()
        default_idle = torch.cuda.default_stream().query()
        s.synchronize()
        e = rel_err(C, ref(A, B))
        report(on_side and default_idle and e < 1e-2, "gemm runs on torch.cuda.current_stream()",
               "side stream busy %s, default stream idle %s, rel err %.2e" % (on_side, default_idle, e))

    if torch.cuda.device_count() > 1:
        @check("gemm device guard")
        def _():
            A = rnd(512, 512, seed=9).to("cuda:1")
            B = rnd(512, 512, seed=10).to("cuda:1")
            with torch.cuda.device(0):
                C = gemm(A, B)
            torch.cuda.synchronize(1)
            e = rel_err(C, ref(A, B))
            report(C.device == A.device and e < 1e-2, "gemm on cuda:1 while cuda:0 is current", "rel err %.2e" % e)
    else:
        info("one GPU: the device-guard check (tensors on cuda:1) is skipped")

    A, B = rnd(256, 128, seed=11), rnd(128, 192, seed=12)
    expect_error("gemm wrong dtype -> TypeError", TypeError, lambda: gemm(A.float(), B), "A", "torch.bfloat16",
                 "torch.float32")
    expect_error("gemm CPU tensors -> ValueError", ValueError, lambda: gemm(A.cpu(), B.cpu()), "A", "CUDA")
    expect_error("gemm one CPU tensor -> ValueError", ValueError, lambda: gemm(A, B.cpu()), "B", "CUDA")
    expect_error("gemm mismatched shapes -> ValueError", ValueError, lambda: gemm(A, B[:120]), "B.shape[0]", "K = 128")
    expect_error("gemm rank -> ValueError", ValueError, lambda: gemm(A[None], B), "A", "2-d")
    expect_error("gemm not a tensor -> TypeError", TypeError, lambda: gemm(A.tolist(), B), "A", "torch.Tensor")
    # layouts TMA cannot take as they lie: the module copies such inputs into padded rows and the
    # launcher stages such outputs, so each is a legal call with the right result
    At = rnd(128, 256, seed=13).t()  # [256, 128] with strides (1, 256): last stride not 1
    Amis = rnd(256 * 128 + 8, seed=14)[1:1 + 256 * 128].view(256, 128)   # 2 bytes past a 16-byte boundary
    Bodd = rnd(128, 1001, seed=15)   # rows of 2002 bytes, and so are C's
    Aodd = rnd(333, 77, seed=19)     # K = 77: rows of 154 bytes
    Bk = rnd(77, 100, seed=20)
    for label, (a, b) in (("transposed view A", (At, B)), ("misaligned A", (Amis, B)), ("N = 1001 (B and C rows of 2002 bytes)",
                          (A, Bodd)), ("K = 77 (A rows of 154 bytes)", (Aodd, Bk))):
        @check("gemm " + label)
        def _(a=a, b=b, label=label):
            C = gemm(a, b)
            torch.cuda.synchronize()
            e = rel_err(C, ref(a, b))
            report(e < 1e-2 and not torch.isnan(C).any().item(), "gemm %s: legal, through a padded copy" % label,
                   "rel err %.2e" % e)
    Abc = rnd(1, 128, seed=16).expand(256, 128)
    expect_error("gemm broadcast (stride 0) -> ValueError", ValueError, lambda: gemm(Abc, B), "A", "contiguous()")

    if timing:
        torch.backends.cuda.matmul.allow_tf32 = False
        n = 4096
        A, B = rnd(n, n, seed=17), rnd(n, n, seed=18)
        t_tkc = timed(torch, lambda: gemm(A, B))
        t_ref = timed(torch, lambda: torch.matmul(A, B))
        fl = 2.0 * n ** 3
        info("gemm %d^3: tkc through the module %.3f ms (%.0f TFLOP/s), torch.matmul %.3f ms (%.0f TFLOP/s)"
             % (n, t_tkc, fl / t_tkc / 1e9, t_ref, fl / t_ref / 1e9))


# ---- attention ---------------------------------------------------------------------------------

def attn_reference(torch, q, k, v, scale, causal):
    """fp32: O = softmax(scale q k^T) v and the natural-log LSE; query head h reads KV head
    h // (H // HKV) (bench/harness.py's attn_ref, all heads at once)."""
    H, HKV = q.shape[1], k.shape[1]
    kk = k.float().repeat_interleave(H // HKV, dim=1)
    vv = v.float().repeat_interleave(H // HKV, dim=1)
    s = (q.float() @ kk.transpose(-1, -2)) * scale
    if causal:
        N = q.shape[2]
        i = torch.arange(N, device=q.device)[:, None]
        j = torch.arange(N, device=q.device)[None, :]
        s = s.masked_fill(j > i, float("-inf"))
    return torch.softmax(s, dim=-1) @ vv, torch.logsumexp(s, dim=-1)


def attn_checks(torch, name, mod, D, causal, timing):
    import torch.nn.functional as F
    attn = mod.attn_fwd
    bf = torch.bfloat16
    dev = "cuda"

    def rnd(*shape, seed=0):
        g = torch.Generator(device=dev).manual_seed(seed)
        return torch.randn(*shape, device=dev, dtype=bf, generator=g)

    def compare(label, q, k, v, scale):
        compare_with(attn, label, q, k, v, scale)

    def compare_with(fn, label, q, k, v, scale):
        B_, H, N = q.shape[0], q.shape[1], q.shape[2]
        poison(torch, (B_, H, N, D), bf)
        O, L = fn(q, k, v, scale)
        ro, rl = attn_reference(torch, q, k, v, scale, causal)
        eo, el = rel_err(O, ro), rel_err(L, rl)
        nan = torch.isnan(O).any().item() or torch.isnan(L).any().item()
        ok = (O.shape == q.shape and O.dtype == bf and L.shape == q.shape[:3] and L.dtype == torch.float32 and not nan
              and eo < 1e-2 and el < 1e-3)
        detail = "rel err O %.2e, LSE %.2e" % (eo, el)
        try:  # PyTorch's own attention as a second opinion on O
            so = F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal), scale=scale, enable_gqa=H != k.shape[1])
            es = rel_err(O, so)
            ok = ok and es < 2e-2
            detail += ", vs SDPA %.2e" % es
        except TypeError:  # a torch without enable_gqa
            pass
        report(ok, "%s %s" % (name, label), detail)

    for (B_, H, HKV, N) in [(1, 2, 2, 128), (2, 4, 2, 1000), (1, 4, 1, 333)]:
        @check("%s B%d H%d HKV%d N%d" % (name, B_, H, HKV, N))
        def _():
            s = B_ * 1000 + H * 10 + N
            q, k, v = rnd(B_, H, N, D, seed=s), rnd(B_, HKV, N, D, seed=s + 1), rnd(B_, HKV, N, D, seed=s + 2)
            kind = "GQA" if 1 < HKV < H else "MQA" if HKV == 1 and H > 1 else "MHA"
            ragged = " ragged" if N % 128 else ""
            compare("B%d H%d HKV%d N%d (%s%s) vs fp32 softmax reference" % (B_, H, HKV, N, kind, ragged), q, k, v,
                    1.0 / math.sqrt(D))

    @check("%s [B, N, H, D] views" % name)
    def _():
        B_, H, HKV, N = 2, 4, 2, 515
        q = rnd(B_, N, H, D, seed=21).transpose(1, 2)   # [B, H, N, D] views of [B, N, H, D] memory
        k = rnd(B_, N, HKV, D, seed=22).transpose(1, 2)
        v = rnd(B_, N, HKV, D, seed=23).transpose(1, 2)
        compare("[B, N, H, D] memory as [B, H, N, D] views (no copy)", q, k, v, 0.1)

    @check("%s attention() entry" % name)
    def _():
        # the entry attention(): attn_fwd, or at few heads and long N the keys in runs (attn_fwd_part +
        # attn_combine, attn_fwd.dispatch), the same results
        for (B_, H, HKV, N) in [(1, 2, 1, 333), (1, 1, 1, 8200)]:
            q, k, v = rnd(B_, H, N, D, seed=41), rnd(B_, HKV, N, D, seed=42), rnd(B_, HKV, N, D, seed=43)
            compare_with(mod.attention, "attention() B%d H%d HKV%d N%d" % (B_, H, HKV, N), q, k, v, 1.0 / math.sqrt(D))

    @check("%s deterministic" % name)
    def _():
        q, k = rnd(2, 4, 700, D, seed=31), rnd(2, 2, 700, D, seed=32)
        v = rnd(2, 2, 700, D, seed=33)
        O1, L1 = attn(q, k, v, 0.1)
        O2, L2 = attn(q, k, v, 0.1)
        report(torch.equal(O1, O2) and torch.equal(L1, L2), "%s same input, same bytes" % name)

    q, k, v = rnd(1, 4, 256, D, seed=41), rnd(1, 2, 256, D, seed=42), rnd(1, 2, 256, D, seed=43)
    expect_error("%s wrong dtype -> TypeError" % name, TypeError, lambda: attn(q.half(), k, v, 0.1), "Q", "torch.bfloat16")
    expect_error("%s CPU tensors -> ValueError" % name, ValueError, lambda: attn(q.cpu(), k.cpu(), v.cpu(), 0.1), "Q",
                 "CUDA")
    expect_error("%s mismatched N -> ValueError" % name, ValueError, lambda: attn(q, k[:, :, :128], v, 0.1), "K.shape[2]",
                 "N = 256")
    expect_error("%s K and V disagree -> ValueError" % name, ValueError, lambda: attn(q, k, q, 0.1), "V.shape[1]", "HKV = 2")
    other = 64 if D == 128 else 128
    expect_error("%s head dim %d -> ValueError (compile-time D = %d)" % (name, other, D), ValueError,
                 lambda: attn(rnd(1, 4, 256, other), rnd(1, 2, 256, other), rnd(1, 2, 256, other), 0.1),
                 "Q.shape[3] must be D = %d" % D, "-D D=%d" % other)
    k3, v3 = rnd(1, 3, 256, D, seed=44), rnd(1, 3, 256, D, seed=45)
    expect_error("%s H %% HKV != 0 -> ValueError (require)" % name, ValueError, lambda: attn(q, k3, v3, 0.1),
                 "H % HKV == 0", "HKV=3")
    expect_error("%s scale not a number -> TypeError" % name, TypeError, lambda: attn(q, k, v, "0.1"), "scale")
    qt = rnd(1, 4, D, 256, seed=46).transpose(2, 3)  # [B, H, N, D] with the last stride 256
    qm = rnd(4 * 256 * D + 8, seed=47)[4:4 + 4 * 256 * D].view(1, 4, 256, D)   # 8 bytes past a boundary
    for label, qq in (("last stride not 1", qt), ("misaligned Q", qm)):
        @check("%s %s" % (name, label))
        def _(qq=qq, label=label):
            o1, _l1 = attn(qq, k, v, 0.1)
            o2, _l2 = attn(qq.contiguous(), k, v, 0.1)
            torch.cuda.synchronize()
            report(torch.equal(o1, o2), "%s %s: legal, the same bytes as with .contiguous()" % (name, label))

    if timing and D == 128:
        B_, H, N = 4, 16, 4096
        q, k, v = rnd(B_, H, N, D, seed=51), rnd(B_, H, N, D, seed=52), rnd(B_, H, N, D, seed=53)
        t_tkc = timed(torch, lambda: attn(q, k, v, 1.0 / math.sqrt(D)))
        t_ref = timed(torch, lambda: F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal)))
        fl = 4.0 * B_ * H * N * N * D / (2 if causal else 1)
        info("%s B%d H%d N%d: tkc through the module %.3f ms (%.0f TFLOP/s), SDPA %.3f ms (%.0f TFLOP/s)"
             % (name, B_, H, N, t_tkc, fl / t_tkc / 1e9, t_ref, fl / t_ref / 1e9))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tkc", nargs="?", default="")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "torch"))
    ap.add_argument("--no-timing", action="store_true", help="skip the informational timings")
    ap.add_argument("--build-only", action="store_true", help="generate and build the extensions only (no GPU needed)")
    args = ap.parse_args()
    tkc = args.tkc or next((p for p in (os.path.join(ROOT, "build", "tkc"), os.path.join(ROOT, "build-gpu", "tkc"))
                            if os.path.exists(p)), "")
    if not tkc or not os.path.exists(tkc):
        print("torch_check: no tkc binary (give its path, or build it: make)", file=sys.stderr)
        return 2
    tkc = os.path.abspath(tkc)

    import torch
    print("# torch %s, CUDA %s, %s" % (torch.__version__, torch.version.cuda,
                                       torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU"), flush=True)
    print("# tkc %s, out %s" % (subprocess.run([tkc, "--version"], capture_output=True, text=True).stdout.strip(), args.out),
          flush=True)
    if not args.build_only and (not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0)):
        report(False, "an sm_90 GPU", "torch sees %s" % (torch.cuda.get_device_capability() if torch.cuda.is_available()
                                                          else "no CUDA device"))
        print("torch_check: %d passed, %d failed" % (sum(RESULTS), len(RESULTS) - sum(RESULTS)))
        return 1
    t0 = time.time()
    dirs = generate(tkc, args.out)
    built = build_all(dirs)
    info("generated and built in %.0f s" % (time.time() - t0))
    if args.build_only:
        built = {}
    torch.backends.cuda.matmul.allow_tf32 = False
    for name, (d, stem) in sorted(built.items()):
        try:
            mod = load_module(name, d, stem)
        except Exception as e:
            report(False, "load %s" % name, "%s: %s" % (type(e).__name__, e))
            continue
        if name == "gemm":
            gemm_checks(torch, mod, not args.no_timing)
        else:
            attn_checks(torch, name, mod, mod.tkc_params["D"], mod.tkc_params["CAUSAL"], not args.no_timing)
        torch.cuda.synchronize()
    missing = sorted(set(TORCH_VARIANTS) - set(built))
    if missing and not args.build_only:
        report(False, "every variant checked", "not built: " + ", ".join(missing))
    info("total %.0f s" % (time.time() - t0))
    passed = sum(RESULTS)
    print("torch_check: %d passed, %d failed" % (passed, len(RESULTS) - passed))
    return 0 if passed == len(RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
