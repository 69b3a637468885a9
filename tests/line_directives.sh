#!/bin/sh
# line_directives.sh - tkc --line-directives on every kernels.tk file:
#   - without the flag there is no #line at all, and with it the CUDA differs only by #line lines;
#   - every '#line N "X.tk"' names the .tk that was compiled and is followed by the statement's
#     comment, whose text stands on line N of the .tk (literals compared as '#', a "TEMP = PART"
#     comment by its PART);
#   - every '#line N "OUT.cu"' that hands back to the generated file is exact (N = its own line + 1);
#   - with nvcc, the CUDA with directives compiles for sm_90a.
#
#   usage: line_directives.sh TKC ROOT [NVCC]   (NVCC: default nvcc from PATH or /usr/local/cuda/bin)

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
    echo "usage: line_directives.sh TKC ROOT [NVCC]" >&2
    exit 2
fi
tkc=$1
root=$2
case $tkc in /*) ;; *) tkc=$(pwd)/$tkc ;; esac
case $root in /*) ;; *) root=$(pwd)/$root ;; esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tkc_line.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
cd "$tmp" || exit 2

. "$root/tests/nvcc.sh"
find_nvcc "${3:-}"

failed=0
checks=0
fail() {
    echo "FAIL: $*"
    failed=$((failed + 1))
}

# the files kernels.tk imports and the dispatch tables it names, at the same relative paths
[ -d "$root/kernels.tk/inc" ] && cp -r "$root/kernels.tk/inc" .
for t in "$root"/kernels.tk/*.dispatch; do [ -f "$t" ] && cp "$t" .; done
for src in "$root"/kernels.tk/*.tk; do
    name=$(basename "$src" .tk)
    cp "$src" "$name.tk"
    checks=$((checks + 1))
    if ! "$tkc" "$name.tk" -o "$name.plain.cu" 2>err; then
        fail "tkc $name.tk: $(head -n 1 err)"
        continue
    fi
    if ! "$tkc" "$name.tk" --line-directives -o "$name.cu" 2>err; then
        fail "tkc $name.tk --line-directives: $(head -n 1 err)"
        continue
    fi
    grep -q '^#line' "$name.plain.cu" && fail "$name: #line directives without --line-directives"
    grep -q '^#line [0-9]* ".*\.tk"' "$name.cu" || fail "$name: no #line points at $name.tk or a .tk it imports"
    grep -v '^#line' "$name.cu" | cmp -s - "$name.plain.cu" ||
        fail "$name: --line-directives changed more than the #line lines"

    # Every directive, checked against the .tk and the .cu; awk prints one line per problem.
    awk -v tk="$name.tk" -v cu="$name.cu" '
        function trim(s) { gsub(/[ \t]+/, " ", s); sub(/^ /, "", s); sub(/ $/, "", s); return s }
        # literals are printed at full precision in the CUDA: compare them as "#"
        function nums(s) { gsub(/[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?/, "#", s); return s }
        FNR == NR { src[tk, FNR] = trim($0); nsrc[tk] = FNR; next }
        # another .tk the program imports: read it the first time a directive names it
        function load(f,   l, n) {
            if (f in nsrc) return 1
            n = 0
            while ((getline l < f) > 0) src[f, ++n] = trim(l)
            close(f)
            nsrc[f] = n
            return n > 0
        }
        pending {
            # the line after a directive into the .tk: "// STATEMENT  (note)" or "// STATEMENT"
            text = $0
            if (text !~ /^[ \t]*\/\/ /) { print cu ":" FNR ": no statement comment after #line " want; pending = 0; next }
            sub(/^[ \t]*\/\/ /, "", text); sub(/  .*$/, "", text); sub(/: .*$/, "", text)
            text = nums(trim(text)); line = nums(src[wfile, want])
            # a value the statement needs computed first reads "TEMP = PART": PART is on the line
            if (index(line, text) == 0 && text ~ /^[A-Za-z_][A-Za-z0-9_]* = /) sub(/^[^=]*= /, "", text)
            if (index(line, text) == 0)
                print cu ":" FNR ": comment \"" text "\" is not on " wfile ":" want " (\"" src[wfile, want] "\")"
            pending = 0
        }
        /^#line / {
            n = $2; file = $3; gsub(/"/, "", file)
            if (file == tk || (file ~ /\.tk$/ && load(file))) {
                if (n < 1 || n > nsrc[file]) print cu ":" FNR ": #line " n " is outside " file " (1.." nsrc[file] ")"
                else { want = n; wfile = file; pending = 1; ntk++ }
            } else if (file == cu) {
                if (n != FNR + 1) print cu ":" FNR ": #line " n " hands back to the wrong line (expected " FNR + 1 ")"
            } else print cu ":" FNR ": #line names \"" file "\", neither " tk " nor " cu
        }
        END { if (ntk == 0) print cu ": no directives into " tk " or the files it imports" }
    ' "$name.tk" "$name.cu" >problems
    if [ -s problems ]; then
        fail "$name: wrong #line directives"
        head -n 10 problems | sed 's/^/    /'
    fi

    if [ -n "$nvcc" ]; then
        checks=$((checks + 1))
        if ! "$nvcc" $NVCC_SM90A -c "$name.cu" -o "$name.o" >nvcc.log 2>&1; then
            fail "$name: the CUDA with #line directives does not compile"
            head -n 20 nvcc.log | sed 's/^/    /'
        fi
    fi
done

if [ -z "$nvcc" ]; then
    echo "NOTE: nvcc not found: the CUDA with #line directives was checked but not compiled"
fi
echo "line_directives: $checks checks, $failed failed"
[ "$failed" -eq 0 ]
