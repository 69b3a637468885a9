#!/usr/bin/env python3
"""GPU feature suite: one small .tk program per back-end construct, checked against PyTorch.

  features.py build --tkc PATH --out DIR [--only NAME,...]   tkc -> .cu (+ report JSON) -> nvcc -> .so, in parallel
  features.py run   --lib DIR [--csv FILE] [--only NAME,...] [--jobs N]
                                                              every case of every feature, one row each
  features.py check --tkc PATH                                 tkc --check on each program (no GPU, no nvcc)
  (bench/run_gpu.sh features drives build and run)

The programs are bench/features/NAME.tk; FEATURES below gives, for each, its inputs (shapes come
from the tensor declarations in tkc's --emit=report JSON and the case's run-time dims), the
outputs to check and a reference of torch tensors. For each case the harness fills every output
with NaN (an inout with known values), surrounds it with guard elements (past its end, and
between rows in the strided case) that hold a sentinel, launches through ctypes (argtypes from
the report's launcher description), and compares every element with the reference: bf16 outputs
within ~1e-2 relative (|out - ref| <= tol * (|ref| + rms(ref))), fp32 ones within ~1e-3, copies
exactly; it also checks that no guard element changed. The strided case passes views: rows of
2-D and wider tensors padded by 32 bytes (4-D tensors also with dims 1 and 2 swapped in memory,
as [B, N, H, D]) and 1-D tensors that TMA does not move with stride 2.

Each feature runs in its own subprocess (a bad kernel can poison the CUDA context); a case that
raises, crashes or hangs (per-case timeout) is a FAIL row and the remaining cases run in a fresh
process. A program that tkc rejects or nvcc cannot compile is one FAIL row ("tkc rejected: <first
error line>", "nvcc failed: ..."). Exit status 1 if any row fails.
"""
import argparse
import csv
import ctypes
import json
import os
import queue
import subprocess
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "features")
NVCC = ["nvcc", "-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-Xcompiler", "-fPIC", "-shared",
        "-Xptxas", "-v"]


def cdiv(a, b):
    return (a + b - 1) // b


# TKC_FEATURES_FAKE=1 (a self-test of this harness without a GPU or a working back end): the
# device is the CPU, the launcher description comes from parsing the .tk's kernel header
# (fake_launcher), and instead of launching, the reference is written into the outputs. To see
# failures reported: 2 one wrong element per output, 3 a guard element written, 4 the process
# dies in the second case, 5 it hangs there, 6 it raises there. 7 calls the real launchers (from
# a build) on host memory: without a GPU they return TKC_ERR_TENSOR_MAP or TKC_ERR_LAUNCH once
# every argument check has passed, so any other code means the harness passed something wrong.
FAKE = int(os.environ.get("TKC_FEATURES_FAKE", "0") or 0)
DEV = "cpu" if FAKE else "cuda"


# ---------------------------------------------------------------------------------------------
# the table: name -> program, cases, inputs, reference
#
#   tk        the program under bench/features/ (default NAME.tk); defines: -D overrides
#   what      the construct it checks (printed by 'check')
#   cases     run-time dims of each case; 'derive' adds dims computed from them
#   strided   the dims of cases to run again with strided views (all tensors)
#   inputs    name -> generator(torch, gen, shape, dtype, dims) for inputs and inouts; default randn
#   scalars   name -> value
#   ref       function(t, d) -> {output: tensor}; t holds the inputs and the inouts' initial values
#             (in their dtypes, contiguous), d the dims; computed in fp64 (hp)
#   tol       output -> tolerance (0 = exact); default 1e-2 for 16-bit outputs, 1e-3 for fp32
#   skip      output names not to compare (still guard-checked)
# ---------------------------------------------------------------------------------------------

def ref_colpick(t, d):
    """bench/features/colpick.tk: column picks of P = A @ B and one real row sum, broadcast over the columns."""
    p = hp(t["A"]) @ hp(t["B"])
    r = p.amax(dim=1)
    y = p[:, 0] + 2 * p[:, 5] + 3 * p[:, 63] + 4 * p[:, 127] + (p[:, 7] + 127 * r)
    return {"O": y[:, None].expand(-1, 128).contiguous()}


def ref_entry(t, d):
    """bench/features/entry.tk: Y = bf16(X @ W^T) and T = (X @ W^T)^T in fp32."""
    p = hp(t["X"]) @ hp(t["W"]).T
    return {"Y": p, "T": p.T.contiguous()}


def ref_epilogue(alpha, beta):
    """bench/features/epilogue.tk: Y = alpha * gelu_erf(X @ W^T + bias) + beta * R."""
    def ref(t, d):
        import torch
        z = hp(t["X"]) @ hp(t["W"]).T + hp(t["bias"])[None, :]
        return {"Y": alpha * (0.5 * z * (1 + torch.erf(z / 2 ** 0.5))) + beta * hp(t["R"])}
    return ref


def hp(x):
    """The references compute in fp64 (no TF32, no accumulation-order noise to speak of)."""
    return x.double()


def bf(x):
    """Rounds to bf16 and back: what the kernel computes when it writes bf16(...) to shared memory."""
    return x.bfloat16().double()


def ref_rowsoftmax(t, d):
    s = hp(t["A"]) @ hp(t["B"])
    M = s.shape[0]
    r = (s.new_tensor(range(M)).long() % 128)[:, None]
    c = s.new_tensor(range(64)).long()[None, :]
    s = s.masked_fill(c - r > 0, float("-inf"))
    mx = s.max(dim=1, keepdim=True).values
    e = (s - mx).exp()
    l = e.sum(dim=1, keepdim=True)
    return {"P": e / l, "L": (mx + l.log())[:, 0], "R": e[:, 32:].sum(dim=1)}


def ref_move_rs(t, d):
    s = bf(hp(t["A"]) @ hp(t["W1"]))
    return {"Y": s @ hp(t["W2"]), "Z": blockwise_left(hp(t["A"]), s, 64), "R": s}


def ref_relayout(t, d):
    """Per 64-row block of X (zero-padded past the end): its transpose, its column 5, its row 3."""
    x = hp(t["X"])
    M = x.shape[0]
    nb = cdiv(M, 64)
    xp = x.new_zeros(nb * 64, 64)
    xp[:M] = x
    blk = xp.view(nb, 64, 64)
    row3 = blk[:, 3:4, :]                                   # [nb, 1, 64]
    tr = blk.transpose(1, 2).reshape(nb * 64, 64)[:M]
    return {"C": tr, "D": tr, "V": x[:, 5] + 1, "W": (blk + row3).reshape(nb * 64, 64)[:M],
            "U": row3.reshape(nb, 64).reshape(nb * 64)[:M]}


def torch_arange_like(x, n):
    return x.new_tensor(list(range(n)))


def ref_cumsum(rows):
    """Per block of `rows` rows of X (zero-padded past the end): V = cumsum of X_b[:, 5] down the block,
    W = X_b + cumsum of X_b[3, :] along the columns; U[64 b + r, :] = 1 + 64 (r + 1) (a per_wg scan)."""
    def ref(t, d):
        x = hp(t["X"])
        M = x.shape[0]
        nb = cdiv(M, rows)
        xp = x.new_zeros(nb * rows, 64)
        xp[:M] = x
        blk = xp.view(nb, rows, 64)
        v = blk[:, :, 5].cumsum(dim=1).reshape(nb * rows)[:M]
        w = (blk + blk[:, 3:4, :].cumsum(dim=2)).reshape(nb * rows, 64)[:M]
        r = torch_arange_like(x, 64)
        u = (1 + 64 * (r + 1))[None, :, None].expand(nb, 64, 64).reshape(nb * 64, 64)
        return {"V": v, "W": w, "U": u}
    return ref


def ref_load_if(t, d):
    """C = sum over even k of A[:, 64k:64k+64] @ B[64k:64k+64, :] (zero past the ends)."""
    a, b = hp(t["A"]), hp(t["B"])
    K = a.shape[1]
    c = a.new_zeros(a.shape[0], b.shape[1])
    for k in range(0, cdiv(K, 64), 2):
        c += a[:, 64 * k:64 * k + 64] @ b[64 * k:64 * k + 64]
    return {"C": c}


