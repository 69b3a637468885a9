#!/bin/sh
# api_header.sh - tkc --emit=header: the header of kernels.tk/gemm.tk, kernels.tk/attn_fwd.tk and
# tests/api/two.tk (two kernels, scalars, compile-time dimensions, requires) compiles on its own
# as C99/C11/C17 (-Wall -Wextra -Werror -pedantic) and C++11/17/20 with every C and C++ compiler
# found (cc, c++, clang, clang++), includes nothing but <stdint.h>, declares exactly the launchers
# the .cu defines with the same parameters (both printed by api_c_params), defines the status
# codes with the .cu's values and guards, and is the same bytes on every run. use_headers.c
# includes all three headers twice, as C and as C++, and runs tkc_status_string. A source name
# with a quote, a backslash and a trigraph still gives a valid header. gemm.h and attn_fwd.h
# are compared with golden/.
#
#   usage: api_header.sh [--update] TKC ROOT      (ROOT: the source tree; --update rewrites golden/)
# CC and CXX choose the first C and C++ compilers (default cc and c++).

. "$(dirname "$0")/common.sh"
api_args api_header.sh 1 "$@"

ccs=${CC:-cc}
cxxs=${CXX:-c++}
command -v clang >/dev/null 2>&1 && [ "$ccs" != clang ] && ccs="$ccs clang"
command -v clang++ >/dev/null 2>&1 && [ "$cxxs" != clang++ ] && cxxs="$cxxs clang++"

# the declarations of a header, one per line: "int tkc_x(...);"
decls() {
    awk '/^int tkc_/ { s = $0; while (s !~ /;$/ && (getline l) > 0) { sub(/^ +/, "", l); s = s " " l } print s }' "$1"
}

# parameter names that are C or C++ keywords: the header still compiles as C and C++
run_tkc "$tmp/keywords.h" --emit=header "$here/keywords.tk" && {
    for cc in $ccs; do
        check_cmd "keywords.h as c11 with $cc" "$cc" -x c -std=c11 -Wall -Wextra -Werror -pedantic -fsyntax-only "$tmp/keywords.h"
    done
    for cxx in $cxxs; do
        check_cmd "keywords.h as c++17 with $cxx" "$cxx" -x c++ -std=c++17 -Wall -Wextra -Werror -pedantic -fsyntax-only \
            "$tmp/keywords.h"
    done
}

