#!/usr/bin/env python3
"""torch_compile_check.py - tkc's --emit=torch modules under torch.compile on the GPU machine: each
kernel is a torch.library op (tkc_<hash>::<kernel>) with a fake implementation, so a compiled
function that calls it traces in one graph (fullgraph=True fails on a graph break) and gives the
eager result; two -D variants of one .tk import side by side (--module-name).

    python3 bench/torch_compile_check.py path/to/tkc
"""
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
    subprocess.run([tkc, os.path.join(ROOT, "kernels.tk", "rmsnorm.tk"), "--emit=torch", "--module-name", name, "-o", d]
                   + sum((["-D", x] for x in defs), []), check=True)
    spec = importlib.util.spec_from_file_location(name, os.path.join(d, name + ".py"))
    m = importlib.util.module_from_spec(spec)
    sys.modules[name] = m  # torch.compile imports the module of what it traces by name
    spec.loader.exec_module(m)
    return m


def main():
    import torch
    tkc = sys.argv[1]
    out = tempfile.mkdtemp()
    fails = 0
    a = module(tkc, out, "rms1024", ["D=1024"])
    b = module(tkc, out, "rms2048", ["D=2048"])
    for m, D in ((a, 1024), (b, 2048)):
        x = torch.randn(1000, D, device="cuda", dtype=torch.bfloat16)
        r = torch.randn(1000, D, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(D, device="cuda")
        y0, s0 = m.rmsnorm(x, r, w)

        def f(x, r, w):
            y, s = m.rmsnorm(x * 2, r, w)
            return y.float().sum(dim=1), s

        try:
            cf = torch.compile(f, fullgraph=True)
            y1, s1 = cf(x, r, w)
            ye, se = f(x, r, w)
            ok = torch.allclose(y1, ye, rtol=1e-3, atol=1e-2) and torch.equal(s1, se)
            print("%s: torch.compile(fullgraph=True) %s" % (m.__name__, "ok" if ok else "MISMATCH"))
            fails += not ok
        except Exception as ex:
            print("%s: torch.compile(fullgraph=True) FAILED: %s" % (m.__name__, str(ex)[:400]))
            fails += 1
        print("%s: eager ok, Y %s, S %s" % (m.__name__, tuple(y0.shape), tuple(s0.shape)))
    ops = [n for n in dir(torch.ops) if n.startswith("tkc_")]
    print("torch.ops namespaces: %s" % ", ".join(sorted(ops)))
    print("torch_compile_check: %d failed" % fails)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
