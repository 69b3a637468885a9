#!/bin/sh
# emit_torch.sh - tkc --emit=torch without a GPU: for kernels.tk/gemm.tk and attn_fwd.tk it checks
# that the three files are written (into a directory tkc creates), that the .cu is exactly what
# --emit=cu prints, that the output is byte-identical across runs and differs (with the
# extension's name) for a -D variant, that the binding declares the launchers exactly as the .cu
# defines them, usage errors, that the module and the binding are templates/tkc_torch_runtime.py
# and templates/tkc_torch_binding.cpp with their regions filled in, and that the module and its
# template are valid Python (and, where pyflakes is installed, lint-clean). Where python3 can
# import torch it also compiles the bindings and their template for syntax against torch's
# headers and runs check_module.py (the module's argument checks and status mapping, with a
# stand-in extension); where it cannot, it says so and skips those two steps.
#
#   usage: emit_torch.sh TKC ROOT      (ROOT: the source tree, for kernels.tk/)
#   TKC_TEST_PYTHON: the Python to use (default python3); CXX: the C++ compiler (default c++)

# --require-torch: the same checks, then exit 77 (ctest's SKIP) when the torch-dependent ones could
# not run (no python, or no importable torch), so a missing prerequisite shows as Skipped, not Passed
require_torch=0
if [ "${1:-}" = "--require-torch" ]; then
    require_torch=1
    shift
