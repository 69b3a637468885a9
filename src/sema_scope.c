/* sema_scope.c - names and types for the semantic checks: scopes and symbols (lookup, declare,
 * the spelling suggestions of unknown names), the type constructors and predicates, their
 * spellings in diagnostics, and the dtype join of elementwise operands. Imports nothing else of
 * sema, so sema.c, sema_expr.c and sema_stmt.c stand above it (sema_int.h). */
#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include "sema_int.h"

/* ---- scopes ---------------------------------------------------------------------------------- */

static Symbol *lookup_in(Scope *sc, const char *name) {
    for (; sc; sc = sc->parent)
        for (int i = sc->syms.n - 1; i >= 0; i--)
            if (!strcmp(sc->syms.v[i]->name, name)) return sc->syms.v[i];
    return NULL;
}

Symbol *lookup(Sema *s, const char *name) { return lookup_in(s->scope, name); }

Symbol *new_sym(Sema *s, SymKind k, const char *name, Span sp) {
    Symbol *y = ARENA_NEW(s->a, Symbol);
    y->kind = k;
    y->name = name;
    y->span = sp;
    return y;
}

const char *symkind_desc(SymKind k) {
    switch (k) {
    case SYM_PARAM: return "param";
    case SYM_DIM: return "dimension";
    case SYM_TENSOR: return "tensor";
    case SYM_SCALAR: return "scalar argument";
    case SYM_LET: return "let";
    case SYM_SHARED: return "shared tile";
    case SYM_REG: return "register tile";
    case SYM_LOOPVAR: return "pipeline variable";
    case SYM_FORVAR: return "loop variable";
    case SYM_AXIS: return "grid axis";
    case SYM_BUILTIN: return "built-in name";
    }
    return "name";
}

/* Why the generated code cannot use a .tk name as written, or NULL when it can: the keywords and
 * alternative tokens of C++20, the standard macros and functions the generated code can see, the
 * names it declares itself, the keywords of Python (the torch module), the identifiers C and C++
 * reserve (an underscore and a capital letter, or two underscores, at the start) and the prefixes
 * of tkc's own names. Such a name is legal in a .tk: it is written differently (sema_names.c).
 * (Names that are keywords of C only, such as restrict, keep their spelling: the C header
 * renames its parameters.) */
const char *reserved_why(const char *n) {
    static const char *const cxx[] = {
        "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch",
        "char", "char8_t", "char16_t", "char32_t", "class", "co_await", "co_return", "co_yield", "compl", "concept",
        "const", "const_cast", "consteval", "constexpr", "constinit", "continue", "decltype", "default", "delete",
        "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float", "for",
        "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
        "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register", "reinterpret_cast",
        "requires", "return", "short", "signed", "sizeof", "static", "static_assert", "static_cast", "struct",
        "switch", "template", "this", "thread_local", "throw", "true", "try", "typedef", "typeid", "typename",
        "union", "unsigned", "using", "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq"};
    static const char *const std[] = {
        "NULL", "EOF", "errno", "assert", "offsetof", "INFINITY", "NAN", "HUGE_VAL", "stdin", "stdout", "stderr",
        "INT_MAX", "INT_MIN", "UINT_MAX", "CHAR_BIT", "EXIT_SUCCESS", "EXIT_FAILURE", "RAND_MAX", "M_PI",
        "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "min", "max", "abs", "fminf", "fmaxf", "fabsf",
        "expf", "exp2f", "logf", "log2f", "sqrtf", "rsqrtf", "tanhf", "erff", "int32_t", "uint32_t", "int64_t", "uint64_t",
        "uintptr_t", "size_t", "half", "nv_bfloat16"};
    static const char *const own[] = {"wg", "row", "col", "inf", "block", "device", "sms", "tiles", "grid",
                                      "stream", "cfg", "attr", "units", "clusters"};
    static const char *const py[] = {"None", "True", "False", "as", "assert", "async", "await", "def", "del", "elif",
                                     "except", "finally", "from", "global", "is", "lambda", "nonlocal", "pass",
                                     "raise", "with", "yield", "self", "torch"};
    for (size_t i = 0; i < sizeof cxx / sizeof cxx[0]; i++)
        if (!strcmp(n, cxx[i])) return "a C++ keyword or alternative token";
    for (size_t i = 0; i < sizeof std / sizeof std[0]; i++)
        if (!strcmp(n, std[i])) return "a name of the C, C++ or CUDA library";
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (!strcmp(n, own[i])) return "a name the generated code declares";
    for (size_t i = 0; i < sizeof py / sizeof py[0]; i++)
        if (!strcmp(n, py[i])) return "a Python keyword or a name of the torch module";
    if (n[0] == '_' && ((n[1] >= 'A' && n[1] <= 'Z') || n[1] == '_')) return "an identifier C and C++ reserve";
    if (!strncmp(n, "tkc_", 4) || !strncmp(n, "TKC_", 4) || !strncmp(n, "block_", 6) || !strncmp(n, "cuda", 4) ||
        !strncmp(n, "CU", 2))
        return "a prefix of the generated code's own names";
    return NULL;
}

