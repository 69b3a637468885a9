#!/bin/sh
# check_generated.sh - the committed generated/NAME.cu files equal what the built tkc emits for
# kernels.tk/NAME.tk now (a dirty-tree check), and every kernels.tk file has its generated file.
#
#   usage: check_generated.sh TKC ROOT

if [ $# -ne 2 ]; then
    echo "usage: check_generated.sh TKC ROOT" >&2
    exit 2
fi
tkc=$1
root=$2
case $tkc in /*) ;; *) tkc=$(pwd)/$tkc ;; esac
cd "$root" || exit 2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tkc_fresh.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
ASAN_OPTIONS="exitcode=99${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
UBSAN_OPTIONS="exitcode=99${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export ASAN_OPTIONS UBSAN_OPTIONS

failed=0
checked=0
stale=
for cu in generated/*.cu; do
    [ -e "$cu" ] || continue
    name=$(basename "$cu" .cu)
    checked=$((checked + 1))
    if [ ! -f "kernels.tk/$name.tk" ]; then
        echo "FAIL: $cu has no kernels.tk/$name.tk (delete it, or restore the source)"
        failed=$((failed + 1))
        continue
    fi
    "$tkc" "kernels.tk/$name.tk" >"$tmp/$name.cu" 2>"$tmp/$name.err"
    rc=$?
    if [ "$rc" -ne 0 ] || [ -s "$tmp/$name.err" ]; then
        echo "FAIL: tkc kernels.tk/$name.tk: exit status $rc"
        sed 's/^/    /' "$tmp/$name.err" | head -n 20
        failed=$((failed + 1))
        continue
    fi
    if ! cmp -s "$tmp/$name.cu" "$cu"; then
        echo "FAIL: $cu is stale: tkc emits something else for kernels.tk/$name.tk now"
        diff -u --label "$cu (committed)" --label "$cu (tkc now)" "$cu" "$tmp/$name.cu" | head -n 40
        failed=$((failed + 1))
        stale="$stale $name"
    fi
done
for tk in kernels.tk/*.tk; do
    [ -e "$tk" ] || continue
    name=$(basename "$tk" .tk)
    if [ ! -f "generated/$name.cu" ]; then
        echo "FAIL: $tk has no generated/$name.cu"
        failed=$((failed + 1))
        stale="$stale $name"
    fi
done
if [ "$checked" -eq 0 ]; then
    echo "FAIL: no generated/*.cu files"
    failed=$((failed + 1))
fi
if [ -n "$stale" ]; then
    echo "regenerate with (from the source tree, after building tkc):"
    for name in $stale; do
        echo "    build/tkc kernels.tk/$name.tk -o generated/$name.cu"
    done
fi
echo "generated: $checked files checked, $failed failed"
[ "$failed" -eq 0 ]
