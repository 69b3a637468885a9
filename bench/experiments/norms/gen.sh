#!/bin/sh
# Builds the variants abnorms.py times, as shared libraries in OUT (default .carry/nv), here (nvcc
# is on this machine): OLD_TKC is a tkc built before keep() masks were hoisted (e.g. from 444b61e),
# NEW_TKC the current one.
#   sh bench/experiments/norms/gen.sh OLD_TKC NEW_TKC [OUT]
set -eu
old=$1 new=$2 out=${3:-.carry/nv}
here=$(dirname "$0")
mkdir -p "$out"
. "$here/nvcc.sh"
for d in 1024 2048 4096 8192; do
    "$old" -D D=$d kernels.tk/layernorm.tk -o "$out/ln_old_D$d.cu"
    "$new" -D D=$d kernels.tk/layernorm.tk -o "$out/ln_new_D$d.cu"
    # streaming loads of X and R: ld.global.nc with L1::no_allocate, so W and B stay in L1
    sed -e 's/__ldg(reinterpret_cast<const uint4 \*>(\([XR]\) + /tkc_ld_stream(reinterpret_cast<const uint4 *>(\1 + /' \
        -e 's|^namespace {$|namespace {\n__device__ __forceinline__ uint4 tkc_ld_stream(const uint4 *p) { uint4 v; asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p)); return v; }|' \
        "$out/ln_new_D$d.cu" > "$out/ln_nc_D$d.cu"
    grep -q tkc_ld_stream "$out/ln_nc_D$d.cu"
    for v in old new nc; do build ln_${v}_D$d "$out/ln_${v}_D$d.cu" & done
done
for d in 64 128; do
    for v in "base:PERSISTENT=0" "p1:PERSISTENT=1" "p1s2:PERSISTENT=1 -D SS=2" "st4p1s2:PERSISTENT=1 -D SS=2 -D STAGES=4"; do
        n=${v%%:*}; dd=${v#*:}
        # shellcheck disable=SC2086
        "$new" -D D=$d -D $dd "$here/rotary_var.tk" -o "$out/rot_${n}_D$d.cu"
        build rot_${n}_D$d "$out/rot_${n}_D$d.cu" &
    done
done
wait
ls "$out"/*.so | wc -l
