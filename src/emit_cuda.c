/* emit_cuda.c - prints a verified plan as one self-contained .cu: the template fragments the
 * kernels use, one __global__ kernel per .tk kernel (producer warpgroup + consumer warpgroups)
 * and an extern "C" host launcher per kernel that validates its arguments, builds the TMA
 * tensor maps and launches.
 * Invariant: no decisions are made here (they are in the plan); the output is a function of
 * the plan alone, so the same input gives the same bytes. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "emit.h"
#include "templates.h"

/* ---- emitter state ---------------------------------------------------------------------------- */

typedef struct Frag {
    const char *file, *name;
} Frag;
enum { STEP_NONE, STEP_FIRST, STEP_LOOP };

typedef struct Hoisted {
    const Expr *expr;           /* the reduction call, or the tile / per_row vector division */
    const char *name;           /* the small array that holds its values */
} Hoisted;

typedef struct Em {
    const EmitOptions *o;
    Arena *a;
    StrBuf *b;                  /* where code goes now */
    const PlanKernel *pk;
    const SemaKernel *sk;
    Vec(Frag) frags;            /* template fragments needed, in first-use order */
    int tmp;                    /* counter for temporaries */
    int mode;                   /* what is being emitted: STEP_FIRST, STEP_LOOP or STEP_NONE */
    const char *slot;           /* setup_stages = 2: the copy of the setup tiles the code being emitted reads */
    const PlanTail *nar;        /* set while the narrow last step is emitted: the score tile reads as its copy */
    /* values hoisted out of the statement being emitted: row and column reductions, and the
     * reciprocals of per_row divisors; elem() reads them by expression (as many as the
     * statement has: a growable arena vector) */
    Vec(Hoisted) hoisted;
} Em;

static void need(Em *e, const char *file, const char *frag) {
    for (int i = 0; i < e->frags.n; i++)
        if (!strcmp(e->frags.v[i].name, frag)) return;
    vec_push(e->a, &e->frags, ((Frag){file, frag}));
}

#define L(...) sb_line(e->b, __VA_ARGS__)
#define IN() (e->b->indent++)
#define OUT() (e->b->indent--)

static const char *fmt_float(Arena *a, double v) {
    if (isinf(v)) return v > 0 ? "TKC_INF" : "(-TKC_INF)";
    char buf[64];
    snprintf(buf, sizeof buf, "%.9g", v);
    if (!strpbrk(buf, ".eEn")) strcat(buf, ".0");
    return arena_printf(a, "%sf", buf);
}

/* ---- scalar expressions (uniform values: indices, bounds, scalars) --------------------------- */

static void scalar_expr(Em *e, StrBuf *b, const Expr *x, bool host);

static const char *scalar_str(Em *e, const Expr *x, bool host) {
    StrBuf b;
    sb_init(&b);
    scalar_expr(e, &b, x, host);
    char *s = arena_strdup(e->a, b.s ? b.s : "");
    sb_free(&b);
    return s;
}

static void scalar_expr(Em *e, StrBuf *b, const Expr *x, bool host) {
    if (x->is_const && x->ty.kind == TY_INT && x->kind != EX_NAME) {
        sb_printf(b, "%" PRId64, x->cval);
        return;
    }
    if (x->is_const && x->ty.kind == TY_FLOAT && x->kind != EX_NAME) {
        sb_puts(b, fmt_float(e->a, x->fval));
        return;
    }
    switch (x->kind) {
    case EX_INT: sb_printf(b, "%" PRId64, x->u.ival); return;
    case EX_FLOAT: sb_puts(b, fmt_float(e->a, x->u.fval)); return;
    case EX_NAME:
        if (x->sym && x->sym->kind == SYM_BUILTIN) {
            if (x->sym->builtin == BI_INF) sb_puts(b, "TKC_INF");
            else if (x->sym->builtin == BI_WG) sb_puts(b, "wg");
            else sb_puts(b, x->sym->name);
        } else if (x->sym && x->sym->kind == SYM_LET && x->sym->is_const && x->sym->ty.kind == TY_INT) {
            sb_printf(b, "%" PRId64, x->sym->cval);
        } else {
            sb_puts(b, x->u.name);
        }
        return;
    case EX_MEMBER: sb_printf(b, "block_%s", x->u.member.field); return;
    case EX_INDEX: {
        /* an element read of a global tensor (kernel-level lets) */
        const Symbol *t = x->u.index.base->sym;
        sb_printf(b, "tkc_load_f32(%s, ", t->name);
        for (int i = 0; i < x->u.index.nargs; i++) {
            if (i) sb_puts(b, " + ");
            sb_puts(b, "(long long)(");
            scalar_expr(e, b, x->u.index.args[i].lo, host);
            sb_printf(b, ") * %s_st%d", t->name, i);
        }
        sb_putc(b, ')');
        return;
    }
    case EX_CALL: {
        const char *fn = NULL;
        bool fl = x->ty.kind == TY_FLOAT;
        switch (x->fn) {
        case FN_CDIV: fn = host ? "tkc_h_cdiv" : "tkc_cdiv"; break;
        case FN_MIN: fn = fl ? "fminf" : host ? "tkc_h_min" : "min"; break;
        case FN_MAX: fn = fl ? "fmaxf" : host ? "tkc_h_max" : "max"; break;
        case FN_EXP: fn = "expf"; break;
        case FN_EXP2: fn = "exp2f"; break;
        case FN_LOG: fn = "logf"; break;
        case FN_LOG2: fn = "log2f"; break;
        case FN_SQRT: fn = "sqrtf"; break;
        case FN_RSQRT: fn = "rsqrtf"; break;
        case FN_ABS: fn = fl ? "fabsf" : "abs"; break;
        case FN_TANH: fn = "tanhf"; break;
        case FN_FP32: fn = "(float)"; break;
        case FN_I32: fn = "(int)"; break;
        case FN_BF16: fn = "tkc_round_bf16"; need(e, "tkc_ptx.cuh", "math"); break;
        case FN_FP16: fn = "tkc_round_fp16"; need(e, "tkc_ptx.cuh", "math"); break;
        case FN_AT: fn = ""; break; /* an element index: move_coord reads it */
        default: fn = x->u.call.fn; break;
        }
        sb_printf(b, "%s(", fn);
        for (int i = 0; i < x->u.call.nargs; i++) {
            if (i) sb_puts(b, ", ");
            scalar_expr(e, b, x->u.call.args[i], host);
        }
        sb_putc(b, ')');
        return;
    }
    case EX_BINARY:
        sb_putc(b, '(');
        scalar_expr(e, b, x->u.bin.l, host);
        sb_printf(b, " %s ", binop_name[x->u.bin.op]);
        scalar_expr(e, b, x->u.bin.r, host);
        sb_putc(b, ')');
        return;
    case EX_UNARY:
        sb_printf(b, "(%s", unop_name[x->u.un.op]);
        scalar_expr(e, b, x->u.un.e, host);
        sb_putc(b, ')');
        return;
    case EX_COND:
        sb_putc(b, '(');
        scalar_expr(e, b, x->u.cond.c, host);
        sb_puts(b, " ? ");
        scalar_expr(e, b, x->u.cond.a, host);
        sb_puts(b, " : ");
        scalar_expr(e, b, x->u.cond.b, host);
        sb_putc(b, ')');
        return;
    case EX_TRANSPOSE: return;
    }
}

/* ---- register fragments ------------------------------------------------------------------------
 * A register tile of R rows (per consumer warpgroup) and C columns uses the wgmma accumulator
 * layout: thread t = 32 w + l holds C/2 values per 64-row block; value i (j = i % (C/2)) sits at
 *   row = 64 (i / (C/2)) + 16 w + l/4 + 8 ((j >> 1) & 1),  col = 8 (j >> 2) + 2 (l % 4) + (j & 1).
 * A per_row vector holds the 2 rows of each 64-row block a thread owns: slot r is row
 *   64 (r / 2) + 16 w + l/4 + 8 (r % 2).
 * A per_col vector of C entries holds the C/4 columns a thread owns in the tile layout (the same
 * in every row block, warp and warpgroup): slot k is column
 *   8 (k / 2) + 2 (l % 4) + (k % 2),
 * so tile value i reads slot 2 ((i % (C/2)) >> 2) + (i & 1) and a broadcast needs no shuffles.
 * 16-bit tiles pack value pairs (2i, 2i+1) into one 32-bit register, which is exactly the
 * register A operand layout of wgmma, so a converted tile feeds a product directly. */

typedef enum { CX_TILE, CX_ROWVEC, CX_COLVEC, CX_SCALAR } CtxKind;

typedef struct Ctx {
    CtxKind kind;
    int cols;           /* tile: columns of the destination */
    int rwg;            /* rows per warpgroup */
    bool per_wg;
    const char *i;      /* the index expression (a variable name or "(2 * p + 1)") */
} Ctx;

static int rows_wg(const PlanKernel *pk, const Type *t) { return t->per_wg ? t->rows : t->rows / pk->consumers; }

static int frag_count(const PlanKernel *pk, const Type *t) {
    if (t->kind == TY_TILE) return rows_wg(pk, t) * t->cols / 128;
    if (t->layout == VL_COL) return t->rows / 4;
    return 2 * (rows_wg(pk, t) / 64);
}

static bool is16(DType d) { return d == DT_BF16 || d == DT_FP16; }

static const char *row_expr(Em *e, const Ctx *c) {
    if (c->kind == CX_COLVEC) return "TKC_INTERNAL_ERROR_row_of_a_per_col_vector";  /* sema rejects it */
    const char *wgpart = c->per_wg ? "" : arena_printf(e->a, "wg * %d + ", c->rwg);
    if (c->kind == CX_ROWVEC)
        return arena_printf(e->a, "(%stkc_lrow + 8 * (%s & 1) + 64 * (%s >> 1))", wgpart, c->i, c->i);
    return arena_printf(e->a, "(%stkc_lrow + 8 * ((%s >> 1) & 1) + 64 * (%s / %d))", wgpart, c->i, c->i, c->cols / 2);
}

static const char *col_expr(Em *e, const Ctx *c, int col0) {
    const char *off = col0 ? arena_printf(e->a, "%d + ", col0) : "";
    if (c->kind == CX_COLVEC) return arena_printf(e->a, "(%stkc_lcol + 8 * (%s >> 1) + (%s & 1))", off, c->i, c->i);
    return arena_printf(e->a, "(%stkc_lcol + 8 * ((%s %% %d) >> 2) + (%s & 1))", off, c->i, c->cols / 2, c->i);
}

/* the index into a tile of `pcols` columns for value i of a ctx of c->cols columns starting
 * at column col0 of the parent */
static const char *parent_index(Em *e, const Ctx *c, int pcols, int col0) {
    if (pcols == c->cols && col0 == 0) return c->i;
    int hs = c->cols / 2, hp = pcols / 2;
    return arena_printf(e->a, "(%s / %d * %d + %s %% %d + %d)", c->i, hs, hp, c->i, hs, col0 / 2);
}

/* parent_index for a slice that also starts at row row0 (a whole number of 64-row blocks of a tile
 * one warpgroup holds whole: lowering checks it) */
static const char *slice_index(Em *e, const Ctx *c, int pcols, int row0, int col0) {
    const char *i = parent_index(e, c, pcols, col0);
    if (!row0) return i;
    return arena_printf(e->a, "(%s + %d)", i, row0 / 64 * (pcols / 2));
}

static int slice_lo(const Expr *ix, int arg) {
    const IndexArg *a = &ix->u.index.args[arg];
    return a->lo ? (int)a->lo->cval : 0;
}

static const char *rowslot(Em *e, const Ctx *c) {
    if (c->kind == CX_ROWVEC) return c->i;
    return arena_printf(e->a, "(%s / %d * 2 + ((%s >> 1) & 1))", c->i, c->cols / 2, c->i);
}

/* the slot of a per_col vector that holds the column of value c->i */
static const char *colslot(Em *e, const Ctx *c) {
    if (c->kind == CX_COLVEC) return c->i;
    return arena_printf(e->a, "(2 * ((%s %% %d) >> 2) + (%s & 1))", c->i, c->cols / 2, c->i);
}

/* the slot of a vector of layout lay that holds the element c->i */
static const char *vecslot(Em *e, const Ctx *c, VecLayout lay) { return lay == VL_COL ? colslot(e, c) : rowslot(e, c); }

static const char *tile_value(Em *e, const char *name, DType dt, const char *idx) {
    if (!is16(dt)) return arena_printf(e->a, "%s[%s]", name, idx);
    const char *k = dt == DT_BF16 ? "bf16" : "fp16";
    return arena_printf(e->a, "((%s & 1) ? tkc_%s_hi(%s[%s >> 1]) : tkc_%s_lo(%s[%s >> 1]))", idx, k, name, idx, k, name,
                        idx);
}

static void elem(Em *e, StrBuf *b, const Expr *x, const Ctx *c);

/* a statement in .tk syntax, for the comment above its code */
static const char *plan_stmt_line(Em *e, const Stmt *st) {
    StrBuf b;
    sb_init(&b);
    plan_stmt_text(&b, st);
    const char *r = arena_strdup(e->a, b.s ? b.s : "");
    sb_free(&b);
    return r;
}

/* the array a hoisted value lives in (hoist_row_values ran on the statement first), or NULL */
static const char *hoisted_name(const Em *e, const Expr *x) {
    for (int i = 0; i < e->hoisted.n; i++)
        if (e->hoisted.v[i].expr == x) return e->hoisted.v[i].name;
    return NULL;
}

static const char *elem_str(Em *e, const Expr *x, const Ctx *c) {
    StrBuf b;
    sb_init(&b);
    elem(e, &b, x, c);
    char *s = arena_strdup(e->a, b.s ? b.s : "");
    sb_free(&b);
    return s;
}

/* the value of expression x at the element c->i of the destination's fragment */
static void elem(Em *e, StrBuf *b, const Expr *x, const Ctx *c) {
    const Type *t = &x->ty;
    if ((t->kind == TY_INT || t->kind == TY_FLOAT || t->kind == TY_BOOL) && !t->varying && x->kind != EX_CALL) {
        scalar_expr(e, b, x, false);
        return;
    }
    switch (x->kind) {
    case EX_NAME: {
        const Symbol *y = x->sym;
        if (y->kind == SYM_BUILTIN && y->builtin == BI_ROW) {
            sb_puts(b, row_expr(e, c));
            return;
        }
        if (y->kind == SYM_BUILTIN && y->builtin == BI_COL) {
            sb_puts(b, col_expr(e, c, 0));
            return;
        }
        if (t->kind == TY_TILE) {
            sb_puts(b, tile_value(e, e->nar && y == e->nar->s ? e->nar->s_narrow->name : y->name, t->dt, c->i));
            return;
        }
        if (t->kind == TY_VEC) {
            sb_printf(b, "%s[%s]", y->name, vecslot(e, c, t->layout));
            return;
        }
        scalar_expr(e, b, x, false);
        return;
    }
    case EX_INDEX: {
        const Expr *base = x->u.index.base;
        if (base->ty.kind == TY_VEC && base->ty.layout == VL_COL) { /* a per_col slice: 4 slots per 16 columns */
            sb_printf(b, "%s[%s + %d]", base->sym->name, colslot(e, c), slice_lo(x, 0) / 4);
            return;
        }
        if (base->ty.kind == TY_VEC) { /* a slice of a per_row vector: whole 64-row blocks */
            sb_printf(b, "%s[%s + %d]", base->sym->name, rowslot(e, c), slice_lo(x, 0) / 64 * 2);
            return;
        }
        /* a slice of a register tile: columns, and whole 64-row blocks of rows */
        sb_puts(b, tile_value(e, base->sym->name, base->ty.dt, slice_index(e, c, base->ty.cols, slice_lo(x, 0), slice_lo(x, 1))));
        return;
    }
    case EX_CALL: {
        Expr **A = x->u.call.args;
        switch (x->fn) {
        case FN_ROWMAX: case FN_ROWMIN: case FN_ROWSUM: case FN_COLMAX: case FN_COLMIN: case FN_COLSUM: {
            const char *h = hoisted_name(e, x);
            sb_printf(b, "%s[%s]", h ? h : "TKC_INTERNAL_ERROR_reduction_not_hoisted", vecslot(e, c, t->layout));
            return;
        }
        case FN_WHERE:
            sb_puts(b, "(");
            elem(e, b, A[0], c);
            sb_puts(b, " ? ");
            elem(e, b, A[1], c);
            sb_puts(b, " : ");
            elem(e, b, A[2], c);
            sb_puts(b, ")");
            return;
        case FN_TRIL: case FN_TRIU:
            sb_printf(b, "((%s - %s) %s (", col_expr(e, c, 0), row_expr(e, c), x->fn == FN_TRIL ? "<=" : ">=");
            scalar_expr(e, b, A[1], false);
            sb_puts(b, ") ? ");
            elem(e, b, A[0], c);
            sb_puts(b, " : ");
            if (x->u.call.nargs == 3) elem(e, b, A[2], c);
            else sb_puts(b, "0.f");
            sb_puts(b, ")");
            return;
        case FN_BF16:
        case FN_FP16:
            /* inside an expression the value is rounded to 16 bits and used as fp32 */
            need(e, "tkc_ptx.cuh", "math");
            sb_printf(b, "%s(", x->fn == FN_BF16 ? "tkc_round_bf16" : "tkc_round_fp16");
            elem(e, b, A[0], c);
            sb_putc(b, ')');
            return;
        case FN_FP32:
            elem(e, b, A[0], c);
            return;
        case FN_MIN: case FN_MAX:
            if (t->kind == TY_INT) break;
            sb_printf(b, "%s(", x->fn == FN_MIN ? "fminf" : "fmaxf");
            elem(e, b, A[0], c);
            sb_puts(b, ", ");
            elem(e, b, A[1], c);
            sb_putc(b, ')');
            return;
        case FN_EXP2:
            need(e, "tkc_ptx.cuh", "math");
            sb_puts(b, "tkc_exp2(");
            elem(e, b, A[0], c);
            sb_putc(b, ')');
            return;
        case FN_EXP:
            need(e, "tkc_ptx.cuh", "math");
            sb_puts(b, "tkc_exp2(1.44269504f * ");
            elem(e, b, A[0], c);
            sb_putc(b, ')');
            return;
        case FN_LOG: case FN_LOG2: case FN_SQRT: case FN_RSQRT: case FN_ABS: case FN_TANH: {
            static const char *const nm[] = {[FN_LOG] = "__logf", [FN_LOG2] = "__log2f", [FN_SQRT] = "sqrtf",
                                              [FN_RSQRT] = "rsqrtf", [FN_ABS] = "fabsf", [FN_TANH] = "tanhf"};
            sb_printf(b, "%s(", nm[x->fn]);
            elem(e, b, A[0], c);
            sb_putc(b, ')');
            return;
        }
        default:
            break;
        }
        scalar_expr(e, b, x, false);
        return;
    }
    case EX_BINARY:
        if (hoisted_name(e, x)) { /* tile / per_row vector: times the hoisted reciprocal */
            sb_putc(b, '(');
            elem(e, b, x->u.bin.l, c);
            sb_printf(b, " * %s[%s])", hoisted_name(e, x), rowslot(e, c));
            return;
        }
        sb_putc(b, '(');
        elem(e, b, x->u.bin.l, c);
        sb_printf(b, " %s ", binop_name[x->u.bin.op]);
        elem(e, b, x->u.bin.r, c);
        sb_putc(b, ')');
        return;
    case EX_UNARY:
        sb_printf(b, "(%s", unop_name[x->u.un.op]);
        elem(e, b, x->u.un.e, c);
        sb_putc(b, ')');
        return;
    case EX_COND:
        sb_putc(b, '(');
        scalar_expr(e, b, x->u.cond.c, false);
        sb_puts(b, " ? ");
        elem(e, b, x->u.cond.a, c);
        sb_puts(b, " : ");
        elem(e, b, x->u.cond.b, c);
        sb_putc(b, ')');
        return;
    default:
        scalar_expr(e, b, x, false);
        return;
    }
}

