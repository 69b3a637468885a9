import ctypes, os, sys
sys.path.insert(0, "bench")
import torch
from attn_bwd import call
s = torch.cuda.current_stream().cuda_stream
AB = ".carry/ab"
for D, lib, fn in ((64, ".carry/xl/b64_c0.so", "fused"), (128, ".carry/xl/e128_c0.so", "kv")):
    B, H, N = 16, 16, 4096
    HKV = H
    fwd = ctypes.CDLL(os.path.join(AB, "attn_fwd_D%d_CAUSAL0.so" % D))
    prep = ctypes.CDLL(os.path.join(AB, "attn_bwd_D%d_CAUSAL0.so" % D))
    L = ctypes.CDLL(lib)
    q, k, v, do = (torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16) for _ in range(4))
    o = torch.empty_like(q); lse = torch.empty(B, H, N, device="cuda"); dl = torch.empty_like(lse)
    scale = D ** -0.5
    call(fwd.tkc_attn_fwd, (q, k, v, o, lse), (B, H, N, HKV), (scale,), s)
    call(prep.tkc_attn_bwd_prep, (o, do, dl), (B, H, N), (), s)
    dq = torch.zeros(B, H, N, D, device="cuda"); dk = torch.empty_like(dq); dv = torch.empty_like(dq)
    if fn == "fused":
        call(L.tkc_attn_bwd_fused, (q, k, v, do, lse, dl, dk, dv, dq), (B, H, N, HKV), (scale,), s)
    else:
        call(L.tkc_attn_bwd_kv, (q, k, v, do, lse, dl, dk, dv), (B, H, N, HKV), (scale,), s)
    torch.cuda.synchronize()
print("done")
