#!/usr/bin/env python3
"""Prints the harness's results.csv (or a recorded run under bench/runs/) as a short table (and the clock/power range from smi.csv)."""
import csv
import sys

from plot import read_run  # the one reader of result files, old and new formats


def f(x, d=1):
    try:
        return f"{float(x):.{d}f}"
    except (TypeError, ValueError):
        return "-"


def main():
    rows = read_run(sys.argv[1]).rows if len(sys.argv) > 1 else []
    print(f"{'suite':5} {'case':10} {'variant':17} {'shape':26} {'err':>8} {'tkc':>7} {'base':>7} {'ratio':>6} status")
    for r in rows:
        if r["suite"] == "gemm":
            shape = f"{r['M']}x{r['N']}x{r['K']}"
            err = r.get("rel_err")
            base = r.get("tflops_base")
        elif r["suite"] == "features":  # bench/features.py: one row per case, no timing
            shape = str(r.get("case", ""))
            err = r.get("rel_err")
            base = None
            r = dict(r, case="", variant=r.get("variant", ""))
        elif r["suite"] == "sanitize":  # bench/sanitize.py: one row per (kernel, tool); the tool in 'case'
            shape = " ".join(x for x in str(r.get("note", "")).split("; ") if x.startswith(("errors=", "hazards=")))
            err = r.get("rel_err")
            base = None
            r = dict(r, suite="sanit", variant=r.get("variant", ""))
        elif r["suite"] == "determinism":  # bench/determinism.py: one row per (variant, shape); the shape in 'case'
            shape = str(r.get("case", ""))
            err = r.get("rel_err")
            kind = next((x[5:] for x in str(r.get("note", "")).split("; ") if x.startswith("kind=")), "")
            base = None
            r = dict(r, suite="det", case=kind, variant=r.get("variant", ""))
        elif "B" not in r:
            continue
        else:
            shape = f"B{r['B']} H{r['H']}/{r['HKV']} N{r['N']} D{r['D']}{' c' if int(r.get('causal', 0)) == 1 else ''}"
            err = r.get("rel_err_o")
            bases = [float(r[k]) for k in ("tflops_cudnn", "tflops_flash") if r.get(k)]
            base = max(bases) if bases else None
        print(f"{r['suite']:5} {r['case']:10} {r['variant']:17} {shape:26} {f(err, 5) if err is not None else '-':>8} "
              f"{f(r.get('tflops_tkc')):>7} {f(base):>7} {f(r.get('ratio'), 3):>6} {r.get('status')}")
    if len(sys.argv) > 2:
        try:
            smi = list(csv.reader(open(sys.argv[2])))[1:]
            clk = [float(x[1].split()[0]) for x in smi if len(x) > 3]
            pw = [float(x[3].split()[0]) for x in smi if len(x) > 3]
            if clk:
                print(f"# SM clock {min(clk):.0f}-{max(clk):.0f} MHz, power up to {max(pw):.0f} W ({len(clk)} samples)")
        except Exception as ex:  # the log is optional
            print(f"# (no clock log: {ex})")


if __name__ == "__main__":
    main()
