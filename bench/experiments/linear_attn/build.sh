#!/bin/sh
# Builds the A/B libraries: for the shipped kernel and each variant, .carry/la/<variant>/linear_attn_d128.so
# (DECAY = 0) and linear_attn_d128_decay.so (DECAY = 1), the C launcher tkc_linear_attn (the signature of
# kernels.tk/linear_attn.tk's, as bench/tk_baselines.py calls it), nvcc flags of bench/tk/build.sh.
# Run from the repository root: sh bench/experiments/linear_attn/build.sh [TKC]  (one nvcc at a time)
set -eu
TKC=${1:-build/tkc}
E=bench/experiments/linear_attn
for pair in shipped:kernels.tk/linear_attn.tk order:$E/la_order.tk 2wg:$E/la_2wg.tk 2wg_mem:$E/la_2wg_mem.tk; do
  name=${pair%%:*}; src=${pair#*:}
  out=.carry/la/$name
  mkdir -p "$out"
  for dec in 0 1; do
    so=$out/linear_attn_d128$([ $dec = 1 ] && echo _decay || true).so
    cu=${so%.so}.cu
    "$TKC" "$src" -D D=128 -D DECAY=$dec -o "$cu"
    "$TKC" "$src" -D D=128 -D DECAY=$dec --emit=plan > "${so%.so}.plan"
    nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Xcompiler -fPIC -shared -Xptxas -v "$cu" -o "$so" 2>&1 \
      | grep -E 'registers|spill|C75' | sed 's/in the function.*//' | sed "s|^|$name DECAY=$dec: |"
    rm -f "$cu"
  done
  sha=$(sha256sum "$src" | cut -c1-16)
  printf '{"variant": "%s", "source": "%s", "source_sha256_16": "%s", "tkc_commit": "%s"}\n' "$name" "$src" "$sha" \
    "$(git rev-parse HEAD)" > "$out/manifest.json"
done
