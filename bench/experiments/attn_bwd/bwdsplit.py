"""experiment: backward kernels against kernels.tk/attn_bwd.tk's attn_bwd_main, all after the same
attn_bwd_prep. LIB holds main_cC.so (attn_bwd.tk at this D, called through tkc_attn_bwd_main) and any
other NAME_cC.so (C = 0, 1), each called through its tkc_attn_bwd_split, or tkc_attn_bwd_fused where it
has no split kernel (the same C signature): split128.tk, split128_red.tk and split3 (`sh
bench/experiments/attn_bwd/bwdsplit.sh TKC LIB`), split.tk and split64.tk at D = 64, the fused_r2_*.tk
variants of attn_bwd_fused. Checks dQ, dK, dV against fp32 autograd (ragged N, GQA), then times them all
alternated at B16 H16 N4096 (CUDA events around 10 launches, median of rounds).

    python3 bench/experiments/attn_bwd/bwdsplit.py LIB [ROUNDS [D]]     (D defaults to 128)
"""
import ctypes
import glob
import os
import statistics
import sys

sys.path.insert(0, "bench")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from attn_bwd import call  # noqa: E402

LIB = sys.argv[1]
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
D = int(sys.argv[3]) if len(sys.argv) > 3 else 128
s = torch.cuda.current_stream().cuda_stream


def inputs(B, H, HKV, N, causal, scale):
    torch.manual_seed(0)
    q = torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(B, HKV, N, D, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k)
    do = torch.randn_like(q)
    rep = H // HKV
    kf, vf = k.float().repeat_interleave(rep, 1), v.float().repeat_interleave(rep, 1)
    sc = torch.einsum("bhnd,bhmd->bhnm", q.float(), kf) * scale
    if causal:
        sc = sc.masked_fill(torch.ones(N, N, dtype=torch.bool, device="cuda").triu(1), float("-inf"))
    lse = torch.logsumexp(sc, -1)
    o = (torch.softmax(sc, -1) @ vf).bfloat16()
    dl = (o.float() * do.float()).sum(-1)
    del sc
    return q, k, v, do, o, lse.contiguous(), dl.contiguous()


def launcher(lib, name, q, k, v, do, lse, dl, scale):
    B, H, N, _ = q.shape
    HKV = k.shape[1]
    dq = torch.full((B, H, N, D), float("nan"), device="cuda")
    dk = torch.full((B, HKV, N, D), float("nan"), device="cuda")
    dv = torch.full_like(dk, float("nan"))
    fn = getattr(lib, name)

    def run():
        call(fn, (q, k, v, do, lse, dl, dk, dv, dq), (B, H, N, HKV), (scale,), s)
    return run, (dq, dk, dv)


def rel(a, b):
    return ((a.float() - b.float()).norm() / b.float().norm()).item()


for causal in (0, 1):
    tail = "_c%d.so" % causal
    if not os.path.exists(os.path.join(LIB, "main" + tail)):
        continue  # a library set for one mask only
    others = sorted(os.path.basename(f)[:-len(tail)] for f in glob.glob(os.path.join(LIB, "*" + tail)))
    libs = {}
    for n in ["main"] + [n for n in others if n != "main"]:
        lib = ctypes.CDLL(os.path.join(LIB, n + tail))
        libs[n] = (lib, "tkc_attn_bwd_main" if n == "main" else
                   "tkc_attn_bwd_split" if hasattr(lib, "tkc_attn_bwd_split") else "tkc_attn_bwd_fused")
    scale = D ** -0.5
    for (B, H, HKV, N) in ((2, 4, 2, 333), (1, 2, 2, 1000), (1, 4, 1, 256)):
        q, k, v, do, o, lse, dl = inputs(B, H, HKV, N, causal, scale)
        qf, kf, vf = (t.float().requires_grad_() for t in (q, k, v))
        rep = H // HKV
        of = F.scaled_dot_product_attention(qf, kf.repeat_interleave(rep, 1), vf.repeat_interleave(rep, 1),
                                            is_causal=bool(causal), scale=scale)
        gq, gk, gv = torch.autograd.grad(of, (qf, kf, vf), do.float())
        for n, (lib, fname) in libs.items():
            run, (dq, dk, dv) = launcher(lib, fname, q, k, v, do, lse, dl, scale)
            run()
            torch.cuda.synchronize()
            e = (rel(dq, gq), rel(dk, gk), rel(dv, gv))
            print("check causal %d B%d H%d HKV%d N%d %-6s dQ %.2e dK %.2e dV %.2e %s" % (
                causal, B, H, HKV, N, n, *e, "ok" if max(e) < 2e-2 else "FAIL"), flush=True)
    B, H, N = 16, 16, 4096
    q = torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16)
    k, v, do = torch.randn_like(q), torch.randn_like(q), torch.randn_like(q)
    lse = torch.randn(B, H, N, device="cuda").abs() + 5.0
    dl = torch.randn(B, H, N, device="cuda")
    runs = {n: launcher(lib, fname, q, k, v, do, lse, dl, scale)[0] for n, (lib, fname) in libs.items()}
    ts = {n: [] for n in runs}
    for n, r in runs.items():
        r()
    torch.cuda.synchronize()
    for _ in range(ROUNDS):
        for n, r in runs.items():
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(10):
                r()
            e1.record()
            torch.cuda.synchronize()
            ts[n].append(e0.elapsed_time(e1) / 10)
    flops = 2.5 * 4 * B * H * N * N * D / (2 if causal else 1)
    row = "  ".join("%s %.3f ms %.0f TFLOP/s" % (n, statistics.median(t), flops / statistics.median(t) / 1e9) for n, t in ts.items())
    print("time causal %d B%d H%d N%d D%d: %s  %s" % (causal, B, H, N, D, row, "  ".join(
          "main/%s %.3f" % (n, statistics.median(ts["main"]) / statistics.median(t)) for n, t in ts.items() if n != "main")),
          flush=True)
