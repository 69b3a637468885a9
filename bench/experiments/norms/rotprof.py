#!/usr/bin/env python3
"""One launch of rotary.tk's kernel per (D, layout) for ncu (run on the GPU machine):
    ncu --clock-control none --kernel-name regex:tkc_rotary --launch-skip 2 --launch-count 1 \\
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \\
        python3 bench/experiments/norms/rotprof.py LIB D LAYOUT [VARIANT]
LIB holds rot_VARIANT_DD.so (gen8.sh, gen6.sh); B16 N4096 H16 as abnorms.py times it; three launches."""
import ctypes
import sys

import torch

P, LL = ctypes.c_void_p, ctypes.c_longlong
lib, d, layout = sys.argv[1], int(sys.argv[2]), sys.argv[3]
variant = sys.argv[4] if len(sys.argv) > 4 else "base"
B, N, H = 16, 4096, 16
shape = (B, N, H, d) if layout == "bnhd" else (B, H, N, d)
x = torch.randn(*shape, device="cuda", dtype=torch.bfloat16)
x = x if layout == "bnhd" else x.transpose(1, 2)          # a [B, N, H, D] view
o = torch.empty_like(x)
cos, sin = torch.randn(N, d // 2, device="cuda"), torch.randn(N, d // 2, device="cuda")
fn = ctypes.CDLL("%s/rot_%s_D%d.so" % (lib, variant, d)).tkc_rotary
keep = []
args = []
for t in (x.transpose(1, 2), cos, sin, o.transpose(1, 2)):
    s = (LL * t.dim())(*t.stride())
    keep.append(s)
    args += [P(t.data_ptr()), s]
args += [LL(B), LL(H), LL(N), P(torch.cuda.current_stream().cuda_stream)]
for _ in range(3):
    assert fn(*args) == 0
torch.cuda.synchronize()
print("rotary D%d %s %s: 3 launches" % (d, layout, variant))
