#!/bin/sh
# api_nvcc.sh - the header against nvcc's objects: for kernels.tk/gemm.tk, kernels.tk/attn_fwd.tk
# and tests/api/two.tk, a .cu that includes the generated header and then the generated CUDA
# compiles for sm_90a (a launcher that disagreed with its C-linkage declaration would be an
# error), and so does one that includes them the other way round; the object's exported tkc_*
# symbols are exactly the functions the header declares (nm); and use_headers.c, compiled as
# C99 with -DTKC_API_LINKED and linked with the objects, calls every launcher with arguments that
# break one documented rule at a time and gets the documented status code (these calls return
# before any CUDA call: no GPU is used). Skipped (exit 77) when nvcc is missing.
#
#   usage: api_nvcc.sh TKC ROOT [NVCC]     (NVCC: default nvcc from PATH or /usr/local/cuda/bin)

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
    echo "usage: api_nvcc.sh TKC ROOT [NVCC]" >&2
    exit 2
fi
tkc=$1
root=$2
nvcc=${3:-}
case $tkc in /*) ;; *) tkc=$(pwd)/$tkc ;; esac
case $root in /*) ;; *) root=$(pwd)/$root ;; esac
. "$root/tests/nvcc.sh"
find_nvcc "$nvcc"
if [ -z "$nvcc" ]; then
    echo "SKIPPED: nvcc not found (PATH, /usr/local/cuda/bin)"
    exit 77
fi
here=$root/tests/api
. "$here/common.sh"
flags="-O3 $NVCC_SM90A"
nm=${NM:-nm}

objs=
for tk in "$root/kernels.tk/gemm.tk" "$root/kernels.tk/attn_fwd.tk" "$here/two.tk"; do
    name=$(basename "$tk" .tk)
    run_tkc "$tmp/$name.cu" "$tk" || continue
    run_tkc "$tmp/$name.h" --emit=header "$tk" || continue
    printf '#include "%s.h"\n#include "%s.cu"\n' "$name" "$name" >"$tmp/${name}_h_first.cu"
    printf '#include "%s.cu"\n#include "%s.h"\n' "$name" "$name" >"$tmp/${name}_cu_first.cu"
    # shellcheck disable=SC2086
    check_cmd "$name: header, then the .cu, with nvcc" "$nvcc" $flags -I"$tmp" -c "$tmp/${name}_h_first.cu" \
        -o "$tmp/$name.o" || continue
    # shellcheck disable=SC2086
    check_cmd "$name: the .cu, then the header, with nvcc" "$nvcc" $flags -I"$tmp" -c "$tmp/${name}_cu_first.cu" \
        -o "$tmp/${name}_cu_first.o"
    objs="$objs $tmp/$name.o"
    "$nm" "$tmp/$name.o" | awk '$2 == "T" && $3 ~ /^tkc_/ { print $3 }' | sort >"$tmp/$name.syms"
    sed -n 's/^\(int \|const char \*\)\(tkc_[A-Za-z0-9_]*\)(.*/\2/p' "$tmp/$name.h" | sort >"$tmp/$name.decls"
    checks=$((checks + 1))
    if [ ! -s "$tmp/$name.syms" ]; then
        fail "$name.o exports no tkc_* function"
    elif ! diff -u --label "$name.o (nm)" --label "$name.h (declared)" "$tmp/$name.syms" "$tmp/$name.decls" >"$tmp/diff"; then
        fail "$name.h declares other functions than $name.o exports:"
        cat "$tmp/diff"
    fi
done

cc=${CC:-cc}
if check_cmd "use_headers.c -DTKC_API_LINKED" "$cc" -std=c99 -Wall -Wextra -Werror -pedantic -DTKC_API_LINKED \
    -I"$tmp" -c "$here/use_headers.c" -o "$tmp/use_headers.o"; then
    # shellcheck disable=SC2086
    check_cmd "link use_headers.o with the objects" "$nvcc" -o "$tmp/use_linked" "$tmp/use_headers.o" $objs &&
        check_cmd "use_headers (linked): every rule broken gives its status code" "$tmp/use_linked"
fi

finish api_nvcc
