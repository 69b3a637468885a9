import re, subprocess, os, sys
src = open("kernels.tk/attn_bwd.tk").read().replace('import "inc/', 'import "/work/main/kernels.tk/inc/')
def mod(kernels, grid_extra="", pipe_extra="", fold=False):
    s = src
    for kn in kernels:
        a = s.index("kernel %s(" % kn); b = s.index("\n}\n", a)
        k = s[a:b]
        if grid_extra: k = re.sub(r"(grid \([^;]*)(, blocks_per_sm)", lambda m: m.group(1) + grid_extra + m.group(2), k, count=1)
        if fold: k = re.sub(r"(kb|qb): cdiv\(N, (BWD_BKV|BWD_BQ)\)\)", lambda m: "%s: cdiv(N, %s) folded)" % (m.group(1), m.group(2)), k, count=1)
        if pipe_extra: k = re.sub(r"(pipeline \([^;]*)(;)", lambda m: m.group(1) + pipe_extra + m.group(2), k, count=1)
        s = s[:a] + k + s[b:]
    return s
V = {
 "F0": ([], "", "", False, "D=64"),
 "F1": (["attn_bwd_fused"], ", persistent", "", False, "D=64"),
 "F2": (["attn_bwd_fused"], ", persistent", ", setup_stages = 2", False, "D=64"),
 "F3": (["attn_bwd_fused"], ", persistent", ", setup_stages = 2", True, "D=64"),
 "T0": ([], "", "", False, "D=64 DETERMINISTIC=1"),
 "T1": (["attn_bwd", "attn_bwd_dq"], ", persistent", ", setup_stages = 2", False, "D=64 DETERMINISTIC=1"),
 "K0": ([], "", "", False, "D=128"),
 "K1": (["attn_bwd", "attn_bwd_dq"], ", persistent", "", False, "D=128"),
 "K2": (["attn_bwd", "attn_bwd_dq"], ", persistent", "", True, "D=128"),
}
out = sys.argv[1]
for n, (ks, g, p, f, defs) in V.items():
    t = os.path.join(out, n + ".tk")
    open(t, "w").write(mod(ks, g, p, f))
    for c in (0, 1):
        args = sum([["-D", d] for d in defs.split()], []) + ["-D", "CAUSAL=%d" % c]
        r = subprocess.run(["build/tkc", t, "-o", os.path.join(out, "%s_c%d.cu" % (n, c))] + args, capture_output=True, text=True)
        if r.returncode: print(n, c, r.stderr[:600])
