#!/usr/bin/env python3
"""One launch (after a warm-up) of layernorm D8192 p = 0.1 (the current kernel and the 16-values form
of gen2.sh) and rotary D128 bhnd / D64 bnhd, for ncu (prof.sh):
    python3 bench/experiments/norms/prof.py LIB"""
import ctypes
import os
import sys

import torch

lib = sys.argv[1]
P, LL = ctypes.c_void_p, ctypes.c_longlong


def st(t, keep):
    a = (LL * t.dim())(*t.stride())
    keep.append(a)
    return a


keep = []
s = torch.cuda.current_stream().cuda_stream
M, D = 65536, 8192
x, r = (torch.randn(M, D, device="cuda", dtype=torch.bfloat16) for _ in range(2))
w, b = torch.randn(D, device="cuda"), torch.randn(D, device="cuda")
y, sm = torch.empty_like(x), torch.empty_like(x)
for v in ("old", "v16r1b2"):
    f = ctypes.CDLL(os.path.join(lib, "ln_%s_D%d.so" % (v, D))).tkc_layernorm
    for _ in range(2):
        a = []
        for t in (x, r, w, b, y, sm):
            a += [P(t.data_ptr()), st(t, keep)]
        assert f(*a, LL(M), ctypes.c_float(0.1), ctypes.c_int(7), P(s)) == 0
del x, r, y, sm
B, N, H = 16, 4096, 16
for d, lay in ((128, "bhnd"), (64, "bnhd")):
    xx = torch.randn(B, N, H, d, device="cuda", dtype=torch.bfloat16) if lay == "bnhd" else \
        torch.randn(B, H, N, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
    out = torch.empty_like(xx)
    cos, sin = torch.randn(N, d // 2, device="cuda"), torch.randn(N, d // 2, device="cuda")
    f = ctypes.CDLL(os.path.join(lib, "rot_base_D%d.so" % d)).tkc_rotary
    for _ in range(2):
        a = []
        for t in (xx.transpose(1, 2), cos, sin, out.transpose(1, 2)):
            a += [P(t.data_ptr()), st(t, keep)]
        assert f(*a, LL(B), LL(H), LL(N), P(s)) == 0
torch.cuda.synchronize()
print("prof.py done")
