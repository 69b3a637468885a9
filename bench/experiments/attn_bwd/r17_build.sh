#!/bin/sh
# EXPERIMENT (not run yet): builds bwdsplit.py's libraries for the r17_*.tk variants of attn_bwd_split
# (NOTES_r17.md) and the baseline, one nvcc at a time:
#   LIB/main_cC.so   b9ae2b4's kernels.tk/attn_bwd.tk at D = 128 (attn_bwd_main: attn_bwd_split at N >= 2048)
#   LIB/NAME_cC.so   bench/experiments/attn_bwd/r17_NAME.tk (tkc_attn_bwd_split), C = CAUSAL 0 / 1
# with each ptxas report and plan in LIB/log/ and the CUDA in LIB/src/; a library with a spill or a C75xx
# warning (serialised wgmma) is removed, so bwdsplit.py does not time it.
#   sh bench/experiments/attn_bwd/r17_build.sh TKC LIB [NAME...]   (default: every r17_*.tk)
set -eu
tkc=$1 out=$2
shift 2
base=${BASE:-b9ae2b4}
d=bench/experiments/attn_bwd
mkdir -p "$out/log" "$out/src" "$out/base/inc"
git show "$base:kernels.tk/attn_bwd.tk" > "$out/base/attn_bwd.tk"
git show "$base:kernels.tk/inc/attn_fwd_kernel.tk" > "$out/base/inc/attn_fwd_kernel.tk"
NVCC="nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Xcompiler -fPIC -shared -Xptxas -v"
lib() {  # NAME C TK: LIB/NAME_cC.so
    n=$1_c$2
    "$tkc" "$3" -D D=128 -D CAUSAL=$2 --emit=plan > "$out/log/$n.plan"
    "$tkc" "$3" -D D=128 -D CAUSAL=$2 -o "$out/src/$n.cu"
    $NVCC "$out/src/$n.cu" -o "$out/$n.so" > "$out/log/$n.log" 2>&1
    r=$(grep -A3 "Compiling entry function.*tkc_attn_bwd_split_kernel" "$out/log/$n.log" | grep -o "Used [0-9]* registers" || true)
    if grep -q "[1-9][0-9]* bytes spill" "$out/log/$n.log" || grep -q "C75[0-9][0-9]" "$out/log/$n.log"; then
        echo "$n: REJECTED (spill or C75xx wgmma serialisation), library removed: $(grep -o "C75[0-9]*.*due to[^']*" "$out/log/$n.log" | head -1)"
        rm -f "$out/$n.so"
        return 0
    fi
    echo "$n: ok, attn_bwd_split $r, 0 spills, no C75xx"
}
names=${*:-$(cd $d && ls r17_*.tk | sed 's/^r17_//; s/\.tk$//')}
for c in 0 1; do
    lib main $c "$out/base/attn_bwd.tk"
    for n in $names; do lib "$n" $c "$d/r17_$n.tk"; done
done
ls "$out"/*_c0.so "$out"/*_c1.so
