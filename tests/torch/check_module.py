#!/usr/bin/env python3
"""check_module.py - the Python side of tkc --emit=torch, without a GPU or a build.

    check_module.py GEMM_DIR ATTN_DIR     (directories written by tkc --emit=torch for
                                           kernels.tk/gemm.tk and kernels.tk/attn_fwd.tk)

Imports the generated modules with the installed torch (CPU is enough) and checks the argument
checks that need no GPU (types, dtypes, ranks, shapes, compile-time dimensions, scalars, CPU
tensors). Then it replaces the device check and the extension with stand-ins, so the rest of a
call runs on CPU tensors: outputs allocated with the right shapes and dtypes, the launcher's
arguments in the launcher's order, and each status code turned into the right exception with a
message that names the argument. bench/torch_check.py checks the real thing on the GPU machine.
Prints one line per check and 'N passed, N failed'; exits 1 on any failure.
"""
import importlib.util
import os
import sys

import torch

results = []


def check(name, cond, detail=""):
    results.append(bool(cond))
    print("%s %s%s" % ("ok  " if cond else "FAIL", name, (": " + detail) if detail else ""), flush=True)


def raises(name, exc, fn, *needles):
    try:
        fn()
    except exc as e:
        msg = str(e)
        missing = [n for n in needles if n not in msg]
        check(name, not missing, msg if not missing else "message %r lacks %r" % (msg, missing))
        return e
    except Exception as e:  # the wrong kind
        check(name, False, "raised %s: %s, expected %s" % (type(e).__name__, e, exc.__name__))
        return None
    check(name, False, "no exception, expected %s" % exc.__name__)
    return None


