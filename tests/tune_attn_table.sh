#!/bin/sh
# kernels.tk/attn_fwd.dispatch is what `bench/tune_attn.py table` writes from run 112's rows (the
# documented way to make it again): the measured short rules, and the few-heads rules and notes
# written by hand kept as they are. usage: tune_attn_table.sh ROOT
root=$1
command -v python3 >/dev/null 2>&1 || { echo "no python3: skipped"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
grep -v '^#' "$root/bench/runs/2026-12-01-run112-tune-attn.jsonl" > "$tmp/rows.jsonl"
python3 "$root/bench/tune_attn.py" table --rows "$tmp/rows.jsonl" --table "$root/kernels.tk/attn_fwd.dispatch" \
    --run "bench/RESULTS.md run 112" > "$tmp/table" || { echo "FAIL: tune_attn.py table failed"; exit 1; }
if ! cmp -s "$tmp/table" "$root/kernels.tk/attn_fwd.dispatch"; then
    echo "FAIL: bench/tune_attn.py table no longer writes kernels.tk/attn_fwd.dispatch:"
    diff "$root/kernels.tk/attn_fwd.dispatch" "$tmp/table" | head -20
    exit 1
fi
echo "tune_attn.py table writes kernels.tk/attn_fwd.dispatch byte for byte"
