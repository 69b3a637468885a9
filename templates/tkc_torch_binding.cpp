// @tkc begin header
// tkc_torch_binding.cpp - the template of the C++ binding `tkc --emit=torch` writes,
// DIR/<stem>_binding.cpp: the PyTorch side of <stem>_kernels.cu's launchers, one function per
// kernel that checks its tensors, passes their strides, sets the device guard and launches on the
// current CUDA stream. tkc embeds this file when it is built (templates/embed.c, CMakeLists.txt)
// and writes it out (src/emit_torch.c) line for line, except the regions from a line
// "// @tkc begin NAME" to the line "// @tkc end NAME": each, its marker lines included, is
// replaced by what tkc generates for NAME from the .tk file (as in tkc_torch_runtime.py):
//   header     this comment: the file, the .tk it comes from, what it does
//   stream     tkc_stream_t, as api.h defines it for every tkc header and .cu
//   launchers  the extern "C" declarations of the launchers, as the .cu defines them
//   kernels    per kernel, tkc_torch_<kernel>(): its tensors checked, then its launcher called
//   module     PYBIND11_MODULE: one m.def per kernel
// The stand-ins inside the regions keep this file a valid extension by itself, with no kernels.
// @tkc end header
#include <torch/extension.h>

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <cstdint>

// @tkc begin stream
typedef struct CUstream_st *tkc_stream_t;  // the same type as cudaStream_t
// @tkc end stream

// @tkc begin launchers
// the launchers, defined in <stem>_kernels.cu
// @tkc end launchers

namespace {

// Checks one tensor argument and writes the element strides its launcher gets. A dimension of
// size 1 is never stepped over, so its stride (which torch leaves arbitrary) is replaced by one
// TMA accepts: 1 for the last dimension, else the span of the inner ones, for TMA rounded up to
// 16 bytes.
void tkc_tensor(const char *kernel, const char *name, const at::Tensor &t, const at::Device &dev,
                at::ScalarType dt, int64_t elem, bool tma, int64_t rank, const int64_t *shape, int64_t *strides) {
    TORCH_CHECK_VALUE(t.defined(), kernel, "(): ", name, " is an undefined tensor");
    TORCH_CHECK_VALUE(t.device() == dev, kernel, "(): ", name, " must be on ", dev, ", got ", t.device());
    TORCH_CHECK_TYPE(t.layout() == at::kStrided, kernel, "(): ", name, " must be a dense (strided) tensor");
    TORCH_CHECK_TYPE(t.scalar_type() == dt, kernel, "(): ", name, " must be ", dt, ", got ", t.scalar_type());
    TORCH_CHECK_VALUE(t.dim() == rank, kernel, "(): ", name, " must have ", rank, " dimensions, got ", t.dim());
    int64_t span = 1;
    for (int64_t d = rank - 1; d >= 0; --d) {
        TORCH_CHECK_VALUE(t.size(d) == shape[d], kernel, "(): ", name, ".shape[", d, "] must be ", shape[d],
                          ", got ", t.size(d));
        int64_t st = t.stride(d);
        if (t.size(d) == 1) {
            const int64_t q = 16 / elem;
            st = d == rank - 1 ? 1 : span;
            if (tma && d != rank - 1) st = (st + q - 1) / q * q;
        }
        strides[d] = st;
        span = std::max(span, st * t.size(d));
    }
}

}  // namespace

// @tkc begin kernels
// @tkc end kernels
// @tkc begin module
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.doc() = "tkc kernels; call them through <stem>.py";
}
// @tkc end module