for tk in "$root/kernels.tk/gemm.tk" "$root/kernels.tk/attn_fwd.tk" "$here/two.tk"; do
    name=$(basename "$tk" .tk)
    h=$tmp/$name.h
    run_tkc "$h" --emit=header "$tk" || continue
    run_tkc "$tmp/$name.cu" "$tk" || continue
    run_tkc "$tmp/$name.again.h" --emit=header "$tk" &&
        check_cmd "$name.h: the same bytes on a second run" cmp "$h" "$tmp/$name.again.h"

    for cc in $ccs; do
        for std in c99 c11 c17; do
            check_cmd "$name.h as $std with $cc" "$cc" -x c -std=$std -Wall -Wextra -Werror -pedantic -fsyntax-only "$h"
        done
    done
    for cxx in $cxxs; do
        for std in c++11 c++17 c++20; do
            check_cmd "$name.h as $std with $cxx" "$cxx" -x c++ -std=$std -Wall -Wextra -Werror -pedantic -fsyntax-only "$h"
        done
    done

    checks=$((checks + 1))
    incs=$(grep '^[[:space:]]*#[[:space:]]*include' "$h")
    [ "$incs" = "#include <stdint.h>" ] || fail "$name.h includes more than <stdint.h>: $incs"

    # the declarations are the .cu's definitions, parameter for parameter
    sed -n 's/^extern "C" \(int tkc_.*)\) {$/\1;/p' "$tmp/$name.cu" | sort >"$tmp/$name.cu.decls"
    decls "$h" | sort >"$tmp/$name.h.decls"
    checks=$((checks + 1))
    if [ ! -s "$tmp/$name.cu.decls" ]; then
        fail "$name.cu: no extern \"C\" launcher found"
    elif ! diff -u "$tmp/$name.cu.decls" "$tmp/$name.h.decls" >"$tmp/diff"; then
        fail "$name.h declares other launchers than $name.cu defines:"
        cat "$tmp/diff"
    fi

    # the status codes and the stream type: the same values under the same guards
    for f in "$h" "$tmp/$name.cu"; do grep -o 'TKC_[A-Z_]* = [0-9]*' "$f" >"$f.codes"; done
    check_cmd "$name.h: status codes as in $name.cu" diff -u "$tmp/$name.cu.codes" "$h.codes"
    checks=$((checks + 1))
    [ "$(wc -l <"$h.codes")" -eq 8 ] || fail "$name.h: expected 8 status codes, found $(wc -l <"$h.codes")"
    for f in "$h" "$tmp/$name.cu"; do
        checks=$((checks + 1))
        grep -q '^typedef struct CUstream_st \*tkc_stream_t;' "$f" || fail "$(basename "$f"): no tkc_stream_t typedef"
        for g in TKC_STREAM_T TKC_STATUS_CODES; do
            checks=$((checks + 1))
            grep -q "^#ifndef $g\$" "$f" && grep -q "^#define $g\$" "$f" || fail "$(basename "$f"): no $g guard"
        done
    done
    for g in __cplusplus TKC_STATUS_STRING; do
        checks=$((checks + 1))
        grep -q "^#ifn*def $g\$" "$h" || fail "$name.h: no #if(n)def $g"
    done
    checks=$((checks + 1))
    grep -q '^extern "C" {$' "$h" || fail "$name.h: no extern \"C\" block"
done

# every header twice, all together, as C and C++; then run it
for cc in $ccs; do
    check_cmd "use_headers.c with $cc" "$cc" -std=c99 -Wall -Wextra -Werror -pedantic -I"$tmp" -o "$tmp/use_c" \
        "$here/use_headers.c" && check_cmd "use_headers (C, $cc) runs" "$tmp/use_c"
done
for cxx in $cxxs; do
    check_cmd "use_headers.c as C++ with $cxx" "$cxx" -x c++ -std=c++17 -Wall -Wextra -Werror -pedantic -I"$tmp" \
        -o "$tmp/use_cxx" "$here/use_headers.c" && check_cmd "use_headers (C++, $cxx) runs" "$tmp/use_cxx"
done

# a source name that must be escaped or neutralized: a quote, a backslash, a trigraph
mkdir -p "$tmp/odd" && cp "$here/two.tk" "$tmp/odd/q\"b\\s ??- x.tk"
if run_tkc "$tmp/odd.h" --emit=header "$tmp/odd/q\"b\\s ??- x.tk"; then
    check_cmd "a header from an odd file name, as C99" "${CC:-cc}" -x c -std=c99 -Wall -Wextra -Werror -pedantic \
        -fsyntax-only "$tmp/odd.h"
    checks=$((checks + 1))
    grep -q '^#ifndef TKC_Q_B_S_____X_TK_H$' "$tmp/odd.h" || fail "odd name: unexpected include guard: $(grep -m1 '^#ifndef' "$tmp/odd.h")"
fi

# goldens
for name in gemm attn_fwd; do
    checks=$((checks + 1))
    exp=$here/golden/$name.h
    [ -f "$tmp/$name.h" ] || continue
    if [ "$update" = 1 ]; then
        cmp -s "$tmp/$name.h" "$exp" || { cp "$tmp/$name.h" "$exp" && echo "updated golden/$name.h"; }
    elif [ ! -f "$exp" ]; then
        fail "no golden/$name.h (create it with: api_header.sh --update TKC ROOT)"
    elif ! diff -u --label "golden/$name.h (expected)" --label "$name.h (tkc now)" "$exp" "$tmp/$name.h"; then
        fail "$name.h differs from golden/$name.h (accept with: tests/api/api_header.sh --update $tkc $root)"
    fi
done

finish api_header