/* Declares y in the innermost scope; reports a redefinition in the same kernel or program. */
bool declare(Sema *s, Symbol *y) {
    Symbol *old = lookup_in(s->scope, y->name);
    if (old && old->kind == SYM_BUILTIN && y->kind != SYM_BUILTIN) {
        diag_error(s->d, y->span, "'%s' is a predefined name (section 12 of the language reference); choose another name",
                   y->name);
        vec_push(s->a, &s->scope->syms, y); /* declared anyway: its uses are not errors too */
        return false;
    }
    if (old && old->kind != SYM_BUILTIN) {
        diag_error(s->d, y->span, "redefinition of '%s'", y->name);
        diag_note(s->d, old->span, "'%s' was first defined here as a %s", y->name, symkind_desc(old->kind));
        return false;
    }
    vec_push(s->a, &s->scope->syms, y);
    vec_push(s->a, &s->declared, ((SemaDeclared){y, s->sk}));
    return true;
}

void push_scope(Sema *s, Scope *sc) {
    memset(sc, 0, sizeof *sc);
    sc->parent = s->scope;
    s->scope = sc;
}

void pop_scope(Sema *s) { s->scope = s->scope->parent; }

/* the closest visible name, for "did you mean" */
const char *suggest(Sema *s, const char *name) {
    const char *best = NULL;
    int bestd = 3;
    for (Scope *sc = s->scope; sc; sc = sc->parent)
        for (int i = 0; i < sc->syms.n; i++) {
            int dd = edit_distance(name, sc->syms.v[i]->name);
            if (dd < bestd && (int)strlen(name) > dd) {
                bestd = dd;
                best = sc->syms.v[i]->name;
            }
        }
    return best;
}

/* ---- types ---------------------------------------------------------------------------------- */

Type ty_err(void) { return (Type){.kind = TY_ERROR}; }
Type ty_int(void) { return (Type){.kind = TY_INT, .dt = DT_I32}; }
Type ty_float(void) { return (Type){.kind = TY_FLOAT, .dt = DT_FP32}; }
Type ty_bool(void) { return (Type){.kind = TY_BOOL}; }
Type ty_tile(MemSpace sp, DType dt, int r, int c) {
    return (Type){.kind = TY_TILE, .space = sp, .dt = dt, .rows = r, .cols = c};
}
Type ty_vec(MemSpace sp, DType dt, int n, VecLayout l) {
    return (Type){.kind = TY_VEC, .space = sp, .dt = dt, .rows = n, .layout = l};
}

bool is_scalar(Type t) { return t.kind == TY_INT || t.kind == TY_FLOAT || t.kind == TY_BOOL; }
bool is_numeric(Type t) { return t.kind == TY_INT || t.kind == TY_FLOAT; }
bool is_intlike(Type t) { return t.kind == TY_INT || t.kind == TY_BOOL; }
bool is_tv(Type t) { return t.kind == TY_TILE || t.kind == TY_VEC; }

const char *type_str(Sema *s, Type t) {
    switch (t.kind) {
    case TY_ERROR: return "<error>";
    case TY_VOID: return "nothing";
    case TY_BOOL: return t.varying ? "per-element bool" : "bool";
    case TY_INT: return t.varying ? "per-element int" : "int";
    case TY_FLOAT: return t.varying ? "per-element float" : "float";
    case TY_TENSOR: return arena_printf(s->a, "global %s tensor of rank %d", dtype_name[t.dt], t.ndims);
    case TY_GRIDREF: return "the block coordinates";
    case TY_TILE:
        return arena_printf(s->a, "%s%s %s[%d, %d] tile%s", space_name[t.space], t.partial ? " partial" : t.per_wg ? " per_wg" : "",
                            dtype_name[t.dt], t.rows, t.cols, t.complex ? " (complex)" : "");
    case TY_VEC:
        return arena_printf(s->a, "%s%s %s[%d]%s%s vector", space_name[t.space], t.per_wg ? " per_wg" : "",
                            dtype_name[t.dt], t.rows, t.layout ? " " : "", veclayout_name[t.layout]);
    }
    return "?";
}

const char *shape_str(Sema *s, Type t) {
    if (t.kind == TY_TILE) return arena_printf(s->a, "[%d, %d]", t.rows, t.cols);
    if (t.kind == TY_VEC) return arena_printf(s->a, "[%d]", t.rows);
    return type_str(s, t);
}

/* Joins the dtypes of two elementwise operands: equal dtypes stay; fp32 absorbs a 16-bit one;
 * bf16 with fp16 is an error (reported by the caller). */
bool join_dtype(DType a, DType b, DType *out) {
    if (a == b) {
        *out = a;
        return true;
    }
    if (a == DT_FP32 || b == DT_FP32) {
        DType o = a == DT_FP32 ? b : a;
        if (o == DT_I32) return false;
        *out = DT_FP32;
        return true;
    }
    return false;
}


const char *left_out_why(Sema *s, const SemaKernel *sk) {
    return arena_printf(s->a, "kernel '%s' is left out of this build: its condition '%s' is false", sk->k->name,
                        ast_expr_str(s->a, sk->k->when));
}

SemaKernel *sema_kernel_named(SemaResult *out, const char *name) {
    for (int i = 0; i < out->kernels.n; i++)
        if (!strcmp(out->kernels.v[i]->k->name, name)) return out->kernels.v[i];
    return NULL;
}
