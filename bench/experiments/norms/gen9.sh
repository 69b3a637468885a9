#!/bin/sh
# Rotary (kernels.tk/rotary.tk) storing its output from the threads' registers (staging = 0: no staging
# buffer, no TMA store, no wait for the buffer's last store) against the shipped kernel ("base"), at one
# and two blocks an SM: run 188's ncu put 72% of the consumers' stalls on an L1TEX scoreboard with DRAM
# at 80% of its peak. Built here as OUT/rot_VARIANT_DD.so for abnorms.py --only rot:
#   sh bench/experiments/norms/gen9.sh TKC [OUT]
set -eu
tkc=$1 out=${2:-.carry/nv9}
here=$(dirname "$0")
mkdir -p "$out"
. "$here/nvcc.sh"
sed 's/consumers = CONSUMERS;/consumers = CONSUMERS, staging = 0;/' kernels.tk/rotary.tk > "$out/rotary_s0.tk"
grep -q "staging = 0" "$out/rotary_s0.tk" || { echo "gen9.sh: no pipeline line to change"; exit 1; }
v="s0:STAGES=3|s0s4:STAGES=4|s0b2:BLOCKS=2 -D STAGES=2"
rotary_variants "$tkc" "$out/rotary_s0.tk" "$v" "$v"
rm -f "$out"/*.cu
ls "$out"/*.so | wc -l
