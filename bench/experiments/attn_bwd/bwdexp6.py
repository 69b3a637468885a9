"""experiment: D = 64 backward, split.tk (the keys split between the two consumer warpgroups, dQ a
partial tile added by red.global.add.v2) against attn_bwd.tk's attn_bwd_main (the fused kernel at
D = 64), checks against fp32 autograd, then alternated timing.
    python3 bench/experiments/attn_bwd/bwdexp6.py .carry/ab2 .carry/xsplit
(.carry/xsplit/split_c0.so, split_c1.so: tkc -D CAUSAL=c split.tk -o ..., nvcc -shared)"""
import ctypes, os, sys, statistics
sys.path.insert(0, "bench")
import torch, torch.nn.functional as F
from attn_bwd import call
AB, XW = sys.argv[1], sys.argv[2]
s = torch.cuda.current_stream().cuda_stream
D = 64
for causal in (0, 1):
    fwd = ctypes.CDLL(os.path.join(AB, "attn_fwd_D%d_CAUSAL%d.so" % (D, causal)))
    main = ctypes.CDLL(os.path.join(AB, "attn_bwd_D%d_CAUSAL%d.so" % (D, causal)))
    wide = ctypes.CDLL(os.path.join(XW, "split_c%d.so" % causal))
    def make(kind, q, k, v, do, scale):
        B, H, N, _ = q.shape; HKV = k.shape[1]
        o = torch.empty_like(q); npad = (N + 3) // 4 * 4
        lse = torch.empty(B, H, npad, device="cuda")[..., :N]
        call(fwd.tkc_attn_fwd, (q, k, v, o, lse), (B, H, N, HKV), (scale,), s)
        dl = torch.empty(B, H, npad, device="cuda")[..., :N]
        dq = torch.full((B, H, N, D), float("nan"), device="cuda"); dk = torch.empty(B, HKV, N, D, device="cuda"); dv = torch.empty_like(dk)
        def run():
            call(main.tkc_attn_bwd_prep, (o, do, dl), (B, H, N), (), s)
            if kind == "main":
                call(main.tkc_attn_bwd_main, (q, k, v, do, lse, dl, dk, dv, dq), (B, H, N, HKV), (scale,), s)
            else:
                call(wide.tkc_attn_bwd_split, (q, k, v, do, lse, dl, dk, dv, dq), (B, H, N, HKV), (scale,), s)
        return run, (dq, dk, dv)
    scale = D ** -0.5
    for (B, H, HKV, N) in ((2, 4, 2, 333), (1, 2, 2, 1000), (2, 2, 1, 128)):
        torch.manual_seed(0)
        q = torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16); k = torch.randn(B, HKV, N, D, device="cuda", dtype=torch.bfloat16)
        v = torch.randn_like(k); do = torch.randn_like(q)
        qf, kf, vf = (t.float().requires_grad_() for t in (q, k, v))
        rep = H // HKV
        of = F.scaled_dot_product_attention(qf, kf.repeat_interleave(rep, 1), vf.repeat_interleave(rep, 1), is_causal=bool(causal), scale=scale)
        gq, gk, gv = torch.autograd.grad(of, (qf, kf, vf), do.float())
        for n in ("main", "split"):
            run, (dq, dk, dv) = make(n, q, k, v, do, scale)
            run(); torch.cuda.synchronize()
            e = [((a - b).norm() / b.norm()).item() for a, b in ((dq, gq), (dk, gk), (dv, gv))]
            print("check D%d c%d N%d %-4s %s %s" % (D, causal, N, n, " ".join("%.1e" % x for x in e), "ok" if max(e) < 2e-2 else "FAIL"), flush=True)
    for N in (1024, 4096):
        B, H = 16, 16
        q, k, v, do = (torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16) for _ in range(4))
        runs = {n: make(n, q, k, v, do, scale)[0] for n in ("main", "split")}
        times = {n: [] for n in runs}
        for r in range(7):
            order = list(runs) if r % 2 == 0 else list(runs)[::-1]
            for n in order:
                f = runs[n]; f()
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
                for _ in range(5): f()
                e1.record(); torch.cuda.synchronize()
                times[n].append(e0.elapsed_time(e1) / 5)
        fl = 2.5 * 4 * B * H * N * N * D / (2 if causal else 1)
        print("time D%d c%d N%d " % (D, causal, N) + "  ".join("%s %.1f" % (n, fl / statistics.median(ts) / 1e9) for n, ts in times.items()), flush=True)
        del runs; torch.cuda.empty_cache()
