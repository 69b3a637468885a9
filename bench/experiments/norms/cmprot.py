#!/usr/bin/env python3
"""Where two rotary variants of LIB (rot_A_DD.so, rot_B_DD.so) disagree: each launched once on the
same [B, N, H, D] input (NaN-poisoned outputs), against an fp32 reference, with the positions of
the wrong elements (position n mod 128, column d, head) summarised.

    python3 bench/experiments/norms/cmprot.py --lib .carry/nv3 --variants base,st0 --d 64
"""
import argparse
import ctypes
import os

import torch

P, LL = ctypes.c_void_p, ctypes.c_longlong


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default=".carry/nv3")
    ap.add_argument("--variants", default="base,st0")
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--shape", default="2x512x4")
    a = ap.parse_args()
    B, N, H = (int(v) for v in a.shape.split("x"))
    d = a.d
    g = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(B, N, H, d, device="cuda", dtype=torch.bfloat16, generator=g)
    cos = torch.randn(N, d // 2, device="cuda", generator=g)
    sin = torch.randn(N, d // 2, device="cuda", generator=g)
    xf = x.float()
    x1, x2 = xf[..., : d // 2], xf[..., d // 2:]
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    ref = torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1)
    for v in a.variants.split(","):
        lib = ctypes.CDLL(os.path.join(a.lib, "rot_%s_D%d.so" % (v, d)))
        out = torch.full_like(x, float("nan"))
        X, O = x.transpose(1, 2), out.transpose(1, 2)
        args, keep = [], []
        for t in (X, cos, sin, O):
            k = (LL * t.dim())(*t.stride())
            keep.append(k)
            args += [P(t.data_ptr()), k]
        args += [LL(B), LL(H), LL(N), P(torch.cuda.current_stream().cuda_stream)]
        assert lib.tkc_rotary(*args) == 0
        torch.cuda.synchronize()
        err = (out.float() - ref).abs().nan_to_num(1e9)
        bad = (err > 0.05 * ref.abs().clamp_min(1.0))
        print("%s D%d: %d of %d wrong (NaN %d)" % (v, d, int(bad.sum()), bad.numel(), int(out.isnan().sum())))
        if bad.any():
            idx = bad.nonzero()
            print("  positions n %% 128: %s" % sorted(set((idx[:, 1] % 128).tolist()))[:40])
            print("  columns: %s" % sorted(set(idx[:, 3].tolist())))
            print("  heads: %s, batches: %s" % (sorted(set(idx[:, 2].tolist())), sorted(set(idx[:, 0].tolist()))))


if __name__ == "__main__":
    main()
