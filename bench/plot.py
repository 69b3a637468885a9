#!/usr/bin/env python3
"""Draws the recorded GPU runs: TFLOP/s of tkc against each baseline, by problem size.

  python3 bench/plot.py [--runs bench/runs] [--out docs/plots] [FILE ...]

Reads the harness's result rows from bench/runs/ (or the FILEs given): a CSV with a header row
(harness.py's results.csv from run 10 on, and run 1's attention rows); or files of one JSON object
per line, plain or with ';' in place of ',' (what results.csv held in runs 2-9, after a first line
'json'). Lines starting with
'#' are comments; '# NVIDIA ...' names the GPU. A file's run number and date come from its name,
YYYY-MM-DD-runN[-what].ext.

Each plot shows the kernel's current defaults. For every problem size the newest run that timed
that configuration supplies the row: tkc and the baselines from the same row, hence the same
run and process; each size's tick says which run. Writes, into --out:
  gemm.png                 kernels.tk/gemm.tk against cuBLAS: large shapes, and M = N = 4096 by K
  attn_d128.png, attn_d128_causal.png, attn_d64.png, attn_d64_causal.png
                           kernels.tk/attn_fwd.tk against cuDNN and FlashAttention 2 (PyTorch SDPA), and
                           FlashAttention-4 where the run timed it; where the harness timed the entry
                           attention() (its few-heads cases: tflops_entry in the CSV's note column),
                           that is tkc's bar
  suite_tk.png             based, hedgehog, decayed linear attention and Mamba-2 against ThunderKittens'
                           own kernels (bench/tk_baselines.py rows, *-tk-baselines.jsonl)
  linear_decode.png        linear layers at M = 1 and 16 against cuBLAS and the weight's copy
                           (bench/linear_decode.py rows, *-linear-decode*.jsonl; the newest file)
  norms.png                layernorm, rmsnorm, softmax, rotary against quack, eager PyTorch and the
                           copy roof (bench/norms.py rows, *-norms.jsonl; the newest file)
  attn_bwd.png             attention backward and forward + backward against FlashAttention-4, cuDNN
                           and FlashAttention 2 (bench/attn_bwd.py --fa4 rows; the newest file)
The PNGs are byte-for-byte reproducible with the same matplotlib and FreeType: fixed size, dpi
and fonts, and no software version or date in the PNG metadata (matplotlib 3.11.2's wheels give
the same bytes on the GPU machine and on the development machine: `pip download matplotlib==3.11.2`,
install with --target, run with PYTHONPATH).
"""
import argparse
import csv
import glob
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_GPU = "NVIDIA H200"  # every recorded run so far (bench/RESULTS.md); a '# NVIDIA ...' line overrides

TKC_COLOR = "#1f5fa8"
BASE_COLORS = {"cublas": "#9a9a9a", "cudnn": "#9a9a9a", "flash": "#cfcfcf", "tk": "#9a9a9a", "copy": "#cfcfcf",
               "cublas_linear": "#9a9a9a", "fa4": "#6b6b6b", "quack": "#6b6b6b", "eager": "#e3e3e3",
               "roof": "#cfcfcf", "tkc_p0": "#7fa7d6"}
BASE_NAMES = {"cublas": "cuBLAS (torch.matmul)", "cudnn": "cuDNN (PyTorch SDPA)",
              "flash": "FlashAttention 2 (PyTorch SDPA)", "tk": "ThunderKittens (its own kernel, same run)",
              "copy": "device copy of the weight (read + write)", "cublas_linear": "cuBLAS (F.linear, with the bias)",
              "fa4": "FlashAttention-4 (CuTe-DSL, SM90)", "quack": "quack (CuTe-DSL)", "eager": "PyTorch eager",
              "roof": "device copy of the same bytes (fastest of three)",
              "tkc_p0": "tkc at p = 0 (its DROPOUT = 0 build: quack's function)"}


# ---- reading ----------------------------------------------------------------------------------
class Run:
    def __init__(self, path):
        self.path = path
        self.name = os.path.basename(path)
        m = re.match(r"(\d{4}-\d{2}-\d{2})-run(\d+)", self.name)
        self.date = m.group(1) if m else ""
        self.number = int(m.group(2)) if m else 0
        self.gpu = DEFAULT_GPU
        self.rows = []

    def key(self):
        return (self.date, self.number, self.name)


def number(s):
    if not isinstance(s, str):
        return s
    for conv in (int, float):
        try:
            return conv(s)
        except ValueError:
            pass
    return s


