#!/bin/sh
# Issue 13 (rotary D = 64 at 0.94x quack): rotary in quack's shape against the shipped kernels.tk/rotary.tk
# ("base"), built here as OUT/rot_VARIANT_DD.so for abnorms.py --only rot:
#   sh bench/experiments/norms/r18/gen.sh TKC [OUT]
# q*: rot_q.tk, a block of RB positions x HP heads (every load issued before the first store), heads
#     fastest in the grid (quack: grid [H / tile_h, N / 16, B], 128 threads, 16 x 2 at D = 64);
# l*: rot_l.tk, rotary_rw.tk's walk over HB heads with the tables held, HP heads' loads batched a trip;
# rwh4: bench/experiments/norms/rotary_rw.tk as run 185 timed it (r32b8h4 / r16b8h4), the bridge;
# *w: the same CUDA with the fast path's 16-byte store written as __stwb (st.global.wb.v4): as tkc emits
#     it, NVVM splits the first of the two half-row stores of each head into four 4-byte stores
#     (st.global.u32 x 4 in the PTX; the second stays v4), in rotary_rw.tk too. A codegen diagnostic,
#     not DSL: it says whether those stores cost anything.
# One nvcc at a time (nvcc.sh's build_variants runs them in the background); ptxas reports in OUT/*.log.
set -eu
tkc=$1 out=${2:-.carry/rot18}
here=$(dirname "$0")
mkdir -p "$out"
. "$here/../nvcc.sh"
one() {  # name w tk d -D args...: w = 1 patches the fast-path uint4 stores
    n=$1 w=$2 tk=$3 d=$4
    shift 4
    cu=$out/rot_${n}_D$d.cu
    "$tkc" -D D=$d "$@" "$tk" -o "$cu" || { echo "tkc rejects $n D$d"; return 0; }
    if [ "$w" = 1 ]; then
        k=$(grep -c '\*reinterpret_cast<uint4 \*>(O + tkc_ro + tkc_gc) = tkc_u;' "$cu" || true)
        [ "$k" -gt 0 ] || { echo "gen.sh: no store to patch in $n D$d"; exit 1; }
        sed -i 's/\*reinterpret_cast<uint4 \*>(O + tkc_ro + tkc_gc) = tkc_u;/__stwb(reinterpret_cast<uint4 *>(O + tkc_ro + tkc_gc), tkc_u);/' "$cu"
    fi
    build "rot_${n}_D$d" "$cu"
    printf '%-16s %s\n' "${n}_D$d" "$(grep -A1 'tkc_rotary_kernel' "$out/rot_${n}_D$d.log" | grep -o '[0-9]* bytes spill stores' | head -1), $(grep -o 'Used [0-9]* registers' "$out/rot_${n}_D$d.log" | head -1)"
}
q=$here/rot_q.tk l=$here/rot_l.tk rw=$here/../rotary_rw.tk
for d in 64 128; do
    rb=$((d == 64 ? 32 : 16))
    one base 0 kernels.tk/rotary.tk $d
    for w in 0 1; do
        s=$([ $w = 1 ] && echo w || true)
        one q1b8$s $w "$q" $d -D HP=1 -D BLOCKS=8
        one q2b7$s $w "$q" $d -D HP=2 -D BLOCKS=7
        one q4b5$s $w "$q" $d -D HP=4 -D BLOCKS=5
        one l4h16b5$s $w "$l" $d -D HP=4 -D HB=16 -D BLOCKS=5
        one rwh4$s $w "$rw" $d -D RB=$rb -D BLOCKS=8 -D HB=4
    done
    one l2h8b7 0 "$l" $d -D HP=2 -D HB=8 -D BLOCKS=7
done
rm -f "$out"/*.cu
ls "$out"/*.so | wc -l
