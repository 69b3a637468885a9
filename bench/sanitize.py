#!/usr/bin/env python3
"""GPU sanitizer suite: every kernel of kernels.tk/ under compute-sanitizer's memcheck, racecheck,
synccheck and initcheck, on small ragged (and strided) shapes.

  sanitize.py build --tkc PATH --out LIB [--only V,...]      tkc (--line-directives) + report + nvcc -lineinfo
  sanitize.py run   --lib LIB --out DIR [--only V,...] [--tools T,...] [--csv FILE] [--jobs N]
                    [--sanitizer CMD] [--timeout S]           every (variant, tool), a table row each
  sanitize.py launch --lib LIB --variant V --dir D [--tool T] [--fake[=MODE]]
                                                              the process the sanitizer watches (one variant)
  sanitize.py check  --lib LIB --variant V --dir D            the reference check of what launch wrote
  sanitize.py selftest --lib LIB                             launch --fake + check, and the failures they must see
  (bench/run_gpu.sh sanitize drives build and run)

What runs where. The process under compute-sanitizer ('launch') is plain Python with ctypes: it
makes every input on the host (exact bf16/fp32 values from a seeded generator), copies it with
cudaMemcpy through a small shim linked into the kernel's library (bench/sanitize_shim.cu, the same
CUDA runtime as the launchers), launches tkc's kernels through their C launchers (argument types
from tkc --emit=report) and copies the results back into files. It imports no PyTorch and launches
no kernel but tkc's, so nothing else can be reported; the tool is also told to check only kernels
whose names contain "tkc_" (--kernel-name kns=tkc_: tkc_<name>_kernel, and tkc_zero_kernel, the
launcher's clearing of strided 'zeroed' outputs). The reference runs afterwards in a separate,
unsanitized process ('check', torch on the CPU in fp64, the formulas of bench/features.py and
bench/harness.py), so errors in PyTorch's own kernels cannot count.

Memory: contiguous cases allocate each tensor at its exact size (rows padded only where TMA needs a
16-byte pitch), so memcheck sees any access past its end (with --padding where the tool has it);
strided cases pad every row by 32 bytes or more (4-D tensors stored [B, N, H, D + pad], 1-D ones
with stride 2). Inputs and their padding are written from the host (initialized); outputs are
filled with NaN (the padding of both holds sentinels that must not change), except under initcheck,
where outputs stay uninitialized, so that a kernel reading an output element it has not written is
reported, and only the outputs' own elements are copied back (outputs that a later kernel reads,
attn_bwd.tk's O, L and Dl, and outputs written by TMA stores, which initcheck does not track, are
NaN-filled there too: see uninitialized()).

A (variant, tool) row is clean when the tool's log says 0 errors (and, for racecheck, 0 hazards:
errors and warnings alike), every launcher returned TKC_OK, the device reported no fault, and the
check passed: outputs within tolerance of the reference, no NaN (unwritten) elements, padding and
inputs unchanged. 'run' prints one row per (variant, tool) as they finish and a table last; exit 1
if any row is not clean. Logs, manifests and results are under DIR/<variant>/<tool>/.
"""
import argparse
import ctypes
import importlib.util
import json
import math
import os
import random
import re
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# bench/ off sys.path: no script here may shadow a standard-library module (ctest bench.names checks it)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
TOOLS = ["memcheck", "racecheck", "synccheck", "initcheck"]
KERNEL_FILTER = "kns=tkc_"
BULK_PATHS = ("staged", "tma", "tma.add")  # --emit=report store paths that write by TMA bulk copies
ERROR_EXITCODE = 86  # compute-sanitizer's exit status when it found errors


_BENCH_LOCK = threading.Lock()


def _bench(name):
    """A module of bench/ (features, harness), loaded from its file once (threads wait for it)."""
    with _BENCH_LOCK:
        mod = sys.modules.get("tkc_bench_" + name)
        if mod is None:
            spec = importlib.util.spec_from_file_location("tkc_bench_" + name, os.path.join(HERE, name + ".py"))
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            sys.modules["tkc_bench_" + name] = mod
        return mod


# ---------------------------------------------------------------------------------------------
# the suite: variant -> .tk, -D overrides, cases (run-time dims; strided: the strided layout),
# scalars (a value, or a function of the .tk's params), the reference and its tolerances

def attn_scale(prm):
    return 1.0 / math.sqrt(prm["D"])


def f1_block_diagonal(nn):
    """fftconv.tk's F1 for sequence length nn: bf16 [2, 64, 128] random values in the block-diagonal places of
    the real F1 (row c H + a, column c' N1 + k1 nonzero only where c == c'; H = nn / 64, N1 = nn / 32), zeros
    elsewhere: the kernel's first products skip the zero rows of each column half (K = 32 at nn <= 2048)."""
    h, n1 = nn // 64, nn // 32

    def make(n, rng):
        table, out = VALUES["bf16"], bytearray()
        for i in range(n):
            r, c = (i % (64 * 128)) // 128, i % 128
            out += table[rng.randrange(len(table))] if r // h == c // n1 else b"\0\0"
        return bytes(out)
    return make


