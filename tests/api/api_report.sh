#!/bin/sh
# api_report.sh - tkc --emit=report: the JSON of kernels.tk/gemm.tk (also with -D CLUSTER=2),
# kernels.tk/attn_fwd.tk, tests/api/two.tk and a source name with a quote and a backslash parses
# (python3 -m json.tool), is the same bytes on every run, and holds what check_report.py expects:
# the structure, the shared-memory invariants, the launcher declarations of the .cu, and the
# known values of the gemm and attention plans (shared memory 230,464 B, 4 stages, swizzle 128B,
# barrier counts, ...). Without python3 only a few values are checked with grep.
#
#   usage: api_report.sh TKC ROOT      (ROOT: the source tree)

. "$(dirname "$0")/common.sh"
api_args api_report.sh 0 "$@"

mkdir -p "$tmp/odd" && cp "$here/two.tk" "$tmp/odd/q\"b\\s ??- x.tk"
# report NAME TK [ARGS...]: NAME.json and NAME.decls (the .cu's launcher definitions)
report() {
    name=$1
    tk=$2
    shift 2
    run_tkc "$tmp/$name.json" --emit=report "$tk" "$@" || return 1
    run_tkc "$tmp/$name.again.json" --emit=report "$tk" "$@" &&
        check_cmd "$name.json: the same bytes on a second run" cmp "$tmp/$name.json" "$tmp/$name.again.json"
    run_tkc "$tmp/$name.cu" "$tk" "$@" || return 1
    sed -n 's/^extern "C" \(int tkc_.*)\) {$/\1/p' "$tmp/$name.cu" >"$tmp/$name.decls"
}
report gemm "$root/kernels.tk/gemm.tk"
report gemm_cluster2 "$root/kernels.tk/gemm.tk" -D CLUSTER=2
report attn_fwd "$root/kernels.tk/attn_fwd.tk"
report attn_d64 "$root/kernels.tk/attn_fwd.tk" -D D=64
report two "$here/two.tk"
report odd "$tmp/odd/q\"b\\s ??- x.tk"

if command -v python3 >/dev/null 2>&1; then
    for f in gemm gemm_cluster2 attn_fwd attn_d64 two odd; do
        [ -f "$tmp/$f.json" ] && check_cmd "$f.json is JSON" python3 -m json.tool "$tmp/$f.json"
    done
    [ "$failed" -eq 0 ] && check_cmd "check_report.py" python3 "$here/check_report.py" "$tmp" &&
        sed 's/^/    /' "$tmp/cmd.log"
else
    echo "note: python3 not found: the JSON is not parsed, only grepped"
    for want in '"total": 230464' '"stages": 4' '"swizzle": "128B"' '"name": "full_a_b"'; do
        checks=$((checks + 1))
        grep -q "$want" "$tmp/gemm.json" || fail "gemm.json has no $want"
    done
fi

finish api_report
