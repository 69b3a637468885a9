#!/bin/sh
# nvcc_check.sh - CUDA from tkc compiles for sm_90a with nvcc, with no spill stores or loads, no
# stack frame and no ptxas performance warnings (C75xx); skipped (exit 77) when nvcc is missing.
#
#   usage: nvcc_check.sh NVCC ROOT generated        every ROOT/generated/*.cu
#          nvcc_check.sh NVCC ROOT goldens TKC      the CUDA of every tests/golden/plan/*.tk
#          nvcc_check.sh NVCC ROOT templates        tests/compile/templates.cu (templates/ alone)
# NVCC may be empty or end in NOTFOUND: then nvcc is looked up in PATH and /usr/local/cuda/bin.

if [ $# -lt 3 ]; then
    echo "usage: nvcc_check.sh NVCC ROOT generated|goldens|templates [TKC]" >&2
    exit 2
fi
nvcc=$1
root=$2
mode=$3
tkc=${4:-}
case $root in /*) ;; *) root=$(pwd)/$root ;; esac
case $tkc in /*|'') ;; *) tkc=$(pwd)/$tkc ;; esac
. "$root/tests/nvcc.sh"
find_nvcc "$nvcc"
if [ -z "$nvcc" ]; then
    echo "SKIPPED: nvcc not found (PATH, /usr/local/cuda/bin); the $mode CUDA was not compiled"
    exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tkc_nvcc.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
flags="-O3 $NVCC_SM90A -Xptxas -v"

failed=0
compiled=0
# check NAME FILE [EXTRA FLAGS...]: compiles FILE and checks what ptxas reports
check() {
    name=$1
    src=$2
    shift 2
    compiled=$((compiled + 1))
    base=$tmp/$(echo "$name" | tr '/' '_')
    log=$base.log
    # shellcheck disable=SC2086
    if ! "$nvcc" $flags "$@" -c "$src" -o "$base.o" >"$log" 2>&1; then
        echo "FAIL: $name: nvcc failed:"
        sed 's/^/    /' "$log" | head -n 40
        failed=$((failed + 1))
        return
    fi
    bad=
    grep -q "Compiling entry function .* for 'sm_90a'" "$log" || bad="no kernel was compiled for sm_90a"
    if grep -E 'bytes spill (stores|loads)' "$log" | grep -Evq '^ *0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads$'; then
        bad="spills or a stack frame"
    fi
    if grep -q 'C75[0-9][0-9]' "$log"; then bad="a ptxas performance warning (C75xx)"; fi
    if grep -i 'warning' "$log" | grep -vq 'C75[0-9][0-9]'; then bad="${bad:+$bad; }a warning"; fi
    if [ -n "$bad" ]; then
        echo "FAIL: $name: $bad:"
        sed 's/^/    /' "$log" | head -n 40
        failed=$((failed + 1))
        return
    fi
    echo "ok   $name: $(grep -o 'Used [0-9]* registers' "$log" | tr '\n' ' ')$(grep -o '[0-9]* bytes stack frame, [0-9]* bytes spill stores, [0-9]* bytes spill loads' "$log" | head -n 1)"
}

ASAN_OPTIONS="exitcode=99${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
UBSAN_OPTIONS="exitcode=99${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export ASAN_OPTIONS UBSAN_OPTIONS
case $mode in
generated)
    for cu in "$root"/generated/*.cu; do
        [ -e "$cu" ] || continue
        check "generated/$(basename "$cu")" "$cu"
    done
    ;;
goldens)
    if [ -z "$tkc" ]; then
        echo "nvcc_check.sh goldens needs TKC" >&2
        exit 2
    fi
    dir=$root/tests/golden/plan
    for tk in "$dir"/*.tk; do
        [ -e "$tk" ] || continue
        name=$(basename "$tk" .tk)
        args=$(sed -n '1s|^// args:||p' "$tk")
        # shellcheck disable=SC2086
        if ! (cd "$dir" && exec "$tkc" "$name.tk" $args -o "$tmp/$name.cu") >"$tmp/$name.tkc" 2>&1; then
            echo "FAIL: plan/$name.tk: tkc failed:"
            sed 's/^/    /' "$tmp/$name.tkc" | head -n 20
            failed=$((failed + 1))
            continue
        fi
        # a golden whose CUDA is byte for byte a generated/ file was compiled by nvcc.generated
        same=
        for cu in "$root"/generated/*.cu; do
            if cmp -s "$cu" "$tmp/$name.cu"; then same=$(basename "$cu"); fi
        done
        if [ -n "$same" ]; then
            echo "same plan/$name.tk: its CUDA is generated/$same (compiled by nvcc.generated)"
            continue
        fi
        check "plan/$name.tk" "$tmp/$name.cu"
    done
    ;;
templates)
    check templates "$root/tests/compile/templates.cu" -I"$root/templates"
    ;;
*)
    echo "nvcc_check.sh: unknown mode '$mode'" >&2
    exit 2
    ;;
esac
if [ "$compiled" -eq 0 ]; then
    echo "FAIL: nothing to compile"
    failed=1
fi
echo "nvcc ($mode, $("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')): $compiled compiled, $failed failed"
[ "$failed" -eq 0 ]
