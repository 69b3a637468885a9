#!/usr/bin/env bash
# ensure-deps.sh - checks that this machine has what tkc's build and tests need and, on Debian
# as root, installs the missing packages with apt-get. Prints nothing and exits 0 when all is
# present; exits 1 with the exact apt-get command line when something is missing and cannot be
# installed here (not root, no apt-get, or --check given).
#   .ci/ensure-deps.sh [--check]
# Required: a C compiler that can link with ASan+UBSan (tkc-asan), cmake >= 3.20, make (the
# top-level wrapper; CMake uses ninja instead when it is installed), flex >= 2.6, bison >= 3.6,
# libcmocka-dev, clang with its libFuzzer runtime (the fuzzing smoke test). Optional: nvcc (in PATH or /usr/local/cuda/bin; needed for `make demo` and the
# tests that compile generated CUDA, and then also g++, its host compiler) and python3 (bench/
# and templates/gen_wgmma.py only).
set -uo pipefail

CHECK_ONLY=0
case "${1:-}" in
    --check) CHECK_ONLY=1 ;;
    "") ;;
    *) echo "usage: .ci/ensure-deps.sh [--check]" >&2; exit 2 ;;
esac

me=.ci/ensure-deps.sh
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tkc-deps.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

have() { command -v "$1" >/dev/null 2>&1; }
# version_ge A B: A >= B, dotted versions
version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

PKGS=()     # Debian packages to install
WHY=()      # one line per missing thing, for the message
FATAL=()    # problems a package install cannot fix
NOTES=()    # optional things that are missing
need() {    # need "what is missing and why" PACKAGE...
    WHY+=("$1"); shift
    local p
    for p; do
        case " ${PKGS[*]-} " in *" $p "*) ;; *) PKGS+=("$p") ;; esac
    done
}

find_nvcc() {
    if have nvcc; then command -v nvcc
    elif [ -x /usr/local/cuda/bin/nvcc ]; then echo /usr/local/cuda/bin/nvcc
    else return 1
    fi
}

check() {
    PKGS=(); WHY=(); FATAL=(); NOTES=()

    # C compiler: $CC (first word), else what CMake would find first
    local cc="" c
    if [ -n "${CC:-}" ]; then
        cc=${CC%% *}
    else
        for c in cc gcc clang; do have "$c" && { cc=$c; break; }; done
    fi
    if [ -z "$cc" ] || ! have "$cc"; then
        need "a C compiler${CC:+ (CC=$CC not found)}" gcc libc6-dev
    else
        printf '#include <stdio.h>\nint main(void) { puts("ok"); return 0; }\n' >"$tmp/probe.c"
        if ! ${CC:-$cc} -o "$tmp/probe" "$tmp/probe.c" >"$tmp/cc.log" 2>&1; then
            if [ ! -f /usr/include/stdio.h ]; then
                need "the C library headers (stdio.h)" libc6-dev
            else
                FATAL+=("the C compiler '$cc' cannot build a program:" "$(tail -n 5 "$tmp/cc.log")")
            fi
        elif ! ${CC:-$cc} -fsanitize=address,undefined -o "$tmp/probe" "$tmp/probe.c" >"$tmp/cc.log" 2>&1; then
            FATAL+=("'$cc' cannot link with -fsanitize=address,undefined (tkc-asan, used by the tests, needs it);"
                    "use gcc (Debian's gcc brings libasan and libubsan), or configure without it:"
                    "make CMAKE_ARGS=-DTKC_WITH_SANITIZED=OFF")
        fi
    fi

    local v
    if ! have cmake; then
        need "cmake (the build)" cmake
    else
        v=$(cmake --version 2>/dev/null | sed -n '1s/[^0-9]*\([0-9][0-9.]*\).*/\1/p')
        version_ge "${v:-0}" 3.20 ||
            FATAL+=("cmake $v is older than 3.20: install a newer one (Debian 11: apt-get install -t bullseye-backports cmake; anywhere: pip install cmake)")
    fi

    have make || need "make (runs the top-level Makefile)" make

    if ! have flex; then
        need "flex (generates the scanner from grammar/tk.l)" flex
    else
        v=$(flex --version 2>/dev/null | sed -n '1s/[^0-9]*\([0-9][0-9.]*\).*/\1/p')
        version_ge "${v:-0}" 2.6 || FATAL+=("flex $v is older than 2.6")
    fi

    if ! have bison; then
        need "bison (generates the parser from grammar/tk.y)" bison
    else
        v=$(bison --version 2>/dev/null | sed -n '1s/[^0-9]*\([0-9][0-9.]*\).*/\1/p')
        version_ge "${v:-0}" 3.6 || FATAL+=("bison $v is older than 3.6 (grammar/tk.y needs 3.6 or newer)")
    fi

    [ -f /usr/include/cmocka.h ] || need "cmocka (/usr/include/cmocka.h, for the unit tests)" libcmocka-dev

    # clang's libFuzzer (with ASan and UBSan) for the fuzzing smoke test (tests/fuzz/run.sh)
    if ! have clang; then
        need "clang with libFuzzer (the fuzzing smoke test, tests/fuzz)" clang
    else
        printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' >"$tmp/fz.c"
        if ! clang -fsanitize=fuzzer,address,undefined "$tmp/fz.c" -o "$tmp/fz" >/dev/null 2>&1; then
            local major
            major=$(clang -dumpversion 2>/dev/null | cut -d. -f1)
            need "clang's libFuzzer and sanitizer runtimes (the fuzzing smoke test, tests/fuzz)" "libclang-rt-${major:-14}-dev"
        fi
    fi

    if find_nvcc >/dev/null; then
        have g++ || need "g++ (nvcc's host compiler, for the CUDA compile tests and make demo)" g++
    else
        NOTES+=("nvcc not found (PATH, /usr/local/cuda/bin): tkc builds without it, but make demo and the tests that compile generated CUDA need NVIDIA's CUDA toolkit 12.0 or newer (for sm_90a)")
    fi

    have python3 ||
        NOTES+=("python3 not found: only the GPU harness (bench/) and templates/gen_wgmma.py (regenerates templates/wgmma.cuh) use it")
}

