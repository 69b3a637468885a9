#!/bin/sh
# Run 213's A/B for abnorms.py: OLD_TKC's and NEW_TKC's builds of kernels.tk/layernorm.tk, rmsnorm.tk and
# softmax.tk at D = 1024..8192 (ln_/rms_/sm_{old,new}_DD.so: the rowwise 16-byte store now written as
# __stwb, 5a9a9d0), and kernels.tk/rotary.tk (rot_{base,new}_DD.so: base = OLD_TKC on OLD_RTK, the
# pipelined TMA kernel; new = the shipped many-small-blocks kernel):
#   sh bench/experiments/norms/r18/gen_ab.sh OLD_TKC NEW_TKC OLD_RTK OUT
set -eu
old=$1 new=$2 ortk=$3 out=$4
mkdir -p "$out"
. bench/experiments/norms/nvcc.sh
for d in 1024 2048 4096 8192; do
    for pair in ln:layernorm rms:rmsnorm sm:softmax; do
        k=${pair%%:*}; tk=${pair#*:}
        "$old" -D D=$d kernels.tk/$tk.tk -o "$out/${k}_old_D$d.cu"
        "$new" -D D=$d kernels.tk/$tk.tk -o "$out/${k}_new_D$d.cu"
        build ${k}_old_D$d "$out/${k}_old_D$d.cu" &
        build ${k}_new_D$d "$out/${k}_new_D$d.cu"
        wait
    done
done
for d in 64 128; do
    "$old" -D D=$d "$ortk" -o "$out/rot_base_D$d.cu"
    "$new" -D D=$d kernels.tk/rotary.tk -o "$out/rot_new_D$d.cu"
    build rot_base_D$d "$out/rot_base_D$d.cu" &
    build rot_new_D$d "$out/rot_new_D$d.cu"
    wait
done
rm -f "$out"/*.cu
ls "$out"/*.so | wc -l
