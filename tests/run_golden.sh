#!/bin/sh
# run_golden.sh - golden tests: runs tkc on every GOLDEN_DIR/KIND/NAME.tk (from that folder, with a
# relative name, so paths in diagnostics are stable) and diffs the output against the file beside it.
#
#   usage: run_golden.sh [--update] TKC GOLDEN_DIR KIND...
#
#   KIND ast   tkc NAME.tk --emit=ast   stdout == NAME.ast, stderr empty, exit 0
#   KIND plan  tkc NAME.tk --emit=plan  stdout == NAME.plan, stderr empty, exit 0
#   KIND err   tkc NAME.tk              stderr == NAME.err, stdout empty, exit 1
#
# A first line "// args: ..." adds arguments (split on blanks), e.g. "// args: -D STAGES=2".
# --update rewrites the expected files from what tkc prints now (the exit status must still be
# right); review the result with git diff. Exit status: 0 all passed, 1 a test failed, 2 usage.

update=0
if [ "${1:-}" = "--update" ]; then
    update=1
    shift
fi
if [ $# -lt 3 ]; then
    echo "usage: run_golden.sh [--update] TKC GOLDEN_DIR KIND..." >&2
    exit 2
fi
tkc=$1
root=$2
shift 2
case $tkc in /*) ;; *) tkc=$(pwd)/$tkc ;; esac
if [ ! -x "$tkc" ]; then
    echo "run_golden.sh: '$tkc' is not an executable" >&2
    exit 2
fi
# sanitizer reports must not pass for diagnostics: ASan and UBSan exit with 1 by default, as tkc
# does for errors in the program; make them exit with 99 (unless the caller chose otherwise)
ASAN_OPTIONS="exitcode=99${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
UBSAN_OPTIONS="exitcode=99${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export ASAN_OPTIONS UBSAN_OPTIONS
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tkc_golden.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

failed=0
passed=0
fail() {
    echo "FAIL $kind/$name: $*"
    failed=$((failed + 1))
}

for kind in "$@"; do
    case $kind in
    ast) flag=--emit=ast want_rc=0 ;;
    plan) flag=--emit=plan want_rc=0 ;;
    err) flag= want_rc=1 ;;
    *)
        echo "run_golden.sh: unknown kind '$kind' (ast, plan or err)" >&2
        exit 2
        ;;
    esac
    dir=$root/$kind
    if [ ! -d "$dir" ]; then
        echo "run_golden.sh: no folder $dir" >&2
        exit 2
    fi
    count=0
    for tk in "$dir"/*.tk; do
        [ -e "$tk" ] || continue
        count=$((count + 1))
        name=$(basename "$tk" .tk)
        expected=$dir/$name.$kind
        args=$(sed -n '1s|^// args:||p' "$tk")
        # $args and $flag are split on blanks on purpose
        # shellcheck disable=SC2086
        (cd "$dir" && exec "$tkc" "$name.tk" $args $flag) >"$tmp/out" 2>"$tmp/err"
        rc=$?
        if [ "$kind" = err ]; then got=$tmp/err other=$tmp/out; else got=$tmp/out other=$tmp/err; fi
        if grep -q 'Sanitizer\|runtime error:' "$tmp/err"; then
            fail "sanitizer report (tkc $name.tk$args $flag):"
            sed 's/^/    /' "$tmp/err" | head -n 40
            continue
        fi
        if [ "$rc" -ne "$want_rc" ]; then
            fail "exit status $rc, expected $want_rc (tkc $name.tk$args $flag)"
            sed 's/^/    /' "$tmp/err" | head -n 40
            continue
        fi
        if [ -s "$other" ]; then
            if [ "$kind" = err ]; then fail "printed to stdout on error:"; else fail "printed to stderr:"; fi
            sed 's/^/    /' "$other" | head -n 40
            continue
        fi
        if [ "$update" = 1 ]; then
            if [ ! -f "$expected" ] || ! cmp -s "$got" "$expected"; then
                cp "$got" "$expected"
                echo "updated $kind/$name.$kind"
            fi
            passed=$((passed + 1))
            continue
        fi
        if [ ! -f "$expected" ]; then
            fail "no expected file $name.$kind (create it with: tests/run_golden.sh --update TKC tests/golden $kind)"
            continue
        fi
        if ! diff -u --label "$kind/$name.$kind (expected)" --label "$kind/$name.$kind (tkc now)" "$expected" "$got" >"$tmp/diff"; then
            fail "output differs from $name.$kind:"
            cat "$tmp/diff"
            continue
        fi
        passed=$((passed + 1))
    done
    # an expected file whose .tk is gone is a stale golden
    for exp in "$dir"/*."$kind"; do
        [ -e "$exp" ] || continue
        name=$(basename "$exp" ".$kind")
        [ -f "$dir/$name.tk" ] || fail "$name.$kind has no $name.tk beside it"
    done
    if [ "$count" -eq 0 ]; then
        name='*'
        fail "no .tk files in $dir"
    fi
done

echo "golden ($*): $passed passed, $failed failed"
if [ "$failed" -ne 0 ]; then
    [ "$update" = 1 ] || echo "to accept tkc's current output: tests/run_golden.sh --update $tkc $root $*"
    exit 1
fi
exit 0
