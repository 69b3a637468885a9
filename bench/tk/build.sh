#!/usr/bin/env bash
# bench/tk/build.sh - builds ThunderKittens' own based, hedgehog, linear_attention, mamba2 and fftconv
# kernels as shared libraries with a C ABI (the wrappers tk_*.cu beside this script), for
# bench/tk_baselines.py. ThunderKittens' sources are never committed: they are read from a git-ignored
# folder (TK_SRC, default .carry/tk/src, filled by `git archive HEAD include prototype kernels` of a
# fetched HazyResearch/ThunderKittens), and every output goes under .carry/tk/ (git-ignored too).
#
#   bash bench/tk/build.sh [kernel ...]   # based hedgehog linear_attention mamba2 fftconv (default: all)
#   bash bench/tk/build.sh tkc            # tkc's libraries for the comparison, into .carry/tk/tkclib
#                                          (TKC: a tkc binary, default .carry/tk/tkc, a release build)
# The GPU run (bench/RESULTS.md run 111): tar cJf .carry/tk/pack.tar.xz -C .carry/tk lib tkclib, carry
# it, and there: tar xJf .carry/tk/pack.tar.xz -C .carry/tk && python3 bench/tk_baselines.py
#
# For each kernel it copies the part of TK's .cu before its PyTorch binding / test harness (the
# kernel, its globals and TK's own init function) to .carry/tk/build/<name>_kernel.cuh, which the
# wrapper #includes; the wrapper launches exactly TK's kernel with TK's launch configuration (grid,
# block, dynamic shared memory) on the caller's stream. fftconv gets one fix, applied to the copy:
# the N = 1024 kernel's consumer counted its iterations per head as ceil(B / 2) while its producer
# (and the task count) use ceil(B / 8) (four sequences per warpgroup tile), so for B > 2 the consumers
# switched filters at the wrong iterations (wrong heads' filters for B > 2).
# Flags: TK's kernels/common.mk for GPU=H100 (-DKITTENS_HOPPER, sm_90a, -std=c++20, --use_fast_math,
# -DNDEBUG, ...) plus its pytorch-config defines for the kernels TK builds as torch extensions.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TK=${TK_SRC:-$ROOT/.carry/tk/src}
BUILD=$ROOT/.carry/tk/build
LIB=$ROOT/.carry/tk/lib
NVCC=${NVCC:-nvcc}
mkdir -p "$BUILD" "$LIB"
[ -f "$TK/include/kittens.cuh" ] || { echo "no ThunderKittens sources at $TK" >&2; exit 1; }

FLAGS=(-std=c++20 -O3 --use_fast_math --expt-extended-lambda --expt-relaxed-constexpr
       -DKITTENS_HOPPER -gencode=arch=compute_90a,code=sm_90a -DNDEBUG
       -Xcompiler=-Wno-psabi -Xcompiler=-fno-strict-aliasing -Xcompiler -fPIC -shared
       -Xptxas=--verbose -Xptxas=--warn-on-spills
       -I"$TK/include" -I"$TK/prototype" -I"$BUILD"
       -L"$(dirname "$(command -v "$NVCC")")/../lib64/stubs" -lcuda)
TORCHDEFS=(-D__CUDA_NO_HALF_OPERATORS__ -D__CUDA_NO_HALF_CONVERSIONS__
           -D__CUDA_NO_BFLOAT16_CONVERSIONS__ -D__CUDA_NO_HALF2_OPERATORS__)

# cut SRC OUT PATTERN: the lines of SRC before the first line matching PATTERN
cut_before() {
  local n
  n=$(grep -n -m1 -E "$3" "$1" | cut -d: -f1)
  [ -n "$n" ] || { echo "pattern '$3' not found in $1" >&2; exit 1; }
  head -n $((n - 1)) "$1" > "$2"
}

