#!/usr/bin/env python3
"""One launch of rotary.tk's kernel per (D, layout) for ncu (run on the GPU machine):
    ncu --clock-control none --kernel-name regex:tkc_rotary --launch-skip 2 --launch-count 1 \\
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \\
        python3 bench/experiments/norms/rotprof.py LIB D LAYOUT [VARIANT]
LIB holds rot_VARIANT_DD.so (gen8.sh, gen6.sh); B16 N4096 H16 as abnorms.py times it; three launches."""
import ctypes
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from abnorms import rotary_args  # noqa: E402

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
args = rotary_args(x, cos, sin, o, torch.cuda.current_stream().cuda_stream, keep)
for _ in range(3):
    assert fn(*args) == 0
torch.cuda.synchronize()
print("rotary D%d %s %s: 3 launches" % (d, layout, variant))
