#!/bin/sh
# check_wgmma_header.sh - templates/wgmma.cuh is exactly what templates/gen_wgmma.py writes (the
# generator's output is committed); skipped, with exit status 77, when python3 is missing.
#
#   usage: check_wgmma_header.sh ROOT [PYTHON]

if [ $# -lt 1 ]; then
    echo "usage: check_wgmma_header.sh ROOT [PYTHON]" >&2
    exit 2
fi
root=$1
py=${2:-}
case $py in ''|*NOTFOUND*) py=$(command -v python3 2>/dev/null) ;; esac
if [ -z "$py" ]; then
    echo "SKIPPED: python3 not found; templates/wgmma.cuh was not compared with templates/gen_wgmma.py"
    exit 77
fi
tmp=$(mktemp "${TMPDIR:-/tmp}/tkc_wgmma.XXXXXX") || exit 2
trap 'rm -f "$tmp"' EXIT INT TERM
if ! "$py" "$root/templates/gen_wgmma.py" >"$tmp"; then
    echo "FAIL: templates/gen_wgmma.py failed"
    exit 1
fi
if ! cmp -s "$tmp" "$root/templates/wgmma.cuh"; then
    echo "FAIL: templates/wgmma.cuh differs from what templates/gen_wgmma.py writes:"
    diff -u --label "templates/wgmma.cuh (committed)" --label "templates/gen_wgmma.py (now)" "$root/templates/wgmma.cuh" "$tmp" | head -n 40
    echo "regenerate with: python3 templates/gen_wgmma.py > templates/wgmma.cuh"
    exit 1
fi
echo "templates/wgmma.cuh matches templates/gen_wgmma.py ($(grep -c '^// @fragment' "$tmp") wrappers)"
