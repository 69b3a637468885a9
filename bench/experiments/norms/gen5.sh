#!/bin/sh
# The proxy fence before a release by every warp (3ab0786), measured on rotary (one fence per thread
# per pipeline step, the kernel most exposed to it): kernels.tk/rotary.tk built by a tkc from before
# the fence (OLD_TKC, e.g. of b06cdfb) as rot_base_DD and by the current one as rot_fence_DD, for
#   sh bench/experiments/norms/gen5.sh OLD_TKC NEW_TKC [OUT]
#   python3 bench/experiments/norms/abnorms.py --lib OUT --only rot     (on the GPU machine)
# Note that rot_base_DD is the kernel with the race of bench/RESULTS.md runs 178-179 (latent there:
# it showed only with staging = 0), so it is a timing reference, not a correct alternative.
set -eu
old=$1 new=$2 out=${3:-.carry/nvf}
here=$(dirname "$0")
mkdir -p "$out"
. "$here/nvcc.sh"
for d in 64 128; do
    "$old" -D D=$d kernels.tk/rotary.tk -o "$out/rot_base_D$d.cu"
    "$new" -D D=$d kernels.tk/rotary.tk -o "$out/rot_fence_D$d.cu"
    build rot_base_D$d "$out/rot_base_D$d.cu" &
    build rot_fence_D$d "$out/rot_fence_D$d.cu" &
done
wait
ls "$out"/*.so | wc -l
