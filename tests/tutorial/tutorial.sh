#!/bin/bash
# tutorial.sh - docs/tutorial.md against the compiler: runs the tutorial's commands, as a reader
# following it would, and checks that every output the tutorial shows is what they print now.
#
#   usage: tutorial.sh [--update] TKC ROOT [NVCC]
#     TKC    the tkc to run as ./build/tkc        ROOT  the source tree (for docs/)
#     NVCC   nvcc, for the blocks that need it (empty or absent: those blocks are skipped)
#     --update  rewrite the stale blocks of docs/tutorial.md with what the commands print now
#   TKC_TEST_PYTHON: the Python to use (default python3; without one the Python blocks are skipped)
#
# The commands run in a scratch directory laid out like the repository (docs/ is ROOT's, build/tkc
# is TKC, build/tutorial/ starts empty), one block after the other, so a block sees the files the
# blocks before it made. A code block is checked when comment lines "<!-- check: KIND ARGS -->"
# stand before it (only blank lines between); several apply in their order:
#   file PATH     the block is the text of PATH: it is written there
#   run           the block's lines are commands; they must succeed
#   output CMD    the block is what CMD prints
#   transcript    the block is a shell session: "$ CMD" lines are run (in one bash, so "echo $?"
#                 sees the command before; "> " lines after one go on with it), every other line
#                 is output of the command above it
#   session       the block is an interactive Python session: a "$ ... python3" line, then
#                 ">>> " statements and their output (session.py replays them)
#   before CMD    run CMD before the block's check (it must succeed); after CMD: after it
#   requires TOOL nvcc or python3: without it the block is skipped
# Outputs are stdout and stderr together, with LC_ALL=C, and compared without trailing blanks. A
# last output line "..." (indented or not) shows a cut: only the lines above it are compared. A code block that starts with "$ " or
# ">>> " must be checked. Python blocks run with the stand-in torch of torch_stub/ (the module's
# checks that run before a GPU; no build), so they need neither torch nor a GPU.

set -u
update=0
if [ "${1:-}" = "--update" ]; then update=1; shift; fi
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
    echo "usage: tutorial.sh [--update] TKC ROOT [NVCC]" >&2
    exit 2
