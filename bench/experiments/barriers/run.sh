#!/bin/sh
# Run 210 on the GPU machine (libraries from build.sh in L, default .carry/mb): attention backward D = 128
# (bwdsplit.py: fp32-autograd checks, then old tkc's attn_bwd_main against the new tkc's attn_bwd_split,
# alternated), Based and Mamba-2 old against new (ab_suite.py: outputs must be bit-identical), linear
# attention old against new (ab_la.py), and compute-sanitizer memcheck and racecheck of the changed kernels.
L=${1:-.carry/mb}
R=${2:-9}
timeout 200 python3 bench/experiments/attn_bwd/bwdsplit.py $L/bwd $R
timeout 120 python3 bench/ab_suite.py run --lib $L/ab --only based,mamba2 --rounds $R
timeout 90 python3 bench/experiments/linear_attn/ab_la.py --lib $L/la --variants old new --rounds $R
timeout 150 python3 bench/sanitize.py run --lib $L/san --out /tmp/san210 --only attn_bwd_split,attn_bwd_d128_causal,based,mamba2,mamba2_n128 --tools memcheck,racecheck
timeout 40 python3 bench/sanitize.py run --lib $L/san2 --out /tmp/san210b --only linear_attn_d64_decay --tools memcheck,racecheck