static Ctx tile_ctx(const PlanKernel *pk, const Type *t, const char *i) {
    Ctx c = {.kind = t->kind == TY_TILE ? CX_TILE : t->layout == VL_COL ? CX_COLVEC : CX_ROWVEC, .cols = t->cols, .rwg = rows_wg(pk, t),
             .per_wg = t->per_wg, .i = i};
    return c;
}

/* the type x's tile values take: in the narrow last step, those of the score tile's copy */
static const Type *value_type(Em *e, const Expr *x) {
    if (e->nar && x->ty.kind == TY_TILE && expr_mentions(x, e->nar->s)) return &e->nar->s_narrow->ty;
    return &x->ty;
}

/* a column reduction into a per_col array (see plan_colred): the thread's rows, the 8 lanes of
 * the warp with the same lane % 4 (3 shuffles), then the warps' partial results through the
 * scratch buffer, read back in one order by every thread */
static void hoist_col_reduction(Em *e, const Expr *x) {
    const PlanKernel *pk = e->pk;
    const Expr *src = x->u.call.args[0];
    const Type *st = value_type(e, src);
    int n = frag_count(pk, st), slots = st->cols / 4;
    const char *name = arena_printf(e->a, "tkc_red%d", e->tmp++);
    const char *op = x->fn == FN_COLMAX ? "fmaxf" : x->fn == FN_COLMIN ? "fminf" : NULL;
    const char *init = x->fn == FN_COLMAX ? "-TKC_INF" : x->fn == FN_COLMIN ? "TKC_INF" : "0.f";
    need(e, "tkc_ptx.cuh", "named_barrier");
    need(e, "tkc_ptx.cuh", "shared_f32");
    L("float %s[%d];  // %s: the %d columns this thread holds (per_col slots)", name, slots, ast_expr_str(e->a, x), slots);
    L("#pragma unroll");
    L("for (int tkc_r = 0; tkc_r < %d; ++tkc_r) %s[tkc_r] = %s;", slots, name, init);
    Ctx c = tile_ctx(pk, st, "tkc_i");
    L("#pragma unroll");
    L("for (int tkc_i = 0; tkc_i < %d; ++tkc_i) {", n);
    IN();
    const char *v = elem_str(e, src, &c), *cs = colslot(e, &c);
    if (op) L("%s[%s] = %s(%s[%s], %s);", name, cs, op, name, cs, v);
    else L("%s[%s] += %s;", name, cs, v);
    OUT();
    L("}");
    L("#pragma unroll");
    L("for (int tkc_r = 0; tkc_r < %d; ++tkc_r) {  // the 8 lanes of a warp with the same lane %% 4 hold a column", slots);
    IN();
    for (int s = 4; s <= 16; s *= 2) {
        if (op) L("%s[tkc_r] = %s(%s[tkc_r], __shfl_xor_sync(0xffffffffu, %s[tkc_r], %d));", name, op, name, name, s);
        else L("%s[tkc_r] += __shfl_xor_sync(0xffffffffu, %s[tkc_r], %d);", name, name, s);
    }
    OUT();
    L("}");
    const PlanBuf *sb = &pk->bufs.v[pk->colred_buf];
    const PlanNamedBar *nb = &pk->nbars.v[st->per_wg ? pk->colred_wg_bar : pk->colred_bar];
    int parts = st->per_wg ? 4 : 4 * pk->consumers, pitch = sb->cols * 4;
    const char *base = st->per_wg ? arena_printf(e->a, "%s_smem + (uint32_t)wg * %d", sb->name, 4 * pitch)
                                  : arena_printf(e->a, "%s_smem", sb->name);
    const char *bar = st->per_wg ? arena_printf(e->a, "%d + wg", nb->id) : arena_printf(e->a, "%d", nb->id);
    const char *warp = st->per_wg ? "tkc_warp" : "(wg * 4 + tkc_warp)";
    L("{  // the partial results of %d warps meet in '%s' (named barrier %s: %s)", parts, sb->name, nb->name, nb->why);
    IN();
    L("const uint32_t tkc_cb = %s;", base);
    L("tkc_bar_sync(%s, %d);  // every thread has read the last reduction's partial results", bar, nb->threads);
    L("if (tkc_lane < 4) {");
    IN();
    L("#pragma unroll");
    L("for (int tkc_r = 0; tkc_r < %d; ++tkc_r)", slots);
    L("    tkc_st_shared_f32(tkc_cb + (uint32_t)(%s * %d + (8 * (tkc_r >> 1) + tkc_lcol + (tkc_r & 1)) * 4), %s[tkc_r]);", warp,
      pitch, name);
    OUT();
    L("}");
    L("tkc_bar_sync(%s, %d);", bar, nb->threads);
    L("#pragma unroll");
    L("for (int tkc_r = 0; tkc_r < %d; ++tkc_r) {", slots);
    IN();
    L("const uint32_t tkc_ca = tkc_cb + (uint32_t)(8 * (tkc_r >> 1) + tkc_lcol + (tkc_r & 1)) * 4;");
    L("float tkc_s = tkc_ld_shared_f32(tkc_ca);");
    L("#pragma unroll");
    L("for (int tkc_w = 1; tkc_w < %d; ++tkc_w) tkc_s %s tkc_ld_shared_f32(tkc_ca + (uint32_t)tkc_w * %d)%s;", parts,
      op ? arena_printf(e->a, "= %s(tkc_s,", op) : "+=", pitch, op ? ")" : "");
    L("%s[tkc_r] = tkc_s;", name);
    OUT();
    L("}");
    OUT();
    L("}");
    vec_push(e->a, &e->hoisted, ((Hoisted){x, name}));
}

/* row reductions inside x, and reciprocals of per_row divisors, are computed first into small
 * arrays, one per expression */
static void hoist_row_values(Em *e, const Expr *x) {
    if (!x) return;
    switch (x->kind) {
    case EX_CALL:
        for (int i = 0; i < x->u.call.nargs; i++) hoist_row_values(e, x->u.call.args[i]);
        if (x->fn == FN_COLMAX || x->fn == FN_COLMIN || x->fn == FN_COLSUM) hoist_col_reduction(e, x);
        if (x->fn == FN_ROWMAX || x->fn == FN_ROWMIN || x->fn == FN_ROWSUM) {
            const Expr *src = x->u.call.args[0];
            const PlanKernel *pk = e->pk;
            const Type *st = value_type(e, src);
            int n = frag_count(pk, st), slots = 2 * (rows_wg(pk, st) / 64);
            const char *name = arena_printf(e->a, "tkc_red%d", e->tmp++);
            const char *op = x->fn == FN_ROWMAX ? "fmaxf" : x->fn == FN_ROWMIN ? "fminf" : NULL;
            const char *init = x->fn == FN_ROWMAX ? "-TKC_INF" : x->fn == FN_ROWMIN ? "TKC_INF" : "0.f";
            L("float %s[%d];  // %s", name, slots, ast_expr_str(e->a, x));
            L("#pragma unroll");
            L("for (int tkc_r = 0; tkc_r < %d; ++tkc_r) %s[tkc_r] = %s;", slots, name, init);
            Ctx c = tile_ctx(pk, st, "tkc_i");
            L("#pragma unroll");
            L("for (int tkc_i = 0; tkc_i < %d; ++tkc_i) {", n);
            IN();
            const char *v = elem_str(e, src, &c), *rs = rowslot(e, &c);
            if (op) L("%s[%s] = %s(%s[%s], %s);", name, rs, op, name, rs, v);
            else L("%s[%s] += %s;", name, rs, v);
            OUT();
            L("}");
            bool lazy = false;
            for (int k = 0; k < pk->lazy_rowsums.n; k++) lazy |= pk->lazy_rowsums.v[k] == x;
            if (lazy) {
                L("// each lane's partial sums: finish adds the quad's four");
            } else {
                L("#pragma unroll");
                L("for (int tkc_r = 0; tkc_r < %d; ++tkc_r) {  // the 4 lanes of a quad hold one row", slots);
                IN();
                for (int s = 1; s <= 2; s *= 2) {
                    if (op) L("%s[tkc_r] = %s(%s[tkc_r], __shfl_xor_sync(0xffffffffu, %s[tkc_r], %d));", name, op, name, name, s);
                    else L("%s[tkc_r] += __shfl_xor_sync(0xffffffffu, %s[tkc_r], %d);", name, name, s);
                }
                OUT();
                L("}");
            }
            vec_push(e->a, &e->hoisted, ((Hoisted){x, name}));
        }
        return;
    case EX_BINARY:
        hoist_row_values(e, x->u.bin.l);
        hoist_row_values(e, x->u.bin.r);
        if (x->u.bin.op == BIN_DIV && x->ty.kind == TY_TILE && x->u.bin.r->ty.kind == TY_VEC &&
            x->u.bin.r->ty.layout == VL_ROW) {
            /* a tile divided by a per_row vector: one reciprocal per row, then a product per element */
            const Expr *v = x->u.bin.r;
            int slots = frag_count(e->pk, &v->ty);
            const char *name = arena_printf(e->a, "tkc_rcp%d", e->tmp++);
            Ctx c = tile_ctx(e->pk, &v->ty, "tkc_r");
            L("float %s[%d];  // 1 / %s, once per row", name, slots, ast_expr_str(e->a, v));
            L("#pragma unroll");
            L("for (int tkc_r = 0; tkc_r < %d; ++tkc_r) %s[tkc_r] = 1.f / %s;", slots, name, elem_str(e, v, &c));
            vec_push(e->a, &e->hoisted, ((Hoisted){x, name}));
        }
        return;
    case EX_UNARY: hoist_row_values(e, x->u.un.e); return;
    case EX_COND: hoist_row_values(e, x->u.cond.a); hoist_row_values(e, x->u.cond.b); return;
    default: return;
    }
}

/* ---- declarations of register values ----------------------------------------------------------- */

static const char *reg_decl(Em *e, const Symbol *y) {
    const Type *t = &y->ty;
    int n = frag_count(e->pk, t);
    if (t->kind == TY_TILE && is16(t->dt))
        return arena_printf(e->a, "uint32_t %s[%d];  // %s %s[%d, %d]: %d packed pairs per thread", y->name, n / 2,
                            t->per_wg ? "per_wg" : "row-split", dtype_name[t->dt], t->rows, t->cols, n / 2);
    if (t->kind == TY_TILE)
        return arena_printf(e->a, "float %s[%d];  // %s %s[%d, %d]: %d values per thread", y->name, n,
                            t->per_wg ? "per_wg" : "row-split", dtype_name[t->dt], t->rows, t->cols, n);
    if (t->layout == VL_COL)
        return arena_printf(e->a, "float %s[%d];  // %s[%d] per_col: the %d columns this thread holds, slot k = column "
                            "8 (k / 2) + 2 (lane %% 4) + k %% 2", y->name, n, dtype_name[t->dt], t->rows, n);
    return arena_printf(e->a, "float %s[%d];  // %s[%d] per_row: the %d rows this thread holds", y->name, n,
                        dtype_name[t->dt], t->rows, n);
}

/* ---- statements ---------------------------------------------------------------------------------- */

static void emit_ops(Em *e, const POpList *ops);

static const char *assign_rhs(Em *e, const Stmt *st, const char *cur, const Ctx *c) {
    const char *v = elem_str(e, st->u.assign.rhs, c);
    switch (st->u.assign.op) {
    case AS_ADD: return arena_printf(e->a, "%s + %s", cur, v);
    case AS_SUB: return arena_printf(e->a, "%s - %s", cur, v);
    case AS_MUL: return arena_printf(e->a, "%s * %s", cur, v);
    case AS_DIV: return arena_printf(e->a, "%s / %s", cur, v);
    default: return v;
    }
}

/* `dst op= expr` for a register tile or vector (or a column slice of a tile) */
static void emit_reg_assign(Em *e, const Stmt *st, const Expr *lhs, const char *decl_name, const Type *dt) {
    const Expr *rhs = st->u.assign.rhs;
    const char *name = decl_name;
    int row0 = 0, col0 = 0, pcols = dt->cols;
    const Type *vt = dt;
    if (!name) {
        if (lhs->kind == EX_INDEX) {
            name = lhs->u.index.base->sym->name;
            row0 = slice_lo(lhs, 0);
            col0 = lhs->u.index.nargs > 1 ? slice_lo(lhs, 1) : 0;
            pcols = lhs->u.index.base->ty.cols;
            vt = &lhs->ty;
        } else {
            name = lhs->sym->name;
            if (e->nar && lhs->sym == e->nar->s) {
                name = e->nar->s_narrow->name;
                vt = &e->nar->s_narrow->ty;
                pcols = vt->cols;
            }
        }
    }
    e->hoisted.n = 0;
    hoist_row_values(e, rhs);
    int n = frag_count(e->pk, vt);
    if (vt->kind == TY_TILE && is16(vt->dt)) {
        const char *k = vt->dt == DT_BF16 ? "bf16" : "fp16";
        need(e, "tkc_ptx.cuh", "math");
        L("#pragma unroll");
        L("for (int tkc_p = 0; tkc_p < %d; ++tkc_p) {", n / 2);
        IN();
        Ctx c0 = tile_ctx(e->pk, vt, "(2 * tkc_p)"), c1 = tile_ctx(e->pk, vt, "(2 * tkc_p + 1)");
        const char *dst = arena_printf(e->a, "%s[%s >> 1]", name, slice_index(e, &c0, pcols, row0, col0));
        const char *v0 = assign_rhs(e, st, arena_printf(e->a, "tkc_%s_lo(%s)", k, dst), &c0);
        const char *v1 = assign_rhs(e, st, arena_printf(e->a, "tkc_%s_hi(%s)", k, dst), &c1);
        L("%s = tkc_pack_%s(%s, %s);", dst, k, v0, v1);
        OUT();
        L("}");
        return;
    }
    const char *iv = vt->kind == TY_TILE ? "tkc_i" : "tkc_r";
    Ctx c = tile_ctx(e->pk, vt, iv);
    const char *dst = arena_printf(e->a, "%s[%s]", name,
                                   vt->kind == TY_TILE ? slice_index(e, &c, pcols, row0, col0)
                                                       : row0 ? arena_printf(e->a, "%s + %d", iv,
                                                                             vt->layout == VL_COL ? row0 / 4 : row0 / 64 * 2)
                                                              : iv);
    L("#pragma unroll");
    L("for (int %s = 0; %s < %d; ++%s) %s = %s;", iv, iv, n, iv, dst, assign_rhs(e, st, dst, &c));
}

static const char *global_offset(Em *e, const Symbol *t, const Expr *ix, const char *last) {
    /* element offset of X[i0, ..., i_{n-2}, last] from the tensor's strides */
    int n = ix->u.index.nargs;
    StrBuf b;
    sb_init(&b);
    for (int i = 0; i < n; i++) {
        if (i) sb_puts(&b, " + ");
        if (i == n - 1) sb_printf(&b, "%s * %s_st%d", last, t->name, i);
        else sb_printf(&b, "(long long)%s * %s_st%d", scalar_str(e, ix->u.index.args[i].lo, false), t->name, i);
    }
    char *r = arena_strdup(e->a, b.s);
    sb_free(&b);
    return r;
}

/* a global move's tile (or vector) index as an element coordinate: at(r) is element r itself,
 * any other index counts in units of the moved tile's size */
static bool is_at(const Expr *x) { return x->kind == EX_CALL && x->fn == FN_AT; }

static const char *move_coord(Em *e, const Expr *x, int size) {
    if (is_at(x)) return arena_printf(e->a, "(%s)", scalar_str(e, x->u.call.args[0], false));
    return arena_printf(e->a, "%s * %d", scalar_str(e, x, false), size);
}

/* the element offset of a tile move's leading indices (all but the last two), each followed by
 * " + ", or "" for a 2-d tensor */
static const char *lead_offset(Em *e, const Symbol *t, const Expr *ix) {
    StrBuf b;
    sb_init(&b);
    for (int d = 0; d < ix->u.index.nargs - 2; d++)
        sb_printf(&b, "(long long)%s * %s_st%d + ", scalar_str(e, ix->u.index.args[d].lo, false), t->name, d);
    const char *r = arena_strdup(e->a, b.s ? b.s : "");
    sb_free(&b);
    return r;
}

