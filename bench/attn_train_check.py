#!/usr/bin/env python3
"""attn_train_check.py - attention from tkc's torch module as a differentiable function: the module
of kernels.tk/attn_bwd.tk (the forward and, through its `grad` declaration, the backward) on the
GPU machine. Gradients against fp32 autograd of attention (relative error under 2e-2 for dQ, dK,
dV: grouped-query, causal and not, ragged N), then a small transformer block trained for a few
hundred steps with tkc's attention and with PyTorch SDPA from the same start: the loss curves
should track.

    python3 bench/attn_train_check.py path/to/tkc [--steps 300]
"""
import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]


def module(tkc, out, name, defs):
    d = os.path.join(out, name)
    subprocess.run([tkc, os.path.join(ROOT, "kernels.tk", "attn_bwd.tk"), "--emit=torch", "--module-name", name, "-o", d]
                   + sum((["-D", x] for x in defs), []), check=True)
    spec = importlib.util.spec_from_file_location(name, os.path.join(d, name + ".py"))
    m = importlib.util.module_from_spec(spec)
    sys.modules[name] = m
    spec.loader.exec_module(m)
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tkc")
    ap.add_argument("--steps", type=int, default=300)
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F
    out = tempfile.mkdtemp()
    fails = 0
    mods = {c: module(args.tkc, out, "attn_c%d" % c, ["CAUSAL=%d" % c]) for c in (0, 1)}
    D = 64
    for causal, m in mods.items():
        for (B, H, HKV, N) in ((2, 4, 2, 333), (1, 2, 2, 1000), (2, 4, 4, 256)):
            torch.manual_seed(1)
            q, k, v = (torch.randn(B, h, N, D, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                       for h in (H, HKV, HKV))
            w = torch.randn(B, H, N, D, device="cuda")
            scale = D ** -0.5
            o, lse = m.attn_fwd(q, k, v, scale)
            (o.float() * w).sum().backward()
            qf, kf, vf = (t.detach().float().requires_grad_() for t in (q, k, v))
            rep = H // HKV
            of = F.scaled_dot_product_attention(qf, kf.repeat_interleave(rep, 1), vf.repeat_interleave(rep, 1),
                                                is_causal=bool(causal), scale=scale)
            (of * w).sum().backward()
            errs = [((a.grad.float() - b.grad).norm() / b.grad.norm()).item() for a, b in ((q, qf), (k, kf), (v, vf))]
            ok = all(e < 2e-2 for e in errs)
            fails += not ok
            print("grad causal=%d B%d H%d/%d N%d: dQ %.2e dK %.2e dV %.2e %s" % (causal, B, H, HKV, N, *errs, "ok" if ok else "FAIL"))
    # a transformer block trained with each attention from the same initial weights and data
    torch.manual_seed(0)
    C, H, N, B = 256, 4, 256, 8

    class Block(torch.nn.Module):
        def __init__(self, attn):
            super().__init__()
            self.attn = attn
            self.qkv, self.proj = torch.nn.Linear(C, 3 * C), torch.nn.Linear(C, C)
            self.mlp = torch.nn.Sequential(torch.nn.Linear(C, 4 * C), torch.nn.GELU(), torch.nn.Linear(4 * C, C))
            self.n1, self.n2 = torch.nn.LayerNorm(C), torch.nn.LayerNorm(C)

        def forward(self, x):
            q, k, v = self.qkv(self.n1(x)).view(B, N, 3, H, C // H).permute(2, 0, 3, 1, 4).unbind(0)
            a = self.attn(q.contiguous(), k.contiguous(), v.contiguous())
            x = x + self.proj(a.transpose(1, 2).reshape(B, N, C))
            return x + self.mlp(self.n2(x))

    def tkc_attn(q, k, v):
        return mods[1].attn_fwd(q, k, v, (C // H) ** -0.5)[0]

    def sdpa_attn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    base = Block(sdpa_attn).cuda().bfloat16()
    state = {kk: vv.clone() for kk, vv in base.state_dict().items()}
    data = [(torch.randn(B, N, C, device="cuda", dtype=torch.bfloat16),
             torch.randn(B, N, C, device="cuda", dtype=torch.bfloat16)) for _ in range(16)]
    curves = {}
    for name, attn in (("tkc", tkc_attn), ("sdpa", sdpa_attn)):
        net = Block(attn).cuda().bfloat16()
        net.load_state_dict(state)
        opt = torch.optim.AdamW(net.parameters(), lr=3e-4)
        losses = []
        for step in range(args.steps):
            x, y = data[step % len(data)]
            loss = F.mse_loss(net(x).float(), y.float())
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        curves[name] = losses
    t, s = curves["tkc"], curves["sdpa"]
    for i in (0, len(t) // 4, len(t) // 2, 3 * len(t) // 4, len(t) - 1):
        print("step %4d: loss tkc %.4f sdpa %.4f" % (i, t[i], s[i]))
    tail = lambda c: sum(c[-20:]) / 20
    rel = abs(tail(t) - tail(s)) / tail(s)
    ok = rel < 0.05 and tail(t) < 0.9 * t[0]
    fails += not ok
    print("training: last-20 mean loss tkc %.4f sdpa %.4f (rel %.3f), from %.4f: %s" % (tail(t), tail(s), rel, t[0],
                                                                                        "ok" if ok else "FAIL"))
    print("attn_train_check: %d failed" % fails)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
