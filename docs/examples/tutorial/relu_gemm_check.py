#!/usr/bin/env python3
"""relu_gemm_check.py - the last step of docs/tutorial.md: call the function tkc --emit=torch
generated for relu_gemm.tk, check it against PyTorch and time it. Needs the GPU machine (an
sm_90 GPU such as an H100 or H200, and torch with CUDA).

    python3 docs/examples/tutorial/relu_gemm_check.py [DIR]    (DIR: default build/tutorial/relu_gemm)
"""
import sys

import torch

sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else "build/tutorial/relu_gemm")
import relu_gemm  # noqa: E402  (the module tkc --emit=torch wrote; it builds the extension on first use)

torch.backends.cuda.matmul.allow_tf32 = False
M, N, K = 4096, 4096, 4096
scale = 0.5
A = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
B = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)

# one call: A and B in, C out (allocated by the module on A's device)
C = relu_gemm.relu_gemm(A, B, scale)

# check against PyTorch in fp32
ref = torch.relu(A.float() @ B.float()) * scale
err = ((C.float() - ref).norm() / ref.norm()).item()
print(f"C {tuple(C.shape)} {C.dtype}; relative error against fp32 PyTorch: {err:.2e}")
assert err < 1e-2, "too far from the reference"


def median_ms(fn, reps=50):
    """Median time of fn() in milliseconds, with CUDA events on the current stream."""
    for _ in range(5):
        fn()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def eager():
    return torch.relu(A @ B) * scale   # cuBLAS, then two elementwise kernels


flops = 2.0 * M * N * K
for name, fn in (("tkc relu_gemm", lambda: relu_gemm.relu_gemm(A, B, scale)), ("PyTorch eager", eager)):
    ms = median_ms(fn)
    print(f"{name:14s} {ms:7.3f} ms  {flops / ms / 1e9:6.1f} TFLOP/s")