def load(d, stem):
    spec = importlib.util.spec_from_file_location(stem, os.path.join(d, stem + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class FakeExt:
    """Stands in for the built extension: records each call, returns self.status."""

    def __init__(self):
        self.status = 0
        self.calls = []

    def __getattr__(self, kernel):
        def call(*args):
            self.calls.append((kernel, args))
            return self.status
        return call


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    gemm = load(sys.argv[1], "gemm")
    attn = load(sys.argv[2], "attn_fwd")
    bf = torch.bfloat16
    g = torch.Generator().manual_seed(0)
    A = torch.randn(200, 64, generator=g).to(bf)
    B = torch.randn(64, 72, generator=g).to(bf)

    # ---- checks that need no GPU --------------------------------------------------------------
    check("module docstring names the kernel", "gemm(A, B) -> C" in gemm.__doc__)
    check("function docstring shows the .tk signature",
          "gemm(in A: bf16[M, K], in B: bf16[K, N], out C: bf16[M, N])" in gemm.gemm.__doc__)
    check("tkc_params", gemm.tkc_params.get("BM") == 128 and attn.tkc_params.get("D") == 128, str(gemm.tkc_params))
    check("TKC_STATUS", gemm.TKC_STATUS[4][0] == "TKC_ERR_STRIDE", str(gemm.TKC_STATUS[4]))
    raises("not a tensor", TypeError, lambda: gemm.gemm([[1.0]], B), "gemm()", "A", "torch.Tensor", "list")
    raises("wrong dtype", TypeError, lambda: gemm.gemm(A.float(), B), "A", "torch.bfloat16", "torch.float32")
    raises("wrong rank", ValueError, lambda: gemm.gemm(A[None], B), "A", "2-d", "(1, 200, 64)")
    raises("mismatched shapes", ValueError, lambda: gemm.gemm(A, B[:32]), "B.shape[0] is 32", "K = 64", "A.shape[1]")
    raises("zero-size dimension", ValueError, lambda: gemm.gemm(A[:0], B), "M = 0")
    raises("sparse tensor", TypeError, lambda: gemm.gemm(A.to_sparse(), B), "A", "strided")
    raises("CPU tensors", ValueError, lambda: gemm.gemm(A, B), "A must be a CUDA tensor", "cpu")
    q = torch.zeros(1, 4, 100, 128, dtype=bf)
    kv = torch.zeros(1, 2, 100, 128, dtype=bf)
    raises("compile-time dimension", ValueError, lambda: attn.attn_fwd(q, kv[..., :64], kv, 0.1),
           "K.shape[3] must be D = 128", "-D D=64")
    raises("scalar type", TypeError, lambda: attn.attn_fwd(q, kv, kv, "0.1"), "scale", "float", "str")
    raises("bool is not a scale", TypeError, lambda: attn.attn_fwd(q, kv, kv, True), "scale")
    raises("GQA: K and V must agree", ValueError, lambda: attn.attn_fwd(q, kv, q, 0.1), "V.shape[1] is 4", "HKV = 2")

    # ---- the rest of a call, with stand-ins for the device check and the extension ------------
    for mod in (gemm, attn):
        mod._tkc_check_device = lambda fn, named, default=None: torch.device("cpu")
        mod._tkc_ext = FakeExt()

    C = gemm.gemm(A, B)
    kernel, args = gemm._tkc_ext.calls[-1]
    check("gemm: one output, allocated", isinstance(C, torch.Tensor) and tuple(C.shape) == (200, 72) and C.dtype == bf,
          str(tuple(C.shape)))
    check("gemm: launcher order A, B, C, M, K, N", kernel == "gemm" and args[0] is A and args[1] is B and args[2] is C
          and args[3:] == (200, 64, 72), str(args[3:]))
    Aview = torch.randn(200, 64 + 24, generator=g).to(bf)[:, :64]
    gemm.gemm(Aview, B)
    check("gemm: a view is passed as is", gemm._tkc_ext.calls[-1][1][0] is Aview)

    gemm._tkc_ext.status = 4  # TKC_ERR_STRIDE
    At = torch.randn(64, 200, generator=g).to(bf).t()
    raises("transposed input: STRIDE names A and suggests .contiguous()", ValueError, lambda: gemm.gemm(At, B),
           "A is moved by TMA", "last stride to be 1", "A.contiguous()")
    B7 = torch.randn(64, 7, generator=g).to(bf)
    raises("row of 14 bytes: STRIDE says to pad", ValueError, lambda: gemm.gemm(A, B7), "B is moved by TMA", "pad")
    gemm._tkc_ext.status = 2  # TKC_ERR_ALIGN
    Amis = torch.randn(200 * 64 + 8, generator=g).to(bf)[1:1 + 200 * 64].view(200, 64)
    raises("misaligned input: ALIGN", ValueError, lambda: gemm.gemm(Amis, B), "A is moved by TMA", "16-byte aligned",
           "A.contiguous()")
    gemm._tkc_ext.status = 3  # TKC_ERR_DIM
    raises("DIM", ValueError, lambda: gemm.gemm(A, B), "M=200, K=64, N=72", "TKC_ERR_DIM")
    gemm._tkc_ext.status = 7  # TKC_ERR_LAUNCH
    e = raises("LAUNCH: TkcError, a RuntimeError", RuntimeError, lambda: gemm.gemm(A, B), "TKC_ERR_LAUNCH",
               "CUDA runtime")
    check("TkcError carries the status", isinstance(e, gemm.TkcError) and e.status == 7 and e.status_name == "TKC_ERR_LAUNCH")
    gemm._tkc_ext.status = 6  # TKC_ERR_TENSOR_MAP
    raises("TENSOR_MAP", gemm.TkcError, lambda: gemm.gemm(A, B), "TKC_ERR_TENSOR_MAP", "tensor map")

    O, L = attn.attn_fwd(q, kv, kv, 0.125)
    kernel, args = attn._tkc_ext.calls[-1]
    check("attn: (O, L) allocated", tuple(O.shape) == (1, 4, 100, 128) and O.dtype == bf and tuple(L.shape) == (1, 4, 100)
          and L.dtype == torch.float32)
    check("attn: launcher order Q, K, V, O, L, B, H, N, HKV, scale",
          args[0] is q and args[1] is kv and args[3] is O and args[4] is L and args[5:] == (1, 4, 100, 2, 0.125),
          str(args[5:]))
    attn._tkc_ext.status = 5  # TKC_ERR_REQUIRE
    kv3 = torch.zeros(1, 3, 100, 128, dtype=bf)
    raises("REQUIRE names the condition", ValueError, lambda: attn.attn_fwd(q, kv3, kv3, 0.1), "H % HKV == 0", "HKV=3")

    passed = sum(results)
    print("%d passed, %d failed" % (passed, len(results) - passed))
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
