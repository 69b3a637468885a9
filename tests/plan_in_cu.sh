#!/bin/sh
# plan_in_cu.sh - the emitter decides nothing: for every plan golden (tests/golden/plan/*.tk) and
# every kernels.tk file, each wgmma wait count, named barrier (id and thread count) and store
# path that the generated .cu uses appears in the plan tkc prints for it, each store path of the
# plan has its code in the .cu, and the kernel takes the strides of exactly the tensors the plan
# names. The plan comment at the top of each kernel is left out of the
# search (code lines only).
#
#   usage: plan_in_cu.sh TKC ROOT

if [ $# -ne 2 ]; then
    echo "usage: plan_in_cu.sh TKC ROOT" >&2
    exit 2
fi
tkc=$1
root=$2
case $tkc in /*) ;; *) tkc=$(pwd)/$tkc ;; esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tkc_plancu.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
failed=0
checked=0

# the store paths a .cu's code shows, one per line (see emit_store in src/emit_store.c)
cu_paths() {
    grep -v 'TKC_DEVICE' "$1" >"$1.calls"
    grep -q 'tkc_stmatrix_x4(tkc_buf' "$1.calls" && echo staged
    grep -Eq '\*reinterpret_cast<(uint32_t|float2) \*>\(tkc_q\) =' "$1.calls" && echo direct
    grep -Eq 'if \((tkc_gi >= 0 && )?tkc_gi < [^)]*\) [A-Za-z_][A-Za-z0-9_]*\[.*\] = ' "$1.calls" && echo vector
    grep -Eq 'tkc_tma_store_[0-9]d\(&[A-Za-z0-9_]+, .*, [A-Za-z0-9_]+_smem' "$1.calls" && echo tma
    grep -q 'tkc_tma_add_[0-9]d(' "$1.calls" && echo tma.add
    grep -q 'tkc_red_add_[a-z0-9_]*(' "$1.calls" && echo red
    grep -q 'tkc_rows_store[0-9a-z_]*(' "$1.calls" && echo rows
}

check() { # name tk args...
    name=$1
    tk=$2
    shift 2
    checked=$((checked + 1))
    (cd "$(dirname "$tk")" && "$tkc" "$(basename "$tk")" --emit=plan "$@") >"$tmp/plan" 2>"$tmp/err" &&
        (cd "$(dirname "$tk")" && "$tkc" "$(basename "$tk")" "$@") >"$tmp/full.cu" 2>>"$tmp/err" || {
        echo "FAIL $name: tkc failed"
        sed 's/^/    /' "$tmp/err" | head -5
        failed=$((failed + 1))
        return
    }
    # code only: drop whole-line comments (the plan comment among them)
    grep -v '^[[:space:]]*//' "$tmp/full.cu" >"$tmp/cu"
    bad=""
    for n in $(grep -o 'tkc_wgmma_wait<[0-9]*>' "$tmp/cu" | grep -o '[0-9][0-9]*' | sort -u); do
        grep -q "wgmma.wait_group $n\b" "$tmp/plan" || bad="$bad; wgmma.wait_group $n is in the .cu, not in the plan"
    done
    # named barriers: tkc_bar_sync(ID[ + ...], THREADS) and tkc_bar_arrive(...)
    grep -Eo 'tkc_bar_(sync|arrive)\([0-9]+( \+ [^,]*)?, [0-9]+\)' "$tmp/cu" | sed -E 's/.*\(([0-9]+)[^,]*, ([0-9]+)\)/\1 \2/' |
        sort -u >"$tmp/bars"
    while read -r id threads; do
        grep -Eq "^    [a-z_]+: ids? $id(\.\.[0-9]+)?( \(id $id \+ wg\))?, $threads threads" "$tmp/plan" ||
            bad="$bad; named barrier $id ($threads threads) is in the .cu, not in the plan"
    done <"$tmp/bars"
    cu_paths "$tmp/cu" | sort -u >"$tmp/cu_paths"
    grep -o '^      *store .*  \[[a-z.]*\]$' "$tmp/plan" | sed 's/.*\[\([a-z.]*\)\]$/\1/' | sort -u >"$tmp/plan_paths"
    if ! cmp -s "$tmp/cu_paths" "$tmp/plan_paths"; then
        bad="$bad; store paths in the .cu: $(tr '\n' ' ' <"$tmp/cu_paths")in the plan: $(tr '\n' ' ' <"$tmp/plan_paths")"
    fi
    # the tensors whose strides the kernel takes
    grep -o 'const long long [A-Za-z_][A-Za-z0-9_]*_st0' "$tmp/cu" | sed 's/const long long //; s/_st0$//' | sort -u >"$tmp/cu_strides"
    sed -n 's/^  strides passed to the kernel[^:]*: //p' "$tmp/plan" | tr ' ' '\n' | grep . | sort -u >"$tmp/plan_strides"
    if ! cmp -s "$tmp/cu_strides" "$tmp/plan_strides"; then
        bad="$bad; strides in the .cu: $(tr '\n' ' ' <"$tmp/cu_strides")in the plan: $(tr '\n' ' ' <"$tmp/plan_strides")"
    fi
    # programmatic dependent launch: the kernels that wait for the grid before them or let the next
    # one start, and the entry calls launched so, as many in the .cu as the plan names (the kernels'
    # calls, which the emitter marks '// plan:', not the clearing kernel's of the template)
    grep -v '^[[:space:]]*//' "$tmp/full.cu" | grep -E 'tkc_grid_dep_(wait|launch)\(\);  // plan:' >"$tmp/cu_pdl" || true
    n_cu=$(grep -c 'tkc_grid_dep_wait();' "$tmp/cu_pdl"); n_plan=$(grep -c '^  programmatic dependent launch:.*waits' "$tmp/plan")
    [ "$n_cu" = "$n_plan" ] || bad="$bad; $n_cu kernels wait for the grid before them in the .cu, $n_plan in the plan"
    n_cu=$(grep -c 'tkc_grid_dep_launch();' "$tmp/cu_pdl"); n_plan=$(grep -c '^  programmatic dependent launch: lets' "$tmp/plan")
    [ "$n_cu" = "$n_plan" ] || bad="$bad; $n_cu kernels let the next one start in the .cu, $n_plan in the plan"
    n_cu=$(grep -c '_launch(.*, true)) != TKC_OK' "$tmp/cu"); n_plan=$(grep -c '(programmatic: may start' "$tmp/plan")
    [ "$n_cu" = "$n_plan" ] || bad="$bad; $n_cu programmatic launches in the .cu, $n_plan in the plan"
    if [ -n "$bad" ]; then
        echo "FAIL $name${bad#;}" | sed 's/FAIL \([^ ]*\) /FAIL \1: /'
        failed=$((failed + 1))
    fi
}

for tk in "$root"/tests/golden/plan/*.tk "$root"/kernels.tk/*.tk; do
    [ -e "$tk" ] || continue
    args=$(sed -n '1s|^// args: *||p' "$tk")
    # shellcheck disable=SC2086
    check "$(basename "$tk" .tk)" "$tk" $args
done
echo "plan_in_cu: $checked programs, $failed failed"
[ $failed -eq 0 ]