# tkc's side (not ThunderKittens): bench/{based,hedgehog,mamba2,fftconv}.py build, and the decayed
# D = 128 linear attention (bench/linear_attn.py builds it as a torch extension on the GPU machine;
# here the plain CUDA with its C launcher, compiled with those scripts' nvcc flags)
build_tkc() {
  local TKC=${TKC:-$ROOT/.carry/tk/tkc} OUTD=$ROOT/.carry/tk/tkclib k
  for k in based hedgehog mamba2 fftconv; do
    python3 "$ROOT/bench/$k.py" build --tkc "$TKC" --out "$OUTD/$k" >&2
  done
  mkdir -p "$OUTD/linear_attn"
  local cu=$OUTD/linear_attn/linear_attn_d128_decay.cu
  "$TKC" "$ROOT/kernels.tk/linear_attn.tk" -D D=128 -D DECAY=1 -o "$cu"
  "$TKC" "$ROOT/kernels.tk/linear_attn.tk" -D D=128 -D DECAY=1 --emit=report > "$OUTD/linear_attn/report.json"
  "$NVCC" -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Xcompiler -fPIC -shared -Xptxas -v "$cu" \
    -o "${cu%.cu}.so" 2>&1 | grep -E "registers|spill" | sed 's/^/   /' >&2
  rm -f "$cu"
  printf '{"tkc_commit": "%s", "dirty": %s}\n' "$(git -C "$ROOT" rev-parse HEAD)" \
    "$( [ -z "$(git -C "$ROOT" status --porcelain -- src templates kernels.tk)" ] && echo false || echo true)" \
    > "$OUTD/manifest.json"
}

build_one() {
  local k=$1 src pat defs=()
  [ "$k" = tkc ] && { build_tkc; return; }
  case $k in
    based)            src=kernels/based/linear_attn.cu;             pat='^#ifdef TK_COMPILE_BASED';    defs=("${TORCHDEFS[@]}");;
    hedgehog)         src=kernels/hedgehog/hedgehog.cu;             pat='^#ifdef TK_COMPILE_HEDGEHOG'; defs=("${TORCHDEFS[@]}");;
    linear_attention) src=kernels/linear_attention/linear_attention.cu; pat='^#include <iostream>';;
    mamba2)           src=kernels/mamba2/mamba2.cu;                 pat='^#ifdef TK_COMPILE_MAMBA2';   defs=("${TORCHDEFS[@]}");;
    fftconv)          src=kernels/fftconv/fftconv_pc.cu;            pat='^#ifdef TK_COMPILE_FFTCONV';  defs=("${TORCHDEFS[@]}");;
    *) echo "unknown kernel $k" >&2; exit 1;;
  esac
  cut_before "$TK/$src" "$BUILD/${k}_kernel.cuh" "$pat"
  if [ "$k" = fftconv ]; then
    # the head-indexing fix (see above), only inside fft_1024_template
    local old='(args.globals.x.batch() + NUM_CONSUMER_WARPGROUPS-1) / NUM_CONSUMER_WARPGROUPS;'
    local new='(args.globals.x.batch() + (NUM_CONSUMER_WARPGROUPS*4)-1) / (NUM_CONSUMER_WARPGROUPS*4); /* tkc bench fix */'
    python3 - "$BUILD/${k}_kernel.cuh" "$old" "$new" <<'PY'
import sys
path, old, new = sys.argv[1:]
s = open(path).read()
a = s.index("struct fft_1024_template")
b = s.index("struct fftconv_4096_layout")
part = s[a:b]
if part.count(old) != 1:
    raise SystemExit("fftconv fix: expected one match in fft_1024_template, found %d" % part.count(old))
open(path, "w").write(s[:a] + part.replace(old, new) + s[b:])
PY
  fi
  echo "== $k: $NVCC ${src}" >&2
  "$NVCC" "${FLAGS[@]}" "${defs[@]}" "$ROOT/bench/tk/tk_${k}.cu" -o "$LIB/tk_${k}.so" 2> "$BUILD/${k}.log" ||
    { tail -40 "$BUILD/${k}.log" >&2; return 1; }
  grep -E "registers|spill" "$BUILD/${k}.log" | grep -v "^ptxas info    : Compiling" | sed 's/^/   /' >&2 || true
}

KERNELS=("$@")
[ ${#KERNELS[@]} -gt 0 ] || KERNELS=(based hedgehog linear_attention mamba2 fftconv)
fail=0
for k in "${KERNELS[@]}"; do build_one "$k" || { echo "FAILED: $k" >&2; fail=1; }; done
TKG=${TK_GIT:-/work/.mirror/HazyResearch+ThunderKittens/repo}
commit=$(git --git-dir="$TKG" rev-parse HEAD 2>/dev/null || echo unknown)
printf '{"thunderkittens_commit": "%s", "built": "%s", "nvcc": "%s"}\n' "$commit" "$(date -u +%FT%TZ)" \
  "$("$NVCC" --version | tail -1)" > "$LIB/manifest.json"
exit $fail
