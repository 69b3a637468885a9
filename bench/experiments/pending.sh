#!/bin/sh
# The measurements the thirteenth and fourteenth sessions (2026-12-05) could not make (no device came), in
# device calls (below); all of them ran in the fifteenth session (bench/RESULTS.md runs 185-186, H100).
# Build here (nvcc, no GPU), carry the libraries, run there:
#   sh bench/experiments/pending.sh oldtkc           # builds a tkc of af2edfe (before programmatic launches)
#                                                    # at .carry/oldtkc/b/tkc (a git worktree)
#   sh bench/experiments/pending.sh build OLD_TKC    # OLD_TKC: that tkc
#   sh bench/experiments/pending.sh pack             # .carry/pack/all.tar.xz: what the device call carries
#   sh bench/experiments/pending.sh unpack && sh bench/experiments/pending.sh run [PART...]
#                                                    # on the GPU machine; logs in $OUT (default bench/out)
# What it measures:
#   1. rotary in rowwise tiles (norms/rotary_rw.tk, 12 variants) against kernels.tk/rotary.tk, tkc
#      alone, alternated (abnorms.py): issue 13, rotary at 0.89-0.96x quack;
#   2. programmatic dependent launch (src/pass_pdl.c) between an entry's kernels and after the kernel
#      that clears a zeroed output (which replaced cudaMemsetAsync): linear_auto's decode route (ROUTE
#      2: clear P, linear_decode, linear_splitk_out) and split-K route (ROUTE 1) built by this tkc and
#      by OLD_TKC, CUDA graphs over rotating weights (tune_linear.py --graph): issue 17, decode at
#      0.81 / 0.76 of the copy's bandwidth;
#   3. the decode variants of linear/decode_parts.tk: linear.tk's pair (XROUTE 2), per-split partials
#      (3), and one kernel storing Y.T from registers where N fills the SMs (4, staging = 0);
#   4. correctness on the GPU of what is new: the feature programs entry (a programmatic launch in each
#      branch), rotary_rows and rotary_rows_d64 (features.py against PyTorch, ragged and strided);
#   4b. layernorm and rmsnorm with 64 values of a row a thread (row_values = 64) at three blocks an SM,
#      and layernorm D8192 at three blocks (gen7.sh), against the shipped kernels;
#   4c. (fourteenth session) rotary_qk (q and k in one launch, kernels.tk/rotary.tk) under
#      compute-sanitizer memcheck and racecheck with its reference check, and the feature
#      perwg_branch_add (per_wg values added under if (wg == ...)): parts `qk` and `features`;
#   4d. attention backward at D = 128 in one kernel (bench/experiments/attn_bwd/split128.tk, keys split
#      over two consumer warpgroups, dQ's columns split) against attn_bwd_main: part `bwdsplit`
#      (bwdsplit.py: fp32 autograd check, then B16 H16 N4096 timed alternated; issue 14, 0.63x FA4);
#   5. Mamba-2, Based, Hedgehog and FFT conv against ThunderKittens in the same process
#      (tk_baselines.py; issue 16's Mamba-2 after the proxy fence of 3ab0786, last measured against TK
#      before it). Needs ThunderKittens at .carry/tk/src (the fetch tool's github:HazyResearch/ThunderKittens,
#      then git -C MIRROR archive HEAD include prototype kernels | tar -x -C .carry/tk/src; 0b55588d was
#      used before, bench/RESULTS.md run 111); the build step
#      makes .carry/tk/lib and .carry/tk/tkclib.
# What to carry: `pending.sh pack` puts every library above into .carry/pack/all.tar.xz (about 3.5 MB:
# the .so files compress tenfold), so one call carries all of it (carry .carry/pack) and runs
# `pending.sh unpack && pending.sh run PARTS` (each part under its own `timeout $T`: order the parts by
# what matters most, the files of the parts that finished come back even if the call is cut).
# Record the rows in bench/RESULTS.md; adopt what wins by the issues' measures.
set -eu
cmd=${1:?usage: pending.sh oldtkc | build OLD_TKC | pack | unpack | run [PART...]}
P=.carry/pend
case $cmd in
oldtkc)
    rm -rf .carry/oldtkc
    git worktree prune
    git worktree add -f .carry/oldtkc af2edfe >/dev/null
    cmake -S .carry/oldtkc -B .carry/oldtkc/b -DCMAKE_BUILD_TYPE=Release -DTKC_BUILD_TESTS=OFF -DTKC_WITH_SANITIZED=OFF >/dev/null
    cmake --build .carry/oldtkc/b >/dev/null
    ls -la .carry/oldtkc/b/tkc
    ;;
