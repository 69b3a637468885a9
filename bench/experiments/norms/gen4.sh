#!/bin/sh
# The rowwise kernels with one named barrier per row reduction (two copies of 'rowred') and with
# layernorm's variance from rowsum(s)'s moments (pass_row_moments.c), against a tkc from before
# both, built here as OUT/{ln,rms,sm}_VARIANT_DD.so for abnorms.py --only ln,rms,sm:
#   sh bench/experiments/norms/gen4.sh OLD_TKC BAR_TKC NEW_TKC [OUT]
# OLD_TKC: a tkc of d1400b9 (two barriers a reduction); BAR_TKC: of f593aae (one barrier); NEW_TKC:
# of c193e86 (one barrier and pass_row_moments, reverted in e6752b6). Run 172's v16 variants came
# from c193e86 with lower_rowwise.c's ROW_VALUES_MAX = 16 and 4 consumer warpgroups allowed (there
# and in verify.c), with and without plan_row_moments.
set -eu
old=$1 bar=$2 new=$3 out=${4:-.carry/nv}
here=$(dirname "$0")
mkdir -p "$out"
. "$here/nvcc.sh"
for d in 1024 2048 4096 8192; do
    "$old" -D D=$d kernels.tk/layernorm.tk -o "$out/ln_old_D$d.cu"
    "$bar" -D D=$d kernels.tk/layernorm.tk -o "$out/ln_bar_D$d.cu"
    "$new" -D D=$d kernels.tk/layernorm.tk -o "$out/ln_mom_D$d.cu"
    for k in rmsnorm:rms softmax:sm; do
        "$old" -D D=$d kernels.tk/${k%%:*}.tk -o "$out/${k#*:}_old_D$d.cu"
        "$bar" -D D=$d kernels.tk/${k%%:*}.tk -o "$out/${k#*:}_bar_D$d.cu"
    done
    for v in ln_old ln_bar ln_mom rms_old rms_bar; do build ${v}_D$d "$out/${v}_D$d.cu" & done
    wait
    for v in sm_old sm_bar; do build ${v}_D$d "$out/${v}_D$d.cu" & done
done
wait
ls "$out"/*.so | wc -l