/* the conversion of an fp32 value to a 16-bit element */
static const char *cvt16(DType dt) { return dt == DT_BF16 ? "__float2bfloat16_rn" : "__float2half_rn"; }


static void emit_vec_store(Em *e, const Stmt *st) {
    const Expr *ix = st->u.assign.lhs, *rhs = st->u.assign.rhs;
    const Symbol *t = ix->u.index.base->sym;
    const Arg *arg = e->sk->args.v[t->index];
    int n = ix->u.index.nargs;
    e->hoisted.n = 0;
    hoist_row_values(e, rhs);
    Ctx c = tile_ctx(e->pk, &rhs->ty, "tkc_r");
    if (rhs->ty.layout == VL_COL) {
        bool wg0 = false;
        for (int i = 0; i < e->pk->col_stores_wg0.n; i++) wg0 |= e->pk->col_stores_wg0.v[i] == st;
        if (wg0) L("if (wg == 0 && tkc_warp == 0 && tkc_lane < 4) {  // lanes 0..3 of a warp hold every column once");
        else L("if (tkc_warp == 0 && tkc_lane < 4) {  // lanes 0..3 of a warp hold every column once");
        IN();
        L("#pragma unroll");
        L("for (int tkc_r = 0; tkc_r < %d; ++tkc_r) {", frag_count(e->pk, &rhs->ty));
        IN();
        L("const long long tkc_gi = (long long)%s + %s;", move_coord(e, ix->u.index.args[n - 1].lo, rhs->ty.rows), col_expr(e, &c, 0));
        L("if (%stkc_gi < %s) %s[%s] = %s;", is_at(ix->u.index.args[n - 1].lo) ? "tkc_gi >= 0 && " : "",
          scalar_str(e, arg->ts.dims[n - 1], false), t->name, global_offset(e, t, ix, "tkc_gi"), elem_str(e, rhs, &c));
        OUT();
        L("}");
        OUT();
        L("}");
        return;
    }
    L("if ((tkc_lane & 3) == 0) {  // one lane of each quad holds the row's value");
    IN();
    L("#pragma unroll");
    L("for (int tkc_r = 0; tkc_r < %d; ++tkc_r) {", frag_count(e->pk, &rhs->ty));
    IN();
    L("const long long tkc_gi = (long long)%s + %s;", move_coord(e, ix->u.index.args[n - 1].lo, rhs->ty.rows), row_expr(e, &c));
    L("if (%stkc_gi < %s) %s[%s] = %s;", is_at(ix->u.index.args[n - 1].lo) ? "tkc_gi >= 0 && " : "",
      scalar_str(e, arg->ts.dims[n - 1], false), t->name, global_offset(e, t, ix, "tkc_gi"), elem_str(e, rhs, &c));
    OUT();
    L("}");
    OUT();
    L("}");
}

/* `v <- X[...]`: each thread loads the entries of the register vector it holds (per_row: its rows,
 * per_col: its columns) straight from global memory; entries past the tensor's end (or before its
 * start, with at()) read 0 */
static void emit_vec_load(Em *e, const Stmt *st) {
    const Expr *ix = st->u.assign.rhs, *lhs = st->u.assign.lhs;
    const Symbol *t = ix->u.index.base->sym, *v = lhs->sym;
    const Arg *arg = e->sk->args.v[t->index];
    int n = ix->u.index.nargs;
    Ctx c = tile_ctx(e->pk, &v->ty, "tkc_r");
    const char *idx = v->ty.layout == VL_COL ? col_expr(e, &c, 0) : row_expr(e, &c);
    L("#pragma unroll");
    L("for (int tkc_r = 0; tkc_r < %d; ++tkc_r) {  // each thread its own %s; past the end: 0", frag_count(e->pk, &v->ty),
      v->ty.layout == VL_COL ? "columns" : "rows");
    IN();
    L("const long long tkc_gi = (long long)%s + %s;", move_coord(e, ix->u.index.args[n - 1].lo, v->ty.rows), idx);
    L("%s[tkc_r] = %stkc_gi < %s ? (float)tkc_load_f32(%s, %s) : 0.f;", v->name, is_at(ix->u.index.args[n - 1].lo) ? "tkc_gi >= 0 && " : "",
      scalar_str(e, arg->ts.dims[n - 1], false), t->name, global_offset(e, t, ix, "tkc_gi"));
    OUT();
    L("}");
}

static const char *buf_addr(Em *e, int buf, bool prev);

/* `v <- sv`: each thread reads the entries of the register vector it holds from the shared vector
 * (per_row: its rows, per_col: its columns), widened to fp32 */
static void emit_vec_from_shared(Em *e, const Stmt *st) {
    const Symbol *v = st->u.assign.lhs->sym, *sv = st->u.assign.rhs->sym;
    int buf = -1;
    for (int i = 0; i < e->pk->bufs.n; i++)
        if (e->pk->bufs.v[i].sym == sv) buf = i;
    const PlanBuf *b = &e->pk->bufs.v[buf];
    Ctx c = tile_ctx(e->pk, &v->ty, "tkc_r");
    const char *idx = v->ty.layout == VL_COL ? col_expr(e, &c, 0) : row_expr(e, &c);
    const char *ld = b->dt == DT_BF16 ? "tkc_ld_shared_bf16" : b->dt == DT_FP16 ? "tkc_ld_shared_fp16" : "tkc_ld_shared_f32";
    need(e, "tkc_ptx.cuh", "shared_f32");
    L("#pragma unroll");
    L("for (int tkc_r = 0; tkc_r < %d; ++tkc_r) %s[tkc_r] = %s(%s + (uint32_t)%s * %d);  // each thread its own %s",
      frag_count(e->pk, &v->ty), v->name, ld, buf_addr(e, buf, false), idx, dtype_bytes[b->dt],
      v->ty.layout == VL_COL ? "columns" : "rows");
}

static const PlanStore *store_of(const PlanKernel *pk, const Stmt *st) {
    for (int i = 0; i < pk->stores.n; i++)
        if (pk->stores.v[i].st == st) return &pk->stores.v[i];
    return NULL;
}

/* a register tile straight to global memory (staging = 0): each thread writes the pairs of
 * neighbouring columns it holds, as one 32-bit store when the tensor's layout allows (last stride
 * 1, the other strides even, a 4-byte aligned base), else element by element; rows and columns
 * past the tensor's end are skipped */
static void emit_direct_store(Em *e, const Stmt *st) {
    const PlanKernel *pk = e->pk;
    const Expr *ix = st->u.assign.lhs, *rhs = st->u.assign.rhs;
    const Symbol *tn = ix->u.index.base->sym;
    const Arg *arg = e->sk->args.v[tn->index];
    const Type *t = &rhs->ty;
    int n = ix->u.index.nargs;
    bool wide = !is16(t->dt);
    need(e, "tkc_ptx.cuh", "math");
    if (rhs->kind == EX_CALL && (rhs->fn == FN_BF16 || rhs->fn == FN_FP16)) rhs = rhs->u.call.args[0];
    e->hoisted.n = 0;
    hoist_row_values(e, rhs);
    const char *k = t->dt == DT_BF16 ? "bf16" : "fp16";
    const char *ct = wide ? "float" : t->dt == DT_BF16 ? "__nv_bfloat16" : "__half";
    const char *cvt = wide ? "" : cvt16(t->dt);
    L("{");
    IN();
    L("const long long tkc_r0 = (long long)%s;  // the tile's first row and column", move_coord(e, ix->u.index.args[n - 2].lo, t->rows));
    L("const long long tkc_c0 = (long long)%s;", move_coord(e, ix->u.index.args[n - 1].lo, t->cols));
    StrBuf pc;
    sb_init(&pc);
    sb_printf(&pc, "%s_st%d == 1 && ((uintptr_t)%s & %d) == 0", tn->name, n - 1, tn->name, wide ? 7 : 3);
    for (int d = 0; d < n - 1; d++) sb_printf(&pc, " && %s_st%d %% 2 == 0", tn->name, d);
    L("const bool tkc_pairs = %s;  // two elements per %d-byte store", pc.s, wide ? 8 : 4);
    L("%s *const tkc_base = %s + %stkc_r0 * %s_st%d + tkc_c0 * %s_st%d;", ct, tn->name, lead_offset(e, tn, ix), tn->name, n - 2,
      tn->name, n - 1);
    sb_free(&pc);
    Ctx c0 = tile_ctx(pk, t, "(2 * tkc_p)"), c1 = tile_ctx(pk, t, "(2 * tkc_p + 1)");
    L("#pragma unroll");
    L("for (int tkc_p = 0; tkc_p < %d; ++tkc_p) {", frag_count(pk, t) / 2);
    IN();
    L("const int tkc_r = %s, tkc_c = %s;", row_expr(e, &c0), col_expr(e, &c0, 0));
    L("const float tkc_x0 = %s, tkc_x1 = %s;", elem_str(e, rhs, &c0), elem_str(e, rhs, &c1));
    const char *rows = scalar_str(e, arg->ts.dims[n - 2], false), *cols = scalar_str(e, arg->ts.dims[n - 1], false);
    L("if (%stkc_r0 + tkc_r >= %s) continue;", is_at(ix->u.index.args[n - 2].lo) ? "tkc_r0 + tkc_r < 0 || " : "", rows);
    L("%s *const tkc_q = tkc_base + tkc_r * %s_st%d + tkc_c * %s_st%d;", ct, tn->name, n - 2, tn->name, n - 1);
    L("if (tkc_pairs && tkc_c0 + tkc_c + 1 < %s) {", cols);
    IN();
    if (wide) L("*reinterpret_cast<float2 *>(tkc_q) = make_float2(tkc_x0, tkc_x1);");
    else L("*reinterpret_cast<uint32_t *>(tkc_q) = tkc_pack_%s(tkc_x0, tkc_x1);", k);
    OUT();
    L("} else {");
    IN();
    L("if (tkc_c0 + tkc_c < %s) tkc_q[0] = %s(tkc_x0);", cols, cvt);
    L("if (tkc_c0 + tkc_c + 1 < %s) tkc_q[%s_st%d] = %s(tkc_x1);", cols, tn->name, n - 1, cvt);
    OUT();
    L("}");
    OUT();
    L("}");
    OUT();
    L("}");
}

/* an atomic add from registers into global memory (`G[...] += x`): each thread adds the elements
 * it holds with red.global.add.f32 (.bf16, .f16), a tile's neighbouring column pairs as one
 * red.global.add.v2.f32 (.bf16x2, .f16x2) where the address is aligned and the columns adjacent; rows and
 * columns past the tensor's end (or before its start, for at()) are skipped. A per_wg value, which
 * every warpgroup holds whole, is added by the first warpgroup only. */
static void emit_red(Em *e, const Stmt *st) {
    const PlanKernel *pk = e->pk;
    const PlanStore *ps = store_of(pk, st);
    const Expr *ix = st->u.assign.lhs, *rhs = st->u.assign.rhs;
    const Symbol *tn = ix->u.index.base->sym;
    const Arg *arg = e->sk->args.v[tn->index];
    const Type *t = &rhs->ty;
    int n = ix->u.index.nargs;
    need(e, "tkc_ptx.cuh", "red");
    /* 16-bit elements: the values are computed in fp32 and rounded by the add (the explicit
     * conversion of the whole value is implied, as in a store) */
    bool h16 = is16(t->dt);
    const char *k = t->dt == DT_BF16 ? "bf16" : "fp16", *ct = t->dt == DT_BF16 ? "__nv_bfloat16" : "__half";
    if (h16) need(e, "tkc_ptx.cuh", "math");
    if (h16 && rhs->kind == EX_CALL && (rhs->fn == FN_BF16 || rhs->fn == FN_FP16)) rhs = rhs->u.call.args[0];
    const char *add1 = h16 ? arena_printf(e->a, "tkc_red_add_%s", k) : "tkc_red_add_f32";
    e->hoisted.n = 0;
    hoist_row_values(e, rhs);
    const char *wg0 = ps && ps->wg0_only ? "wg == 0 && " : "";
    if (t->kind == TY_VEC) {
        Ctx c = tile_ctx(pk, t, "tkc_r");
        L("if (%s(tkc_lane & 3) == 0) {  // one lane of each quad holds the row's value", wg0);
        IN();
        L("#pragma unroll");
        L("for (int tkc_r = 0; tkc_r < %d; ++tkc_r) {", frag_count(pk, t));
        IN();
        L("const long long tkc_gi = (long long)%s + %s;", move_coord(e, ix->u.index.args[n - 1].lo, t->rows), row_expr(e, &c));
        L("if (%stkc_gi < %s) %s(%s + %s, %s);", is_at(ix->u.index.args[n - 1].lo) ? "tkc_gi >= 0 && " : "",
          scalar_str(e, arg->ts.dims[n - 1], false), add1, tn->name, global_offset(e, tn, ix, "tkc_gi"), elem_str(e, rhs, &c));
        OUT();
        L("}");
        OUT();
        L("}");
        return;
    }
    const Expr *ri = ix->u.index.args[n - 2].lo, *ci = ix->u.index.args[n - 1].lo;
    L("%s{", ps && ps->wg0_only ? "if (wg == 0) " : "");
    IN();
    L("const long long tkc_r0 = (long long)%s;  // the tile's first row and column", move_coord(e, ri, t->rows));
    L("const long long tkc_c0 = (long long)%s;", move_coord(e, ci, t->cols));
    L("%s *const tkc_base = %s + %stkc_r0 * %s_st%d + tkc_c0 * %s_st%d;", h16 ? ct : "float", tn->name, lead_offset(e, tn, ix),
      tn->name, n - 2, tn->name, n - 1);
    if (h16)
        L("const bool tkc_pairs = %s_st%d == 1 && %s_st%d %% 2 == 0 && ((uintptr_t)tkc_base & 3) == 0;  // two %s per red.%sx2",
          tn->name, n - 1, tn->name, n - 2, k, t->dt == DT_BF16 ? "bf16" : "f16");
    else
        L("const bool tkc_pairs = %s_st%d == 1 && %s_st%d %% 2 == 0 && ((uintptr_t)tkc_base & 7) == 0;  // two fp32 per red.v2",
          tn->name, n - 1, tn->name, n - 2);
    Ctx c0 = tile_ctx(pk, t, "(2 * tkc_p)"), c1 = tile_ctx(pk, t, "(2 * tkc_p + 1)");
    const char *rows = scalar_str(e, arg->ts.dims[n - 2], false), *cols = scalar_str(e, arg->ts.dims[n - 1], false);
    L("#pragma unroll");
    L("for (int tkc_p = 0; tkc_p < %d; ++tkc_p) {", frag_count(pk, t) / 2);
    IN();
    L("const int tkc_r = %s, tkc_c = %s;", row_expr(e, &c0), col_expr(e, &c0, 0));
    L("const float tkc_x0 = %s, tkc_x1 = %s;", elem_str(e, rhs, &c0), elem_str(e, rhs, &c1));
    L("if (%stkc_r0 + tkc_r >= %s) continue;", is_at(ri) ? "tkc_r0 + tkc_r < 0 || " : "", rows);
    L("%s *const tkc_q = tkc_base + tkc_r * %s_st%d + tkc_c * %s_st%d;", h16 ? ct : "float", tn->name, n - 2, tn->name, n - 1);
    const char *lo = is_at(ci) ? "tkc_c0 + tkc_c >= 0 && " : "", *lo1 = is_at(ci) ? "tkc_c0 + tkc_c + 1 >= 0 && " : "";
    L("if (tkc_pairs && %stkc_c0 + tkc_c + 1 < %s) {", lo, cols);
    IN();
    if (h16) L("tkc_red_add_%sx2(tkc_q, tkc_pack_%s(tkc_x0, tkc_x1));", k, k);
    else L("tkc_red_add_v2_f32(tkc_q, tkc_x0, tkc_x1);");
    OUT();
    L("} else {");
    IN();
    L("if (%stkc_c0 + tkc_c < %s) %s(tkc_q, tkc_x0);", lo, cols, add1);
    L("if (%stkc_c0 + tkc_c + 1 < %s) %s(tkc_q + %s_st%d, tkc_x1);", lo1, cols, add1, tn->name, n - 1);
    OUT();
    L("}");
    OUT();
    L("}");
    OUT();
    L("}");
}

/* a tile stored at(row) may start above the tensor (a negative row), and TMA stores need
 * non-negative coordinates: such a 64-row chunk is written by the threads, element by element,
 * skipping the rows that do not exist; the warpgroup then skips the chunk's TMA store. Emitted
 * only where the row is not provably >= 0 (never_negative): the path is slow to have in a
 * kernel even when it never runs (attention measured 8% slower with it, bench/RESULTS.md) */
static void emit_chunk_above(Em *e, const Stmt *st, const Expr *rhs, int W) {
    const PlanKernel *pk = e->pk;
    const Expr *ix = st->u.assign.lhs;
    const Symbol *tn = ix->u.index.base->sym;
    const Arg *arg = e->sk->args.v[tn->index];
    const Type *t = &st->u.assign.rhs->ty;
    int n = ix->u.index.nargs, half = t->cols / 2;
    Ctx c = tile_ctx(pk, t, "tkc_f");
    L("if (tkc_r0 + tkc_rb * 64 < 0) {  // above the tensor: TMA stores need non-negative coordinates, so the threads write the rows that exist");
    IN();
    L("#pragma unroll");
    L("for (int tkc_j = 0; tkc_j < %d; ++tkc_j) {", W / 2);
    IN();
    L("const int tkc_f = tkc_rb * %d + tkc_ch * %d + tkc_j;", half, W / 2);
    L("const long long tkc_gr = (long long)%s + %s, tkc_gc = (long long)%s + %s;", move_coord(e, ix->u.index.args[n - 2].lo, t->rows),
      row_expr(e, &c), move_coord(e, ix->u.index.args[n - 1].lo, t->cols), col_expr(e, &c, 0));
    L("if (tkc_gr >= 0 && tkc_gr < %s && tkc_gc < %s)", scalar_str(e, arg->ts.dims[n - 2], false), scalar_str(e, arg->ts.dims[n - 1], false));
    L("    %s[%stkc_gr * %s_st%d + tkc_gc * %s_st%d] = %s(%s);", tn->name, lead_offset(e, tn, ix), tn->name, n - 2, tn->name,
      n - 1, cvt16(t->dt), elem_str(e, rhs, &c));
    OUT();
    L("}");
    L("continue;");
    OUT();
    L("}");
}

