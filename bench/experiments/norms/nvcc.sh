# Sourced by gen.sh, gen3.sh, gen6.sh and gen7.sh (after they set $out): NVCC, build NAME CU, which
# compiles CU into $out/NAME.so with its ptxas report in $out/NAME.log and says when ptxas spilled,
# and build_variants TKC TK D VARIANTS: for each "name:-D args" entry of VARIANTS ('|' between
# them) TK built with -D D=D and those params as $out/rot_name_DD.so, in the background.
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
