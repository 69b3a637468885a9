#!/bin/sh
# cli.sh - the command line of tkc: --help and --version, usage errors (exit 2 with a message),
# errors in the program (exit 1), -o and --check, and byte-identical output across runs.
#
#   usage: cli.sh TKC ROOT      (ROOT: the source tree, for kernels.tk/)

if [ $# -ne 2 ]; then
    echo "usage: cli.sh TKC ROOT" >&2
    exit 2
fi
tkc=$1
root=$2
case $tkc in /*) ;; *) tkc=$(pwd)/$tkc ;; esac
case $root in /*) ;; *) root=$(pwd)/$root ;; esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tkc_cli.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
cd "$tmp" || exit 2

failed=0
checks=0
fail() {
    echo "FAIL: $*"
    failed=$((failed + 1))
}

# run NAME ARGS...: runs tkc with ARGS in $tmp; sets rc, and leaves stdout/stderr in out/err
run() {
    what=$1
    shift
    checks=$((checks + 1))
    "$tkc" "$@" >out 2>err
    rc=$?
}
show() {
    echo "    command: tkc $*"
    sed 's/^/    stderr: /' err | head -n 10
    sed 's/^/    stdout: /' out | head -n 5
}
# expect_usage NAME PATTERN ARGS...: exit 2, nothing on stdout, "tkc: error: ..." matching PATTERN
expect_usage() {
    name=$1
    pat=$2
    shift 2
    run "$name" "$@"
    if [ "$rc" -ne 2 ]; then
        fail "$name: exit status $rc, expected 2"
        show "$@"
    elif [ -s out ]; then
        fail "$name: printed to stdout"
        show "$@"
    elif ! grep -q '^tkc: error: ' err || ! grep -q -- "$pat" err; then
        fail "$name: no 'tkc: error: ...' message matching '$pat'"
        show "$@"
    fi
}

cp "$root/kernels.tk/gemm.tk" gemm.tk
cat >bad.tk <<'EOF'
kernel k(in A: bf16[M, K]) {
  grid (m: cdiv(M, 128));
  setup { x = 0; }
}
EOF

# ---- --help and --version ------------------------------------------------------------------------
run help --help
if [ "$rc" -ne 0 ] || ! grep -q '^usage: tkc ' out || [ -s err ]; then
    fail "--help: exit status $rc (expected 0) with the usage on stdout and nothing on stderr"
    show --help
fi
for k in cu plan ast; do
    grep -q -- "--emit=$k" out || fail "--help does not list --emit=$k"
done
run version --version
if [ "$rc" -ne 0 ] || ! grep -Eq '^tkc [0-9]+\.[0-9]+\.[0-9]+' out || [ -s err ]; then
    fail "--version: exit status $rc (expected 0) with 'tkc X.Y.Z' on stdout"
    show --version
fi

# ---- usage errors: exit 2 ------------------------------------------------------------------------
expect_usage "no input" "no input file"
expect_usage "unknown option" "--bogus" gemm.tk --bogus
expect_usage "unknown single-dash option" "-q" gemm.tk -q
expect_usage "two inputs" "more than one input" gemm.tk gemm.tk
expect_usage "unreadable file" "cannot read 'missing.tk'" missing.tk
expect_usage "unreadable file, other options first" "cannot read" --emit=plan missing.tk
mkdir -p adir
expect_usage "a directory as input" "is a directory" adir
expect_usage "unknown --emit" "foo" gemm.tk --emit=foo
expect_usage "empty --emit" "emit" gemm.tk --emit=
expect_usage "-D without NAME=VALUE" "-D" gemm.tk -D STAGES
expect_usage "-D with a non-integer" "-D" gemm.tk -D STAGES=two
expect_usage "-D twice" "-D STAGES given twice" gemm.tk -D STAGES=2 -D STAGES=3
expect_usage "a device as input" "not a regular file" /dev/null
expect_usage "--module-name without --emit=torch" "module-name goes with" gemm.tk --module-name g
expect_usage "--module-name not an identifier" "not a Python identifier" gemm.tk --emit=torch -o tdir --module-name 9g
expect_usage "--module-name without a name" "needs a name" gemm.tk --emit=torch -o tdir --module-name
expect_usage "-D with a bad name" "-D" gemm.tk -D 1X=2
expect_usage "-D with an empty value" "-D" gemm.tk -DSTAGES=
expect_usage "-D with an integer too large" "-D" gemm.tk -D STAGES=99999999999
expect_usage "-D at the end" "-D" gemm.tk -D
expect_usage "-o without a file" "-o" gemm.tk -o
expect_usage "-o twice" "-o" gemm.tk -o a.cu -o b.cu
expect_usage "-o into a missing folder" "cannot write" gemm.tk -o no/such/dir/gemm.cu
[ -e a.cu ] || [ -e b.cu ] && fail "-o twice still wrote a file"

# ---- errors in the program: exit 1 ---------------------------------------------------------------
run "program with errors" bad.tk
if [ "$rc" -ne 1 ] || [ -s out ] || ! grep -q '^bad.tk:3:11: error: ' err; then
    fail "a program with errors: exit status $rc (expected 1), diagnostics on stderr only"
    show bad.tk
fi
run "program with errors, -o" bad.tk -o bad.cu
if [ "$rc" -ne 1 ] || [ -e bad.cu ]; then
    fail "a program with errors and -o: exit status $rc (expected 1) and no output file"
fi
run "-D naming no param" gemm.tk -D NOPE=1
if [ "$rc" -ne 1 ] || ! grep -q "no param named 'NOPE'" err; then
    fail "-D naming no param: exit status $rc (expected 1) with a diagnostic"
    show gemm.tk -D NOPE=1
fi

printf 'type E = bf16;\nkernel k(in X: E[M, 64]) { grid (m: cdiv(M, 64)); }\n' >ty.tk
run "-D naming no type" ty.tk -D F=fp16
if [ "$rc" -ne 1 ] || ! grep -q "no type named 'F'" err; then
    fail "-D NAME=DTYPE naming no type: exit status $rc (expected 1) with a diagnostic"
    show ty.tk -D F=fp16
fi
run "-D type given an integer" ty.tk -D E=3
if [ "$rc" -ne 1 ] || ! grep -q "'E' is a type: give it an element type" err; then
    fail "-D TYPE=INTEGER: exit status $rc (expected 1) with a diagnostic"
    show ty.tk -D E=3
fi
run "-D param given a dtype" gemm.tk -D STAGES=fp16
if [ "$rc" -ne 1 ] || ! grep -q "'STAGES' is a param (an integer), not a type" err; then
    fail "-D PARAM=DTYPE: exit status $rc (expected 1) with a diagnostic"
    show gemm.tk -D STAGES=fp16
fi

# ---- -o, --check and -D --------------------------------------------------------------------------
run "stdout" gemm.tk
cp out stdout.cu
if [ "$rc" -ne 0 ] || [ ! -s stdout.cu ] || [ -s err ]; then
    fail "tkc gemm.tk: exit status $rc, expected CUDA on stdout and nothing on stderr"
    show gemm.tk
fi
grep -q '__global__' stdout.cu || fail "tkc gemm.tk printed no __global__ kernel"
run "-o" gemm.tk -o written.cu
if [ "$rc" -ne 0 ] || [ -s out ] || [ -s err ]; then
    fail "-o: exit status $rc, expected 0 and nothing on stdout or stderr"
    show gemm.tk -o written.cu
elif ! cmp -s written.cu stdout.cu; then
    fail "-o wrote something else than tkc prints on stdout"
fi
[ -e written.cu.tmp ] && fail "-o left written.cu.tmp behind"
run "-o -" gemm.tk -o -
cmp -s out stdout.cu || fail "-o - does not print to stdout"
run "--check" gemm.tk --check -o checked.cu
if [ "$rc" -ne 0 ] || [ -s out ] || [ -s err ] || [ -e checked.cu ]; then
    fail "--check: exit status $rc (expected 0); it must print and write nothing"
fi
run "--check with errors" bad.tk --check
[ "$rc" -eq 1 ] || fail "--check of a program with errors: exit status $rc, expected 1"
run "-D NAME=VALUE" gemm.tk --emit=plan -D STAGES=2
cp out d_sep.plan
run "-DNAME=VALUE" gemm.tk --emit=plan -DSTAGES=2
cmp -s out d_sep.plan || fail "-DSTAGES=2 and -D STAGES=2 give different plans"
grep -q '2 stages' d_sep.plan || fail "-D STAGES=2 does not reach the plan (no '2 stages')"
run "-D hex" gemm.tk --emit=plan -D STAGES=0x2
cmp -s out d_sep.plan || fail "-D STAGES=0x2 differs from -D STAGES=2"
run "default plan" gemm.tk --emit=plan
cmp -s out d_sep.plan && fail "-D STAGES=2 did not change the plan"

# ---- imports that are not .tk files: a diagnostic, exit 1 ----------------------------------------
printf 'import "/dev/zero";\n' >devimport.tk
run "import of a device" devimport.tk
if [ "$rc" -ne 1 ] || ! grep -q "cannot read imported file '/dev/zero': is not a regular file" err; then
    fail "import of /dev/zero: exit status $rc (expected 1) with a diagnostic, not an unbounded read"
fi
mkdir -p importdir
printf 'import "importdir";\n' >dirimport.tk
run "import of a directory" dirimport.tk
if [ "$rc" -ne 1 ] || ! grep -q "cannot read imported file 'importdir': is a directory" err; then
    fail "import of a directory: exit status $rc (expected 1) with 'is a directory'"
fi

# ---- -o to what is not a regular file: written in place; a symbolic link: followed ----------------
run "-o /dev/null" gemm.tk -o /dev/null
if [ "$rc" -ne 0 ] || [ ! -c /dev/null ]; then
    fail "-o /dev/null: exit status $rc, and /dev/null must stay a character device"
fi
printf 'old\n' >linked.cu
rm -f link.cu
ln -s linked.cu link.cu
run "-o a symbolic link" gemm.tk -o link.cu
if [ "$rc" -ne 0 ] || [ ! -L link.cu ] || ! cmp -s linked.cu stdout.cu; then
    fail "-o through a symbolic link: the link must stay and the file it names get the output"
fi
if command -v mkfifo >/dev/null 2>&1 && mkfifo out.fifo 2>/dev/null; then
    cat out.fifo >fifo.read &
    reader=$!
    run "-o a FIFO" gemm.tk -o out.fifo
    wait "$reader"
    if [ "$rc" -ne 0 ] || [ ! -p out.fifo ] || ! cmp -s fifo.read stdout.cu; then
        fail "-o to a FIFO: it must be written in place (and stay a FIFO)"
    fi
fi

# ---- determinism: every kernels.tk file, every emit kind, twice ----------------------------------
# The kinds come from --help; cu, plan and ast must work, others are checked once they do.
kinds=$("$tkc" --help | sed -n 's/^ *--emit=\([a-z0-9_]*\).*/\1/p')
for tk in "$root"/kernels.tk/*.tk; do
    name=$(basename "$tk" .tk)
    for kind in $kinds; do
        for n in 1 2; do
            rm -rf "run$n"
            mkdir "run$n"
            (cd "run$n" && exec "$tkc" "$tk" --emit="$kind" -o out) >"run$n.log" 2>&1
            echo $? >"run$n.rc"
        done
        checks=$((checks + 1))
        rc1=$(cat run1.rc)
        if [ "$rc1" -ne 0 ]; then
            case " cu plan ast " in
            *" $kind "*)
                fail "tkc kernels.tk/$name.tk --emit=$kind -o out: exit status $rc1"
                sed 's/^/    /' run1.log | head -n 10
                ;;
            *)  # a kind --help lists beyond the three the suite requires: reported, not failed
                echo "NOTE: tkc kernels.tk/$name.tk --emit=$kind -o out: exit status $rc1 (not checked): $(head -n 1 run1.log)"
                ;;
            esac
        elif ! diff -r run1 run2 >diff.log 2>&1; then
            fail "kernels.tk/$name.tk --emit=$kind: two runs differ"
            head -n 20 diff.log | sed 's/^/    /'
        fi
    done
done

# names the generated code spells differently (docs/examples/lang/names.tk: xor, NULL, _Bool, pass,
# lambda, None, tkc_ALIGN, ...): the C header compiles as C, the torch module's Python compiles
run "renamed names: header" --emit=header "$root/docs/examples/lang/names.tk"
if [ $rc -ne 0 ]; then fail "renamed names: --emit=header exit $rc"; show --emit=header names.tk
elif command -v cc >/dev/null 2>&1; then
    cp out names.h
    printf '#include "names.h"\nint main(void) { return 0; }\n' >names_main.c
    cc -std=c11 -Wall -Werror -fsyntax-only names_main.c 2>cc.log || { fail "renamed names: the header does not compile as C"; head -n 5 cc.log; }
fi
run "renamed names: torch" --emit=torch -o names_torch "$root/docs/examples/lang/names.tk"
if [ $rc -ne 0 ]; then fail "renamed names: --emit=torch exit $rc"; show --emit=torch names.tk
elif command -v python3 >/dev/null 2>&1; then
    python3 -m py_compile names_torch/*.py 2>py.log || { fail "renamed names: the torch module's Python does not compile"; head -n 5 py.log; }
fi
grep -q "the .tk name 'xor' is written 'xor_'" names_torch/*.cu 2>/dev/null || { checks=$((checks + 1)); fail "renamed names: the plan in the module's CUDA does not note xor -> xor_"; }

# a persistent grid with blocks_per_sm = 2 starts two blocks per SM, not one
sed 's/grid (m: cdiv(M, RB)), blocks_per_sm = BLOCKS, persistent = PERSISTENT,/grid (m: cdiv(M, RB)), persistent, blocks_per_sm = 2,/' \
    "$root/kernels.tk/layernorm.tk" >persistent2.tk
run "persistent, blocks_per_sm = 2" persistent2.tk
if [ $rc -ne 0 ] || ! grep -q "tiles < sms \* 2 ? tiles : sms \* 2);  // persistent: 2 blocks per SM" out; then
    fail "persistent with blocks_per_sm = 2: the launcher does not start 2 blocks per SM"
    grep -n "const unsigned grid" out | head -n 3
fi

echo "cli: $checks checks, $failed failed (emit kinds: $(echo $kinds))"
[ "$failed" -eq 0 ]