def read_run(path):
    run = Run(path)
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    body = []
    for line in lines:
        if line.startswith("#"):
            m = re.match(r"#\s*(NVIDIA [^,]*?)(\s{2,}|,|$)", line)
            if m:
                run.gpu = m.group(1).strip()
        elif line.strip():
            body.append(line)
    if not body:
        return run
    if body[0].strip() == "json" or body[0].lstrip().startswith("{"):
        for line in body:
            if not line.lstrip().startswith("{"):
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                row = json.loads(line.replace(";", ","))
            run.rows.append(row)
    else:  # a CSV with a header row
        for row in csv.DictReader(body):
            r = {k: number(v) for k, v in row.items() if v not in ("", None)}
            # the harness keeps its extra keys in the note column: "k=v; k=v" (tflops_entry, tflops_fa4)
            for kv in str(r.get("note", "")).split(";"):
                k, eq, v = kv.strip().partition("=")
                if eq and k.startswith("tflops_") and k not in r:
                    r[k] = number(v)
            run.rows.append(r)
    for row in run.rows:
        row["_run"] = run
    return run


def timed(row):
    return row.get("status") == "ok" and isinstance(row.get("tflops_tkc"), (int, float))


# ---- which rows measured today's defaults ---------------------------------------------------------
def gemm_is_default(run, row):
    # 'gemm' is kernels.tk/gemm.tk with its defaults in every run (128x256x64, 4 stages,
    # persistent, super_m(8); CLUSTER = 1 since it exists)
    return row.get("suite") == "gemm" and row.get("variant") == "gemm"


# attn_fwd.tk's defaults per head dim and mask came from run 3's tuning (commit 4d0af3b): from run 4
# on the harness's attn_d128[_causal] / attn_d64[_causal] are those defaults; run 3 measured them
# under the names below; runs 1 and 2 timed the earlier defaults (128 x 128 blocks, one block per
# tile), which are not shown.
RUN3_ATTN = {(128, 0): "attn_d128_k176_p", (128, 1): "attn_d128_causal",
             (64, 0): "attn_d64_q192_p", (64, 1): "attn_d64_q192_causal"}
ATTN_DEFAULTS = {(128, 0): "128 x 176 blocks, persistent, clusters of 2", (128, 1): "128 x 128 blocks, persistent, folded",
                 (64, 0): "192 x 128 blocks, persistent", (64, 1): "192 x 128 blocks, persistent, folded"}


def attn_is_default(run, row, D, causal):
    if row.get("suite") != "attn" or row.get("D") != D or int(row.get("causal", 0)) != causal:
        return False
    if row.get("layout", "bhsd") != "bhsd":
        return False
    if run.number >= 4:
        return row.get("variant") == f"attn_d{D}" + ("_causal" if causal else "")
    if run.number == 3:
        return row.get("variant") == RUN3_ATTN[(D, causal)]
    return False


def newest(runs, select, key):
    """{key(row): row} over the rows select() accepts, the newest run winning (the first such row
    within a run)."""
    best = {}
    for run in sorted(runs, key=Run.key):
        seen = {}
        for row in run.rows:
            if timed(row) and select(run, row):
                seen.setdefault(key(row), row)
        best.update(seen)
    return best


# ---- drawing ----------------------------------------------------------------------------------
def setup_matplotlib():
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams.update({
        "font.family": "DejaVu Sans",  # ships with matplotlib: the same glyphs everywhere
        "font.size": 9,
        "axes.titlesize": 10,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.axisbelow": True,
        "svg.hashsalt": "tkc",
        "savefig.dpi": 150,
    })
    import matplotlib.pyplot as plt
    return plt


def run_list(rows):
    runs = sorted({r["_run"] for r in rows}, key=Run.key)
    nums = ", ".join(str(r.number) for r in runs)
    dates = sorted({r.date for r in runs if r.date})
    gpus = sorted({r.gpu for r in runs})
    return f"run{'s' if len(runs) > 1 else ''} {nums}", " / ".join(dates), " / ".join(gpus)


def field(baseline):
    """The row field with a baseline's TFLOP/s (the GEMM suite calls cuBLAS 'base')."""
    return "tflops_" + ("base" if baseline in ("cublas", "cublas_linear") else baseline)


