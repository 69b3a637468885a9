/* emit_header.c - the C header of a .tk file's launchers (tkc --emit=header): an include guard,
 * <stdint.h>, tkc_stream_t and the status codes (guarded exactly as in the .cu, so the header and
 * the .cu can share a translation unit), tkc_status_string(), and one declaration per kernel,
 * printed with api_c_params() -- the function emit_cuda.c prints the definitions with, so the
 * two cannot disagree -- under a comment that says what every argument must be.
 * The header stands alone: any C99 (or later) or C++ compiler accepts it without CUDA headers.
 * Invariant: the output depends only on the plan and the source file's name: same input, same
 * bytes. */
#include <ctype.h>
#include <inttypes.h>
#include <string.h>

#include "api.h"
#include "dispatch.h"
#include "emit.h"

enum { WRAP = 100 };

/* the status codes as C constants here (TK_STATUS is only an X-macro table) */
enum {
#define X(name, v, m) ST_##name = v,
    TK_STATUS(X)
#undef X
    ST_COUNT
};

/* Appends text to a comment, never letting it close the comment or form a trigraph. */
static void comment_text(StrBuf *b, const char *s) {
    for (; *s; s++) {
        sb_putc(b, *s);
        if ((*s == '*' && s[1] == '/') || (*s == '?' && s[1] == '?')) sb_putc(b, ' ');
    }
}

/* One comment paragraph: " * " + the text, wrapped at WRAP columns. The text's leading spaces
 * indent every line, continuation lines by hang more; runs of spaces inside are kept unless a
 * line breaks there; '\x01' is a space that never breaks. */
static void comment_para(StrBuf *b, int hang, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void comment_para(StrBuf *b, int hang, const char *fmt, ...) {
    StrBuf t;
    sb_init(&t);
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&t, fmt, ap);
    va_end(ap);
    StrBuf safe;
    sb_init(&safe);
    comment_text(&safe, t.s ? t.s : "");
    sb_free(&t);
    const char *s = safe.s ? safe.s : "";
    sb_wrap(b, " * ", (int)strspn(s, " "), hang, WRAP, true, s);
    sb_free(&safe);
}

/* "bf16[M, K]" with compile-time dimensions as the .tk spells them */
static void tensor_shape(StrBuf *b, const ApiParam *p) {
    sb_printf(b, "%s[", dtype_name[p->dt]);
    for (int d = 0; d < p->rank; d++) {
        if (d) sb_puts(b, ", ");
        px_print(b, p->dims[d].expr);
    }
    sb_putc(b, ']');
}

/* compile-time dimensions of a tensor: "D = 128" or "64", joined with ", "; empty if none */
static void fixed_dims(StrBuf *b, const ApiParam *p) {
    int n = 0;
    for (int d = 0; d < p->rank; d++) {
        if (p->dims[d].name) continue;
        if (n++) sb_puts(b, ", ");
        sb_printf(b, "dimension %d", d);
        if (p->dims[d].expr->kind != PX_INT) {
            sb_puts(b, " (");
            px_print(b, p->dims[d].expr);
            sb_puts(b, ")");
        }
        sb_printf(b, " = %" PRId64, p->dims[d].value);
    }
}

/* the declaration, wrapped at ", " with a continuation indent */
static void declaration(StrBuf *b, const KernelApi *k) {
    StrBuf sig;
    sb_init(&sig);
    api_c_params_for(&sig, k, true);
    StrBuf line;
    sb_init(&line);
    sb_printf(&line, "int %s(", k->fn);
    const char *s = sig.s ? sig.s : "";
    while (*s) {
        const char *c = strstr(s, ", ");
        size_t n = c ? (size_t)(c - s) : strlen(s);
        size_t need = n + (c ? 1 : 2); /* "," or ");" */
        if (line.len + need > WRAP && line.len > 4) {
            sb_putn(b, line.s, line.len);
            sb_putc(b, '\n');
            line.len = 0;
            sb_puts(&line, "    ");
        } else if (line.len && line.s[line.len - 1] == ',') {
            sb_putc(&line, ' ');
        }
        sb_putn(&line, s, n);
        if (c) {
            sb_putc(&line, ',');
            s = c + 2;
        } else {
            s += n;
        }
    }
    sb_puts(&line, ");");
    sb_putn(b, line.s, line.len);
    sb_putc(b, '\n');
    sb_free(&line);
    sb_free(&sig);
}