/* a register tile to global memory: 64-row chunks through the warpgroup's two staging
 * buffers (stmatrix into the swizzled layout, proxy fence, TMA store) */
static void emit_tile_store(Em *e, const Stmt *st) {
    const PlanKernel *pk = e->pk;
    const PlanStore *ps = store_of(pk, st);
    if (ps->direct) {
        emit_direct_store(e, st);
        return;
    }
    const PlanMap *m = &pk->maps.v[ps->map];
    const PlanBuf *sb = &pk->bufs.v[pk->staging_buf];
    const Expr *ix = st->u.assign.lhs, *rhs = st->u.assign.rhs;
    const Type *t = &rhs->ty;
    int n = ix->u.index.nargs, rwg = rows_wg(pk, t), W = ps->chunk_cols;
    int nch = t->cols / W, nrb = rwg / 64, half = t->cols / 2;
    int span = W * 2;
    need(e, "tkc_ptx.cuh", "tma_store");
    need(e, "tkc_ptx.cuh", "stmatrix");
    need(e, "tkc_ptx.cuh", "named_barrier");
    need(e, "tkc_ptx.cuh", "math");
    /* the pack rounds to 16 bits, so an explicit conversion of the whole value is implied */
    if (rhs->kind == EX_CALL && (rhs->fn == FN_BF16 || rhs->fn == FN_FP16)) rhs = rhs->u.call.args[0];
    e->hoisted.n = 0;
    hoist_row_values(e, rhs);
    const char *k = t->dt == DT_BF16 ? "bf16" : "fp16";
    L("{");
    IN();
    L("const int tkc_r0 = %s%s;  // first row of this warpgroup's part", move_coord(e, ix->u.index.args[n - 2].lo, t->rows),
      t->per_wg ? "" : arena_printf(e->a, " + wg * %d", rwg));
    L("const int tkc_c0 = %s;", move_coord(e, ix->u.index.args[n - 1].lo, t->cols));
    L("// this lane's stmatrix row address inside a 64 x %d chunk (%s swizzle)", W, swizzle_name(sb->swz));
    L("const int tkc_srow = 16 * tkc_warp + (tkc_lane & 7) + 8 * ((tkc_lane >> 3) & 1);");
    L("#pragma unroll");
    L("for (int tkc_rb = 0; tkc_rb < %d; ++tkc_rb) {", nrb);
    IN();
    L("#pragma unroll");
    L("for (int tkc_ch = 0; tkc_ch < %d; ++tkc_ch) {", nch);
    IN();
    if (ps->may_start_above) emit_chunk_above(e, st, rhs, W);
    if (pk->staging_per_wg == 2) {
        L("const uint32_t tkc_buf = %s_smem + (uint32_t)(wg * 2 + (tkc_st_cnt & 1)) * %d;", sb->name, sb->bytes);
        L("if (tkc_wg_thread == 0) tkc_bulk_wait_read<1>();  // the store that used this buffer has read it");
    } else {
        L("const uint32_t tkc_buf = %s_smem + (uint32_t)wg * %d;", sb->name, sb->bytes);
        L("if (tkc_wg_thread == 0) tkc_bulk_wait_read<0>();  // the previous store has read the buffer");
    }
    L("tkc_bar_sync(%d + wg, 128);", pk->nbars.v[pk->nbar_staging].id);
    L("#pragma unroll");
    L("for (int tkc_g = 0; tkc_g < %d; ++tkc_g) {", W / 16);
    IN();
    L("const int tkc_f = tkc_rb * %d + tkc_ch * %d + tkc_g * 8;  // first value of this 16-column group", half, W / 2);
    const char *vals[8];
    for (int j = 0; j < 8; j++) {
        Ctx c = tile_ctx(pk, t, arena_printf(e->a, "(tkc_f + %d)", j));
        vals[j] = elem_str(e, rhs, &c);
    }
    for (int j = 0; j < 4; j++) L("const uint32_t tkc_v%d = tkc_pack_%s(%s, %s);", j, k, vals[2 * j], vals[2 * j + 1]);
    L("const uint32_t tkc_o = (uint32_t)(tkc_srow * %d + (16 * tkc_g + 8 * (tkc_lane >> 4)) * 2);", span);
    if (sb->swz == SWZ_128) L("tkc_stmatrix_x4(tkc_buf + (tkc_o ^ (((tkc_o >> 7) & 7u) << 4)), tkc_v0, tkc_v1, tkc_v2, tkc_v3);");
    else if (sb->swz == SWZ_64) L("tkc_stmatrix_x4(tkc_buf + (tkc_o ^ (((tkc_o >> 7) & 3u) << 4)), tkc_v0, tkc_v1, tkc_v2, tkc_v3);");
    else L("tkc_stmatrix_x4(tkc_buf + (tkc_o ^ (((tkc_o >> 7) & 1u) << 4)), tkc_v0, tkc_v1, tkc_v2, tkc_v3);");
    OUT();
    L("}");
    L("tkc_fence_proxy_async();  // make the chunk visible to the TMA engine");
    L("tkc_bar_sync(%d + wg, 128);", pk->nbars.v[pk->nbar_staging].id);
    L("if (tkc_wg_thread == 0) {");
    IN();
    StrBuf co;
    sb_init(&co);
    sb_printf(&co, "tkc_c0 + tkc_ch * %d, tkc_r0 + tkc_rb * 64", W);
    for (int i = n - 3; i >= 0; i--) sb_printf(&co, ", %s", scalar_str(e, ix->u.index.args[i].lo, false));
    L("tkc_tma_store_%dd(&%s, %s, tkc_buf);", m->rank, m->name, co.s);
    sb_free(&co);
    L("tkc_bulk_commit();");
    OUT();
    L("}");
    L("++tkc_st_cnt;");
    OUT();
    L("}");
    OUT();
    L("}");
    OUT();
    L("}");
}

static const char *buf_addr(Em *e, int buf, bool prev) {
    const PlanBuf *b = &e->pk->bufs.v[buf];
    if (b->kind == BUF_RING)
        return arena_printf(e->a, "%s_smem + (uint32_t)%s * %d", b->name, prev ? "tkc_prev_stage" : "tkc_stage", b->bytes);
    if (b->kind == BUF_ONCE && b->copies > 1) return arena_printf(e->a, "%s_smem + (uint32_t)%s * %d", b->name, e->slot, b->bytes);
    return arena_printf(e->a, "%s_smem", b->name);
}

static void emit_mma(Em *e, const POp *o) {
    const PlanKernel *pk = e->pk;
    const PlanMma *m = o->mma;
    const PlanBuf *bb = &pk->bufs.v[m->b.buf];
    int nn, count;
    plan_mma_shape(m, &nn, &count);
    int ninst = m->n / nn;
    const char *dtn = m->in_dt == DT_BF16 ? "bf16" : "fp16";
    const char *form = m->a_reg ? "rs" : "ss";
    char frag[64];
    snprintf(frag, sizeof frag, "wgmma_m64n%dk16_%s_%s", nn, form, dtn);
    need(e, "wgmma.cuh", arena_strdup(e->a, frag));
    need(e, "tkc_ptx.cuh", "wgmma_sync");
    const char *dst = m->dst->name;
    int dhalf = m->n / 2;
    L("// %s %s %s  [wgmma m64n%dk16 x %d, %s]", m->dst->name, assignop_name[o->st->u.assign.op],
      ast_expr_str(e->a, o->st->u.assign.rhs), nn, count,
      m->a_reg ? "A from registers" : "A and B from shared memory");
    if (o->skip_first && e->mode == STEP_NONE) {
        L("if (tkc_steps > 0) {");
        IN();
    } else {
        L("{");
        IN();
    }
    /* a register A operand: the packed 16-bit pairs */
    const char *apairs = NULL;
    if (m->a_reg) {
        if (m->a_tmp) {
            apairs = m->a_tmp->name;
            if (!m->deferred) {
                /* convert now; the registers stay pinned until the product is waited for */
                const char *k = m->in_dt == DT_BF16 ? "bf16" : "fp16";
                need(e, "tkc_ptx.cuh", "math");
                const Expr *src = m->a_expr->kind == EX_CALL ? m->a_expr->u.call.args[0] : m->a_expr;
                e->hoisted.n = 0;
                hoist_row_values(e, src);
                L("#pragma unroll");
                L("for (int tkc_p = 0; tkc_p < %d; ++tkc_p) %s[tkc_p] = tkc_pack_%s(%s, %s);", frag_count(pk, &m->a_expr->ty) / 2, apairs, k,
                  elem_str(e, src, &(Ctx){CX_TILE, m->a_expr->ty.cols, rows_wg(pk, &m->a_expr->ty), m->a_expr->ty.per_wg, "(2 * tkc_p)"}),
                  elem_str(e, src, &(Ctx){CX_TILE, m->a_expr->ty.cols, rows_wg(pk, &m->a_expr->ty), m->a_expr->ty.per_wg, "(2 * tkc_p + 1)"}));
            }
        } else {
            apairs = m->a_expr->sym->name;
        }
    }
    L("#pragma unroll");
    L("for (int tkc_i = 0; tkc_i < %d; ++tkc_i) tkc_pin(%s[tkc_i]);", frag_count(pk, &m->dst->ty), dst);
    L("tkc_wgmma_fence();");
    MmaOperandLayout bl;
    TileLayout btl = {bb->rows, bb->cols, dtype_bytes[bb->dt], bb->swz};
    bl = mma_operand_layout(&btl, m->b.mn_major);
    uint32_t b0 = m->b.mn_major ? mma_operand_offset(&btl, true, m->b.col0, m->b.row0)
                                : mma_operand_offset(&btl, false, m->b.row0, m->b.col0);
    L("const uint64_t tkc_db = tkc_desc(%s + %u, %u, %u, %d);  // %s: %s, %s", buf_addr(e, m->b.buf, o->prev), b0, bl.lbo,
      bl.sbo, bl.mode, bb->name, m->b.mn_major ? "N-major" : "K-major", swizzle_name(bb->swz));
    TileLayout atl = {0};
    if (!m->a_reg) {
        const PlanBuf *ab = &pk->bufs.v[m->a.buf];
        atl = (TileLayout){ab->rows, ab->cols, dtype_bytes[ab->dt], ab->swz};
        MmaOperandLayout al = mma_operand_layout(&atl, m->a.mn_major);
        uint32_t a0 = m->a.mn_major ? mma_operand_offset(&atl, true, m->a.col0, m->a.row0)
                                    : mma_operand_offset(&atl, false, m->a.row0, m->a.col0);
        const char *wgoff = "";
        bool split = !m->dst->ty.per_wg;
        if (split) {
            uint32_t step = mma_operand_offset(&atl, m->a.mn_major, m->wg_m, 0) - mma_operand_offset(&atl, m->a.mn_major, 0, 0);
            wgoff = arena_printf(e->a, " + (uint32_t)wg * %u", step);
        }
        L("const uint64_t tkc_da = tkc_desc(%s + %u%s, %u, %u, %d);  // %s: %s, %s", buf_addr(e, m->a.buf, o->prev), a0, wgoff,
          al.lbo, al.sbo, al.mode, ab->name, m->a.mn_major ? "M-major" : "K-major", swizzle_name(ab->swz));
    }
    for (int rb = 0; rb < m->wg_m / 64; rb++)
        for (int p = 0; p < ninst; p++)
            for (int kk = 0; kk < m->k / 16; kk++) {
                uint32_t boff = mma_operand_offset(&btl, m->b.mn_major, p * nn, kk * 16) - mma_operand_offset(&btl, m->b.mn_major, 0, 0);
                const char *sd = "1";
                if (kk == 0 && !m->accumulate) sd = "0";
                else if (kk == 0 && m->zero_first) sd = e->mode == STEP_FIRST ? "0" : "1";
                int sa = m->negate ? -1 : 1;
                const char *acc = arena_printf(e->a, "&%s[%d]", dst, rb * dhalf + p * nn / 2);
                if (m->a_reg) {
                    int q = rb * (m->k / 4) + 4 * kk;
                    L("tkc_wgmma_m64n%dk16_rs_%s<%d, %d>(%s, %s[%d], %s[%d], %s[%d], %s[%d], tkc_db + %u, %s);", nn, dtn,
                      m->b.mn_major, sa, acc, apairs, q, apairs, q + 1, apairs, q + 2, apairs, q + 3, boff >> 4, sd);
                } else {
                    uint32_t aoff = mma_operand_offset(&atl, m->a.mn_major, rb * 64, kk * 16) - mma_operand_offset(&atl, m->a.mn_major, 0, 0);
                    L("tkc_wgmma_m64n%dk16_ss_%s<%d, %d, %d>(%s, tkc_da + %u, tkc_db + %u, %s);", nn, dtn, m->a.mn_major,
                      m->b.mn_major, sa, acc, aoff >> 4, boff >> 4, sd);
                }
            }
    L("tkc_wgmma_commit();");
    L("#pragma unroll");
    L("for (int tkc_i = 0; tkc_i < %d; ++tkc_i) tkc_pin(%s[tkc_i]);", frag_count(pk, &m->dst->ty), dst);
    OUT();
    L("}");
}

/* after a wgmma.wait_group: pin the registers of the products it completed, so the compiler
 * neither moved nor reused them while the products ran (products still in flight are left
 * alone: touching their registers would make ptxas serialize the pipeline) */
static void emit_pins(Em *e, const POp *w) {
    Vec(const Symbol *) done = {0};
    for (int i = 0; i < w->done.n; i++) {
        const PlanMma *m = w->done.v[i]->mma;
        if (e->nar && m == e->nar->first) m = &e->nar->first_narrow;
        const Symbol *ys[2] = {m->dst, m->a_tmp};
        for (int k = 0; k < 2; k++) {
            const Symbol *y = ys[k];
            if (!y) continue;
            bool seen = false;
            for (int j = 0; j < done.n; j++) seen |= done.v[j] == y;
            if (seen) continue;
            vec_push(e->a, &done, y);
            int n = frag_count(e->pk, &y->ty);
            if (y->ty.kind == TY_TILE && is16(y->ty.dt)) n /= 2;
            L("#pragma unroll");
            L("for (int tkc_i = 0; tkc_i < %d; ++tkc_i) tkc_pin(%s[tkc_i]);", n, y->name);
        }
    }
}

static const char *group_bar(Em *e, int g, bool full, bool prev) {
    const PlanGroup *pg = &e->pk->groups.v[g];
    const PlanBarrier *b = &e->pk->bars.v[full ? pg->full : pg->empty];
    if (pg->once) return b->copies > 1 ? arena_printf(e->a, "%s + 8 * %s", b->name, e->slot) : b->name;
    return arena_printf(e->a, "%s + 8 * %s", b->name, prev ? "tkc_prev_stage" : "tkc_stage");
}


/* ---- moves between registers and shared memory ------------------------------------------------- */

/* the tkc_tile_offset arguments of a shared tile: rows, cols, element bytes, swizzle span */
static const char *tile_shape_args(Em *e, const PlanBuf *b) {
    need(e, "tkc_layout.cuh", "tile_offset");
    return arena_printf(e->a, "%d, %d, %d, %d", b->rows, b->cols, dtype_bytes[b->dt], swizzle_bytes(b->swz));
}

/* the register side's first row in the shared tile: this warpgroup's part of a row-split tile */
static const char *move_row0(Em *e, const Type *t) {
    return t->per_wg ? "0" : arena_printf(e->a, "wg * %d", rows_wg(e->pk, t));
}

/* shared -> registers. 16-bit tiles: ldmatrix.x4 per 16 x 16 block, straight into the packed
 * pairs of the accumulator layout (or unpacked into an fp32 tile); fp32 tiles: one 8-byte
 * shared load per pair of neighbouring columns */
static void emit_move_s2r(Em *e, const PlanMove *m) {
    const PlanKernel *pk = e->pk;
    const PlanBuf *b = &pk->bufs.v[m->buf];
    const Type *t = m->rt;
    const Symbol *dst = m->reg;
    int pcols = dst->ty.cols, n = frag_count(pk, t);
    const char *src = buf_addr(e, m->buf, false), *shape = tile_shape_args(e, b);
    L("{");
    IN();
    L("const uint32_t tkc_src = %s;  // %s: %s swizzle", src, b->name, swizzle_name(b->swz));
    if (m->path == MP_LDMATRIX) {
        need(e, "tkc_ptx.cuh", "ldmatrix");
        int half = t->cols / 2;
        L("// lane l addresses row l %% 8 of 8x8 matrix l / 8 of each 16 x 16 block");
        L("const int tkc_mr = %s + 16 * tkc_warp + (tkc_lane & 7) + 8 * ((tkc_lane >> 3) & 1), tkc_mc = 8 * (tkc_lane >> 4);",
          move_row0(e, t));
        L("#pragma unroll");
        L("for (int tkc_rb = 0; tkc_rb < %d; ++tkc_rb) {", rows_wg(pk, t) / 64);
        IN();
        L("#pragma unroll");
        L("for (int tkc_g = 0; tkc_g < %d; ++tkc_g) {", t->cols / 16);
        IN();
        L("const int tkc_f = tkc_rb * %d + tkc_g * 8;  // the block's first value", half);
        L("const uint32_t tkc_a = tkc_src + tkc_tile_offset(%s, 64 * tkc_rb + tkc_mr, 16 * tkc_g + tkc_mc);", shape);
        Ctx c = tile_ctx(pk, t, "tkc_f");
        const char *pi = parent_index(e, &c, pcols, m->col0);
        /* a move does not convert (sema): the packed pairs land as they are */
        L("const int tkc_q = %s >> 1;", pi);
        L("tkc_ldmatrix_x4(tkc_a, %s[tkc_q], %s[tkc_q + 1], %s[tkc_q + 2], %s[tkc_q + 3]);", dst->name, dst->name, dst->name,
          dst->name);
        OUT();
        L("}");
        OUT();
        L("}");
    } else {
        need(e, "tkc_ptx.cuh", "shared_v2");
        Ctx c = tile_ctx(pk, t, "(2 * tkc_p)");
        L("#pragma unroll");
        L("for (int tkc_p = 0; tkc_p < %d; ++tkc_p) {", n / 2);
        IN();
        L("float tkc_x, tkc_y;");
        L("tkc_lds_v2(tkc_src + tkc_tile_offset(%s, %s, %s), tkc_x, tkc_y);", shape, row_expr(e, &c), col_expr(e, &c, 0));
        const char *pi = parent_index(e, &c, pcols, m->col0);
        L("%s[%s] = tkc_x;", dst->name, pi);
        L("%s[%s + 1] = tkc_y;", dst->name, pi);
        OUT();
        L("}");
    }
    OUT();
    L("}");
}

