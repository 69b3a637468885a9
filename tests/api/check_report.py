#!/usr/bin/env python3
"""check_report.py - checks tkc --emit=report JSON (see api_report.sh, which writes DIR):
gemm.json, attn_fwd.json, attn_d64.json (-D D=64), gemm_cluster2.json (-D CLUSTER=2), two.json and odd.json,
plus NAME.decls,
the launcher definitions of each .cu (one "int tkc_x(...)" per line). Checks the structure every
report must have, invariants of the shared-memory map, and the values the plans of gemm.tk and
attn_fwd.tk are known to have. Prints each failure; exits 1 if there was one."""
import json
import sys

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def load(d, name):
    with open(f"{d}/{name}") as f:
        return json.load(f)


def kernel(rep, name):
    for k in rep["kernels"]:
        if k["name"] == name:
            return k
    failures.append(f"no kernel {name}")
    return None


def by_name(items, name):
    for x in items:
        if x["name"] == name:
            return x
    failures.append(f"no item named {name} in {[x.get('name') for x in items]}")
    return {}


KERNEL_KEYS = ["name", "launcher", "roles", "registers", "products", "grid", "pipeline", "shared_memory", "barriers",
               "load_groups", "tma_maps", "staged_stores", "stores", "named_barriers", "decisions"]
STATUS = [("TKC_OK", 0), ("TKC_ERR_NULL", 1), ("TKC_ERR_ALIGN", 2), ("TKC_ERR_DIM", 3), ("TKC_ERR_STRIDE", 4),
          ("TKC_ERR_REQUIRE", 5), ("TKC_ERR_TENSOR_MAP", 6), ("TKC_ERR_LAUNCH", 7)]


