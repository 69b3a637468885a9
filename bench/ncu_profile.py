#!/usr/bin/env python3
"""One launch of each kernel worth profiling, for `ncu` (run on the GPU machine):
  ncu --clock-control none --section SpeedOfLight --section WarpStateStats ... python3 bench/ncu_profile.py LIBDIR
tkc attention (D128, its default 128 x 176 persistent shape), cuDNN's attention on the same
inputs, and tkc's GEMM with and without 2-block clusters. Inputs are random, as in harness.py."""
import ctypes
import math
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from harness import ATTN_ARGTYPES, GEMM_ARGTYPES, cuda_stream, load

lib = sys.argv[1]
stream = lambda: cuda_stream(torch)

B, H, N, D = 4, 16, 4096, 128
q, k, v = (torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
o = torch.empty_like(q)
lse = torch.empty(B, H, N, device="cuda", dtype=torch.float32)
att = load(lib, "attn_d128", "tkc_attn_fwd", ATTN_ARGTYPES)
for _ in range(2):
    assert att(q.data_ptr(), None, k.data_ptr(), None, v.data_ptr(), None, o.data_ptr(), None, lse.data_ptr(), None,
               B, H, N, H, ctypes.c_float(1 / math.sqrt(D)), stream()) == 0
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(2):
        F.scaled_dot_product_attention(q, k, v, scale=1 / math.sqrt(D))

M = 4096
A = torch.randn(M, M, device="cuda", dtype=torch.bfloat16)
Bm = torch.randn(M, M, device="cuda", dtype=torch.bfloat16)
C = torch.empty(M, M, device="cuda", dtype=torch.bfloat16)
for name in ("gemm", "gemm_c2"):
    f = load(lib, name, "tkc_gemm", GEMM_ARGTYPES)
    for _ in range(2):
        assert f(A.data_ptr(), None, Bm.data_ptr(), None, C.data_ptr(), None, M, M, M, stream()) == 0
torch.cuda.synchronize()
print("profiled launches done")
