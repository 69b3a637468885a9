/* sema.c - semantic checks of a parsed .tk program (see sema.h and docs/language.md).
 * It resolves names, computes the type and shape of every expression, folds compile-time
 * integers, and enforces the memory-space and block rules of the LCSF template. It reports as
 * many independent errors as it can and marks failed subtrees TY_ERROR to avoid cascades. */
#include "sema.h"

#include <inttypes.h>
#include <stdint.h>
#include <math.h>
#include <string.h>

const char *const move_name[] = {
#define X(e, s, m) s,
    TK_MOVES(X)
#undef X
};

/* ---- scopes ---------------------------------------------------------------------------------- */

typedef struct Scope {
    Vec(Symbol *) syms;
    struct Scope *parent;
} Scope;

typedef struct Sema {
    Arena *a;
    Diag *d;
    Program *prog;
    Scope global;
    Scope *scope;
    SemaKernel *sk;
    bool in_block;
    BlockKind bk;
    bool kernel_let;        /* checking a kernel-level let: element reads of tensors allowed */
    bool matmul_ok;         /* the expression being checked may be a matrix product */
    bool at_ok;             /* the expression being checked is a tile (vector) index of a global move */
    Symbol *builtin[5];
    Vec(Symbol *) assigned; /* reg symbols assigned so far, in block order */
    Vec(Symbol *) g2s;      /* shared symbols loaded by TMA, with the block kind in g2s_bk */
    int depth;              /* expression nesting */
    int wg_branch;          /* inside an if whose condition depends on wg */
    bool too_deep;
    Vec(int) g2s_bk;
} Sema;

static Symbol *lookup_in(Scope *sc, const char *name) {
    for (; sc; sc = sc->parent)
        for (int i = sc->syms.n - 1; i >= 0; i--)
            if (!strcmp(sc->syms.v[i]->name, name)) return sc->syms.v[i];
    return NULL;
}

static Symbol *lookup(Sema *s, const char *name) { return lookup_in(s->scope, name); }

static Symbol *new_sym(Sema *s, SymKind k, const char *name, Span sp) {
    Symbol *y = ARENA_NEW(s->a, Symbol);
    y->kind = k;
    y->name = name;
    y->span = sp;
    return y;
}

