#!/bin/sh
# Builds few.py's libraries: kernels.tk/attn_fwd.tk as fixed variants (no dispatch table), one nvcc at a time.
#   sh bench/experiments/attn_few/gen.sh TKC OUT [D...]
set -eu
tkc=$1 out=$2; shift 2
mkdir -p "$out/log"
for D in ${*:-64}; do for C in 0 1; do
  if [ $D = 64 ]; then pairs="long:SHORT=0 q128:BQ=128 short:SHORT=1 split:SPLIT=2"
  else pairs="long:SHORT=0 short:SHORT=1 split:SPLIT=2 k128:BKV=128 nc:CLUSTER=1"; fi
  for pair in $pairs; do
    n=${pair%%:*}; def=${pair#*:}
    "$tkc" kernels.tk/attn_fwd.tk --no-dispatch -D D=$D -D CAUSAL=$C -D $def -o "$out/log/d${D}_c${C}_$n.cu" || { echo "d${D}_c${C}_$n: tkc failed"; continue; }
    nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Xcompiler -fPIC -shared -Xptxas -v "$out/log/d${D}_c${C}_$n.cu" \
      -o "$out/d${D}_c${C}_$n.so" > "$out/log/d${D}_c${C}_$n.log" 2>&1 || { echo "d${D}_c${C}_$n: nvcc failed"; continue; }
    echo "d${D}_c${C}_$n: $(grep -o '[0-9]* bytes spill stores' "$out/log/d${D}_c${C}_$n.log" | sort -u | tr '\n' ' ') $(grep -c C75 "$out/log/d${D}_c${C}_$n.log") C75xx"
    rm -f "$out/log/d${D}_c${C}_$n.cu"
  done
done; done
