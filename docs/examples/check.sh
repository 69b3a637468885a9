#!/bin/bash
# check.sh - runs every example of docs/language.md through tkc and compares with what the
# example says about itself. Each .tk file under docs/examples/ starts with comment lines:
#   // expect: ok               --check succeeds
#   // expect: front-end-only   --check fails, and every error says "not supported by the
#                               sm_90a back end yet" (the front end accepted the program)
#   // expect-error: TEXT       --check fails and prints TEXT (one line per expected message;
#                               with front-end-only, messages that must be among the errors)
#   // args: -D NAME=VALUE ...  extra tkc arguments
#   // nvcc: fails              (with 'ok') a known back-end bug: --check passes but the CUDA does
#                               not compile; --nvcc reports it when it starts compiling
# Files under an inc/ folder are imported by others and not run on their own. Last, every line
# of the ```tk code blocks of docs/language.md must appear in some example file.
# Usage: docs/examples/check.sh [--nvcc NVCC] [TKC]   (TKC defaults to build/tkc)
#   --nvcc NVCC  also compile the CUDA of every 'ok' example with NVCC for sm_90a (no GPU needed)
set -u
cd "$(dirname "$0")"
nvcc_too=0 nvcc=
if [ "${1:-}" = "--nvcc" ]; then nvcc_too=1 nvcc=${2:?check.sh: --nvcc needs the path of nvcc}; shift 2; fi
TKC=${1:-../../build/tkc}
[ -x "$TKC" ] || { echo "check.sh: no tkc at $TKC (build it first)"; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 n=0
for f in $(find . -name '*.tk' -not -path '*/inc/*' | sort); do
    n=$((n + 1))
    expect=$(sed -n 's|^// expect: *||p' "$f" | head -1)
    args=$(sed -n 's|^// args: *||p' "$f" | head -1)
    # shellcheck disable=SC2086
    "$TKC" "$f" --check $args >"$tmp/out" 2>&1
    rc=$?
    bad=""
    if [ "$expect" = "ok" ]; then
        [ $rc -eq 0 ] || bad="expected success, got rc=$rc"
        if [ -z "$bad" ] && [ $nvcc_too -eq 1 ]; then
            nv_ok=1
            # shellcheck disable=SC2086
            "$TKC" "$f" $args -o "$tmp/k.cu" &&
                "$nvcc" -gencode=arch=compute_90a,code=sm_90a -std=c++17 -c "$tmp/k.cu" -o "$tmp/k.o" >"$tmp/nv" 2>&1 ||
                nv_ok=0
            if grep -q '^// nvcc: fails' "$f"; then
                [ $nv_ok -eq 0 ] || bad="now compiles with nvcc: update docs/language.md (section 18)"
            else
                [ $nv_ok -eq 1 ] || bad="nvcc failed: $(grep -m1 error "$tmp/nv")"
            fi
        fi
    elif [ "$expect" = "front-end-only" ]; then
        if [ $rc -ne 1 ]; then bad="expected rc=1, got rc=$rc"
        elif grep 'error:' "$tmp/out" | grep -qv 'not supported by the sm_90a back end yet'; then
            bad="an error other than 'not supported by the sm_90a back end yet'"
        fi
        while IFS= read -r want; do
            grep -qF -- "$want" "$tmp/out" || bad="${bad:+$bad; }missing: $want"
        done < <(sed -n 's|^// expect-error: *||p' "$f")
    else
        [ $rc -eq 1 ] || bad="expected diagnostics, got rc=$rc"
        while IFS= read -r want; do
            grep -qF -- "$want" "$tmp/out" || bad="${bad:+$bad; }missing: $want"
        done < <(sed -n 's|^// expect-error: *||p' "$f")
    fi
    if [ -n "$bad" ]; then
        fail=$((fail + 1))
        echo "FAIL $f: $bad"
        sed 's/^/    /' "$tmp/out" | head -20
    fi
done
echo "$((n - fail)) of $n examples as documented"
# every line of a ```tk block in language.md must be a line of some example
find . -name '*.tk' -exec cat {} + | sed 's/^[[:space:]]*//; s/[[:space:]]*$//' | sort -u >"$tmp/lines"
awk '/^```tk$/ { inblk = 1; next } /^```/ { inblk = 0 } inblk' ../language.md |
    sed 's/^[[:space:]]*//; s/[[:space:]]*$//' | grep -v '^$' >"$tmp/doc"
missing=$(grep -vxF -f "$tmp/lines" "$tmp/doc")
if [ -n "$missing" ]; then
    fail=$((fail + 1))
    echo "FAIL language.md: code lines found in no example:"
    echo "$missing" | sed 's/^/    /'
else
    echo "every line of the tk code blocks in language.md is in an example"
fi
[ $fail -eq 0 ]