def bars(ax, labels, rows, bases, ymax=None, ratio_to=None, unit="TFLOP/s"):
    """Grouped bars: tkc and each baseline per problem size, values on top, the ratio of tkc to the
    best baseline (or to the baselines ratio_to names, each) under the tick."""
    n = 1 + len(bases)
    width = 0.8 / n
    xs = list(range(len(rows)))
    series = [("tkc", "tflops_tkc", TKC_COLOR, "tkc")] + [
        (b, field(b), BASE_COLORS[b], BASE_NAMES[b]) for b in bases]
    top = 0
    for i, (name, key, color, label) in enumerate(series):
        labelled = False
        for x, row in zip(xs, rows):
            v = row.get(key)
            if not isinstance(v, (int, float)):
                continue
            top = max(top, v)
            pos = x - 0.4 + width * (i + 0.5)
            ax.bar(pos, v, width * 0.92, color=color, label=None if labelled else label, edgecolor="none")
            labelled = True
            ax.text(pos, v + 6, f"{v:.0f}", ha="center", va="bottom", fontsize=6.5, rotation=90 if n > 2 else 0,
                    color="#222222")
    ticks = []
    for label, row in zip(labels, rows):
        if ratio_to:
            ratio = "".join(f"\n{row['tflops_tkc'] / row[field(b)]:.2f}x {b}" for b in ratio_to
                            if isinstance(row.get(field(b)), (int, float)))
        else:
            base = [row.get(field(b)) for b in bases]
            base = [v for v in base if isinstance(v, (int, float))]
            ratio = f"\n{row['tflops_tkc'] / max(base):.2f}x" if base else ""
        ticks.append(f"{label}\nrun {row['_run'].number}{ratio}")
    ax.set_xticks(xs)
    ax.set_xticklabels(ticks, fontsize=7.5)
    ax.set_ylim(0, ymax or top * 1.18)
    ax.set_ylabel(unit)
    ax.grid(axis="y", color="#e6e6e6", linewidth=0.6)
    ax.set_xlim(-0.6, len(rows) - 0.4)


def header(fig, title, subtitle, axes):
    """The title, a line under it, and one legend row for every series of the axes."""
    fig.suptitle(title, fontsize=10.5, y=0.985)
    fig.text(0.5, 0.915, subtitle, ha="center", va="center", fontsize=8.5, color="#333333")
    seen = {}
    for ax in axes:
        for h, l in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(l, h)
    fig.legend(list(seen.values()), list(seen.keys()), loc="center", bbox_to_anchor=(0.5, 0.865), ncol=len(seen),
               frameon=False, fontsize=8)


def footer(fig, text):
    fig.text(0.01, 0.012, text, fontsize=6.5, color="#555555", ha="left", va="bottom")


def save(fig, path):
    # no 'Software' (the matplotlib version) and no dates: the same inputs give the same bytes
    fig.savefig(path, dpi=150, metadata={"Software": None})
    print(f"wrote {os.path.relpath(path, ROOT)}")


def plot_gemm(plt, runs, out):
    rows = newest(runs, gemm_is_default, lambda r: (r["M"], r["N"], r["K"]))
    if not rows:
        print("no timed GEMM rows", file=sys.stderr)
        return
    big = sorted((k for k in rows if 2 * k[0] * k[1] * k[2] >= 2 * 4096 ** 3),
                 key=lambda k: (k != (k[0],) * 3, k[0] * k[1] * k[2], k))
    sweep = sorted(k for k in rows if k[0] == k[1] == 4096)
    fig, axes = plt.subplots(1, 2, figsize=(11, 5), gridspec_kw={"width_ratios": [len(big) or 1, len(sweep) or 1]})
    ymax = max(max(r.get("tflops_tkc", 0), r.get("tflops_base") or 0) for r in rows.values()) * 1.15

    def name(k):
        M, N, K = k
        return f"{M}³" if M == N == K else f"{M}x{N}\nx{K}"

    bars(axes[0], [name(k) for k in big], [rows[k] for k in big], ["cublas"], ymax)
    axes[0].set_title("large problems (M x N x K)")
    bars(axes[1], [f"K={k[2]}" for k in sweep], [rows[k] for k in sweep], ["cublas"], ymax)
    axes[1].set_title("M = N = 4096, by K")
    axes[1].set_ylabel("")
    runs_s, dates, gpus = run_list(list(rows.values()))
    header(fig, f"GEMM, bf16 in, fp32 accumulate, bf16 out: tkc vs cuBLAS, {gpus}",
           "tkc: kernels.tk/gemm.tk with its defaults (128 x 256 x 64 tiles, 4 stages, persistent, super_m(8))", axes)
    footer(fig, f"{gpus}, {runs_s} ({dates}; bench/runs/). TFLOP/s = 2MNK / median time (CUDA events, L2 flushed), "
                "tkc and cuBLAS timed alternately in one process. Under each size: the run, and tkc / cuBLAS.")
    fig.tight_layout(rect=(0, 0.035, 1, 0.87))
    save(fig, os.path.join(out, "gemm.png"))
    plt.close(fig)