def ref_col_slice(t, d):
    """Per 128-row block: W = X_b + t (t = colsum with its first half replaced by the second),
    V = rowsum(X_b), doubled on the block's rows 64..127."""
    x = hp(t["X"])
    M = x.shape[0]
    nb = cdiv(M, 128)
    xp = x.new_zeros(nb * 128, 64)
    xp[:M] = x
    blk = xp.view(nb, 128, 64)
    s = blk.sum(1)                                          # [nb, 64]
    import torch
    s = torch.cat([s[:, 32:], s[:, 32:]], 1)
    r = blk.sum(2)                                          # [nb, 128]
    r[:, 64:] *= 2
    return {"W": (blk + s[:, None, :]).reshape(nb * 128, 64)[:M], "V": r.reshape(nb * 128)[:M]}


def ref_slice_t(t):
    """Per 64-row block b (zero-padded past the end): S_b = T_b = Q_b @ K_b[32:64].T."""
    q, k = hp(t["Q"]), hp(t["K"])
    M = q.shape[0]
    out = q.new_zeros(M, 32)
    for r0 in range(0, M, 64):
        kb = k.new_zeros(64, k.shape[1])
        kb[: min(64, M - r0)] = k[r0:r0 + 64]
        out[r0:r0 + 64] = q[r0:r0 + 64] @ kb[32:64].T
    return {"S": out, "T": out}


def blockwise_left(a, s, bm):
    """Per block of bm rows (zero-padded past the end): a's block times s's block (z = a @ sh)."""
    out = s.new_zeros(s.shape)
    M = s.shape[0]
    for r0 in range(0, M, bm):
        r1 = min(r0 + bm, M)
        ab = a.new_zeros(bm, a.shape[1])
        ab[: r1 - r0] = a[r0:r1]
        sb = s.new_zeros(bm, s.shape[1])
        sb[: r1 - r0] = s[r0:r1]
        out[r0:r1] = (ab @ sb)[: r1 - r0]
    return out


def ref_move_rs_2wg(t, d):
    s = bf(hp(t["A"]) @ hp(t["W"]))
    M = s.shape[0]
    g = hp(t["G"])
    z = s.new_zeros(s.shape)
    for r0 in range(0, M, 128):
        r1 = min(r0 + 128, M)
        sb = s.new_zeros(128, 64)
        sb[: r1 - r0] = s[r0:r1]
        z[r0:r1] = (g @ sb)[: r1 - r0]
    return {"Z": z, "R": s}


def ref_store_block(t, d):
    o = hp(t["A"]) @ hp(t["W"])
    M, N = o.shape
    r = o.new_zeros(d["NB"], M)
    for j in range(cdiv(N, 64)):
        r[j] = o[:, 64 * j:64 * j + 64].sum(dim=1)
    return {"O": o, "O32": o, "R": r}


def ref_shared_store(t, d):
    x = hp(t["X"])
    M, N = x.shape
    s = x.new_zeros(M, 64)
    for j in range(cdiv(N, 64)):
        c = x[:, 64 * j:64 * j + 64]
        s[:, :c.shape[1]] += c
    return {"O": x, "S": s}


def ref_shared_reduce(t, d):
    x = hp(t["X"])
    M, N = x.shape
    g = hp(t["G"]).clone()
    for j in range(cdiv(N, 64)):
        c = x[:, 64 * j:64 * j + 64]
        g[:, :c.shape[1]] += c
    return {"G": g}


def ref_vec_load_shared(t, d):
    acc = hp(t["A"]) @ hp(t["B"])
    kv = hp(t["Kv"])
    K = kv.shape[0]
    tot = kv.new_zeros(64)
    for k in range(cdiv(K, 64)):
        c = kv[64 * k:64 * k + 64]
        tot[:c.shape[0]] += c
    return {"O": acc * hp(t["X"])[:, None], "P": tot[None, :].expand(acc.shape[0], 64)}


def ref_col_reduce(bm):
    def ref(t, d):
        s = hp(t["A"]) @ hp(t["B"])
        M = s.shape[0]
        nb = cdiv(M, bm)
        cs, cx, cn = (s.new_zeros(d["MB"], 64) for _ in range(3))
        o = s.new_zeros(s.shape)
        for b in range(nb):
            blk = s[b * bm:(b + 1) * bm]
            cs[b] = blk.sum(dim=0)
            cx[b] = blk.max(dim=0).values
            cn[b] = blk.min(dim=0).values
            o[b * bm:(b + 1) * bm] = blk - cx[b]
        return {"CS": cs, "CX": cx, "CN": cn, "O": o}
    return ref


def ref_nopipe_iota(t, d):
    import torch
    M = d["M"]
    i = torch.arange(M, device=DEV).float()[:, None]
    c = torch.arange(64, device=DEV).float()[None, :]
    return {"O": (i % 64) - c + 0.5 * torch.div(i, 64, rounding_mode="floor")}


def ref_atomic_reg(t, d):
    p = hp(t["A"]) @ hp(t["B"])
    return {"G": p, "H": hp(t["H"]) + p, "V": p.sum(dim=1)}


def ref_no_pipeline_prep(t, d, s):
    a0 = hp(t["A"])[0, 0]
    M = t["A"].shape[0]
    x = a0 * hp(t["A"]).new_tensor(range(M))[:, None] + s * hp(t["A"]).new_tensor(range(64))[None, :]
    return {"C": x, "R": x.sum(dim=1)}


def ref_zeroed_view(t):
    p = hp(t["A"]) @ hp(t["B"])
    c = p.new_zeros(p.shape[0], 128)
    c[:, :64] = p
    return c


def ref_zeroed(t, d):
    p = hp(t["A"]) @ hp(t["B"])
    M = p.shape[0]
    for b in range(1, cdiv(M, 64), 2):
        p[64 * b:64 * b + 64] = 0
    return {"O": p}


def ref_rotary(t, d):
    x = hp(t["X"])
    D = x.shape[-1]  # rotate-half: out = [x1 cos - x2 sin, x2 cos + x1 sin]
    x1, x2 = x[..., :D // 2], x[..., D // 2:]
    c, s = hp(t["Cos"]), hp(t["Sin"])  # [N, D/2], broadcast over B, H
    import torch
    return {"O": torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)}


def rotary_feature(what, ns=(64, 100, 333), large=(), **kw):
    """a rotary feature: B = 2, H = 3, N in ns (and the large cases), one strided case, the tables, ref_rotary"""
    return dict(what=what, cases=[dict(B=2, H=3, N=n) for n in ns] + list(large), strided=[dict(B=2, H=3, N=333)],
                inputs={"Cos": gen_cos, "Sin": gen_sin}, ref=ref_rotary, **kw)


def ref_linear_attn(t, d):
    """o_i = sum_{j <= i} exp(-s_h (i - j)) (q_i . k_j) v_j, s_h = 2^(-8 (h + 1) / H), in fp64."""
    import torch
    q, k, v = (t[n].double() for n in ("Q", "K", "V"))
    B, H, N, D = q.shape
    i = torch.arange(N, device=q.device, dtype=torch.float64)
    diff = i[:, None] - i[None, :]
    o = torch.empty_like(q)
    for h in range(H):
        sl = 2.0 ** (-8.0 * (h + 1) / H)
        m = torch.where(diff >= 0, torch.exp(-sl * diff.clamp(min=0)), torch.zeros_like(diff))
        o[:, h] = ((q[:, h] @ k[:, h].transpose(-1, -2)) * m) @ v[:, h]
    return {"O": o}


def ref_pp_colred(t, d):
    """s = Q K^T; CS[b] = colsum of s over the 128 rows of query block b; O = bf16(s) @ V."""
    import torch
    s = hp(t["Q"]) @ hp(t["K"]).transpose(0, 1)
    N, M = s.shape
    cs = s.new_zeros(d["NB"], M)
    for b in range(cdiv(N, 128)):
        cs[b] = s[b * 128:(b + 1) * 128].sum(dim=0)
    o = s.float().to(torch.bfloat16).double() @ hp(t["V"])
    return {"CS": cs, "O": o}


