#!/usr/bin/env python3
"""Run 173: the layernorm variants of LIB at D = 4096, p = 0, launched once each on the same inputs
without CUDA graphs, each output compared with the first variant's (abnorms.py's groups).

    python3 bench/experiments/norms/cmpln.py   (from the repository root)
"""
import sys
sys.argv = ["abnorms.py"]
sys.path.insert(0, "bench/experiments/norms")
import abnorms, torch
g = abnorms.layernorm_group(".carry/nv", 4096, 0.0, 3)
variants, launchers, sets, outputs, _ = g
s = torch.cuda.Stream()
for v in variants:
    with torch.cuda.stream(s):
        for i in range(sets):
            launchers[v](i, s)
torch.cuda.synchronize()
ref = outputs(variants[0])
for v in variants[1:]:
    for k, (a, b) in enumerate(zip(ref, outputs(v))):
        d = (a.float() - b.float()).abs()
        if d.max() > 0:
            idx = (d > 0.5).nonzero()
            print(v, "output", k, "max", d.max().item(), "n>0.5", idx.shape[0], "rows", idx[:, 0].unique()[:10].tolist(), "maxabs", a.float().abs().max().item())
        else:
            print(v, "output", k, "same")
