#!/bin/sh
# Layernorm and rmsnorm with 64 values of a row a thread (row_values = 64: fewer warps share a row,
# so fewer named barriers in the reductions, and twice the bytes in flight a thread) at three
# blocks of 128 threads an SM (168 registers, no spills), and layernorm D8192 with the shipped 32
# values at three blocks (80 registers, 16 B of spills), against the shipped kernels ("old"):
# layernorm with dropout at D = 2048 / 4096 / 8192 is 0.91 / 0.93 / 0.88x quack (run 175) where the
# rows are spread over warps, 0.97x at D = 1024 where they are not. Built here as
# OUT/{ln,rms}_VARIANT_DD.so for abnorms.py --only ln,rms:
#   sh bench/experiments/norms/gen7.sh TKC [OUT]
set -eu
tkc=$1 out=${2:-.carry/nv7}
here=$(dirname "$0")
mkdir -p "$out"
. "$here/nvcc.sh"
variant() {  # file prefix name D -D args...
    f=$1 k=$2 n=$3 d=$4
    shift 4
    "$tkc" -D D=$d "$@" "kernels.tk/$f.tk" -o "$out/${k}_${n}_D$d.cu"
    build "${k}_${n}_D$d" "$out/${k}_${n}_D$d.cu" &
}
for d in 1024 2048 4096 8192; do
    variant layernorm ln old $d
    variant rmsnorm rms old $d
done
variant layernorm ln b3 8192 -D BLOCKS=3
variant layernorm ln v64 1024 -D ROWV=64 -D RB=8 -D BLOCKS=3
for rb in "2048 4" "4096 2" "8192 1"; do
    set -- $rb
    variant layernorm ln v64 $1 -D ROWV=64 -D RB=$2 -D BLOCKS=3
    variant rmsnorm rms v64 $1 -D ROWV=64 -D RB=$2 -D BLOCKS=3
done
wait
rm -f "$out"/*.cu
ls "$out"/*.so | wc -l