/* registers -> shared: the value is computed per element in the accumulator layout; 16-bit
 * tiles get stmatrix.x4 per 16 x 16 block, fp32 tiles one 8-byte store per pair of columns */
static void emit_move_r2s(Em *e, const PlanMove *m) {
    const PlanKernel *pk = e->pk;
    const PlanBuf *b = &pk->bufs.v[m->buf];
    const Type *t = m->rt;
    const Expr *rhs = m->st->u.assign.rhs;
    if (rhs->kind == EX_CALL && (rhs->fn == FN_BF16 || rhs->fn == FN_FP16)) rhs = rhs->u.call.args[0]; /* the pack rounds */
    e->hoisted.n = 0;
    hoist_row_values(e, rhs);
    const char *dst = buf_addr(e, m->buf, false), *shape = tile_shape_args(e, b);
    L("%s{%s", m->wg0_only ? "if (wg == 0) " : "", m->wg0_only ? "  // a per_wg value: every warpgroup holds it, the first writes it" : "");
    IN();
    L("const uint32_t tkc_dst = %s;  // %s: %s swizzle", dst, b->name, swizzle_name(b->swz));
    if (m->path == MP_STMATRIX) {
        need(e, "tkc_ptx.cuh", "stmatrix");
        need(e, "tkc_ptx.cuh", "math");
        const char *k = b->dt == DT_BF16 ? "bf16" : "fp16";
        int half = t->cols / 2;
        L("const int tkc_mr = %s + 16 * tkc_warp + (tkc_lane & 7) + 8 * ((tkc_lane >> 3) & 1), tkc_mc = 8 * (tkc_lane >> 4);",
          move_row0(e, t));
        L("#pragma unroll");
        L("for (int tkc_rb = 0; tkc_rb < %d; ++tkc_rb) {", rows_wg(pk, t) / 64);
        IN();
        L("#pragma unroll");
        L("for (int tkc_g = 0; tkc_g < %d; ++tkc_g) {", t->cols / 16);
        IN();
        L("const int tkc_f = tkc_rb * %d + tkc_g * 8;  // the block's first value", half);
        const char *vals[8];
        for (int j = 0; j < 8; j++) {
            Ctx c = tile_ctx(pk, t, arena_printf(e->a, "(tkc_f + %d)", j));
            vals[j] = elem_str(e, rhs, &c);
        }
        for (int j = 0; j < 4; j++) L("const uint32_t tkc_v%d = tkc_pack_%s(%s, %s);", j, k, vals[2 * j], vals[2 * j + 1]);
        L("tkc_stmatrix_x4(tkc_dst + tkc_tile_offset(%s, 64 * tkc_rb + tkc_mr, 16 * tkc_g + tkc_mc), tkc_v0, tkc_v1, tkc_v2, "
          "tkc_v3);",
          shape);
        OUT();
        L("}");
        OUT();
        L("}");
    } else {
        need(e, "tkc_ptx.cuh", "shared_v2");
        Ctx c0 = tile_ctx(pk, t, "(2 * tkc_p)"), c1 = tile_ctx(pk, t, "(2 * tkc_p + 1)");
        L("#pragma unroll");
        L("for (int tkc_p = 0; tkc_p < %d; ++tkc_p)", frag_count(pk, t) / 2);
        L("    tkc_sts_v2(tkc_dst + tkc_tile_offset(%s, %s, %s), %s, %s);", shape, row_expr(e, &c0), col_expr(e, &c0, 0),
          elem_str(e, rhs, &c0), elem_str(e, rhs, &c1));
    }
    OUT();
    L("}");
}


/* the relayout reads and the vector write (lower.c, relayouts) */
static void emit_move_relayout(Em *e, const PlanMove *m) {
    const PlanKernel *pk = e->pk;
    const PlanBuf *b = &pk->bufs.v[m->buf];
    const char *base = buf_addr(e, m->buf, false);
    need(e, "tkc_ptx.cuh", "shared_f32");
    const char *ld = b->dt == DT_BF16 ? "tkc_ld_shared_bf16" : b->dt == DT_FP16 ? "tkc_ld_shared_fp16" : "tkc_ld_shared_f32";
    switch (m->path) {
    case MP_STS_VEC: {
        const Symbol *v = m->st->u.assign.rhs->sym;
        Ctx c = tile_ctx(pk, &v->ty, "tkc_r");
        bool col = v->ty.layout == VL_COL;
        const char *who = col ? "wg == 0 && tkc_warp == 0 && tkc_lane < 4"
                              : v->ty.per_wg && pk->consumers > 1 ? "wg == 0 && (tkc_lane & 3) == 0" : "(tkc_lane & 3) == 0";
        L("if (%s) {  // one thread per %s", who, col ? "column" : "row");
        IN();
        L("#pragma unroll");
        L("for (int tkc_r = 0; tkc_r < %d; ++tkc_r) tkc_st_shared_f32(%s + (uint32_t)%s * 4, %s[tkc_r]);", frag_count(pk, &v->ty), base,
          col ? col_expr(e, &c, 0) : row_expr(e, &c), v->name);
        OUT();
        L("}");
        return;
    }
    case MP_LDS_VEC: emit_vec_from_shared(e, m->st); return;
    case MP_LDS_LINE: {
        const Symbol *v = m->reg;
        Ctx c = tile_ctx(pk, &v->ty, "tkc_r");
        const char *at = m->line_col ? arena_printf(e->a, "%s, %d", row_expr(e, &c), m->line)
                                     : arena_printf(e->a, "%d, %s", m->line, col_expr(e, &c, 0));
        L("#pragma unroll");
        L("for (int tkc_r = 0; tkc_r < %d; ++tkc_r) %s[tkc_r] = %s(%s + tkc_tile_offset(%s, %s));  // %s %d", frag_count(pk, &v->ty),
          v->name, ld, base, tile_shape_args(e, b), at, m->line_col ? "column" : "row", m->line);
        return;
    }
    case MP_LDS_T: {
        const Symbol *t = m->reg;
        int n = frag_count(pk, &t->ty);
        Ctx c0 = tile_ctx(pk, &t->ty, "(2 * tkc_p)"), c1 = tile_ctx(pk, &t->ty, "(2 * tkc_p + 1)");
        const char *shape = tile_shape_args(e, b);
        L("#pragma unroll");
        L("for (int tkc_p = 0; tkc_p < %d; ++tkc_p) {  // element (r, c) of the transpose is (c, r) of '%s'", n / 2, b->name);
        IN();
        L("const int tkc_r = %s, tkc_c = %s;", row_expr(e, &c0), col_expr(e, &c0, 0));
        L("const float tkc_x = %s(%s + tkc_tile_offset(%s, tkc_c, tkc_r));", ld, base, shape);
        L("const float tkc_y = %s(%s + tkc_tile_offset(%s, tkc_c + 1, tkc_r));", ld, base, shape);
        (void)c1;
        if (is16(t->ty.dt)) {
            need(e, "tkc_ptx.cuh", "math");
            L("%s[tkc_p] = tkc_pack_%s(tkc_x, tkc_y);", t->name, t->ty.dt == DT_BF16 ? "bf16" : "fp16");
        } else {
            L("%s[2 * tkc_p] = tkc_x;", t->name);
            L("%s[2 * tkc_p + 1] = tkc_y;", t->name);
        }
        OUT();
        L("}");
        return;
    }
    default: return;
    }
}

/* a shared tile to global memory by TMA (a store or a reduce-add), one box per swizzle atom,
 * issued by the first thread of the first consumer warpgroup */
static void emit_tma_store_shared(Em *e, const PlanStore *ps) {
    const PlanKernel *pk = e->pk;
    const PlanBuf *b = &pk->bufs.v[ps->buf];
    const PlanMap *m = &pk->maps.v[ps->map];
    const Expr *ix = ps->st->u.assign.lhs;
    int n = ix->u.index.nargs;
    bool add = ps->path == SP_TMA_ADD;
    need(e, "tkc_ptx.cuh", "tma_store");
    if (add) need(e, "tkc_ptx.cuh", "tma_reduce");
    L("if (wg == 0 && tkc_wg_thread == 0) {  // %d %s of %d x %d", b->natoms, add ? (b->natoms == 1 ? "reduce-add" : "reduce-adds") : (b->natoms == 1 ? "box" : "boxes"),
      m->box[1], m->box[0]);
    IN();
    const char *src = buf_addr(e, ps->buf, false);
    int box_bytes = b->rows * b->atom_cols * dtype_bytes[b->dt];
    for (int a = 0; a < b->natoms; a++) {
        StrBuf co;
        sb_init(&co);
        if (b->is_vec) {
            sb_printf(&co, "%s", move_coord(e, ix->u.index.args[n - 1].lo, b->cols));
            for (int i = n - 2; i >= 0; i--) sb_printf(&co, ", %s", scalar_str(e, ix->u.index.args[i].lo, false));
        } else {
            sb_printf(&co, "%s + %d, %s", move_coord(e, ix->u.index.args[n - 1].lo, b->cols), a * b->atom_cols,
                      move_coord(e, ix->u.index.args[n - 2].lo, b->rows));
            for (int i = n - 3; i >= 0; i--) sb_printf(&co, ", %s", scalar_str(e, ix->u.index.args[i].lo, false));
        }
        L("tkc_tma_%s_%dd(&%s, %s, %s%s);", add ? "add" : "store", m->rank, m->name, co.s, src,
          a ? arena_printf(e->a, " + %d", a * box_bytes) : "");
        sb_free(&co);
    }
    L("tkc_bulk_commit();");
    if (b->kind == BUF_RING || b->kind == BUF_ONCE)
        L("tkc_bulk_wait_read<0>();  // the TMA store has read '%s' before its stage is released", b->name);
    OUT();
    L("}");
}

static void emit_store(Em *e, const POp *o) {
    const PlanStore *ps = &e->pk->stores.v[o->store];
    const Stmt *st = ps->st;
    L("// %s  [%s]", plan_stmt_line(e, st), storepath_name[ps->path]);
    switch (ps->path) {
    case SP_STAGED: case SP_DIRECT: emit_tile_store(e, st); return;
    case SP_VECTOR: emit_vec_store(e, st); return;
    case SP_TMA: case SP_TMA_ADD: emit_tma_store_shared(e, ps); return;
    case SP_RED: emit_red(e, st); return;
    }
}

static void emit_stmt(Em *e, const Stmt *st) {
    switch (st->kind) {
    case ST_LET: {
        const Symbol *y = st->u.let.sym;
        if (y->ty.kind == TY_TILE || y->ty.kind == TY_VEC) {
            L("%s", reg_decl(e, y));
            Stmt fake = {.kind = ST_ASSIGN, .span = st->span};
            fake.u.assign.op = AS_SET;
            fake.u.assign.rhs = st->u.let.e;
            emit_reg_assign(e, &fake, NULL, y->name, &y->ty);
        } else {
            L("const %s %s = %s;", y->ty.kind == TY_FLOAT ? "float" : "int", y->name, scalar_str(e, st->u.let.e, false));
        }
        return;
    }
    case ST_ASSIGN:
        if (st->mv == MV_G2R) {
            emit_vec_load(e, st);
            return;
        }
        if (st->mv == MV_S2R) {
            emit_vec_from_shared(e, st);
            return;
        }
        emit_reg_assign(e, st, st->u.assign.lhs, NULL, &st->u.assign.lhs->ty);
        return;
    default:
        return;
    }
}

static void emit_op(Em *e, const POp *o) {
    const PlanKernel *pk = e->pk;
    /* ops that need a previous step: always true inside the loop (it starts at step 1) */
    const char *guard = e->mode == STEP_NONE ? "tkc_steps > 0" : NULL;
    switch (o->kind) {
    case POP_STMT:
        if (o->st->kind == ST_ASSIGN) {
            StrBuf b;
            sb_init(&b);
            ast_print_expr(&b, o->st->u.assign.lhs);
            sb_printf(&b, " %s ", assignop_name[o->st->u.assign.op]);
            ast_print_expr(&b, o->st->u.assign.rhs);
            L("// %s", b.s);
            sb_free(&b);
        } else if (o->st->kind == ST_LET) {
            L("// let %s = %s", o->st->u.let.name, ast_expr_str(e->a, o->st->u.let.e));
        }
        emit_stmt(e, o->st);
        return;
    case POP_MMA:
        if (e->nar && o->mma == e->nar->first) {
            POp narrow = *o;
            narrow.mma = (PlanMma *)&e->nar->first_narrow;  /* read only */
            emit_mma(e, &narrow);
        } else if (pk->tail && o->mma == pk->tail->deferred && e->mode == STEP_NONE) {
            /* the last step's deferred product: over the narrow copy's columns when it ran narrow */
            POp narrow = *o;
            narrow.mma = (PlanMma *)&pk->tail->deferred_narrow;  /* read only */
            L("// %s %s %s: the last step's, over %d rows of %s when that step ran narrow", o->mma->dst->name,
              assignop_name[o->st->u.assign.op], ast_expr_str(e->a, o->st->u.assign.rhs), pk->tail->cols,
              pk->bufs.v[o->mma->b.buf].name);
            L("if (tkc_narrow) {");
            IN();
            emit_mma(e, &narrow);
            OUT();
            L("} else {");
            IN();
            emit_mma(e, o);
            OUT();
            L("}");
        } else {
            emit_mma(e, o);
        }
        return;
    case POP_MATERIALIZE: {
        const PlanMma *m = e->nar && o->mma == e->nar->deferred ? &e->nar->deferred_narrow : o->mma;
        const char *k = m->in_dt == DT_BF16 ? "bf16" : "fp16";
        const Expr *src = m->a_expr->kind == EX_CALL && (m->a_expr->fn == FN_BF16 || m->a_expr->fn == FN_FP16)
                              ? m->a_expr->u.call.args[0] : m->a_expr;
        need(e, "tkc_ptx.cuh", "math");
        e->hoisted.n = 0;
        hoist_row_values(e, src);
        const Type *at = value_type(e, m->a_expr);
        Ctx c0 = tile_ctx(pk, at, "(2 * tkc_p)"), c1 = tile_ctx(pk, at, "(2 * tkc_p + 1)");
        L("// %s = %s: the A operand of the deferred product", m->a_tmp->name, ast_expr_str(e->a, m->a_expr));
        L("#pragma unroll");
        L("for (int tkc_p = 0; tkc_p < %d; ++tkc_p) %s[tkc_p] = tkc_pack_%s(%s, %s);", frag_count(pk, at) / 2, m->a_tmp->name, k,
          elem_str(e, src, &c0), elem_str(e, src, &c1));
        return;
    }
    case POP_WAIT_FULL: {
        const PlanGroup *pg = &pk->groups.v[o->group];
        const char *par = pg->once ? "tkc_tile_phase" : o->prev ? "tkc_prev_phase" : "tkc_phase";
        if (o->skip_first && guard) L("if (%s) tkc_mbar_wait(%s, %s);  // %s landed", guard, group_bar(e, o->group, true, o->prev), par, pg->name);
        else L("tkc_mbar_wait(%s, %s);  // %s landed", group_bar(e, o->group, true, o->prev), par, pg->name);
        return;
    }
    case POP_WAIT_MMA:
        L("tkc_wgmma_wait<%d>();%s%s", o->n, o->note ? "  // " : "", o->note ? o->note : "");
        emit_pins(e, o);
        return;
    case POP_RELEASE: {
        const PlanGroup *pg = &pk->groups.v[o->group];
        const char *cond = o->skip_first && guard ? arena_printf(e->a, "%s && tkc_wg_thread == 0", guard) : "tkc_wg_thread == 0";
        if (o->last_step)
            cond = arena_printf(e->a, "%s == tkc_steps - 1 && tkc_wg_thread == 0", e->sk->loopvar->name);
        if (o->no_steps) cond = "tkc_steps == 0 && tkc_wg_thread == 0";
        if (pg->multicast && pk->cluster > 1)
            L("if (%s) for (uint32_t tkc_c = 0; tkc_c < %d; ++tkc_c) tkc_mbar_arrive_cluster(%s, tkc_c);  // release %s%s "
              "in every block of the cluster",
              cond, pk->cluster, group_bar(e, o->group, false, o->prev), pg->name, o->prev ? " (previous step)" : "");
        else
            L("if (%s) tkc_mbar_arrive(%s);  // release %s%s%s%s", cond, group_bar(e, o->group, false, o->prev), pg->name,
              o->prev ? " (previous step)" : "", o->last_step || o->no_steps ? ": " : "",
              o->last_step || o->no_steps ? o->note : "");
        return;
    }
    case POP_IF:
        L("if (%s) {", scalar_str(e, o->st->u.if_.cond, false));
        IN();
        emit_ops(e, &o->then_ops);
        OUT();
        if (o->else_ops.n) {
            L("} else {");
            IN();
            emit_ops(e, &o->else_ops);
            OUT();
        }
        L("}");
        return;
    case POP_FOR: {
        const Stmt *st = o->st;
        if (st->u.for_.lo->is_const && st->u.for_.hi->is_const) L("#pragma unroll");
        L("for (int %s = %s; %s < %s; ++%s) {", st->u.for_.var, scalar_str(e, st->u.for_.lo, false), st->u.for_.var,
          scalar_str(e, st->u.for_.hi, false), st->u.for_.var);
        IN();
        emit_ops(e, &o->then_ops);
        OUT();
        L("}");
        return;
    }
    case POP_SYNC:
        need(e, "tkc_ptx.cuh", "named_barrier");
        L("tkc_bar_sync(%d, %d);  // sync(): all consumer warpgroups", pk->nbars.v[pk->nbar_sync].id, 128 * pk->consumers);
        return;
    case POP_PP_WAIT:
        need(e, "tkc_ptx.cuh", "named_barrier");
        L("tkc_bar_sync(%d + wg, 256);  // pingpong: wait for this warpgroup's turn on the tensor cores",
          pk->nbars.v[pk->nbar_pingpong].id);
        return;
    case POP_MOVE:
        L("// %s  [%s]", plan_stmt_line(e, o->st), movepath_name[o->mv->path]);
        if (o->mv->path >= MP_LDS_T) emit_move_relayout(e, o->mv);
        else if (o->mv->to_shared) emit_move_r2s(e, o->mv);
        else emit_move_s2r(e, o->mv);
        return;
    case POP_BAR: {
        const PlanNamedBar *nb = &pk->nbars.v[o->bar];
        need(e, "tkc_ptx.cuh", "named_barrier");
        if (o->bulk_read) {
            need(e, "tkc_ptx.cuh", "tma_store");
            L("if (wg == 0 && tkc_wg_thread == 0) tkc_bulk_wait_read<0>();  // TMA stores have read '%s'",
              pk->bufs.v[o->buf].name);
        }
        L("tkc_bar_sync(%d, %d);  // %s: %s", nb->id, nb->threads, nb->name, o->note ? o->note : nb->why);
        return;
    }
    case POP_FENCE:
        need(e, "tkc_ptx.cuh", "tma_store");
        L("tkc_fence_proxy_async();  // %s", o->note ? o->note : "visible to the async proxy");
        return;
    case POP_STORE:
        emit_store(e, o);
        return;
    case POP_PP_PASS:
        L("tkc_bar_arrive(%d + (wg + 1) %% %d, 256);  // pingpong: the next warpgroup's turn", pk->nbars.v[pk->nbar_pingpong].id,
          pk->consumers);
        return;
    }
}