def plot_attn(plt, runs, out, D, causal):
    rows = newest(runs, lambda run, r: attn_is_default(run, r, D, causal), lambda r: (r["B"], r["H"], r["HKV"], r["N"]))
    stem = f"attn_d{D}" + ("_causal" if causal else "")
    if not rows:
        print(f"no timed rows for {stem}", file=sys.stderr)
        return
    keys = sorted(rows, key=lambda k: (k[3], k[0], k[1], k[2]))
    # where the harness timed the entry attention() (the few-heads cases), it is what a user calls
    entry = [k for k in keys if isinstance(rows[k].get("tflops_entry"), (int, float))]
    rows = {k: dict(rows[k], tflops_tkc=rows[k]["tflops_entry"]) if k in entry else rows[k] for k in keys}
    bases = [b for b in ("fa4", "cudnn", "flash") if any(isinstance(rows[k].get("tflops_" + b), (int, float)) for k in keys)]

    def name(k):
        B, H, HKV, N = k
        return f"N={N}\nB{B} H{H}" + (f"/{HKV}" if HKV != H else "")

    fig, ax = plt.subplots(figsize=(7.5 + 1.0 * len(bases), 5))
    bars(ax, [name(k) for k in keys], [rows[k] for k in keys], bases)
    runs_s, dates, gpus = run_list(list(rows.values()))
    mask = "causal" if causal else "no mask"
    short = {"fa4": "FlashAttention-4", "cudnn": "cuDNN", "flash": "FlashAttention 2"}
    vs = " and ".join(", ".join(short[b] for b in bases).rsplit(", ", 1))
    header(fig, f"Attention forward, head dim {D}, {mask}: tkc vs {vs} ({gpus})",
           f"bf16 Q, K, V, O; fp32 LSE. tkc: kernels.tk/attn_fwd.tk with its defaults ({ATTN_DEFAULTS[(D, causal)]})"
           + ("; B*H <= 8: its entry attention()" if entry else ""),
           [ax])
    footer(fig, f"{gpus}, {runs_s} ({dates}; bench/runs/). TFLOP/s = 4·B·H·N²·D{' / 2' if causal else ''} / median "
                "time (CUDA events, L2 flushed), all timed in one process.\nUnder each size: the run, and tkc / the "
                "fastest baseline.")
    fig.tight_layout(rect=(0, 0.06, 1, 0.88))
    save(fig, os.path.join(out, stem + ".png"))
    plt.close(fig)


SUITE_TK = [("based", "Based (feature dim 16 -> 273, value dim 64)", "tkc_tflops"),
            ("hedgehog", "Hedgehog (head dim 128, feature dim 64)", "tkc_tflops"),
            ("linear_attention", "decayed linear attention, D = 128", "tkc_tflops"),
            ("mamba2", "Mamba-2 (head dim 64, d_state 64)", "tkc_b2_tflops")]


def plot_suite_tk(plt, runs, out):
    """The newest run of bench/tk_baselines.py for each (kernel, T): tkc against ThunderKittens."""
    best = {}
    for run in sorted(runs, key=Run.key):
        if "tk-baselines" not in run.name:
            continue
        for r in run.rows:
            if r.get("kind") == "time" and "T" in r and isinstance(r.get("tk_tflops"), (int, float)):
                best[(r["family"], r["T"])] = r
    fams = [f for f in SUITE_TK if any(k[0] == f[0] for k in best)]
    if not fams:
        print("no ThunderKittens rows", file=sys.stderr)
        return
    fig, axes = plt.subplots(1, len(fams), figsize=(3.2 * len(fams), 5), squeeze=False)
    used = []
    for ax, (fam, title, key) in zip(axes[0], fams):
        ts = sorted(t for f, t in best if f == fam)
        rows = [dict(tflops_tkc=best[(fam, t)][key], tflops_tk=best[(fam, t)]["tk_tflops"], _run=best[(fam, t)]["_run"])
                for t in ts]
        used += rows
        bars(ax, [f"T={t}" for t in ts], rows, ["tk"])
        ax.set_title(title, fontsize=8.5)
    runs_s, dates, gpus = run_list(used)
    header(fig, f"Linear attention and state-space kernels: tkc vs ThunderKittens, bf16, B16 H16 (Mamba-2 H32), {gpus}",
           "the same inputs and FLOP count for both (ThunderKittens' get_flops); TK's linear attention counts the zeroing of "
           "its output, which it needs", list(axes[0]))
    footer(fig, f"{gpus}, {runs_s} ({dates}; bench/runs/, bench/RESULTS.md). CUDA graphs of 10 calls, median of the run's "
                "alternated rounds (5-9, bench/RESULTS.md gives each). Under each size: the run, and tkc / ThunderKittens.")
    fig.tight_layout(rect=(0, 0.035, 1, 0.85))
    save(fig, os.path.join(out, "suite_tk.png"))
    plt.close(fig)


