/* emit_entry.c - the host launcher of an entry (PlanEntry): its plan's steps as C++ - lets as
 * constants, each scratch tensor a tkc_scratch (freed on the stream when its block ends), each
 * call the kernel's own launcher (which checks its arguments), each if a C++ if (or, decided at
 * compile time, a plain block). Part of the CUDA emitter (emit_int.h). */
#include "emit_int.h"

typedef struct EE {
    Em *e;
    const PlanEntry *pe;
    int tmp;            /* counter for the transposed views' stride arrays */
} EE;

static void emit_steps(EE *x, const PESteps *l);

static void emit_call(EE *x, const PEStep *s) {
    Em *e = x->e;
    const PlanEntry *pe = x->pe;
    L("// %s", s->name);
    for (int c = 0; c < s->checks.n; c++)
        L("if ((%s) != (%s)) return TKC_ERR_DIM;  // %s", scalar_str(e, s->checks.v[c].a, true),
          scalar_str(e, s->checks.v[c].b, true), s->checks.v[c].why);
    StrBuf args;
    sb_init(&args);
    for (int t = 0; t < s->tensors.n; t++) {
        const PETensor *pt = &s->tensors.v[t];
        const char *st = arena_printf(e->a, "%s_strides", pt->name);
        if (pt->trans) {
            const int r = pt->rank;
            PExpr *const *d = pt->dims;
            const char *v = arena_printf(e->a, "tkc_t%d", x->tmp++);
            StrBuf ds;
            sb_init(&ds);
            for (int i = 0; i < r; i++) sb_printf(&ds, "%s(int64_t)(%s)", i ? ", " : "", scalar_str(e, d[i], true));
            L("// %s.T: its last two dimensions and strides swapped", pt->name);
            L("int64_t %s[%d];", v, r);
            L("{");
            IN();
            L("const int64_t dims[%d] = {%s};", r, ds.s);
            L("if (!tkc_strides(%s, %s, dims, %d)) return TKC_ERR_STRIDE;", v, st, r);
            L("const int64_t last = %s[%d];", v, r - 1);
            L("%s[%d] = %s[%d];", v, r - 1, v, r - 2);
            L("%s[%d] = last;", v, r - 2);
            OUT();
            L("}");
            sb_free(&ds);
            st = v;
        }
        sb_printf(&args, "%s%s, %s", t ? ", " : "", pt->name, st);
    }
    for (int i = 0; i < s->dim_values.n; i++)
        sb_printf(&args, "%s(int64_t)(%s)", args.len ? ", " : "", scalar_str(e, s->dim_values.v[i], true));
    const SemaKernel *ck = s->callee->sk;
    for (int i = 0; i < s->scalar_values.n; i++)
        sb_printf(&args, "%s(%s)(%s)", args.len ? ", " : "", ck->scalars.v[i]->ty.kind == TY_FLOAT ? "float" : "int32_t",
                  scalar_str(e, s->scalar_values.v[i], true));
    sb_printf(&args, "%sstream", args.len ? ", " : "");
    if (s->pdl) {
        L("// programmatic dependent launch: may start while the kernel before it runs (the plan's notes)");
        L("if ((tkc_rc = %s%stkc_%s_launch(%s, true)) != TKC_OK) {", e->ns ? e->ns : "", e->ns ? "::" : "", s->name, args.s);
    } else {
        L("if ((tkc_rc = %s%stkc_%s(%s)) != TKC_OK) {", e->ns ? e->ns : "", e->ns ? "::" : "", s->name, args.s);
    }
    L("    tkc_%s_cuda = tkc_%s_cuda;", pe->name, s->name);
    L("    return tkc_rc;");
    L("}");
    sb_free(&args);
}

