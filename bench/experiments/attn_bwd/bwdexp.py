"""experiment: attn_bwd variants (fused dQ orderings) timed alternated, B16 H16 N4096; checks vs fp32 autograd"""
import ctypes, os, sys, statistics, json
sys.path.insert(0, "bench")
import torch, torch.nn.functional as F
from attn_bwd import call
P = ctypes.c_void_p
XL, AB = sys.argv[1], sys.argv[2]
names = [l.split()[0] for l in open(".carry/x/variants.txt")]
XS = sys.argv[3] if len(sys.argv) > 3 else ""
DS = (64,) if XS else (64, 128)
s = torch.cuda.current_stream().cuda_stream
def make(lib, fwd, kernel, q, k, v, do, scale, det):
    B, H, N, D = q.shape; HKV = k.shape[1]
    o = torch.empty_like(q); npad = (N + 3) // 4 * 4
    lse = torch.empty(B, H, npad, device="cuda")[..., :N]
    call(fwd.tkc_attn_fwd, (q, k, v, o, lse), (B, H, N, HKV), (scale,), s)
    dl = torch.empty(B, H, npad, device="cuda")[..., :N]
    dq = torch.zeros(B, H, N, D, device="cuda"); dk = torch.empty(B, HKV, N, D, device="cuda"); dv = torch.empty_like(dk)
    prep = ctypes.CDLL(os.path.join(AB, "attn_bwd_D%d_CAUSAL%d.so" % (D, causal)))
    def run():
        call(prep.tkc_attn_bwd_prep, (o, do, dl), (B, H, N), (), s)
        if det:
            call(lib.tkc_attn_bwd_kv, (q, k, v, do, lse, dl, dk, dv), (B, H, N, HKV), (scale,), s)
            call(prep.tkc_attn_bwd_dq, (q, k, v, do, lse, dl, dq), (B, H, N, HKV), (scale,), s)
        else:
            call(lib.tkc_attn_bwd_fused, (q, k, v, do, lse, dl, dk, dv, dq), (B, H, N, HKV), (scale,), s)
    return run, (dq, dk, dv)
rows = []
for D in DS:
  for causal in (0, 1):
    fwd = ctypes.CDLL(os.path.join(AB, "attn_fwd_D%d_CAUSAL%d.so" % (D, causal)))
    impls = {}
    for n in names:
        if not n.endswith(str(D)): continue
        lib = ctypes.CDLL(os.path.join(XL, "%s_c%d.so" % (n, causal)))
        impls[n] = lib
        if n[0] in "ae": impls["kv_late"] = lib      # the det form (attn_bwd_kv + attn_bwd_dq), dP late
        if n[0] in "bf": impls["kv_early"] = lib     # dP issued right after S
    if XS:
        impls = {n: l for n, l in impls.items() if n in ("kv_late", "b64", "a64")}
        for sn in ("s2", "s3", "s1"):
            impls[sn] = ctypes.CDLL(os.path.join(XS, "%s_c%d.so" % (sn, causal)))
    scale = D ** -0.5
    # check
    torch.manual_seed(0)
    B, H, HKV, N = 2, 4, 2, 333
    q = torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16); k = torch.randn(B, HKV, N, D, device="cuda", dtype=torch.bfloat16)
    v = torch.randn_like(k); do = torch.randn_like(q)
    qf, kf, vf = (t.float().requires_grad_() for t in (q, k, v))
    of = F.scaled_dot_product_attention(qf, kf.repeat_interleave(2, 1), vf.repeat_interleave(2, 1), is_causal=bool(causal), scale=scale)
    gq, gk, gv = torch.autograd.grad(of, (qf, kf, vf), do.float())
    for n, lib in impls.items():
        run, (dq, dk, dv) = make(lib, fwd, n, q, k, v, do, scale, n.startswith("kv"))
        run(); torch.cuda.synchronize()
        e = [((a - b).norm() / b.norm()).item() for a, b in ((dq, gq), (dk, gk), (dv, gv))]
        print("check D%d c%d %-12s %s %s" % (D, causal, n, " ".join("%.1e" % x for x in e), "ok" if max(e) < 2e-2 else "FAIL"), flush=True)
    B, H, N = 16, 16, 4096
    q, k, v, do = (torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16) for _ in range(4))
    runs = {n: make(lib, fwd, n, q, k, v, do, scale, n.startswith("kv"))[0] for n, lib in impls.items()}
    times = {n: [] for n in runs}
    for r in range(5):
        order = list(runs) if r % 2 == 0 else list(runs)[::-1]
        for n in order:
            f = runs[n]; f()
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(5): f()
            e1.record(); torch.cuda.synchronize()
            times[n].append(e0.elapsed_time(e1) / 5)
    fl = 2.5 * 4 * B * H * N * N * D / (2 if causal else 1)
    for n, ts in times.items():
        ms = statistics.median(ts)
        print("time D%d c%d %-12s %.3f ms %.1f TFLOP/s" % (D, causal, n, ms, fl / ms / 1e9), flush=True)
    del runs; torch.cuda.empty_cache()
