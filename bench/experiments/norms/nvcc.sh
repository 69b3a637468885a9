# Sourced by gen.sh and gen3.sh (after they set $out): NVCC, and build NAME CU, which compiles CU
# into $out/NAME.so with its ptxas report in $out/NAME.log and says when ptxas spilled.
NVCC="nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Xcompiler -fPIC -shared"
build() {  # name cu
    $NVCC -Xptxas -v "$2" -o "$out/$1.so" 2>"$out/$1.log" || { echo "build failed: $1"; cat "$out/$1.log"; exit 1; }
    if grep -q "[1-9][0-9]* bytes spill" "$out/$1.log"; then echo "$1: spills"; fi
}