def plot_linear_decode(plt, runs, out):
    """The newest bench/linear_decode.py file: effective weight bandwidth of tkc's best kernel."""
    files = sorted((r for r in runs if "linear-decode" in r.name and r.rows), key=Run.key)
    if not files:
        print("no linear_decode rows", file=sys.stderr)
        return
    run = files[-1]
    fig, axes = plt.subplots(1, 2, figsize=(12, 5))
    for ax, M in zip(axes, (1, 16)):
        rs = [r for r in run.rows if r.get("M") == M]
        rows = [dict(tflops_tkc=r[r["best"] + "_GBs"], tflops_base=r["cublas_GBs"], tflops_copy=r["copy_GBs"], _run=run)
                for r in rs]
        bars(ax, [f"{r['N']}\nx{r['K']}" for r in rs], rows, ["cublas_linear", "copy"])
        ax.set_ylabel("GB/s of weight (N x K x 2 bytes) / time")
        ax.set_title(f"M = {M}")
    header(fig, f"Linear layers at decode sizes (Y = X W^T + b, bf16): tkc vs cuBLAS and the weight's copy, {run.gpu}",
           "tkc: the best of linear_decode and the split-K pair of kernels.tk/linear.tk (BND = 256, BNS = 256) and its "
           "split count, per shape", list(axes))
    footer(fig, f"{run.gpu}, run {run.number} ({run.date}; bench/runs/{run.name}). 20 back-to-back calls, median of "
                "alternated rounds, no L2 flush. Under each shape: tkc / the faster of cuBLAS and the copy.")
    fig.tight_layout(rect=(0, 0.035, 1, 0.86))
    save(fig, os.path.join(out, "linear_decode.png"))
    plt.close(fig)


NORMS = [("layernorm", "dropout (p = 0.1) + residual + LayerNorm"), ("rmsnorm", "residual + RMSNorm"),
         ("softmax", "row softmax"), ("rotary", "rotary, B16 N4096 H16")]


def plot_norms(plt, runs, out):
    """The newest bench/norms.py file: effective GB/s of the memory-bound kernels at M = 65536."""
    files = sorted((r for r in runs if r.name.endswith("-norms.jsonl") and any("gbps" in x for x in r.rows)), key=Run.key)
    if not files:
        print("no norms rows", file=sys.stderr)
        return
    run = files[-1]
    by = {}
    for r in run.rows:
        if isinstance(r.get("gbps"), (int, float)) and r.get("status") == "ok":
            by.setdefault((r["kernel"], r["shape"]), {})[r["impl"]] = r["gbps"]
    fig, axes = plt.subplots(1, len(NORMS), figsize=(15, 5.4), gridspec_kw={"width_ratios": [5, 4, 4, 4]})
    for ax, (kern, title) in zip(axes, NORMS):
        shapes = [sh for (k, sh) in by if k == kern and (kern == "rotary" or sh.startswith("M=65536 "))]
        shapes.sort(key=lambda sh: [int(v) if v.isdigit() else v for v in re.split(r"(\d+)", sh)])
        rows = []
        for sh in shapes:
            g = by[(kern, sh)]
            roof = max(g.get(c, 0) for c in ("copy", "copy_loop", "copy_sm"))
            rows.append(dict(tflops_tkc=g.get("tkc"), tflops_tkc_p0=g.get("tkc_p0"), tflops_quack=g.get("quack"),
                             tflops_eager=g.get("eager"), tflops_roof=roof or None, _run=run))
        bases = (["tkc_p0"] if kern == "layernorm" else []) + ["quack", "eager", "roof"]
        labels = [sh.replace("M=65536 ", "").replace("B=16 N=4096 H=16 ", "").replace(" ", "\n") for sh in shapes]
        bars(ax, labels, rows, bases, ymax=4900, ratio_to=["quack", "roof"], unit="GB/s (bytes that must move / time)")
        ax.set_title(title + ("" if kern == "rotary" else ", M = 65536"), fontsize=8.5)
        if ax is not axes[0]:
            ax.set_ylabel("")
    header(fig, f"Memory-bound kernels: tkc vs quack, PyTorch and a device copy, bf16, {run.gpu}",
           "quack's LayerNorm has no dropout: it is residual + LayerNorm, the function of tkc's p = 0 bar; roof: the "
           "fastest device copy of the same bytes", list(axes))
    footer(fig, f"{run.gpu}, run {run.number} ({run.date}; bench/runs/{run.name}). CUDA graphs over input sets of 3x "
                "the L2, median of 5 alternated rounds, all in one process. Under each shape: tkc / quack and tkc / "
                "the roof.")
    fig.tight_layout(rect=(0, 0.035, 1, 0.85))
    save(fig, os.path.join(out, "norms.png"))
    plt.close(fig)


