/* emit_torch.c - tkc --emit=torch -o DIR: a PyTorch extension for a .tk file's kernels. Writes
 *   DIR/<stem>_kernels.cu    the CUDA of the kernels and their launchers (emit_cuda's output)
 *   DIR/<stem>_binding.cpp   one pybind11 function per kernel: checks its tensors (device, dtype,
 *                            shape), passes their strides, sets the device guard, launches on
 *                            the current CUDA stream and returns the launcher's status; its
 *                            shared part is templates/tkc_torch_binding.cpp
 *   DIR/<stem>.py            builds the extension on first use (torch.utils.cpp_extension.load,
 *                            sm_90a) and exposes one function per kernel: tensors in, tensors
 *                            out, with Python errors that name the argument; its shared part is
 *                            templates/tkc_torch_runtime.py
 * The two templates are embedded into tkc (templates.h); their marked regions are filled in here
 * (template_fill). What depends on the kernels is printed from the KernelApi (api.h), like the
 * launchers themselves, so the three files and the .cu cannot disagree about a parameter. <stem>
 * is the .tk file's name made a Python identifier; the extension's name adds a hash of the two
 * C++ sources, so two .tk files, or two -D variants of one, never share a build.
 * Invariant: the files depend only on the plan and options: same input, same bytes. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api.h"
#include "emit.h"
#include "templates.h"

/* ---- names ---------------------------------------------------------------------------------- */

static const char *const py_keywords[] = {
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
    "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal",
    "not", "or", "pass", "raise", "return", "try", "while", "with", "yield"};

/* the module's own public names, which a kernel's function must not replace */
static const char *const py_reserved[] = {"tkc_build", "tkc_params", "TkcError", "TKC_STATUS"};

static bool in_list(const char *s, const char *const *v, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(s, v[i])) return true;
    return false;
}

/* a .tk identifier as a Python parameter or function name: keywords get a trailing '_' */
static const char *py_ident(Arena *a, const char *s, bool module_level) {
    if (in_list(s, py_keywords, sizeof py_keywords / sizeof *py_keywords) ||
        (module_level && in_list(s, py_reserved, sizeof py_reserved / sizeof *py_reserved)))
        return arena_printf(a, "%s_", s);
    return s;
}

