#!/bin/sh
# builds bwdsplit.py's libraries: kernels.tk/attn_bwd.tk at D = 128 (its entry attn_bwd_main) and
# split128.tk (dQ by TMA reduce-add; split3: three stages) and split128_red.tk (dQ by red.global.add),
# causal and not, into LIB/{main,split,splitred,split3}_cC.so
#   sh bench/experiments/attn_bwd/bwdsplit.sh TKC LIB
set -eu
tkc=$1 out=$2
mkdir -p "$out"
NVCC="nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Xcompiler -fPIC -shared -Xptxas -v"
lib() {  # DIR NAME TKC-ARGS...: DIR/NAME.so (its ptxas report in DIR/NAME.log), nvcc in the background
    d=$1 n=$2
    shift 2
    "$tkc" "$@" -o "$d/$n.cu"
    $NVCC "$d/$n.cu" -o "$d/$n.so" 2>"$d/$n.log" &
}
mkdir -p "$out/d64"
for c in 0 1; do
    lib "$out" main_c$c -D D=128 -D CAUSAL=$c kernels.tk/attn_bwd.tk
    lib "$out" split_c$c -D CAUSAL=$c bench/experiments/attn_bwd/split128.tk
    lib "$out" splitred_c$c -D CAUSAL=$c bench/experiments/attn_bwd/split128_red.tk
    lib "$out" split3_c$c -D CAUSAL=$c -D STAGES=3 bench/experiments/attn_bwd/split128.tk
    # D = 64: split.tk (dQ a partial tile added from registers) against attn_bwd_main (attn_bwd_fused)
    lib "$out/d64" main_c$c -D D=64 -D CAUSAL=$c kernels.tk/attn_bwd.tk
    lib "$out/d64" split_c$c -D CAUSAL=$c bench/experiments/attn_bwd/split.tk
done
wait
grep -l "[1-9][0-9]* bytes spill" "$out"/*.log "$out"/d64/*.log || true
rm -f "$out"/*.cu "$out"/d64/*.cu
ls "$out"/*.so "$out"/d64/*.so