/* --line-directives: code from a .tk statement is preceded by "#line <its line> <the .tk>" and
 * followed by a directive back to the .cu; TKC_NEXT_LINE is replaced with the real line number
 * once the whole file is assembled */
static void line_to_tk(Em *e, Span sp) {
    if (!e->o->line_directives || !e->o->diag || sp.file < 0) return;
    int line, col;
    diag_linecol(e->o->diag, sp, &line, &col);
    sb_printf(e->b, "#line %d \"%s\"\n", line, e->o->diag->files.v[sp.file].path);
}

static void line_back(Em *e) {
    if (!e->o->line_directives) return;
    sb_printf(e->b, "#line TKC_NEXT_LINE \"%s\"\n", e->o->output_name);
}

static void emit_ops(Em *e, const POpList *ops) {
    for (int i = 0; i < ops->n; i++) {
        const POp *o = ops->v[i];
        bool mapped = o->st && (o->kind == POP_STMT || o->kind == POP_MMA || o->kind == POP_MATERIALIZE ||
                                o->kind == POP_MOVE || o->kind == POP_STORE);
        if (mapped) line_to_tk(e, o->st->span);
        emit_op(e, o);
        if (mapped) line_back(e);
    }
}

static void emit_op_range(Em *e, const POpList *ops, int from, int to) {
    POpList part = {.v = ops->v + from, .n = to - from, .cap = to - from};
    emit_ops(e, &part);
}

/* ---- the kernel ----------------------------------------------------------------------------------- */

static const char *let_ctype(const Symbol *y) { return y->ty.kind == TY_FLOAT ? "float" : "int"; }

static void emit_lets(Em *e) {
    const SemaKernel *sk = e->sk;
    for (int i = 0; i < sk->lets.n; i++) {
        const KItem *it = sk->lets.v[i];
        const Symbol *y = it->u.let.sym;
        L("const %s %s = %s;", let_ctype(y), y->name, scalar_str(e, it->u.let.e, false));
    }
}

/* lookahead: the next work tile's coordinates and lets, computed once for its first products and
 * carried into its iteration of the tile loop (tkc_next_<name>) instead of computed again there:
 * the carriers are declared before the first lookahead, stored by each, loaded by the loop */
typedef enum { NEXT_DECLARE, NEXT_STORE, NEXT_LOAD } NextCoords;

static void emit_next_coords(Em *e, NextCoords what) {
    const SemaKernel *sk = e->sk;
    for (int i = 0; i < sk->axes.n; i++) {
        const char *nm = sk->axes.v[i]->name;
        if (what == NEXT_DECLARE) L("int tkc_next_block_%s = 0;", nm);
        else if (what == NEXT_STORE) L("tkc_next_block_%s = block_%s;", nm, nm);
        else L("const int block_%s = tkc_next_block_%s;", nm, nm);
    }
    for (int i = 0; i < sk->lets.n; i++) {
        const Symbol *y = sk->lets.v[i]->u.let.sym;
        if (what == NEXT_DECLARE) L("%s tkc_next_%s = 0;", let_ctype(y), y->name);
        else if (what == NEXT_STORE) L("tkc_next_%s = %s;", y->name, y->name);
        else L("const %s %s = tkc_next_%s;", let_ctype(y), y->name, y->name);
    }
    if (what == NEXT_LOAD)
        for (int i = 0; i < sk->axes.n; i++) L("(void)block_%s;", sk->axes.v[i]->name);
}

/* the fold of block_<nm> over the extent <ext>nm: last, first, second last, second, ... */
static void emit_fold(Em *e, const char *nm, const char *ext, const char *more) {
    L("block_%s = (block_%s & 1) ? block_%s / 2 : %s%s - 1 - block_%s / 2;  // folded: last, first, %s", nm, nm, nm, ext, nm,
      nm, more);
}

/* block_<axis> for the work tile whose index is in the variable `tile` */
static void emit_tile_coords(Em *e, const char *tile) {
    const PlanKernel *pk = e->pk;
    const SemaKernel *sk = e->sk;
    int n = sk->axes.n;
    for (int i = 0; i < n; i++) L("int block_%s;", sk->axes.v[i]->name);
    L("{");
    IN();
    L("int tkc_t = %s;%s", tile,
      pk->cluster > 1 ? arena_printf(e->a, "  // a cluster's work tile: the blocks of a cluster split axis %s",
                                     sk->axes.v[pk->cluster_axis]->name)
                      : "");
    if (pk->order == ORDER_ROW_MAJOR || n < 2) {
        L("// row-major: the last axis varies fastest");
        for (int i = n - 1; i >= 0; i--) {
            const char *nm = sk->axes.v[i]->name;
            if (i) L("block_%s = tkc_t %% tkc_wext_%s; tkc_t /= tkc_wext_%s;", nm, nm, nm);
            else L("block_%s = tkc_t;", nm);
        }
    } else {
        /* grouped order over the first two axes; further axes outermost */
        const char *a0 = sk->axes.v[0]->name, *a1 = sk->axes.v[1]->name;
        bool m = pk->order == ORDER_SUPER_M;
        const char *g = m ? a0 : a1, *o = m ? a1 : a0;
        L("// %s(%d): strips of %d %s-blocks walked column by column, for L2 reuse", m ? "super_m" : "super_n",
          pk->order_group, pk->order_group, g);
        if (n > 2) {
            L("const int tkc_plane = tkc_wext_%s * tkc_wext_%s;", a0, a1);
            L("int tkc_outer = tkc_t / tkc_plane; tkc_t %%= tkc_plane;");
            for (int i = n - 1; i >= 2; i--) {
                const char *nm = sk->axes.v[i]->name;
                if (i > 2) L("block_%s = tkc_outer %% tkc_wext_%s; tkc_outer /= tkc_wext_%s;", nm, nm, nm);
                else L("block_%s = tkc_outer;", nm);
            }
        }
        L("const int tkc_per_strip = %d * tkc_wext_%s;", pk->order_group, o);
        L("const int tkc_first = tkc_t / tkc_per_strip * %d;", pk->order_group);
        L("const int tkc_height = min(tkc_wext_%s - tkc_first, %d);", g, pk->order_group);
        L("block_%s = tkc_first + (tkc_t %% tkc_per_strip) %% tkc_height;", g);
        L("block_%s = (tkc_t %% tkc_per_strip) / tkc_height;", o);
    }
    bool cl = pk->cluster > 1;
    for (int i = 0; i < n; i++) {
        const char *nm = sk->axes.v[i]->name;
        if (sk->axes.v[i]->reversed) L("block_%s = tkc_wext_%s - 1 - block_%s;  // reversed: longest first", nm, nm, nm);
        if (sk->axes.v[i]->folded && !(cl && i == pk->cluster_axis))
            emit_fold(e, nm, "tkc_wext_", "second last, ...");
    }
    if (cl) {
        const Axis *ca = sk->axes.v[pk->cluster_axis];
        L("block_%s = block_%s * %d + (int)tkc_rank;  // this block's part of the cluster's tile", ca->name, ca->name,
          pk->cluster);
        if (ca->folded)  /* the fold of the whole axis: a cluster takes the pair it puts together */
            emit_fold(e, ca->name, "tkc_ext_", "...; with an odd extent both blocks of the last pair get the middle tile");
    }
    OUT();
    L("}");
    for (int i = 0; i < n; i++) L("(void)block_%s;", sk->axes.v[i]->name);
}

/* the work tile a block (a cluster) takes first, or after tkc_tile: the walk of emit_tile_loop */
static const char *walk_tile(Em *e, bool next) {
    int c = e->pk->cluster;
    if (e->pk->paired)
        return next ? "tkc_pair_walk(tkc_k + 1, blockIdx.x, gridDim.x, tkc_ntiles)"
                    : "tkc_pair_walk(0, blockIdx.x, gridDim.x, tkc_ntiles)";
    if (c > 1)
        return next ? arena_printf(e->a, "tkc_tile + (int)gridDim.x / %d", c) : arena_printf(e->a, "(int)blockIdx.x / %d", c);
    return next ? "tkc_tile + (int)gridDim.x" : "(int)blockIdx.x";
}

static void emit_tile_loop(Em *e) {
    int c = e->pk->cluster;
    if (e->pk->paired) {
        need(e, "tkc_sched.cuh", "pair_walk");
        L("// folded axis: each block takes neighbouring work tiles two at a time, a long one and its short partner");
        L("for (int tkc_k = 0, tkc_tile; (tkc_tile = tkc_pair_walk(tkc_k, blockIdx.x, gridDim.x, tkc_ntiles)) >= 0; ++tkc_k) {");
    } else if (c > 1)
        L("for (int tkc_tile = blockIdx.x / %d; tkc_tile < tkc_ntiles; tkc_tile += gridDim.x / %d) {", c, c);
    else
        L("for (int tkc_tile = blockIdx.x; tkc_tile < tkc_ntiles; tkc_tile += gridDim.x) {");
}

static void emit_load_stmt(Em *e, const PlanGroup *pg, const PlanLoad *pl, const char *bar) {
    const PlanKernel *pk = e->pk;
    const PlanBuf *b = &pk->bufs.v[pl->buf];
    const PlanMap *m = &pk->maps.v[pl->map];
    const Expr *ix = pl->st->u.assign.rhs;
    int n = ix->u.index.nargs;
    L("// %s <- %s  (%d box%s of %d x %d)", b->name, ast_expr_str(e->a, ix), b->natoms, b->natoms == 1 ? "" : "es",
      m->box[1], m->box[0]);
    const char *dst = buf_addr(e, pl->buf, false);
    (void)pg;
    if (m->rank == 1) need(e, "tkc_ptx.cuh", "tma_load_1d");
    int box_bytes = b->rows * b->atom_cols * dtype_bytes[b->dt];
    for (int a = 0; a < b->natoms; a++) {
        StrBuf co;
        sb_init(&co);
        if (b->is_vec) {
            sb_printf(&co, "%s", move_coord(e, ix->u.index.args[n - 1].lo, b->cols));
            if (a) sb_printf(&co, " + %d", a * b->atom_cols);
            for (int i = n - 2; i >= 0; i--) sb_printf(&co, ", %s", scalar_str(e, ix->u.index.args[i].lo, false));
        } else {
            sb_printf(&co, "%s + %d, %s", move_coord(e, ix->u.index.args[n - 1].lo, b->cols), a * b->atom_cols,
                      move_coord(e, ix->u.index.args[n - 2].lo, b->rows));
            for (int i = n - 3; i >= 0; i--) sb_printf(&co, ", %s", scalar_str(e, ix->u.index.args[i].lo, false));
        }
        const char *off = a ? arena_printf(e->a, " + %d", a * box_bytes) : "";
        if (pl->multicast) {
            int who = b->natoms >= pk->cluster ? a % pk->cluster : 0;
            need(e, "tkc_ptx.cuh", "cluster");
            L("if (tkc_rank == %d) tkc_tma_load_%dd_mc(%s%s, &%s, %s, %s, 0x%x);  // into every block of the cluster", who,
              m->rank, dst, off, m->name, co.s, bar, (1u << pk->cluster) - 1);
        } else {
            L("tkc_tma_load_%dd(%s%s, &%s, %s, %s);", m->rank, dst, off, m->name, co.s, bar);
        }
        sb_free(&co);
    }
}

/* the bytes a group's full barrier expects this phase: all its tiles, less those of loads whose
 * condition does not hold (the producer arrives either way, so the consumers' wait returns) */
static const char *group_tx(Em *e, const PlanGroup *pg) {
    int base = 0;
    StrBuf b;
    sb_init(&b);
    for (int i = 0; i < pg->loads.n; i++) {
        const PlanLoad *pl = &pg->loads.v[i];
        int bytes = plan_buf_tx_bytes(&e->pk->bufs.v[pl->buf]);
        if (!pl->cond) base += bytes;
        else sb_printf(&b, " + ((%s) ? %d : 0)", scalar_str(e, pl->cond, false), bytes);
    }
    const char *r = b.len ? arena_printf(e->a, "%d%s", base, b.s) : arena_printf(e->a, "%d", pg->bytes);
    sb_free(&b);
    return r;
}

static void emit_cond_load(Em *e, const PlanGroup *pg, const PlanLoad *pl, const char *bar) {
    if (!pl->cond) {
        emit_load_stmt(e, pg, pl, bar);
        return;
    }
    L("if (%s) {  // a load under an if", scalar_str(e, pl->cond, false));
    IN();
    emit_load_stmt(e, pg, pl, bar);
    OUT();
    L("}");
}

/* the end of a work tile: the next one uses the other copy of the setup tiles (setup_stages = 2),
 * and the phase of their barriers flips once both copies were used */
static void emit_next_setup_slot(Em *e) {
    if (e->pk->setup_stages > 1) L("if (++tkc_setup_slot == 2) { tkc_setup_slot = 0; tkc_tile_phase ^= 1; }");
    else L("tkc_tile_phase ^= 1;");
}

/* the producer computes the block's scalar lets too, where its loads may use them */
static void emit_scalar_lets(Em *e, const StmtList *l) {
    for (int i = 0; i < l->n; i++) {
        const Stmt *st = l->v[i];
        if (st->kind != ST_LET) continue;
        const Symbol *y = st->u.let.sym;
        if (y->ty.kind != TY_INT && y->ty.kind != TY_FLOAT) continue;
        L("const %s %s = %s;", y->ty.kind == TY_FLOAT ? "float" : "int", y->name, scalar_str(e, st->u.let.e, false));
    }
}

static void emit_producer(Em *e) {
    const PlanKernel *pk = e->pk;
    const SemaKernel *sk = e->sk;
    need(e, "tkc_ptx.cuh", "tma_load");
    need(e, "tkc_ptx.cuh", "setmaxnreg");
    if (!pk->groups.n) {
        L("// ---- producer warpgroup: nothing to load; it gives its registers to the consumers ----");
        L("tkc_setmaxnreg_dec<%d>();", pk->producer_regs);
        return;
    }
    L("// ---- producer warpgroup: one thread issues every TMA load ----");
    L("tkc_setmaxnreg_dec<%d>();", pk->producer_regs);
    L("if (threadIdx.x == 0) {");
    IN();
    for (int i = 0; i < pk->maps.n; i++)
        if (!pk->maps.v[i].store) L("tkc_tma_prefetch_map(&%s);", pk->maps.v[i].name);
    L("int tkc_%stile_phase = 0;", pk->no_pipeline ? "" : "stage = 0, tkc_phase = 0, tkc_");
    if (pk->setup_stages > 1) L("int tkc_setup_slot = 0;  // the copy of the setup tiles this work tile uses");
    emit_tile_loop(e);
    IN();
    emit_tile_coords(e, "tkc_tile");
    emit_lets(e);
    if (sk->blocks[BK_SETUP]) emit_scalar_lets(e, &sk->blocks[BK_SETUP]->u.block.body);
    for (int g = 0; g < pk->groups.n; g++) {
        const PlanGroup *pg = &pk->groups.v[g];
        if (!pg->once) continue;
        if (pk->setup_stages > 1)
            L("// setup tiles, once per work tile: wait until the consumers are done with this copy's last ones "
              "(two tiles back)");
        else L("// setup tiles, once per work tile: wait until the consumers are done with the last ones");
        L("tkc_mbar_wait(%s, tkc_tile_phase ^ 1);", group_bar(e, g, false, false));
        L("tkc_mbar_expect_tx(%s, %s);", group_bar(e, g, true, false), group_tx(e, pg));
        for (int i = 0; i < pg->loads.n; i++) {
            line_to_tk(e, pg->loads.v[i].st->span);
            emit_cond_load(e, pg, &pg->loads.v[i], group_bar(e, g, true, false));
            line_back(e);
        }
    }
    if (pk->no_pipeline) {
        L("// no pipeline: nothing is loaded per step");
        emit_next_setup_slot(e);
        OUT();
        L("}");
        OUT();
        L("}");
        return;
    }
    L("const int tkc_steps = %s;", scalar_str(e, sk->pipe->u.pipe.trips, false));
    L("for (int %s = 0; %s < tkc_steps; ++%s) {", sk->loopvar->name, sk->loopvar->name, sk->loopvar->name);
    IN();
    if (sk->blocks[BK_LOAD]) emit_scalar_lets(e, &sk->blocks[BK_LOAD]->u.block.body);
    for (int g = 0; g < pk->groups.n; g++) {
        const PlanGroup *pg = &pk->groups.v[g];
        if (pg->once) continue;
        L("tkc_mbar_wait(%s + 8 * tkc_stage, tkc_phase ^ 1);  // the consumers released this stage", pk->bars.v[pg->empty].name);
        L("tkc_mbar_expect_tx(%s + 8 * tkc_stage, %s);", pk->bars.v[pg->full].name, group_tx(e, pg));
        for (int i = 0; i < pg->loads.n; i++) {
            line_to_tk(e, pg->loads.v[i].st->span);
            emit_cond_load(e, pg, &pg->loads.v[i], arena_printf(e->a, "%s + 8 * tkc_stage", pk->bars.v[pg->full].name));
            line_back(e);
        }
    }
    L("if (++tkc_stage == %d) { tkc_stage = 0; tkc_phase ^= 1; }", pk->stages);
    OUT();
    L("}");
    emit_next_setup_slot(e);
    OUT();
    L("}");
    OUT();
    L("}");
}