static const char *symkind_desc(SymKind k) {
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

/* Names the generated CUDA uses for itself, or that C++ and CUDA reserve. */
static bool reserved_name(const char *n) {
    static const char *const words[] = {
        "alignas", "alignof", "and", "asm", "auto", "bool", "break", "case", "catch", "char", "class", "const",
        "constexpr", "continue", "default", "delete", "do", "double", "dynamic_cast", "enum", "explicit", "export",
        "extern", "false", "float", "friend", "goto", "inline", "int", "long", "mutable", "namespace", "new",
        "noexcept", "not", "nullptr", "operator", "or", "private", "protected", "public", "register", "return",
        "short", "signed", "sizeof", "static", "struct", "switch", "template", "this", "throw", "true", "try",
        "typedef", "typeid", "typename", "union", "unsigned", "using", "virtual", "void", "volatile", "while",
        "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "wg", "row", "col", "inf", "block",
        "min", "max", "abs", "fminf", "fmaxf", "fabsf", "expf", "exp2f", "logf", "log2f", "sqrtf", "rsqrtf",
        "tanhf", "int32_t", "uint32_t", "int64_t", "uint64_t", "uintptr_t", "size_t", "half", "nv_bfloat16"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (!strcmp(n, words[i])) return true;
    return !strncmp(n, "tkc_", 4) || !strncmp(n, "TKC_", 4) || !strncmp(n, "block_", 6) || !strncmp(n, "__", 2) ||
           !strncmp(n, "cuda", 4) || !strncmp(n, "CU", 2);
}

/* Declares y in the innermost scope; reports a redefinition in the same kernel or program. */
static bool declare(Sema *s, Symbol *y) {
    if (y->kind != SYM_BUILTIN && reserved_name(y->name)) {
        diag_error(s->d, y->span, "'%s' is reserved in the generated CUDA; choose another name", y->name);
        if (!lookup_in(s->scope, y->name) || lookup_in(s->scope, y->name)->kind == SYM_BUILTIN)
            vec_push(s->a, &s->scope->syms, y); /* declared anyway: its uses are not errors too */
        return false;
    }
    Symbol *old = lookup_in(s->scope, y->name);
    if (old && old->kind != SYM_BUILTIN) {
        diag_error(s->d, y->span, "redefinition of '%s'", y->name);
        diag_note(s->d, old->span, "'%s' was first defined here as a %s", y->name, symkind_desc(old->kind));
        return false;
    }
    vec_push(s->a, &s->scope->syms, y);
    return true;
}

static void push_scope(Sema *s, Scope *sc) {
    memset(sc, 0, sizeof *sc);
    sc->parent = s->scope;
    s->scope = sc;
}

static void pop_scope(Sema *s) { s->scope = s->scope->parent; }

/* the closest visible name, for "did you mean" */
static const char *suggest(Sema *s, const char *name) {
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

static Type ty_err(void) { return (Type){.kind = TY_ERROR}; }
static Type ty_int(void) { return (Type){.kind = TY_INT, .dt = DT_I32}; }
static Type ty_float(void) { return (Type){.kind = TY_FLOAT, .dt = DT_FP32}; }
static Type ty_bool(void) { return (Type){.kind = TY_BOOL}; }
static Type ty_tile(MemSpace sp, DType dt, int r, int c) {
    return (Type){.kind = TY_TILE, .space = sp, .dt = dt, .rows = r, .cols = c};
}
static Type ty_vec(MemSpace sp, DType dt, int n, VecLayout l) {
    return (Type){.kind = TY_VEC, .space = sp, .dt = dt, .rows = n, .layout = l};
}

static bool is_scalar(Type t) { return t.kind == TY_INT || t.kind == TY_FLOAT || t.kind == TY_BOOL; }
static bool is_numeric(Type t) { return t.kind == TY_INT || t.kind == TY_FLOAT; }
static bool is_intlike(Type t) { return t.kind == TY_INT || t.kind == TY_BOOL; }
static bool is_tv(Type t) { return t.kind == TY_TILE || t.kind == TY_VEC; }

static const char *type_str(Sema *s, Type t) {
    switch (t.kind) {
    case TY_ERROR: return "<error>";
    case TY_VOID: return "nothing";
    case TY_BOOL: return t.varying ? "per-element bool" : "bool";
    case TY_INT: return t.varying ? "per-element int" : "int";
    case TY_FLOAT: return t.varying ? "per-element float" : "float";
    case TY_TENSOR: return arena_printf(s->a, "global %s tensor of rank %d", dtype_name[t.dt], t.ndims);
    case TY_GRIDREF: return "the block coordinates";
    case TY_TILE:
        return arena_printf(s->a, "%s%s %s[%d, %d] tile%s", space_name[t.space], t.per_wg ? " per_wg" : "",
                            dtype_name[t.dt], t.rows, t.cols, t.complex ? " (complex)" : "");
    case TY_VEC:
        return arena_printf(s->a, "%s%s %s[%d]%s%s vector", space_name[t.space], t.per_wg ? " per_wg" : "",
                            dtype_name[t.dt], t.rows, t.layout ? " " : "", veclayout_name[t.layout]);
    }
    return "?";
}

static const char *shape_str(Sema *s, Type t) {
    if (t.kind == TY_TILE) return arena_printf(s->a, "[%d, %d]", t.rows, t.cols);
    if (t.kind == TY_VEC) return arena_printf(s->a, "[%d]", t.rows);
    return type_str(s, t);
}

/* Joins the dtypes of two elementwise operands: equal dtypes stay; fp32 absorbs a 16-bit one;
 * bf16 with fp16 is an error (reported by the caller). */
static bool join_dtype(DType a, DType b, DType *out) {
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

/* ---- expression checks ---------------------------------------------------------------------- */

static Type check_expr(Sema *s, Expr *e);

static Type set(Expr *e, Type t) {
    e->ty = t;
    return t;
}

static bool require_const_int(Sema *s, Expr *e, const char *what, int64_t *out) {
    Type t = check_expr(s, e);
    if (t.kind == TY_ERROR) return false;
    if (!is_intlike(t) || t.varying || !e->is_const) {
        diag_error(s->d, e->span, "%s must be a compile-time integer (made of literals and params)", what);
        return false;
    }
    if (t.kind == TY_BOOL) e->ty = ty_int(); /* a constant condition counts as 0 or 1 */
    *out = e->cval;
    return true;
}

static Type check_name(Sema *s, Expr *e) {
    Symbol *y = lookup(s, e->u.name);
    if (!y && s->sk) {
        for (int i = 0; i < s->sk->axes.n; i++)
            if (!strcmp(s->sk->axes.v[i]->name, e->u.name)) {
                diag_error(s->d, e->span, "'%s' is a grid axis; read its coordinate as block.%s", e->u.name, e->u.name);
                return set(e, ty_err());
            }
    }
    if (!y) {
        const char *sg = suggest(s, e->u.name);
        if (sg) diag_error(s->d, e->span, "unknown name '%s'; did you mean '%s'?", e->u.name, sg);
        else diag_error(s->d, e->span, "unknown name '%s'", e->u.name);
        return set(e, ty_err());
    }
    e->sym = y;
    y->used = true;
    switch (y->kind) {
    case SYM_PARAM:
        if (y->ty.kind == TY_ERROR) return set(e, ty_err()); /* its own error was reported */
        e->is_const = true;
        e->cval = y->cval;
        return set(e, ty_int());
    case SYM_DIM:
        if (y->is_const) {
            e->is_const = true;
            e->cval = y->cval;
        }
        return set(e, ty_int());
    case SYM_TENSOR:
    case SYM_SCALAR:
    case SYM_SHARED:
    case SYM_REG:
        return set(e, y->ty);
    case SYM_LET:
        if (y->ty.kind == TY_ERROR) return set(e, ty_err());
        e->is_const = y->is_const;
        e->cval = y->cval;
        e->fval = y->fval;
        return set(e, y->ty);
    case SYM_LOOPVAR:
        if (!s->in_block || !(s->bk == BK_LOAD || s->bk == BK_COMPUTE || s->bk == BK_STORE)) {
            diag_error(s->d, e->span,
                       "the pipeline variable '%s' exists only in the load, compute and store blocks", y->name);
            return set(e, ty_err());
        }
        return set(e, ty_int());
    case SYM_FORVAR:
        return set(e, ty_int());
    case SYM_AXIS:
        diag_error(s->d, e->span, "'%s' is a grid axis; read its coordinate as block.%s", y->name, y->name);
        return set(e, ty_err());
    case SYM_BUILTIN:
        switch ((Builtin)y->builtin) {
        case BI_BLOCK:
            return set(e, (Type){.kind = TY_GRIDREF});
        case BI_WG:
            if (!s->in_block || s->bk == BK_LOAD) {
                diag_error(s->d, e->span,
                           "'wg' (the consumer warpgroup index) exists only in consumer blocks "
                           "(setup, compute, store, finish)");
                return set(e, ty_err());
            }
            return set(e, ty_int());
        case BI_ROW:
        case BI_COL: {
            if (!s->in_block || s->bk == BK_LOAD) {
                diag_error(s->d, e->span, "'%s' is an element index and exists only in tile expressions", y->name);
                return set(e, ty_err());
            }
            Type t = ty_int();
            t.varying = y->builtin == BI_ROW ? VARY_ROW : VARY_COL;
            return set(e, t);
        }
        case BI_INF:
            e->is_const = true;
            e->fval = INFINITY;
            return set(e, ty_float());
        }
    }
    return set(e, ty_err());
}

static Type check_member(Sema *s, Expr *e) {
    Expr *base = e->u.member.base;
    Type bt = check_expr(s, base);
    if (bt.kind == TY_ERROR) return set(e, ty_err());
    if (bt.kind != TY_GRIDREF) {
        diag_error(s->d, e->u.member.field_span, "%s has no field '%s'", type_str(s, bt), e->u.member.field);
        return set(e, ty_err());
    }
    SemaKernel *sk = s->sk;
    for (int i = 0; i < sk->axes.n; i++)
        if (!strcmp(sk->axes.v[i]->name, e->u.member.field)) {
            e->sym = sk->axes.v[i]->sym;
            return set(e, ty_int());
        }
    if (!sk->axes.n) diag_error(s->d, e->u.member.field_span, "block.%s: the kernel has no grid axes", e->u.member.field);
    else {
        StrBuf b;
        sb_init(&b);
        for (int i = 0; i < sk->axes.n; i++) sb_printf(&b, "%sblock.%s", i ? ", " : "", sk->axes.v[i]->name);
        diag_error(s->d, e->u.member.field_span, "the grid has no axis '%s' (it has %s)", e->u.member.field, b.s);
        sb_free(&b);
    }
    return set(e, ty_err());
}

/* x.T: transposes a tile's view. Register tiles are accepted here; lowering decides which
 * uses the back end supports. */
static Type check_transpose(Sema *s, Expr *e) {
    Type t = check_expr(s, e->u.tr.base);
    if (t.kind == TY_ERROR) return set(e, ty_err());
    if (t.kind != TY_TILE) {
        diag_error(s->d, e->span, ".T transposes tiles; %s is not a tile", type_str(s, t));
        return set(e, ty_err());
    }
    Type r = t;
    r.rows = t.cols;
    r.cols = t.rows;
    return set(e, r);
}

/* slices of shared and register tiles and vectors: compile-time bounds, multiples of 16 */
static bool slice_bound(Sema *s, IndexArg *ia, int extent, int *lo, int *hi, bool *single) {
    int64_t l = 0, h = extent;
    *single = false;
    if (!ia->slice) {
        if (!require_const_int(s, ia->lo, "a tile index", &l)) return false;
        if (l < 0 || l >= extent) {
            diag_error(s->d, ia->span, "index %" PRId64 " is outside [0, %d)", l, extent);
            return false;
        }
        *lo = (int)l;
        *hi = (int)l + 1;
        *single = true;
        return true;
    }
    if (ia->lo && !require_const_int(s, ia->lo, "a slice bound", &l)) return false;
    if (ia->hi && !require_const_int(s, ia->hi, "a slice bound", &h)) return false;
    if (l < 0 || h > extent || l >= h) {
        diag_error(s->d, ia->span, "slice %" PRId64 ":%" PRId64 " is empty or outside [0, %d]", l, h, extent);
        return false;
    }
    if (l % 16 || h % 16) {
        diag_error(s->d, ia->span, "slice bounds must be multiples of 16 (tiles are made of 16x16 blocks); got %" PRId64 ":%" PRId64, l, h);
        return false;
    }
    *lo = (int)l;
    *hi = (int)h;
    return true;
}

/* X[i0, ..., in] of a global tensor: one integer index per dimension (slices are refused with
 * slice_msg); reports every bad index */
/* indices from at_from on may be at(e) (the tile or vector positions of a global move) */
static bool check_tensor_indices(Sema *s, Expr *ix, const Symbol *t, const char *slice_msg, int at_from) {
    int n = ix->u.index.nargs;
    bool ok = true;
    if (n != t->ty.ndims) {
        diag_error(s->d, ix->span, "'%s' has %d dimensions but %d indices were given", t->name, t->ty.ndims, n);
        ok = false;
    }
    for (int i = 0; i < n; i++) {
        IndexArg *ia = &ix->u.index.args[i];
        if (ia->slice) {
            diag_error(s->d, ia->span, "%s", slice_msg);
            ok = false;
            continue;
        }
        s->at_ok = i >= at_from && ia->lo->kind == EX_CALL && !strcmp(ia->lo->u.call.fn, "at");
        Type it = check_expr(s, ia->lo);
        s->at_ok = false;
        if (it.kind == TY_ERROR) ok = false;
        else if (it.kind != TY_INT || it.varying) {
            diag_error(s->d, ia->span, "an index must be an integer, not %s", type_str(s, it));
            ok = false;
        }
    }
    return ok;
}

static Type check_index(Sema *s, Expr *e) {
    Expr *base = e->u.index.base;
    Type bt = check_expr(s, base);
    if (bt.kind == TY_ERROR) return set(e, ty_err());
    int n = e->u.index.nargs;
    if (bt.kind == TY_TENSOR) {
        /* an element read: a scalar, allowed in kernel-level lets and in setup */
        if (!s->kernel_let && !(s->in_block && s->bk == BK_SETUP)) {
            if (s->in_block && s->bk == BK_COMPUTE)
                diag_error(s->d, base->span,
                           "global tensor '%s' cannot be used in a compute block; load it into a shared tile in "
                           "'load' (or read a scalar from it in a kernel-level 'let')",
                           base->sym ? base->sym->name : "?");
            else
                diag_error(s->d, e->span,
                           "a global tensor is read only by '<-' (a tile load) or, for single elements, in a "
                           "kernel-level 'let'");
            return set(e, ty_err());
        }
        if (!check_tensor_indices(s, e, base->sym, "slices of global tensors are not allowed; move a tile with '<-'", n))
            return set(e, ty_err());
        return set(e, bt.dt == DT_I32 ? ty_int() : ty_float());
    }
    if (bt.kind == TY_TILE) {
        if (n != 2) {
            diag_error(s->d, e->span, "a tile is sliced with two ranges, [rows, cols]; got %d", n);
            return set(e, ty_err());
        }
        int r0, r1, c0, c1;
        bool rs, cs;
        if (!slice_bound(s, &e->u.index.args[0], bt.rows, &r0, &r1, &rs) ||
            !slice_bound(s, &e->u.index.args[1], bt.cols, &c0, &c1, &cs))
            return set(e, ty_err());
        if (rs && cs) {
            diag_error(s->d, e->span, "single elements of tiles cannot be used; slice a sub-tile instead");
            return set(e, ty_err());
        }
        if (rs || cs) {
            if (bt.space != MS_REG) {
                diag_error(s->d, e->span, "a single row or column can be taken only from a register tile");
                return set(e, ty_err());
            }
            /* x[:, i] is column i, one value per row: a per_row vector (and x[i, :] a per_col one) */
            Type v = cs ? ty_vec(MS_REG, bt.dt, r1 - r0, VL_ROW) : ty_vec(MS_REG, bt.dt, c1 - c0, VL_COL);
            v.per_wg = bt.per_wg;
            return set(e, v);
        }
        Type t = bt;
        t.rows = r1 - r0;
        t.cols = c1 - c0;
        return set(e, t);
    }
    if (bt.kind == TY_VEC) {
        if (n != 1) {
            diag_error(s->d, e->span, "a vector is sliced with one range; got %d", n);
            return set(e, ty_err());
        }
        int l, h;
        bool single;
        if (!slice_bound(s, &e->u.index.args[0], bt.rows, &l, &h, &single)) return set(e, ty_err());
        if (single) {
            diag_error(s->d, e->span, "single elements of vectors cannot be used; slice a sub-vector instead");
            return set(e, ty_err());
        }
        Type t = bt;
        t.rows = h - l;
        return set(e, t);
    }
    diag_error(s->d, e->span, "%s cannot be indexed", type_str(s, bt));
    return set(e, ty_err());
}

/* elementwise combination of two operand types (arithmetic, min/max, where) */
static Type broadcast(Sema *s, Type a, Type b, Span sa, Span sb, Span whole) {
    if (a.kind == TY_ERROR || b.kind == TY_ERROR) return ty_err();
    if (a.kind == TY_BOOL) a.kind = TY_INT;
    if (b.kind == TY_BOOL) b.kind = TY_INT;
    Type *ops[2] = {&a, &b};
    Span sp[2] = {sa, sb};
    for (int i = 0; i < 2; i++) {
        Type *t = ops[i];
        if (t->kind == TY_TENSOR) {
            diag_error(s->d, sp[i], "a global tensor cannot be used in arithmetic; move a tile with '<-' first");
            return ty_err();
        }
        if (t->kind == TY_GRIDREF) {
            diag_error(s->d, sp[i], "'block' is not a value; use block.<axis>");
            return ty_err();
        }
        if (is_tv(*t) && t->space == MS_SHARED) {
            diag_error(s->d, sp[i],
                       "a shared %s cannot be used in arithmetic; load it into registers first (reg <- shared)",
                       t->kind == TY_TILE ? "tile" : "vector");
            return ty_err();
        }
        if (t->kind == TY_VOID) {
            diag_error(s->d, sp[i], "this expression has no value");
            return ty_err();
        }
    }
    if (is_scalar(a) && is_scalar(b)) {
        Type r = (a.kind == TY_FLOAT || b.kind == TY_FLOAT) ? ty_float() : ty_int();
        r.varying = a.varying | b.varying;
        return r;
    }
    /* at least one tile or vector */
    if (is_tv(a) && is_tv(b)) {
        if (a.per_wg != b.per_wg) {
            diag_error(s->d, whole, "cannot combine a per_wg register value with a row-split one (%s and %s)",
                       type_str(s, a), type_str(s, b));
            return ty_err();
        }
        if (a.complex != b.complex) {
            diag_error(s->d, whole, "cannot combine complex and real tiles; use complex(re, im) or real(x)");
            return ty_err();
        }
        DType dt;
        if (!join_dtype(a.dt, b.dt, &dt)) {
            diag_error(s->d, whole, "dtype mismatch: %s and %s; convert one side explicitly (e.g. %s(x))",
                       dtype_name[a.dt], dtype_name[b.dt], dtype_name[DT_FP32]);
            return ty_err();
        }
        if (a.kind == TY_TILE && b.kind == TY_TILE) {
            if (a.rows != b.rows || a.cols != b.cols) {
                diag_error(s->d, whole, "shape mismatch: %s and %s", shape_str(s, a), shape_str(s, b));
                return ty_err();
            }
            a.dt = dt;
            return a;
        }
        if (a.kind == TY_VEC && b.kind == TY_VEC) {
            if (a.layout == b.layout) {
                if (a.rows != b.rows) {
                    diag_error(s->d, whole, "length mismatch: vectors of %d and %d", a.rows, b.rows);
                    return ty_err();
                }
                a.dt = dt;
                return a;
            }
            /* per_row (+) per_col: the outer combination, a tile */
            Type row = a.layout == VL_ROW ? a : b, col = a.layout == VL_ROW ? b : a;
            Type t = ty_tile(MS_REG, dt, row.rows, col.rows);
            t.per_wg = a.per_wg;
            return t;
        }
        Type t = a.kind == TY_TILE ? a : b, v = a.kind == TY_TILE ? b : a;
        Span vs = a.kind == TY_TILE ? sb : sa;
        if (v.layout == VL_ROW && v.rows != t.rows) {
            diag_error(s->d, vs, "a per_row vector of length %d does not match the %d rows of the %s tile", v.rows,
                       t.rows, shape_str(s, t));
            return ty_err();
        }
        if (v.layout == VL_COL && v.rows != t.cols) {
            diag_error(s->d, vs, "a per_col vector of length %d does not match the %d columns of the %s tile",
                       v.rows, t.cols, shape_str(s, t));
            return ty_err();
        }
        t.dt = dt;
        return t;
    }
    Type tv = is_tv(a) ? a : b, sc = is_tv(a) ? b : a;
    if (tv.kind == TY_VEC && sc.varying) {
        int need = tv.layout == VL_ROW ? VARY_ROW : VARY_COL;
        if (sc.varying & ~need) {
            Type t = tv.layout == VL_ROW ? ty_tile(MS_REG, tv.dt, tv.rows, 0) : ty_tile(MS_REG, tv.dt, 0, tv.rows);
            (void)t;
            diag_error(s->d, whole,
                       "a %s vector combined with '%s' would need a tile; assign the expression to a tile",
                       veclayout_name[tv.layout], tv.layout == VL_ROW ? "col" : "row");
            return ty_err();
        }
    }
    return tv;
}

static Type check_matmul(Sema *s, Expr *e);

static Type check_binary(Sema *s, Expr *e) {
    BinOp op = e->u.bin.op;
    if (op == BIN_MATMUL) return check_matmul(s, e);
    bool mm = s->matmul_ok;
    s->matmul_ok = false;
    Type l = check_expr(s, e->u.bin.l), r = check_expr(s, e->u.bin.r);
    s->matmul_ok = mm;
    if (l.kind == TY_ERROR || r.kind == TY_ERROR) return set(e, ty_err());
    Expr *L = e->u.bin.l, *R = e->u.bin.r;
    switch (op) {
    case BIN_OR:
    case BIN_AND: {
        if (!is_intlike(l) || !is_intlike(r)) {
            diag_error(s->d, e->u.bin.op_span, "'%s' needs integer or bool operands, not %s and %s", binop_name[op],
                       type_str(s, l), type_str(s, r));
            return set(e, ty_err());
        }
        Type t = ty_bool();
        t.varying = l.varying | r.varying;
        if (L->is_const && R->is_const) {
            e->is_const = true;
            e->cval = op == BIN_OR ? (L->cval || R->cval) : (L->cval && R->cval);
        } else if (op == BIN_AND && ((L->is_const && !L->cval) || (R->is_const && !R->cval))) {
            e->is_const = true; /* false && x */
            e->cval = 0;
        }
        return set(e, t);
    }
    case BIN_EQ: case BIN_NE: case BIN_LT: case BIN_LE: case BIN_GT: case BIN_GE: {
        if (!is_scalar(l) || !is_scalar(r)) {
            diag_error(s->d, e->u.bin.op_span,
                       "comparisons take scalars (use where(cond, a, b) for tiles), not %s and %s", type_str(s, l),
                       type_str(s, r));
            return set(e, ty_err());
        }
        Type t = ty_bool();
        t.varying = l.varying | r.varying;
        if (L->is_const && R->is_const && l.kind != TY_FLOAT && r.kind != TY_FLOAT) {
            int64_t a = L->cval, b = R->cval, v = 0;
            switch (op) {
            case BIN_EQ: v = a == b; break;
            case BIN_NE: v = a != b; break;
            case BIN_LT: v = a < b; break;
            case BIN_LE: v = a <= b; break;
            case BIN_GT: v = a > b; break;
            default: v = a >= b; break;
            }
            e->is_const = true;
            e->cval = v;
        }
        return set(e, t);
    }
    case BIN_MOD:
        if (l.kind != TY_INT || r.kind != TY_INT) {
            diag_error(s->d, e->u.bin.op_span, "'%%' takes integers, not %s and %s", type_str(s, l), type_str(s, r));
            return set(e, ty_err());
        }
        /* fall through */
    case BIN_ADD: case BIN_SUB: case BIN_MUL: case BIN_DIV: {
        Type t = broadcast(s, l, r, L->span, R->span, e->span);
        if (t.kind == TY_ERROR) return set(e, t);
        if (t.kind == TY_INT && (op == BIN_DIV || op == BIN_MOD) && R->is_const && R->cval == 0) {
            diag_error(s->d, R->span, "division by zero: the divisor is always 0");
            return set(e, ty_err());
        }
        if (t.kind == TY_INT && L->is_const && R->is_const) {
            int64_t a = L->cval, b = R->cval, v = 0;
            bool over = false;
            switch (op) {
            case BIN_ADD: over = __builtin_add_overflow(a, b, &v); break;
            case BIN_SUB: over = __builtin_sub_overflow(a, b, &v); break;
            case BIN_MUL: over = __builtin_mul_overflow(a, b, &v); break;
            case BIN_DIV: over = a == INT64_MIN && b == -1; v = over ? 0 : a / b; break;
            default: over = a == INT64_MIN && b == -1; v = over ? 0 : a % b; break;
            }
            if (over || v > INT32_MAX || v < INT32_MIN) {
                diag_error(s->d, e->span, "this constant does not fit in 32 bits");
                return set(e, ty_err());
            }
            e->is_const = true;
            e->cval = v;
        } else if (t.kind == TY_FLOAT && L->is_const && R->is_const) {
            double a = l.kind == TY_FLOAT ? L->fval : (double)L->cval;
            double b = r.kind == TY_FLOAT ? R->fval : (double)R->cval;
            e->is_const = true;
            e->fval = op == BIN_ADD ? a + b : op == BIN_SUB ? a - b : op == BIN_MUL ? a * b : a / b;
        }
        return set(e, t);
    }
    default:
        break;
    }
    return set(e, ty_err());
}

/* Is e usable as a wgmma operand from shared memory: a shared tile, its transpose, a slice of
 * it, or prev() of it? */
static bool is_shared_operand(const Expr *e) {
    return e->ty.kind == TY_TILE && e->ty.space == MS_SHARED;
}

static Type check_matmul(Sema *s, Expr *e) {
    if (!s->matmul_ok) {
        diag_error(s->d, e->u.bin.op_span,
                   "a matrix product must be the whole right-hand side of an assignment to a register tile "
                   "(acc = a @ b or acc += a @ b)");
        s->matmul_ok = false;
        check_expr(s, e->u.bin.l);
        check_expr(s, e->u.bin.r);
        return set(e, ty_err());
    }
    s->matmul_ok = false;
    Type a = check_expr(s, e->u.bin.l), b = check_expr(s, e->u.bin.r);
    if (a.kind == TY_ERROR || b.kind == TY_ERROR) return set(e, ty_err());
    bool ok = true;
    if (a.kind != TY_TILE) {
        diag_error(s->d, e->u.bin.l->span, "the left operand of '@' must be a tile, not %s", type_str(s, a));
        ok = false;
    }
    if (b.kind != TY_TILE) {
        diag_error(s->d, e->u.bin.r->span, "the right operand of '@' must be a tile, not %s", type_str(s, b));
        ok = false;
    }
    if (!ok) return set(e, ty_err());
    if (!is_shared_operand(e->u.bin.r)) {
        diag_error(s->d, e->u.bin.r->span,
                   "the right operand of '@' must be in shared memory (wgmma reads B from shared memory); "
                   "move the register tile to a shared tile with '<-' first");
        ok = false;
    }
    if (a.space == MS_REG && e->u.bin.l->kind == EX_TRANSPOSE) {
        diag_error(s->d, e->u.bin.l->span,
                   "a register operand of '@' cannot be transposed (wgmma takes register A operands K-major)");
        ok = false;
    }
    if (a.dt != b.dt || (a.dt != DT_BF16 && a.dt != DT_FP16)) {
        if (a.dt != b.dt)
            diag_error(s->d, e->u.bin.op_span, "dtype mismatch in '@': %s and %s (both operands must be bf16 or both fp16)",
                       dtype_name[a.dt], dtype_name[b.dt]);
        else
            diag_error(s->d, e->u.bin.op_span,
                       "'@' multiplies bf16 or fp16 tiles on the tensor cores; convert the operands with bf16(x)");
        ok = false;
    }
    if (a.cols != b.rows) {
        diag_error(s->d, e->u.bin.op_span, "inner dimensions of '@' differ: %s @ %s (%d != %d)", shape_str(s, a),
                   shape_str(s, b), a.cols, b.rows);
        ok = false;
    }
    if (a.complex != b.complex) {
        diag_error(s->d, e->u.bin.op_span, "'@' of a complex and a real tile; both must be complex or both real");
        ok = false;
    }
    if (!ok) return set(e, ty_err());
    Type r = ty_tile(MS_REG, DT_FP32, a.rows, b.cols);
    r.per_wg = a.space == MS_REG && a.per_wg;
    r.complex = a.complex;
    return set(e, r);
}

static bool check_args(Sema *s, Expr *e, int want) {
    int n = e->u.call.nargs;
    if (want >= 0 && n != want) {
        diag_error(s->d, e->span, "%s() takes %d argument%s, %d given", e->u.call.fn, want, want == 1 ? "" : "s", n);
        for (int i = 0; i < n; i++) check_expr(s, e->u.call.args[i]);
        return false;
    }
    return true;
}

static Type unary_math(Sema *s, Expr *e, Type t) {
    if (t.kind == TY_INT || t.kind == TY_BOOL) {
        Type f = ty_float();
        f.varying = t.varying;
        return f;
    }
    if (t.kind == TY_FLOAT) return t;
    if (is_tv(t)) {
        if (t.space != MS_REG) {
            diag_error(s->d, e->u.call.args[0]->span, "%s() works on register values; %s is in shared memory",
                       e->u.call.fn, type_str(s, t));
            return ty_err();
        }
        return t;
    }
    diag_error(s->d, e->u.call.args[0]->span, "%s() takes a number or a register tile, not %s", e->u.call.fn,
               type_str(s, t));
    return ty_err();
}

static Type check_call(Sema *s, Expr *e) {
    e->fn = FN_NONE;
    for (int i = 0; i < FN_COUNT; i++)
        if (!strcmp(e->u.call.fn, intrinsic_name[i])) e->fn = i;
    if (e->fn == FN_NONE) {
        const char *best = NULL;
        int bestd = 3;
        for (int i = 0; i < FN_COUNT; i++) {
            int dd = edit_distance(e->u.call.fn, intrinsic_name[i]);
            if (dd < bestd) {
                bestd = dd;
                best = intrinsic_name[i];
            }
        }
        if (best) diag_error(s->d, e->u.call.fn_span, "unknown function '%s'; did you mean '%s'?", e->u.call.fn, best);
        else diag_error(s->d, e->u.call.fn_span, "unknown function '%s'", e->u.call.fn);
        for (int i = 0; i < e->u.call.nargs; i++) check_expr(s, e->u.call.args[i]);
        return set(e, ty_err());
    }
    Intrinsic fn = (Intrinsic)e->fn;
    int arity = intrinsic_arity[fn];
    if (fn == FN_TRIL || fn == FN_TRIU) {
        if (e->u.call.nargs != 2 && e->u.call.nargs != 3) {
            diag_error(s->d, e->span, "%s() takes 2 or 3 arguments (tile, diagonal[, fill]), %d given",
                       e->u.call.fn, e->u.call.nargs);
            return set(e, ty_err());
        }
    } else if (!check_args(s, e, arity)) {
        return set(e, ty_err());
    }
    if (fn == FN_AT && !s->at_ok) {
        diag_error(s->d, e->span, "at() is a tile or vector index of a global move (T[..., at(row), col] <- ...), where "
                                  "it gives the first element instead of the tile number");
        s->at_ok = false;
        for (int i = 0; i < e->u.call.nargs; i++) check_expr(s, e->u.call.args[i]);
        return set(e, ty_err());
    }
    s->at_ok = false;
    bool mm = s->matmul_ok;
    s->matmul_ok = false;
    Type at[3] = {ty_err(), ty_err(), ty_err()};
    bool bad = false;
    for (int i = 0; i < e->u.call.nargs && i < 3; i++) {
        at[i] = check_expr(s, e->u.call.args[i]);
        if (at[i].kind == TY_ERROR) bad = true;
    }
    s->matmul_ok = mm;
    if (bad) return set(e, ty_err());
    Expr **A = e->u.call.args;
    switch (fn) {
    case FN_AT:
        if (at[0].kind != TY_INT || at[0].varying) {
            diag_error(s->d, A[0]->span, "at() takes an integer element index, not %s", type_str(s, at[0]));
            return set(e, ty_err());
        }
        return set(e, ty_int());
    case FN_CDIV:
    case FN_MIN:
    case FN_MAX: {
        if (at[0].kind == TY_INT && at[1].kind == TY_INT && !at[0].varying && !at[1].varying) {
            if (A[0]->is_const && A[1]->is_const) {
                int64_t a = A[0]->cval, b = A[1]->cval;
                if (fn == FN_CDIV && b <= 0) {
                    diag_error(s->d, A[1]->span, "cdiv() by %" PRId64 "; the divisor must be positive", b);
                    return set(e, ty_err());
                }
                e->is_const = true;
                e->cval = fn == FN_CDIV ? cdiv64(a, b) : fn == FN_MIN ? (a < b ? a : b) : (a > b ? a : b);
            }
            return set(e, ty_int());
        }
        if (fn == FN_CDIV) {
            diag_error(s->d, e->span, "cdiv() takes integers, not %s and %s", type_str(s, at[0]), type_str(s, at[1]));
            return set(e, ty_err());
        }
        Type t = broadcast(s, at[0], at[1], A[0]->span, A[1]->span, e->span);
        if (t.kind == TY_INT) t = ty_float(), t.varying = at[0].varying | at[1].varying;
        if (t.kind == TY_FLOAT && A[0]->is_const && A[1]->is_const) {
            double a = at[0].kind == TY_FLOAT ? A[0]->fval : (double)A[0]->cval;
            double b = at[1].kind == TY_FLOAT ? A[1]->fval : (double)A[1]->cval;
            e->is_const = true;
            e->fval = fn == FN_MIN ? fmin(a, b) : fmax(a, b);
        }
        return set(e, t);
    }
    case FN_EXP: case FN_EXP2: case FN_LOG: case FN_LOG2: case FN_SQRT: case FN_RSQRT: case FN_ABS: case FN_TANH: {
        Type t = unary_math(s, e, at[0]);
        if (t.kind == TY_FLOAT && A[0]->is_const) {
            double x = at[0].kind == TY_FLOAT ? A[0]->fval : (double)A[0]->cval;
            double v = 0;
            switch (fn) {
            case FN_EXP: v = exp(x); break;
            case FN_EXP2: v = exp2(x); break;
            case FN_LOG: v = log(x); break;
            case FN_LOG2: v = log2(x); break;
            case FN_SQRT: v = sqrt(x); break;
            case FN_RSQRT: v = 1.0 / sqrt(x); break;
            case FN_ABS: v = fabs(x); break;
            default: v = tanh(x); break;
            }
            e->is_const = true;
            e->fval = v;
        }
        return set(e, t);
    }
    case FN_ROWMAX: case FN_ROWMIN: case FN_ROWSUM: case FN_COLMAX: case FN_COLMIN: case FN_COLSUM: {
        Type t = at[0];
        if (t.kind != TY_TILE || t.space != MS_REG) {
            diag_error(s->d, A[0]->span, "%s() reduces a register tile, not %s", e->u.call.fn, type_str(s, t));
            return set(e, ty_err());
        }
        bool rows = fn == FN_ROWMAX || fn == FN_ROWMIN || fn == FN_ROWSUM;
        Type v = ty_vec(MS_REG, DT_FP32, rows ? t.rows : t.cols, rows ? VL_ROW : VL_COL);
        v.per_wg = t.per_wg;
        return set(e, v);
    }
    case FN_CUMSUM:
        if (at[0].kind != TY_VEC) {
            diag_error(s->d, A[0]->span, "cumsum() takes a vector, not %s", type_str(s, at[0]));
            return set(e, ty_err());
        }
        return set(e, at[0]);
    case FN_WHERE: {
        if (!is_intlike(at[0])) {
            diag_error(s->d, A[0]->span, "the condition of where() must be a comparison or integer, not %s",
                       type_str(s, at[0]));
            return set(e, ty_err());
        }
        Type t = broadcast(s, at[1], at[2], A[1]->span, A[2]->span, e->span);
        if (t.kind == TY_ERROR) return set(e, t);
        if (is_scalar(t)) {
            if (t.kind == TY_INT && (at[1].kind == TY_FLOAT || at[2].kind == TY_FLOAT)) t = ty_float();
            t.varying |= at[0].varying | at[1].varying | at[2].varying;
        } else if (t.kind == TY_VEC && at[0].varying) {
            int need = t.layout == VL_ROW ? VARY_ROW : VARY_COL;
            if (at[0].varying & ~need) {
                diag_error(s->d, A[0]->span, "this condition varies along the %s, but a %s vector has one value per %s",
                           t.layout == VL_ROW ? "columns" : "rows", veclayout_name[t.layout],
                           t.layout == VL_ROW ? "row" : "column");
                return set(e, ty_err());
            }
        }
        return set(e, t);
    }
    case FN_TRIL:
    case FN_TRIU: {
        if (at[0].kind != TY_TILE || at[0].space != MS_REG) {
            diag_error(s->d, A[0]->span, "%s() masks a register tile, not %s", e->u.call.fn, type_str(s, at[0]));
            return set(e, ty_err());
        }
        if (at[1].kind != TY_INT || at[1].varying) {
            diag_error(s->d, A[1]->span, "the diagonal offset of %s() must be an integer, not %s", e->u.call.fn,
                       type_str(s, at[1]));
            return set(e, ty_err());
        }
        if (e->u.call.nargs == 3 && !(is_numeric(at[2]) && !at[2].varying)) {
            diag_error(s->d, A[2]->span, "the fill value of %s() must be a number, not %s", e->u.call.fn,
                       type_str(s, at[2]));
            return set(e, ty_err());
        }
        return set(e, at[0]);
    }
    case FN_BF16: case FN_FP16: case FN_FP32: case FN_I32: {
        DType to = fn == FN_BF16 ? DT_BF16 : fn == FN_FP16 ? DT_FP16 : fn == FN_FP32 ? DT_FP32 : DT_I32;
        Type t = at[0];
        if (is_scalar(t)) {
            Type r = to == DT_I32 ? ty_int() : ty_float();
            r.varying = t.varying;
            if (A[0]->is_const) {
                e->is_const = true;
                double x = t.kind == TY_FLOAT ? A[0]->fval : (double)A[0]->cval;
                if (to == DT_I32) e->cval = (int64_t)x;
                else e->fval = x;
            }
            return set(e, r);
        }
        if (!is_tv(t) || t.space != MS_REG) {
            diag_error(s->d, A[0]->span, "%s() converts register tiles, vectors and scalars, not %s", e->u.call.fn,
                       type_str(s, t));
            return set(e, ty_err());
        }
        if (to == DT_I32) {
            diag_error(s->d, e->span, "tiles cannot be converted to i32");
            return set(e, ty_err());
        }
        t.dt = to;
        return set(e, t);
    }
    case FN_RAND: {
        if (!is_numeric(at[0]) || !is_numeric(at[1]) || at[0].varying || at[1].varying) {
            diag_error(s->d, e->span, "rand(seed, offset) takes two integers");
            return set(e, ty_err());
        }
        Type t = ty_float();
        t.varying = VARY_ROW | VARY_COL;
        return set(e, t);
    }
    case FN_PREV: {
        Expr *x = A[0];
        if (x->kind != EX_NAME || at[0].kind != TY_TILE || at[0].space != MS_SHARED) {
            diag_error(s->d, x->span, "prev() takes the name of a shared tile that the load block fills");
            return set(e, ty_err());
        }
        if (!s->in_block || (s->bk != BK_COMPUTE && s->bk != BK_STORE)) {
            diag_error(s->d, e->span, "prev() exists only in compute and store blocks");
            return set(e, ty_err());
        }
        bool ring = false;
        for (int i = 0; i < s->g2s.n; i++) ring |= s->g2s.v[i] == x->sym && s->g2s_bk.v[i] == BK_LOAD;
        if (!ring) {
            diag_error(s->d, x->span, "prev(%s): '%s' is not filled by the load block, so there is no previous step's copy",
                       x->sym->name, x->sym->name);
            return set(e, ty_err());
        }
        if (s->sk->stages < 2) {
            diag_error(s->d, e->span, "prev() needs at least 2 pipeline stages: the previous step's copy must still be "
                                      "in the ring");
            return set(e, ty_err());
        }
        return set(e, at[0]);
    }
    case FN_REAL:
    case FN_IMAG:
        if (!is_tv(at[0]) || !at[0].complex) {
            diag_error(s->d, A[0]->span, "%s() takes a complex tile, not %s", e->u.call.fn, type_str(s, at[0]));
            return set(e, ty_err());
        }
        at[0].complex = false;
        return set(e, at[0]);
    case FN_COMPLEX: {
        if (at[0].complex || at[1].complex || !is_tv(at[0])) {
            diag_error(s->d, e->span, "complex(re, im) takes two real register tiles");
            return set(e, ty_err());
        }
        Type t = broadcast(s, at[0], at[1], A[0]->span, A[1]->span, e->span);
        if (t.kind == TY_ERROR) return set(e, t);
        t.complex = true;
        return set(e, t);
    }
    case FN_SYNC:
        diag_error(s->d, e->span, "sync() is a statement (sync();), not a value");
        return set(e, ty_err());
    default:
        break;
    }
    return set(e, ty_err());
}

static Type check_expr_(Sema *s, Expr *e);

/* deeply nested expressions are refused before they exhaust the stack of a recursive walk */
enum { MAX_EXPR_DEPTH = 200 };

static Type check_expr(Sema *s, Expr *e) {
    if (s->depth >= MAX_EXPR_DEPTH) {
        if (!s->too_deep) diag_error(s->d, e->span, "expression nested more than %d levels deep", MAX_EXPR_DEPTH);
        s->too_deep = true;
        return set(e, ty_err());
    }
    s->depth++;
    Type t = check_expr_(s, e);
    s->depth--;
    return t;
}

static Type check_expr_(Sema *s, Expr *e) {
    switch (e->kind) {
    case EX_INT:
        e->is_const = true;
        e->cval = e->u.ival;
        return set(e, ty_int());
    case EX_FLOAT:
        e->is_const = true;
        e->fval = e->u.fval;
        return set(e, ty_float());
    case EX_NAME: return check_name(s, e);
    case EX_MEMBER: return check_member(s, e);
    case EX_TRANSPOSE: return check_transpose(s, e);
    case EX_INDEX: return check_index(s, e);
    case EX_CALL: return check_call(s, e);
    case EX_BINARY: return check_binary(s, e);
    case EX_UNARY: {
        bool mm = s->matmul_ok;
        s->matmul_ok = false;
        Type t = check_expr(s, e->u.un.e);
        s->matmul_ok = mm;
        if (t.kind == TY_ERROR) return set(e, t);
        if (e->u.un.op == UN_NOT) {
            if (!is_intlike(t)) {
                diag_error(s->d, e->span, "'!' needs an integer or bool, not %s", type_str(s, t));
                return set(e, ty_err());
            }
            if (e->u.un.e->is_const) {
                e->is_const = true;
                e->cval = !e->u.un.e->cval;
            }
            Type b = ty_bool();
            b.varying = t.varying;
            return set(e, b);
        }
        if (!is_numeric(t) && !(is_tv(t) && t.space == MS_REG)) {
            diag_error(s->d, e->span, "'-' needs a number or a register tile, not %s", type_str(s, t));
            return set(e, ty_err());
        }
        if (e->u.un.e->is_const) {
            e->is_const = true;
            e->cval = -e->u.un.e->cval;
            e->fval = -e->u.un.e->fval;
        }
        return set(e, t);
    }
    case EX_COND: {
        Type c = check_expr(s, e->u.cond.c);
        Type a = check_expr(s, e->u.cond.a);
        Type b = check_expr(s, e->u.cond.b);
        if (c.kind == TY_ERROR || a.kind == TY_ERROR || b.kind == TY_ERROR) return set(e, ty_err());
        if (!is_intlike(c) || c.varying) {
            diag_error(s->d, e->u.cond.c->span,
                       "the condition of '?:' must be a uniform integer or bool (use where() per element)");
            return set(e, ty_err());
        }
        if (!is_scalar(a) || !is_scalar(b) || a.varying || b.varying) {
            diag_error(s->d, e->span, "'?:' chooses between scalars; use where(cond, a, b) for tiles");
            return set(e, ty_err());
        }
        Type t = (a.kind == TY_FLOAT || b.kind == TY_FLOAT) ? ty_float() : ty_int();
        if (e->u.cond.c->is_const) {
            Expr *pick = e->u.cond.c->cval ? e->u.cond.a : e->u.cond.b;
            if (pick->is_const) {
                e->is_const = true;
                e->cval = pick->cval;
                e->fval = pick->kind == EX_INT || pick->ty.kind == TY_INT ? (double)pick->cval : pick->fval;
            }
        }
        return set(e, t);
    }
    }
    return set(e, ty_err());
}

/* does e mention sym; with lets, also through the initialisers of the lets it names? */
static bool mentions(const Expr *e, const Symbol *sym, bool lets) {
    if (!e) return false;
    switch (e->kind) {
    case EX_NAME:
        return e->sym == sym ||
               (lets && e->sym && e->sym->kind == SYM_LET && e->sym->init && mentions(e->sym->init, sym, lets));
    case EX_MEMBER: return e->sym == sym || mentions(e->u.member.base, sym, lets);
    case EX_TRANSPOSE: return mentions(e->u.tr.base, sym, lets);
    case EX_INDEX:
        if (mentions(e->u.index.base, sym, lets)) return true;
        for (int i = 0; i < e->u.index.nargs; i++)
            if (mentions(e->u.index.args[i].lo, sym, lets) || mentions(e->u.index.args[i].hi, sym, lets)) return true;
        return false;
    case EX_CALL:
        for (int i = 0; i < e->u.call.nargs; i++)
            if (mentions(e->u.call.args[i], sym, lets)) return true;
        return false;
    case EX_BINARY: return mentions(e->u.bin.l, sym, lets) || mentions(e->u.bin.r, sym, lets);
    case EX_UNARY: return mentions(e->u.un.e, sym, lets);
    case EX_COND:
        /* a value depends only on the branch a compile-time condition takes */
        if (lets && e->u.cond.c->is_const) return mentions(e->u.cond.c->cval ? e->u.cond.a : e->u.cond.b, sym, lets);
        return mentions(e->u.cond.c, sym, lets) || mentions(e->u.cond.a, sym, lets) || mentions(e->u.cond.b, sym, lets);
    default: return false;
    }
}

bool expr_mentions(const Expr *e, const Symbol *sym) { return mentions(e, sym, false); }
bool expr_depends_on(const Expr *e, const Symbol *sym) { return mentions(e, sym, true); }

/* ---- statements ----------------------------------------------------------------------------- */

static bool is_assigned(Sema *s, Symbol *y) {
    for (int i = 0; i < s->assigned.n; i++)
        if (s->assigned.v[i] == y) return true;
    return false;
}

static void mark_assigned(Sema *s, Symbol *y) {
    if (y && !is_assigned(s, y)) vec_push(s->a, &s->assigned, y);
}

/* reports register tiles read before any assignment (in block order: setup, compute, store,
 * finish); each symbol once */
static void check_reads(Sema *s, Expr *e) {
    if (!e) return;
    switch (e->kind) {
    case EX_NAME:
        if (e->sym && e->sym->kind == SYM_REG && !is_assigned(s, e->sym)) {
            diag_error(s->d, e->span,
                       "register tile '%s' is read before it is assigned; initialise it in setup (e.g. '%s = 0;')",
                       e->sym->name, e->sym->name);
            mark_assigned(s, e->sym);
        }
        return;
    case EX_MEMBER: check_reads(s, e->u.member.base); return;
    case EX_TRANSPOSE: check_reads(s, e->u.tr.base); return;
    case EX_INDEX:
        check_reads(s, e->u.index.base);
        for (int i = 0; i < e->u.index.nargs; i++) {
            check_reads(s, e->u.index.args[i].lo);
            check_reads(s, e->u.index.args[i].hi);
        }
        return;
    case EX_CALL:
        for (int i = 0; i < e->u.call.nargs; i++) check_reads(s, e->u.call.args[i]);
        return;
    case EX_BINARY: check_reads(s, e->u.bin.l); check_reads(s, e->u.bin.r); return;
    case EX_UNARY: check_reads(s, e->u.un.e); return;
    case EX_COND: check_reads(s, e->u.cond.c); check_reads(s, e->u.cond.a); check_reads(s, e->u.cond.b); return;
    default: return;
    }
}

static Symbol *tensor_of(Sema *s, Expr *e) {
    if (e->kind != EX_INDEX || e->u.index.base->kind != EX_NAME) return NULL;
    Symbol *y = lookup(s, e->u.index.base->u.name);
    return y && y->kind == SYM_TENSOR ? y : NULL;
}

/* The root symbol of an lvalue-ish expression (name, slice of a name, transpose of a name). */
static Symbol *root_sym(Expr *e) {
    while (e) {
        if (e->kind == EX_NAME) return e->sym;
        if (e->kind == EX_INDEX) e = e->u.index.base;
        else if (e->kind == EX_TRANSPOSE) e = e->u.tr.base;
        else return NULL;
    }
    return NULL;
}

/* Checks a tile or vector access X[i0, ..., in] of a global tensor that moves `moved` (the
 * type on the other side of '<-' or '+='). The last two indices of a tile access (the last
 * one of a vector access) count in units of the moved shape. */
static bool check_global_access(Sema *s, Expr *ix, Symbol *t, Type moved, bool write, Span stmt_span) {
    Expr *base = ix->u.index.base;
    base->sym = t;
    t->used = true;
    base->ty = t->ty;
    ix->ty = t->ty;
    int n = ix->u.index.nargs;
    int need = moved.kind == TY_TILE ? 2 : 1;
    if (!check_tensor_indices(s, ix, t, "global tiles are addressed by tile index, not by slice", n - need) ||
        moved.kind == TY_ERROR)
        return false;
    Arg *arg = s->sk->args.v[t->index];
    if (write && arg->mode == ARG_IN) {
        diag_error(s->d, base->span, "'%s' is an 'in' tensor and cannot be written; declare it 'out' or 'inout'", t->name);
        diag_note(s->d, arg->span, "'%s' is declared here", t->name);
        return false;
    }
    if (!write && arg->mode == ARG_OUT) {
        diag_error(s->d, base->span, "'%s' is an 'out' tensor and cannot be read; declare it 'in' or 'inout'", t->name);
        diag_note(s->d, arg->span, "'%s' is declared here", t->name);
        return false;
    }
    if (n < need) {
        diag_error(s->d, ix->span, "a %s moves along the last %d dimension%s, but '%s' has only %d",
                   moved.kind == TY_TILE ? "tile" : "vector", need, need > 1 ? "s" : "", t->name, n);
        return false;
    }
    if (moved.dt != t->ty.dt) {
        diag_error(s->d, stmt_span, "dtype mismatch: '%s' holds %s but the %s is %s%s", t->name, dtype_name[t->ty.dt],
                   moved.kind == TY_TILE ? "tile" : "vector", dtype_name[moved.dt],
                   write ? arena_printf(s->a, "; convert it with %s(...)", dtype_name[t->ty.dt]) : "");
        return false;
    }
    if (moved.complex) {
        diag_error(s->d, stmt_span, "complex tiles move to global memory as two real tiles: real(x) and imag(x)");
        return false;
    }
    /* TMA: rows of the contiguous dimension must be 16-byte multiples; boxes at most 256 */
    Expr *inner = arg->ts.dims[arg->ts.ndims - 1];
    if (inner->is_const && (inner->cval * dtype_bytes[t->ty.dt]) % 16 && need == 2) {
        diag_error(s->d, inner->span,
                   "TMA needs 16-byte aligned rows: the last dimension of '%s' is %" PRId64 " x %d B = %" PRId64
                   " B, not a multiple of 16",
                   t->name, inner->cval, dtype_bytes[t->ty.dt], inner->cval * dtype_bytes[t->ty.dt]);
        return false;
    }
    if (moved.kind == TY_TILE && moved.rows > 256) {
        diag_error(s->d, stmt_span,
                   "TMA box limit: a tile moved by TMA has at most 256 rows, this one has %d; use a smaller tile "
                   "or two moves",
                   moved.rows);
        return false;
    }
    return true;
}

static bool in_consumer_block(Sema *s) { return s->in_block && s->bk != BK_LOAD; }

static void check_stmts(Sema *s, StmtList *l);

/* an assignment target that sema accepts for =, +=, -=, *=, /= : a register tile or vector,
 * or a column slice of a register tile */
static bool check_reg_lvalue(Sema *s, Expr *L, Type lt, AssignOp op) {
    if (lt.kind == TY_ERROR) return false;
    Symbol *root = root_sym(L);
    if (root && root->kind == SYM_SHARED) {
        diag_error(s->d, L->span, "shared tile '%s' is written with '<-' (from registers or global memory), not '%s'",
                   root->name, assignop_name[op]);
        return false;
    }
    if (root && (root->kind == SYM_LET || root->kind == SYM_PARAM || root->kind == SYM_DIM || root->kind == SYM_SCALAR ||
                 root->kind == SYM_LOOPVAR || root->kind == SYM_FORVAR)) {
        diag_error(s->d, L->span, "'%s' is a %s and cannot be assigned", root->name, symkind_desc(root->kind));
        return false;
    }
    if (!root || root->kind != SYM_REG || L->kind == EX_TRANSPOSE || !is_tv(lt)) {
        diag_error(s->d, L->span, "the left side of '%s' must be a register tile or vector", assignop_name[op]);
        return false;
    }
    if (!in_consumer_block(s)) {
        diag_error(s->d, L->span, "register tiles live in the consumer warpgroups; the load block runs on the producer");
        return false;
    }
    return true;
}

/* value assigned into a register destination: same shape (or a scalar fill, or a vector
 * broadcast into a tile) and same dtype */
static bool check_value_fits(Sema *s, Type lt, Type rt, Expr *R, Span op_span) {
    if (rt.kind == TY_ERROR) return false;
    if (is_scalar(rt)) {
        if (rt.kind == TY_BOOL) {
            diag_error(s->d, R->span, "cannot assign a condition to a tile; use where(cond, a, b)");
            return false;
        }
        if (rt.varying && lt.kind == TY_VEC) {
            int need = lt.layout == VL_ROW ? VARY_ROW : VARY_COL;
            if (rt.varying & ~need) {
                diag_error(s->d, R->span, "this value varies along both tile dimensions and cannot fill a vector");
                return false;
            }
        }
        return true; /* fill or per-element function */
    }
    if (!is_tv(rt)) {
        diag_error(s->d, R->span, "cannot assign %s to a register %s", type_str(s, rt),
                   lt.kind == TY_TILE ? "tile" : "vector");
        return false;
    }
    if (rt.space == MS_SHARED) {
        diag_error(s->d, op_span, "reading a shared %s into registers is a move: write 'x <- shared'",
                   rt.kind == TY_TILE ? "tile" : "vector");
        return false;
    }
    if (lt.kind == TY_TILE && rt.kind == TY_VEC) {
        bool fits = (rt.layout == VL_ROW && rt.rows == lt.rows) || (rt.layout == VL_COL && rt.rows == lt.cols);
        if (!fits) {
            diag_error(s->d, R->span, "cannot broadcast a %s vector of %d into a %s tile", veclayout_name[rt.layout],
                       rt.rows, shape_str(s, lt));
            return false;
        }
    } else if (lt.kind != rt.kind || lt.rows != rt.rows || (lt.kind == TY_TILE && lt.cols != rt.cols)) {
        diag_error(s->d, op_span, "shape mismatch: assigning %s to %s", shape_str(s, rt), shape_str(s, lt));
        return false;
    } else if (lt.kind == TY_VEC && lt.layout != rt.layout && lt.layout && rt.layout) {
        /* a layout change between per_row and per_col vectors is allowed (through shared memory) */
    }
    if (lt.dt != rt.dt) {
        diag_error(s->d, op_span, "dtype mismatch: assigning %s to a %s %s; convert explicitly with %s(...)",
                   dtype_name[rt.dt], dtype_name[lt.dt], lt.kind == TY_TILE ? "tile" : "vector", dtype_name[lt.dt]);
        return false;
    }
    if (lt.per_wg != rt.per_wg && rt.kind == lt.kind) {
        diag_error(s->d, op_span, "cannot assign a %s value to a %s register tile", rt.per_wg ? "per_wg" : "row-split",
                   lt.per_wg ? "per_wg" : "row-split");
        return false;
    }
    if (lt.complex != rt.complex) {
        diag_error(s->d, op_span, "cannot assign a %s value to a %s tile", rt.complex ? "complex" : "real",
                   lt.complex ? "complex" : "real");
        return false;
    }
    return true;
}

static void check_move(Sema *s, Stmt *st) {
    Expr *L = st->u.assign.lhs, *R = st->u.assign.rhs;
    Symbol *lt_t = tensor_of(s, L), *rt_t = tensor_of(s, R);
    BlockKind bk = s->bk;
    if (lt_t && rt_t) {
        diag_error(s->d, st->u.assign.op_span, "'<-' between two global tensors; move through a shared tile");
        return;
    }
    if (rt_t) { /* a load: shared <- global, or reg vector <- global */
        Type lt = check_expr(s, L);
        if (lt.kind == TY_ERROR) return;
        if (!is_tv(lt)) {
            diag_error(s->d, L->span, "the destination of a load must be a shared tile or vector, not %s", type_str(s, lt));
            return;
        }
        if (L->kind != EX_NAME) {
            diag_error(s->d, L->span, "a load fills a whole shared tile; name the tile, not a slice of it");
            return;
        }
        if (lt.space == MS_REG) {
            if (lt.kind == TY_TILE) {
                diag_error(s->d, st->u.assign.op_span,
                           "register tiles cannot be loaded from global memory; load into a shared tile and then "
                           "move it to registers (reg <- shared)");
                return;
            }
            st->mv = MV_G2R;
            if (bk != BK_SETUP && bk != BK_FINISH) {
                diag_error(s->d, st->u.assign.op_span, "a vector load from global memory into registers belongs in setup or finish");
                return;
            }
            mark_assigned(s, L->sym);
        } else {
            st->mv = MV_G2S;
            if (bk != BK_LOAD && bk != BK_SETUP) {
                diag_error(s->d, st->u.assign.op_span,
                           "tile loads from global memory (shared <- global) belong in the load or setup block%s",
                           bk == BK_COMPUTE ? "; compute works on tiles that are already in shared memory" : "");
                return;
            }
            for (int i = 0; i < s->g2s.n; i++)
                if (s->g2s.v[i] == L->sym && s->g2s_bk.v[i] != (int)bk) {
                    diag_error(s->d, L->span,
                               "shared tile '%s' is loaded in both setup and load; a tile is either a ring buffer "
                               "(load) or loaded once per work tile (setup)",
                               L->sym->name);
                    return;
                }
            vec_push(s->a, &s->g2s, L->sym);
            vec_push(s->a, &s->g2s_bk, (int)bk);
        }
        check_global_access(s, R, rt_t, lt, false, st->span);
        return;
    }
    if (lt_t) { /* a store: global <- shared or register value */
        Type rt = check_expr(s, R);
        if (rt.kind == TY_ERROR) return;
        check_reads(s, R);
        if (!is_tv(rt)) {
            diag_error(s->d, R->span, "only tiles and vectors can be stored to global memory, not %s", type_str(s, rt));
            return;
        }
        st->mv = rt.space == MS_SHARED ? MV_S2G : MV_R2G;
        if (bk != BK_STORE && bk != BK_FINISH) {
            diag_error(s->d, st->u.assign.op_span, "stores to global memory belong in the store or finish block");
            return;
        }
        check_global_access(s, L, lt_t, rt, true, st->span);
        return;
    }
    if (L->kind == EX_NAME && lookup(s, L->u.name) && lookup(s, L->u.name)->kind == SYM_TENSOR) {
        diag_error(s->d, L->span, "index the tensor: %s[...] <- tile", L->u.name);
        return;
    }
    if (R->kind == EX_NAME && lookup(s, R->u.name) && lookup(s, R->u.name)->kind == SYM_TENSOR) {
        diag_error(s->d, R->span, "index the tensor: tile <- %s[...]", R->u.name);
        return;
    }
    Type lt = check_expr(s, L);
    Type rt = check_expr(s, R);
    if (lt.kind == TY_ERROR || rt.kind == TY_ERROR) return;
    if (!in_consumer_block(s)) {
        diag_error(s->d, st->u.assign.op_span,
                   "the load block runs on the producer and only moves global tiles into shared memory");
        return;
    }
    if (!is_tv(lt) || !is_tv(rt)) {
        diag_error(s->d, st->u.assign.op_span, "'<-' moves tiles or vectors, not %s", type_str(s, is_tv(lt) ? rt : lt));
        return;
    }
    if (lt.space == MS_SHARED && rt.space == MS_REG) {
        st->mv = MV_R2S;
        check_reads(s, R);
    } else if (lt.space == MS_REG && rt.space == MS_SHARED) {
        st->mv = MV_S2R;
        if (L->kind != EX_NAME && L->kind != EX_INDEX) {
            diag_error(s->d, L->span, "the destination of a move must be a tile or a slice of one");
            return;
        }
        mark_assigned(s, root_sym(L));
    } else {
        diag_error(s->d, st->u.assign.op_span, "'<-' moves between memory spaces; both sides are %s%s",
                   space_name[lt.space], lt.space == MS_REG ? " (use '=')" : "");
        return;
    }
    Type a = lt, b = rt;
    if (a.kind != b.kind || a.rows != b.rows || (a.kind == TY_TILE && a.cols != b.cols)) {
        diag_error(s->d, st->u.assign.op_span, "shape mismatch: moving %s into %s", shape_str(s, rt), shape_str(s, lt));
        return;
    }
    if (a.dt != b.dt) {
        if (rt.space == MS_SHARED)
            diag_error(s->d, st->u.assign.op_span,
                       "dtype mismatch: moving %s into %s; a move does not convert: declare the register tile %s, then "
                       "convert it in registers",
                       dtype_name[b.dt], dtype_name[a.dt], dtype_name[b.dt]);
        else
            diag_error(s->d, st->u.assign.op_span, "dtype mismatch: moving %s into %s; convert with %s(...)",
                       dtype_name[b.dt], dtype_name[a.dt], dtype_name[a.dt]);
        return;
    }
}

static void check_assign(Sema *s, Stmt *st) {
    AssignOp op = st->u.assign.op;
    Expr *L = st->u.assign.lhs, *R = st->u.assign.rhs;
    if (op == AS_MOVE) {
        check_move(s, st);
        return;
    }
    Symbol *gt = tensor_of(s, L);
    if (gt) {
        if (op != AS_ADD) {
            diag_error(s->d, st->u.assign.op_span,
                       "global tensors are written with '<-' (store) or '+=' (atomic add), not '%s'", assignop_name[op]);
            return;
        }
        Type rt = check_expr(s, R);
        if (rt.kind == TY_ERROR) return;
        check_reads(s, R);
        if (!is_tv(rt)) {
            diag_error(s->d, R->span, "atomic add takes a tile or vector, not %s", type_str(s, rt));
            return;
        }
        st->mv = rt.space == MS_SHARED ? MV_ADD_S2G : MV_ADD_R2G;
        if (s->bk != BK_STORE && s->bk != BK_FINISH) {
            diag_error(s->d, st->u.assign.op_span, "atomic adds to global memory belong in the store or finish block");
            return;
        }
        if (rt.dt != DT_FP32 && rt.dt != DT_BF16 && rt.dt != DT_FP16) {
            diag_error(s->d, R->span, "atomic add takes fp32, bf16 or fp16 values");
            return;
        }
        check_global_access(s, L, gt, rt, true, st->span);
        return;
    }
    if (L->kind == EX_NAME && lookup(s, L->u.name) && lookup(s, L->u.name)->kind == SYM_TENSOR) {
        diag_error(s->d, L->span, "global tensors are written with '<-' (store) or '+=' (atomic add), and indexed: %s[...]",
                   L->u.name);
        return;
    }
    Type lt = check_expr(s, L);
    bool lok = check_reg_lvalue(s, L, lt, op);
    s->matmul_ok = (op == AS_SET || op == AS_ADD || op == AS_SUB);
    Type rt = check_expr(s, R);
    s->matmul_ok = false;
    if (!lok || rt.kind == TY_ERROR) return;
    bool is_mm = R->kind == EX_BINARY && R->u.bin.op == BIN_MATMUL;
    if (is_mm) {
        if (lt.kind != TY_TILE || lt.dt != DT_FP32) {
            diag_error(s->d, L->span, "a matrix product accumulates in fp32; '%s' is %s", root_sym(L)->name, type_str(s, lt));
            return;
        }
        if (L->kind != EX_NAME) {
            diag_error(s->d, L->span, "a matrix product writes a whole register tile, not a slice");
            return;
        }
        if (lt.rows != rt.rows || lt.cols != rt.cols) {
            diag_error(s->d, st->u.assign.op_span, "shape mismatch: %s @ %s gives %s but '%s' is %s",
                       shape_str(s, R->u.bin.l->ty), shape_str(s, R->u.bin.r->ty), shape_str(s, rt), root_sym(L)->name,
                       shape_str(s, lt));
            return;
        }
        if (lt.per_wg != rt.per_wg && R->u.bin.l->ty.space == MS_REG) {
            diag_error(s->d, st->u.assign.op_span, "cannot mix per_wg and row-split register tiles in '@'");
            return;
        }
        if (lt.complex != rt.complex) {
            diag_error(s->d, st->u.assign.op_span, "complex product into a real tile, or the reverse");
            return;
        }
    } else if (!check_value_fits(s, lt, rt, R, st->u.assign.op_span)) {
        return;
    }
    check_reads(s, R);
    if (op != AS_SET) check_reads(s, L);
    Symbol *root = root_sym(L);
    if (op == AS_SET && L->kind == EX_NAME) mark_assigned(s, root);
    else if (op == AS_SET) check_reads(s, L); /* a slice assignment keeps the rest of the tile */
}

static void check_stmt(Sema *s, Stmt *st) {
    switch (st->kind) {
    case ST_ASSIGN:
        check_assign(s, st);
        return;
    case ST_EXPR: {
        Expr *e = st->u.expr.e;
        if (e->kind == EX_CALL && !strcmp(e->u.call.fn, "sync")) {
            e->fn = FN_SYNC;
            e->ty = (Type){.kind = TY_VOID};
            if (e->u.call.nargs) diag_error(s->d, e->span, "sync() takes no arguments");
            else if (!in_consumer_block(s) || s->bk == BK_SETUP)
                diag_error(s->d, e->span, "sync() synchronises the consumer warpgroups; use it in compute, store or finish");
            else if (s->wg_branch)
                diag_error(s->d, e->span,
                           "sync() under a condition on wg: every consumer warpgroup must reach it, or they deadlock");
            return;
        }
        check_expr(s, e);
        diag_error(s->d, e->span, "this expression does nothing; assign it ('x = ...') or move it ('x <- ...')");
        return;
    }
    case ST_LET: {
        Type t = check_expr(s, st->u.let.e);
        Symbol *y = new_sym(s, SYM_LET, st->u.let.name, st->u.let.name_span);
        y->init = st->u.let.e;
        st->u.let.sym = y;
        if (t.kind != TY_ERROR) {
            if (t.kind == TY_TENSOR || t.kind == TY_GRIDREF || t.kind == TY_VOID || t.varying ||
                (is_tv(t) && t.space == MS_SHARED)) {
                diag_error(s->d, st->u.let.e->span, "a let names a scalar or a register value, not %s", type_str(s, t));
                t = ty_err();
            } else if (is_tv(t) && !in_consumer_block(s)) {
                diag_error(s->d, st->u.let.e->span, "register values exist only in consumer blocks");
                t = ty_err();
            } else if (st->u.let.e->kind == EX_BINARY && st->u.let.e->u.bin.op == BIN_MATMUL) {
                t = ty_err();
            }
            check_reads(s, st->u.let.e);
        }
        y->ty = t;
        y->is_const = st->u.let.e->is_const;
        y->cval = st->u.let.e->cval;
        y->fval = st->u.let.e->fval;
        declare(s, y);
        return;
    }
    case ST_IF: {
        Type c = check_expr(s, st->u.if_.cond);
        if (c.kind != TY_ERROR && (!is_intlike(c) || c.varying))
            diag_error(s->d, st->u.if_.cond->span,
                       "an if condition must be a uniform integer or bool (for per-element choices use where())");
        int saved = s->wg_branch;
        if (expr_mentions(st->u.if_.cond, s->builtin[BI_WG])) s->wg_branch++;
        Scope sc;
        push_scope(s, &sc);
        check_stmts(s, &st->u.if_.then_s);
        pop_scope(s);
        if (st->u.if_.has_else) {
            Scope sc2;
            push_scope(s, &sc2);
            check_stmts(s, &st->u.if_.else_s);
            pop_scope(s);
        }
        s->wg_branch = saved;
        return;
    }
    case ST_FOR: {
        Type lo = check_expr(s, st->u.for_.lo), hi = check_expr(s, st->u.for_.hi);
        if (lo.kind != TY_ERROR && (lo.kind != TY_INT || lo.varying))
            diag_error(s->d, st->u.for_.lo->span, "a loop bound must be an integer, not %s", type_str(s, lo));
        if (hi.kind != TY_ERROR && (hi.kind != TY_INT || hi.varying))
            diag_error(s->d, st->u.for_.hi->span, "a loop bound must be an integer, not %s", type_str(s, hi));
        Scope sc;
        push_scope(s, &sc);
        Symbol *y = new_sym(s, SYM_FORVAR, st->u.for_.var, st->u.for_.var_span);
        y->ty = ty_int();
        st->u.for_.sym = y;
        declare(s, y);
        check_stmts(s, &st->u.for_.body);
        pop_scope(s);
        return;
    }
    }
}

static void check_stmts(Sema *s, StmtList *l) {
    for (int i = 0; i < l->n; i++) check_stmt(s, l->v[i]);
}

/* ---- kernels -------------------------------------------------------------------------------- */

static bool check_typespec_dims(Sema *s, TypeSpec *ts, int *dims, int maxd, const char *what) {
    if (ts->ndims < 1 || ts->ndims > maxd) {
        diag_error(s->d, ts->span, "a %s has 1 or %d dimensions, not %d", what, maxd, ts->ndims);
        return false;
    }
    bool ok = true;
    for (int i = 0; i < ts->ndims; i++) {
        int64_t v;
        if (!require_const_int(s, ts->dims[i], "a tile dimension", &v)) {
            ok = false;
            continue;
        }
        if (v <= 0 || v % 16) {
            diag_error(s->d, ts->dims[i]->span, "tile dimensions must be positive multiples of 16; got %" PRId64, v);
            ok = false;
            continue;
        }
        if (v > 4096) {
            diag_error(s->d, ts->dims[i]->span, "tile dimension %" PRId64 " is larger than any block can hold", v);
            ok = false;
            continue;
        }
        dims[i] = (int)v;
    }
    return ok;
}

static void check_decl(Sema *s, Decl *d) {
    SemaKernel *sk = s->sk;
    Symbol *y = new_sym(s, d->space == MS_SHARED ? SYM_SHARED : SYM_REG, d->name, d->span);
    d->sym = y;
    y->ty = ty_err();
    declare(s, y);
    int dims[2] = {0, 0};
    if (!check_typespec_dims(s, &d->ts, dims, 2, d->space == MS_SHARED ? "shared tile" : "register tile")) return;
    if (d->ts.dt == DT_I32) {
        diag_error(s->d, d->ts.span, "tiles hold bf16, fp16 or fp32 values, not i32");
        return;
    }
    VecLayout layout = VL_NONE;
    bool per_wg = false, cplx = false;
    for (int i = 0; i < d->ts.nattrs; i++) {
        const char *at = d->ts.attrs[i];
        if ((!strcmp(at, "per_row") && layout == VL_COL) || (!strcmp(at, "per_col") && layout == VL_ROW)) {
            diag_error(s->d, d->ts.attr_spans[i], "a vector is either per_row or per_col, not both");
            return;
        }
        if (!strcmp(at, "per_row")) layout = VL_ROW;
        else if (!strcmp(at, "per_col")) layout = VL_COL;
        else if (!strcmp(at, "per_wg")) per_wg = true;
        else if (!strcmp(at, "complex")) cplx = true;
        else {
            diag_error(s->d, d->ts.attr_spans[i], "unknown attribute '%s' (expected per_row, per_col, per_wg or complex)", at);
            return;
        }
    }
    if (d->space == MS_SHARED && (per_wg || layout != VL_NONE)) {
        diag_error(s->d, d->ts.span, "per_row, per_col and per_wg describe register values; shared tiles are whole");
        return;
    }
    if (d->ts.ndims == 1) {
        if (d->space == MS_REG && layout == VL_NONE) {
            diag_error(s->d, d->ts.span,
                       "a register vector needs a layout: 'per_row' (one value per tile row) or 'per_col'");
            return;
        }
        y->ty = ty_vec(d->space, d->ts.dt, dims[0], layout);
    } else {
        if (layout != VL_NONE) {
            diag_error(s->d, d->ts.span, "per_row and per_col apply to vectors (one dimension)");
            return;
        }
        y->ty = ty_tile(d->space, d->ts.dt, dims[0], dims[1]);
    }
    y->ty.per_wg = per_wg;
    y->ty.complex = cplx;
    if (d->space == MS_SHARED) {
        y->index = sk->shared.n;
        vec_push(s->a, &sk->shared, y);
    } else {
        y->index = sk->regs.n;
        vec_push(s->a, &sk->regs, y);
    }
}

static void check_args_of(Sema *s, Kernel *k) {
    SemaKernel *sk = s->sk;
    for (int i = 0; i < k->nargs; i++) {
        Arg *a = &k->args[i];
        vec_push(s->a, &sk->args, a);
        TypeSpec *ts = &a->ts;
        if (ts->ndims == 0) {
            Symbol *y = new_sym(s, SYM_SCALAR, a->name, a->span);
            a->sym = y;
            y->index = sk->scalars.n;
            if (a->mode != ARG_IN) diag_error(s->d, a->span, "scalar argument '%s' must be 'in'", a->name);
            if (ts->dt != DT_FP32 && ts->dt != DT_I32)
                diag_error(s->d, ts->span, "scalar arguments are fp32 or i32, not %s", dtype_name[ts->dt]);
            y->ty = ts->dt == DT_I32 ? ty_int() : ty_float();
            vec_push(s->a, &sk->scalars, y);
            declare(s, y);
            continue;
        }
        Symbol *y = new_sym(s, SYM_TENSOR, a->name, a->span);
        a->sym = y;
        y->index = i;
        y->ty = (Type){.kind = TY_TENSOR, .dt = ts->dt, .space = MS_GLOBAL, .ndims = ts->ndims};
        if (ts->ndims > 4) diag_error(s->d, ts->span, "tensors have at most 4 dimensions; '%s' has %d", a->name, ts->ndims);
        for (int j = 0; j < ts->nattrs; j++) {
            if (!strcmp(ts->attrs[j], "zeroed")) {
                if (a->mode == ARG_IN) diag_error(s->d, ts->attr_spans[j], "'zeroed' applies to out and inout tensors");
            } else {
                diag_error(s->d, ts->attr_spans[j], "unknown tensor attribute '%s' (expected 'zeroed')", ts->attrs[j]);
            }
        }
        for (int j = 0; j < ts->ndims; j++) {
            Expr *de = ts->dims[j];
            if (de->kind == EX_NAME) {
                Symbol *old = lookup(s, de->u.name);
                if (old && old->kind == SYM_PARAM) {
                    check_expr(s, de);
                    if (de->cval <= 0) diag_error(s->d, de->span, "dimension %s = %" PRId64 " must be positive", de->u.name, de->cval);
                    continue;
                }
                if (old && old->kind == SYM_DIM) {
                    de->sym = old;
                    de->ty = ty_int();
                    continue;
                }
                if (old) {
                    diag_error(s->d, de->span, "'%s' is a %s, not a dimension", de->u.name, symkind_desc(old->kind));
                    continue;
                }
                Symbol *dm = new_sym(s, SYM_DIM, de->u.name, de->span);
                dm->ty = ty_int();
                dm->index = sk->dims.n;
                de->sym = dm;
                de->ty = ty_int();
                vec_push(s->a, &sk->dims, dm);
                declare(s, dm);
            } else {
                int64_t v;
                if (require_const_int(s, de, "a tensor dimension", &v) && v <= 0)
                    diag_error(s->d, de->span, "dimension %" PRId64 " must be positive", v);
            }
        }
        vec_push(s->a, &sk->tensors, y);
        declare(s, y);
    }
}

static bool opt_int(Sema *s, Option *o, int64_t lo, int64_t hi, int64_t *out, const char *what) {
    if (!o->value) {
        /* a bare name turns an on/off option on; every other option needs its value */
        *out = 1;
        if (lo != 0 || hi != 1) {
            diag_error(s->d, o->span, "option '%s' needs a value (%s = ...)", o->key, o->key);
            return false;
        }
        return true;
    }
    int64_t v;
    if (!require_const_int(s, o->value, what, &v)) return false;
    if (v < lo || v > hi) {
        diag_error(s->d, o->value->span, "%s = %" PRId64 " is out of range [%" PRId64 ", %" PRId64 "]", o->key, v, lo, hi);
        return false;
    }
    *out = v;
    return true;
}

static void unknown_option(Sema *s, Option *o, const char *const *known, int n, const char *where) {
    const char *best = NULL;
    int bestd = 3;
    for (int i = 0; i < n; i++) {
        int dd = edit_distance(o->key, known[i]);
        if (dd < bestd) bestd = dd, best = known[i];
    }
    if (best) diag_error(s->d, o->key_span, "unknown %s option '%s'; did you mean '%s'?", where, o->key, best);
    else diag_error(s->d, o->key_span, "unknown %s option '%s'", where, o->key);
}

static void check_grid(Sema *s, KItem *it) {
    SemaKernel *sk = s->sk;
    if (sk->grid) {
        diag_error(s->d, it->span, "a kernel has one grid statement");
        diag_note(s->d, sk->grid->span, "the first one is here");
        return;
    }
    sk->grid = it;
    if (it->u.grid.naxes > 3) diag_error(s->d, it->span, "a grid has at most 3 axes, this one has %d", it->u.grid.naxes);
    for (int i = 0; i < it->u.grid.naxes; i++) {
        Axis *ax = &it->u.grid.axes[i];
        for (int j = 0; j < i; j++)
            if (!strcmp(it->u.grid.axes[j].name, ax->name)) diag_error(s->d, ax->span, "grid axis '%s' appears twice", ax->name);
        if (!strcmp(ax->name, "T"))
            diag_error(s->d, ax->span, "a grid axis cannot be named 'T': block.T would read as a transpose");
        Type t = check_expr(s, ax->extent);
        if (t.kind != TY_ERROR && (t.kind != TY_INT || t.varying))
            diag_error(s->d, ax->extent->span, "a grid extent must be an integer, not %s", type_str(s, t));
        if (ax->extent->is_const && ax->extent->cval <= 0)
            diag_error(s->d, ax->extent->span, "a grid extent must be positive, not %" PRId64, ax->extent->cval);
    }
    static const char *const known[] = {"persistent", "order", "cluster"};
    for (int i = 0; i < it->u.grid.opts.n; i++) {
        Option *o = &it->u.grid.opts.v[i];
        if (!strcmp(o->key, "persistent")) {
            int64_t v;
            if (opt_int(s, o, 0, 1, &v, "persistent")) sk->persistent = v;
        } else if (!strcmp(o->key, "cluster")) {
            int64_t v;
            if (opt_int(s, o, 1, 2, &v, "the cluster size")) sk->cluster = (int)v;
            sk->cluster_span = o->span;
        } else if (!strcmp(o->key, "order")) {
            Expr *v = o->value;
            if (!v) {
                diag_error(s->d, o->span, "order needs a value: row_major, super_m(G) or super_n(G)");
                continue;
            }
            if (v->kind == EX_NAME && !strcmp(v->u.name, "row_major")) {
                sk->order = ORDER_ROW_MAJOR;
            } else if (v->kind == EX_CALL && (!strcmp(v->u.call.fn, "super_m") || !strcmp(v->u.call.fn, "super_n")) &&
                       v->u.call.nargs == 1) {
                int64_t g;
                if (require_const_int(s, v->u.call.args[0], "the group size of super_m/super_n", &g)) {
                    if (g < 1 || g > 64) diag_error(s->d, v->u.call.args[0]->span, "group size %" PRId64 " is out of range [1, 64]", g);
                    sk->order = v->u.call.fn[6] == 'm' ? ORDER_SUPER_M : ORDER_SUPER_N;
                    sk->order_group = (int)g;
                }
            } else {
                diag_error(s->d, v->span, "unknown block order; expected row_major, super_m(G) or super_n(G)");
            }
        } else {
            unknown_option(s, o, known, (int)(sizeof known / sizeof known[0]), "grid");
        }
    }
    if (sk->order != ORDER_ROW_MAJOR && it->u.grid.naxes < 2)
        diag_error(s->d, it->span, "super_m/super_n orders need a grid of at least two axes");
    /* a folded axis pairs neighbouring work tiles: it must vary fastest, in row-major order */
    for (int i = 0; i < it->u.grid.naxes; i++) {
        Axis *ax = &it->u.grid.axes[i];
        if (!ax->folded) continue;
        if (i != it->u.grid.naxes - 1)
            diag_error(s->d, ax->mod_span, "only the last grid axis (the one that varies fastest) can be folded, not '%s'",
                       ax->name);
        else if (sk->order != ORDER_ROW_MAJOR)
            diag_error(s->d, ax->mod_span, "a folded axis needs the row_major order: super_m/super_n walk '%s' in strips",
                       ax->name);
        else if (sk->cluster > 1)
            sk->cluster_axis = i;  /* a cluster takes the pair of tiles the fold puts together */
    }
}

static void check_pipeline(Sema *s, KItem *it) {
    SemaKernel *sk = s->sk;
    if (sk->pipe) {
        diag_error(s->d, it->span, "a kernel has one pipeline statement");
        diag_note(s->d, sk->pipe->span, "the first one is here");
        return;
    }
    sk->pipe = it;
    Type t = check_expr(s, it->u.pipe.trips);
    if (t.kind != TY_ERROR && (t.kind != TY_INT || t.varying))
        diag_error(s->d, it->u.pipe.trips->span, "the pipeline's trip count must be an integer, not %s", type_str(s, t));
    Symbol *y = new_sym(s, SYM_LOOPVAR, it->u.pipe.var, it->u.pipe.var_span);
    y->ty = ty_int();
    it->u.pipe.sym = y;
    sk->loopvar = y;
    declare(s, y);
    static const char *const known[] = {"stages",        "consumers",     "overlap", "pingpong", "lookahead",
                                        "producer_regs", "consumer_regs", "staging",  "setup_stages", "narrow_tail"};
    for (int i = 0; i < it->u.pipe.opts.n; i++) {
        Option *o = &it->u.pipe.opts.v[i];
        int64_t v;
        if (!strcmp(o->key, "stages")) {
            sk->stages_span = o->span;
            if (opt_int(s, o, 1, 8, &v, "the number of pipeline stages")) sk->stages = (int)v;
        } else if (!strcmp(o->key, "consumers")) {
            sk->consumers_span = o->span;
            if (opt_int(s, o, 1, 3, &v, "the number of consumer warpgroups")) sk->consumers = (int)v;
        } else if (!strcmp(o->key, "overlap")) {
            if (opt_int(s, o, 0, 1, &v, "overlap")) sk->overlap = v;
        } else if (!strcmp(o->key, "pingpong")) {
            if (opt_int(s, o, 0, 1, &v, "pingpong")) sk->pingpong = v;
        } else if (!strcmp(o->key, "lookahead")) {
            if (opt_int(s, o, 0, 1, &v, "lookahead")) sk->lookahead = v;
        } else if (!strcmp(o->key, "staging")) {
            if (opt_int(s, o, 0, 1, &v, "staging")) sk->staging = v;
        } else if (!strcmp(o->key, "narrow_tail")) {
            if (opt_int(s, o, 0, 1, &v, "narrow_tail")) sk->narrow_tail = v;
        } else if (!strcmp(o->key, "setup_stages")) {
            if (opt_int(s, o, 1, 2, &v, "setup_stages (copies of the setup tiles)")) sk->setup_stages = (int)v;
        } else if (!strcmp(o->key, "producer_regs") || !strcmp(o->key, "consumer_regs")) {
            sk->regs_span = o->span;
            if (opt_int(s, o, 24, 256, &v, "a register count")) {
                if (v % 8) diag_error(s->d, o->value->span, "setmaxnreg takes multiples of 8; %s = %" PRId64, o->key, v);
                else if (o->key[0] == 'p') sk->producer_regs = (int)v;
                else sk->consumer_regs = (int)v;
            }
        } else {
            unknown_option(s, o, known, (int)(sizeof known / sizeof known[0]), "pipeline");
        }
    }
}

static void check_kernel_let(Sema *s, KItem *it) {
    s->kernel_let = true;
    Type t = check_expr(s, it->u.let.e);
    s->kernel_let = false;
    Symbol *y = new_sym(s, SYM_LET, it->u.let.name, it->u.let.name_span);
    y->init = it->u.let.e;
    it->u.let.sym = y;
    if (t.kind != TY_ERROR && !is_scalar(t)) {
        diag_error(s->d, it->u.let.e->span, "a kernel-level let names a scalar, not %s", type_str(s, t));
        t = ty_err();
    } else if (t.varying) {
        diag_error(s->d, it->u.let.e->span, "'row' and 'col' exist only in tile expressions");
        t = ty_err();
    }
    y->ty = t;
    y->is_const = it->u.let.e->is_const;
    y->cval = it->u.let.e->cval;
    y->fval = it->u.let.e->fval;
    vec_push(s->a, &s->sk->lets, it);
    declare(s, y);
}

/* the first sub-expression of a requirement the host launcher cannot evaluate (NULL if none) */
static const Expr *launch_time_only(const Expr *e) {
    if (!e) return NULL;
    switch (e->kind) {
    case EX_NAME:
        if (!e->sym) return NULL;
        if (e->sym->kind == SYM_DIM || e->sym->kind == SYM_SCALAR || e->sym->kind == SYM_PARAM) return NULL;
        if (e->sym->kind == SYM_LET && e->sym->is_const) return NULL;
        if (e->sym->kind == SYM_BUILTIN && e->sym->builtin == BI_INF) return NULL;
        return e;
    case EX_MEMBER: case EX_INDEX: case EX_TRANSPOSE: return e;
    case EX_CALL:
        for (int i = 0; i < e->u.call.nargs; i++) {
            const Expr *x = launch_time_only(e->u.call.args[i]);
            if (x) return x;
        }
        return NULL;
    case EX_BINARY: {
        const Expr *x = launch_time_only(e->u.bin.l);
        return x ? x : launch_time_only(e->u.bin.r);
    }
    case EX_UNARY: return launch_time_only(e->u.un.e);
    case EX_COND: {
        const Expr *x = launch_time_only(e->u.cond.c);
        if (!x) x = launch_time_only(e->u.cond.a);
        if (!x) x = launch_time_only(e->u.cond.b);
        return x;
    }
    default: return NULL;
    }
}

static void check_kernel(Sema *s, Kernel *k) {
    SemaKernel *sk = ARENA_NEW(s->a, SemaKernel);
    sk->k = k;
    sk->stages = 2;
    sk->consumers = 1;
    sk->cluster = 1;
    sk->order_group = 1;
    sk->lookahead = true;
    sk->staging = true;
    sk->setup_stages = 1;
    sk->narrow_tail = true;
    s->sk = sk;
    Scope ks;
    push_scope(s, &ks);
    check_args_of(s, k);

    /* declarations and the grid first, so blocks may use names declared below them */
    for (int i = 0; i < k->nitems; i++) {
        KItem *it = k->items[i];
        if (it->kind == KI_DECL) check_decl(s, it->u.decl.d);
    }
    for (int i = 0; i < k->nitems; i++) {
        KItem *it = k->items[i];
        if (it->kind == KI_GRID) check_grid(s, it);
    }
    if (!sk->grid) diag_error(s->d, k->name_span, "kernel '%s' has no grid statement (grid (x: N, ...);)", k->name);
    else
        for (int i = 0; i < sk->grid->u.grid.naxes; i++) {
            Axis *ax = &sk->grid->u.grid.axes[i];
            Symbol *y = new_sym(s, SYM_AXIS, ax->name, ax->span);
            y->ty = ty_int();
            y->index = i;
            ax->sym = y;
            vec_push(s->a, &sk->axes, ax);
        }
    /* lets, the pipeline and requirements in source order */
    for (int i = 0; i < k->nitems; i++) {
        KItem *it = k->items[i];
        switch (it->kind) {
        case KI_LET: check_kernel_let(s, it); break;
        case KI_PIPELINE: check_pipeline(s, it); break;
        case KI_REQUIRE: {
            Type t = check_expr(s, it->u.require.cond);
            const Expr *bad = launch_time_only(it->u.require.cond);
            if (t.kind != TY_ERROR && bad) {
                diag_error(s->d, bad->span,
                           "a requirement is checked by the launcher before the kernel runs, so it can use only "
                           "dimensions, scalar arguments, params and literals");
                t = ty_err();
            }
            if (t.kind != TY_ERROR && (!is_intlike(t) || t.varying))
                diag_error(s->d, it->u.require.cond->span, "a requirement must be a condition, not %s", type_str(s, t));
            else if (t.kind != TY_ERROR && it->u.require.cond->is_const && !it->u.require.cond->cval)
                diag_error(s->d, it->u.require.cond->span, "this requirement is false for every input");
            vec_push(s->a, &sk->requires, it->u.require.cond);
            break;
        }
        case KI_BLOCK: {
            BlockKind bk = it->u.block.kind;
            if (sk->blocks[bk]) {
                diag_error(s->d, it->span, "a kernel has at most one %s block", block_name[bk]);
                diag_note(s->d, sk->blocks[bk]->span, "the first one is here");
            } else {
                sk->blocks[bk] = it;
            }
            break;
        }
        default: break;
        }
    }
    /* the blocks of a cluster issue their shared (multicast) loads together, step by step */
    if (sk->cluster > 1 && sk->pipe && sk->axes.n) {
        const Axis *ca = sk->axes.v[sk->cluster_axis];
        if (expr_depends_on(sk->pipe->u.pipe.trips, ca->sym))
            diag_error(s->d, sk->cluster_span,
                       "cluster = %d: the blocks of a cluster share their loads step by step, so they must run the same "
                       "number of steps, but the pipeline's trip count depends on block.%s",
                       sk->cluster, ca->name);
    }
    for (int b = 0; b < BK_COUNT; b++) {
        KItem *it = sk->blocks[b];
        if (!it) continue;
        if ((b == BK_LOAD || b == BK_COMPUTE || b == BK_STORE) && !sk->pipe)
            diag_error(s->d, it->span, "a %s block runs once per pipeline step, but the kernel has no pipeline statement",
                       block_name[b]);
    }
    if (sk->pipe && !sk->blocks[BK_COMPUTE] && !sk->blocks[BK_STORE])
        diag_error(s->d, sk->pipe->span, "the pipeline has no compute or store block to run");
    /* blocks in execution order: setup, load, compute, store, finish */
    s->assigned.n = 0;
    s->g2s.n = 0;
    s->g2s_bk.n = 0;
    for (int b = 0; b < BK_COUNT; b++) {
        KItem *it = sk->blocks[b];
        if (!it) continue;
        s->in_block = true;
        s->bk = (BlockKind)b;
        Scope bs;
        push_scope(s, &bs);
        check_stmts(s, &it->u.block.body);
        pop_scope(s);
        s->in_block = false;
    }
    pop_scope(s);
}

/* ---- program -------------------------------------------------------------------------------- */

bool sema_run(Arena *a, Diag *d, Program *p, Define *defines, int ndefines, SemaResult *out) {
    int errors0 = d->nerrors;
    Sema s = {.a = a, .d = d, .prog = p};
    s.scope = &s.global;
    static const char *const bnames[] = {"block", "wg", "row", "col", "inf"};
    for (int i = 0; i < 5; i++) {
        Symbol *y = new_sym(&s, SYM_BUILTIN, bnames[i], SPAN_NONE);
        y->builtin = i;
        s.builtin[i] = y;
        vec_push(a, &s.global.syms, y);
    }
    for (int i = 0; i < p->params.n; i++) {
        Param *pa = p->params.v[i];
        Symbol *y = new_sym(&s, SYM_PARAM, pa->name, pa->span);
        pa->sym = y;
        int64_t v = 0;
        bool ok = require_const_int(&s, pa->value, "a param's value", &v);
        for (int j = 0; j < ndefines; j++)
            if (!strcmp(defines[j].name, pa->name)) {
                defines[j].used = true;
                pa->overridden = true;
                pa->override_value = v = defines[j].value;
                ok = true;
            }
        if (ok && (v > INT32_MAX || v < INT32_MIN)) {
            diag_error(d, pa->value->span, "param %s = %" PRId64 " does not fit in 32 bits", pa->name, v);
            ok = false;
        }
        y->ty = ok ? ty_int() : ty_err();
        y->is_const = ok;
        y->cval = v;
        declare(&s, y);
    }
    for (int j = 0; j < ndefines; j++)
        if (!defines[j].used) diag_error(d, SPAN_NONE, "-D %s: the program has no param named '%s'", defines[j].name, defines[j].name);
    for (int i = 0; i < p->kernels.n; i++) {
        Kernel *k = p->kernels.v[i];
        for (int j = 0; j < i; j++)
            if (!strcmp(p->kernels.v[j]->name, k->name)) {
                diag_error(d, k->name_span, "redefinition of kernel '%s'", k->name);
                diag_note(d, p->kernels.v[j]->name_span, "the first definition is here");
            }
        check_kernel(&s, k);
        vec_push(a, &out->kernels, s.sk);
    }
    if (p->kernels.n == 0 && d->nerrors == errors0) diag_error(d, SPAN_NONE, "the program defines no kernel");
    return d->nerrors == errors0;
}
