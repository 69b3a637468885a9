#!/bin/sh
# nvcc.sh FILE.tk OUT.so [tkc -D args...]: tkc to CUDA, nvcc for sm_90a (ptxas -v), registers and spills.
set -eu
f=$1; so=$2; shift 2
cu=${so%.so}.cu
build/tkc "$f" "$@" -o "$cu"
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Xcompiler -fPIC -shared -Xptxas -v "$cu" -o "$so" 2>&1 \
  | grep -E 'registers|spill' | sed "s|^|$(basename "$f") $* : |"