fi
if [ $# -ne 2 ]; then
    echo "usage: emit_torch.sh [--require-torch] TKC ROOT" >&2
    exit 2
fi
torch_ran=0
tkc=$1
root=$2
case $tkc in /*) ;; *) tkc=$(pwd)/$tkc ;; esac
case $root in /*) ;; *) root=$(pwd)/$root ;; esac
py=${TKC_TEST_PYTHON:-python3}
cxx=${CXX:-c++}
here=$root/tests/torch
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tkc_torch.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

failed=0
checks=0
ok() {
    checks=$((checks + 1))
    echo "ok: $*"
}
fail() {
    checks=$((checks + 1))
    failed=$((failed + 1))
    echo "FAIL: $*"
}

for stem in gemm attn_fwd; do
    src=$root/kernels.tk/$stem.tk
    out=$tmp/a/$stem/nested      # tkc creates the missing directories
    if "$tkc" "$src" --emit=torch -o "$out" >"$tmp/out" 2>"$tmp/err"; then
        ok "$stem: tkc --emit=torch exit 0"
    else
        fail "$stem: tkc --emit=torch failed"
        sed 's/^/    /' "$tmp/err" | head -n 10
        continue
    fi
    [ -s "$tmp/out" ] && fail "$stem: --emit=torch printed to stdout"
    missing=""
    for f in "$stem.py" "${stem}_kernels.cu" "${stem}_binding.cpp"; do
        [ -s "$out/$f" ] || missing="$missing $f"
    done
    if [ -z "$missing" ]; then ok "$stem: $stem.py, ${stem}_kernels.cu, ${stem}_binding.cpp written"
    else fail "$stem: missing or empty:$missing"; continue; fi

    # the kernels are emit_cuda's output with the same options
    "$tkc" "$src" -o "$tmp/$stem.cu"
    if cmp -s "$tmp/$stem.cu" "$out/${stem}_kernels.cu"; then ok "$stem: ${stem}_kernels.cu is the --emit=cu output"
    else fail "$stem: ${stem}_kernels.cu differs from the --emit=cu output"; fi

    # deterministic: a second run, into another directory, writes the same bytes
    "$tkc" "$src" --emit=torch -o "$tmp/b/$stem"
    same=1
    for f in "$stem.py" "${stem}_kernels.cu" "${stem}_binding.cpp"; do
        cmp -s "$out/$f" "$tmp/b/$stem/$f" || { same=0; fail "$stem: $f differs between two runs"; }
    done
    [ $same -eq 1 ] && ok "$stem: byte-identical across runs and directories"

    # the binding's declarations of the launchers are the .cu's definitions
    grep '^extern "C" int tkc_' "$out/${stem}_kernels.cu" | sed 's/ *{ *$//' >"$tmp/def"
    grep '^extern "C" int tkc_' "$out/${stem}_binding.cpp" | sed 's/ *; *$//' >"$tmp/decl"
    if [ -s "$tmp/def" ] && cmp -s "$tmp/def" "$tmp/decl"; then ok "$stem: the binding declares the launchers as the .cu defines them"
    else
        fail "$stem: launcher declarations differ"
        diff "$tmp/def" "$tmp/decl" | sed 's/^/    /' | head -n 10
    fi

    # the module is the template with every region filled in: no marker is left
    if grep -n '^# @tkc ' "$out/$stem.py" >"$tmp/err"; then
        fail "$stem: $stem.py still has template markers"; sed 's/^/    /' "$tmp/err" | head -n 5
    else ok "$stem: $stem.py has no template markers left"; fi
    # and outside the regions it is the template, line for line: every line of the template's
    # runtime part (from its first def to its last) is in the module, in order
    sed -n '/^# ---- the runtime every tkc torch module shares/,/^# @tkc begin kernels/p' \
        "$root/templates/tkc_torch_runtime.py" | sed '$d' >"$tmp/runtime"
    n=$(wc -l <"$tmp/runtime")
    first=$(grep -n '^# ---- the runtime every tkc torch module shares' "$out/$stem.py" | cut -d: -f1)
    if [ "$n" -gt 100 ] && [ -n "$first" ] && sed -n "$first,$((first + n - 1))p" "$out/$stem.py" | cmp -s - "$tmp/runtime"
    then ok "$stem: $stem.py has the template's runtime ($n lines) as it is"
    else fail "$stem: $stem.py does not have templates/tkc_torch_runtime.py's runtime as it is"; fi

    # the binding too: templates/tkc_torch_binding.cpp, filled in; its helpers as they are
    if grep -n '^// @tkc ' "$out/${stem}_binding.cpp" >"$tmp/err"; then
        fail "$stem: ${stem}_binding.cpp still has template markers"; sed 's/^/    /' "$tmp/err" | head -n 5
    else ok "$stem: ${stem}_binding.cpp has no template markers left"; fi
    sed -n '/^namespace {$/,/^}  \/\/ namespace$/p' "$root/templates/tkc_torch_binding.cpp" >"$tmp/helpers"
    sed -n '/^namespace {$/,/^}  \/\/ namespace$/p' "$out/${stem}_binding.cpp" >"$tmp/helpers.out"
    if [ "$(wc -l <"$tmp/helpers")" -gt 20 ] && cmp -s "$tmp/helpers" "$tmp/helpers.out"
    then ok "$stem: ${stem}_binding.cpp has the template's helpers as they are"
    else fail "$stem: ${stem}_binding.cpp does not have templates/tkc_torch_binding.cpp's helpers as they are"; fi

    # one Python function and one binding function per kernel
    if grep -q "^def $stem(" "$out/$stem.py" && grep -q "m.def(\"$stem\", &tkc_torch_$stem" "$out/${stem}_binding.cpp"
    then ok "$stem: def $stem() in the module, m.def(\"$stem\") in the binding"
    else fail "$stem: no def $stem() in the module or no m.def in the binding"; fi
done

# a -D variant is another extension: its name (stem + hash of the sources) differs
"$tkc" "$root/kernels.tk/attn_fwd.tk" --emit=torch -D D=64 -o "$tmp/d64"
n1=$(sed -n 's/^_TKC_NAME = "\([^"]*\)".*/\1/p' "$tmp/a/attn_fwd/nested/attn_fwd.py")
n2=$(sed -n 's/^_TKC_NAME = "\([^"]*\)".*/\1/p' "$tmp/d64/attn_fwd.py")
if [ -n "$n1" ] && [ -n "$n2" ] && [ "$n1" != "$n2" ]; then ok "-D D=64 gives another extension name ($n1, $n2)"
else fail "-D D=64 should change the extension name (got '$n1' and '$n2')"; fi
grep -q '"D": 64' "$tmp/d64/attn_fwd.py" && ok "-D D=64: tkc_params records D = 64" || fail "-D D=64: tkc_params does not say D = 64"

# usage errors: no -o, and an -o that is a file
"$tkc" "$root/kernels.tk/gemm.tk" --emit=torch >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 2 ] && grep -q 'needs -o DIR' "$tmp/err"; then ok "--emit=torch without -o: exit 2 with a message"
else fail "--emit=torch without -o: exit $rc, expected 2 and 'needs -o DIR'"; fi
: >"$tmp/afile"
"$tkc" "$root/kernels.tk/gemm.tk" --emit=torch -o "$tmp/afile" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 2 ] && grep -q "^tkc: error: cannot create the directory" "$tmp/err"; then ok "-o naming a file: exit 2 with a message"
else fail "-o naming a file: exit $rc, expected 2 and 'cannot create the directory'"; fi