def common(rep, decls, where):
    """what every report must hold, whatever the kernel"""
    keys = ["tkc_version", "source", "params", "limits", "status_codes", "kernels", "entries"]
    if "dispatch" in rep:  # a dispatched program: the rules, and every variant's own report
        d = rep["dispatch"]
        check(list(d) == ["table", "rules", "variants"] and d["rules"] and d["rules"][-1]["when"] == "otherwise" and
              all(list(v) == ["variant", "defines", "report"] for v in d["variants"]), f"{where}: dispatch {list(d)}")
        keys = ["dispatch"] + keys
    check(list(rep) == keys, f"{where}: top-level keys {list(rep)}")
    for e in rep["entries"]:  # an entry: its launcher, the kernels it launches (each one of the report's), decisions
        check(list(e) == ["name", "launcher", "launches", "programmatic_launches", "scratch_tensors", "decisions"] and
              all(k in [kk["name"] for kk in rep["kernels"]] for k in e["launches"]) and
              e["launcher"]["function"] == "tkc_" + e["name"], f"{where}: entry {e.get('name')}")
        # a kernel launched programmatically waits for the grid before it (src/pass_pdl.c)
        waits = {kk["name"]: kk["grid"]["programmatic_launch"]["waits"] for kk in rep["kernels"]}
        check(all(k in e["launches"] and waits[k] for k in e["programmatic_launches"]),
              f"{where}: entry {e['name']}: programmatic launches {e['programmatic_launches']}")
    check(rep["limits"] == {"shared_memory": 232448, "shared_memory_base_slack": 1024, "register_file": 65536},
          f"{where}: limits {rep['limits']}")
    check([(s["name"], s["value"]) for s in rep["status_codes"]] == STATUS, f"{where}: status codes")
    launchers = [k["launcher"]["declaration"] for k in rep["kernels"] + rep["entries"]]  # kernels' and entries'
    check(sorted(launchers) == sorted(decls), f"{where}: launcher declarations differ from the .cu's:\n  {launchers}\n  {decls}")
    for k in rep["kernels"]:
        w = f"{where}/{k['name']}"
        check(list(k) == KERNEL_KEYS, f"{w}: kernel keys {list(k)}")
        la = k["launcher"]
        check(la["function"] == "tkc_" + k["name"], f"{w}: function {la['function']}")
        kinds = [p["kind"] for p in la["params"]]
        order = {"tensor": 0, "dim": 1, "scalar": 2, "stream": 3}
        check(kinds == sorted(kinds, key=order.get) and kinds[-1] == "stream", f"{w}: parameter order {kinds}")
        # the declaration lists the params in the same order
        names = [p["name"] + ("_strides" if p["kind"] == "tensor" else "") for p in la["params"]]
        pos = [la["declaration"].find(" *" + n if n.endswith("_strides") else " " + n) for n in names]
        check(all(p > 0 for p in pos) and pos == sorted(pos), f"{w}: declaration order vs params {names}")
        r = k["roles"]
        check(r["threads"] == 128 * (r["consumers"] + 1), f"{w}: threads")
        rs = r["register_split"]
        used = 128 * (r["producer_registers"] + r["consumers"] * r["consumer_registers"])
        check(rs["used"] == used and used <= 65536, f"{w}: register split used {rs['used']} != {used}")
        check(rs["arithmetic"] == f"128 x {r['producer_registers']} + {r['consumers']} x 128 x "
                                  f"{r['consumer_registers']} = {used} of 65536", f"{w}: arithmetic {rs['arithmetic']}")
        reg = k["registers"]
        check(reg["estimate"] == sum(p["registers"] for p in reg["parts"]) + reg["temporaries_peak"] + reg["overhead"],
              f"{w}: register estimate is not the sum of its parts")
        check(reg["estimate"] <= reg["limit"] == r["consumer_registers"], f"{w}: register estimate over the limit")
        sm = k["shared_memory"]
        bufs = sorted(sm["buffers"], key=lambda b: b["offset"])
        end = 0
        for b in bufs:
            check(b["offset"] >= end, f"{w}: buffer {b['name']} overlaps the one before it")
            check(b["offset"] % b["alignment"] == 0, f"{w}: buffer {b['name']} is not aligned")
            check(b["total_bytes"] == b["bytes"] * b["copies"], f"{w}: {b['name']} total_bytes")
            esize = 4 if b["dtype"] in ("fp32", "i32") else 2
            n = b["shape"][0] * (b["shape"][1] if len(b["shape"]) > 1 else 1)
            check(b["bytes"] == n * esize, f"{w}: {b['name']} bytes {b['bytes']} != shape {b['shape']} x {esize}")
            check(b["atoms"] * b["atom_cols"] == b["shape"][-1], f"{w}: {b['name']} atoms x atom_cols != cols")
            end = b["offset"] + b["total_bytes"]
        check(sm["buffers_bytes"] == sum(b["total_bytes"] for b in bufs), f"{w}: buffers_bytes")
        bars = k["barriers"]
        check(sm["barriers_bytes"] == 8 * sum(b["copies"] for b in bars), f"{w}: barriers_bytes")
        if bars:
            check(sm["barriers_offset"] >= end and sm["barriers_offset"] == bars[0]["offset"], f"{w}: barriers_offset")
        check(sm["used"] == sm["buffers_bytes"] + sm["padding_bytes"] + sm["barriers_bytes"], f"{w}: used")
        check(sm["total"] == sm["used"] + sm["base_alignment_slack"] <= sm["limit"] == 232448, f"{w}: total")
        check(sm["headroom"] == sm["limit"] - sm["total"], f"{w}: headroom")
        for g in k["load_groups"]:
            full, empty = by_name(bars, g["full"]), by_name(bars, g["empty"])
            check(full.get("tx_bytes") == g["bytes"] and full.get("role") == "full", f"{w}: {g['name']} full barrier")
            check(empty.get("role") == "empty" and empty.get("tx_bytes") == 0, f"{w}: {g['name']} empty barrier")
            check(g["bytes"] == sum(by_name(sm["buffers"], b)["bytes"] for b in g["buffers"]), f"{w}: {g['name']} bytes")
            for ld in g["loads"]:
                by_name(k["tma_maps"], ld["map"])
                check(ld["boxes"] == by_name(sm["buffers"], ld["buffer"])["atoms"], f"{w}: {ld['statement']} boxes")
        check(all(isinstance(n, str) and n for n in k["decisions"]), f"{w}: decisions")


