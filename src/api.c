/* api.c - builds the KernelApi description of a kernel's launcher from its plan (see api.h). */
#include "api.h"

#include <inttypes.h>
#include <string.h>

/* the signature both kinds of launcher share: tensors with their dims, run-time dims, scalars */
static KernelApi *api_signature(Arena *a, const char *name, const SemaKernel *sk, PExpr **const *arg_dims) {
    KernelApi *k = ARENA_NEW(a, KernelApi);
    k->kernel = name;
    k->fn = arena_printf(a, "tkc_%s", name);
    for (int i = 0; i < sk->args.n; i++) {
        const Arg *g = sk->args.v[i];
        if (!g->ts.ndims) continue;
        ApiParam p = {.kind = API_TENSOR, .name = g->name, .mode = g->mode, .dt = g->ts.dt, .rank = g->ts.ndims};
        for (int d = 0; d < g->ts.ndims && d < 4; d++) {
            const PExpr *de = arg_dims[i][d];
            p.dims[d].expr = de;
            if (de->sym && de->sym->kind == SYM_DIM) p.dims[d].name = de->sym->name;
            else p.dims[d].value = de->cval;
        }
        vec_push(a, &k->params, p);
    }
    for (int i = 0; i < sk->dims.n; i++) {
        ApiParam p = {.kind = API_DIM, .name = sk->dims.v[i]->name};
        vec_push(a, &k->params, p);
    }
    for (int i = 0; i < sk->scalars.n; i++) {
        ApiParam p = {.kind = API_SCALAR, .name = sk->scalars.v[i]->name, .is_float = sk->scalars.v[i]->ty.kind == TY_FLOAT};
        vec_push(a, &k->params, p);
    }
    return k;
}

KernelApi *api_of(Arena *a, const PlanKernel *pk) {
    KernelApi *k = api_signature(a, pk->name, pk->sk, pk->arg_dims.v);
    for (int i = 0; i < k->params.n; i++) {
        ApiParam *p = &k->params.v[i];
        if (p->kind != API_TENSOR) continue;
        for (int m = 0; m < pk->maps.n; m++) p->tma |= !strcmp(pk->maps.v[m].arg->name, p->name);
        for (int z = 0; z < pk->zeroed.n; z++) p->zeroed |= !strcmp(pk->zeroed.v[z]->name, p->name);
    }
    for (int i = 0; i < pk->requires.n; i++) vec_push(a, &k->requires, pk->requires.v[i]);
    return k;
}

KernelApi *api_of_entry(Arena *a, const PlanEntry *pe) {
    KernelApi *k = api_signature(a, pe->name, pe->sk, pe->arg_dims.v);
    k->entry = true;
    return k;
}

/* a keyword of C (C11 to C23) or C++ (to C++20): legal .tk names that a C header cannot use */
static bool c_or_cxx_keyword(const char *s) {
    static const char *const kw[] = {
        "_Alignas", "_Alignof", "_Atomic", "_BitInt", "_Bool", "_Complex", "_Decimal128", "_Decimal32", "_Decimal64",
        "_Generic", "_Imaginary", "_Noreturn", "_Static_assert", "_Thread_local", "alignas", "alignof", "and",
        "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch", "char", "char16_t", "char32_t",
        "char8_t", "class", "co_await", "co_return", "co_yield", "compl", "concept", "const", "const_cast", "consteval",
        "constexpr", "constinit", "continue", "decltype", "default", "delete", "do", "double", "dynamic_cast", "else",
        "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto", "if", "inline", "int",
        "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq", "nullptr", "operator", "or", "or_eq",
        "private", "protected", "public", "register", "reinterpret_cast", "requires", "restrict", "return", "short",
        "signed", "sizeof", "static", "static_assert", "static_cast", "struct", "switch", "template", "this",
        "thread_local", "throw", "true", "try", "typedef", "typeid", "typename", "typeof", "typeof_unqual", "union",
        "unsigned", "using", "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq",
    };
    for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++)
        if (!strcmp(s, kw[i])) return true;
    return false;
}

void api_c_params_for(StrBuf *b, const KernelApi *k, bool header) {
    for (int i = 0; i < k->params.n; i++) {
        const ApiParam *p = &k->params.v[i];
        /* in a declaration the names are documentation: one C cannot take gets a '_' */
        const char *n = p->name, *u = header && c_or_cxx_keyword(p->name) ? "_" : "";
        if (i) sb_puts(b, ", ");
        switch (p->kind) {
        case API_TENSOR:
            sb_printf(b, "%svoid *%s%s, const int64_t *%s_strides", p->mode == ARG_IN ? "const " : "", n, u, n);
            break;
        case API_DIM: sb_printf(b, "int64_t %s%s", n, u); break;
        case API_SCALAR: sb_printf(b, "%s %s%s", p->is_float ? "float" : "int32_t", n, u); break;
        }
    }
    sb_puts(b, k->params.n ? ", tkc_stream_t stream" : "tkc_stream_t stream");
}

void api_c_params(StrBuf *b, const KernelApi *k) { api_c_params_for(b, k, false); }

void api_call_args(StrBuf *b, const KernelApi *k) {
    for (int i = 0; i < k->params.n; i++) {
        const ApiParam *p = &k->params.v[i];
        if (i) sb_puts(b, ", ");
        if (p->kind == API_TENSOR) sb_printf(b, "%s, %s_strides", p->name, p->name);
        else sb_puts(b, p->name);
    }
    sb_puts(b, k->params.n ? ", stream" : "stream");
}

char *api_params_text(Arena *a, const Program *prog) {
    StrBuf ps;
    sb_init(&ps);
    for (int i = 0; i < prog->params.n; i++) {
        const Param *pa = prog->params.v[i];
        sb_printf(&ps, "%s%s\x01=\x01%" PRId64 "%s", i ? ", " : "", pa->name, pa->sym ? pa->sym->cval : (int64_t)0,
                  pa->overridden ? "\x01(-D)" : "");
    }
    char *r = arena_strdup(a, ps.s ? ps.s : "");
    sb_free(&ps);
    return r;
}