fi
tkc=$1 root=$2 nvcc=${3:-}
case $tkc in /*) ;; *) tkc=$(pwd)/$tkc ;; esac
case $root in /*) ;; *) root=$(pwd)/$root ;; esac
py=${TKC_TEST_PYTHON:-python3}
command -v "$py" >/dev/null 2>&1 || py=
md=$root/docs/tutorial.md
here=$root/tests/tutorial
export LC_ALL=C
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tkc_tutorial.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

# the scratch repository
sb=$tmp/repo
mkdir -p "$sb/build" "$tmp/blk"
ln -s "$root/docs" "$sb/docs"
ln -s "$root/kernels.tk" "$sb/kernels.tk"
ln -s "$tkc" "$sb/build/tkc"

# ---- the checked blocks of the tutorial ---------------------------------------------------------
# For block N: blk/N.spec (its check lines), N.text (its text, unindented), and a line
# "N FIRST LAST INDENT MARKER_LINE" in blk/list (the lines of its text, its indent, 0 if fenced).
# A code block that starts with "$ " or ">>> " without a check line goes to blk/unchecked.
awk -v dir="$tmp/blk" '
function flush_block(   i) {
    if (npend > 0) {
        n++
        for (i = 1; i <= npend; i++) print pend[i] > (dir "/" n ".spec")
        close(dir "/" n ".spec")
        printf "" > (dir "/" n ".text")
        for (i = 1; i <= nb; i++) print body[i] > (dir "/" n ".text")
        close(dir "/" n ".text")
        print n, first, first + nb - 1, indent, pline > (dir "/list")
    } else if (nb > 0 && (body[1] ~ /^\$ / || body[1] ~ /^>>> /)) {
        print first ": " body[1] > (dir "/unchecked")
    }
    npend = 0; nb = 0
}
BEGIN { n = 0; npend = 0; nb = 0; state = "text"; prev_blank = 1 }
{
    line = $0
    if (state == "fenced") {
        if (line ~ /^```/) { state = "text"; flush_block(); prev_blank = 0; next }
        body[++nb] = line
        next
    }
    if (state == "indented") {
        if (line ~ /^    / || line ~ /^ *$/) {
            if (line ~ /^ *$/) { blanks++; next }
            for (; blanks > 0; blanks--) body[++nb] = ""
            body[++nb] = substr(line, 5)
            next
        }
        state = "text"; flush_block(); prev_blank = 0
    }
    if (line ~ /^<!-- check: .* -->$/) {
        s = line; sub(/^<!-- check: /, "", s); sub(/ -->$/, "", s)
        if (npend == 0) pline = NR
        pend[++npend] = s
        prev_blank = 0
        next
    }
    if (line ~ /^```/) { state = "fenced"; first = NR + 1; indent = 0; nb = 0; next }
    if (line ~ /^    / && prev_blank) {
        state = "indented"; first = NR; indent = 4; nb = 0; blanks = 0
        body[++nb] = substr(line, 5)
        next
    }
    if (line ~ /^ *$/) { prev_blank = 1; next }
    if (npend > 0) {
        printf "docs/tutorial.md:%d: a check line that no code block follows\n", pline > (dir "/unchecked")
        npend = 0
    }
    prev_blank = 0
}
END { if (state != "text") flush_block() }
' "$md"

failed=0 passed=0 skipped=0
fail() {
    failed=$((failed + 1))
    echo "FAIL: $*"
}
if [ -s "$tmp/blk/unchecked" ]; then
    while IFS= read -r l; do
        case $l in
        docs/*) fail "$l" ;;
        *) fail "docs/tutorial.md:${l%%: *}: a block of commands with no check line before it: ${l#*: }" ;;
        esac
    done <"$tmp/blk/unchecked"
fi
[ -f "$tmp/blk/list" ] || { fail "docs/tutorial.md has no checked blocks"; exit 1; }

# the stand-in torch, for every python3 the commands run; nvcc where it was given
cat >"$tmp/env.sh" <<EOF
cd "$sb" || exit 99
export PATH="${nvcc:+$(dirname "$nvcc"):}\$PATH" PYTHONDONTWRITEBYTECODE=1
python3() { PYTHONPATH="$here/torch_stub\${PYTHONPATH:+:\$PYTHONPATH}" command "$py" "\$@"; }
EOF

# runs the shell text of file $1 in the scratch repository; its output goes to $2
run_in_sb() {
    { cat "$tmp/env.sh"; cat "$1"; } >"$tmp/script.sh"
    bash "$tmp/script.sh" >"$2" 2>&1
}

# writes to $3 what the block should show for output $2 when the tutorial shows $1: all of it
# (less trailing blanks), or, if $1 ends in a line "...", as many lines as $1 shows above it and
# then that line
cut_like() {
    local shown=$1 got=$2 out=$3
    local last n
    sed 's/[[:space:]]*$//' "$got" >"$tmp/got.trimmed" && got=$tmp/got.trimmed
    last=$(tail -n 1 "$shown")
    if [ "$(printf '%s' "$last" | tr -d ' ')" = "..." ]; then
        n=$(($(wc -l <"$shown") - 1))
        head -n "$n" "$got" >"$out"
        [ "$(wc -l <"$got")" -gt "$n" ] && printf '%s\n' "$last" >>"$out"
    else
        cp "$got" "$out"
    fi
}

# the actual text of a transcript block $1 into $2 (a command goes on in lines "> ", as the shell
# prompts for more)
transcript() {
    local text=$1 out=$2 k=0 in_cmd=0 line
    rm -f "$tmp"/cmd.* "$tmp"/exp.* "$tmp"/got.*
    while IFS= read -r line || [ -n "$line" ]; do
        case $line in
        '$ '*)
            k=$((k + 1)) in_cmd=1
            printf '%s\n' "$line" >"$tmp/cmd.$k"
            : >"$tmp/exp.$k"
            ;;
        '> '*)
            if [ $in_cmd -eq 1 ]; then printf '%s\n' "$line" >>"$tmp/cmd.$k"
            elif [ $k -gt 0 ]; then printf '%s\n' "$line" >>"$tmp/exp.$k"; fi
            ;;
        *) in_cmd=0; [ $k -gt 0 ] && printf '%s\n' "$line" >>"$tmp/exp.$k" ;;
        esac
    done <"$text"
    : >"$tmp/cmds.sh"
    for i in $(seq 1 $k); do
        { printf '{ '; sed '1s/^\$ //; 2,$s/^> //' "$tmp/cmd.$i"; printf '} >"%s" 2>&1\n' "$tmp/got.$i"; } >>"$tmp/cmds.sh"
    done
    run_in_sb "$tmp/cmds.sh" "$tmp/got.all"
    : >"$out"
    for i in $(seq 1 $k); do
        cat "$tmp/cmd.$i" >>"$out"
        cut_like "$tmp/exp.$i" "$tmp/got.$i" "$tmp/cut"
        cat "$tmp/cut" >>"$out"
    done
    # what the script itself said (a command that is not one): shown with a failure
    [ -s "$tmp/got.all" ] && { echo "    (the block's script said:)"; sed 's/^/    /' "$tmp/got.all"; }
    return 0
}

# the actual text of a Python session block $1 into $2
session() {
    local text=$1 out=$2 cmd
    cmd=$(head -n 1 "$text")
    case $cmd in '$ '*python3) ;; *) echo "    a session starts with a line '\$ ... python3', not '$cmd'"; return 1 ;; esac
    sed -n 's/^>>> //p; s/^\.\.\. /... /p' "$text" >"$tmp/stmts"
    printf '%s "%s" "%s"\n' "${cmd#\$ }" "$here/session.py" "$tmp/stmts" >"$tmp/cmds.sh"
    run_in_sb "$tmp/cmds.sh" "$tmp/got"
    { printf '%s\n' "$cmd"; cat "$tmp/got"; } >"$out"
}

: >"$tmp/updates"
while read -r n first last indent pline; do
    where="docs/tutorial.md:$pline"
    text=$tmp/blk/$n.text
    # requires, first: a block that cannot run is skipped whole
    skip=""
    while IFS= read -r spec; do
        case $spec in
        "requires nvcc") [ -n "$nvcc" ] && [ -x "$nvcc" ] || skip="no nvcc" ;;
        "requires python3") [ -n "$py" ] || skip="no python3" ;;
        "requires "*) fail "$where: unknown tool in '$spec'"; skip="broken" ;;
        esac
    done <"$tmp/blk/$n.spec"
    if [ -n "$skip" ]; then
        [ "$skip" = broken ] || { skipped=$((skipped + 1)); echo "SKIP: $where ($skip)"; }
        continue
    fi
    while IFS= read -r spec; do
        kind=${spec%% *} arg=${spec#* }
        [ "$arg" = "$spec" ] && arg=
        case $kind in
        requires) continue ;;
        before | after)
            [ "$kind" = after ] && continue
            printf '%s\n' "$arg" >"$tmp/cmds.sh"
            run_in_sb "$tmp/cmds.sh" "$tmp/got" || { fail "$where: before: '$arg' failed"; sed 's/^/    /' "$tmp/got"; }
            continue ;;
        file)
            mkdir -p "$(dirname "$sb/$arg")" && cp "$text" "$sb/$arg"
            continue ;;
        run)
            if run_in_sb "$text" "$tmp/got"; then passed=$((passed + 1))
            else fail "$where: the commands of the block failed"; sed 's/^/    /' "$tmp/got"; fi
            continue ;;
        output)
            printf '%s\n' "$arg" >"$tmp/cmds.sh"
            run_in_sb "$tmp/cmds.sh" "$tmp/got"
            cut_like "$text" "$tmp/got" "$tmp/actual" ;;
        transcript) transcript "$text" "$tmp/actual" >"$tmp/note" ;;
        session) session "$text" "$tmp/actual" >"$tmp/note" || { fail "$where: $(cat "$tmp/note")"; continue; } ;;
        *) fail "$where: unknown check '$spec'"; continue ;;
        esac
        if cmp -s "$text" "$tmp/actual"; then
            passed=$((passed + 1))
        else
            if [ $update -eq 1 ]; then
                cp "$tmp/actual" "$tmp/blk/$n.new"
                echo "$n $first $last $indent" >>"$tmp/updates"
                echo "updated: $where ($spec)"
            else
                fail "$where ($spec): the tutorial shows (-) what the commands do not print now (+):"
                diff -u --label "docs/tutorial.md:$first (shown)" --label "now" "$text" "$tmp/actual" | sed 's/^/    /'
                [ -s "$tmp/note" ] && cat "$tmp/note"
            fi
        fi
    done <"$tmp/blk/$n.spec"
    # the after commands, once the block is checked
    while IFS= read -r spec; do
        case $spec in
        "after "*)
            printf '%s\n' "${spec#after }" >"$tmp/cmds.sh"
            run_in_sb "$tmp/cmds.sh" "$tmp/got" || { fail "$where: after: '${spec#after }' failed"; sed 's/^/    /' "$tmp/got"; } ;;
        esac
    done <"$tmp/blk/$n.spec"
done <"$tmp/blk/list"

if [ $update -eq 1 ] && [ -s "$tmp/updates" ]; then
    # each stale block's lines replaced by the new text, indented as the block was
    awk -v dir="$tmp/blk" -v upd="$tmp/updates" '
    BEGIN { while ((getline l < upd) > 0) { split(l, f, " "); start[f[2]] = f[1]; stop[f[1]] = f[3]; ind[f[1]] = f[4] } }
    skipping && FNR <= stop[cur] { next }
    { skipping = 0 }
    FNR in start {
        cur = start[FNR]; skipping = 1
        pad = ind[cur] == 4 ? "    " : ""
        file = dir "/" cur ".new"
        while ((getline l < file) > 0) print (l == "" ? "" : pad l)
        close(file)
        if (FNR == stop[cur]) skipping = 0
        next
    }
    { print }
    ' "$md" >"$tmp/new.md" && cp "$tmp/new.md" "$md"
fi

echo "tutorial: $passed passed, $failed failed, $skipped skipped"
if [ $failed -ne 0 ]; then
    echo "to show what the commands print now: tests/tutorial/tutorial.sh --update TKC ROOT [NVCC] (then read the diff)"
    exit 1
fi
exit 0
