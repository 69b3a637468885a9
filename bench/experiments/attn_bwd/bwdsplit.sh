#!/bin/sh
# builds bwdsplit.py's libraries: kernels.tk/attn_bwd.tk at D = 128 (its entry attn_bwd_main) and
# split128.tk (dQ by TMA reduce-add; split3: three stages) and split128_red.tk (dQ by red.global.add),
# causal and not, into LIB/{main,split,splitred,split3}_cC.so
#   sh bench/experiments/attn_bwd/bwdsplit.sh TKC LIB
set -eu
tkc=$1 out=$2
mkdir -p "$out"
NVCC="nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Xcompiler -fPIC -shared -Xptxas -v"
for c in 0 1; do
    "$tkc" -D D=128 -D CAUSAL=$c kernels.tk/attn_bwd.tk -o "$out/main_c$c.cu"
    "$tkc" -D CAUSAL=$c bench/experiments/attn_bwd/split128.tk -o "$out/split_c$c.cu"
    "$tkc" -D CAUSAL=$c bench/experiments/attn_bwd/split128_red.tk -o "$out/splitred_c$c.cu"
    "$tkc" -D CAUSAL=$c -D STAGES=3 bench/experiments/attn_bwd/split128.tk -o "$out/split3_c$c.cu"
    for n in main split splitred split3; do
        $NVCC "$out/${n}_c$c.cu" -o "$out/${n}_c$c.so" 2>"$out/${n}_c$c.log" &
    done
done
# D = 64: split.tk (dQ a partial tile added from registers) against attn_bwd_main (attn_bwd_fused)
mkdir -p "$out/d64"
for c in 0 1; do
    "$tkc" -D D=64 -D CAUSAL=$c kernels.tk/attn_bwd.tk -o "$out/d64/main_c$c.cu"
    "$tkc" -D CAUSAL=$c bench/experiments/attn_bwd/split.tk -o "$out/d64/split_c$c.cu"
    for n in main split; do
        $NVCC "$out/d64/${n}_c$c.cu" -o "$out/d64/${n}_c$c.so" 2>"$out/d64/${n}_c$c.log" &
    done
done
wait
rm -f "$out"/d64/*.cu
grep -l "[1-9][0-9]* bytes spill" "$out"/*.log || true
rm -f "$out"/*.cu
ls "$out"/*.so
