#!/bin/sh
# api_explain.sh - tkc --explain: the text for kernels.tk/gemm.tk, kernels.tk/attn_fwd.tk (and -D D=64),
# kernels.tk/gemm.tk -D CLUSTER=2, tests/api/two.tk and kernels.tk/layernorm.tk -D D=8192 (no producer
# warpgroup) is the same bytes on every run and matches
# golden/NAME.explain; nothing goes to stderr, no line is over 100 columns.
#
#   usage: api_explain.sh [--update] TKC ROOT   (ROOT: the source tree)
# --update rewrites the golden files from what tkc prints now; review them with git diff.

. "$(dirname "$0")/common.sh"
api_args api_explain.sh 1 "$@"

# explain NAME TK [ARGS...]
explain() {
    name=$1
    tk=$2
    shift 2
    got=$tmp/$name.explain
    exp=$here/golden/$name.explain
    run_tkc "$got" --explain "$tk" "$@" || return
    run_tkc "$tmp/$name.again" --explain "$tk" "$@" &&
        check_cmd "$name: the same bytes on a second run" cmp "$got" "$tmp/$name.again"
    checks=$((checks + 1))
    long=$(awk 'length($0) > 100 { print FILENAME ":" FNR ": " length($0) " columns" }' "$got")
    [ -z "$long" ] || fail "$name: lines over 100 columns: $long"
    checks=$((checks + 1))
    if [ "$update" = 1 ]; then
        cmp -s "$got" "$exp" || { cp "$got" "$exp" && echo "updated golden/$name.explain"; }
    elif [ ! -f "$exp" ]; then
        fail "no golden/$name.explain (create it with: tests/api/api_explain.sh --update TKC ROOT)"
    elif ! diff -u --label "golden/$name.explain (expected)" --label "$name (tkc --explain now)" "$exp" "$got"; then
        fail "$name: --explain differs from golden/$name.explain (accept with: tests/api/api_explain.sh --update $tkc $root)"
    fi
}
explain gemm "$root/kernels.tk/gemm.tk"
explain gemm_cluster2 "$root/kernels.tk/gemm.tk" -D CLUSTER=2
explain attn_fwd "$root/kernels.tk/attn_fwd.tk"
explain attn_d64 "$root/kernels.tk/attn_fwd.tk" -D D=64
explain two "$here/two.tk"
explain layernorm_d8192 "$root/kernels.tk/layernorm.tk" -D D=8192

finish api_explain
