#!/bin/sh
# Rotary (kernels.tk/rotary.tk, the TMA pipeline) at more blocks an SM. The shipped kernel holds one
# block an SM: at D = 64 (two consumer warpgroups) its 115,776 B of shared memory are 64 B over half
# an SM, and with a pipeline blocks_per_sm defaults to 1, so setmaxnreg hands one block the whole
# register file; rotary D64 is 0.94x quack (run 186). Variants: blocks_per_sm = 2, 3, 4 with one or two
# consumer warpgroups and 2-4 stages, against the shipped kernel ("base"), built here as
# OUT/rot_VARIANT_DD.so for abnorms.py --only rot:
#   sh bench/experiments/norms/gen8.sh TKC [OUT]
set -eu
tkc=$1 out=${2:-.carry/nv8}
here=$(dirname "$0")
mkdir -p "$out"
. "$here/nvcc.sh"
v64="c2s2b2:CONSUMERS=2 -D STAGES=2 -D BLOCKS=2|c1b2:CONSUMERS=1 -D BLOCKS=2|c1b3:CONSUMERS=1 -D BLOCKS=3|c1s4b4:CONSUMERS=1 -D STAGES=4 -D BLOCKS=4|c1s4b3:CONSUMERS=1 -D STAGES=4 -D BLOCKS=3"
v128="b2:BLOCKS=2|s2b2:STAGES=2 -D BLOCKS=2|c2b1:CONSUMERS=2 -D STAGES=2"
rotary_variants "$tkc" kernels.tk/rotary.tk "$v64" "$v128"
rm -f "$out"/*.cu
ls "$out"/*.so | wc -l