def w_neg_w(n, rng):
    """hedgehog.tk's Wq, Wk: bf16 [H, 128, 128] rows holding [W | -W] (its interface: the kernel reads
    W and makes the -x W half from it), W's values from the bf16 table."""
    table, out = VALUES["bf16"], bytearray()
    for _ in range(n // 128):
        w = [table[rng.randrange(len(table))] for _ in range(64)]
        out += b"".join(w) + b"".join(bytes((x[0], x[1] ^ 0x80)) for x in w)  # bf16 negation: the sign bit
    return bytes(out)


VARIANTS = {
    "gemm": dict(tk="gemm.tk", kernels=["gemm"], cases=[
        dict(M=200, K=136, N=264), dict(M=333, K=72, N=520), dict(M=333, K=72, N=520, strided=True),
        dict(M=77, K=43, N=51, unpadded=True),    # rows of 86 and 102 bytes: A, B and C staged
        dict(M=77, K=43, N=51, strided=True, unpadded=True)]),
    "gemm_tn": dict(tk="gemm.tk", kernels=["gemm_tn"], cases=[
        dict(K=136, M=200, N=264), dict(K=72, M=333, N=520, strided=True)]),
    "gemm_batched": dict(tk="gemm.tk", kernels=["gemm_batched"], cases=[
        dict(Bt=2, M=200, K=136, N=264), dict(Bt=3, M=100, K=72, N=200, strided=True),
        dict(Bt=2, M=50, K=43, N=51, unpadded=True)]),
    "attn_fwd": dict(tk="attn_fwd.tk", kernels=["attn_fwd"], scalars={"scale": attn_scale}, cases=[
        dict(B=1, H=2, HKV=2, N=333), dict(B=1, H=4, HKV=2, N=240), dict(B=1, H=4, HKV=2, N=200, strided=True)]),
    "attn_fwd_d64_causal": dict(tk="attn_fwd.tk", kernels=["attn_fwd"], defines={"D": 64, "CAUSAL": 1},
                                scalars={"scale": attn_scale},
                                cases=[dict(B=1, H=2, HKV=2, N=333), dict(B=1, H=4, HKV=1, N=200, strided=True)]),
    # the split pair of attention(): three runs of the keys (Op, Lp written by the first, read by the second)
    "attn_split": dict(tk="attn_fwd.tk", kernels=["attn_fwd_part", "attn_combine"],
                       scalars={"scale": attn_scale, "splits": 3}, cases=[
        dict(B=1, H=2, HKV=2, N=333, R=6), dict(B=1, H=4, HKV=2, N=200, R=12, strided=True)]),
    "attn_split_d64_causal": dict(tk="attn_fwd.tk", kernels=["attn_fwd_part", "attn_combine"], defines={"D": 64, "CAUSAL": 1},
                                  scalars={"scale": attn_scale, "splits": 3}, cases=[
        dict(B=1, H=2, HKV=2, N=333, R=6), dict(B=1, H=4, HKV=1, N=200, R=12, strided=True)]),
    "attn_bwd": dict(tk="attn_bwd.tk", scalars={"scale": attn_scale}, cases=[
        dict(B=1, H=2, HKV=2, N=333), dict(B=1, H=4, HKV=2, N=200, strided=True)]),
    "attn_bwd_causal": dict(tk="attn_bwd.tk", defines={"CAUSAL": 1}, scalars={"scale": attn_scale},
                            cases=[dict(B=1, H=2, HKV=2, N=333), dict(B=1, H=4, HKV=2, N=200, strided=True)]),
    "attn_bwd_d128_causal": dict(tk="attn_bwd.tk", defines={"D": 128, "CAUSAL": 1}, scalars={"scale": attn_scale},
                                 cases=[dict(B=1, H=2, HKV=2, N=333), dict(B=1, H=4, HKV=2, N=200, strided=True)]),
    # attn_bwd_main's D = 128 kernel alone after the forward and prep (above, attn_bwd_dq's dQ replaces its dQ)
    "attn_bwd_split": dict(tk="attn_bwd.tk", defines={"D": 128}, scalars={"scale": attn_scale},
                           kernels=["attn_fwd", "attn_bwd_prep", "attn_bwd_split"],
                           cases=[dict(B=1, H=2, HKV=2, N=333), dict(B=1, H=4, HKV=2, N=200, strided=True)]),
    "layernorm": dict(tk="layernorm.tk", scalars={"p": 0.1, "seed": 1234}, cases=[
        dict(M=101), dict(M=33, strided=True)]),
    "rmsnorm": dict(tk="rmsnorm.tk", cases=[dict(M=101), dict(M=33, strided=True)]),
    "softmax": dict(tk="softmax.tk", cases=[dict(M=101), dict(M=33, strided=True)]),
    "rotary": dict(tk="rotary.tk", kernels=["rotary"], cases=[dict(B=2, H=3, N=100), dict(B=2, H=3, N=77, strided=True)]),
    # q and k in one launch: the heads of q, then of k (grouped-query), through one ring tile
    "rotary_qk": dict(tk="rotary.tk", kernels=["rotary_qk"], cases=[
        dict(B=2, H=4, HKV=2, N=100), dict(B=2, H=3, HKV=1, N=77, strided=True)]),
    "rotary_qk_d64": dict(tk="rotary.tk", kernels=["rotary_qk"], defines={"D": 64}, cases=[
        dict(B=2, H=4, HKV=2, N=333), dict(B=1, H=2, HKV=2, N=77, strided=True)]),
    # linear.tk's three kernels one at a time (their Y tensors differ in dtype), GELU in the bias ones
    "linear": dict(tk="linear.tk", kernels=["linear"], cases=[
        dict(M=200, K=136, N=264), dict(M=333, K=72, N=520, strided=True)]),
    "linear_bias_gelu": dict(tk="linear.tk", defines={"ACT": 2}, kernels=["linear_bias"], cases=[
        dict(M=200, K=136, N=264), dict(M=333, K=72, N=520, strided=True)]),
    # the split-K pair (P zeroed by the first launcher, added into, read by the second) and the
    # decode kernel (its Pt checked against (X W^T)^T)
    "linear_splitk": dict(tk="linear.tk", kernels=["linear_splitk", "linear_splitk_out"], scalars={"splits": 3}, cases=[
        dict(M=200, K=136, N=264), dict(M=33, K=520, N=136, strided=True)]),
    "linear_decode": dict(tk="linear.tk", kernels=["linear_decode"], scalars={"splits": 3}, cases=[
        dict(M=7, K=200, N=264), dict(M=16, K=136, N=520, strided=True)]),
    # the one-kernel decode: bias and ACT on the accumulator, stored into Yt, Y's [N, M] transpose
    "linear_decode_direct": dict(tk="linear.tk", defines={"ACT": 3}, kernels=["linear_decode_direct"], cases=[
        dict(M=7, K=200, N=264), dict(M=16, K=136, N=520, strided=True)]),
    "linear_bias_f32": dict(tk="linear.tk", kernels=["linear_bias_f32"], cases=[
        dict(M=200, K=136, N=264), dict(M=333, K=72, N=520, strided=True)]),
    "linear_attn": dict(tk="linear_attn.tk", scalars={"scale": attn_scale}, cases=[
        dict(B=1, H=2, T=333), dict(B=1, H=3, T=200, strided=True)]),
    # Wq, Wk are the maps [W | -W] as the kernel takes them (w_neg_w: the kernel reads W alone; the
    # reference reads both halves as given); Alpha, Beta > 0, as Hedgehog's mixing weights are
    "hedgehog": dict(tk="hedgehog.tk", inputs=dict({n: (lambda n_, rng: b"".join(
        struct.pack("<f", (1 + rng.randrange(64)) / 64.0) for _ in range(n_))) for n in ("Alpha", "Beta")},
        Wq=w_neg_w, Wk=w_neg_w),
        cases=[dict(B=1, H=2, T=333), dict(B=1, H=2, T=200, strided=True)]),
    "based": dict(tk="based.tk", cases=[dict(B=1, H=2, T=333), dict(B=1, H=3, T=200, strided=True)]),
    "mamba2": dict(tk="mamba2.tk", inputs={"Aa": lambda n, rng: b"".join(
        struct.pack("<f", -(1 + rng.randrange(32)) / 512.0) for _ in range(n))},  # A dt < 0: decays
        cases=[dict(B=1, H=2, T=333), dict(B=1, H=3, T=200, strided=True)]),
    "mamba2_n128": dict(tk="mamba2.tk", defines={"NS": 128}, inputs={"Aa": lambda n, rng: b"".join(
        struct.pack("<f", -(1 + rng.randrange(32)) / 512.0) for _ in range(n))},
        cases=[dict(B=1, H=2, T=333), dict(B=1, H=3, T=200, strided=True)]),
    # fftconv.tk's constants and filter spectrum as random tiles (F1 with the real F1's block-diagonal zeros,
    # which the kernel's products skip): the reference is the kernel's tile algebra on whatever it is given,
    # two batch elements a step as one complex signal (reference()), so any inputs check it; n = NN
    "fftconv": dict(tk="fftconv.tk", scalars={"n": 1024}, inputs={"F1": f1_block_diagonal(1024)},
                    cases=[dict(B=3, DG=2), dict(B=2, DG=3, strided=True)]),
    "fftconv_n4096": dict(tk="fftconv.tk", defines={"NN": 4096}, scalars={"n": 4096},
                          inputs={"F1": f1_block_diagonal(4096)}, cases=[dict(B=3, DG=2), dict(B=2, DG=3, strided=True)]),
    "linear_attn_d64_decay": dict(tk="linear_attn.tk", defines={"D": 64, "DECAY": 1}, scalars={"scale": attn_scale},
                                  inputs={"Slope": lambda n, rng: b"".join(
                                      struct.pack("<f", (1 + rng.randrange(16)) / 256.0) for _ in range(n))},
                                  cases=[dict(B=1, H=2, T=333), dict(B=1, H=3, T=200, strided=True)]),
}


def case_dims(c):
    return {k: v for k, v in c.items() if k not in ("strided", "unpadded")}


def case_label(c):
    return " ".join(f"{k}={v}" for k, v in case_dims(c).items()) + (" strided" if c.get("strided") else "") + (
        " unpadded" if c.get("unpadded") else "")


def selected(only):
    names = list(VARIANTS)
    if only:
        want = [w for w in only.split(",") if w]
        bad = [w for w in want if w not in VARIANTS]
        if bad:
            sys.exit(f"sanitize.py: unknown variant(s) {', '.join(bad)}; known: {', '.join(names)}")
        names = [n for n in names if n in want]
    return names


# ---------------------------------------------------------------------------------------------
# build

def tkc_cmd(tkc, name, *extra, spec=None):
    v = spec or VARIANTS[name]  # spec: another suite's variant (bench/determinism.py)
    cmd = [tkc, os.path.join(ROOT, "kernels.tk", v["tk"])]
    for k, val in v.get("defines", {}).items():
        cmd += ["-D", f"{k}={val}"]
    return cmd + list(extra)


def build_one(tkc, out, name, timeout, spec=None):
    features = _bench("features")
    cu = os.path.join(out, name + ".cu")
    so = os.path.join(out, "lib" + name + ".so")
    rep = os.path.join(out, name + ".report.json")
    st = os.path.join(out, name + ".build.json")
    for p in (cu, so, rep, st):
        if os.path.exists(p):
            os.remove(p)
    t0 = time.time()
    res = dict(name=name, ok=False)
    # -lineinfo with tkc's #line directives: the tools name .tk lines
    nvcc = features.NVCC + ["-lineinfo", cu, os.path.join(HERE, "sanitize_shim.cu"), "-o", so]
    try:
        r = subprocess.run(tkc_cmd(tkc, name, "--line-directives", "-o", cu, spec=spec), capture_output=True,
                           text=True, timeout=timeout)
        if r.returncode:
            res.update(msg="tkc failed: " + features.first_error(r.stderr + r.stdout))
        else:
            r = subprocess.run(tkc_cmd(tkc, name, "--emit=report", "-o", rep, spec=spec), capture_output=True,
                               text=True, timeout=timeout)
            if r.returncode:
                res.update(msg="tkc --emit=report failed: " + features.first_error(r.stderr + r.stdout))
            else:
                r = subprocess.run(nvcc, capture_output=True, text=True, timeout=timeout)
                if r.returncode:
                    res.update(msg="nvcc failed: " + features.first_error(r.stderr + r.stdout))
                else:
                    info = [l.split(":", 1)[-1].strip() for l in r.stderr.splitlines() if "registers" in l]
                    res.update(ok=True, msg=" | ".join(info))
    except subprocess.TimeoutExpired as ex:
        res.update(msg=f"timed out after {timeout}s ({os.path.basename(str(ex.cmd[0]))})")
    except OSError as ex:
        res.update(msg=f"cannot run: {ex}")
    res["seconds"] = round(time.time() - t0, 1)
    with open(st, "w") as f:
        json.dump(res, f)
    return res


def build(args):
    os.makedirs(args.out, exist_ok=True)
    names = selected(args.only)
    with ThreadPoolExecutor(max_workers=args.jobs or os.cpu_count() or 4) as ex:
        results = list(ex.map(lambda n: build_one(args.tkc, args.out, n, args.timeout), names))
    for r in results:
        print(f"build {r['name']:20s} {'ok    ' if r['ok'] else 'FAILED'} {r['msg'][:200]} ({r['seconds']}s)", flush=True)
    print(f"sanitize build: {sum(r['ok'] for r in results)} of {len(results)} variants built", flush=True)
    return 0 if all(r["ok"] for r in results) else 1


# ---------------------------------------------------------------------------------------------
# tensors: where the elements live

ELEM = {"bf16": 2, "fp16": 2, "fp32": 4, "i32": 4}
NAN_BITS = {"bf16": b"\xc0\x7f", "fp16": b"\x00\x7e", "fp32": struct.pack("<I", 0x7FC00000), "i32": struct.pack("<i", -1)}
# the padding of inputs: 1024 (a kernel that reads it gets visibly wrong results)
GUARD_BITS = {"bf16": struct.pack("<f", 1024.0)[2:], "fp16": struct.pack("<e", 1024.0), "fp32": struct.pack("<f", 1024.0),
              "i32": struct.pack("<i", 1024)}
# input values exact in their dtype: k / 64 for bf16 (|k| <= 128), k / 256 for fp32 (|k| <= 512)
VALUES = {"bf16": [struct.pack("<f", k / 64.0)[2:] for k in range(-128, 129)],
          "fp16": [struct.pack("<e", k / 64.0) for k in range(-128, 129)],
          "fp32": [struct.pack("<f", k / 256.0) for k in range(-512, 513)],
          "i32": [struct.pack("<i", k) for k in range(-100, 101)]}


class Layout:
    """A tensor of `shape` in a buffer of `elems` elements: logical row r (row-major order over
    shape[:-1]) is `row` consecutive elements at element offset offs[r]; strides (elements) for
    the launcher, None where the tensor is contiguous."""

    def __init__(self, shape, elem, pitch, strided, tma):
        self.shape = list(shape)
        rank = len(shape)
        if rank >= 2:
            L = shape[-1]
            pad = max(1, 32 // elem) if strided else 0
            while ((L + pad) * elem) % max(pitch, elem):
                pad += 1
            Ls = L + pad
            lead = shape[:-1]
            nrows = math.prod(lead)
            if rank == 4 and strided:  # [B, H, N, D] stored as [B, N, H, D + pad]
                B, H, N = lead
                self.strides = [N * H * Ls, Ls, H * Ls, 1]
                self.offs = [b * N * H * Ls + n * H * Ls + h * Ls for b in range(B) for h in range(H) for n in range(N)]
            else:  # row-major over shape[:-1] + [Ls]
                st = []
                acc = Ls
                for d in reversed(lead):
                    st.insert(0, acc)
                    acc *= d
                self.strides = st + [1]
                self.offs = [r * Ls for r in range(nrows)]
            self.row = L
            self.elems = nrows * Ls
            if not strided and pad == 0:
                self.strides = None
        else:
            n = shape[0]
            if strided and not tma:
                self.strides, self.offs, self.row, self.elems = [2], [2 * i for i in range(n)], 1, 2 * n + 1
            else:
                self.strides, self.offs, self.row, self.elems = None, [0], n, n

    def view_ranges(self, elem):
        """(start, end) byte ranges of the tensor's own elements, sorted."""
        return sorted((o * elem, (o + self.row) * elem) for o in self.offs)


def gather(buf, lay, elem):
    """The tensor's elements (logical row-major order) out of its buffer's bytes."""
    w = lay.row * elem
    return b"".join(bytes(buf[o * elem:o * elem + w]) for o in lay.offs)


def scatter(buf, lay, elem, data):
    """Writes the logical row-major bytes `data` into the buffer at the tensor's elements."""
    w = lay.row * elem
    for r, o in enumerate(lay.offs):
        buf[o * elem:o * elem + w] = data[r * w:(r + 1) * w]


def padding_changed(before, after, lay, elem):
    """Bytes outside the tensor's own elements that differ between two copies of its buffer."""
    n, pos = 0, 0
    for s, e in lay.view_ranges(elem) + [(len(before), len(before))]:
        if pos < s:
            a, b = before[pos:s], after[pos:s]
            if a != b:
                n += sum(1 for x, y in zip(a, b) if x != y)
        pos = max(pos, e)
    return n


# ---------------------------------------------------------------------------------------------
# device memory: the shim in the kernel's library, or host memory (--fake, no GPU)

class Device:
    def __init__(self, lib):
        self.lib = lib
        P, S = ctypes.c_void_p, ctypes.c_size_t
        for name, argt in (("san_malloc", [ctypes.POINTER(P), S]), ("san_free", [P]), ("san_h2d", [P, P, S]),
                           ("san_d2h", [P, P, S]), ("san_sync", []), ("san_device_name", [ctypes.c_char_p, ctypes.c_int])):
            f = getattr(lib, name)
            f.restype = ctypes.c_int
            f.argtypes = argt
        lib.san_error_string.restype = ctypes.c_char_p
        lib.san_error_string.argtypes = [ctypes.c_int]

    def _ok(self, e, what):
        if e:
            raise RuntimeError(f"{what}: CUDA error {e} ({self.lib.san_error_string(e).decode()})")

    def name(self):
        b = ctypes.create_string_buffer(256)
        self._ok(self.lib.san_device_name(b, 256), "cudaGetDeviceProperties")
        return b.value.decode()

    def alloc(self, nbytes):
        p = ctypes.c_void_p()
        self._ok(self.lib.san_malloc(ctypes.byref(p), max(nbytes, 1)), f"cudaMalloc({nbytes})")
        return p.value

    def free(self, p):
        self.lib.san_free(p)

    def h2d(self, p, data):
        src = (ctypes.c_char * len(data)).from_buffer_copy(bytes(data))
        self._ok(self.lib.san_h2d(p, src, len(data)), "cudaMemcpy H2D")

    def d2h(self, p, nbytes, off=0):
        dst = ctypes.create_string_buffer(nbytes)
        self._ok(self.lib.san_d2h(dst, p + off, nbytes), "cudaMemcpy D2H")
        return dst.raw

    def sync(self):
        e = self.lib.san_sync()
        return e, ("" if not e else self.lib.san_error_string(e).decode())


class HostMemory:
    """--fake: buffers in host memory (aligned like cudaMalloc); the launchers, given host pointers,
    check every argument and then fail at the tensor map or the launch (no GPU)."""

    def __init__(self):
        self.bufs = {}

    def name(self):
        return "none (--fake: host memory)"

    def alloc(self, nbytes):
        raw = ctypes.create_string_buffer(nbytes + 256)
        p = (ctypes.addressof(raw) + 255) // 256 * 256
        self.bufs[p] = (raw, nbytes)
        return p

    def free(self, p):
        self.bufs.pop(p, None)

    def h2d(self, p, data):
        ctypes.memmove(p, bytes(data), len(data))

    def d2h(self, p, nbytes, off=0):
        return ctypes.string_at(p + off, nbytes)

    def sync(self):
        return 0, ""


# ---------------------------------------------------------------------------------------------
# launch: one variant's cases, in the process the sanitizer watches

def load_variant(lib_dir, name):
    with open(os.path.join(lib_dir, name + ".report.json")) as f:
        report = json.load(f)
    lib = ctypes.CDLL(os.path.join(lib_dir, "lib" + name + ".so"))
    return report, lib


def plan_tensors(report, dims, strided, unpadded=False):
    """name -> dict(dtype, shape, role, layout) over every kernel of the report, in order of first
    use; a tensor a kernel writes before any reads it is an output (later kernels may read it)."""
    tensors = {}
    for k in report["kernels"]:
        for p in k["launcher"]["params"]:
            if p["kind"] != "tensor":
                continue
            shape = [dims[s["text"]] if s["runtime"] else s["value"] for s in p["shape"]]
            t = tensors.get(p["name"])
            if t is None:
                t = tensors[p["name"]] = dict(dtype=p["dtype"], shape=shape, pitch=ELEM[p["dtype"]], tma=False,
                                              role="out" if p["mode"] == "out" else "in", inout=p["mode"] == "inout",
                                              read_later=False, bulk=False)
            if t["shape"] != shape or t["dtype"] != p["dtype"]:
                raise ValueError(f"tensor {p['name']}: kernels disagree on its shape or dtype")
            if not unpadded:  # unpadded: rows of their exact length, so the launcher stages what TMA cannot take
                t["pitch"] = max(t["pitch"], p.get("row_pitch_multiple_bytes") or 1)
            t["tma"] = t["tma"] or bool(p.get("tma"))
            if t["role"] == "out" and p["mode"] != "out":
                t["read_later"] = True  # a later kernel reads it (attn_bwd.tk: O, L, Dl)
        for st in k.get("stores", []):
            name = st["statement"].split("[", 1)[0].strip()
            if name in tensors and st["path"] in BULK_PATHS:
                tensors[name]["bulk"] = True
    for t in tensors.values():
        t["layout"] = Layout(t["shape"], ELEM[t["dtype"]], t["pitch"], strided, t["tma"])
    return tensors


def scalar_values(spec, report):
    prm = {p["name"]: p["value"] for p in report.get("params", [])}
    return {k: (v(prm) if callable(v) else v) for k, v in spec.get("scalars", {}).items()}


def uninitialized(t, tool):
    """Under initcheck, outputs stay uninitialized (only what a kernel writes is defined), so a
    kernel that reads an output element it has not written is reported. Not those a later kernel
    reads (attn_bwd.tk's O, L, Dl): they are NaN-filled as under the other tools, so initcheck does
    not depend on tracking one kernel's TMA stores into another's loads; a later kernel that reads
    an element an earlier one left unwritten gets NaN, which the check sees. Nor outputs written by
    TMA (store paths staged, tma, tma.add in --emit=report): initcheck does not count the bulk
    copies' writes (run 93: every 32-byte granule of a TMA-stored output was reported
    uninitialized by the copy back to the host, outputs the other three tools' NaN-poisoned runs
    saw written in full); they are NaN-filled too, so the check still sees an element left out."""
    return tool == "initcheck" and t["role"] == "out" and not t["read_later"] and not t["bulk"]


def launch(args):
    features = _bench("features")
    spec = VARIANTS[args.variant]
    report, lib = load_variant(args.lib, args.variant)
    fake = args.fake
    dev = HostMemory() if fake else Device(lib)
    os.makedirs(args.dir, exist_ok=True)
    try:
        print(f"# {args.variant} on {dev.name()} (tool {args.tool or '-'})", flush=True)
    except RuntimeError as ex:  # no GPU, no driver
        print(f"# {args.variant}: no device: {ex}", flush=True)
        with open(os.path.join(args.dir, "launch.json"), "w") as f:
            json.dump(dict(variant=args.variant, cases=len(spec["cases"]), ok=False, error=str(ex)), f)
        return 3
    if spec.get("kernels"):  # only these kernels of the library run (and define the tensors)
        report = dict(report, kernels=[k for k in report["kernels"] if k["name"] in spec["kernels"]])
    fns = []
    for k in report["kernels"]:
        L = k["launcher"]
        fn = getattr(lib, L["function"])
        fn.restype = ctypes.c_int
        fn.argtypes = [t for p in L["params"] for t in features.ctype_of(p)]
        fns.append((L, fn))
    scalars = scalar_values(spec, report)
    all_ok = True
    for ci, case in enumerate(spec["cases"]):
        dims, strided = case_dims(case), bool(case.get("strided"))
        rng = random.Random(1000 + 17 * ci)
        tensors = plan_tensors(report, dims, strided, bool(case.get("unpadded")))
        man = dict(variant=args.variant, case=ci, label=case_label(case), dims=dims, strided=strided,
                   scalars=scalars, tool=args.tool, fake=fake or "", tensors={}, steps=[], notes=[])
        ptrs = {}
        try:
            for name, t in tensors.items():
                e, lay = ELEM[t["dtype"]], t["layout"]
                n = math.prod(t["shape"])
                if t["role"] == "in" or t["inout"]:
                    table = VALUES[t["dtype"]]
                    make = spec.get("inputs", {}).get(name)  # a variant's own values (positive decays)
                    vals = make(n, rng) if make else b"".join(table[rng.randrange(len(table))] for _ in range(n))
                    buf = bytearray(GUARD_BITS[t["dtype"]] * lay.elems)
                    scatter(buf, lay, e, vals)
                    with open(os.path.join(args.dir, f"case{ci}.{name}.in.bin"), "wb") as f:
                        f.write(vals)
                else:
                    buf = bytearray(NAN_BITS[t["dtype"]] * lay.elems)
                t["init"] = bytes(buf)
                t["uninit"] = uninitialized(t, args.tool)
                ptrs[name] = dev.alloc(lay.elems * e)
                if not t["uninit"]:
                    dev.h2d(ptrs[name], buf)
                man["tensors"][name] = dict(dtype=t["dtype"], shape=t["shape"], role=t["role"],
                                            strides=lay.strides, input=f"case{ci}.{name}.in.bin"
                                            if t["role"] == "in" or t["inout"] else None)
            keep = []
            for L, fn in fns:
                argv = []
                for p in L["params"]:
                    if p["kind"] == "tensor":
                        lay = tensors[p["name"]]["layout"]
                        st = None if lay.strides is None else (ctypes.c_int64 * len(lay.strides))(*lay.strides)
                        keep.append(st)
                        argv += [ptrs[p["name"]], st]
                    elif p["kind"] == "dim":
                        argv.append(dims[p["name"]])
                    elif p["kind"] == "scalar":
                        argv.append(scalars[p["name"]])
                    elif p["kind"] == "stream":
                        argv.append(None)  # the default stream: the shim's copies order with it
                rc = fn(*argv)
                man["steps"].append(dict(function=L["function"], rc=rc))
                # --fake: host pointers pass every argument check, then the tensor map or the launch fails
                if fake and rc in (6, 7):
                    continue
                if rc != 0:
                    break
            code, msg = dev.sync()
            man["sync"] = dict(code=code, msg=msg)
            launched = code == 0 and all(s["rc"] == 0 or (fake and s["rc"] in (6, 7)) for s in man["steps"]) \
                and len(man["steps"]) == len(fns)
            man["launched"] = launched
            all_ok &= launched
            if fake and launched:
                fake_results(args.variant, fake, man, tensors, dev, ptrs)
            for name, t in tensors.items():
                e, lay = ELEM[t["dtype"]], t["layout"]
                nbytes = lay.elems * e
                if t["uninit"]:
                    # the tensor's own elements only (its padding was never written)
                    data = b"".join(dev.d2h(ptrs[name], lay.row * e, o * e) for o in lay.offs)
                else:
                    after = dev.d2h(ptrs[name], nbytes)
                    data = gather(after, lay, e)
                    if t["role"] == "in" and not t["inout"] and after != t["init"]:
                        man["notes"].append(f"{name} (an input): {sum(1 for x, y in zip(after, t['init']) if x != y)} bytes changed")
                    elif t["role"] == "out" or t["inout"]:
                        ch = padding_changed(t["init"], after, lay, e)
                        if ch:
                            man["notes"].append(f"{name}: {ch} padding bytes written")
                if t["role"] == "out" or t["inout"]:
                    fn_out = f"case{ci}.{name}.out.bin"
                    with open(os.path.join(args.dir, fn_out), "wb") as f:
                        f.write(data)
                    man["tensors"][name]["output"] = fn_out
        except Exception as ex:  # reported in the manifest; the process goes on to the next case
            man["launched"] = False
            man["notes"].append(f"exception: {type(ex).__name__}: {ex}"[:300])
            all_ok = False
        finally:
            for p in ptrs.values():
                dev.free(p)
        with open(os.path.join(args.dir, f"case{ci}.json"), "w") as f:
            json.dump(man, f, indent=1)
        print(f"case {ci} ({man['label']}): {'launched' if man.get('launched') else 'NOT launched'}"
              f" {[s['rc'] for s in man['steps']]} sync={man.get('sync', {}).get('code')} {'; '.join(man['notes'])}",
              flush=True)
    with open(os.path.join(args.dir, "launch.json"), "w") as f:
        json.dump(dict(variant=args.variant, cases=len(spec["cases"]), ok=all_ok), f)
    return 0 if all_ok else 3


def fake_results(variant, mode, man, tensors, dev, ptrs):
    """--fake: writes the reference into the outputs (what a correct kernel would write), so that
    check must pass; --fake=wrong / nan / padding / input break one thing check must catch."""
    import torch
    t_in = {n: from_bytes(torch, bytes_in(dev, ptrs[n], t), t["dtype"], t["shape"])
            for n, t in tensors.items() if t["role"] == "in" or t["inout"]}
    ref = reference(variant, t_in, {}, man["dims"], man["scalars"], chained=True)
    first = True
    for n, t in tensors.items():
        if t["role"] != "out" or n not in ref[0]:
            continue
        e, lay = ELEM[t["dtype"]], t["layout"]
        data = bytearray(to_bytes(torch, ref[0][n], t["dtype"]))
        if first and mode == "wrong":
            data[0:e] = to_bytes(torch, torch.tensor([1e4]), t["dtype"])
        if first and mode == "nan":
            data[e:2 * e] = NAN_BITS[t["dtype"]]
        buf = bytearray(dev.d2h(ptrs[n], lay.elems * e))
        scatter(buf, lay, e, data)
        if mode == "padding":  # the first padding byte of the first output that has one
            rs = lay.view_ranges(e)
            gap = next((a[1] for a, b in zip(rs, rs[1:] + [(len(buf), len(buf))]) if a[1] < b[0]), None)
            if gap is not None and first:
                buf[gap] ^= 0xFF
                first = False
        dev.h2d(ptrs[n], buf)
        if mode != "padding":
            first = False
    if mode == "input":
        n = next(n for n, t in tensors.items() if t["role"] == "in")
        dev.h2d(ptrs[n], b"\x01" + tensors[n]["init"][1:])


def bytes_in(dev, p, t):
    e, lay = ELEM[t["dtype"]], t["layout"]
    return gather(dev.d2h(p, lay.elems * e), lay, e)


# ---------------------------------------------------------------------------------------------
# check: the reference, outside the sanitized process (torch, CPU, fp64)

def from_bytes(torch, data, dtype, shape):
    dt = {"bf16": (torch.int16, torch.bfloat16), "fp16": (torch.int16, torch.float16),
          "fp32": (torch.int32, torch.float32), "i32": (torch.int32, torch.int32)}[dtype]
    t = torch.frombuffer(bytearray(data), dtype=dt[0]).view(dt[1]) if data else torch.zeros(0, dtype=dt[1])
    return t.reshape(shape).clone()


def to_bytes(torch, x, dtype):
    """x's elements in dtype, row-major, as bytes (--fake only: no numpy needed)."""
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32, "i32": torch.int32}[dtype]
    return bytes(x.detach().to(dt).contiguous().reshape(-1).view(torch.uint8).tolist())


def attention(torch, q, k, v, scale, causal):
    """fp64 attention with grouped-query heads (head h reads K/V head h // (H / HKV)) and, causal,
    keys after the query masked: O and the natural-log LSE, as bench/harness.py's attn_ref."""
    H, HKV, N = q.shape[1], k.shape[1], q.shape[2]
    kk, vv = k.repeat_interleave(H // HKV, 1), v.repeat_interleave(H // HKV, 1)
    s = torch.einsum("bhnd,bhmd->bhnm", q, kk) * scale
    if causal:
        s = s.masked_fill(torch.ones(N, N, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1) @ vv, torch.logsumexp(s, dim=-1)


def reference(variant, t, outs, dims, scalars, chained=False):
    """({output: expected tensor}, {output: ("elem" | "norm", tol)}) for a case. t: the inputs;
    outs: the kernel's outputs (a later kernel's reference starts from what an earlier one wrote;
    chained=True: from the reference instead, for --fake)."""
    import torch
    features = _bench("features")
    hp = features.hp
    tk = VARIANTS[variant]["tk"]
    causal = bool(VARIANTS[variant].get("defines", {}).get("CAUSAL", 0))
    if tk == "gemm.tk":
        a = hp(t["A"])
        return {"C": (a.T if variant == "gemm_tn" else a) @ hp(t["B"])}, {"C": ("elem", 1e-2)}
    if tk == "attn_fwd.tk":
        o, l = attention(torch, hp(t["Q"]), hp(t["K"]), hp(t["V"]), scalars["scale"], causal)
        return {"O": o, "L": l}, {"O": ("elem", 2e-2), "L": ("elem", 1e-3)}
    if tk == "attn_bwd.tk":
        q, k, v = (hp(t[n]).requires_grad_() for n in ("Q", "K", "V"))
        do = hp(t["dO"])
        o, l = attention(torch, q, k, v, scalars["scale"], causal)
        dq, dk, dv = torch.autograd.grad(o, (q, k, v), do)
        o_k = o.detach() if chained else hp(outs["O"])  # attn_bwd_prep reads the forward's O
        ref = {"O": o.detach(), "L": l.detach(), "Dl": (o_k.bfloat16().double() * do).sum(-1), "dQ": dq, "dK": dk,
               "dV": dv}
        return ref, {"O": ("elem", 2e-2), "L": ("elem", 1e-3), "Dl": ("elem", 1e-3), "dQ": ("norm", 2e-2),
                     "dK": ("norm", 2e-2), "dV": ("norm", 2e-2)}
    if tk == "layernorm.tk":
        return features.ref_layernorm(scalars["p"], scalars["seed"])(t, dims), {"Y": ("elem", 1e-2), "S": ("elem", 1e-2)}
    if tk == "rmsnorm.tk":
        return features.ref_rmsnorm(t, dims), {"Y": ("elem", 1e-2), "S": ("elem", 1e-2)}
    if tk == "softmax.tk":
        return features.ref_softmax(t, dims), {"Y": ("elem", 1e-2)}
    if tk == "rotary.tk" and "Q" in t:
        oq, ok = (features.ref_rotary({"X": t[x], "Cos": t["Cos"], "Sin": t["Sin"]}, dims)["O"] for x in ("Q", "K"))
        return {"OQ": oq, "OK": ok}, {"OQ": ("elem", 1e-2), "OK": ("elem", 1e-2)}
    if tk == "rotary.tk":
        return features.ref_rotary(t, dims), {"O": ("elem", 1e-2)}
    if tk == "linear.tk" and variant == "linear_decode_direct":
        y = torch.nn.functional.silu(hp(t["X"]) @ hp(t["W"]).T + hp(t["bias"]))
        return {"Yt": y.T}, {"Yt": ("elem", 1e-2)}
    if tk == "linear.tk" and variant == "linear_decode":
        return {"Pt": (hp(t["X"]) @ hp(t["W"]).T).T}, {"Pt": ("elem", 1e-2)}
    if tk == "linear.tk":
        y = hp(t["X"]) @ hp(t["W"]).T
        if "bias" in t:
            y = y + hp(t["bias"])
            act = int(VARIANTS[variant].get("defines", {}).get("ACT", 0))
            if act == 1:
                y = torch.relu(y)
            elif act == 2:
                y = torch.nn.functional.gelu(y, approximate="tanh")
            elif act == 3:
                y = torch.nn.functional.silu(y)
        return {"Y": y}, {"Y": ("elem", 1e-2)}
    if tk == "linear_attn.tk":
        q, k, v = hp(t["Q"]), hp(t["K"]), hp(t["V"])
        T = q.shape[2]
        i = torch.arange(T, dtype=torch.float64)
        dist = i[:, None] - i[None, :]
        if VARIANTS[variant].get("defines", {}).get("DECAY", 0):
            s = hp(t["Slope"]).view(1, -1, 1, 1)
            m = torch.where(dist >= 0, torch.exp(-s * dist.clamp(min=0)), torch.zeros((), dtype=torch.float64))
        else:
            m = (dist >= 0).double()
        o = scalars["scale"] * ((q @ k.transpose(-1, -2)) * m) @ v
        return {"O": o}, {"O": ("norm", 1e-2)}
    if tk == "hedgehog.tk":  # bench/hedgehog.py's formula with the maps' two halves as given
        q, k, v, wq, wk = hp(t["Q"]), hp(t["K"]), hp(t["V"]), hp(t["Wq"]), hp(t["Wk"])
        al, be = hp(t["Alpha"]).view(1, -1, 1, 1), hp(t["Beta"]).view(1, -1, 1, 1)
        T, C = q.shape[2], 64

        def phi(x, w):
            o = torch.einsum("bhtd,hdf->bhtf", x, w)
            return torch.cat([torch.softmax(o[..., :64], -1), torch.softmax(o[..., 64:], -1)], -1)
        fq, fk = phi(q, wq), phi(k, wk)
        i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
        win = (j <= i) & (j // C >= i // C - 1)
        lin = j // C < i // C - 1
        s = q @ k.transpose(-1, -2)
        m = s.masked_fill(~win, float("-inf")).amax(-1, keepdim=True)
        a = torch.where(win, be * torch.exp((s - m) / 128 ** 0.5), torch.zeros((), dtype=torch.float64))
        a = a + torch.where(lin, al * (fq @ fk.transpose(-1, -2)), torch.zeros((), dtype=torch.float64))
        last = (-(-T // C) - 1) * C
        return ({"O": (a @ v) / a.sum(-1, keepdim=True), "KV": fk[:, :, :last].transpose(-1, -2) @ v[:, :, :last],
                 "KS": fk[:, :, :last].sum(2)}, {"O": ("norm", 1e-2), "KV": ("norm", 1e-2), "KS": ("norm", 1e-2)})
    if tk == "based.tk":  # O = (A v) / (A 1), Z = A 1, A = tril(1 + s + s^2 / 2), s = q k^T / 4 (bench/based.py)
        q, k, v = hp(t["Q"]), hp(t["K"]), hp(t["V"])
        s = q @ k.transpose(-1, -2) / 4
        A = (1 + s + 0.5 * s * s).tril()
        z = A.sum(-1)
        return {"O": (A @ v) / z[..., None], "Z": z}, {"O": ("norm", 1e-2), "Z": ("elem", 1e-2)}
    if tk == "mamba2.tk":  # Y = ((C B^T) o L) X per (b, h), L[t, s] = exp(cs_t - cs_s) for s <= t (bench/mamba2.py)
        X, Aa, Cm, Bm = hp(t["X"]), hp(t["Aa"]), hp(t["Cm"]), hp(t["Bm"])
        B, H, T, _ = X.shape
        m = torch.ones(T, T, dtype=torch.bool).tril()
        y = torch.empty(X.shape, dtype=torch.float64)
        for b in range(B):
            cb = Cm[b] @ Bm[b].T
            for h in range(H):
                cs = Aa[b, h].cumsum(0)
                y[b, h] = (cb * torch.where(m, torch.exp((cs[:, None] - cs[None, :]).masked_fill(~m, 0)), 0)) @ X[b, h]
        return {"Y": y}, {"Y": ("norm", 1e-2)}
    if tk == "fftconv.tk":  # the tile algebra of kernels.tk/fftconv.tk on the inputs as given, in complex128:
        # batch elements 2p and 2p + 1 as one signal z = x_a + i t x_b, t = 2^k per channel (k as the kernel
        # picks it from the channels' norms), y_a = Re Y(z), y_b = Im Y(z) / t (exact for the real DFT
        # constants; with random ones Y of a real tile is complex and the pair's parts mix, as in the kernel)
        def cplx(x):  # [..., 2, R, C] real and imaginary parts
            return torch.complex(x.select(-3, 0), x.select(-3, 1))
        f1, f2, tw, kf = (cplx(hp(t[n])) for n in ("F1", "F2", "Tw", "Kf"))
        x = hp(t["U"])                                        # [B, DG, 64, 64]
        h = int(VARIANTS[variant].get("defines", {}).get("NN", 1024)) // 64

        def norms2(u):                                        # per channel, clamped as the kernel clamps
            return (u * u).reshape(u.shape[0], 64 // h, h * 64).sum(-1).clamp(1e-36, 1e38)

        y = torch.empty_like(x)
        for a in range(0, x.shape[0], 2):
            xa = x[a]
            xb = x[a + 1] if a + 1 < x.shape[0] else torch.zeros_like(xa)
            k = (0.5 * torch.log2(norms2(xa) / norms2(xb))).clamp(-60, 60).round()
            tt = torch.exp2(k).repeat_interleave(h, dim=1)[..., None]   # [DG, 64, 1]: the row's channel's t
            z = xa.to(torch.complex128) + 1j * (tt * xb)
            w = (f2.conj() @ ((f2 @ ((z.transpose(-1, -2) @ f1) * tw)) * kf)) * tw.conj()
            yz = f1.conj() @ w.transpose(-1, -2)
            y[a] = yz.real
            if a + 1 < x.shape[0]:
                y[a + 1] = yz.imag / tt
        return {"Y": y}, {"Y": ("norm", 1e-2)}
    raise ValueError(f"no reference for {variant}")


def compare(torch, o, r, how):
    """(error, ok, note): elementwise |o - r| / (|r| + rms(r)) (bench/features.py's measure) or the
    normwise relative error (bench/attn_bwd.py's), against the tolerance."""
    kind, tol = how
    o, r = o.double(), r.double()
    nan = int(torch.isnan(o).sum().item())
    if kind == "norm":
        e = ((o.nan_to_num(0) - r).norm() / max(r.norm().item(), 1e-30)).item()
    else:
        scale = r.pow(2).mean().sqrt().item() if r.numel() else 1.0
        rel = ((o - r).abs() / (r.abs() + max(scale, 1e-30))).nan_to_num(float("inf"))
        e = float(rel.max().item()) if rel.numel() else 0.0
    notes = []
    if nan:
        notes.append(f"{nan} NaN (unwritten?)")
    if e > tol:
        notes.append(f"error {e:.3g} > {tol:g}")
    return e, not notes, "; ".join(notes)


def check_dir(lib_dir, variant, d):
    import torch
    torch.set_num_threads(max(1, min(8, os.cpu_count() or 1)))
    spec = VARIANTS[variant]
    worst, notes, ok = None, [], True
    lj = os.path.join(d, "launch.json")
    launch_err = json.load(open(lj)).get("error") if os.path.exists(lj) else None
    for ci in range(len(spec["cases"])):
        p = os.path.join(d, f"case{ci}.json")
        if not os.path.exists(p):
            ok = False
            notes.append(f"case {ci}: no results ({launch_err or 'the launch process died before it'})")
            continue
        with open(p) as f:
            man = json.load(f)
        tag = f"case {ci} ({man['label']})"
        if not man.get("launched"):
            ok = False
            notes.append(f"{tag}: not launched: steps {man['steps']}, sync {man.get('sync')}; {'; '.join(man['notes'])}")
            continue
        for n in man["notes"]:
            ok = False
            notes.append(f"{tag}: {n}")

        def load(name, key):
            t = man["tensors"][name]
            with open(os.path.join(d, t[key]), "rb") as f:
                return from_bytes(torch, f.read(), t["dtype"], t["shape"])
        t_in = {n: load(n, "input") for n, t in man["tensors"].items() if t.get("input")}
        outs = {n: load(n, "output") for n, t in man["tensors"].items() if t.get("output")}
        ref, tols = reference(variant, t_in, outs, man["dims"], man["scalars"])
        for name, o in outs.items():
            if name not in ref:
                continue
            e, good, note = compare(torch, o, ref[name], tols[name])
            worst = e if worst is None else max(worst, e)
            if not good:
                ok = False
                notes.append(f"{tag}: {name}: {note}")
    return dict(ok=ok, cases=len(spec["cases"]), max_err=worst, notes=notes)


def check(args):
    res = check_dir(args.lib, args.variant, args.dir)
    with open(os.path.join(args.dir, "check.json"), "w") as f:
        json.dump(res, f, indent=1)
    print("CHECK " + json.dumps(res), flush=True)
    return 0 if res["ok"] else 1


# ---------------------------------------------------------------------------------------------
# run: every (variant, tool) under compute-sanitizer, then its check

def find_sanitizer(arg):
    """The compute-sanitizer command (a list): --sanitizer, else $COMPUTE_SANITIZER, else PATH,
    else /usr/local/cuda/bin; None if the one named does not exist."""
    given = arg or os.environ.get("COMPUTE_SANITIZER")
    if given:
        cmd = shlex.split(given)
        return cmd if cmd and (shutil.which(cmd[0]) or os.path.exists(cmd[0])) else None
    for c in (shutil.which("compute-sanitizer"), "/usr/local/cuda/bin/compute-sanitizer"):
        if c and os.path.exists(c):
            return [c]
    return None


def sanitizer_options(san):
    """The options this compute-sanitizer has (from its --help): the kernel filter, --padding."""
    try:
        r = subprocess.run(san + ["--help"], capture_output=True, text=True, timeout=120)
        text = r.stdout + r.stderr
    except (OSError, subprocess.TimeoutExpired) as ex:
        text = f"({ex})"
    opts = {"filter": [], "padding": [], "print_limit": [], "version": ""}
    if "--kernel-name" in text:
        opts["filter"] = ["--kernel-name", KERNEL_FILTER]
    elif "--filter" in text:
        opts["filter"] = ["--filter", KERNEL_FILTER]
    opts["print_limit"] = ["--print-limit", "100"] if "--print-limit" in text else []
    if "--padding" in text:
        opts["padding"] = ["--padding", "4096"]
    try:
        r = subprocess.run(san + ["--version"], capture_output=True, text=True, timeout=60)
        lines = [l.strip() for l in (r.stdout + r.stderr).splitlines() if l.strip()]
        opts["version"] = next((l for l in lines if "Version" in l), lines[0] if lines else "")[:120]
    except (OSError, subprocess.TimeoutExpired):
        pass
    return opts


SUMMARY = re.compile(r"ERROR SUMMARY:\s*(\d+)\s+errors?")
RACE = re.compile(r"RACECHECK SUMMARY:\s*(\d+)\s+hazards?\s+displayed\s*\((\d+)\s+errors?,\s*(\d+)\s+warnings?\)")
NOT_FINDINGS = ("COMPUTE-SANITIZER", "ERROR SUMMARY", "RACECHECK SUMMARY", "at ", "by ", "and ", "Address",
                "Saved host backtrace", "Host Frame", "Device Frame")


def parse_log(text):
    """(errors, hazards, first finding): errors from ERROR SUMMARY, or for racecheck, which may end
    with its own summary alone, the errors of its RACECHECK SUMMARY (None: no summary, the tool did
    not finish); hazards: racecheck's errors + warnings (None without its summary)."""
    m = SUMMARY.findall(text)
    errors = sum(int(x) for x in m) if m else None
    rc = RACE.findall(text)
    hazards = sum(int(e) + int(w) for _, e, w in rc) if rc else None
    if errors is None and rc:
        errors = sum(int(e) for _, e, _ in rc)
    first = ""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not line.startswith("========="):
            continue
        s = line.strip("= \t")
        if not s or s.startswith(NOT_FINDINGS):
            continue
        where = ""
        for nxt in lines[i + 1:i + 4]:
            n = nxt.strip("= \t")
            if n.startswith("at "):
                where = " " + n[:90]
                break
        first = (s + where)[:160]
        break
    return errors, hazards, first


def run_job(args, san, opts, variant, tool):
    d = os.path.join(args.out, variant, tool)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    log = os.path.join(d, "sanitizer.log")
    cmd = san + ["--tool", tool, "--error-exitcode", str(ERROR_EXITCODE), "--log-file", log]
    cmd += opts["print_limit"] + opts["filter"]
    if tool == "racecheck":
        cmd += ["--racecheck-report", "all"]
    if tool == "memcheck":
        cmd += opts["padding"]
    cmd += [sys.executable, "-u", os.path.abspath(__file__), "launch", "--lib", args.lib, "--variant", variant,
            "--dir", d, "--tool", tool] + (["--fake"] if args.fake else [])
    row = dict(variant=variant, tool=tool, errors=None, hazards=None, first="", check="-", max_err=None, status="FAIL")
    t0 = time.time()
    with open(os.path.join(d, "launch.out"), "w") as out:
        out.write(" ".join(shlex.quote(c) for c in cmd) + "\n")
        out.flush()
        try:
            p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as ex:
            row.update(seconds=0.0, why=f"cannot run {cmd[0]}: {ex}")
            return row
        try:
            rc = p.wait(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)  # the sanitizer and the process it watches
            p.wait()
            rc = None
    row["seconds"] = round(time.time() - t0, 1)
    text = open(log, errors="replace").read() if os.path.exists(log) else ""
    row["errors"], row["hazards"], row["first"] = parse_log(text)
    why = []
    if rc is None:
        why.append(f"timed out after {args.timeout}s")
    if row["errors"] is None:
        why.append("no summary in the log (the tool did not finish)")
    elif row["errors"]:
        why.append(f"{row['errors']} error{'' if row['errors'] == 1 else 's'}")
    if row["hazards"]:
        why.append(f"{row['hazards']} racecheck hazards")
    if rc not in (0, None) and not row["errors"]:
        why.append(f"exit status {rc}" + (" (a launch failed: see launch.out)" if rc == 3 else ""))
    if rc is not None:
        ck = subprocess.run([sys.executable, "-u", os.path.abspath(__file__), "check", "--lib", args.lib, "--variant",
                             variant, "--dir", d], capture_output=True, text=True, timeout=args.timeout)
        res = None
        for line in ck.stdout.splitlines():
            if line.startswith("CHECK "):
                res = json.loads(line[6:])
        if res is None:
            tail = [l for l in (ck.stdout + ck.stderr).splitlines() if l.strip()][-1:]
            row["check"] = "error"
            why.append("check failed to run: " + (tail[0][:150] if tail else f"exit {ck.returncode}"))
        else:
            row["max_err"] = res["max_err"]
            row["check"] = f"{res['cases']}/{res['cases']} ok" if res["ok"] else "FAIL"
            if not res["ok"]:
                why.append("check: " + "; ".join(res["notes"])[:300])
    row["why"] = "; ".join(why)
    row["status"] = "clean" if not why else "FAIL"
    return row


def fmt_row(r):
    err = "-" if r["errors"] is None else str(r["errors"])
    if r["tool"] == "racecheck":
        err += "/" + ("-" if r["hazards"] is None else str(r["hazards"]))
    me = "-" if r["max_err"] is None else f"{r['max_err']:.1e}"
    s = f"{r['variant']:20s} {r['tool']:9s} {err:>7s} {r['check']:>8s} {me:>8s} {r['seconds']:7.1f}s  {r['status']}"
    if r["why"]:
        s += "  " + r["why"][:200]
    if r["first"] and r["status"] != "clean":
        s += "\n" + " " * 22 + "first: " + r["first"]
    return s


HEADER = f"{'variant':20s} {'tool':9s} {'errors':>7s} {'check':>8s} {'max err':>8s} {'time':>8s}  status"


def write_csv(path, r):
    import csv
    cols = _bench("harness").CSV_COLUMNS
    dash = lambda x: "-" if x is None else x
    note = [f"tool={r['tool']}", f"errors={dash(r['errors'])}"]
    note += [f"hazards={dash(r['hazards'])}"] if r["tool"] == "racecheck" else []
    note += [f"check={r['check']}", f"seconds={r['seconds']}"] + ([r["why"]] if r["why"] else [])
    out = dict(suite="sanitize", case=r["tool"], variant=r["variant"], status="ok" if r["status"] == "clean" else "FAIL",
               rel_err="" if r["max_err"] is None else f"{r['max_err']:.3g}", note="; ".join(note))
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, restval="")
        if f.tell() == 0:
            w.writeheader()
        w.writerow(out)


def run(args):
    san = find_sanitizer(args.sanitizer)
    if not san:
        print("sanitize.py: no compute-sanitizer (not in PATH, not /usr/local/cuda/bin; set COMPUTE_SANITIZER or --sanitizer)",
              file=sys.stderr)
        return 2
    tools = [t for t in args.tools.split(",") if t]
    bad = [t for t in tools if t not in TOOLS]
    if bad:
        sys.exit(f"sanitize.py: unknown tool(s) {', '.join(bad)}; known: {', '.join(TOOLS)}")
    opts = sanitizer_options(san)
    names = selected(args.only)
    os.makedirs(args.out, exist_ok=True)
    print(f"# {' '.join(san)}: {opts['version'] or '(no --version)'}", flush=True)
    print(f"# kernel filter: {' '.join(opts['filter']) or 'none (this compute-sanitizer has no --kernel-name)'};"
          f" memcheck {' '.join(opts['padding']) or 'without --padding'}", flush=True)
    rows = []
    jobs = []
    for v in names:
        st = os.path.join(args.lib, v + ".build.json")
        b = json.load(open(st)) if os.path.exists(st) else dict(ok=False, msg="not built (run sanitize.py build)")
        if not b["ok"]:
            for t in tools:
                rows.append(dict(variant=v, tool=t, errors=None, hazards=None, first="", check="-", max_err=None,
                                 status="FAIL", seconds=0.0, why="build: " + b["msg"][:200]))
            continue
        jobs += [(v, t) for t in tools]
    lock = threading.Lock()
    print(HEADER, flush=True)
    for r in rows:
        print(fmt_row(r), flush=True)
        if args.csv:
            write_csv(args.csv, r)

    def one(job):
        r = run_job(args, san, opts, *job)
        with lock:
            print(fmt_row(r), flush=True)
            if args.csv:
                write_csv(args.csv, r)
            rows.append(r)
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        list(ex.map(one, jobs))
    order = {(v, t): i for i, (v, t) in enumerate((v, t) for v in names for t in tools)}
    rows.sort(key=lambda r: order.get((r["variant"], r["tool"]), 0))
    print("\n" + HEADER)
    for r in rows:
        print(fmt_row(r))
    bad = [r for r in rows if r["status"] != "clean"]
    print(f"sanitize: {len(rows) - len(bad)} clean, {len(bad)} failed ({len(names)} variants x {len(tools)} tools;"
          f" errors in tkc kernels only: the launch process runs no other kernel)", flush=True)
    return 1 if bad else 0


# ---------------------------------------------------------------------------------------------
# selftest (no GPU): launch --fake + check on every built variant, and the failures check must see

def selftest(args):
    names = selected(args.only)
    failed = 0
    base = args.dir or os.path.join(args.lib, "selftest")
    for v in names:
        for mode, want_ok in (("ok", True), ("wrong", False), ("nan", False), ("padding", False), ("input", False)):
            if mode == "padding" and not any(c.get("strided") for c in VARIANTS[v]["cases"]):
                continue
            d = os.path.join(base, v, mode)
            shutil.rmtree(d, ignore_errors=True)
            la = argparse.Namespace(lib=args.lib, variant=v, dir=d, tool="", fake=mode)
            with open(os.devnull, "w") as devnull:
                old = sys.stdout
                sys.stdout = devnull
                try:
                    rc = launch(la)
                finally:
                    sys.stdout = old
            res = check_dir(args.lib, v, d)
            good = rc == 0 and res["ok"] == want_ok
            failed += not good
            print(f"selftest {v:20s} {mode:8s} launch rc {rc}, check {'ok' if res['ok'] else 'FAIL'}"
                  f" (want {'ok' if want_ok else 'FAIL'}) {'pass' if good else 'WRONG'}"
                  f"{'  ' + res['notes'][0][:150] if res['notes'] else ''}", flush=True)
    print(f"sanitize selftest: {failed} wrong", flush=True)
    return 1 if failed else 0


def fake_sanitizer(argv):
    """A stand-in for compute-sanitizer, to try 'run' without a GPU (run --fake --sanitizer
    "python3 bench/sanitize.py fake-sanitizer"): takes compute-sanitizer's options, runs the
    program, and writes a log with a clean summary, or one error for each variant:tool listed in
    TKC_SANITIZE_FAKE_ERRORS (comma-separated)."""
    if argv[:1] in (["--help"], ["--version"]):
        print("fake compute-sanitizer (bench/sanitize.py): --tool --log-file --error-exitcode --print-limit "
              "--kernel-name --padding --racecheck-report")
        return 0
    takes = {"--tool", "--log-file", "--error-exitcode", "--print-limit", "--kernel-name", "--padding",
             "--racecheck-report"}
    opts, i = {}, 0
    while i < len(argv) and argv[i].startswith("--"):
        if argv[i] not in takes or i + 1 >= len(argv):
            print(f"fake-sanitizer: unknown option {argv[i]}", file=sys.stderr)
            return 2
        opts[argv[i]] = argv[i + 1]
        i += 2
    prog = argv[i:]
    rc = subprocess.call(prog)
    v = prog[prog.index("--variant") + 1] if "--variant" in prog else "?"
    tool = opts.get("--tool", "memcheck")
    bad = int(f"{v}:{tool}" in os.environ.get("TKC_SANITIZE_FAKE_ERRORS", "").split(","))
    lines = ["========= COMPUTE-SANITIZER"]
    if bad:
        lines += ["========= Invalid __global__ read of size 16 bytes (fake)",
                  f"=========     at tkc_{v}_kernel(...)+0x10 in {v}.tk:1", "========="]
    if tool == "racecheck":  # racecheck ends with its own summary
        lines.append(f"========= RACECHECK SUMMARY: {bad} hazard{'' if bad == 1 else 's'} displayed ({bad} "
                     f"error{'' if bad == 1 else 's'}, 0 warnings)")
    else:
        lines.append(f"========= ERROR SUMMARY: {bad} error{'' if bad == 1 else 's'}")
    with open(opts["--log-file"], "w") if "--log-file" in opts else sys.stdout as f:
        f.write("\n".join(lines) + "\n")
    return int(opts.get("--error-exitcode", 1)) if bad else rc


# ---------------------------------------------------------------------------------------------

def main():
    if sys.argv[1:2] == ["fake-sanitizer"]:
        sys.exit(fake_sanitizer(sys.argv[2:]))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--tkc", required=True)
    b.add_argument("--out", required=True)
    b.add_argument("--only", default="")
    b.add_argument("--jobs", type=int, default=0)
    b.add_argument("--timeout", type=int, default=600, help="seconds per tkc or nvcc command")
    r = sub.add_parser("run")
    r.add_argument("--lib", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--only", default="")
    r.add_argument("--tools", default=",".join(TOOLS))
    r.add_argument("--csv", default="")
    r.add_argument("--jobs", type=int, default=4, help="sanitized processes at once")
    r.add_argument("--sanitizer", default="", help="the compute-sanitizer command (default: PATH, /usr/local/cuda/bin)")
    r.add_argument("--timeout", type=int, default=900, help="seconds per (variant, tool)")
    r.add_argument("--fake", action="store_true", help="launch --fake (no GPU; with a stand-in --sanitizer)")
    la = sub.add_parser("launch")
    la.add_argument("--lib", required=True)
    la.add_argument("--variant", required=True)
    la.add_argument("--dir", required=True)
    la.add_argument("--tool", default="")
    la.add_argument("--fake", nargs="?", const="ok", default="", choices=["ok", "wrong", "nan", "padding", "input"])
    c = sub.add_parser("check")
    c.add_argument("--lib", required=True)
    c.add_argument("--variant", required=True)
    c.add_argument("--dir", required=True)
    s = sub.add_parser("selftest")
    s.add_argument("--lib", required=True)
    s.add_argument("--dir", default="")
    s.add_argument("--only", default="")
    args = ap.parse_args()
    if getattr(args, "variant", None) and args.variant not in VARIANTS:
        sys.exit(f"sanitize.py: unknown variant {args.variant}; known: {', '.join(VARIANTS)}")
    sys.exit({"build": build, "run": run, "launch": launch, "check": check, "selftest": selftest}[args.cmd](args))


if __name__ == "__main__":
    main()