/* lookahead: a work tile's first products (the head of the first step), issued before the
 * previous tile's finish (or before the tile loop, for the first tile). The products are issued
 * unconditionally, so every path through the tile loop carries exactly one group in flight into
 * the wait that starts the next tile: ptxas keeps the products asynchronous only when it can
 * follow them that way. Without a next tile (or one without steps) the products read whatever
 * the buffers hold and their result is never read; the barrier waits and the pingpong turns run
 * only for a real tile. The tile's coordinates and lets shadow the current tile's in the block. */
static void emit_lookahead(Em *e, const char *tile, const char *phase) {
    const PlanKernel *pk = e->pk;
    const SemaKernel *sk = e->sk;
    L("{");
    IN();
    L("const int tkc_ahead = %s;  // the work tile whose first products are issued here", tile);
    L("int tkc_has = 0;  // a real tile with at least one step");
    L("if (tkc_ahead >= 0 && tkc_ahead < tkc_ntiles) {");
    IN();
    emit_tile_coords(e, "tkc_ahead");
    emit_lets(e);
    emit_next_coords(e, NEXT_STORE);
    L("tkc_has = (%s) > 0;", scalar_str(e, sk->pipe->u.pipe.trips, false));
    OUT();
    L("}");
    L("const int %s = 0;", sk->loopvar->name);
    L("(void)%s;", sk->loopvar->name);
    int mode = e->mode;
    e->mode = STEP_FIRST;
    /* the products unconditionally; runs of other ops (barrier waits, pingpong turns) for real tiles */
    L("if (tkc_has) {");
    IN();
    for (int g = 0; g < pk->groups.n; g++)
        if (pk->groups.v[g].once) L("tkc_mbar_wait(%s, %s);  // %s landed", group_bar(e, g, true, false), phase, pk->groups.v[g].name);
    bool open = true;
    for (int i = 0; i < pk->ahead_head; i++) {
        const POp *o = pk->first_ops.v[i];
        if ((o->kind == POP_MMA) == open) {
            if (open) {
                OUT();
                L("}");
            } else {
                L("if (tkc_has) {");
                IN();
            }
            open = !open;
        }
        emit_op(e, o);
    }
    if (open) {
        OUT();
        L("}");
    }
    e->mode = mode;
    OUT();
    L("}");
}

/* the end of a pipeline step: this stage becomes the previous one, and the ring moves on */
static void emit_stage_advance(Em *e) {
    L("tkc_prev_stage = tkc_stage;");
    L("tkc_prev_phase = tkc_phase;");
    L("if (++tkc_stage == %d) { tkc_stage = 0; tkc_phase ^= 1; }", e->pk->stages);
}

static void emit_consumer_finish(Em *e);
static void emit_consumer(Em *e) {
    const PlanKernel *pk = e->pk;
    const SemaKernel *sk = e->sk;
    L("// ---- consumer warpgroups ----");
    L("tkc_setmaxnreg_inc<%d>();", pk->consumer_regs);
    L("const int wg = tkc_wgi - 1;                    // consumer index");
    L("const int tkc_wg_thread = threadIdx.x %% 128;");
    L("const int tkc_warp = tkc_wg_thread / 32, tkc_lane = threadIdx.x %% 32;");
    L("const int tkc_lrow = 16 * tkc_warp + tkc_lane / 4;  // this thread's first row in a 64-row block");
    L("const int tkc_lcol = 2 * (tkc_lane %% 4);            // and its first column in an 8-column slab");
    L("(void)tkc_lrow; (void)tkc_lcol; (void)tkc_warp;");
    for (int i = 0; i < pk->regs.n; i++) {
        const Symbol *y = pk->regs.v[i].sym;
        if (y->kind == SYM_LET) continue; /* declared where the let is */
        L("%s", reg_decl(e, y));
    }
    if (pk->tail) {
        L("// the narrow last step's copies (live only while '%s' and '%s' are not)", pk->tail->s->name, pk->tail->op->name);
        L("%s", reg_decl(e, pk->tail->s_narrow));
        L("%s", reg_decl(e, pk->tail->op_narrow));
    }
    if (pk->pingpong) {
        need(e, "tkc_ptx.cuh", "named_barrier");
        L("if (wg == %d) tkc_bar_arrive(%d, 256);  // pingpong: consumer 0 goes first", pk->consumers - 1,
          pk->nbars.v[pk->nbar_pingpong].id);
    }
    L("int %stkc_tile_phase = 0, tkc_st_cnt = 0;", pk->no_pipeline ? "" : "tkc_stage = 0, tkc_phase = 0, ");
    L("(void)tkc_st_cnt;");
    if (pk->setup_stages > 1) L("int tkc_setup_slot = 0;  // the copy of the setup tiles this work tile reads");
    if (pk->lookahead) {
        L("// each work tile's coordinates and lets, computed where its first products are issued");
        emit_next_coords(e, NEXT_DECLARE);
        L("// lookahead: the first tile's first products; every later tile's are issued before the finish of the one before");
        emit_lookahead(e, walk_tile(e, false), "tkc_tile_phase");
    }
    emit_tile_loop(e);
    IN();
    if (pk->lookahead) {
        L("// coordinates and lets: from the lookahead that issued this tile's first products");
        emit_next_coords(e, NEXT_LOAD);
    } else {
        emit_tile_coords(e, "tkc_tile");
        emit_lets(e);
    }
    L("// setup");
    e->mode = STEP_NONE;
    emit_ops(e, &pk->setup_ops);
    if (pk->no_pipeline) {
        L("// no pipeline: finish follows setup");
        emit_ops(e, &pk->after_ops);
        emit_consumer_finish(e);
        return;
    }
    L("const int tkc_steps = %s;", scalar_str(e, sk->pipe->u.pipe.trips, false));
    L("int tkc_prev_stage = 0, tkc_prev_phase = 0;");
    L("(void)tkc_prev_stage; (void)tkc_prev_phase;");
    if (pk->lookahead) {
        e->mode = STEP_FIRST;
        emit_op(e, pk->first_ops.v[pk->ahead_head]);
        e->mode = STEP_NONE;
    }
    if (pk->peel_first) {
        L("if (tkc_steps > 0) {  // the first step, on its own: it has no previous step%s",
          pk->lookahead ? " (its first products were issued before)" : "");
        IN();
        L("const int %s = 0;", sk->loopvar->name);
        L("(void)%s;", sk->loopvar->name);
        e->mode = STEP_FIRST;
        if (pk->lookahead) emit_op_range(e, &pk->first_ops, pk->ahead_head + 1, pk->first_ops.n);
        else emit_ops(e, &pk->first_ops);
        emit_stage_advance(e);
        OUT();
        L("}");
    }
    const char *jv = sk->loopvar->name;
    if (pk->tail) {
        const PlanTail *t = pk->tail;
        L("int tkc_narrow = 0;  // the last step leaves at most %d columns of %s unmasked: it runs on %s and %s", t->cols,
          t->s->name, t->s_narrow->name, t->op_narrow->name);
        L("if (tkc_steps > 1) {");
        IN();
        L("const int %s = tkc_steps - 1;", jv);
        StrBuf c;
        sb_init(&c);
        sb_printf(&c, "%s - %s <= %d", scalar_str(e, t->bound, false), scalar_str(e, t->jw, false), t->cols);
        if (t->guard) sb_printf(&c, " && %s", scalar_str(e, t->guard, false));
        for (int i = 0; i < t->scales.n; i++) sb_printf(&c, " && %s > 0.f", scalar_str(e, t->scales.v[i], false));
        L("tkc_narrow = %s;", c.s);
        sb_free(&c);
        OUT();
        L("}");
    }
    L("for (int %s = %d; %s < tkc_steps%s; ++%s) {  // %s", jv, pk->peel_first ? 1 : 0, jv, pk->tail ? " - tkc_narrow" : "", jv,
      pk->peel_first ? "the steady state" : "every step");
    IN();
    e->mode = STEP_LOOP;
    emit_ops(e, &pk->compute_ops);
    emit_stage_advance(e);
    OUT();
    L("}");
    if (pk->tail) {
        L("if (tkc_narrow) {  // the last step, on %d columns: the masked ones would add nothing", pk->tail->cols);
        IN();
        L("const int %s = tkc_steps - 1;", jv);
        e->nar = pk->tail;
        emit_ops(e, &pk->compute_ops);
        e->nar = NULL;
        emit_stage_advance(e);
        OUT();
        L("}");
    }
    e->mode = STEP_NONE;
    L("// after the steps");
    if (pk->lookahead) {
        emit_op_range(e, &pk->after_ops, 0, pk->ahead_split);
        L("// lookahead: the next work tile's first products, run by the tensor cores during this tile's finish");
        if (pk->setup_stages > 1) e->slot = "(tkc_setup_slot ^ 1)";  /* the next tile's copy */
        emit_lookahead(e, walk_tile(e, true), pk->setup_stages > 1 ? "tkc_tile_phase ^ tkc_setup_slot" : "tkc_tile_phase ^ 1");
        e->slot = "tkc_setup_slot";
        emit_op_range(e, &pk->after_ops, pk->ahead_split, pk->after_ops.n);
    } else {
        emit_ops(e, &pk->after_ops);
    }
    for (int i = 0; i < pk->compute_ops.n; i++) {
        const POp *o = pk->compute_ops.v[i];
        if (o->kind == POP_MMA && o->mma->zero_first) {
            L("if (tkc_steps == 0) {  // no product ran: %s keeps its zero fill", o->mma->dst->name);
            IN();
            L("#pragma unroll");
            L("for (int tkc_i = 0; tkc_i < %d; ++tkc_i) %s[tkc_i] = 0.f;", frag_count(pk, &o->mma->dst->ty), o->mma->dst->name);
            OUT();
            L("}");
        }
    }
    emit_consumer_finish(e);
}

/* the finish block of a work tile, the end of the tile loop, and what the block waits for before it exits */
static void emit_consumer_finish(Em *e) {
    const PlanKernel *pk = e->pk;
    L("// finish");
    for (int i = 0; i < pk->lazy_sums.n; i++) {
        const Symbol *y = pk->lazy_sums.v[i];
        L("#pragma unroll");
        L("for (int tkc_r = 0; tkc_r < %d; ++tkc_r) {  // %s: add the partial sums of the 4 lanes of each row's quad",
          2 * (rows_wg(pk, &y->ty) / 64), y->name);
        IN();
        for (int sh = 1; sh <= 2; sh *= 2) L("%s[tkc_r] += __shfl_xor_sync(0xffffffffu, %s[tkc_r], %d);", y->name, y->name, sh);
        OUT();
        L("}");
    }
    emit_ops(e, &pk->finish_ops);
    emit_next_setup_slot(e);
    OUT();
    L("}");
    if (pk->lookahead) L("tkc_wgmma_wait<0>();  // the lookahead products issued after the last tile (never read)");
    if (pk->staging_buf >= 0 || pk->tma_stores)
        L("if (tkc_wg_thread == 0) tkc_bulk_wait<0>();  // every store has landed before the block exits");
}


static void kernel_params(Em *e, StrBuf *b, bool decl) {
    const PlanKernel *pk = e->pk;
    const SemaKernel *sk = e->sk;
    bool first = true;
#define SEP() (first ? (first = false, "") : ", ")
    for (int i = 0; i < pk->maps.n; i++) {
        if (decl) sb_printf(b, "%sconst __grid_constant__ CUtensorMap %s", SEP(), pk->maps.v[i].name);
        else sb_printf(b, "%s%s", SEP(), pk->maps.v[i].name);
    }
    for (int i = 0; i < sk->args.n; i++) {
        const Arg *a = sk->args.v[i];
        if (!a->ts.ndims) continue;
        const char *t = a->ts.dt == DT_BF16 ? "__nv_bfloat16" : a->ts.dt == DT_FP16 ? "__half" : a->ts.dt == DT_FP32 ? "float" : "int";
        if (decl) sb_printf(b, "%s%s%s *__restrict__ %s", SEP(), a->mode == ARG_IN ? "const " : "", t, a->name);
        else sb_printf(b, "%s(%s%s *)%s", SEP(), a->mode == ARG_IN ? "const " : "", t, a->name);
        if (!pk->arg_strides.v[i]) continue;
        for (int d = 0; d < a->ts.ndims; d++) {
            if (decl) sb_printf(b, "%sconst long long %s_st%d", SEP(), a->name, d);
            else sb_printf(b, "%s%s_st[%d]", SEP(), a->name, d);
        }
    }
    for (int i = 0; i < sk->dims.n; i++) {
        if (decl) sb_printf(b, "%sconst int %s", SEP(), sk->dims.v[i]->name);
        else sb_printf(b, "%s(int)%s", SEP(), sk->dims.v[i]->name);
    }
    for (int i = 0; i < sk->scalars.n; i++) {
        const Symbol *y = sk->scalars.v[i];
        if (decl) sb_printf(b, "%sconst %s %s", SEP(), y->ty.kind == TY_FLOAT ? "float" : "int", y->name);
        else sb_printf(b, "%s%s", SEP(), y->name);
    }
#undef SEP
}

static void emit_kernel(Em *e) {
    const PlanKernel *pk = e->pk;
    const SemaKernel *sk = e->sk;
    need(e, "tkc_ptx.cuh", "smem");
    need(e, "tkc_ptx.cuh", "mbarrier");
    /* the plan as a comment */
    char *plan = plan_dump_kernel(pk);
    L("// ================================================================================================");
    L("// kernel %s: the plan tkc chose (tkc --emit=plan prints the same)", pk->name);
    L("// ================================================================================================");
    for (char *p = plan; *p;) {
        char *nl = strchr(p, '\n');
        if (!nl) nl = p + strlen(p);
        L("// %.*s", (int)(nl - p), p);
        p = *nl ? nl + 1 : nl;
    }
    free(plan);
    StrBuf params;
    sb_init(&params);
    kernel_params(e, &params, true);
    L("__global__ void __launch_bounds__(%d, 1) tkc_%s_kernel(%s) {", pk->threads, pk->name, params.s);
    sb_free(&params);
    IN();
    L("extern __shared__ __align__(1024) unsigned char tkc_smem_raw[];");
    L("unsigned char *const tkc_smem = tkc_align_smem(tkc_smem_raw);");
    L("// shared memory map");
    for (int i = 0; i < pk->bufs.n; i++) {
        const PlanBuf *b = &pk->bufs.v[i];
        L("const uint32_t %s_smem = tkc_smem_addr(tkc_smem + %d);  // %s %s[%d, %d], swizzle %s, %d x %d B", b->name, b->offset,
          bufkind_name[b->kind], dtype_name[b->dt], b->rows, b->cols, swizzle_name(b->swz), b->copies, b->bytes);
    }
    for (int i = 0; i < pk->bars.n; i++) {
        const PlanBarrier *b = &pk->bars.v[i];
        L("const uint32_t %s = tkc_smem_addr(tkc_smem + %d);  // %d mbarrier%s", b->name, b->offset, b->copies,
          b->copies == 1 ? "" : "s");
    }
    L("if (threadIdx.x == 0) {");
    IN();
    for (int i = 0; i < pk->bars.n; i++) {
        const PlanBarrier *b = &pk->bars.v[i];
        L("for (int tkc_s = 0; tkc_s < %d; ++tkc_s) tkc_mbar_init(%s + 8 * tkc_s, %d);", b->copies, b->name, b->count);
    }
    L("tkc_mbar_init_fence();");
    OUT();
    L("}");
    L("__syncthreads();");
    if (pk->cluster > 1) {
        need(e, "tkc_ptx.cuh", "cluster");
        L("const uint32_t tkc_rank = tkc_cluster_rank();  // this block's place in its cluster of %d", pk->cluster);
        L("tkc_cluster_sync();  // every block's barriers exist before any multicast lands");
    }
    for (int i = 0; i < sk->axes.n; i++) {
        const char *nm = sk->axes.v[i]->name;
        L("const int tkc_ext_%s = %s;", nm, scalar_str(e, sk->axes.v[i]->extent, false));
        if (i == pk->cluster_axis && pk->cluster > 1)
            L("const int tkc_wext_%s = tkc_cdiv(tkc_ext_%s, %d);  // the walk counts clusters along %s", nm, nm, pk->cluster, nm);
        else
            L("const int tkc_wext_%s = tkc_ext_%s;", nm, nm);
    }
    StrBuf nt;
    sb_init(&nt);
    for (int i = 0; i < sk->axes.n; i++) sb_printf(&nt, "%stkc_wext_%s", i ? " * " : "", sk->axes.v[i]->name);
    L("const int tkc_ntiles = %s;  // work tiles%s", nt.s ? nt.s : "1", pk->cluster > 1 ? " (one per cluster)" : "");
    sb_free(&nt);
    L("const int tkc_wgi = threadIdx.x / 128;  // warpgroup: 0 = producer, 1.. = consumers");
    L("if (tkc_wgi == 0) {");
    IN();
    emit_producer(e);
    OUT();
    L("} else {");
    IN();
    emit_consumer(e);
    OUT();
    L("}");
    if (pk->cluster > 1)
        L("tkc_cluster_sync();  // no block leaves while a peer may still multicast into it or arrive on its barriers");
    OUT();
    L("}");
}