def _philox_ref():
    import importlib.util
    spec = importlib.util.spec_from_file_location("philox_ref", os.path.join(HERE, "philox_ref.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def ref_rmsnorm(t, d):
    """kernels.tk/rmsnorm.tk: S = X + R, Y = S rsqrt(mean(S^2) + 1e-6) W."""
    s = hp(t["X"]) + hp(t["R"])
    y = s * (s.pow(2).mean(dim=1, keepdim=True) + 1e-6).rsqrt() * hp(t["W"])[None, :]
    return {"S": s, "Y": y}


def ref_keep_acc(p, seed):
    """bench/features/keep_acc.tk: keep() + 2 rand() of the flat index 64 i + c + 5."""
    def ref(t, d):
        pr = _philox_ref()
        n = d["M"] * 64 + 5
        k = pr.keep(seed, p, (n,), device=DEV)[5:].reshape(d["M"], 64)
        u = pr.uniform(seed, (n,), device=DEV)[5:].reshape(d["M"], 64)
        return {"O": (k.float() + 2.0 * u.float()).double()}   # one fp32 rounding, as the kernel
    return ref


def ref_keep_rows(p, seed, off):
    """bench/features/keep_rows.tk: where(keep(), X, 0) + rand() of the flat index off + 256 i + c."""
    def ref(t, d):
        pr = _philox_ref()
        n = d["M"] * 256 + off
        k = pr.keep(seed, p, (n,), device=DEV)[off:].reshape(d["M"], 256)
        u = pr.uniform(seed, (n,), device=DEV)[off:].reshape(d["M"], 256)
        return {"O": (hp(t["X"]) * k.double() + u.double()).float().double()}
    return ref


def ref_layernorm(p, seed):
    """kernels.tk/layernorm.tk: S = R + dropout(X) (Philox mask of bench/philox_ref.py),
    Y = (S - mean) rsqrt(var + 1e-5) W + B."""
    def ref(t, d):
        x = hp(t["X"])
        if p > 0:
            pr = _philox_ref()
            keep = pr.keep(seed, p, tuple(x.shape), device=x.device)   # layernorm.tk's keep()
            x = x * keep.double() * float(pr.dropout_scale(p))
        s = hp(t["R"]) + x
        mean = s.mean(dim=1, keepdim=True)
        var = (s - mean).pow(2).mean(dim=1, keepdim=True)
        return {"S": s, "Y": (s - mean) * (var + 1e-5).rsqrt() * hp(t["W"])[None, :] + hp(t["B"])[None, :]}
    return ref


def ref_softmax(t, d):
    return {"Y": hp(t["X"]).softmax(dim=1)}


def gen_table(torch, g, shape, dtype, dims):
    """Rotary tables: cos/sin of position x frequency, in [-1, 1]."""
    N, F = shape
    pos = torch.arange(N, device=DEV, dtype=torch.float32)[:, None]
    inv = 10000.0 ** (-torch.arange(F, device=DEV, dtype=torch.float32) / F)[None, :]
    return pos * inv  # angles; the caller takes cos or sin


def gen_cos(torch, g, shape, dtype, dims):
    return gen_table(torch, g, shape, dtype, dims).cos().to(dtype)


def gen_sin(torch, g, shape, dtype, dims):
    return gen_table(torch, g, shape, dtype, dims).sin().to(dtype)


def gen_scaled(scale):
    def gen(torch, g, shape, dtype, dims):
        return (torch.randn(shape, device=DEV, generator=g) * scale).to(dtype)
    return gen


MS = [64, 100, 333]  # row counts: one tile, ragged, several tiles and ragged

FEATURES = {
    # (a) what the back end emits today: validates the harness itself
    "gemm_bf16": dict(
        what="(a) GEMM baseline: TMA ring, wgmma, staged bf16 tile store, 2 consumers",
        cases=[dict(M=64, K=64, N=64), dict(M=100, K=72, N=200), dict(M=333, K=136, N=264)],
        strided=[dict(M=333, K=136, N=264)],
        ref=lambda t, d: {"C": hp(t["A"]) @ hp(t["B"])}),
    "gemm_tn": dict(
        what="(a) C = A^T @ B, A stored [K, M]: the A tile read M-major by wgmma, rows split over 2 consumers",
        cases=[dict(K=64, M=64, N=64), dict(K=72, M=200, N=136), dict(K=136, M=264, N=200)],
        strided=[dict(K=136, M=264, N=200)],
        ref=lambda t, d: {"C": hp(t["A"]).T @ hp(t["B"])}),
    "gemm_batched": dict(
        what="(a) batched C[i] = A[i] @ B[i]: rank-3 tensors, the batch as a grid axis, persistent",
        cases=[dict(Bt=1, M=64, K=64, N=64), dict(Bt=3, M=100, K=72, N=200), dict(Bt=2, M=333, K=136, N=264)],
        strided=[dict(Bt=2, M=333, K=136, N=264)],
        ref=lambda t, d: {"C": hp(t["A"]) @ hp(t["B"])}),
    "rowsoftmax": dict(
        what="(a) rowmax/rowsum, tril and where masks, exp2, per_row vector stores",
        cases=[dict(M=m, K=k) for m, k in ((64, 64), (100, 72), (333, 136))],
        strided=[dict(M=333, K=136)],
        ref=ref_rowsoftmax),
    "block_loads": dict(
        what="(a) per-block loads: a persistent rowwise kernel's per_col and per_row vectors loaded once per block",
        cases=[dict(M=m) for m in (4096, 1000, 333)],
        strided=[dict(M=1000)],
        ref=lambda t, d: {"O": hp(t["X"]) * hp(t["W"])[None, :] + hp(t["U"]).repeat((d["M"] + 3) // 4)[:d["M"], None]}),
    "colpick": dict(
        what="(a) rowsum(where(col == K, x, 0)) as a column pick (one shuffle a row), beside a real row sum",
        cases=[dict(M=m) for m in (128, 100, 333)],
        strided=[dict(M=333)],
        ref=ref_colpick),
    "epilogue": dict(
        what="(a) a linear layer's epilogue in the .tk: bias, GELU (erf form), alpha / beta, a residual, fp32 out",
        cases=[dict(M=m, N=n, K=k) for m, n, k in ((64, 128, 64), (100, 200, 72), (333, 264, 136))],
        strided=[dict(M=333, N=264, K=136)],
        scalars={"alpha": 0.75, "beta": -1.5},
        ref=ref_epilogue(0.75, -1.5)),
    # (g) entries: host launchers that run kernels in order
    "entry": dict(
        what="(g) an entry: two kernels with scratch between them, a run-time let and if, a transposed view",
        cases=[dict(M=m, N=n, K=k) for m, n, k in ((64, 128, 256), (100, 200, 576), (333, 256, 1024))],
        strided=[dict(M=333, N=256, K=1024)],
        scalars={"splits": 0},
        ref=ref_entry),
    "entry_large": dict(
        what="(g) the entry on shapes that fill the GPU: round is launched programmatically after partial in both "
             "branches (src/pass_pdl.c), so its blocks start while partial's last ones run and must wait for P",
        tk="entry.tk",
        cases=[dict(M=64, N=8192, K=8192), dict(M=2000, N=4096, K=4096)],
        scalars={"splits": 0},
        ref=ref_entry),
    "entry_split3": dict(
        what="(g) the entry with splits = 3 from the caller (ragged runs of K)",
        tk="entry.tk",
        cases=[dict(M=m, N=n, K=k) for m, n, k in ((64, 128, 256), (333, 256, 1024))],
        scalars={"splits": 3},
        ref=ref_entry),
    "partial": dict(
        what="(g) a partial register tile: K split between two consumer warpgroups, every part added by +=",
        cases=[dict(M=m, N=n, K=k) for m, n, k in ((64, 64, 64), (100, 72, 200), (333, 200, 1000))],
        strided=[dict(M=333, N=200, K=1000)],
        ref=lambda t, d: {"C": hp(t["A"]) @ hp(t["B"])}),
    "wg_halves_tma_add": dict(
        what="(g) column halves of a shared tile written under if (wg == ...), read by a TMA reduce-add every step",
        cases=[dict(M=m, N=n, K=k) for m, n, k in ((64, 128, 64), (100, 200, 136), (333, 264, 1000))],
        strided=[dict(M=333, N=264, K=1000)],
        ref=lambda t, d: {"C": hp(t["A"]) @ hp(t["B"])}),
    "perwg_branch_add": dict(
        what="(g) per_wg tiles that differ by warpgroup (each its half of the columns), added under if (wg == ...)",
        cases=[dict(M=m, N=n, K=k) for m, n, k in ((64, 128, 64), (100, 200, 136), (333, 264, 1000))],
        strided=[dict(M=333, N=264, K=1000)],
        ref=lambda t, d: {"C": hp(t["A"]) @ hp(t["B"])}),
    # (b) moves between shared memory and registers
    "move_sr_bf16": dict(
        what="(b) shared -> registers (bf16 ring tile in compute), register tile stores (exact copy)",
        cases=[dict(M=m, N=n) for m, n in ((64, 64), (100, 72), (333, 200))],
        strided=[dict(M=333, N=200)],
        tol={"O": 0},
        ref=lambda t, d: {"O": hp(t["X"]), "Q": hp(t["X"]) * 2 + 1}),
    "move_sr_bf16_2wg": dict(
        what="(b) shared -> registers and register tile stores with 2 consumers (128-row tiles)",
        tk="move_sr_bf16.tk", defines={"CONSUMERS": 2},
        cases=[dict(M=m, N=n) for m, n in ((128, 64), (100, 72), (333, 200))],
        strided=[dict(M=333, N=200)],
        tol={"O": 0},
        ref=lambda t, d: {"O": hp(t["X"]), "Q": hp(t["X"]) * 2 + 1}),
    "move_sr_fp32": dict(
        what="(b) shared -> registers (fp32 setup tile, in setup and finish)",
        cases=[dict(M=m) for m in MS],
        strided=[dict(M=333)],
        ref=lambda t, d: {"O": hp(t["X"]) * 3, "P": hp(t["X"]) - 1}),
    "load_if": dict(
        what="(a) loads under an if in the load block (the expected bytes follow the condition)",
        cases=[dict(M=m, K=k) for m, k in ((64, 64), (100, 200), (333, 520))],
        strided=[dict(M=333, K=520)],
        ref=ref_load_if),
    "col_slice": dict(
        what="(e) slices of per_col vectors (read and assigned) and of per_row vectors (64-row blocks)",
        cases=[dict(M=m) for m in (128, 100, 333)],
        strided=[dict(M=333)],
        ref=ref_col_slice),
    "staged_widths": dict(
        what="(c) two staged stores of different widths (64 and 32 columns) through one staging buffer",
        cases=[dict(M=m) for m in MS],
        strided=[dict(M=333)],
        ref=lambda t, d: {"P": hp(t["X"])[:, :64] * 2, "Q": hp(t["X"])[:, 64:96] + 1}),
    "relayout": dict(
        what="(b) relayouts through shared memory: x.T (fp32, bf16), x[:, 5], x[3, :], per_col -> per_row",
        cases=[dict(M=m) for m in MS],
        strided=[dict(M=333)],
        ref=ref_relayout),
    "cumsum": dict(
        what="(e) cumsum of a per_row vector (shuffles, warp totals through shared memory) and of a per_col one",
        cases=[dict(M=m) for m in MS],
        strided=[dict(M=333)],
        derive=lambda d: dict(MU=64 * cdiv(d["M"], 64)),
        ref=ref_cumsum(64)),
    "cumsum_2wg": dict(
        what="(e) cumsum of a per_row vector split over 2 consumer warpgroups (128-row blocks), and of a per_col one",
        tk="cumsum.tk", defines={"CONSUMERS": 2},
        cases=[dict(M=m) for m in (128, 100, 333)],
        strided=[dict(M=333)],
        derive=lambda d: dict(MU=64 * cdiv(d["M"], 128)),
        ref=ref_cumsum(128)),
    "move_rs": dict(
        what="(b) registers -> shared (sh <- bf16(acc)), read as A and B of products and moved back",
        cases=[dict(M=m) for m in MS],
        strided=[dict(M=333)],
        ref=ref_move_rs),
    "move_rs_2wg": dict(
        what="(b) registers -> shared with 2 consumers, read across warpgroups as a B operand",
        cases=[dict(M=m) for m in (128, 100, 333)],
        strided=[dict(M=333)],
        inputs={"G": gen_scaled(0.1)},
        ref=ref_move_rs_2wg),
    # (c) the store block, fp32 register tile stores
    "store_block": dict(
        what="(c) store block: per-step bf16 and fp32 tile stores and per_row vector stores",
        cases=[dict(M=m, N=n) for m, n in ((64, 64), (100, 200), (333, 264))],
        strided=[dict(M=333, N=264)],
        derive=lambda d: dict(NB=cdiv(d["N"], 64)),
        ref=ref_store_block),
    "store_block_2wg": dict(
        what="(c) store block with 2 consumers (128-row tiles)",
        tk="store_block.tk", defines={"CONSUMERS": 2},
        cases=[dict(M=m, N=n) for m, n in ((128, 64), (100, 200), (333, 264))],
        strided=[dict(M=333, N=264)],
        derive=lambda d: dict(NB=cdiv(d["N"], 64)),
        ref=ref_store_block),
    "fp32_store": dict(
        what="(c) fp32 register tile stores in finish (2 consumers)",
        cases=[dict(M=64, K=64, N=64), dict(M=100, K=72, N=200), dict(M=333, K=136, N=264)],
        strided=[dict(M=333, K=136, N=264)],
        ref=lambda t, d: {"C": hp(t["A"]) @ hp(t["B"]), "D": 2 * (hp(t["A"]) @ hp(t["B"])) - 1}),
    # (d) shared tiles to global memory
    "shared_store": dict(
        what="(d) TMA store of a ring tile (store block) and of a scratch tile written from registers",
        cases=[dict(M=m, N=n) for m, n in ((64, 64), (100, 72), (333, 200))],
        strided=[dict(M=333, N=200)],
        tol={"O": 0},
        ref=ref_shared_store),
    "shared_store_2wg": dict(
        what="(d) TMA stores of shared tiles with 2 consumers (both write the scratch tile)",
        tk="shared_store.tk", defines={"CONSUMERS": 2},
        cases=[dict(M=m, N=n) for m, n in ((128, 64), (100, 72), (333, 200))],
        strided=[dict(M=333, N=200)],
        tol={"O": 0},
        ref=ref_shared_store),
    "shared_store_fin": dict(
        what="(d) TMA store of a setup tile in finish (no register move)",
        cases=[dict(M=m) for m in MS],
        strided=[dict(M=333)],
        tol={"O": 0},
        ref=lambda t, d: {"O": hp(t["X"]), "C": hp(t["X"]) @ hp(t["W"])}),
    "shared_reduce": dict(
        what="(d) shared reduce-add (TMA) into an inout fp32 tensor, every step",
        cases=[dict(M=m, N=n) for m, n in ((64, 64), (100, 72), (333, 200))],
        strided=[dict(M=333, N=200)],
        tol={"G": 1e-5},
        ref=ref_shared_reduce),
    # (e) vectors
    "shared_reduce_128": dict(
        what="(d) shared reduce-add of a 128-row fp32 tile",
        tk="shared_reduce.tk", defines={"BM": 128},
        cases=[dict(M=m, N=n) for m, n in ((128, 64), (100, 72), (333, 200))],
        strided=[dict(M=333, N=200)],
        tol={"G": 1e-5},
        ref=ref_shared_reduce),
    "vec_load_reg": dict(
        what="(e) vector loads global -> registers (per_row fp32, per_col bf16), broadcasts",
        cases=[dict(M=m, K=k) for m, k in ((64, 64), (100, 72), (333, 136))],
        strided=[dict(M=333, K=136)],
        ref=lambda t, d: {"O": (hp(t["A"]) @ hp(t["B"])) * hp(t["X"])[:, None] * hp(t["Y"])[None, :]
                          + hp(t["Y"])[None, :],
                          "V": 2 * hp(t["X"]) + (hp(t["A"]) @ hp(t["B"])).sum(dim=1)}),
    "vec_load_shared": dict(
        what="(e) TMA loads of shared vectors (setup and ring), shared -> register vectors, per_col broadcast",
        cases=[dict(M=m, K=k) for m, k in ((64, 64), (100, 72), (333, 136))],
        strided=[dict(M=333, K=136)],
        ref=ref_vec_load_shared),
    "col_reduce": dict(
        what="(e) colsum/colmax/colmin across 2 consumers, per_col stores and broadcast",
        cases=[dict(M=m) for m in (128, 100, 333)],
        strided=[dict(M=333)],
        derive=lambda d: dict(MB=cdiv(d["M"], 128)),
        ref=ref_col_reduce(128)),
    "pp_colred": dict(
        what="(e) a column reduction of a row-split tile in a pingpong step (2 consumers taking turns)",
        cases=[dict(N=n, M=m) for n, m in ((128, 64), (100, 333), (333, 200))],
        strided=[dict(N=333, M=200)],
        derive=lambda d: dict(NB=cdiv(d["N"], 128)),
        inputs={n: gen_scaled(0.5) for n in ("Q", "K", "V")},
        tol={"O": 3e-2},
        ref=ref_pp_colred),
    # rowwise kernels (kernels.tk/): the row layout, one warp per row (D = 1024) and rows over 8 warps
    # of two consumer warpgroups with the row reductions through shared memory (D = 8192)
    "rows_rmsnorm": dict(
        what="(r) rowwise residual + RMSNorm, D = 1024 (4 rows per block)",
        tk="../../kernels.tk/rmsnorm.tk", defines={"D": 1024},
        cases=[dict(M=m) for m in (1, 100, 333)], strided=[dict(M=333)], ref=ref_rmsnorm),
    "rows_rmsnorm_8192": dict(
        what="(r) rowwise residual + RMSNorm, D = 8192 (a row over 8 warps, reductions through shared memory)",
        tk="../../kernels.tk/rmsnorm.tk", defines={"D": 8192},
        cases=[dict(M=m) for m in (1, 7, 33)], strided=[dict(M=33)], ref=ref_rmsnorm),
    "rows_softmax": dict(
        what="(r) rowwise softmax, D = 2048 (a row over 2 warps)",
        tk="../../kernels.tk/softmax.tk", defines={"D": 2048},
        cases=[dict(M=m) for m in (1, 100, 333)], strided=[dict(M=333)], ref=ref_softmax),
    "rows_layernorm": dict(
        what="(r) rowwise residual + LayerNorm, p = 0, D = 4096 (a row over 4 warps)",
        tk="../../kernels.tk/layernorm.tk", defines={"D": 4096},
        cases=[dict(M=m) for m in (1, 100, 333)], strided=[dict(M=333)],
        scalars={"p": 0.0, "seed": 1234}, ref=ref_layernorm(0.0, 1234)),
    "rows_layernorm_drop": dict(
        what="(r) rowwise dropout + residual + LayerNorm, p = 0.1 (Philox, the mask of bench/philox_ref.py), D = 1024",
        tk="../../kernels.tk/layernorm.tk", defines={"D": 1024},
        cases=[dict(M=m) for m in (1, 100, 333)], strided=[dict(M=333)],
        scalars={"p": 0.1, "seed": 1234}, ref=ref_layernorm(0.1, 1234)),
    "keep_acc": dict(
        what="(r) keep() and rand() in the accumulator layout: one Philox call an element, offset 5",
        cases=[dict(M=m) for m in (64, 100, 333)], strided=[dict(M=100)],
        scalars={"seed": 977, "p": 0.3}, tol={"O": 0}, ref=ref_keep_acc(0.3, 977)),
    "keep_rows": dict(
        what="(r) rowwise keep() beside rand(), offset 0: eight keep() elements (four rand()) a Philox call",
        cases=[dict(M=m) for m in (4, 100, 333)], strided=[dict(M=100)],
        scalars={"seed": 31, "p": 0.1, "off": 0}, tol={"O": 0}, ref=ref_keep_rows(0.1, 31, 0)),
    "keep_rows_odd": dict(
        what="(r) rowwise keep() beside rand(), offset 3: one Philox call an element, the same mapping",
        tk="keep_rows.tk",
        cases=[dict(M=m) for m in (4, 100, 333)], strided=[dict(M=100)],
        scalars={"seed": 31, "p": 0.1, "off": 3}, tol={"O": 0}, ref=ref_keep_rows(0.1, 31, 3)),
    "col_reduce_1wg": dict(
        what="(e) colsum/colmax/colmin with 1 consumer",
        tk="col_reduce.tk", defines={"CONSUMERS": 1},
        cases=[dict(M=m) for m in MS],
        strided=[dict(M=333)],
        derive=lambda d: dict(MB=cdiv(d["M"], 64)),
        ref=ref_col_reduce(64)),
    "move_slice": dict(
        what="(b) register tiles moved from and into column blocks of a shared tile (exact)",
        cases=[dict(M=m) for m in MS],
        strided=[dict(M=333)],
        tol={"Y": 0},
        ref=lambda t, d: {"Y": __import__("torch").cat([hp(t["X"])[:, 64:], 2 * hp(t["X"])[:, :64]], 1)}),
    "slice_t": dict(
        what="(e) a sliced shared tile as a transposed wgmma operand, the slice on either side of the .T",
        cases=[dict(M=m) for m in MS],
        strided=[dict(M=333)],
        ref=lambda t, d: ref_slice_t(t)),
    "outer": dict(
        what="(e) per_row x per_col into a tile (r * c, r - c)",
        cases=[dict(M=m) for m in MS],
        strided=[dict(M=333)],
        ref=lambda t, d: {"O": hp(t["A"]) @ hp(t["B"]) + hp(t["X"])[:, None] * hp(t["Y"])[None, :],
                          "P": hp(t["X"])[:, None] - hp(t["Y"])[None, :]}),
    # (f) no pipeline
    "nopipe_iota": dict(
        what="(f) no pipeline: setup + finish, values from row/col/block.m (exact)",
        cases=[dict(M=m) for m in MS],
        strided=[dict(M=333)],
        tol={"O": 0},
        ref=ref_nopipe_iota),
    "nopipe_copy": dict(
        what="(f) no pipeline: setup load, move to registers, tile and vector stores",
        cases=[dict(M=m) for m in MS],
        strided=[dict(M=333)],
        tol={"O": 0, "V": 1e-6},
        ref=lambda t, d: {"O": hp(t["X"]), "Q": 2 * hp(t["X"]), "V": hp(t["XV"]) + 1}),
    "no_pipeline_prep": dict(
        what="(f) no pipeline, persistent grid: a setup load per work tile (barrier phases flip per tile), kernel-level element read, scalar",
        cases=[dict(M=m) for m in MS + [100000]],
        strided=[dict(M=333)],
        scalars={"s": 0.25},
        ref=lambda t, d: ref_no_pipeline_prep(t, d, 0.25)),
    "no_pipeline_prep_np": dict(
        what="(f) no pipeline, one block per work tile (PERSISTENT = 0)",
        tk="no_pipeline_prep.tk", defines={"PERSISTENT": 0},
        cases=[dict(M=m) for m in MS],
        strided=[dict(M=333)],
        scalars={"s": 0.25},
        ref=lambda t, d: ref_no_pipeline_prep(t, d, 0.25)),
    # (g) atomic adds, zeroed
    "splitk_red": dict(
        what="(g) split-K GEMM with a pipeline and 2 consumers: fp32 tile adds (red.v2) and row sums into zeroed outputs; splits without steps",
        cases=[dict(M=m, N=n, K=k) for m, n, k in ((128, 128, 64), (100, 200, 136), (333, 264, 1032))],
        strided=[dict(M=333, N=264, K=1032)],
        ref=lambda t, d: {"C": hp(t["A"]) @ hp(t["B"]), "S": (hp(t["A"]) @ hp(t["B"])).sum(dim=1)}),
    "red_16bit": dict(
        what="(g) atomic adds of bf16 / fp16 values (red.add.noftz.bf16x2 / .f16x2 / .bf16) into zeroed outputs, split-K",
        cases=[dict(M=m, N=n, K=k) for m, n, k in ((128, 128, 64), (100, 200, 136), (333, 264, 1032))],
        strided=[dict(M=333, N=264, K=1032)],
        tol={"H": 3e-2, "V": 3e-2},  # each split's partial is rounded to bf16 before it is added
        ref=lambda t, d: {"H": hp(t["A"]) @ hp(t["B"]), "F": 0.5 * (hp(t["A"]) @ hp(t["B"])),
                          "V": (hp(t["A"]) @ hp(t["B"])).sum(dim=1)}),
    "zeroed_view": dict(
        what="(g) zeroed output of which the kernel writes half the columns (the strided case clears a view by a kernel)",
        cases=[dict(M=m, K=k) for m, k in ((64, 64), (100, 136), (333, 520))],
        strided=[dict(M=333, K=520)],
        ref=lambda t, d: {"C": ref_zeroed_view(t)}),
    "atomic_reg": dict(
        what="(g) atomic adds from registers (tile and per_row), split-K over blocks, zeroed and inout",
        cases=[dict(M=m, K=k) for m, k in ((64, 64), (100, 200), (333, 264))],
        strided=[dict(M=333, K=264)],
        tol={"G": 1e-4, "H": 1e-4, "V": 1e-4},
        ref=ref_atomic_reg),
    "zeroed": dict(
        what="(g) zeroed output, only even row blocks stored",
        cases=[dict(M=m) for m in (64, 200, 333)],
        strided=[dict(M=333)],
        ref=ref_zeroed),
    # (h) suite kernels
    "rotary": rotary_feature("(h) rotary (rotate-half), D = 128: setup tables, moves, column slices, store block"),
    "rotary_d64": rotary_feature("(h) rotary, D = 64", tk="rotary.tk", defines={"D": 64}),
    "rotary_direct": rotary_feature(
        "(h) rotary, D = 64, two consumer warpgroups, staging = 0: each warp's reads of a ring stage fenced "
        "before its release (the large case caught the race of runs 178-179)",
        ns=(64, 333), large=[dict(B=16, H=16, N=4096)]),
    "rotary_rows": rotary_feature(
        "(h) rotary in rowwise tiles (bench/experiments/norms/rotary_rw.tk): rank-4 rows, loads and stores of "
        "column blocks in a for loop over the heads, tables held in registers",
        ns=(16, 100, 333), tk="../experiments/norms/rotary_rw.tk"),
    "rotary_rows_d64": rotary_feature(
        "(h) rotary in rowwise tiles, D = 64, persistent, heads in groups of 2 (the last group ragged), "
        "the tables loaded again for every head",
        ns=(16, 100, 333), tk="../experiments/norms/rotary_rw.tk",
        defines={"D": 64, "RB": 64, "HB": 2, "PERSISTENT": 1, "TL": 1}),
    "based_feat": dict(
        what="(e) Based's order-2 features: a selector tile from where(row, col) in row blocks of a shared tile, "
             "x @ es[16a:16a+16, :].T (K-major row slice, N = 16), per_row store (exact)",
        cases=[dict(M=m) for m in MS],
        strided=[dict(M=333)],
        tol={"F": 0, "Z": 1e-5},
        ref=lambda t, d: {"F": (hp(t["X"])[:, :, None] * hp(t["X"])[:, None, :]).reshape(-1, 256),
                          "Z": (hp(t["X"]) * hp(t["X"])[:, 15:16]).sum(1)}),
    "linear_attn": dict(
        what="(h) causal decayed linear attention, D = 64 (chunked, state through shared memory; D = 128 is over one warpgroup's register budget)",
        cases=[dict(B=2, H=2, N=n) for n in (64, 100, 333)],
        strided=[dict(B=2, H=2, N=333)],
        inputs={n: gen_scaled(0.5) for n in ("Q", "K", "V")},
        tol={"O": 3e-2},  # bf16 roundings inside (scores, state, decayed keys): a simulation gave 0.013
        ref=ref_linear_attn),
}


def tk_path(name):
    return os.path.join(PROGRAMS, FEATURES[name].get("tk", name + ".tk"))


def tkc_cmd(tkc, name, *extra):
    cmd = [tkc, tk_path(name)]
    for k, v in FEATURES[name].get("defines", {}).items():
        cmd += ["-D", f"{k}={v}"]
    return cmd + list(extra)


def first_error(text):
    for l in text.splitlines():
        if "error" in l:
            return l.strip()
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    return lines[0] if lines else "(no message)"


def selected(only):
    names = list(FEATURES)
    if only:
        want = only.split(",")
        bad = [w for w in want if w not in FEATURES]
        if bad:
            sys.exit(f"features.py: unknown feature(s) {', '.join(bad)}; known: {', '.join(names)}")
        names = [n for n in names if n in want]
    return names


# ---------------------------------------------------------------------------------------------
# build

def build_one(tkc, out, name, timeout):
    cu = os.path.join(out, name + ".cu")
    so = os.path.join(out, "lib" + name + ".so")
    rep = os.path.join(out, name + ".report.json")
    st = os.path.join(out, name + ".build.json")
    for p in (cu, so, rep, st):
        if os.path.exists(p):
            os.remove(p)
    t0 = time.time()
    res = dict(name=name, ok=False)
    try:
        r = subprocess.run(tkc_cmd(tkc, name, "-o", cu), capture_output=True, text=True, timeout=timeout)
        if r.returncode:
            res.update(stage="tkc", msg="tkc rejected: " + first_error(r.stderr + r.stdout).replace(PROGRAMS + os.sep, ""))
        else:
            r = subprocess.run(tkc_cmd(tkc, name, "--emit=report", "-o", rep), capture_output=True, text=True,
                               timeout=timeout)
            if r.returncode:
                res.update(stage="report", msg="tkc --emit=report failed: " + first_error(r.stderr + r.stdout))
            else:
                r = subprocess.run(NVCC + [cu, "-o", so], capture_output=True, text=True, timeout=timeout)
                if r.returncode:
                    res.update(stage="nvcc", msg="nvcc failed: " + first_error(r.stderr + r.stdout))
                else:
                    info = [l.split(":", 1)[-1].strip() for l in r.stderr.splitlines()
                            if "registers" in l or "spill" in l]
                    res.update(ok=True, stage="ok", msg=" | ".join(info))
    except subprocess.TimeoutExpired as ex:
        res.update(stage="timeout", msg=f"build timed out after {timeout}s ({ex.cmd[0]})")
    except OSError as ex:
        res.update(stage="tkc", msg=f"cannot run: {ex}")
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
        print(f"build {r['name']:18s} {'ok    ' if r['ok'] else 'FAILED'} {r['msg'][:200]} ({r['seconds']}s)", flush=True)
    print(f"features build: {sum(r['ok'] for r in results)} of {len(results)} programs built", flush=True)
    return 0


def check(args):
    """tkc --check on every program (no nvcc): which ones the back end accepts today."""
    n_ok = 0
    for name in selected(args.only):
        r = subprocess.run(tkc_cmd(args.tkc, name, "--check"), capture_output=True, text=True)
        ok = r.returncode == 0
        n_ok += ok
        msg = "" if ok else first_error(r.stderr).replace(PROGRAMS + os.sep, "")[:150]
        print(f"{name:18s} {'ok      ' if ok else 'rejected'} {msg}")
        print(f"{'':18s} {FEATURES[name]['what']}")
    print(f"features check: {n_ok} of {len(selected(args.only))} accepted")
    return 0


# ---------------------------------------------------------------------------------------------
# one feature's cases, in a child process

def case_list(name):
    spec = FEATURES[name]
    cases = [(dict(c), False) for c in spec["cases"]] + [(dict(c), True) for c in spec.get("strided", [])]
    out = []
    for dims, strided in cases:
        if "derive" in spec:
            dims.update(spec["derive"](dims))
        label = " ".join(f"{k}={v}" for k, v in dims.items()) + (" strided" if strided else "")
        out.append((label, dims, strided))
    return out


def ctype_of(p):
    c = p["c_type"]
    if p["kind"] == "tensor":
        return [ctypes.c_void_p, ctypes.c_void_p]
    if p["kind"] == "dim":
        return [ctypes.c_int64]
    if p["kind"] == "scalar":
        return [ctypes.c_float if c == "float" else ctypes.c_int32]
    if p["kind"] == "stream":
        return [ctypes.c_void_p]
    raise ValueError(f"unknown launcher parameter kind {p['kind']!r}")


def fake_launcher(name):
    """The launcher description of --emit=report, parsed from the .tk itself (TKC_FEATURES_FAKE
    only): tensors in order, run-time dims in order of first appearance, scalars, stream."""
    import re
    src = open(tk_path(name)).read()
    src = re.sub(r"//[^\n]*", "", src)
    params = {}
    for m in re.finditer(r"param\s+([^;]*);", src):
        for part in m.group(1).split(","):
            k, v = part.split("=")
            params[k.strip()] = v.strip()
    params.update({k: str(v) for k, v in FEATURES[name].get("defines", {}).items()})
    env = {}
    for k, v in params.items():
        env[k] = eval(v.replace("/", "//"), {}, dict(env))
    # an entry is the program's launcher when it has one (its kernels are launched by it)
    m = re.search(r"entry\s+(\w+)\s*\((.*?)\)\s*\{", src, re.S) or re.search(r"kernel\s+(\w+)\s*\((.*?)\)\s*\{", src, re.S)
    kname, arglist = m.group(1), m.group(2)
    tensors, dims, scalars = [], [], []
    for a in re.finditer(r"(in|out|inout)\s+(\w+)\s*:\s*(\w+)\s*(\[([^\]]*)\])?\s*(\w+)?", arglist):
        mode, an, dt, shp = a.group(1), a.group(2), a.group(3), a.group(5)
        if shp is None:
            scalars.append(dict(kind="scalar", name=an, c_type="float" if dt == "fp32" else "int32_t", dtype=dt))
            continue
        shape = []
        for d in shp.split(","):
            d = d.strip()
            if re.fullmatch(r"[A-Za-z_]\w*", d) and d not in env:
                shape.append(dict(text=d, runtime=True))
                if d not in dims:
                    dims.append(d)
            else:
                shape.append(dict(text=d, runtime=False, value=eval(d.replace("/", "//"), {}, dict(env))))
        tensors.append(dict(kind="tensor", name=an, mode=mode, dtype=dt, rank=len(shape), shape=shape, tma=False,
                            c_type="const void *" if mode == "in" else "void *", zeroed=a.group(6) == "zeroed"))
    ps = tensors + [dict(kind="dim", name=d, c_type="int64_t") for d in dims] + scalars
    ps.append(dict(kind="stream", name="stream", c_type="tkc_stream_t"))
    return dict(function="tkc_" + kname, params=ps)


def run_child(args):
    import torch
    name = args.feature
    spec = FEATURES[name]
    if FAKE and FAKE != 7:
        launcher = fake_launcher(name)
        fn = None
    else:
        with open(os.path.join(args.lib, name + ".report.json")) as f:
            report = json.load(f)
        kernels = report.get("entries") or report["kernels"]   # an entry launches the kernels it names
        assert len(kernels) == 1, f"{name}: expected one kernel or one entry, the report has {len(kernels)}"
        launcher = kernels[0]["launcher"]
        lib = ctypes.CDLL(os.path.join(args.lib, "lib" + name + ".so"))
        fn = getattr(lib, launcher["function"])
        fn.restype = ctypes.c_int
        fn.argtypes = [t for p in launcher["params"] for t in ctype_of(p)]
    tdt = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32, "i32": torch.int32}
    idt = {1: torch.int8, 2: torch.int16, 4: torch.int32}
    cases = case_list(name)
    for ci in range(args.start, len(cases)):
        label, dims, strided = cases[ci]
        row = dict(feature=name, case=label, index=ci, dims=dims)
        try:
            row.update(run_case(torch, spec, launcher, fn, dims, strided, tdt, idt, ci))
        except Exception as ex:  # a failed case: report it, then start afresh (the context may be gone)
            row.update(status="FAIL", err=None, note="exception: " + "".join(
                traceback.format_exception_only(type(ex), ex)).strip().splitlines()[-1][:300])
            print("ROW " + json.dumps(row), flush=True)
            sys.stderr.write(traceback.format_exc())
            sys.exit(3)
        print("ROW " + json.dumps(row), flush=True)
    return 0


def make_storage(torch, shape, dtype, strided, rank, tma, fill):
    """(storage, view, guard mask) for a tensor of this shape: the view is what the kernel sees;
    the storage has guard elements past its end (and between rows when strided)."""
    elem = torch.tensor([], dtype=dtype).element_size()
    shape = list(shape)
    if strided and rank >= 2:
        pad = max(1, 32 // elem)  # 32 bytes or more, keeping the row pitch a multiple of 16 bytes (TMA)
        while ((shape[-1] + pad) * elem) % 16:
            pad += 1
        st_shape = shape[:-1] + [shape[-1] + pad]
        if rank == 4:  # [B, H, N, D] stored as [B, N, H, D + pad]
            st_shape = [st_shape[0], st_shape[2], st_shape[1], st_shape[3]]
        storage = fill(st_shape)
        mask = torch.ones(st_shape, dtype=torch.bool, device=DEV)
        if rank == 4:
            view = storage.transpose(1, 2)[..., :shape[-1]]
            mask.transpose(1, 2)[..., :shape[-1]] = False
        else:
            view = storage[..., :shape[-1]]
            mask[..., :shape[-1]] = False
    elif strided and rank == 1 and not tma:
        storage = fill([2 * shape[0] + 1])
        view = storage[:2 * shape[0]:2]
        mask = torch.ones(storage.shape, dtype=torch.bool, device=DEV)
        mask[:2 * shape[0]:2] = False
    else:
        n = 1
        for s in shape:
            n *= s
        guard = max(256, 4096 // elem)
        storage = fill([n + guard])
        view = storage[:n].view(shape)
        mask = torch.ones(storage.shape, dtype=torch.bool, device=DEV)
        mask[:n] = False
    assert tuple(view.shape) == tuple(shape)
    return storage, view, mask


def run_case(torch, spec, launcher, fn, dims, strided, tdt, idt, ci):
    g = torch.Generator(device=DEV).manual_seed(1234 + 17 * ci)
    gens = spec.get("inputs", {})
    tensors = {}  # name -> (storage, view, mask, initial storage copy)
    init = {}  # inputs and inout initial values, contiguous, for the reference
    argv = []
    outs = []
    for p in launcher["params"]:
        k = p["kind"]
        if k == "tensor":
            dt = tdt[p["dtype"]]
            shape = [dims[s["text"]] if s["runtime"] else s["value"] for s in p["shape"]]
            mode = p["mode"]
            if mode in ("in", "inout"):
                gen = gens.get(p["name"])
                if gen is not None:
                    vals = gen(torch, g, shape, dt, dims).to(dt)
                elif dt == torch.int32:
                    vals = torch.randint(-100, 100, shape, device=DEV, generator=g, dtype=torch.int32)
                else:
                    vals = torch.randn(shape, device=DEV, generator=g).to(dt)
                init[p["name"]] = vals
                if mode == "in":
                    fill = lambda s, dt=dt: torch.full(s, 7, device=DEV, dtype=dt)  # guards: 7
                else:
                    fill = lambda s, dt=dt: (torch.full(s, -1, device=DEV, dtype=dt) if dt == torch.int32
                                             else torch.full(s, float("nan"), device=DEV, dtype=dt))
            else:
                fill = lambda s, dt=dt: (torch.full(s, -1, device=DEV, dtype=dt) if dt == torch.int32
                                         else torch.full(s, float("nan"), device=DEV, dtype=dt))
            storage, view, mask = make_storage(torch, shape, dt, strided, p["rank"], p["tma"], fill)
            if mode in ("in", "inout"):
                view.copy_(init[p["name"]])
            before = storage.clone()
            tensors[p["name"]] = (storage, view, mask, before)
            if mode in ("out", "inout"):
                outs.append(p["name"])
            argv.append(view.data_ptr())
            argv.append((ctypes.c_int64 * view.dim())(*view.stride()) if strided else None)
        elif k == "dim":
            argv.append(dims[p["name"]])
        elif k == "scalar":
            argv.append(spec.get("scalars", {})[p["name"]])
        elif k == "stream":
            argv.append(None if FAKE else torch.cuda.current_stream().cuda_stream)
    if FAKE == 7:  # the real launcher on host memory: its argument checks pass, then it fails without a GPU
        rc = fn(*argv)
        ok = rc in (6, 7)  # TKC_ERR_TENSOR_MAP, TKC_ERR_LAUNCH
        return dict(status="ok" if ok else "FAIL", err=None, note=f"launcher returned {rc}" + (
            "" if ok else " (an argument check failed: the harness passes something wrong)"))
    if FAKE:
        ref = spec["ref"](init, dims)
        for name in outs:
            if name in ref:
                tensors[name][1].copy_(ref[name].to(tensors[name][1].dtype))
                if FAKE == 2:  # one wrong element
                    tensors[name][1][(0,) * tensors[name][1].dim()].add_(1)
                if FAKE == 3:  # one guard element written
                    tensors[name][0].view(-1)[-1:].zero_()
        if FAKE == 4 and ci == 1:  # a crash
            os._exit(139)
        if FAKE == 5 and ci == 1:  # a hang
            time.sleep(3600)
        if FAKE == 6 and ci == 1:
            raise RuntimeError("CUDA error: an illegal memory access was encountered (fake)")
        rc = 0
    else:
        torch.cuda.synchronize()
        rc = fn(*argv)  # argv holds the strides arrays until the call returns
        torch.cuda.synchronize()
    if rc != 0:
        return dict(status="FAIL", err=None, note=f"launcher returned {rc} (not TKC_OK)")
    ref = spec["ref"](init, dims)
    worst = 0.0
    notes = []
    bad = False
    for name, (storage, view, mask, before) in tensors.items():
        if name in outs:
            continue
        es = storage.element_size()
        changed = int((storage.view(idt[es]) != before.view(idt[es])).sum().item())
        if changed:
            bad = True
            notes.append(f"{name} (an input): {changed} elements written")
    for name in outs:
        storage, view, mask, before = tensors[name]
        # guard elements: bit for bit unchanged
        es = storage.element_size()
        changed = int((storage.view(idt[es]) != before.view(idt[es]))[mask].sum().item())
        if changed:
            bad = True
            notes.append(f"{name}: {changed} guard elements written")
        if name not in ref:
            continue
        r = ref[name].to(torch.float64)
        o = view.to(torch.float64)
        tol = spec.get("tol", {}).get(name, 1e-3 if view.dtype in (torch.float32, torch.int32) else 1e-2)
        nan = int(torch.isnan(o).sum().item())
        if nan:
            bad = True
            notes.append(f"{name}: {nan} NaN (unwritten?)")
        if tol == 0:
            if view.dtype == torch.bfloat16:
                r = r.to(torch.bfloat16).to(torch.float64)  # the reference rounded like the output
            wrong = int(((o != r) & ~torch.isnan(o)).sum().item())
            e = float((o - r).abs().nan_to_num(0).max().item()) if o.numel() else 0.0
            if wrong:
                bad = True
                notes.append(f"{name}: {wrong} elements differ (exact check), max |d| {e:.3g}")
        else:
            scale = r.pow(2).mean().sqrt().item() if r.numel() else 1.0
            den = r.abs() + max(scale, 1e-30)
            rel = ((o - r).abs() / den)
            e = float(rel.nan_to_num(float("inf")).max().item()) if rel.numel() else 0.0
            if e > tol:
                bad = True
                nbad = int((rel.nan_to_num(float("inf")) > tol).sum().item())
                idx = torch.nonzero(rel.nan_to_num(float("inf")) > tol)[0].tolist()
                notes.append(f"{name}: {nbad} elements off (first at {idx}: {o[tuple(idx)].item():.4g} "
                             f"vs {r[tuple(idx)].item():.4g}), max err {e:.3g} > {tol:g}")
        worst = max(worst, e)
    return dict(status="FAIL" if bad else "ok", err=worst, note="; ".join(notes))


# ---------------------------------------------------------------------------------------------
# run: one child process per feature, restarted after a failed case

def run_feature(args, name):
    """The rows of one feature (build failures included)."""
    cases = case_list(name)
    st = os.path.join(args.lib, name + ".build.json")
    if FAKE and FAKE != 7:
        pass
    elif not os.path.exists(st):
        return [dict(feature=name, case="-", status="FAIL", err=None, note="not built (run features.py build)")]
    else:
        with open(st) as f:
            b = json.load(f)
        if not b["ok"]:
            return [dict(feature=name, case="-", status="FAIL", err=None, note=b["msg"])]
    rows = []
    start = 0
    while start < len(cases):
        cmd = [sys.executable, "-u", os.path.abspath(__file__), "child", "--lib", args.lib, "--feature", name,
               "--start", str(start)]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        q = queue.Queue()
        err_lines = []
        threading.Thread(target=lambda: [q.put(l) for l in p.stdout] + [q.put(None)], daemon=True).start()
        threading.Thread(target=lambda: [err_lines.append(l) for l in p.stderr], daemon=True).start()
        timeout = args.first_timeout
        got = start
        reason = None
        while got < len(cases):
            try:
                line = q.get(timeout=timeout)
            except queue.Empty:
                reason = f"timed out after {timeout:.0f}s (hang?)"
                p.kill()
                break
            if line is None:
                break
            if line.startswith("ROW "):
                r = json.loads(line[4:])
                rows.append(r)
                got = r["index"] + 1
                timeout = args.case_timeout
        try:
            rc = p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = p.wait()
        if got < len(cases) and not (rc == 3 and reason is None and got > start):
            # the child died or hung in case 'got' without reporting it (rc 3: it reported a
            # failed case and stopped, so the rest run in a fresh process)
            if reason is None:
                tail = [l.strip() for l in err_lines if l.strip()][-3:]
                reason = f"child exited {rc} without a result" + (": " + " | ".join(tail)[:300] if tail else "")
            label, dims, _ = cases[got]
            rows.append(dict(feature=name, case=label, index=got, dims=dims, status="FAIL", err=None, note=reason))
            got += 1
        start = got
    return rows


def write_csv(path, row):
    """One row into results.csv, with the columns of harness.py (the rest into 'note')."""
    from harness import CSV_COLUMNS as cols
    dims = dict(row.get("dims") or {})
    out = dict(suite="features", case=row["case"], variant=row["feature"], status=row["status"],
               rel_err="" if row.get("err") is None else f"{row['err']:.3g}")
    for k in ("M", "N", "K", "B", "H", "D"):
        if k in dims:
            out[k] = dims.pop(k)
    if "strided" in row["case"]:
        out["layout"] = "strided"
    defines = FEATURES.get(row["feature"], {}).get("defines", {})
    note = [f"{k}={v}" for k, v in list(dims.items()) + list(defines.items())] + ([row["note"]] if row.get("note") else [])
    if note:
        out["note"] = "; ".join(note)
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, restval="")
        if f.tell() == 0:
            w.writeheader()
        w.writerow(out)


def fmt(row):
    e = row.get("err")
    es = "-" if e is None else f"{e:.2e}"
    s = f"{row['feature']:18s} {row['case']:28s} {es:>9s} {row['status']:4s}"
    if row.get("note"):
        s += "  " + row["note"]
    return s


def run(args):
    names = selected(args.only)
    try:
        import torch
        print(f"# {'FAKE (no launches, CPU)' if FAKE else torch.cuda.get_device_name()}  torch {torch.__version__}",
              flush=True)
    except Exception as ex:  # the children will say more
        print(f"# torch: {ex}", flush=True)
    print(f"{'feature':18s} {'case':28s} {'max err':>9s} status", flush=True)
    lock = threading.Lock()
    allrows = []

    def one(name):
        rows = run_feature(args, name)
        with lock:
            for r in rows:
                print(fmt(r), flush=True)
                if args.csv:
                    write_csv(args.csv, r)
            allrows.extend(rows)
        return rows

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        list(ex.map(one, names))
    bad = [r for r in allrows if r["status"] != "ok"]
    feats_ok = [n for n in names if all(r["status"] == "ok" for r in allrows if r["feature"] == n)]
    print(f"features: {len(allrows) - len(bad)} passed, {len(bad)} failed "
          f"({len(feats_ok)} of {len(names)} features fully ok: {', '.join(feats_ok) or 'none'})", flush=True)
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--tkc", required=True)
    b.add_argument("--out", required=True)
    b.add_argument("--only", default="")
    b.add_argument("--jobs", type=int, default=0)
    b.add_argument("--timeout", type=int, default=240, help="seconds per tkc or nvcc command")
    c = sub.add_parser("check")
    c.add_argument("--tkc", required=True)
    c.add_argument("--only", default="")
    r = sub.add_parser("run")
    r.add_argument("--lib", required=True)
    r.add_argument("--csv", default="")
    r.add_argument("--only", default="")
    r.add_argument("--jobs", type=int, default=4, help="features run at once (one process each)")
    r.add_argument("--first-timeout", type=float, default=90, help="seconds for a child's start and first case")
    r.add_argument("--case-timeout", type=float, default=30, help="seconds for each further case")
    ch = sub.add_parser("child")
    ch.add_argument("--lib", required=True)
    ch.add_argument("--feature", required=True)
    ch.add_argument("--start", type=int, default=0)
    args = ap.parse_args()
    sys.path.insert(0, HERE)
    sys.exit({"build": build, "check": check, "run": run, "child": run_child}[args.cmd](args))


if __name__ == "__main__":
    main()