def plot_attn_bwd(plt, runs, out):
    """The newest bench/attn_bwd.py file with FlashAttention-4 rows: the backward and forward +
    backward, B16 H16, by head dim, mask and N."""
    files = sorted((r for r in runs if "attn-bwd" in r.name and any("fa4_tflops" in x for x in r.rows)), key=Run.key)
    if not files:
        print("no attention backward rows with FA4", file=sys.stderr)
        return
    run = files[-1]
    fig, axes = plt.subplots(1, 2, figsize=(14, 5.2))
    for ax, what, title in ((axes[0], "bwd", "backward alone"), (axes[1], "fwd_bwd", "forward + backward")):
        # the .tk's defaults: mode "main" where the file has it (from run 149 on), else its one mode
        main = any(r.get("mode") == "main" for r in run.rows)
        rs = sorted((r for r in run.rows if r.get("kind") == "time" and r.get("what") == what
                     and (not main or r.get("mode") == "main")), key=lambda r: (r["D"], r["causal"], r["N"]))
        rows = [dict(tflops_tkc=r["tkc_tflops"], tflops_fa4=r.get("fa4_tflops"), tflops_cudnn=r.get("cudnn_tflops"),
                     tflops_flash=r.get("flash_tflops"), _run=run) for r in rs]
        bars(ax, [f"D{r['D']}{' c' if r['causal'] else ''}\nN={r['N']}" for r in rs], rows, ["fa4", "cudnn", "flash"],
             ratio_to=["fa4"])
        ax.set_title(title, fontsize=9)
    header(fig, f"Attention backward (dQ, dK, dV from O and the LSE): tkc vs FlashAttention-4, cuDNN and "
                f"FlashAttention 2, B16 H16, bf16, {run.gpu}",
           "tkc: kernels.tk/attn_bwd.tk's defaults (prep, then attn_bwd_main: dQ inside the main kernel, at D128 from N = 2048); "
           "'c': causal; FLOPs 2.5x the forward's 4BHN²D (halved when causal), forward + backward 3.5x", list(axes))
    footer(fig, f"{run.gpu}, run {run.number} ({run.date}; bench/runs/{run.name}). Median of 5 alternated rounds of "
                "5 calls, all in one process; the baselines' backward is torch.autograd.grad. Under each size: tkc / FA4.")
    fig.tight_layout(rect=(0, 0.035, 1, 0.85))
    save(fig, os.path.join(out, "attn_bwd.png"))
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", help="result files (default: every .jsonl and .csv in --runs)")
    ap.add_argument("--runs", default=os.path.join(HERE, "runs"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "plots"))
    args = ap.parse_args()
    # '-diag' runs compare builds A/B (some of them never committed): they are not today's defaults
    files = args.files or sorted(p for p in glob.glob(os.path.join(args.runs, "*.jsonl")) +
                                 glob.glob(os.path.join(args.runs, "*.csv")) if "-diag" not in os.path.basename(p))
    runs = [read_run(p) for p in files]
    if not any(r.rows for r in runs):
        print("no result rows found", file=sys.stderr)
        return 1
    os.makedirs(args.out, exist_ok=True)
    plt = setup_matplotlib()
    plot_gemm(plt, runs, args.out)
    for D in (128, 64):
        for causal in (0, 1):
            plot_attn(plt, runs, args.out, D, causal)
    plot_suite_tk(plt, runs, args.out)
    plot_linear_decode(plt, runs, args.out)
    plot_norms(plt, runs, args.out)
    plot_attn_bwd(plt, runs, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
