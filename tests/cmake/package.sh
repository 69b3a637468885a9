#!/usr/bin/env bash
# package.sh - the installed CMake package, end to end, in a scratch directory:
#   1. configure and build tkc from the source tree, `cmake --install` it into a prefix, and check
#      the installed files (bin/tkc, the man page, tkcConfig.cmake, tkcConfigVersion.cmake);
#   2. build a copy of examples/gemm_app against that prefix (find_package(tkc) through
#      CMAKE_PREFIX_PATH, tkc_add_kernel) with Ninja and with Unix Makefiles, and check that the
#      kernel object is sm_90a code;
#   3. in each build, check the dependencies: touching nothing rebuilds nothing ("ninja: no work
#      to do"); touching tiles.tk, which matmul.tk imports, regenerates matmul.cu (tkc's depfile)
#      and recompiles and relinks exactly what depends on it; touching matmul.tk does the same, and
#      so does touching matmul.dispatch (the DISPATCH table); touching main.cpp does not run tkc.
# No GPU is used. Exit status 0 pass, 1 fail, 77 skipped (no nvcc).
#   package.sh --source DIR --work DIR [--cmake CMAKE] [--nvcc NVCC] [--ninja NINJA] [--cc CC]
set -euo pipefail

SRC= WORK= CMAKE=cmake NVCC= NINJA= CC_=
while [ $# -gt 0 ]; do
    case "$1" in
        --source) SRC=$2; shift 2 ;;
        --work) WORK=$2; shift 2 ;;
        --cmake) CMAKE=$2; shift 2 ;;
        --nvcc) NVCC=$2; shift 2 ;;
        --ninja) NINJA=$2; shift 2 ;;
        --cc) CC_=$2; shift 2 ;;
        *) echo "package.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
[ -n "$SRC" ] && [ -n "$WORK" ] || { echo "usage: package.sh --source DIR --work DIR [...]" >&2; exit 2; }

# nested builds must not see an outer make's jobserver
unset MAKEFLAGS MFLAGS MAKELEVEL CMAKE_GENERATOR CMAKE_BUILD_PARALLEL_LEVEL || true

. "$SRC/tests/nvcc.sh"
find_nvcc "$NVCC"
NVCC=$nvcc
if [ -z "$NVCC" ] || [ ! -x "$NVCC" ]; then
    echo "SKIP: nvcc not found (PATH, /usr/local/cuda/bin): the example cannot be compiled"
    exit 77
fi
if [ -z "$NINJA" ] || [ "${NINJA%-NOTFOUND}" != "$NINJA" ]; then NINJA=$(command -v ninja || true); fi
CUOBJDUMP=$(dirname "$NVCC")/cuobjdump
JOBS=$(nproc 2>/dev/null || echo 2)

start=$(date +%s)
fails=0
step() { printf '\n== [%ss] %s\n' "$(($(date +%s) - start))" "$*"; }
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
run() {  # run CMD...: echo it, run it, print its output only if it fails
    echo "+ $*"
    local out rc=0
    out=$("$@" 2>&1) || rc=$?
    if [ $rc -ne 0 ]; then
        echo "$out" | tail -n 60
        echo "FAIL: exit status $rc"
        exit 1
    fi
}

rm -rf "$WORK"
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
PREFIX=$WORK/prefix

# ---- 1. build and install tkc --------------------------------------------------------------
gen=("Unix Makefiles")
[ -n "$NINJA" ] && gen=(Ninja -DCMAKE_MAKE_PROGRAM="$NINJA")
step "configure, build and install tkc (${gen[0]})"
run "$CMAKE" -S "$SRC" -B "$WORK/tkc-build" -G "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DTKC_WITH_SANITIZED=OFF -DTKC_BUILD_TESTS=OFF ${CC_:+-DCMAKE_C_COMPILER="$CC_"}
run "$CMAKE" --build "$WORK/tkc-build" --target tkc --parallel "$JOBS"
run "$CMAKE" --install "$WORK/tkc-build" --prefix "$PREFIX"