/* ---- the host launcher ---------------------------------------------------------------------------- */

static const char *cu_dtype(DType d) {
    switch (d) {
    case DT_BF16: return "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16";
    case DT_FP16: return "CU_TENSOR_MAP_DATA_TYPE_FLOAT16";
    case DT_FP32: return "CU_TENSOR_MAP_DATA_TYPE_FLOAT32";
    default: return "CU_TENSOR_MAP_DATA_TYPE_INT32";
    }
}

static void emit_launcher(Em *e) {
    const PlanKernel *pk = e->pk;
    const SemaKernel *sk = e->sk;
    need(e, "tkc_ptx.cuh", "host");
    const KernelApi *api = api_of(e->a, pk);
    StrBuf sig;
    sb_init(&sig);
    api_c_params(&sig, api);
    L("// Launches %s on stream. Strides count elements, one per dimension (NULL: contiguous); tensors", pk->name);
    L("// that TMA moves need a last stride of 1 and 16-byte row pitches. Every argument is checked");
    L("// first: returns TKC_OK or a TKC_ERR_* code.");
    L("extern \"C\" int tkc_%s(%s) {", pk->name, sig.s);
    sb_free(&sig);
    IN();
    for (int i = 0; i < sk->dims.n; i++)
        L("if (%s < 1 || %s > 2147483647LL) return TKC_ERR_DIM;", sk->dims.v[i]->name, sk->dims.v[i]->name);
    for (int i = 0; i < sk->requires.n; i++)
        L("if (!(%s)) return TKC_ERR_REQUIRE;  // require %s", scalar_str(e, sk->requires.v[i], true),
          ast_expr_str(e->a, sk->requires.v[i]));
    for (int i = 0; i < api->params.n; i++) {
        const ApiParam *a = &api->params.v[i];
        if (a->kind != API_TENSOR) continue;
        int r = a->rank, eb = dtype_bytes[a->dt];
        bool tma = a->tma;
        StrBuf dims, shape;
        sb_init(&dims);
        sb_init(&shape);
        for (int d = 0; d < r; d++) {
            sb_printf(&dims, "%s(int64_t)%s", d ? ", " : "", scalar_str(e, a->dims[d].expr, true));
            sb_printf(&shape, "%s%s", d ? ", " : "", ast_expr_str(e->a, a->dims[d].expr));
        }
        L("// %s: %s %s[%s]%s", a->name, argmode_name[a->mode], dtype_name[a->dt], shape.s,
          tma ? ", moved by TMA: 16-byte aligned, rows of 16-byte multiples" : ", accessed by threads");
        L("if (!%s) return TKC_ERR_NULL;", a->name);
        L("if ((uintptr_t)%s %% %d) return TKC_ERR_ALIGN;", a->name, tma ? 16 : eb);
        L("const int64_t %s_dims[%d] = {%s};", a->name, r, dims.s);
        sb_free(&dims);
        sb_free(&shape);
        L("int64_t %s_st[%d];", a->name, r);
        L("if (!tkc_strides(%s_st, %s_strides, %s_dims, %d, %d, %s)) return TKC_ERR_STRIDE;", a->name, a->name, a->name, r,
          eb, tma ? "true" : "false");
    }
    L("// tensor maps");
    for (int i = 0; i < pk->maps.n; i++) {
        const PlanMap *m = &pk->maps.v[i];
        const Arg *a = m->arg;
        int r = m->rank;
        StrBuf dims, str, box;
        sb_init(&dims);
        sb_init(&str);
        sb_init(&box);
        for (int d = 0; d < r; d++) {
            sb_printf(&dims, "%s(uint64_t)%s_dims[%d]", d ? ", " : "", a->name, r - 1 - d);
            sb_printf(&box, "%s%d", d ? ", " : "", m->box[d]);
        }
        for (int d = 1; d < r; d++) sb_printf(&str, "%s(uint64_t)%s_st[%d] * %d", d > 1 ? ", " : "", a->name, r - 1 - d, dtype_bytes[a->ts.dt]);
        L("CUtensorMap %s;", m->name);
        L("{");
        IN();
        L("const uint64_t dims[%d] = {%s};", r, dims.s);
        if (r > 1) L("const uint64_t strides[%d] = {%s};", r - 1, str.s);
        else L("const uint64_t strides[1] = {0};");
        L("const uint32_t box[%d] = {%s};", r, box.s);
        L("if (!tkc_make_map(&%s, %s, %d, %s, dims, strides, box, %d)) return TKC_ERR_TENSOR_MAP;", m->name, cu_dtype(a->ts.dt), r,
          a->name, swizzle_tma_enum(m->swz));
        OUT();
        L("}");
        sb_free(&dims);
        sb_free(&str);
        sb_free(&box);
    }
    StrBuf nt;
    sb_init(&nt);
    for (int i = 0; i < sk->axes.n; i++) sb_printf(&nt, "%s(long long)%s", i ? " * " : "", scalar_str(e, sk->axes.v[i]->extent, true));
    L("const long long tiles = %s;", nt.s);
    sb_free(&nt);
    L("if (tiles < 1 || tiles > 2147483647LL) return TKC_ERR_DIM;");
    L("// per device, once: the SM count and the kernel's shared-memory opt-in (safe across host threads)");
    L("static std::atomic<int> sm_count[64], smem_ready[64];");
    L("int device = 0;");
    L("if (cudaGetDevice(&device) != cudaSuccess || device < 0) return TKC_ERR_LAUNCH;");
    L("int sms = device < 64 ? sm_count[device].load(std::memory_order_relaxed) : 0;");
    L("if (!sms && cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) return TKC_ERR_LAUNCH;");
    L("if (device < 64) sm_count[device].store(sms, std::memory_order_relaxed);");
    L("if (device >= 64 || !smem_ready[device].load(std::memory_order_relaxed)) {");
    IN();
    L("if (cudaFuncSetAttribute(tkc_%s_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, %d) != cudaSuccess)", pk->name,
      pk->smem_total);
    L("    return TKC_ERR_LAUNCH;");
    L("if (device < 64) smem_ready[device].store(1, std::memory_order_relaxed);");
    OUT();
    L("}");
    for (int i = 0; i < pk->zeroed.n; i++) {
        const Arg *a = pk->zeroed.v[i];
        need(e, "tkc_ptx.cuh", "zero");
        L("// %s is zeroed: cleared on the stream before the kernel runs", a->name);
        L("if (!tkc_zero(%s, %s_dims, %s_st, %d, %d, (cudaStream_t)stream)) return TKC_ERR_LAUNCH;", a->name, a->name, a->name,
          a->ts.ndims, dtype_bytes[a->ts.dt]);
    }
    StrBuf args;
    sb_init(&args);
    kernel_params(e, &args, false);
    if (pk->cluster > 1) {
        int c = pk->cluster;
        L("cudaLaunchConfig_t cfg = {};");
        L("cudaLaunchAttribute attr[1];");
        L("attr[0].id = cudaLaunchAttributeClusterDimension;");
        L("attr[0].val.clusterDim.x = %d;", c);
        L("attr[0].val.clusterDim.y = 1;");
        L("attr[0].val.clusterDim.z = 1;");
        L("cfg.blockDim = dim3(%d);", pk->threads);
        L("cfg.dynamicSmemBytes = %d;", pk->smem_total);
        L("cfg.stream = (cudaStream_t)stream;");
        L("cfg.attrs = attr;");
        L("cfg.numAttrs = 1;");
        const Expr *cx = sk->axes.v[pk->cluster_axis]->extent;
        L("const long long units = tkc_h_cdiv(%s, %d) * (tiles / (%s));  // work tiles, one per cluster",
          scalar_str(e, cx, true), c, scalar_str(e, cx, true));
        if (pk->persistent) {
            L("cfg.gridDim = dim3((unsigned)(units * %d));", c);
            L("// how many clusters fit on the device at once, asked once per device");
            L("static std::atomic<int> cluster_count[64];");
            L("int clusters = device < 64 ? cluster_count[device].load(std::memory_order_relaxed) : 0;");
            L("if (!clusters) {");
            IN();
            L("if (cudaOccupancyMaxActiveClusters(&clusters, tkc_%s_kernel, &cfg) != cudaSuccess || clusters < 1)", pk->name);
            L("    clusters = sms / %d;", c);
            L("if (device < 64) cluster_count[device].store(clusters, std::memory_order_relaxed);");
            OUT();
            L("}");
            L("cfg.gridDim = dim3((unsigned)((units < clusters ? units : clusters) * %d));  // persistent: one block per SM", c);
        } else {
            L("cfg.gridDim = dim3((unsigned)(units * %d));  // one cluster per work tile", c);
        }
        L("(void)sms;");
        L("if (cudaLaunchKernelEx(&cfg, tkc_%s_kernel, %s) != cudaSuccess) return TKC_ERR_LAUNCH;", pk->name, args.s);
    } else {
        if (pk->paired)
            L("const unsigned grid = (unsigned)((tiles + 1) / 2 < sms ? (tiles + 1) / 2 : sms);  // persistent, tiles in pairs: one block per SM");
        else if (pk->persistent) L("const unsigned grid = (unsigned)(tiles < sms ? tiles : sms);  // persistent: one block per SM");
        else L("const unsigned grid = (unsigned)tiles;  // one block per work tile");
        L("tkc_%s_kernel<<<grid, %d, %d, (cudaStream_t)stream>>>(%s);", pk->name, pk->threads, pk->smem_total, args.s);
    }
    sb_free(&args);
    L("return cudaGetLastError() == cudaSuccess ? TKC_OK : TKC_ERR_LAUNCH;");
    OUT();
    L("}");
}

/* ---- the file --------------------------------------------------------------------------------------- */

static void put_fragment(StrBuf *out, const char *file, const char *frag) {
    size_t len;
    const char *t = template_fragment(file, frag, &len);
    if (!t) {
        sb_printf(out, "#error \"tkc: template fragment %s/%s is missing\"\n", file, frag);
        return;
    }
    sb_putn(out, t, len);
}

char *emit_cuda(Arena *a, const Plan *p, const Program *prog, const EmitOptions *o) {
    Em em = {.a = a, .o = o, .slot = "tkc_setup_slot"};
    Em *e = &em;
    StrBuf body;
    sb_init(&body);
    e->b = &body;
    for (int i = 0; i < p->kernels.n; i++) {
        e->pk = p->kernels.v[i];
        e->sk = e->pk->sk;
        if (i) sb_blank(&body);
        emit_kernel(e);
    }
    StrBuf launch;
    sb_init(&launch);
    e->b = &launch;
    for (int i = 0; i < p->kernels.n; i++) {
        e->pk = p->kernels.v[i];
        e->sk = e->pk->sk;
        sb_blank(&launch);
        emit_launcher(e);
    }

    StrBuf out;
    sb_init(&out);
    const char *base = path_base(o->source_path);
    sb_printf(&out, "// Generated by tkc %s from %s. Do not edit: change the .tk and run tkc again.\n", o->tkc_version, base);
    sb_puts(&out, "// Build: nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -c THIS.cu (needs only the CUDA toolkit).\n");
    sb_puts(&out, "// Host API (extern \"C\"):");
    for (int i = 0; i < p->kernels.n; i++) sb_printf(&out, " tkc_%s()", p->kernels.v[i]->name);
    sb_puts(&out, "; each returns TKC_OK (0) or a TKC_ERR_* code.\n\n");
    put_fragment(&out, "tkc_ptx.cuh", "prelude");
    sb_puts(&out, "\n" API_STREAM_TYPEDEF_CXX);
    sb_puts(&out, "\n#ifndef TKC_STATUS_CODES\n#define TKC_STATUS_CODES\nenum {\n");
#define X(n, v, m) sb_printf(&out, "    %s = %d,  // %s\n", #n, v, m);
    TK_STATUS(X)
#undef X
    sb_puts(&out, "};\n#endif\n\n");
    sb_puts(&out, "// the template library carries helpers a given kernel may not use\n#pragma nv_diag_suppress 177\n#pragma nv_diag_suppress 550\n\n");
    sb_puts(&out, "namespace {\n\n");
    for (int i = 0; i < prog->params.n; i++) {
        const Param *pa = prog->params.v[i];
        sb_printf(&out, "constexpr int %s = %" PRId64 ";%s\n", pa->name, pa->sym->cval, pa->overridden ? "  // set by -D" : "");
    }
    if (prog->params.n) sb_putc(&out, '\n');
    /* the fragments the kernels use, in a fixed order: tkc_ptx.cuh's as they appear in the
     * file, tkc_sched.cuh's (one so far), then the wgmma shapes sorted by name */
    static const char *const order[] = {"smem",       "mbarrier",   "tma_load",      "tma_load_1d", "cluster",  "tma_store",
                                        "tma_reduce", "wgmma_sync", "setmaxnreg",    "named_barrier", "shared_f32", "stmatrix",
                                        "ldmatrix",   "shared_v2",  "math",          "red",         "zero",      "host"};
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++)
        for (int i = 0; i < e->frags.n; i++)
            if (!strcmp(e->frags.v[i].name, order[k]) && !strcmp(e->frags.v[i].file, "tkc_ptx.cuh")) {
                put_fragment(&out, "tkc_ptx.cuh", order[k]);
                sb_putc(&out, '\n');
            }
    for (int i = 0; i < e->frags.n; i++)
        if (!strcmp(e->frags.v[i].file, "tkc_sched.cuh") || !strcmp(e->frags.v[i].file, "tkc_layout.cuh")) {
            put_fragment(&out, e->frags.v[i].file, e->frags.v[i].name);
            sb_putc(&out, '\n');
        }
    const char **w = ARENA_NEW_N(a, const char *, e->frags.n);
    int nw = 0;
    for (int i = 0; i < e->frags.n; i++)
        if (!strcmp(e->frags.v[i].file, "wgmma.cuh")) w[nw++] = e->frags.v[i].name;
    for (int i = 1; i < nw; i++)
        for (int j = i; j > 0 && strcmp(w[j - 1], w[j]) > 0; j--) {
            const char *t = w[j];
            w[j] = w[j - 1];
            w[j - 1] = t;
        }
    for (int i = 0; i < nw; i++) {
        put_fragment(&out, "wgmma.cuh", w[i]);
        sb_putc(&out, '\n');
    }
    sb_puts(&out, "// one element of a global tensor, as a scalar (kernel-level lets)\n");
    sb_puts(&out, "__device__ __forceinline__ float tkc_load_f32(const float *p, long long i) { return p[i]; }\n");
    sb_puts(&out, "__device__ __forceinline__ float tkc_load_f32(const __nv_bfloat16 *p, long long i) { return __bfloat162float(p[i]); }\n");
    sb_puts(&out, "__device__ __forceinline__ float tkc_load_f32(const __half *p, long long i) { return __half2float(p[i]); }\n");
    sb_puts(&out, "__device__ __forceinline__ int tkc_load_f32(const int *p, long long i) { return p[i]; }\n");
    sb_puts(&out, "// Element strides of a tensor (NULL: contiguous). For TMA the last is 1 and the others are\n"
                  "// 16-byte multiples below 2^40 bytes; threads accept any positive strides.\n"
                  "[[maybe_unused]] static bool tkc_strides(int64_t *st, const int64_t *given, const int64_t *dims, int rank,\n"
                  "                                         int elem, bool tma) {\n"
                  "    int64_t c = 1;\n"
                  "    for (int d = rank - 1; d >= 0; --d) {\n"
                  "        st[d] = given ? given[d] : c;\n"
                  "        c *= dims[d];\n"
                  "        if (st[d] < 1) return false;\n"
                  "        if (tma && (d == rank - 1 ? st[d] != 1 : ((st[d] * elem) % 16 || st[d] * elem >= (1LL << 40))))\n"
                  "            return false;\n"
                  "    }\n"
                  "    return true;\n"
                  "}\n");
    sb_puts(&out, "[[maybe_unused]] static inline long long tkc_h_cdiv(long long a, long long b) { return (a + b - 1) / b; }\n");
    sb_puts(&out, "[[maybe_unused]] static inline long long tkc_h_min(long long a, long long b) { return a < b ? a : b; }\n");
    sb_puts(&out, "[[maybe_unused]] static inline long long tkc_h_max(long long a, long long b) { return a > b ? a : b; }\n\n");
    sb_puts(&out, body.s ? body.s : "");
    sb_puts(&out, "\n}  // namespace\n");
    sb_puts(&out, launch.s ? launch.s : "");
    sb_free(&body);
    sb_free(&launch);
    char *text = sb_take(&out);
    if (!o->line_directives) return text;
    /* resolve TKC_NEXT_LINE: the number of the line after the directive */
    StrBuf fixed;
    sb_init(&fixed);
    int line = 1;
    static const char key[] = "TKC_NEXT_LINE";
    for (char *q = text; *q;) {
        char *nl = strchr(q, '\n');
        if (nl) *nl = 0;
        char *k = strstr(q, key);
        if (k) {
            sb_putn(&fixed, q, (size_t)(k - q));
            sb_printf(&fixed, "%d", line + 1);
            sb_puts(&fixed, k + sizeof key - 1);
        } else {
            sb_puts(&fixed, q);
        }
        if (!nl) break;
        sb_putc(&fixed, '\n');
        line++;
        q = nl + 1;
    }
    free(text);
    return sb_take(&fixed);
}
