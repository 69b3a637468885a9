# Sourced by gen.sh, gen3.sh, gen6.sh - gen9.sh (after they set $out): NVCC, build NAME CU, which
# compiles CU into $out/NAME.so with its ptxas report in $out/NAME.log and says when ptxas spilled,
# and build_variants TKC TK D VARIANTS: for each "name:-D args" entry of VARIANTS ('|' between
# them) TK built with -D D=D and those params as $out/rot_name_DD.so, in the background, and
# rotary_variants TKC TK V64 V128: the shipped kernels.tk/rotary.tk as "base" and TK's variants V64 at
# D = 64, V128 at D = 128.
NVCC="nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Xcompiler -fPIC -shared"
build() {  # name cu
    $NVCC -Xptxas -v "$2" -o "$out/$1.so" 2>"$out/$1.log" || { echo "build failed: $1"; cat "$out/$1.log"; exit 1; }
    if grep -q "[1-9][0-9]* bytes spill" "$out/$1.log"; then echo "$1: spills"; fi
}
build_variants() {  # tkc tk d variants
    IFS='|'
    for v in $4; do
        unset IFS
        n=${v%%:*}; dd=${v#*:}
        # shellcheck disable=SC2086
        "$1" -D D=$3 -D $dd "$2" -o "$out/rot_${n}_D$3.cu" || { echo "tkc rejects $n D$3"; continue; }
        build rot_${n}_D$3 "$out/rot_${n}_D$3.cu" &
    done
    unset IFS
}
rotary_variants() {  # tkc tk v64 v128
    for d in 64 128; do
        "$1" -D D=$d kernels.tk/rotary.tk -o "$out/rot_base_D$d.cu"
        build rot_base_D$d "$out/rot_base_D$d.cu" &
        if [ $d = 64 ]; then v=$3; else v=$4; fi
        build_variants "$1" "$2" $d "$v"
        wait
    done
}
