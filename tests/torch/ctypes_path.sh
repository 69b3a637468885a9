#!/bin/sh
# ctypes_path.sh - the torch module's default build without torch or a GPU: tkc --emit=torch for
# kernels.tk/gemm.tk, then, under a stand-in torch (fake_torch/), tkc_build() compiles
# gemm_kernels.cu with nvcc into the shared library the module calls through ctypes, a second
# tkc_build() in another process reuses it, and a call reaches the launcher with its arguments
# marshalled: the launcher's status comes back as the module's TkcError (TKC_ERR_TENSOR_MAP or
# TKC_ERR_LAUNCH here, where no driver answers), and a wrong argument is the module's TypeError.
#   usage: ctypes_path.sh TKC ROOT NVCC      (exits 77, a skip, without nvcc)
set -u
tkc=$1 root=$2 nvcc=${3:-}
[ -n "$nvcc" ] && [ -x "$nvcc" ] || { echo "SKIP: no nvcc"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tkc_ctypes.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
fails=0 n=0
ok() { n=$((n + 1)); echo "ok   $1"; }
fail() { n=$((n + 1)); fails=$((fails + 1)); echo "FAIL $1"; }
"$tkc" "$root/kernels.tk/gemm.tk" --emit=torch -o "$tmp/m" || { echo "FAIL tkc --emit=torch"; exit 1; }
cat >"$tmp/run.py" <<PY
import os, sys
sys.path.insert(0, "$root/tests/torch/fake_torch")
sys.path.insert(0, "$tmp/m")
import torch
import gemm
ext = gemm.tkc_build()
print("built", type(ext).__name__, os.path.basename(ext.path))
A, B = torch.Tensor((256, 128), torch.bfloat16), torch.Tensor((128, 192), torch.bfloat16)
try:
    gemm._tkc_launch(gemm._tkc_K_gemm, (A, B), {})
    print("status none")
except gemm.TkcError as e:
    print("status", e.status_name)
try:
    gemm._tkc_launch(gemm._tkc_K_gemm, (torch.Tensor((256, 128), torch.float32), B), {})
    print("no TypeError")
except TypeError as e:
    print("TypeError", e)
PY
TKC_NVCC=$nvcc TKC_TORCH_BUILD_DIR="$tmp/b" python3 "$tmp/run.py" >"$tmp/out1" 2>&1
so=$(ls "$tmp"/b/*/*.so 2>/dev/null | head -n 1)
if grep -q "^built _TkcLib" "$tmp/out1" && [ -n "$so" ]; then ok "tkc_build() compiled gemm_kernels.cu with nvcc into $(basename "$so")"
else fail "tkc_build() did not build the library"; sed 's/^/    /' "$tmp/out1" | tail -n 15; fi
if grep -Eq "^status (TKC_ERR_TENSOR_MAP|TKC_ERR_LAUNCH)$" "$tmp/out1"; then ok "a call reaches the launcher through ctypes ($(grep '^status' "$tmp/out1"))"
else fail "the call did not come back with the launcher's status"; sed 's/^/    /' "$tmp/out1" | tail -n 15; fi
if grep -q "^TypeError gemm(): A must have dtype torch.bfloat16" "$tmp/out1"; then ok "a wrong dtype is the module's TypeError"
else fail "no TypeError for a wrong dtype"; fi
stamp=$(ls -l --time-style=+%s.%N "$so" 2>/dev/null | awk '{print $6}')
TKC_NVCC=/nonexistent/nvcc TKC_TORCH_BUILD_DIR="$tmp/b" python3 "$tmp/run.py" >"$tmp/out2" 2>&1
if grep -q "^built _TkcLib" "$tmp/out2" && [ "$(ls -l --time-style=+%s.%N "$so" | awk '{print $6}')" = "$stamp" ]; then
    ok "a second process reuses the build (no nvcc needed)"
else fail "the second process did not reuse the build"; sed 's/^/    /' "$tmp/out2" | tail -n 8; fi
echo "ctypes_path: $n checks, $fails failed"
[ "$fails" = 0 ]
