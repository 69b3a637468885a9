#!/bin/sh
# Rotary in rowwise tiles (rotary_rw.tk: threads move 16-byte chunks, tables in registers, HB heads
# a block) against the shipped TMA-pipeline kernel (kernels.tk/rotary.tk, "base"), built here as
# OUT/rot_VARIANT_DD.so for abnorms.py --only rot:
#   sh bench/experiments/norms/gen6.sh TKC [OUT]
set -eu
tkc=$1 out=${2:-.carry/nv6}
here=$(dirname "$0")
mkdir -p "$out"
. "$here/nvcc.sh"
v128="r16b8:RB=16 -D BLOCKS=8|r16b8h4:RB=16 -D BLOCKS=8 -D HB=4|r16b8p:RB=16 -D BLOCKS=8 -D PERSISTENT=1|r32b6:RB=32 -D BLOCKS=6|r32b5h8:RB=32 -D BLOCKS=5 -D HB=8|r64b4:RB=64 -D BLOCKS=4"
v64="r32b8:RB=32 -D BLOCKS=8|r32b8h4:RB=32 -D BLOCKS=8 -D HB=4|r32b8p:RB=32 -D BLOCKS=8 -D PERSISTENT=1|r64b5:RB=64 -D BLOCKS=5|r64b4h8:RB=64 -D BLOCKS=4 -D HB=8|r64b6t:RB=64 -D BLOCKS=6 -D TL=1"
rotary_variants "$tkc" "$here/rotary_rw.tk" "$v64" "$v128"
ls "$out"/*.so | wc -l
