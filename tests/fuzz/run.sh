#!/bin/sh
# run.sh - builds the libFuzzer targets of tests/fuzz/fuzz_tkc.c with clang, ASan and UBSan
# against the compiler's sources (and the parser bison and flex generated into BUILD), seeds a
# corpus from every .tk of the tree, and fuzzes each target for SECONDS seconds (default 30):
# `full` (parse, check, lower, verify, emit), `parse` (parse and dump only) and `dispatch` (a
# dispatch table for a fixed program, seeded from every .dispatch of the tree). TARGETS picks
# them (default "full parse dispatch"). The corpus in DIR/corpus-TARGET is kept between runs; findings go
# to DIR/crashes-TARGET. Exit 1 if any target found something.
#
#   usage: run.sh ROOT BUILD DIR [SECONDS] [TARGETS]   (exit 77: no clang with libFuzzer here)
set -u
root=$1 build=$2 dir=$3 secs=${4:-30} targets=${5:-full parse dispatch}
cc=${CLANG:-clang}
mkdir -p "$dir" || exit 2
probe=$dir/probe.c
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' >"$probe"
if ! "$cc" -fsanitize=fuzzer "$probe" -o "$dir/probe" >/dev/null 2>&1; then
    echo "SKIP: no $cc with libFuzzer (-fsanitize=fuzzer)"
    exit 77
fi
srcs=$(ls "$root"/src/*.c | grep -v '/main\.c$')
status=0
for t in $targets; do
    case $t in
        full) def= ;;
        parse) def=-DFUZZ_PARSE_ONLY ;;
        dispatch) def=-DFUZZ_DISPATCH ;;
        *) echo "run.sh: unknown target '$t' (full, parse, dispatch)" >&2; exit 2 ;;
    esac
    # shellcheck disable=SC2086
    "$cc" -std=c11 -O1 -g $def -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
        -I"$root/src" -I"$build" -o "$dir/fuzz_$t" "$root/tests/fuzz/fuzz_tkc.c" $srcs "$build/tk.tab.c" \
        "$build/tk.yy.c" "$build/templates_data.c" -lm || exit 2
    mkdir -p "$dir/corpus-$t" "$dir/crashes-$t" || exit 2
    ext=tk dict=tk.dict
    [ "$t" = dispatch ] && ext=dispatch dict=dispatch.dict
    find "$root/kernels.tk" "$root/tests" "$root/docs/examples" "$root/bench/features" -type f -name "*.$ext" 2>/dev/null |
        while read -r f; do cp "$f" "$dir/corpus-$t/seed-$(echo "$f" | cksum | cut -d' ' -f1).$ext"; done
    # -report_slow_units=20 (the hang timeout), not libFuzzer's 10 s: the suite's own seeds take up to ~6 s in
    # this ASan + UBSan build (kernels.tk/rotary.tk: the output-coverage check enumerating its 3-axis grid), and
    # CI's two cores running the other tests beside it doubled that into a "slow unit" finding
    (cd "$dir" && ./"fuzz_$t" -max_total_time="$secs" -max_len=65536 -timeout=20 -report_slow_units=20 -rss_limit_mb=4096 \
        -dict="$root/tests/fuzz/$dict" -artifact_prefix="crashes-$t/" -print_final_stats=1 \
        "corpus-$t" >"fuzz-$t.log" 2>&1)
    rc=$?
    grep -E 'cov: ' "$dir/fuzz-$t.log" | tail -n 1
    grep -E '^stat::(number_of_executed_units|new_units_added|peak_rss_mb)' "$dir/fuzz-$t.log"
    n=$(ls "$dir/crashes-$t" | wc -l)
    echo "fuzz $t: $secs s, exit $rc, $n finding(s) in $dir/crashes-$t"
    if [ "$rc" -ne 0 ] || [ "$n" -ne 0 ]; then status=1; fi
done
exit $status