cfgdir=$(ls -d "$PREFIX"/lib*/cmake/tkc 2>/dev/null | head -n1 || true)
for f in "$PREFIX/bin/tkc" "$PREFIX/share/man/man1/tkc.1" "$cfgdir/tkcConfig.cmake" \
         "$cfgdir/tkcConfigVersion.cmake" "$cfgdir/tkcKernel.cmake"; do
    if [ -f "$f" ]; then ok "installed ${f#$PREFIX/}"; else fail "not installed: ${f#$PREFIX/}"; fi
done
[ "$cfgdir" = "$PREFIX/lib/cmake/tkc" ] || echo "note: the package is in ${cfgdir#$PREFIX/}"
[ -x "$PREFIX/bin/tkc" ] || { fail "bin/tkc is not executable"; exit 1; }
version=$("$PREFIX/bin/tkc" --version | awk '{print $2}')
pkg_version=$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")$/\1/p' "$cfgdir/tkcConfigVersion.cmake")
if [ "$version" = "$pkg_version" ]; then ok "tkc --version and tkcConfigVersion.cmake agree ($version)"
else fail "tkc --version says '$version', tkcConfigVersion.cmake '$pkg_version'"; fi
if command -v groff >/dev/null; then
    if warn=$(groff -man -Tutf8 -ww -z "$PREFIX/share/man/man1/tkc.1" 2>&1) && [ -z "$warn" ]; then
        ok "the man page renders without warnings (groff -man -ww)"
    else fail "groff -man on tkc.1: $warn"; fi
fi

# ---- 2 and 3. the example, per generator ---------------------------------------------------
APP=$WORK/gemm_app            # a copy: the checks touch its files
cp -R "$SRC/examples/gemm_app" "$APP"
rm -rf "$APP"/build*

# newer_than STAMP FILE...: the FILEs modified after STAMP, by basename
newer_than() { local s=$1 f; shift; for f; do [ "$f" -nt "$s" ] && printf '%s ' "$(basename "$f")"; done; true; }