/* maps: the kernel has tensor maps (TKC_ERR_TENSOR_MAP); an entry returns any code its kernels do */
static void kernel_decl(StrBuf *b, const KernelApi *k, bool maps, const char *base) {
    int ntensors = 0, ndims = 0, nscalars = 0;
    for (int i = 0; i < k->params.n; i++) {
        const ApiParam *p = &k->params.v[i];
        ntensors += p->kind == API_TENSOR;
        ndims += p->kind == API_DIM;
        nscalars += p->kind == API_SCALAR;
    }
    sb_puts(b, "/*\n");
    if (k->entry)
        comment_para(b, 0, "%s: runs entry %s (%s) on `stream`: the kernels it names, in order, each launcher checking its "
                           "arguments. Asynchronous: TKC_OK means the kernels were queued, not that they finished.",
                     k->fn, k->kernel, base);
    else
        comment_para(b, 0, "%s: launches kernel %s (%s) on `stream`. The launch is asynchronous: TKC_OK means the kernel was "
                           "queued, not that it finished.",
                     k->fn, k->kernel, base);
    if (ntensors) {
        sb_puts(b, " *\n");
        comment_para(b, 0, "Tensors are device pointers. Each X_strides gives one stride per dimension, outermost first, "
                           "counted in elements (NULL: contiguous, row-major); every stride must be >= 1.");
        for (int i = 0; i < k->params.n; i++) {
            const ApiParam *p = &k->params.v[i];
            if (p->kind != API_TENSOR) continue;
            StrBuf shape, fixed;
            sb_init(&shape);
            sb_init(&fixed);
            tensor_shape(&shape, p);
            fixed_dims(&fixed, p);
            int eb = dtype_bytes[p->dt];
            StrBuf t;
            sb_init(&t);
            sb_printf(&t, "  %s: %s %s", p->name, argmode_name[p->mode], shape.s);
            if (p->mode == ARG_IN) sb_puts(&t, ", read only.");
            else if (p->mode == ARG_OUT) sb_puts(&t, ", written.");
            else sb_puts(&t, ", read and written.");
            if (fixed.len) sb_printf(&t, " Fixed at compile time: %s; the tensor must have exactly that size.", fixed.s);
            if (p->tma)
                sb_printf(&t, " Moved by TMA: base aligned to one element (%d byte%s), last stride 1; where the base "
                              "or another stride is not a multiple of 16 bytes (%d elements), the launcher moves it "
                              "through a copy with padded rows (rows that overlap: TKC_ERR_STRIDE).",
                          eb, eb == 1 ? "" : "s", 16 / eb);
            else
                sb_printf(&t, " Accessed by threads: base aligned to one element (%d byte%s), any strides.", eb,
                          eb == 1 ? "" : "s");
            if (p->zeroed) sb_puts(&t, " The launcher zero-fills it before the kernel runs.");
            comment_para(b, 2, "%s", t.s);
            sb_free(&t);
            sb_free(&shape);
            sb_free(&fixed);
        }
    }
    if (ndims) {
        StrBuf d;
        sb_init(&d);
        int n = 0;
        for (int i = 0; i < k->params.n; i++)
            if (k->params.v[i].kind == API_DIM) sb_printf(&d, "%s%s", n++ ? ", " : "", k->params.v[i].name);
        sb_puts(b, " *\n");
        comment_para(b, 0, "Run-time dimension%s %s: each must be 1 .. 2^31 - 1, and so must the number of work tiles.",
                     ndims == 1 ? "" : "s", d.s);
        sb_free(&d);
    }
    if (nscalars) {
        sb_puts(b, " *\n");
        comment_para(b, 0, "Scalars:");
        for (int i = 0; i < k->params.n; i++) {
            const ApiParam *p = &k->params.v[i];
            if (p->kind != API_SCALAR) continue;
            comment_para(b, 2, "  %s: %s (%s in the .tk), passed by value.", p->name, p->is_float ? "float" : "int32_t",
                         p->is_float ? "fp32" : "i32");
        }
    }
    if (k->requires.n) {
        sb_puts(b, " *\n");
        comment_para(b, 0, "Requires (checked before the tensors; TKC_ERR_REQUIRE otherwise):");
        for (int i = 0; i < k->requires.n; i++) {
            StrBuf r;
            sb_init(&r);
            px_print(&r, k->requires.v[i]);
            comment_para(b, 2, "  require %s", r.s ? r.s : "");
            sb_free(&r);
        }
    }
    sb_puts(b, " *\n");
    comment_para(b, 0, "stream: the CUDA stream to launch on (a cudaStream_t; NULL: the default stream).");
    sb_puts(b, " *\n");
    comment_para(b, 0, "Returns TKC_OK when the kernel was queued. Otherwise it returns one of these codes; all but "
                       "TKC_ERR_LAUNCH mean the arguments were rejected before anything was launched:");
    /* what the launcher in emit_cuda.c checks: dimensions and the work-tile count always, tensors
     * when there are any, requires and tensor maps when the kernel has them */
    bool can[ST_COUNT + 1] = {0};
    can[ST_TKC_ERR_DIM] = can[ST_TKC_ERR_LAUNCH] = true;
    can[ST_TKC_ERR_NULL] = can[ST_TKC_ERR_ALIGN] = can[ST_TKC_ERR_STRIDE] = ntensors > 0;
    can[ST_TKC_ERR_REQUIRE] = k->requires.n > 0 || k->entry;
    can[ST_TKC_ERR_TENSOR_MAP] = maps || k->entry;
#define X(name, v, m)                                                                                               \
    if (v > 0 && v <= ST_COUNT && can[v]) comment_para(b, 4, "  %-18s %s", #name, m);
    TK_STATUS(X)
#undef X
    sb_puts(b, " */\n");
    declaration(b, k);
    sb_printf(b, "/* After TKC_ERR_LAUNCH: the CUDA runtime's message for the call that failed (this thread). */\n"
                 "const char *%s_error(void);\n", k->fn);
}

/* TKC_<BASENAME>_H from the source file's name: letters and digits upper-cased, the rest '_' */
static void guard_name(StrBuf *b, const char *base) {
    sb_puts(b, "TKC_");
    for (const char *c = base; *c; c++) sb_putc(b, isalnum((unsigned char)*c) ? (char)toupper((unsigned char)*c) : '_');
    sb_puts(b, "_H");
}

char *emit_header(Arena *a, const Plan *p, const Program *prog, const EmitOptions *o) {
    StrBuf b;
    sb_init(&b);
    const char *base = path_base(o->source_path);
    StrBuf guard;
    sb_init(&guard);
    guard_name(&guard, base);

    sb_puts(&b, "/*\n");
    comment_para(&b, 0, "Generated by tkc %s from %s. Do not edit: change the .tk and run tkc again.", o->tkc_version, base);
    sb_puts(&b, " *\n");
    StrBuf fns;
    sb_init(&fns);
    for (int i = 0; i < p->kernels.n; i++) sb_printf(&fns, "%s tkc_%s()", i ? "," : "", p->kernels.v[i]->name);
    for (int i = 0; i < p->entries.n; i++) sb_printf(&fns, ", tkc_%s() (entry)", p->entries.v[i]->name);
    comment_para(&b, 0,
                 "The host API of %s:%s. The functions are defined in the CUDA file tkc writes from the same .tk with "
                 "the same -D options (tkc %s -o X.cu; nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -c "
                 "X.cu); link with that object and the CUDA runtime. This header needs only a C99 (or later) or C++ "
                 "compiler: no CUDA include path.",
                 base, fns.len ? fns.s : " no kernels", base);
    sb_free(&fns);
    if (o->dispatch) {
        /* every variant has these launchers (dispatch_check): the rules pick one at launch */
        const Dispatch *ds = o->dispatch;
        StrBuf vs;
        sb_init(&vs);
        for (int r = 0; r < ds->rules.n; r++) {
            if (ds->rules.v[r].left_out) continue;  /* not in this build's launcher */
            const DispatchVariant *v = &ds->variants.v[ds->rules.v[r].variant];
            sb_printf(&vs, "%s%s: %s (%s)", vs.len ? "; " : "", dispatch_rule_text(a, &ds->rules.v[r], false), v->name, dispatch_variant_text(a, v));
        }
        sb_puts(&b, " *\n");
        bool named = prog->dispatch && !strcmp(prog->dispatch, ds->path); /* by the .tk's `dispatch` */
        comment_para(&b, 0, "Built with %s %s%s: %d variants behind each launcher, which picks one at every launch by the "
                     "first rule that holds: %s.", named ? "the dispatch table" : "--dispatch", path_base(ds->path),
                     named ? " that the .tk names" : " (add it to the tkc command above)", dispatch_variants_used(ds), vs.s);
        sb_free(&vs);
    } else if (prog->params.n) {
        sb_puts(&b, " *\n");
        comment_para(&b, 0, "Built with params %s.", api_params_text(a, prog));
    }
    sb_puts(&b, " */\n");
    sb_printf(&b, "#ifndef %s\n#define %s\n\n#include <stdint.h>\n\n", guard.s, guard.s);
    sb_puts(&b, "/* a CUDA stream: the same type as cudaStream_t */\n"
                "#ifndef TKC_STREAM_T\n#define TKC_STREAM_T\ntypedef struct CUstream_st *tkc_stream_t;\n#endif\n\n");
    sb_puts(&b, "/* what every launcher returns (the .cu defines the same codes under the same guard) */\n"
                "#ifndef TKC_STATUS_CODES\n#define TKC_STATUS_CODES\nenum {\n");
#define X(name, v, m) sb_printf(&b, "    %s = %d, /* %s */\n", #name, v, m);
    TK_STATUS(X)
#undef X
    sb_puts(&b, "};\n#endif\n\n");
    /* unused is for clang, which warns about unused static inline functions in the main file
     * (as when the header is compiled on its own) */
    sb_puts(&b, "/* tkc_status_string(status): \"NAME: meaning\" of a status code, for messages */\n"
                "#ifndef TKC_STATUS_STRING\n#define TKC_STATUS_STRING\n"
                "#if defined(__GNUC__) || defined(__clang__)\n__attribute__((unused))\n#endif\n"
                "static inline const char *tkc_status_string(int status) {\n"
                "    switch (status) {\n");
#define X(name, v, m) sb_printf(&b, "    case %s: return \"%s: %s\";\n", #name, #name, m);
    TK_STATUS(X)
#undef X
    sb_puts(&b, "    default: return \"unknown tkc status code\";\n    }\n}\n#endif\n\n");
    sb_puts(&b, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n");
    for (int i = 0; i < p->kernels.n; i++) {
        sb_putc(&b, '\n');
        kernel_decl(&b, api_of(a, p->kernels.v[i]), p->kernels.v[i]->maps.n > 0, base);
    }
    for (int i = 0; i < p->entries.n; i++) {
        sb_putc(&b, '\n');
        kernel_decl(&b, api_of_entry(a, p->entries.v[i]), false, base);
    }
    sb_puts(&b, "\n#ifdef __cplusplus\n}\n#endif\n\n");
    sb_printf(&b, "#endif /* %s */\n", guard.s);
    sb_free(&guard);
    return sb_take(&b);
}