def main():
    d = sys.argv[1]
    decls = {}
    for name in ("gemm", "attn_fwd", "attn_d64", "gemm_cluster2", "two", "odd"):
        with open(f"{d}/{name}.decls") as f:
            decls[name] = [l.strip() for l in f if l.strip()]
    reps = {name: load(d, name + ".json") for name in decls}
    for name, rep in reps.items():
        common(rep, decls[name], name)

    # gemm.tk as committed
    rep = reps["gemm"]
    check(rep["source"] == "gemm.tk", "gemm: source")
    check([(p["name"], p["value"]) for p in rep["params"]] ==
          [("BM", 128), ("BN", 256), ("BK", 64), ("STAGES", 4), ("PERSISTENT", 1), ("GROUP", 8), ("CLUSTER", 1)],
          f"gemm: params {rep['params']}")
    k = kernel(rep, "gemm")
    la = k["launcher"]
    check([(p["kind"], p["name"]) for p in la["params"]] ==
          [("tensor", "A"), ("tensor", "B"), ("tensor", "C"), ("dim", "M"), ("dim", "K"), ("dim", "N"),
           ("stream", "stream")], "gemm: launcher params")
    a = by_name(la["params"], "A")
    check(a["mode"] == "in" and a["dtype"] == "bf16" and a["tma"] and a["base_alignment"] == 16 and
          a["c_type"] == "const void *" and [s["text"] for s in a["shape"]] == ["M", "K"], f"gemm: A {a}")
    check(by_name(la["params"], "C")["mode"] == "out" and by_name(la["params"], "C")["c_type"] == "void *", "gemm: C")
    check(la["requires"] == [], "gemm: requires")
    r = k["roles"]
    check((r["threads"], r["consumers"], r["producer_registers"], r["consumer_registers"]) == (384, 2, 40, 232),
          f"gemm: roles {r}")
    check(r["register_split"]["why"] == "default" and r["register_split"]["used"] == 64512, "gemm: register split")
    check(k["registers"]["estimate"] == 152 and k["registers"]["parts"] == [{"name": "acc", "registers": 128}] and
          k["registers"]["overhead"] == 24, f"gemm: registers {k['registers']}")
    check(len(k["products"]) == 1 and k["products"][0]["instruction"] == "wgmma m64n256k16" and
          k["products"][0]["instructions_per_warpgroup"] == 4 and k["products"][0]["zero_first"], "gemm: products")
    g = k["grid"]
    check([(x["name"], x["extent"], x["reversed"]) for x in g["axes"]] ==
          [("m", "cdiv(M, BM)", False), ("n", "cdiv(N, BN)", False)], f"gemm: axes {g['axes']}")
    check(g["persistent"] and g["tiles_per_turn"] == 1 and g["order"] == "super_m" and g["order_group"] == 8 and
          g["cluster"] == {"size": 1, "axis": None} and
          g["programmatic_launch"] == {"waits": False, "lets_next_start": False}, f"gemm: grid {g}")
    check(k["pipeline"] == {"variable": "k", "trips": "cdiv(K, BK)", "stages": 4, "overlap": False, "pingpong": False,
                            "lookahead": False,
                            "no_lookahead": "the first step's products stay in flight into the next step, as in a GEMM main loop",
                            "early_setup_release": False, "staging": True, "setup_stages": 1, "narrow_tail": None,
                            "no_narrow_tail": None, "lazy_sums": []},
          f"gemm: pipeline {k['pipeline']}")
    sm = k["shared_memory"]
    check((sm["used"], sm["total"], sm["limit"], sm["headroom"]) == (229440, 230464, 232448, 1984), f"gemm: smem {sm}")
    ba, bb, bs = by_name(sm["buffers"], "a"), by_name(sm["buffers"], "b"), by_name(sm["buffers"], "staging")
    check((ba["swizzle"], ba["offset"], ba["bytes"], ba["copies"], ba["kind"], ba["group"], ba["shape"], ba["atoms"]) ==
          ("128B", 0, 16384, 4, "ring", "a_b", [128, 64], 1), f"gemm: a {ba}")
    check((bb["swizzle"], bb["offset"], bb["bytes"], bb["copies"], bb["atoms"], bb["alignment"]) ==
          ("128B", 65536, 32768, 4, 4, 1024), f"gemm: b {bb}")
    check((bs["kind"], bs["offset"], bs["copies"], bs["group"]) == ("staging", 196608, 4, None), f"gemm: staging {bs}")
    check(sm["staging"] == {"buffer": "staging", "per_warpgroup": 2}, "gemm: staging")
    check(sm["barriers_offset"] == 229376 and sm["barriers_bytes"] == 64, "gemm: barriers in smem")
    check([(b["name"], b["copies"], b["count"], b["tx_bytes"], b["offset"]) for b in k["barriers"]] ==
          [("full_a_b", 4, 1, 49152, 229376), ("empty_a_b", 4, 2, 0, 229408)], f"gemm: barriers {k['barriers']}")
    lg = k["load_groups"]
    check(len(lg) == 1 and lg[0]["name"] == "a_b" and lg[0]["when"] == "per_step" and lg[0]["bytes"] == 49152 and
          [(l["statement"], l["map"], l["boxes"], l["multicast"]) for l in lg[0]["loads"]] ==
          [("a <- A[block.m, k]", "tm_A_128x64", 1, False), ("b <- B[k, block.n]", "tm_B_64x64", 4, False)],
          f"gemm: load groups {lg}")
    check([(m["name"], m["tensor"], m["box"], m["swizzle"], m["store"]) for m in k["tma_maps"]] ==
          [("tm_A_128x64", "A", [64, 128], "128B", False), ("tm_B_64x64", "B", [64, 64], "128B", False),
           ("tm_C_64x64", "C", [64, 64], "128B", True)], f"gemm: maps {k['tma_maps']}")
    check(k["staged_stores"] == [{"statement": "C[block.m, block.n] <- E(acc)", "map": "tm_C_64x64",
                                  "chunk": [64, 64]}], f"gemm: staged stores {k['staged_stores']}")
    check(len(k["decisions"]) >= 5, "gemm: decisions")

    # gemm.tk -D CLUSTER=2: multicast of b, releases from both blocks
    k = kernel(reps["gemm_cluster2"], "gemm")
    check(by_name(reps["gemm_cluster2"]["params"], "CLUSTER") == {"name": "CLUSTER", "value": 2, "overridden": True},
          "cluster2: CLUSTER param")
    check(k["grid"]["cluster"] == {"size": 2, "axis": "m"}, "cluster2: cluster")
    lg = k["load_groups"][0]
    check(lg["multicast"] and [l["multicast"] for l in lg["loads"]] == [False, True], f"cluster2: multicast {lg}")
    check(by_name(k["barriers"], "empty_a_b")["count"] == 4, "cluster2: empty_a_b count")

    # attn_fwd.tk as committed
    rep = reps["attn_fwd"]
    k = kernel(rep, "attn_fwd")
    la = k["launcher"]
    check([p["name"] for p in la["params"]] ==
          ["Q", "K", "V", "O", "L", "B", "H", "N", "HKV", "scale", "stream"], "attn: params")
    q = by_name(la["params"], "Q")
    check(q["shape"][3] == {"text": "D", "runtime": False, "value": 128} and q["tma"], f"attn: Q {q}")
    l = by_name(la["params"], "L")
    check(not l["tma"] and l["base_alignment"] == 4 and l["dtype"] == "fp32", f"attn: L {l}")
    check(by_name(la["params"], "scale") == {"kind": "scalar", "name": "scale", "c_type": "float", "dtype": "fp32"},
          "attn: scale")
    check(la["requires"] == ["H % HKV == 0"], f"attn: requires {la['requires']}")
    r = k["roles"]
    check((r["producer_registers"], r["consumer_registers"], r["register_split"]["why"]) == (24, 240, "heavy_consumers"),
          f"attn: roles {r}")
    check(k["registers"]["estimate"] == 228 and k["registers"]["temporaries_peak"] == 4, "attn: registers")
    check(k["pipeline"] == {"variable": "j", "trips": "steps", "stages": 2, "overlap": True, "pingpong": True,
                            "lookahead": True, "no_lookahead": None, "early_setup_release": True, "staging": True,
                            "setup_stages": 1, "narrow_tail": {"tile": "s", "columns": 64, "live": "N - j * BKV"},
                            "no_narrow_tail": None, "lazy_sums": ["l"]},
          f"attn: pipeline {k['pipeline']}")
    check([p["deferred"] for p in k["products"]] == [False, True] and k["products"][1]["a"] == "registers",
          "attn: products")
    check([(x["name"], x["reversed"], x["folded"]) for x in k["grid"]["axes"]] ==
          [("b", False, False), ("h", False, False), ("q", False, True)] and k["grid"]["tiles_per_turn"] == 1 and
          k["grid"]["order"] == "row_major" and k["grid"]["order_group"] is None and
          k["grid"]["cluster"] == {"size": 2, "axis": "q"}, f"attn: grid {k['grid']}")
    check(k["shared_memory"]["total"] == 230480 and k["shared_memory"]["staging"]["per_warpgroup"] == 2 and
          [b["shape"] for b in k["shared_memory"]["buffers"] if b["name"] == "staging"] == [[64, 32]], "attn: smem")
    check([(g["name"], g["when"], g["bytes"]) for g in k["load_groups"]] ==
          [("k", "per_step", 45056), ("v", "per_step", 45056), ("q", "per_work_tile", 32768)], "attn: load groups")
    check([(b["name"], b["copies"], b["count"], b["tx_bytes"]) for b in k["barriers"]] ==
          [("full_k", 2, 1, 45056), ("empty_k", 2, 4, 0), ("full_v", 2, 1, 45056), ("empty_v", 2, 4, 0),
           ("full_q", 1, 1, 32768), ("empty_q", 1, 2, 0)], f"attn: barriers {k['barriers']}")
    check(by_name(k["tma_maps"], "tm_K_176x64")["box"] == [64, 176, 1, 1], "attn: K box")

    # attn_fwd.tk -D D=64: three consumers, two copies of q (setup_stages = 2)
    k = kernel(reps["attn_d64"], "attn_fwd")
    check(k["pipeline"]["setup_stages"] == 2 and k["roles"]["consumers"] == 3,
          f"attn_d64: pipeline {k['pipeline']}")
    # 128-key blocks: a 64-column last step is not worth its registers
    check(k["pipeline"]["narrow_tail"] is None and k["pipeline"]["no_narrow_tail"] is None,
          f"attn_d64: narrow tail {k['pipeline']}")
    bq = by_name(k["shared_memory"]["buffers"], "q")
    check((bq["kind"], bq["copies"], bq["bytes"]) == ("once", 2, 24576), f"attn_d64: q {bq}")
    check([(b["name"], b["copies"], b["count"]) for b in k["barriers"] if b["name"].endswith("_q")] ==
          [("full_q", 2, 1), ("empty_q", 2, 3)], f"attn_d64: q barriers {k['barriers']}")

    # two.tk: two kernels, an i32 scalar, a literal compile-time dimension, a require
    rep = reps["two"]
    check([k["name"] for k in rep["kernels"]] == ["scaled_gemm", "rows"], "two: kernels")
    k = kernel(rep, "rows")
    w = by_name(k["launcher"]["params"], "window")
    check(w == {"kind": "scalar", "name": "window", "c_type": "int32_t", "dtype": "i32"}, f"two: window {w}")
    bias = by_name(k["launcher"]["params"], "Bias")
    check(bias["shape"][1] == {"text": "64", "runtime": False, "value": 64} and not bias["tma"], f"two: Bias {bias}")
    check(k["pipeline"]["trips"] == "min(window, N) / 64" and k["roles"]["register_split"]["why"] == "default",
          "two: rows pipeline")
    check(kernel(rep, "scaled_gemm")["launcher"]["requires"] == ["K % 8 == 0 && N % 8 == 0"], "two: requires")

    # a source name that must be escaped
    check(reps["odd"]["source"] == 'q"b\\s ??- x.tk', f"odd: source {reps['odd']['source']!r}")

    for f in failures:
        print("FAIL:", f)
    print(f"check_report.py: {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