apt_install() {
    export DEBIAN_FRONTEND=noninteractive
    local opts=(-y -q --no-install-recommends -o DPkg::Lock::Timeout=300)
    echo "$me: installing ${PKGS[*]}"
    # a fresh image has no package lists: update first; stale lists: update and retry
    if ! compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null; then
        apt-get update -q >"$tmp/apt.log" 2>&1 || { tail -n 20 "$tmp/apt.log" >&2; return 1; }
    fi
    if ! apt-get install "${opts[@]}" "${PKGS[@]}" >>"$tmp/apt.log" 2>&1; then
        apt-get update -q >>"$tmp/apt.log" 2>&1 &&
            apt-get install "${opts[@]}" "${PKGS[@]}" >>"$tmp/apt.log" 2>&1 ||
            { tail -n 20 "$tmp/apt.log" >&2; return 1; }
    fi
}

report_missing() {
    local sudo="" w
    [ "$(id -u)" -ne 0 ] && sudo="sudo "
    echo "$me: missing what tkc's build and tests need:" >&2
    for w in "${WHY[@]}"; do echo "  - $w" >&2; done
    echo "install with:" >&2
    echo "  ${sudo}apt-get update && ${sudo}apt-get install -y --no-install-recommends ${PKGS[*]}" >&2
}

check
if [ ${#PKGS[@]} -gt 0 ]; then
    if [ "$CHECK_ONLY" -eq 0 ] && [ "$(id -u)" -eq 0 ] && have apt-get; then
        apt_install || { echo "$me: apt-get install failed" >&2; report_missing; exit 1; }
        check
        if [ ${#PKGS[@]} -gt 0 ]; then
            echo "$me: still missing after apt-get install:" >&2
            report_missing
            exit 1
        fi
    else
        report_missing
        exit 1
    fi
fi
if [ ${#FATAL[@]} -gt 0 ]; then
    printf '%s: %s\n' "$me" "${FATAL[0]}" >&2
    [ ${#FATAL[@]} -gt 1 ] && printf '  %s\n' "${FATAL[@]:1}" >&2
    exit 1
fi
for n in "${NOTES[@]+"${NOTES[@]}"}"; do echo "$me: note: $n" >&2; done
exit 0
