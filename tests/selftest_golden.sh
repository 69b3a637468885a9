#!/bin/sh
# selftest_golden.sh - the golden runner itself can fail: a changed expected file, a wrong exit
# status, a missing or orphaned expected file each fail it, and --update repairs the expected file.
#
#   usage: selftest_golden.sh TKC TESTS_DIR

if [ $# -ne 2 ]; then
    echo "usage: selftest_golden.sh TKC TESTS_DIR" >&2
    exit 2
fi
tkc=$1
tests=$2
case $tkc in /*) ;; *) tkc=$(pwd)/$tkc ;; esac
case $tests in /*) ;; *) tests=$(pwd)/$tests ;; esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tkc_selftest.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
runner=$tests/run_golden.sh
failed=0
fail() {
    echo "FAIL: $*"
    failed=$((failed + 1))
}
# expect STATUS PATTERN ARGS...: runs the runner, checks its exit status and that its output matches
expect() {
    want=$1
    pat=$2
    shift 2
    sh "$runner" "$@" >"$tmp/log" 2>&1
    rc=$?
    if [ "$rc" -ne "$want" ] || ! grep -q -- "$pat" "$tmp/log"; then
        fail "run_golden.sh $*: exit status $rc (expected $want), output matching '$pat'"
        sed 's/^/    /' "$tmp/log" | head -n 20
    fi
}

mkdir -p "$tmp/g/err" "$tmp/g/ast"
cp "$tests/golden/err/unknown_name.tk" "$tests/golden/err/unknown_name.err" "$tmp/g/err/"
cp "$tests/golden/ast/defines.tk" "$tests/golden/ast/defines.ast" "$tmp/g/ast/"
expect 0 "1 passed, 0 failed" "$tkc" "$tmp/g" err
expect 0 "1 passed, 0 failed" "$tkc" "$tmp/g" ast

# a changed expected file fails with a diff, and --update restores it
sed 's/did you mean/perhaps/' "$tests/golden/err/unknown_name.err" >"$tmp/g/err/unknown_name.err"
expect 1 "^+.*did you mean 'b'" "$tkc" "$tmp/g" err
expect 0 "updated err/unknown_name.err" --update "$tkc" "$tmp/g" err
cmp -s "$tmp/g/err/unknown_name.err" "$tests/golden/err/unknown_name.err" || fail "--update did not restore unknown_name.err"
expect 0 "1 passed, 0 failed" "$tkc" "$tmp/g" err

# a program without errors in err/ fails on its exit status, also under --update
cp "$tests/golden/plan/chain.tk" "$tmp/g/err/fine.tk"
expect 1 "exit status 0, expected 1" "$tkc" "$tmp/g" err
expect 1 "exit status 0, expected 1" --update "$tkc" "$tmp/g" err
[ -e "$tmp/g/err/fine.err" ] && fail "--update wrote an expected file for a run with the wrong exit status"
rm "$tmp/g/err/fine.tk"

# a syntax error in ast/ fails; a missing or orphaned expected file fails
cp "$tests/golden/err/syntax_recovery.tk" "$tmp/g/ast/"
expect 1 "exit status 1, expected 0" "$tkc" "$tmp/g" ast
rm "$tmp/g/ast/syntax_recovery.tk"
mv "$tmp/g/ast/defines.ast" "$tmp/g/ast/renamed.ast"
expect 1 "no expected file defines.ast" "$tkc" "$tmp/g" ast
expect 1 "renamed.ast has no renamed.tk" "$tkc" "$tmp/g" ast

# usage
expect 2 "unknown kind" "$tkc" "$tmp/g" cu
expect 2 "usage" "$tkc"

echo "golden runner self-test: $failed failed"
[ "$failed" -eq 0 ]
