/* api.h - the host API of each kernel, as data: what its launcher takes (tensors with their
 * strides, run-time dimensions, scalars, a stream) and what it checks. The CUDA launcher, the C
 * header, the PyTorch extension and the JSON report are all printed from this one description,
 * so they cannot disagree.
 * Invariant: parameters are in signature order: tensors in argument order (each followed by its
 * strides), then run-time dimensions in order of first appearance, then scalars, then stream. */
#ifndef TKC_API_H
#define TKC_API_H

#include "plan.h"

typedef enum { API_TENSOR, API_DIM, API_SCALAR } ApiKind;

typedef struct ApiDim {
    const char *name;   /* a run-time dimension's name, or NULL for a compile-time one */
    int64_t value;      /* the compile-time size */
    const PExpr *expr;  /* the dimension as written in the .tk (a name, a param, a literal) */
} ApiDim;

typedef struct ApiParam {
    ApiKind kind;
    const char *name;
    /* tensors */
    ArgMode mode;
    DType dt;
    int rank;
    ApiDim dims[4];
    bool tma;           /* moved by TMA: 16-byte aligned base, 16-byte row pitches, last stride 1 */
    bool zeroed;        /* the launcher zero-fills it before the kernel runs */
    /* scalars */
    bool is_float;
} ApiParam;

typedef struct KernelApi {
    const char *kernel;     /* the .tk kernel's name */
    const char *fn;         /* the C function: tkc_<kernel> */
    Vec(ApiParam) params;
    Vec(PExpr *) requires;  /* run-time conditions (launcher returns TKC_ERR_REQUIRE) */
    bool entry;             /* an entry's launcher: it runs kernels, each checking its own arguments */
} KernelApi;

KernelApi *api_of(Arena *a, const PlanKernel *pk);
KernelApi *api_of_entry(Arena *a, const PlanEntry *pe);

/* "const void *A, const int64_t *A_strides, ..., int64_t M, ..., float scale, tkc_stream_t stream" */
void api_c_params(StrBuf *b, const KernelApi *k);
/* "A, A_strides, ..., M, ..., scale, stream": a call passing the launcher's parameters on */
void api_call_args(StrBuf *b, const KernelApi *k);
/* the same for a C header (header = true): a name that is a C or C++ keyword gets a '_' (in a
 * declaration the names are documentation only) */
void api_c_params_for(StrBuf *b, const KernelApi *k, bool header);

/* "BM=128, BN=256, STAGES=2 (-D)": every param with its value, for comments and explanations;
 * the '=' and the "(-D)" marker are joined to the name by \x01, which the text wrappers of
 * emit_header.c and emit_explain.c print as a space they never break */
char *api_params_text(Arena *a, const Program *prog);

/* tkc_stream_t for C++ files (the .cu and the PyTorch binding), under the guard the C header
 * uses too, so any of them can share a translation unit */
#define API_STREAM_TYPEDEF_CXX                                                                  \
    "#ifndef TKC_STREAM_T\n#define TKC_STREAM_T\n"                                               \
    "typedef struct CUstream_st *tkc_stream_t;  // the same type as cudaStream_t\n#endif\n"

/* the status codes every launcher returns, as an enum body and as "NAME = value, meaning" rows */
#define TK_STATUS(X)                                                                            \
    X(TKC_OK, 0, "success")                                                                      \
    X(TKC_ERR_NULL, 1, "a tensor pointer is null")                                               \
    X(TKC_ERR_ALIGN, 2, "a tensor is not aligned (16 bytes for TMA tensors, one element otherwise)") \
    X(TKC_ERR_DIM, 3, "a dimension is < 1 or larger than 2^31 - 1, or the grid would be")        \
    X(TKC_ERR_STRIDE, 4, "a stride is < 1, or breaks TMA's rules (last stride 1, 16-byte row pitch)") \
    X(TKC_ERR_REQUIRE, 5, "a 'require' of the kernel does not hold")                             \
    X(TKC_ERR_TENSOR_MAP, 6, "the driver rejected a tensor map")                                 \
    X(TKC_ERR_LAUNCH, 7, "the CUDA runtime reported an error")

#endif
