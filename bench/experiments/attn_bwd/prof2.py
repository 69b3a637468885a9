"""run 156: one launch of attn_bwd.tk's D = 64 attn_bwd_fused (a0d3e12, two consumer warpgroups) under
Nsight Compute: python3 bench/experiments/attn_bwd/prof2.py .carry/ab2"""
import ctypes, os, sys
sys.path.insert(0, "bench")
import torch
from attn_bwd import call
s = torch.cuda.current_stream().cuda_stream
AB = sys.argv[1]
D, B, H, N = 64, 16, 16, 4096
fwd = ctypes.CDLL(os.path.join(AB, "attn_fwd_D64_CAUSAL0.so"))
bwd = ctypes.CDLL(os.path.join(AB, "attn_bwd_D64_CAUSAL0.so"))
q, k, v, do = (torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16) for _ in range(4))
o = torch.empty_like(q); lse = torch.empty(B, H, N, device="cuda"); dl = torch.empty_like(lse)
scale = D ** -0.5
call(fwd.tkc_attn_fwd, (q, k, v, o, lse), (B, H, N, H), (scale,), s)
call(bwd.tkc_attn_bwd_prep, (o, do, dl), (B, H, N), (), s)
dq = torch.zeros(B, H, N, D, device="cuda"); dk = torch.empty_like(dq); dv = torch.empty_like(dq)
call(bwd.tkc_attn_bwd_fused, (q, k, v, do, lse, dl, dk, dv, dq), (B, H, N, H), (scale,), s)
torch.cuda.synchronize()
print("done")