static void emit_step(EE *x, const PEStep *s) {
    Em *e = x->e;
    switch (s->kind) {
    case PE_LET:
        L("[[maybe_unused]] const %s %s = %s;", s->value->ty.kind == TY_FLOAT ? "float" : "long long", s->name, scalar_str(e, s->value, true));
        return;
    case PE_SCRATCH: {
        need(e, "tkc_ptx.cuh", "scratch");
        StrBuf shape, dims;
        sb_init(&shape);
        sb_init(&dims);
        for (int d = 0; d < s->rank; d++) {
            sb_printf(&shape, "%s%s", d ? ", " : "", px_str(e->a, s->dims[d]));
            sb_printf(&dims, "%s(int64_t)(%s)", d ? ", " : "", scalar_str(e, s->dims[d], true));
        }
        L("// scratch %s: %s[%s], contiguous", s->name, dtype_name[s->dt], shape.s);
        L("const int64_t %s_dims[%d] = {%s};", s->name, s->rank, dims.s);
        L("size_t %s_bytes = 0;", s->name);
        L("if (!tkc_scratch_bytes(&%s_bytes, %s_dims, %d, %d)) return TKC_ERR_DIM;", s->name, s->name, s->rank, dtype_bytes[s->dt]);
        L("tkc_scratch %s_mem(%s_bytes, (cudaStream_t)stream, &tkc_err);", s->name, s->name);
        L("if (tkc_err != cudaSuccess) {");
        L("    tkc_%s_cuda = tkc_err;", x->pe->name);
        L("    return TKC_ERR_LAUNCH;");
        L("}");
        L("void *%s = %s_mem.p;", s->name, s->name);
        StrBuf st;
        sb_init(&st);
        for (int d = 0; d < s->rank; d++) {
            if (d) sb_puts(&st, ", ");
            if (d == s->rank - 1) {
                sb_puts(&st, "1");
                continue;
            }
            for (int j = d + 1; j < s->rank; j++) sb_printf(&st, "%s%s_dims[%d]", j > d + 1 ? " * " : "", s->name, j);
        }
        L("const int64_t %s_strides[%d] = {%s};  // contiguous", s->name, s->rank, st.s);
        sb_free(&st);
        sb_free(&shape);
        sb_free(&dims);
        return;
    }
    case PE_CALL: emit_call(x, s); return;
    case PE_IF:
        if (s->decided) {
            if (!s->then_s.n) return;
            L("{  // %s%s: decided at compile time", s->taken ? "" : "else of ", px_str(e->a, s->value));
        } else {
            L("if (%s) {", scalar_str(e, s->value, true));
        }
        IN();
        emit_steps(x, &s->then_s);
        OUT();
        if (!s->decided && s->else_s.n) {
            L("} else {");
            IN();
            emit_steps(x, &s->else_s);
            OUT();
        }
        L("}");
        return;
    }
}

static void emit_steps(EE *x, const PESteps *l) {
    for (int i = 0; i < l->n; i++) emit_step(x, l->v[i]);
}

void emit_entry_launcher(Em *e, const PlanEntry *pe) {
    const KernelApi *api = api_of_entry(e->a, pe);
    StrBuf sig;
    sb_init(&sig);
    api_c_params(&sig, api);
    L("// Entry %s: runs kernels of this file on stream, in order (the plan's steps); each kernel's", pe->name);
    L("// launcher checks its arguments. Returns TKC_OK or the TKC_ERR_* code of the first that fails.");
    L("// the CUDA error of the last launch of tkc_%s() on this thread that returned TKC_ERR_LAUNCH", pe->name);
    L("static thread_local cudaError_t tkc_%s_cuda = cudaSuccess;", pe->name);
    const char *ext = e->ns ? "" : "extern \"C\" ";
    L("%sconst char *tkc_%s_error(void) { return cudaGetErrorString(tkc_%s_cuda); }", ext, pe->name, pe->name);
    L("%sint tkc_%s(%s) {", ext, pe->name, sig.s);
    sb_free(&sig);
    IN();
    for (int i = 0; i < pe->sk->dims.n; i++)
        L("if (%s < 1 || %s > 2147483647LL) return TKC_ERR_DIM;", pe->sk->dims.v[i]->name, pe->sk->dims.v[i]->name);
    L("int tkc_rc = TKC_OK;");
    if (pe->nscratch) L("cudaError_t tkc_err = cudaSuccess;");
    if (pe->uses_sms) {
        L("// sms: the SM count of the current device (the one the stream's work runs on), asked once per device");
        L("static std::atomic<int> sm_count[64];");
        emit_sm_count(e, pe->name);
    }
    EE x = {.e = e, .pe = pe};
    emit_steps(&x, &pe->body);
    L("return tkc_rc;");
    OUT();
    L("}");
}
