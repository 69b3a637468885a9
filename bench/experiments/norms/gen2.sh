#!/bin/sh
# Layernorm with 16 values a thread instead of 32 (rows over twice the warps; up to 4 consumer
# warpgroups): V16_TKC is a tkc built with lower_rowwise.c's ROW_VALUES_MAX = 16 and the consumer
# limit at 4 (in lower_rowwise.c and verify.c), NEW_TKC the current one. Libraries in OUT for
# abnorms.py (ln_old_*: the current kernel; ln_v16rRbB_*: RB rows, B blocks per SM).
#   sh bench/experiments/norms/gen2.sh V16_TKC NEW_TKC [OUT]
set -eu
v16=$1 new=$2 out=${3:-.carry/nv2}
mkdir -p "$out"
NVCC="nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Xcompiler -fPIC -shared"
for d in 1024 2048 4096 8192; do "$new" -D D=$d kernels.tk/layernorm.tk -o "$out/ln_old_D$d.cu"; done
for cfg in "1024 2 6" "1024 2 8" "2048 1 6" "2048 1 8" "4096 1 3" "4096 1 4" "8192 1 1" "8192 1 2"; do
    set -- $cfg
    "$v16" -D D=$1 -D RB=$2 -D BLOCKS=$3 kernels.tk/layernorm.tk -o "$out/ln_v16r$2b$3_D$1.cu"
done
for f in "$out"/ln_*.cu; do
    $NVCC -Xptxas -v "$f" -o "${f%.cu}.so" 2>"${f%.cu}.log" &
done
wait
grep -l "[1-9][0-9]* bytes spill" "$out"/*.log || true
ls "$out"/*.so | wc -l