check_generator() {
    local g=$1 b=$2
    local extra=()
    [ "$g" = Ninja ] && extra=(-DCMAKE_MAKE_PROGRAM="$NINJA")
    step "$g: configure and build examples/gemm_app against the installed package"
    run "$CMAKE" -S "$APP" -B "$b" -G "$g" ${extra[@]+"${extra[@]}"} -DCMAKE_PREFIX_PATH="$PREFIX" \
        -DCMAKE_CUDA_COMPILER="$NVCC" -DCMAKE_BUILD_TYPE=Release -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
    if grep -q "^tkc_DIR:PATH=$cfgdir\$" "$b/CMakeCache.txt"; then ok "find_package(tkc) found $cfgdir"
    else fail "tkc_DIR is $(grep '^tkc_DIR' "$b/CMakeCache.txt" || echo unset), expected $cfgdir"; fi
    run "$CMAKE" --build "$b" --parallel "$JOBS"

    local dir=$b/tkc/gemm_app
    local cu=$dir/matmul.cu h=$dir/matmul.h exe=$b/gemm_app
    local obj main_obj
    obj=$(find "$b" -name 'matmul.cu.o' | head -n1)
    main_obj=$(find "$b" -name 'main.cpp.o' | head -n1)
    local watched=("$cu" "$obj" "$main_obj" "$exe" "$h")
    local f
    for f in "${watched[@]}" "$cu.d"; do
        if [ -n "$f" ] && [ -f "$f" ]; then ok "built ${f#$b/}"; else fail "missing after the build: ${f:-an object}"; return; fi
    done
    if grep -q 'tiles.tk' "$cu.d"; then ok "matmul.cu.d names the imported tiles.tk"; else fail "matmul.cu.d: $(cat "$cu.d")"; fi
    if grep -q '^namespace tkc_v_shallow {' "$cu"; then ok "matmul.cu holds the dispatch table's variants"; else fail "matmul.cu: no variant namespaces (DISPATCH)"; fi
    # nvcc compiles matmul.cu for sm_90a and nothing else, whatever the project's architectures
    local cmd
    cmd=$(grep -- '-c [^ ]*/matmul\.cu' "$b/compile_commands.json" | head -n1 || true)
    if echo "$cmd" | grep -q -- '-gencode=arch=compute_90a,code=sm_90a' &&
       [ "$(echo "$cmd" | grep -o -- 'arch=[a-z_0-9]*' | sort -u)" = "arch=compute_90a" ]; then
        ok "nvcc compiles matmul.cu with -gencode=arch=compute_90a,code=sm_90a only"
    else fail "the nvcc command for matmul.cu: ${cmd:-not in compile_commands.json}"; fi
    if [ -x "$CUOBJDUMP" ]; then
        local elf
        elf=$("$CUOBJDUMP" -lelf "$obj" 2>&1 || true)
        if echo "$elf" | grep -q 'sm_90a' && ! echo "$elf" | grep -v 'sm_90a' | grep -q 'cubin'; then
            ok "matmul.cu.o holds sm_90a code only ($(echo "$elf" | tr '\n' ' '))"
        else fail "cuobjdump -lelf matmul.cu.o: $elf"; fi
    fi

    # rebuild CHANGED... -- EXPECTED...: touch CHANGED, build, compare the watched files that were
    # rewritten with EXPECTED; then one more build must do nothing
    rebuild() {
        local changed=() expected=() seen=0 a
        for a; do
            if [ "$a" = -- ]; then seen=1; elif [ $seen = 0 ]; then changed+=("$a"); else expected+=("$a"); fi
        done
        sleep 1.1                      # filesystems with 1-second times
        touch "$b/stamp"
        sleep 1.1
        [ ${#changed[@]} -gt 0 ] && touch "${changed[@]}"
        local out args=()
        [ "$g" = Ninja ] && args=(-- -d explain)
        out=$("$CMAKE" --build "$b" ${args[@]+"${args[@]}"} 2>&1) || { echo "$out" | tail -n 40; fail "build failed"; return; }
        local got want
        got=$(newer_than "$b/stamp" "${watched[@]}")
        want=$(for a in ${expected[@]+"${expected[@]}"}; do printf '%s ' "$a"; done)
        got=${got% } want=${want% }
        local what="no change"
        [ ${#changed[@]} -gt 0 ] && what="touch ${changed[*]##*/}"
        if [ "$got" = "$want" ]; then ok "$g, $what: rebuilt ${got:-nothing}"
        else
            fail "$g, $what: rebuilt '${got}', expected '${want}'"
            echo "$out" | tail -n 30
        fi
        if [ "$g" = Ninja ] && [ ${#changed[@]} -eq 0 ]; then
            if echo "$out" | grep -q '^ninja: no work to do\.$'; then ok "ninja: no work to do."
            else fail "ninja did work with nothing changed:"; echo "$out" | tail -n 20; fi
        fi
        if [ "$g" = Ninja ] && [ ${#changed[@]} -gt 0 ]; then
            echo "$out" | grep 'ninja explain: .*matmul.cu is dirty' | head -n 1 | sed 's/^/   /' || true
        fi
    }

    # tkc's outputs and what compiles them (main.cpp.o includes the regenerated header), in the
    # watched order, which newer_than prints them in
    local ordered=(matmul.cu matmul.cu.o main.cpp.o gemm_app matmul.h)

    rebuild -- 
    rebuild "$APP/tiles.tk" -- "${ordered[@]}"
    rebuild --
    rebuild "$APP/matmul.tk" -- "${ordered[@]}"
    rebuild "$APP/matmul.dispatch" -- "${ordered[@]}"
    rebuild "$APP/main.cpp" -- main.cpp.o gemm_app
    rebuild --
}

ran=0
if [ -n "$NINJA" ]; then
    check_generator Ninja "$WORK/app-ninja"; ran=$((ran + 1))
else
    echo "note: ninja not found: the Ninja half is skipped"
fi
check_generator "Unix Makefiles" "$WORK/app-make"; ran=$((ran + 1))

step "done: $ran generator(s), $fails failure(s)"
[ $fails -eq 0 ] || exit 1
rm -rf "$WORK"