# Python
if ! command -v "$py" >/dev/null 2>&1; then
    echo "SKIP: no $py here: the modules were not compiled, nor the binding"
else
    for stem in gemm attn_fwd; do
        if "$py" -m py_compile "$tmp/a/$stem/nested/$stem.py" 2>"$tmp/err"; then ok "$stem.py compiles (py_compile)"
        else fail "$stem.py: py_compile failed"; sed 's/^/    /' "$tmp/err" | head -n 10; fi
    done
    # the template the modules are made from is valid Python by itself (compiled into $tmp, so
    # that the source tree gets no __pycache__)
    if "$py" -c 'import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)' \
        "$root/templates/tkc_torch_runtime.py" "$tmp/runtime.pyc" 2>"$tmp/err"; then
        ok "templates/tkc_torch_runtime.py compiles (py_compile)"
    else
        fail "templates/tkc_torch_runtime.py: py_compile failed"; sed 's/^/    /' "$tmp/err" | head -n 10
    fi
    # and lint-clean (unused or undefined names), where pyflakes is installed
    if "$py" -m pyflakes --version >/dev/null 2>&1; then
        if "$py" -m pyflakes "$root/templates/tkc_torch_runtime.py" "$tmp/a/gemm/nested/gemm.py" \
            "$tmp/a/attn_fwd/nested/attn_fwd.py" >"$tmp/err" 2>&1; then
            ok "pyflakes: the template, gemm.py and attn_fwd.py are clean"
        else
            fail "pyflakes"; sed 's/^/    /' "$tmp/err" | head -n 10
        fi
    else
        echo "SKIP: $py has no pyflakes: the template and the modules were not linted"
    fi
    # the include flags of the installed torch, if any
    if "$py" - >"$tmp/flags" 2>/dev/null <<'EOF'
import os, sysconfig
import torch.utils.cpp_extension as ce
try:
    inc = ce.include_paths(device_type="cuda")
except TypeError:
    inc = ce.include_paths(cuda=True)
cuda = ce.CUDA_HOME or "/usr/local/cuda"
inc = inc + [os.path.join(cuda, "include"), sysconfig.get_paths()["include"]]
print(" ".join("-isystem " + p for p in inc))
EOF
    then
        for cpp in "$tmp/a/gemm/nested/gemm_binding.cpp" "$tmp/a/attn_fwd/nested/attn_fwd_binding.cpp" \
            "$root/templates/tkc_torch_binding.cpp"; do
            # shellcheck disable=SC2046
            if "$cxx" -std=c++20 -fsyntax-only -DTORCH_EXTENSION_NAME=tkc_check -DTORCH_API_INCLUDE_EXTENSION_H \
                $(cat "$tmp/flags") "$cpp" 2>"$tmp/err"; then
                ok "$(basename "$cpp") compiles against torch's headers ($cxx -fsyntax-only)"
            else
                fail "$(basename "$cpp") does not compile against torch's headers"
                sed 's/^/    /' "$tmp/err" | head -n 20
            fi
        done
        torch_ran=1
        if "$py" "$here/check_module.py" "$tmp/a/gemm/nested" "$tmp/a/attn_fwd/nested" >"$tmp/out" 2>&1; then
            ok "check_module.py: $(tail -n 1 "$tmp/out")"
        else
            fail "check_module.py"
            sed 's/^/    /' "$tmp/out" | grep -v '^    ok ' | head -n 30
        fi
    else
        echo "SKIP: $py cannot import torch here: the binding's C++ was not compiled and check_module.py did not run"
        echo "      (TKC_TEST_PYTHON=/path/to/python with torch installed runs them; no GPU is needed)"
    fi
fi

echo "torch: $((checks - failed)) passed, $failed failed"
[ $failed -eq 0 ] || exit 1
if [ $require_torch -eq 1 ] && [ $torch_ran -eq 0 ]; then
    echo "SKIP: torch.module needs a Python that imports torch (TKC_TEST_PYTHON)"
    exit 77
fi
exit 0
