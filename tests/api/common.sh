# common.sh - sourced by the tests/api scripts: a scratch folder, pass/fail counting, and run_tkc,
# which runs tkc and fails on a nonzero exit, anything on stderr, or a sanitizer report (so the
# same scripts serve tkc and tkc-asan).
#
#   provides: api_args, $tmp, fail, finish, run_tkc (which needs $tkc, set by api_args)

# api_args SCRIPT UPDATE ARGS...: parses "[--update] TKC ROOT" (--update only when UPDATE is 1) into
# $update, $tkc and $root (absolute paths) and $here (ROOT/tests/api); exits 2 on a usage error
api_args() {
    script=$1
    may_update=$2
    shift 2
    update=0
    if [ "$may_update" = 1 ] && [ "${1:-}" = "--update" ]; then
        update=1
        shift
    fi
    if [ $# -ne 2 ]; then
        if [ "$may_update" = 1 ]; then echo "usage: $script [--update] TKC ROOT" >&2
        else echo "usage: $script TKC ROOT" >&2; fi
        exit 2
    fi
    tkc=$1
    root=$2
    case $tkc in /*) ;; *) tkc=$(pwd)/$tkc ;; esac
    case $root in /*) ;; *) root=$(pwd)/$root ;; esac
    here=$root/tests/api
}

# sanitizer reports must not pass as ordinary failures: make ASan and UBSan exit with 99
ASAN_OPTIONS="exitcode=99${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
UBSAN_OPTIONS="exitcode=99${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export ASAN_OPTIONS UBSAN_OPTIONS

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tkc_api.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

failed=0
checks=0
fail() {
    echo "FAIL: $*"
    failed=$((failed + 1))
}

# run_tkc OUT ARGS...: tkc ARGS with stdout in OUT; returns nonzero (after reporting) on failure
run_tkc() {
    out=$1
    shift
    checks=$((checks + 1))
    "$tkc" "$@" >"$out" 2>"$tmp/stderr"
    rc=$?
    if grep -q 'Sanitizer\|runtime error:' "$tmp/stderr"; then
        fail "sanitizer report from: tkc $*"
        sed 's/^/    /' "$tmp/stderr" | head -n 40
        return 1
    fi
    if [ "$rc" -ne 0 ] || [ -s "$tmp/stderr" ]; then
        fail "tkc $* exited with $rc:"
        sed 's/^/    stderr: /' "$tmp/stderr" | head -n 20
        return 1
    fi
    return 0
}

# check_cmd WHAT CMD...: runs CMD, counts it, and reports its output when it fails
check_cmd() {
    what=$1
    shift
    checks=$((checks + 1))
    if ! "$@" >"$tmp/cmd.log" 2>&1; then
        fail "$what: $*"
        sed 's/^/    /' "$tmp/cmd.log" | head -n 40
        return 1
    fi
    return 0
}

# finish NAME: prints the summary line and exits with 0 or 1
finish() {
    echo "$1: $checks checks, $failed failed"
    [ "$failed" -eq 0 ] || exit 1
    exit 0
}
