#!/bin/sh
# Rotary with two (or three) blocks an SM against the shipped one-block kernel (issue 13: rotary's
# table setup is not overlapped with another block's streaming at one block an SM), built here as
# OUT/rot_VARIANT_DD.so for abnorms.py --only rot:
#   sh bench/experiments/norms/gen3.sh TKC [OUT] [VARIANTS]
set -eu
tkc=$1 out=${2:-.carry/nv}
here=$(dirname "$0")
mkdir -p "$out"
. "$here/nvcc.sh"
# VARIANTS (optional, the third argument) replaces the list: "name:-D args ..." entries
variants=${3:-"base:BLK=1|b2:BLK=2|b2s2:BLK=2 -D STAGES=2|b2s4:BLK=2 -D STAGES=4|b3s2:BLK=3 -D STAGES=2"}
for d in 64 128; do
    build_variants "$tkc" "$here/rotary_var.tk" $d "$variants"
done
wait
ls "$out"/*.so | wc -l
