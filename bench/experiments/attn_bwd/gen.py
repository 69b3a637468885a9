import sys, subprocess, os
src = open(".carry/x/bwdx.tk").read()
head = src[:src.index("kernel attn_bwd_fused")]
fused = src[src.index("kernel attn_bwd_fused"):src.index("kernel attn_bwd_kv")]
kvk = src[src.index("kernel attn_bwd_kv"):]
def body(early, dst, dqreg, D):
    t = "dst" if dst else "pt"
    L = ["    lse <- ls; dd <- ds;", "    p = q @ k.T;"]
    if early: L.append("    dp = g @ v.T;")
    L += ["    p = exp2(p * c - lse * 1.4426950408889634);",
          "    if (CAUSAL) { p = where(block.kb * BWD_BKV + col <= (i + first) * BWD_BQ + row, p, 0); }",
          "    pt <- bf16(p);", "    dv += pt.T @ g;"]
    if not early: L.append("    dp = g @ v.T;")
    L += ["    p = p * (dp - dd);", "    %s <- bf16(p);" % t, "    dk += %s.T @ q;" % t]
    if dqreg: L += ["    dq = %s @ k; dqs <- dq * scale;" % t]
    else:
        L += ["    dp = %s @ k[:, 0:64]; dqs[:, 0:64] <- dp * scale;" % t]
        if D == 128: L += ["    dp = %s @ k[:, 64:128]; dqs[:, 64:128] <- dp * scale;" % t]
    return "\n".join(L)
def fix(k, early, dst, dqreg, D):
    a = k.index("  compute {") + len("  compute {\n"); b = k.index("\n  }\n  store")
    k = k[:a] + body(early, dst, dqreg, D) + k[b:]
    k = k.replace("dst: bf16[BWD_BQ, DST ? BWD_BKV : 16], ", "dst: bf16[BWD_BQ, BWD_BKV], " if dst else "")
    k = k.replace(", dq: fp32[BWD_BQ, DQREG ? D : 16]", ", dq: fp32[BWD_BQ, D]" if dqreg else "")
    return k
out = sys.argv[1]
for line in open(".carry/x/variants.txt"):
    name, *defs = line.split()
    d = dict(x.split("=") for x in defs)
    D = int(d["D"])
    k = fix(fused, int(d["EARLY"]), int(d["DST"]), int(d["DQREG"]), D)
    open(os.path.join(out, name + ".tk"), "w").write(head + k + kvk)
    for c in (0, 1):
        args = sum([["-D", x] for x in defs if not x.startswith(("EARLY", "DST", "DQREG"))], []) + ["-D", "EARLY=%s" % d["EARLY"], "-D", "CAUSAL=%d" % c]
        r = subprocess.run(["build/tkc", os.path.join(out, name + ".tk"), "-o", os.path.join(out, "%s_c%d.cu" % (name, c))] + args, capture_output=True, text=True)
        if r.returncode: print(name, c, r.stderr[:500])
