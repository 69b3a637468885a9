"""run 192: one launch of kernels.tk/attn_bwd.tk's attn_bwd_split (D = 128, B16 H16 N4096, not causal) for
ncu's source-level sampling:
    ncu --kernel-name regex:attn_bwd_split --section SourceCounters --section WarpStateStats ... \\
        python3 bench/experiments/attn_bwd/prof3.py LIB     (LIB: bench/attn_bwd.py --build-only's folder)"""
import ctypes
import os
import sys

sys.path.insert(0, "bench")
import torch  # noqa: E402
from attn_bwd import call  # noqa: E402

lib = sys.argv[1]
s = torch.cuda.current_stream().cuda_stream
B, H, N, D = 16, 16, 4096, 128
fwd = ctypes.CDLL(os.path.join(lib, "attn_fwd_D128_CAUSAL0.so"))
bwd = ctypes.CDLL(os.path.join(lib, "attn_bwd_D128_CAUSAL0.so"))
q, k, v, do = (torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16) for _ in range(4))
o = torch.empty_like(q)
lse = torch.empty(B, H, N, device="cuda")
dl = torch.empty_like(lse)
scale = D ** -0.5
call(fwd.tkc_attn_fwd, (q, k, v, o, lse), (B, H, N, H), (scale,), s)
call(bwd.tkc_attn_bwd_prep, (o, do, dl), (B, H, N), (), s)
dq, dk, dv = (torch.empty(B, H, N, D, device="cuda") for _ in range(3))
for _ in range(2):
    call(bwd.tkc_attn_bwd_split, (q, k, v, do, lse, dl, dk, dv, dq), (B, H, N, H), (scale,), s)
torch.cuda.synchronize()
print("attn_bwd_split: 2 launches")
