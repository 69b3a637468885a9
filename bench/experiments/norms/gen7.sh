#!/bin/sh
# LayerNorm at D = 8192 with three blocks an SM (ptxas: 80 registers, 16 B of spills) against the
# shipped two (128 registers, none): at two blocks of 256 threads the kernel is latency-bound (run
# 159's ncu: 16 warps an SM, SM busy 55%, DRAM 68%); blocks_per_sm 3 was measured only at D <= 4096
# (run 176). Built here as OUT/ln_VARIANT_D8192.so for abnorms.py --only ln:
#   sh bench/experiments/norms/gen7.sh TKC [OUT]
set -eu
tkc=$1 out=${2:-.carry/nv7}
here=$(dirname "$0")
mkdir -p "$out"
. "$here/nvcc.sh"
"$tkc" -D D=8192 kernels.tk/layernorm.tk -o "$out/ln_old_D8192.cu"
"$tkc" -D D=8192 -D BLOCKS=3 kernels.tk/layernorm.tk -o "$out/ln_b3_D8192.cu"
build ln_old_D8192 "$out/ln_old_D8192.cu" &
build ln_b3_D8192 "$out/ln_b3_D8192.cu" &
wait
rm -f "$out"/*.cu
ls "$out"/*.so | wc -l
