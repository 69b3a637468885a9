#!/bin/sh
# The libraries of run 210 (pass_merge_bars.c: scratch barriers a step does not need), built here, one nvcc
# at a time, for one GPU call (run.sh):
#   OUT/bwd/main_cC.so   kernels.tk/attn_bwd.tk at D = 128 by OLD_TKC (tkc_attn_bwd_main: attn_bwd_split at N >= 2048)
#   OUT/bwd/mb_cC.so     the same file by NEW_TKC (bwdsplit.py calls it through tkc_attn_bwd_split)
#   OUT/ab/{old,new}/K   bench/K.py build by each tkc, K = based, mamba2 (bench/ab_suite.py's layout)
#   OUT/san              bench/sanitize.py build by NEW_TKC of the kernels whose code changed
#   sh bench/experiments/barriers/build.sh OLD_TKC NEW_TKC OUT
set -eu
old=$1 new=$2 out=$3
mkdir -p "$out/bwd/log" "$out/ab/old" "$out/ab/new"
NVCC="nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Xcompiler -fPIC -shared -Xptxas -v"
for c in 0 1; do
    for side in main mb; do
        t=$old; [ $side = mb ] && t=$new
        "$t" kernels.tk/attn_bwd.tk -D D=128 -D CAUSAL=$c -o "$out/bwd/log/${side}_c$c.cu"
        $NVCC "$out/bwd/log/${side}_c$c.cu" -o "$out/bwd/${side}_c$c.so" > "$out/bwd/log/${side}_c$c.log" 2>&1
        if grep -q "[1-9][0-9]* bytes spill" "$out/bwd/log/${side}_c$c.log" || grep -q "C75[0-9][0-9]" "$out/bwd/log/${side}_c$c.log"; then
            echo "${side}_c$c: spill or C75xx"; exit 1
        fi
        echo "${side}_c$c ok"
    done
done
for k in based mamba2; do
    python3 bench/$k.py build --tkc "$old" --out "$out/ab/old/$k"
    python3 bench/$k.py build --tkc "$new" --out "$out/ab/new/$k"
done
python3 bench/sanitize.py build --tkc "$new" --out "$out/san" --only attn_bwd_split,attn_bwd_d128_causal,based,mamba2,mamba2_n128
# linear attention, decayed (its kd write lost a barrier) and plain (unchanged: the noise), for ab_la.py
for side in old new; do
    t=$old; [ $side = new ] && t=$new
    mkdir -p "$out/la/$side"
    for dec in 0 1; do
        sfx=; [ $dec = 1 ] && sfx=_decay
        "$t" kernels.tk/linear_attn.tk -D D=128 -D DECAY=$dec -o "$out/la/$side/linear_attn_d128$sfx.cu"
        $NVCC "$out/la/$side/linear_attn_d128$sfx.cu" -o "$out/la/$side/linear_attn_d128$sfx.so" > "$out/la/$side/d128$sfx.log" 2>&1
    done
done
python3 bench/sanitize.py build --tkc "$new" --out "$out/san2" --only linear_attn_d64_decay