/* the .tk file's name without directories and extension, made a Python identifier */
static const char *file_stem(Arena *a, const char *path) {
    const char *base = path_base(path);
    const char *dot = strrchr(base, '.');
    size_t n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    char *s = arena_strndup(a, base, n);
    for (char *c = s; *c; c++)
        if (!(*c == '_' || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9'))) *c = '_';
    if (!*s || (*s >= '0' && *s <= '9')) return arena_printf(a, "tk_%s", s);
    return s;
}

/* a Python string literal */
static void py_str(StrBuf *b, const char *s) {
    sb_putc(b, '"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') sb_putc(b, '\\');
        if (*s == '\n') sb_puts(b, "\\n");
        else sb_putc(b, *s);
    }
    sb_putc(b, '"');
}

static uint64_t fnv1a(uint64_t h, const char *s) {
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

/* ---- what each kernel takes ----------------------------------------------------------------- */

/* a function of the module: a kernel's launcher or an entry's */
typedef struct TorchFn {
    const char *name;
    const SemaKernel *sk;
    bool entry;
} TorchFn;

static const char *torch_dtype(DType dt) {
    switch (dt) {
    case DT_BF16: return "bfloat16";
    case DT_FP16: return "float16";
    case DT_FP32: return "float32";
    case DT_I32: return "int32";
    default: return "?";
    }
}

static const char *aten_dtype(DType dt) {
    switch (dt) {
    case DT_BF16: return "at::kBFloat16";
    case DT_FP16: return "at::kHalf";
    case DT_FP32: return "at::kFloat";
    case DT_I32: return "at::kInt";
    default: return "?";
    }
}

/* the .tk spelling of a tensor's dimension d ("M", "D", "64") */
static const char *dim_label(Arena *a, const Arg *g, int d) { return ast_expr_str(a, g->ts.dims[d]); }

/* "bf16[M, K]" */
static void tk_decl(Arena *a, StrBuf *b, const Arg *g) {
    sb_puts(b, dtype_name[g->ts.dt]);
    if (!g->ts.ndims) return;
    sb_putc(b, '[');
    for (int d = 0; d < g->ts.ndims; d++) sb_printf(b, "%s%s", d ? ", " : "", dim_label(a, g, d));
    sb_putc(b, ']');
}

/* "gemm(in A: bf16[M, K], in B: bf16[K, N], out C: bf16[M, N])" */
static char *tk_signature(Arena *a, const TorchFn *pk) {
    StrBuf b;
    sb_init(&b);
    sb_printf(&b, "%s(", pk->name);
    for (int i = 0; i < pk->sk->args.n; i++) {
        const Arg *g = pk->sk->args.v[i];
        sb_printf(&b, "%s%s %s: ", i ? ", " : "", argmode_name[g->mode], g->name);
        tk_decl(a, &b, g);
    }
    sb_putc(&b, ')');
    char *s = arena_strdup(a, b.s);
    sb_free(&b);
    return s;
}

static const ApiParam *api_tensor(const KernelApi *k, const char *name) {
    for (int i = 0; i < k->params.n; i++)
        if (k->params.v[i].kind == API_TENSOR && !strcmp(k->params.v[i].name, name)) return &k->params.v[i];
    return NULL;
}

/* true if the run-time dim is the size of some in or inout tensor (else the caller passes it) */
static bool dim_from_inputs(const KernelApi *k, const char *dim) {
    for (int i = 0; i < k->params.n; i++) {
        const ApiParam *p = &k->params.v[i];
        if (p->kind != API_TENSOR || p->mode == ARG_OUT) continue;
        for (int d = 0; d < p->rank; d++)
            if (p->dims[d].name && !strcmp(p->dims[d].name, dim)) return true;
    }
    return false;
}

static bool has_inputs(const KernelApi *k) {
    for (int i = 0; i < k->params.n; i++)
        if (k->params.v[i].kind == API_TENSOR && k->params.v[i].mode != ARG_OUT) return true;
    return false;
}

/* ---- the templates -------------------------------------------------------------------------- */

#define BINDING_TEMPLATE "tkc_torch_binding.cpp" /* regions marked "// @tkc begin NAME" */
#define PY_TEMPLATE "tkc_torch_runtime.py"       /* regions marked "# @tkc begin NAME" */

/* The embedded template with its regions filled in, or NULL (with a message on stderr) if it is
 * broken: what every binding or module shares is in these files, what depends on the kernels is
 * printed below. */
static char *fill_template(const char *file, const char *comment, const TemplateRegion *regions, int n) {
    size_t len = 0;
    const char *tmpl = template_text(file, &len);
    char err[256] = "it is not embedded";
    StrBuf b;
    sb_init(&b);
    if (!tmpl || template_fill(&b, tmpl, len, comment, regions, n, err, sizeof err)) {
        fprintf(stderr, "tkc: internal error: templates/%s: %s\n", file, err);
        sb_free(&b);
        return NULL;
    }
    return sb_take(&b);
}

/* ---- the C++ binding ------------------------------------------------------------------------ */

static void cpp_kernel(StrBuf *b, const KernelApi *k) {
    sb_printf(b, "// %s: the tensors in .tk order, then the run-time dimensions, then the scalars\n", k->kernel);
    sb_printf(b, "int64_t tkc_torch_%s(", k->kernel);
    for (int i = 0; i < k->params.n; i++) {
        const ApiParam *p = &k->params.v[i];
        if (i) sb_puts(b, ", ");
        switch (p->kind) {
        case API_TENSOR: sb_printf(b, "const at::Tensor &%s", p->name); break;
        case API_DIM: sb_printf(b, "int64_t %s", p->name); break;
        case API_SCALAR: sb_printf(b, "%s %s", p->is_float ? "double" : "int64_t", p->name); break;
        }
    }
    sb_puts(b, ") {\n");
    const ApiParam *first = NULL;
    for (int i = 0; i < k->params.n && !first; i++)
        if (k->params.v[i].kind == API_TENSOR) first = &k->params.v[i];
    if (first) {
        sb_printf(b, "    const at::Device tkc_dev = %s.device();\n", first->name);
        sb_printf(b, "    TORCH_CHECK_VALUE(tkc_dev.is_cuda(), \"%s(): %s must be a CUDA tensor, got \", tkc_dev);\n", k->kernel,
                  first->name);
    } else {
        sb_puts(b, "    const at::Device tkc_dev(at::kCUDA, c10::cuda::current_device());\n");
    }
    for (int i = 0; i < k->params.n; i++) {
        const ApiParam *p = &k->params.v[i];
        if (p->kind == API_SCALAR && !p->is_float)
            sb_printf(b, "    TORCH_CHECK_VALUE(%s >= INT32_MIN && %s <= INT32_MAX, \"%s(): %s must fit in 32 bits, got \", %s);\n",
                      p->name, p->name, k->kernel, p->name, p->name);
        if (p->kind != API_TENSOR) continue;
        sb_printf(b, "    int64_t %s_strides[%d];\n", p->name, p->rank);
        sb_printf(b, "    {\n        const int64_t tkc_shape[%d] = {", p->rank);
        for (int d = 0; d < p->rank; d++) {
            if (d) sb_puts(b, ", ");
            if (p->dims[d].name) sb_puts(b, p->dims[d].name);
            else sb_printf(b, "%" PRId64, p->dims[d].value);
        }
        sb_puts(b, "};\n");
        sb_printf(b, "        tkc_tensor(\"%s\", \"%s\", %s, tkc_dev, %s, %d, %s, %d, tkc_shape, %s_strides);\n    }\n", k->kernel, p->name,
                  p->name, aten_dtype(p->dt), dtype_bytes[p->dt], p->tma ? "true" : "false", p->rank, p->name);
    }
    sb_puts(b, "    const c10::cuda::CUDAGuard tkc_guard(tkc_dev);\n");
    sb_puts(b, "    const cudaStream_t tkc_stream = at::cuda::getCurrentCUDAStream(tkc_dev.index()).stream();\n");
    sb_printf(b, "    return %s(", k->fn);
    for (int i = 0; i < k->params.n; i++) {
        const ApiParam *p = &k->params.v[i];
        if (i) sb_puts(b, ", ");
        switch (p->kind) {
        case API_TENSOR: sb_printf(b, "%s.data_ptr(), %s_strides", p->name, p->name); break;
        case API_DIM: sb_puts(b, p->name); break;
        case API_SCALAR: sb_printf(b, "(%s)%s", p->is_float ? "float" : "int32_t", p->name); break;
        }
    }
    sb_puts(b, k->params.n ? ", tkc_stream);\n}\n\n" : "tkc_stream);\n}\n\n");
}

static char *emit_binding(int nfn, const EmitOptions *o, const char *stem, KernelApi **apis) {
    StrBuf header, launchers, kernels, module;
    sb_init(&header);
    sb_printf(&header,
              "// %s_binding.cpp - generated by tkc %s from %s. Do not edit: change the .tk and run\n"
              "// `tkc --emit=torch` again. The PyTorch side of %s_kernels.cu's launchers: one function per\n"
              "// kernel that checks its tensors (device, dtype, shape), passes their strides, sets the device\n"
              "// guard, launches on the current CUDA stream and returns the launcher's status (TKC_OK = 0 or a\n"
              "// TKC_ERR_* code). %s.py calls these; it checks the same things first with friendlier messages\n"
              "// and turns a status into an exception.\n",
              stem, o->tkc_version, path_base(o->source_path), stem, stem);
    sb_init(&launchers);
    sb_printf(&launchers, "// the launchers, defined in %s_kernels.cu\n", stem);
    for (int i = 0; i < nfn; i++) {
        StrBuf params;
        sb_init(&params);
        api_c_params(&params, apis[i]);
        sb_printf(&launchers, "extern \"C\" int %s(%s);\n", apis[i]->fn, params.s);
        sb_printf(&launchers, "extern \"C\" const char *%s_error(void);\n", apis[i]->fn);
        sb_free(&params);
    }
    sb_init(&kernels);
    for (int i = 0; i < nfn; i++) cpp_kernel(&kernels, apis[i]);
    sb_init(&module);
    sb_puts(&module, "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n");
    sb_printf(&module, "    m.doc() = \"tkc kernels of %s; call them through %s.py\";\n", path_base(o->source_path), stem);
    for (int i = 0; i < nfn; i++) {
        const KernelApi *k = apis[i];
        sb_printf(&module, "    m.def(\"%s\", &tkc_torch_%s, \"launches %s on the current stream; returns its status\"",
                  k->kernel, k->kernel, k->fn);
        for (int j = 0; j < k->params.n; j++) sb_printf(&module, ", pybind11::arg(\"%s\")", k->params.v[j].name);
        sb_puts(&module, ");\n");
        sb_printf(&module, "    m.def(\"%s_error\", []() { return std::string(%s_error()); }, \"the CUDA error of %s's last "
                  "TKC_ERR_LAUNCH on this thread\");\n", k->kernel, k->fn, k->fn);
    }
    sb_puts(&module, "}\n");

    const TemplateRegion regions[] = {
        {"header", header.s},   {"stream", API_STREAM_TYPEDEF_CXX}, {"launchers", launchers.s},
        {"kernels", kernels.s}, {"module", module.s},
    };
    char *text = fill_template(BINDING_TEMPLATE, "//", regions, (int)(sizeof regions / sizeof *regions));
    sb_free(&header);
    sb_free(&launchers);
    sb_free(&kernels);
    sb_free(&module);
    return text;
}

/* ---- the Python module ---------------------------------------------------------------------- */

/* the Python parameter list: in and inout tensors and scalars in .tk order; then, keyword-only,
 * run-time dims no input shows, and device= when no tensor is given */
static void py_params(Arena *a, StrBuf *b, const TorchFn *pk, const KernelApi *k) {
    int n = 0;
    for (int i = 0; i < pk->sk->args.n; i++) {
        const Arg *g = pk->sk->args.v[i];
        if (g->ts.ndims && g->mode == ARG_OUT) continue;
        sb_printf(b, "%s%s", n++ ? ", " : "", py_ident(a, g->name, false));
    }
    bool star = false;
    for (int i = 0; i < k->params.n; i++) {
        const ApiParam *p = &k->params.v[i];
        if (p->kind != API_DIM || dim_from_inputs(k, p->name)) continue;
        sb_printf(b, "%s%s%s", n++ ? ", " : "", star ? "" : "*, ", py_ident(a, p->name, false));
        star = true;
    }
    if (!has_inputs(k)) sb_printf(b, "%s%sdevice=None", n++ ? ", " : "", star ? "" : "*, ");
}

/* "gemm(A, B) -> C", "attn_fwd(Q, K, V, scale) -> (O, L)" */
static void py_call_sig(Arena *a, StrBuf *b, const TorchFn *pk, const KernelApi *k) {
    const SemaKernel *sk = pk->sk;
    sb_printf(b, "%s(", py_ident(a, pk->name, true));
    py_params(a, b, pk, k);
    sb_putc(b, ')');
    int nout = 0;
    for (int i = 0; i < sk->args.n; i++) nout += sk->args.v[i]->ts.ndims && sk->args.v[i]->mode == ARG_OUT;
    if (!nout) return;
    sb_puts(b, nout > 1 ? " -> (" : " -> ");
    for (int i = 0, j = 0; i < sk->args.n; i++)
        if (sk->args.v[i]->ts.ndims && sk->args.v[i]->mode == ARG_OUT) sb_printf(b, "%s%s", j++ ? ", " : "", sk->args.v[i]->name);
    if (nout > 1) sb_putc(b, ')');
}

static void py_docstring(Arena *a, StrBuf *b, const TorchFn *pk, const KernelApi *k, const char *source,
                         const GradDecl *grad) {
    const SemaKernel *sk = pk->sk;
    int nout = 0;
    for (int i = 0; i < sk->args.n; i++) nout += sk->args.v[i]->ts.ndims && sk->args.v[i]->mode == ARG_OUT;
    sb_puts(b, "    \"\"\"");
    py_call_sig(a, b, pk, k);
    sb_printf(b, "\n\n    Runs %s %s of %s on the current CUDA stream of the tensors' device (an sm_90 GPU):\n\n",
              pk->entry ? "entry" : "kernel", pk->name, source);
    sb_printf(b, "        %s\n\n", tk_signature(a, pk));
    sb_puts(b, "    Args:\n");
    for (int i = 0; i < sk->args.n; i++) {
        const Arg *g = sk->args.v[i];
        if (g->ts.ndims && g->mode == ARG_OUT) continue;
        sb_printf(b, "        %s: ", py_ident(a, g->name, false));
        if (!g->ts.ndims) {
            sb_printf(b, "%s (%s scalar).\n", g->ts.dt == DT_FP32 ? "float" : "int", dtype_name[g->ts.dt]);
            continue;
        }
        const ApiParam *p = api_tensor(k, g->name);
        sb_printf(b, "torch.%s tensor ", torch_dtype(g->ts.dt));
        tk_decl(a, b, g);
        sb_puts(b, g->mode == ARG_INOUT ? ", read and written in place" : ", read");
        if (p && p->tma)
            sb_printf(b, ".\n            Moved by TMA: a 16-byte aligned data pointer and other strides multiples\n"
                         "            of %d elements are used in place; other layouts go through a padded copy",
                      16 / dtype_bytes[g->ts.dt]);
        sb_puts(b, ".\n");
    }
    for (int i = 0; i < k->params.n; i++) {
        const ApiParam *p = &k->params.v[i];
        if (p->kind == API_DIM && !dim_from_inputs(k, p->name))
            sb_printf(b, "        %s: int, the run-time dimension %s (no input tensor shows it).\n", py_ident(a, p->name, false),
                      p->name);
    }
    if (!has_inputs(k))
        sb_puts(b, "        device: the CUDA device to run on (default: the current one).\n");
    if (nout) {
        sb_puts(b, "\n    Returns:\n");
        for (int i = 0; i < sk->args.n; i++) {
            const Arg *g = sk->args.v[i];
            if (!g->ts.ndims || g->mode != ARG_OUT) continue;
            const ApiParam *p = api_tensor(k, g->name);
            sb_printf(b, "        %s: a new torch.%s tensor ", g->name, torch_dtype(g->ts.dt));
            tk_decl(a, b, g);
            sb_printf(b, "%s.\n", p && p->zeroed ? ", zero-filled by the launcher, then accumulated into" : "");
        }
    }
    sb_puts(b, "\n    Run-time dimensions (");
    int nd = 0;
    for (int i = 0; i < k->params.n; i++)
        if (k->params.v[i].kind == API_DIM) sb_printf(b, "%s%s", nd++ ? ", " : "", k->params.v[i].name);
    if (!nd) sb_puts(b, "none");
    sb_puts(b, ") come from the shapes and must agree; compile-time\n"
               "    ones are fixed when the module is generated (tkc -D NAME=VALUE makes others).");
    if (k->requires.n) {
        sb_puts(b, " Requires:");
        for (int i = 0; i < k->requires.n; i++) sb_printf(b, "%s %s", i ? " and" : "", px_str(a, k->requires.v[i]));
        sb_putc(b, '.');
    }
    sb_puts(b, "\n\n    Raises TypeError (not a tensor or number, wrong dtype), ValueError (shapes, devices, strides or\n"
               "    alignment the launcher cannot use, a failed require) and RuntimeError (not an sm_90 GPU; TkcError\n"
               "    for other launcher failures). ");
    if (grad) {
        sb_puts(b, "Differentiable (the .tk's grad declaration): the backward runs");
        for (int i = 0; i < grad->nchain; i++) sb_printf(b, "%s %s", i ? "," : "", grad->chain[i]->u.name);
        sb_puts(b, ".\n    \"\"\"\n");
    } else {
        sb_puts(b, "No autograd: the outputs do not require grad (a grad declaration in the .tk\n"
                   "    gives the kernel a backward).\n    \"\"\"\n");
    }
}

static void py_kernel(Arena *a, StrBuf *b, const TorchFn *pk, const KernelApi *k, const char *source,
                      const GradDecl *grad) {
    const SemaKernel *sk = pk->sk;
    const char *pyname = py_ident(a, pk->name, true);
    /* the description _tkc_run works from */
    sb_printf(b, "\n\n_tkc_K_%s = _TkcKernel(\n    ", pk->name);
    py_str(b, pk->name);
    sb_puts(b, ",\n    ");
    py_str(b, tk_signature(a, pk));
    sb_puts(b, ",\n    (\n");
    for (int i = 0; i < sk->args.n; i++) {
        const Arg *g = sk->args.v[i];
        sb_puts(b, "        ");
        if (!g->ts.ndims) {
            sb_puts(b, "_TkcScalar(");
            py_str(b, g->name);
            sb_printf(b, ", \"%s\"),\n", dtype_name[g->ts.dt]);
            continue;
        }
        const ApiParam *p = api_tensor(k, g->name);
        sb_puts(b, "_TkcTensor(");
        py_str(b, g->name);
        sb_printf(b, ", \"%s\", \"%s\", (", argmode_name[g->mode], dtype_name[g->ts.dt]);
        for (int d = 0; d < g->ts.ndims; d++) {
            if (d) sb_puts(b, ", ");
            const ApiDim *ad = p ? &p->dims[d] : NULL;
            if (ad && ad->name) {
                py_str(b, ad->name);
            } else {
                sb_printf(b, "(%" PRId64 ", ", ad ? ad->value : 0);
                py_str(b, dim_label(a, g, d));
                sb_putc(b, ')');
            }
        }
        sb_printf(b, "%s), %s%s),\n", g->ts.ndims == 1 ? "," : "", p && p->tma ? "True" : "False",
                  p && p->zeroed ? ", zeroed=True" : "");
    }
    sb_puts(b, "    ),\n    (");
    int nd = 0;
    for (int i = 0; i < k->params.n; i++)
        if (k->params.v[i].kind == API_DIM) {
            if (nd++) sb_puts(b, ", ");
            py_str(b, k->params.v[i].name);
        }
    sb_puts(b, nd == 1 ? ",),\n    (" : "),\n    (");
    for (int i = 0; i < k->requires.n; i++) {
        if (i) sb_puts(b, ", ");
        py_str(b, px_str(a, k->requires.v[i]));
    }
    sb_puts(b, k->requires.n == 1 ? ",),\n)\n" : "),\n)\n");

    /* the function */
    sb_printf(b, "\n\ndef %s(", pyname);
    py_params(a, b, pk, k);
    sb_puts(b, "):\n");
    py_docstring(a, b, pk, k, source, grad);
    sb_printf(b, "    return _tkc_run(_tkc_K_%s, (", pk->name);
    int n = 0;
    for (int i = 0; i < sk->args.n; i++) {
        const Arg *g = sk->args.v[i];
        if (g->ts.ndims && g->mode == ARG_OUT) continue;
        sb_printf(b, "%s%s", n++ ? ", " : "", py_ident(a, g->name, false));
    }
    sb_puts(b, n == 1 ? ",), {" : "), {");
    int nk = 0;
    for (int i = 0; i < k->params.n; i++) {
        const ApiParam *p = &k->params.v[i];
        if (p->kind != API_DIM || dim_from_inputs(k, p->name)) continue;
        sb_printf(b, "%s\"%s\": %s", nk++ ? ", " : "", p->name, py_ident(a, p->name, false));
    }
    sb_puts(b, has_inputs(k) ? "})\n" : "}, device)\n");
}

/* The runtime every module shares (building the extension, the argument checks, turning a
 * launcher's status into an exception) is Python in templates/tkc_torch_runtime.py. */

/* the module's docstring: its functions, params, and where the extension is built */
static char *py_module_doc(Arena *a, const TorchFn *fns, int nfn, const Program *prog, const EmitOptions *o, const char *stem,
                           KernelApi **apis) {
    StrBuf b;
    sb_init(&b);
    sb_printf(&b, "\"\"\"%s: PyTorch functions for the kernels of %s, generated by tkc %s.\n\n", stem,
              path_base(o->source_path), o->tkc_version);
    sb_puts(&b, "Do not edit: change the .tk and run `tkc --emit=torch` again.\n\n");
    for (int i = 0; i < nfn; i++) {
        sb_puts(&b, "    ");
        py_call_sig(a, &b, &fns[i], apis[i]);
        sb_putc(&b, '\n');
    }
    sb_puts(&b, "\nCompile-time params:");
    for (int i = 0; i < prog->params.n; i++)
        sb_printf(&b, "%s %s=%" PRId64, i ? "," : "", prog->params.v[i]->name, prog->params.v[i]->sym->cval);
    if (!prog->params.n) sb_puts(&b, " none");
    sb_printf(&b, ".\n\n"
                  "The CUDA extension (%s_kernels.cu and %s_binding.cpp beside this file) is built for sm_90a by\n"
                  "torch.utils.cpp_extension.load on first use (or by tkc_build()), into _build/ beside this file,\n"
                  "or $TKC_TORCH_BUILD_DIR, or where neither is writable torch's extension cache; later runs reuse\n"
                  "the build. TKC_TORCH_VERBOSE=1 shows the compiler. The functions run on sm_90 GPUs (Hopper) on\n"
                  "the current CUDA stream; the launchers' status codes are in TKC_STATUS.\n\"\"\"\n",
              stem, stem);
    return sb_take(&b);
}

/* the module's text, or NULL (with a message on stderr) if the embedded template is broken */
static char *emit_module(Arena *a, const TorchFn *fns, int nfn, const Program *prog, const EmitOptions *o, const char *stem,
                         KernelApi **apis, const char *ext_name) {
    const char *source = path_base(o->source_path);
    StrBuf all, params, status, ext, kernels;
    sb_init(&all);
    sb_puts(&all, "__all__ = [");
    for (int i = 0; i < nfn; i++) sb_printf(&all, "\"%s\", ", py_ident(a, fns[i].name, true));
    sb_puts(&all, "\"tkc_build\", \"tkc_params\", \"TkcError\", \"TKC_STATUS\"]\n");
    sb_init(&params);
    sb_puts(&params, "tkc_params = {");
    for (int i = 0; i < prog->params.n; i++) {
        if (i) sb_puts(&params, ", ");
        py_str(&params, prog->params.v[i]->name);
        sb_printf(&params, ": %" PRId64, prog->params.v[i]->sym->cval);
    }
    sb_puts(&params, "}\n");
    sb_init(&status);
#define X(n, v, m)                                                                                                     \
    sb_printf(&status, "    %d: (\"%s\", ", v, #n);                                                                    \
    py_str(&status, m);                                                                                                \
    sb_puts(&status, "),\n");
    TK_STATUS(X)
#undef X
    sb_init(&ext);
    sb_printf(&ext, "_TKC_NAME = \"%s\"  # the extension: stem and a hash of its sources\n", ext_name);
    sb_printf(&ext, "_TKC_SOURCES = (\"%s_kernels.cu\", \"%s_binding.cpp\")\n", stem, stem);
    sb_init(&kernels);
    for (int i = 0; i < nfn; i++) {
        const GradDecl *grad = NULL;
        for (int g = 0; g < prog->grads.n && !fns[i].entry; g++)
            if (!strcmp(prog->grads.v[g]->fwd, fns[i].name)) grad = prog->grads.v[g];
        py_kernel(a, &kernels, &fns[i], apis[i], source, grad);
    }
    if (prog->grads.n) {
        sb_puts(&kernels, "\n\n# the .tk's grad declarations: the kernels that compute each forward's gradients, in order\n");
        for (int i = 0; i < prog->grads.n; i++) {
            const GradDecl *g = prog->grads.v[i];
            sb_printf(&kernels, "_tkc_grads.append((\"%s\", (", g->fwd);
            for (int j = 0; j < g->nchain; j++) sb_printf(&kernels, "\"%s\", ", g->chain[j]->u.name);
            sb_puts(&kernels, ")))\n");
        }
    }

    char *doc = py_module_doc(a, fns, nfn, prog, o, stem, apis);
    const TemplateRegion regions[] = {
        {"docstring", doc}, {"all", all.s},  {"params", params.s},
        {"status", status.s}, {"extension", ext.s}, {"kernels", kernels.s},
    };
    char *text = fill_template(PY_TEMPLATE, "#", regions, (int)(sizeof regions / sizeof *regions));
    free(doc);
    sb_free(&all);
    sb_free(&params);
    sb_free(&status);
    sb_free(&ext);
    sb_free(&kernels);
    return text;
}

/* ---- files ---------------------------------------------------------------------------------- */

/* mkdir -p; returns 0 or -1 with errno set */
static int make_dirs(const char *dir) {
    char *path = xstrdup(dir);
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') path[--n] = 0;
    for (char *c = path + 1;; c++) {
        bool end = !*c;
        if (*c == '/' || end) {
            *c = 0;
            if (mkdir(path, 0777) && errno != EEXIST) {
                free(path);
                return -1;
            }
            if (end) break;
            *c = '/';
        }
    }
    struct stat st;
    int rc = stat(path, &st) ? -1 : S_ISDIR(st.st_mode) ? 0 : (errno = ENOTDIR, -1);
    free(path);
    return rc;
}

/* writes DIR/name, unless it already holds text: an unchanged file keeps its time stamp, so the
 * extension's build (ninja, through torch) does not compile it again */
static int put_file(const char *dir, const char *name, const char *text) {
    char *path = xmalloc(strlen(dir) + strlen(name) + 2);
    sprintf(path, "%s/%s", dir, name);
    int rc = 0;
    size_t len = 0;
    char *old = read_file(path, &len);
    bool same = old && len == strlen(text) && !memcmp(old, text, len);
    free(old);
    if (!same && write_file(path, text, strlen(text))) {
        fprintf(stderr, "tkc: error: cannot write '%s': %s\n", path, strerror(errno));
        rc = 2;
    }
    free(path);
    return rc;
}

int emit_torch(Arena *a, const Plan *p, const Program *prog, const EmitOptions *o, const char *dir) {
    if (make_dirs(dir)) {
        fprintf(stderr, "tkc: error: cannot create the directory '%s': %s\n", dir, strerror(errno));
        return 2;
    }
    const char *stem = o->module_name ? o->module_name : file_stem(a, o->source_path);
    const char *cu_name = arena_printf(a, "%s_kernels.cu", stem);
    const char *cpp_name = arena_printf(a, "%s_binding.cpp", stem);
    const char *py_name = arena_printf(a, "%s.py", stem);

    /* the same options, but #line directives name the .cu by its own name (the build compiles it
     * from this directory wherever the directory is moved) */
    EmitOptions co = *o;
    co.output_name = cu_name;
    char *cu = emit_cuda(a, p, prog, &co);
    /* the module's functions: the kernels' launchers, then the entries' */
    int nfn = p->kernels.n + p->entries.n;
    KernelApi **apis = ARENA_NEW_N(a, KernelApi *, nfn > 0 ? nfn : 1);
    TorchFn *fns = ARENA_NEW_N(a, TorchFn, nfn > 0 ? nfn : 1);
    for (int i = 0; i < p->kernels.n; i++) {
        apis[i] = api_of(a, p->kernels.v[i]);
        fns[i] = (TorchFn){p->kernels.v[i]->name, p->kernels.v[i]->sk, false};
    }
    for (int i = 0; i < p->entries.n; i++) {
        apis[p->kernels.n + i] = api_of_entry(a, p->entries.v[i]);
        fns[p->kernels.n + i] = (TorchFn){p->entries.v[i]->name, p->entries.v[i]->sk, true};
    }
    char *cpp = emit_binding(nfn, o, stem, apis);
    if (!cpp) {
        free(cu);
        return 2;
    }
    uint64_t h = fnv1a(fnv1a(14695981039346656037ULL, cu), cpp);
    const char *ext_name = arena_printf(a, "tkc_%s_%012" PRIx64, stem, h >> 16);
    char *py = emit_module(a, fns, nfn, prog, o, stem, apis, ext_name);
    if (!py) {
        free(cu);
        free(cpp);
        return 2;
    }

    int rc = put_file(dir, cu_name, cu);
    if (!rc) rc = put_file(dir, cpp_name, cpp);
    if (!rc) rc = put_file(dir, py_name, py);
    free(cu);
    free(cpp);
    free(py);
    return rc;
}
