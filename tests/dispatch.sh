#!/bin/sh
# dispatch.sh - launch-time dispatch (tkc FILE.tk --dispatch TABLE): malformed tables get
# file:line:col diagnostics (exit 1), an unreadable one exit 2; kernels.tk/attn_fwd.dispatch gives
# the same bytes run to run, a header that compiles as C, a depfile naming the table, --explain and
# --emit=report with the rules; and, with nvcc, a dispatched program whose launcher provably picks
# the variant the rules name (the variants differ in a `require`, so the status code shows which
# one ran: no GPU needed).
#
#   usage: dispatch.sh TKC ROOT [NVCC]

if [ $# -lt 2 ]; then
    echo "usage: dispatch.sh TKC ROOT [NVCC]" >&2
    exit 2
fi
tkc=$1
root=$2
nvcc=${3:-}
case $tkc in /*) ;; *) tkc=$(pwd)/$tkc ;; esac
case $root in /*) ;; *) root=$(pwd)/$root ;; esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tkc_dispatch.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
cd "$tmp" || exit 2
failed=0
checks=0
fail() {
    echo "FAIL: $*"
    failed=$((failed + 1))
}

cp "$root/kernels.tk/attn_fwd.tk" attn_fwd.tk
cp "$root/kernels.tk/attn_fwd.dispatch" attn_fwd.dispatch
mkdir inc && cp "$root/kernels.tk/inc/"*.tk inc/

# bad TEXT PATTERN: the table TEXT gets exit 1 and a "t.dispatch:L:C: error: ..." matching PATTERN
bad() {
    checks=$((checks + 1))
    printf '%s\n' "$1" >t.dispatch
    "$tkc" attn_fwd.tk --dispatch t.dispatch --check >out 2>err
    rc=$?
    if [ $rc -ne 1 ] || ! grep -q '^t.dispatch:[0-9]*:[0-9]*: error: ' err || ! grep -q -- "$2" err; then
        fail "table '$1': exit $rc, expected 1 with a t.dispatch:L:C error matching '$2'"
        sed 's/^/    /' err | head -n 6
    fi
}
bad "variant a SHORT=1
otherwise: b" "no variant named 'b'"
bad "variant a SHORT=1
when M <= 3: a
otherwise: a" "'M' is neither a run-time dimension of kernel 'attn_fwd' nor a param"
bad "variant a SHORT=1
variant b SHORT=0
when BKV == 128: a
otherwise: b" "param 'BKV' is 128 in variant 'a' and 176 in variant 'b'"
bad "variant a SHORT=1
when D * N <= 3: a
otherwise: a" "a product of a param and a run-time dimension"
bad "variant a SHORT=x
otherwise: a" "bad define 'SHORT=x'"
bad "variant a SHORT=1
when B * H * N * D > 3: a
otherwise: a" "a product of at most three dimensions"
bad "varient a SHORT=1" "expected 'variant', 'kernel', 'when' or 'otherwise'"
bad "variant a SHORT=1
variant a SHORT=0
otherwise: a" "variant 'a' is defined twice"
bad "variant a SHORT=1
when N <= 5: a" "needs a last rule 'otherwise: VARIANT'"
bad "variant a SHORT=1
otherwise: a
when N < 3: a" "a rule after 'otherwise' is never used"
bad "variant a SHORT=1
kernel nope
otherwise: a" "no kernel or entry named 'nope'"
bad "variant a SHORT=1
when N <= : a
otherwise: a" "expected a non-negative integer"
bad "variant a SHORT=1 SHORT=0
otherwise: a" "sets SHORT twice"
bad "" "defines no variant"
bad "variant a D=64 SHORT=1
variant b D=128
when N < 100: a
otherwise: b" "changes the launcher of kernel 'attn_fwd'"
# a kernel one variant leaves out (kernel NAME(...) if (COND)) and another compiles
checks=$((checks + 1))
cat >lo.tk <<'EOF_TK'
param P = 0;
kernel a(in X: bf16[M, 256], out Y: bf16[M, 256]) {
  grid (m: cdiv(M, 4));
  reg x: bf16[4, 256] rowwise;
  setup { x <- X[block.m, 0]; }
  finish { Y[block.m, 0] <- x; }
}
kernel b(in X: bf16[M, 256], out Y: bf16[M, 256]) if (P == 1) {
  grid (m: cdiv(M, 4));
  reg x: bf16[4, 256] rowwise;
  setup { x <- X[block.m, 0]; }
  finish { Y[block.m, 0] <- x; }
}
EOF_TK
printf 'kernel a\nvariant zero P=0\nvariant one P=1\nwhen M <= 16: zero\notherwise: one\n' >lo.dispatch
"$tkc" lo.tk --dispatch lo.dispatch --check >out 2>err
if [ $? -ne 1 ] || ! grep -q "^lo.dispatch:3:9: error: variant 'one' compiles kernel 'b', which variant 'zero' leaves out" err; then
    fail "variants that compile different kernels: expected exit 1 and an error at variant 'one'"
    sed 's/^/    /' err | head -n 6
fi
# a variant's own errors: a diagnostic of the .tk, then a note naming the variant
checks=$((checks + 1))
printf 'variant a NOPE=1\notherwise: a\n' >t.dispatch
"$tkc" attn_fwd.tk --dispatch t.dispatch --check >out 2>err
if [ $? -ne 1 ] || ! grep -q "no param named 'NOPE'" err || ! grep -q "note: while compiling variant 'a'" err; then
    fail "a variant with an unknown param: expected exit 1, the -D error and a note naming the variant"
    sed 's/^/    /' err | head -n 6
fi
checks=$((checks + 1))
printf 'variant a SHORT=1\notherwise: a\n' >t.dispatch
"$tkc" attn_fwd.tk --dispatch t.dispatch -D SHORT=0 --check >out 2>err
if [ $? -ne 1 ] || ! grep -q "which -D on the command line sets too" err; then
    fail "a variant and -D setting one param: expected exit 1 with a diagnostic"
fi
checks=$((checks + 1))
"$tkc" attn_fwd.tk --dispatch missing.dispatch >out 2>err
if [ $? -ne 2 ] || ! grep -q "cannot read dispatch table 'missing.dispatch'" err; then
    fail "a missing table: expected exit 2 and 'cannot read dispatch table'"
fi
checks=$((checks + 1))
"$tkc" attn_fwd.tk --dispatch t.dispatch --emit=ast >out 2>err
[ $? -eq 2 ] || fail "--dispatch with --emit=ast: expected a usage error (exit 2)"
checks=$((checks + 1))
printf 'variant a SHORT=1\nvariant b SHORT=0\notherwise: a\n' >t.dispatch
"$tkc" attn_fwd.tk --dispatch t.dispatch --check >out 2>err
if [ $? -ne 0 ] || ! grep -q "warning: variant 'b' is never chosen by a rule" err; then
    fail "an unused variant: expected exit 0 and a warning"
fi

# the committed table
table="$root/kernels.tk/attn_fwd.dispatch"
checks=$((checks + 1))
if ! "$tkc" attn_fwd.tk --dispatch "$table" -o d1.cu -MD 2>err || ! "$tkc" attn_fwd.tk --dispatch "$table" -o d2.cu; then
    fail "attn_fwd.tk --dispatch attn_fwd.dispatch failed"
    sed 's/^/    /' err | head -n 6
else
    cmp -s d1.cu d2.cu || fail "two runs with --dispatch differ"
    grep -q '^namespace tkc_v_short {' d1.cu || fail "no namespace for variant short"
    grep -q '^namespace tkc_v_long {' d1.cu || fail "no namespace for variant long"
    [ "$(grep -c '^extern "C" int tkc_attn_fwd(' d1.cu)" -eq 1 ] || fail "not exactly one extern \"C\" tkc_attn_fwd"
    grep -q 'attn_fwd.dispatch' d1.cu.d || fail "the depfile does not name the table"
fi
checks=$((checks + 1))
"$tkc" attn_fwd.tk --dispatch "$table" --explain >out 2>err || fail "--explain with --dispatch failed"
grep -q 'dispatch table attn_fwd.dispatch' out || fail "--explain does not show the table"
grep -q '^==== variant short' out || fail "--explain does not explain variant short"
checks=$((checks + 1))
"$tkc" attn_fwd.tk --dispatch "$table" --emit=report >report.json 2>err || fail "--emit=report with --dispatch failed"
if command -v python3 >/dev/null 2>&1; then
    python3 -c "import json,sys; d=json.load(open('report.json')); assert d['dispatch']['rules'][-1]['when'] == 'otherwise'; assert len(d['dispatch']['variants']) >= 2; assert d['kernels'][0]['name'] == 'attn_fwd'" \
        2>py.log || { fail "--emit=report with --dispatch is not the expected JSON"; head -n 3 py.log; }
fi
checks=$((checks + 1))
"$tkc" attn_fwd.tk --dispatch "$table" --emit=header >d.h 2>err || fail "--emit=header with --dispatch failed"
grep -q 'Built with --dispatch attn_fwd.dispatch' d.h || fail "the header does not say it was built with --dispatch"
if command -v cc >/dev/null 2>&1; then
    printf '#include "d.h"\nint main(void) { return 0; }\n' >h.c
    cc -std=c11 -Wall -Werror -fsyntax-only h.c 2>cc.log || { fail "the dispatched header does not compile as C"; head -n 5 cc.log; }
fi

# the committed linear table: one launcher per kernel and entry of linear.tk (eight), the decode rule on M,
# and the entry linear_auto dispatched by it too
checks=$((checks + 1))
cp "$root/kernels.tk/linear.tk" linear.tk
if ! "$tkc" linear.tk --dispatch "$root/kernels.tk/linear.dispatch" -o lin.cu 2>err; then
    fail "linear.tk --dispatch linear.dispatch failed"
    sed 's/^/    /' err | head -n 6
elif [ "$(grep -c '^extern "C" int tkc_linear' lin.cu)" -ne 8 ] || ! grep -q 'if (M <= 16LL) {  // when M <= 16: decode' lin.cu ||
     ! grep -q 'return tkc_v_splitk::tkc_linear_auto(' lin.cu; then
    fail "linear.tk --dispatch: expected eight dispatched launchers with the M <= 16 rule, linear_auto among them"
fi

# a rule testing a param (the command line's -D) is decided by tkc: kept for D = 64, left out for 128
checks=$((checks + 1))
printf 'variant long SHORT=0\nvariant short SHORT=1\nwhen D == 64 && N <= 2560: short\notherwise: long\n' >p.dispatch
"$tkc" attn_fwd.tk --dispatch p.dispatch -D D=64 -o p64.cu 2>err && "$tkc" attn_fwd.tk --dispatch p.dispatch -o p128.cu 2>>err ||
    fail "a table with a param test failed to compile"
grep -q '^    if (N <= 2560LL) {' p64.cu || fail "D = 64: the rule's run-time test is missing"
grep -q 'if (N <= 2560LL)' p128.cu && fail "D = 128: the rule whose param test fails was emitted"
grep -q 'left out, a param test fails' p128.cu || fail "D = 128: the .cu does not say the rule is left out"
# a variant only left-out rules pick is not compiled into the .cu (nor explained)
checks=$((checks + 1))
grep -q '^namespace tkc_v_short {' p128.cu && fail "D = 128: variant short, which no rule picks, is in the .cu"
grep -q '^namespace tkc_v_short {' p64.cu || fail "D = 64: variant short is missing"
"$tkc" attn_fwd.tk --dispatch p.dispatch --explain >p128.explain 2>>err &&
    grep -q '==== variant short (SHORT=1): no rule of this build picks it, so it is left out' p128.explain ||
    fail "D = 128: --explain does not say variant short is left out"
# a product of three dimensions is compared in 128 bits
checks=$((checks + 1))
printf 'variant long SHORT=0\nvariant short SHORT=1\nwhen B * H * N <= 65536: short\notherwise: long\n' >p3.dispatch
"$tkc" attn_fwd.tk --dispatch p3.dispatch -o p3.cu 2>err && grep -q 'if ((__int128)B \* H \* N <= 65536LL)' p3.cu ||
    fail "a product of three dimensions is not compared in 128 bits"

# `dispatch "TABLE";` in the .tk: the table applies without a flag; --no-dispatch, or a -D of a
# param a variant sets, compiles the program once; the main file's table only (an imported
# file's is ignored), once
checks=$((checks + 1))
printf 'dispatch "attn_fwd.dispatch";\n' >auto.tk
cat attn_fwd.tk | grep -v '^dispatch ' >>auto.tk
"$tkc" auto.tk -o auto.cu 2>err || fail "a .tk naming its dispatch table failed to compile"
grep -q '^namespace tkc_v_short {' auto.cu || fail "dispatch \"TABLE\": the table was not applied"
"$tkc" auto.tk --no-dispatch -o plain.cu 2>err && ! grep -q '^namespace tkc_v_' plain.cu || fail "--no-dispatch still dispatched"
"$tkc" auto.tk -D SHORT=1 -o short.cu 2>err && ! grep -q '^namespace tkc_v_' short.cu || fail "-D SHORT=1 still dispatched"
"$tkc" auto.tk -D D=64 -o d64.cu 2>err && grep -q '^namespace tkc_v_long {' d64.cu || fail "-D D=64 (no variant sets D) did not dispatch"
"$tkc" auto.tk --emit=ast 2>err | grep -q '^  dispatch "' || fail "the syntax tree does not show the dispatch statement"
"$tkc" auto.tk --dispatch attn_fwd.dispatch --no-dispatch >out 2>err; [ $? -eq 2 ] || fail "--dispatch with --no-dispatch: expected exit 2"
checks=$((checks + 1))
printf 'dispatch "a.dispatch";\ndispatch "b.dispatch";\n' >twice.tk
"$tkc" twice.tk --check >out 2>err
if [ $? -ne 1 ] || ! grep -q "twice.tk:2:10: error: a second dispatch table" err; then fail "two dispatch statements: expected an error at the second"; fi
printf 'dispatch "x.dispatch";\n' >inc_d.tk
printf 'import "inc_d.tk";\n' >imp.tk
printf 'kernel k(in X: bf16[M, 64], out Y: bf16[M, 64]) {\n  grid (m: cdiv(M, 64));\n  shared x: bf16[64, 64];\n  reg r: bf16[64, 64];\n  setup { x <- X[block.m, 0]; }\n  finish { r <- x; Y[block.m, 0] <- r; }\n}\n' >>imp.tk
"$tkc" imp.tk -o imp.cu 2>err
if [ $? -ne 0 ] || grep -q '^namespace tkc_v_' imp.cu; then
    fail "a dispatch statement in an imported file: expected it ignored (the table x.dispatch does not exist)"; sed 's/^/    /' err | head -n 4
fi

# which variant runs: `require M > P` fails for P = 100000 (TKC_ERR_REQUIRE, 5) and holds for P = 0,
# whose launcher then finds the null tensor (TKC_ERR_NULL, 1): the status code names the variant
if [ -n "$nvcc" ] && command -v "$nvcc" >/dev/null 2>&1; then
    checks=$((checks + 1))
    cat >pick.tk <<'EOF'
param P = 0;
kernel pick(in X: bf16[M, 64], out Y: bf16[M, 64]) {
  require M > P;
  grid (m: cdiv(M, 64));
  shared x: bf16[64, 64];
  reg r: bf16[64, 64];
  setup  { x <- X[block.m, 0]; }
  finish { r <- x; Y[block.m, 0] <- r; }
}
EOF
    cat >pick.dispatch <<'EOF'
variant lo P=0
variant hi P=100000
when M <= 100: lo
when M * M >= 1000000 && M != 1500: lo
otherwise: hi
EOF
    cat >main.c <<'EOF'
#include <stdio.h>
#include "pick.h"
int main(void) {
    /* M -> the variant the rules pick -> its status without a GPU (null tensors) */
    static const long long m[] = {1, 100, 101, 999, 1000, 1500, 1501};
    static const int want[] = {1, 1, 5, 5, 1, 5, 1};
    int bad = 0;
    for (int i = 0; i < 7; i++) {
        int rc = tkc_pick(0, 0, 0, 0, m[i], 0);
        if (rc != want[i]) { printf("M = %lld: status %d, expected %d\n", m[i], rc, want[i]); bad = 1; }
    }
    if (tkc_pick(0, 0, 0, 0, 0, 0) != 3) { printf("M = 0: expected TKC_ERR_DIM\n"); bad = 1; }
    return bad;
}
EOF
    "$nvcc" -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -c d1.cu -o d1.o >nvcc_d1.log 2>&1 ||
        { fail "attn_fwd.tk --dispatch attn_fwd.dispatch does not compile with nvcc"; head -n 10 nvcc_d1.log | sed 's/^/    /'; }
    if ! "$tkc" pick.tk --dispatch pick.dispatch -o pick.cu 2>err || ! "$tkc" pick.tk --dispatch pick.dispatch --emit=header -o pick.h 2>>err; then
        fail "pick.tk --dispatch failed"
        sed 's/^/    /' err | head -n 6
    elif ! "$nvcc" -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o pick pick.cu main.c >nvcc.log 2>&1; then
        fail "the dispatched program does not build"
        head -n 10 nvcc.log | sed 's/^/    /'
    elif ! ./pick >run.log 2>&1; then
        fail "the dispatched launcher picked the wrong variant"
        sed 's/^/    /' run.log | head -n 10
    fi
fi
echo "dispatch: $checks checks, $failed failed"
[ "$failed" -eq 0 ]