build)
    old=${2:?usage: pending.sh build OLD_TKC}
    mkdir -p $P
    cp build/tkc $P/tkc
    cp "$old" $P/tkc-old
    sh bench/experiments/norms/gen6.sh $P/tkc $P/nv6
    rm -f $P/nv6/*.cu
    sh bench/experiments/norms/gen7.sh $P/tkc $P/nv7
    python3 bench/tune_linear.py build --tkc $P/tkc --out $P/pdl \
        --variants "pdl2=ROUTE:2;old2=ROUTE:2,TKC:$P/tkc-old;pdl1=ROUTE:1;old1=ROUTE:1,TKC:$P/tkc-old"
    t=bench/experiments/linear/decode_parts.tk
    python3 bench/tune_linear.py build --tkc $P/tkc --out $P/dec \
        --variants "pair=TK:$t,XROUTE:2;parts=TK:$t,XROUTE:3;direct=TK:$t,XROUTE:4"
    python3 bench/features.py build --tkc $P/tkc --out $P/features --only entry,entry_large,rotary_rows,rotary_rows_d64,perwg_branch_add,wg_halves_tma_add
    python3 bench/sanitize.py build --tkc $P/tkc --out $P/san --only rotary,rotary_qk,rotary_qk_d64
    sh bench/experiments/attn_bwd/bwdsplit.sh $P/tkc $P/bsplit
    if [ -f .carry/tk/src/include/kittens.cuh ]; then
        bash bench/tk/build.sh
        TKC=$PWD/$P/tkc bash bench/tk/build.sh tkc
        du -sh .carry/tk/lib .carry/tk/tkclib
    else
        echo "no ThunderKittens at .carry/tk/src: the tk part cannot run (see the header)"
    fi
    du -sh $P
    ;;
pack)
    mkdir -p .carry/pack
    tar -cf - $P .carry/tk/lib .carry/tk/tkclib 2>/dev/null | xz -T2 -6 > .carry/pack/all.tar.xz
    ls -la .carry/pack/all.tar.xz
    ;;
unpack)
    xz -dc .carry/pack/all.tar.xz | tar -x
    ;;
run)
    # parts: the default is all of them (a device command has 10 minutes: set T so they fit)
    shift
    parts=${*:-features qk bwdsplit rotary rowvalues pdl decode tk}
    OUT=${OUT:-bench/out}
    mkdir -p "$OUT"
    nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader || true
    # each part under its own time limit (T seconds, default 280), so a hang costs one part, not the call
    T=${T:-280}
    export PYTHONUNBUFFERED=1
    for part in $parts; do
        echo "== $part"
        case $part in
        features) timeout "$T" python3 bench/features.py run --lib $P/features --only entry,entry_large,rotary_rows,rotary_rows_d64,perwg_branch_add,wg_halves_tma_add ;;
        qk) timeout "$T" python3 bench/sanitize.py run --lib $P/san --out /tmp/san --only rotary,rotary_qk,rotary_qk_d64 --tools memcheck,racecheck ;;
        bwdsplit) timeout "$T" sh -c "python3 bench/experiments/attn_bwd/bwdsplit.py $P/bsplit 5; python3 bench/experiments/attn_bwd/bwdsplit.py $P/bsplit/d64 5 64" ;;
        rotary) timeout "$T" python3 bench/experiments/norms/abnorms.py --lib $P/nv6 --only rot --rounds 7 ;;
        rowvalues) timeout "$T" python3 bench/experiments/norms/abnorms.py --lib $P/nv7 --only ln,rms --rounds 9 ;;
        pdl) timeout "$T" python3 bench/tune_linear.py run --lib $P/pdl --graph --fn linear_auto --ms 1,16,128 --rounds 7 ;;
        decode) timeout "$T" python3 bench/tune_linear.py run --lib $P/dec --graph --fn linear_exp --ms 1,16 --rounds 7 ;;
        tk) timeout "$T" python3 bench/tk_baselines.py --out "$OUT/tk" --rounds 5 --only mamba2 based hedgehog fftconv ;;
        *) echo "unknown part $part" >&2; exit 2 ;;
        esac 2>&1 | tee "$OUT/$part.txt"
    done
    ;;
*)
    echo "usage: pending.sh oldtkc | build OLD_TKC | pack | unpack | run [PART...]" >&2
    exit 2
    ;;
esac
