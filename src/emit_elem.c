/* emit_elem.c - the CUDA emitter's expressions: scalar (uniform) expressions, the register
 * fragment layouts and elementwise expressions over them, values hoisted out of a statement
 * (reductions, reciprocals), register declarations and assignments. Part of the CUDA emitter
 * (emit_int.h). */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "emit_int.h"

void need(Em *e, const char *file, const char *frag) {
    for (int i = 0; i < e->frags.n; i++)
        if (!strcmp(e->frags.v[i].name, frag)) return;
    vec_push(e->a, &e->frags, ((Frag){file, frag}));
}

const char *fmt_float(Arena *a, double v) {
    if (isinf(v)) return v > 0 ? "TKC_INF" : "(-TKC_INF)";
    char buf[64];
    snprintf(buf, sizeof buf, "%.9g", v);
    if (!strpbrk(buf, ".eEn")) strcat(buf, ".0");
    return arena_printf(a, "%sf", buf);
}

const char *buf_addr(Em *e, int buf, bool prev) {
    const PlanBuf *b = &e->pk->bufs.v[buf];
    if (b->kind == BUF_RING)
        return arena_printf(e->a, "%s_smem + (uint32_t)%s * %d", b->name, prev ? "tkc_prev_stage" : "tkc_stage", b->bytes);
    if (b->kind == BUF_ONCE && b->copies > 1) return arena_printf(e->a, "%s_smem + (uint32_t)%s * %d", b->name, e->slot, b->bytes);
    return arena_printf(e->a, "%s_smem", b->name);
}

/* ---- scalar expressions (uniform values: indices, bounds, scalars) --------------------------- */

static void scalar_expr(Em *e, StrBuf *b, const PExpr *x, bool host);

const char *scalar_str(Em *e, const PExpr *x, bool host) {
    StrBuf b;
    sb_init(&b);
    scalar_expr(e, &b, x, host);
    char *s = arena_strdup(e->a, b.s ? b.s : "");
    sb_free(&b);
    return s;
}

static void scalar_expr(Em *e, StrBuf *b, const PExpr *x, bool host) {
    if (x->is_const && x->ty.kind == TY_INT && x->kind != PX_NAME) {
        sb_printf(b, "%" PRId64, x->cval);
        return;
    }
    if (x->is_const && x->ty.kind == TY_FLOAT && x->kind != PX_NAME) {
        sb_puts(b, fmt_float(e->a, x->fval));
        return;
    }
    switch (x->kind) {
    case PX_INT: sb_printf(b, "%" PRId64, x->ival); return;
    case PX_FLOAT: sb_puts(b, fmt_float(e->a, x->lit)); return;
    case PX_NAME:
        if (x->sym && x->sym->kind == SYM_BUILTIN) {
            if (x->sym->builtin == BI_INF) sb_puts(b, "TKC_INF");
            else if (x->sym->builtin == BI_WG) sb_puts(b, "wg");
            else sb_puts(b, x->sym->name);
        } else if (x->sym && x->sym->kind == SYM_LET && x->sym->is_const && x->sym->ty.kind == TY_INT) {
            sb_printf(b, "%" PRId64, x->sym->cval);
        } else {
            sb_puts(b, x->name);
        }
        return;
    case PX_MEMBER: sb_printf(b, "block_%s", x->field); return;
    case PX_INDEX: {
        /* an element read of a global tensor (kernel-level lets) */
        const Symbol *t = x->base->sym;
        sb_printf(b, "tkc_load_f32(%s, ", t->name);
        for (int i = 0; i < x->nix; i++) {
            if (i) sb_puts(b, " + ");
            sb_puts(b, "(long long)(");
            scalar_expr(e, b, x->ix[i].lo, host);
            sb_printf(b, ") * %s_st%d", t->name, i);
        }
        sb_putc(b, ')');
        return;
    }
    case PX_CALL: {
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
        case FN_ERF: fn = "erff"; break;
        case FN_FP32: fn = "(float)"; break;
        case FN_I32: fn = "(int)"; break;
        case FN_BF16: fn = "tkc_round_bf16"; need(e, "tkc_ptx.cuh", "math"); break;
        case FN_FP16: fn = "tkc_round_fp16"; need(e, "tkc_ptx.cuh", "math"); break;
        case FN_AT: fn = ""; break; /* an element index: move_coord reads it */
        default: fn = x->name; break;
        }
        sb_printf(b, "%s(", fn);
        for (int i = 0; i < x->nargs; i++) {
            if (i) sb_puts(b, ", ");
            scalar_expr(e, b, x->args[i], host);
        }
        sb_putc(b, ')');
        return;
    }
    case PX_BINARY:
        sb_putc(b, '(');
        scalar_expr(e, b, x->l, host);
        sb_printf(b, " %s ", binop_name[x->bop]);
        scalar_expr(e, b, x->r, host);
        sb_putc(b, ')');
        return;
    case PX_UNARY:
        sb_printf(b, "(%s", unop_name[x->uop]);
        scalar_expr(e, b, x->l, host);
        sb_putc(b, ')');
        return;
    case PX_COND:
        sb_putc(b, '(');
        scalar_expr(e, b, x->cond, host);
        sb_puts(b, " ? ");
        scalar_expr(e, b, x->l, host);
        sb_puts(b, " : ");
        scalar_expr(e, b, x->r, host);
        sb_putc(b, ')');
        return;
    case PX_TRANSPOSE: return;
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
 * so tile value i reads slot 2 ((i % (C/2)) >> 2) + (i & 1) = 2 ((i >> 2) % (C/8)) + (i & 1) (the
 * form emitted: see colslot) and a broadcast needs no shuffles.
 * 16-bit tiles pack value pairs (2i, 2i+1) into one 32-bit register, which is exactly the
 * register A operand layout of wgmma, so a converted tile feeds a product directly. */

int rows_wg(const PlanKernel *pk, const Type *t) { return t->per_wg ? t->rows : t->rows / pk->consumers; }

int frag_count(const PlanKernel *pk, const Type *t) {
    if (pk->rowwise) {
        const RowLayout *r = &pk->rw;
        if (t->kind == TY_TILE) return t->rows * t->cols / (32 * r->warps);
        if (t->layout == VL_COL) return 8 * r->chunks;
        return t->rows / row_layout_rows(r);
    }
    if (t->kind == TY_TILE) return rows_wg(pk, t) * t->cols / 128;
    if (t->layout == VL_COL) return t->rows / 4;
    return 2 * (rows_wg(pk, t) / 64);
}

bool is16(DType d) { return d == DT_BF16 || d == DT_FP16; }

/* the row and column of a thread's value: the fragment maps of tkc_layout.cuh (frag_map) */
/* the row layout's map (tkc_layout.cuh rowwise_map) of value i (a tile's value, or the first value
 * of a per_row slot's row) */
static const char *rw_args(Em *e) {
    const RowLayout *r = &e->pk->rw;
    return arena_printf(e->a, "%d, %d, %d", r->split, r->lanes, r->chunks);
}

const char *row_expr(Em *e, const Ctx *c) {
    if (c->kind == CX_COLVEC) return "TKC_INTERNAL_ERROR_row_of_a_per_col_vector";  /* sema rejects it */
    if (e->pk->rowwise) {
        need(e, "tkc_layout.cuh", "rowwise_map");
        const char *i = c->kind == CX_ROWVEC ? arena_printf(e->a, "(%s) * %d", c->i, 8 * e->pk->rw.chunks) : c->i;
        return arena_printf(e->a, "tkc_rw_row(tkc_rwarp, tkc_lane, %s, %d, %s)", i, e->pk->rw.warps, rw_args(e));
    }
    need(e, "tkc_layout.cuh", "frag_map");
    const char *wgpart = c->per_wg ? "" : arena_printf(e->a, "wg * %d + ", c->rwg);
    if (c->kind == CX_ROWVEC) return arena_printf(e->a, "(%stkc_rowvec_row(tkc_lrow, %s))", wgpart, c->i);
    return arena_printf(e->a, "(%stkc_frag_row(tkc_lrow, %s, %d))", wgpart, c->i, c->cols);
}

const char *col_expr(Em *e, const Ctx *c, int col0) {
    if (e->pk->rowwise) {
        need(e, "tkc_layout.cuh", "rowwise_map");
        return arena_printf(e->a, "%stkc_rw_col(tkc_rwarp, tkc_lane, %s, %s)", col0 ? arena_printf(e->a, "%d + ", col0) : "", c->i,
                            rw_args(e));
    }
    need(e, "tkc_layout.cuh", "frag_map");
    const char *off = col0 ? arena_printf(e->a, "%d + ", col0) : "";
    if (c->kind == CX_COLVEC) return arena_printf(e->a, "(%stkc_colvec_col(tkc_lcol, %s))", off, c->i);
    return arena_printf(e->a, "(%stkc_frag_col(tkc_lcol, %s, %d))", off, c->i, c->cols);
}

/* the index into a tile of `pcols` columns for value i of a ctx of c->cols columns starting
 * at column col0 of the parent */
const char *parent_index(Em *e, const Ctx *c, int pcols, int col0) {
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

static int slice_lo(const PExpr *ix, int arg) {
    const PIndex *a = &ix->ix[arg];
    return a->lo ? (int)a->lo->cval : 0;
}

static const char *rowslot(Em *e, const Ctx *c) {
    if (c->kind == CX_ROWVEC) return c->i;
    if (e->pk->rowwise) return arena_printf(e->a, "(%s) / %d", c->i, 8 * e->pk->rw.chunks);
    return arena_printf(e->a, "(%s / %d * 2 + ((%s >> 1) & 1))", c->i, c->cols / 2, c->i);
}

/* the slot of a per_col vector that holds the column of value c->i */
static const char *colslot(Em *e, const Ctx *c) {
    if (c->kind == CX_COLVEC) return c->i;
    if (e->pk->rowwise) return arena_printf(e->a, "(%s) %% %d", c->i, 8 * e->pk->rw.chunks);
    /* 2 ((i % (C/2)) >> 2) + (i & 1), written with the remainder after the shift: nvcc 13.0
     * miscompiles the first form when C/2 is a power of two (odd columns read other slots:
     * bench/RESULTS.md, runs 96-98), and (i >> 2) % (C/8) is the same number */
    return arena_printf(e->a, "(2 * ((%s >> 2) %% %d) + (%s & 1))", c->i, c->cols / 8, c->i);
}

/* the slot of a vector of layout lay that holds the element c->i */
static const char *vecslot(Em *e, const Ctx *c, VecLayout lay) { return lay == VL_COL ? colslot(e, c) : rowslot(e, c); }

static const char *tile_value(Em *e, const char *name, DType dt, const char *idx) {
    if (!is16(dt)) return arena_printf(e->a, "%s[%s]", name, idx);
    need(e, "tkc_ptx.cuh", "math");   /* tkc_bf16_lo/hi and the fp16 pair */
    const char *k = dt == DT_BF16 ? "bf16" : "fp16";
    return arena_printf(e->a, "((%s & 1) ? tkc_%s_hi(%s[%s >> 1]) : tkc_%s_lo(%s[%s >> 1]))", idx, k, name, idx, k, name,
                        idx);
}

static void elem(Em *e, StrBuf *b, const PExpr *x, const Ctx *c);

/* The call of a Philox-based value (rand(), keep()) up to its last arguments: seed A[0], element
 * offset A[1] + row x cols + col, 2^shift consecutive elements a call. Where the offsets are
 * multiples of that (e->rand_aligned), element rc of the tile is element rc % 2^shift of group
 * offset / 2^shift + rc / 2^shift (group_fn: the compiler finds the call once per group); else the
 * element's whole index (elem_fn). The caller closes the call. */
static void philox_index(Em *e, StrBuf *b, PExpr *const *A, const Ctx *c, int shift, const char *group_fn,
                         const char *elem_fn) {
    const char *seed = scalar_str(e, A[0], false), *off = scalar_str(e, A[1], false);
    if (e->rand_aligned) {
        const char *rc = arena_printf(e->a, "(%s * %d + %s)", row_expr(e, c), c->cols, col_expr(e, c, 0));
        sb_printf(b, "%s((uint64_t)(uint32_t)(%s), (uint64_t)((long long)(%s) >> %d) + (uint64_t)(%s >> %d), %s & %d", group_fn,
                  seed, off, shift, rc, shift, rc, (1 << shift) - 1);
        return;
    }
    sb_printf(b, "%s((uint64_t)(uint32_t)(%s), (uint64_t)(long long)(%s) + (uint64_t)%s * %d + (uint64_t)%s", elem_fn, seed, off,
              row_expr(e, c), c->cols, col_expr(e, c, 0));
}


/* the array a hoisted value lives in (hoist_row_values ran on the statement first), or NULL */
static const char *hoisted_name(const Em *e, const PExpr *x) {
    for (int i = 0; i < e->hoisted.n; i++)
        if (e->hoisted.v[i].expr == x) return e->hoisted.v[i].name;
    return NULL;
}

const char *elem_str(Em *e, const PExpr *x, const Ctx *c) {
    StrBuf b;
    sb_init(&b);
    elem(e, &b, x, c);
    char *s = arena_strdup(e->a, b.s ? b.s : "");
    sb_free(&b);
    return s;
}

/* the value of expression x at the element c->i of the destination's fragment */
static void elem(Em *e, StrBuf *b, const PExpr *x, const Ctx *c) {
    const Type *t = &x->ty;
    if ((t->kind == TY_INT || t->kind == TY_FLOAT || t->kind == TY_BOOL) && !t->varying && x->kind != PX_CALL) {
        scalar_expr(e, b, x, false);
        return;
    }
    switch (x->kind) {
    case PX_NAME: {
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
    case PX_INDEX: {
        const PExpr *base = x->base;
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
    case PX_CALL: {
        PExpr **A = x->args;
        switch (x->fn) {
        case FN_ROWMAX: case FN_ROWMIN: case FN_ROWSUM: case FN_COLMAX: case FN_COLMIN: case FN_COLSUM: case FN_CUMSUM: {
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
            if (x->nargs == 3) elem(e, b, A[2], c);
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
        case FN_RAND:
            /* the uniform of element offset + row x cols + col (tkc_philox.cuh: four consecutive
             * elements share one Philox call, which the compiler finds once per group) */
            need(e, "tkc_philox.cuh", "philox");
            philox_index(e, b, A, c, 2, "tkc_philox_uniform_gw", "tkc_philox_uniform");
            sb_putc(b, ')');
            return;
        case FN_KEEP: {
            const char *h = e->rand_aligned ? hoisted_name(e, x) : NULL;
            if (h) { /* the statement's mask, computed first (hoist_keep_masks) */
                sb_printf(b, "((%s[(%s) >> 5] >> ((%s) & 31)) & 1u)", h, c->i, c->i);
                return;
            }
            /* dropout's mask at 16 bits an element (tkc_philox.cuh: eight consecutive elements of
             * stream 1 share one call); the threshold is uniform, computed once by the compiler */
            need(e, "tkc_philox.cuh", "philox");
            need(e, "tkc_philox.cuh", "philox16");
            philox_index(e, b, A, c, 3, "tkc_philox_keep_gk", "tkc_philox_keep");
            sb_puts(b, ", tkc_philox_threshold16(");
            scalar_expr(e, b, A[2], false);
            sb_puts(b, "))");
            return;
        }
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
        case FN_LOG: case FN_LOG2: case FN_SQRT: case FN_RSQRT: case FN_ABS: case FN_TANH: case FN_ERF: {
            static const char *const nm[] = {[FN_LOG] = "__logf", [FN_LOG2] = "__log2f", [FN_SQRT] = "sqrtf",
                                              [FN_RSQRT] = "rsqrtf", [FN_ABS] = "fabsf", [FN_TANH] = "tanhf",
                                              [FN_ERF] = "erff"};
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
    case PX_BINARY:
        if (hoisted_name(e, x)) { /* tile / per_row vector: times the hoisted reciprocal */
            sb_putc(b, '(');
            elem(e, b, x->l, c);
            sb_printf(b, " * %s[%s])", hoisted_name(e, x), rowslot(e, c));
            return;
        }
        sb_putc(b, '(');
        elem(e, b, x->l, c);
        sb_printf(b, " %s ", binop_name[x->bop]);
        elem(e, b, x->r, c);
        sb_putc(b, ')');
        return;
    case PX_UNARY:
        sb_printf(b, "(%s", unop_name[x->uop]);
        elem(e, b, x->l, c);
        sb_putc(b, ')');
        return;
    case PX_COND:
        sb_putc(b, '(');
        scalar_expr(e, b, x->cond, false);
        sb_puts(b, " ? ");
        elem(e, b, x->l, c);
        sb_puts(b, " : ");
        elem(e, b, x->r, c);
        sb_putc(b, ')');
        return;
    default:
        scalar_expr(e, b, x, false);
        return;
    }
}

Ctx tile_ctx(const PlanKernel *pk, const Type *t, const char *i) {
    Ctx c = {.kind = t->kind == TY_TILE ? CX_TILE : t->layout == VL_COL ? CX_COLVEC : CX_ROWVEC, .cols = t->cols, .rwg = rows_wg(pk, t),
             .per_wg = t->per_wg, .i = i};
    return c;
}

/* the type x's tile values take: in the narrow last step, those of the score tile's copy */
const Type *value_type(Em *e, const PExpr *x) {
    if (e->nar && x->ty.kind == TY_TILE && px_mentions(x, e->nar->s)) return &e->nar->s_narrow->ty;
    return &x->ty;
}

/* a column reduction into a per_col array (see plan_colred): the thread's rows, the 8 lanes of
 * the warp with the same lane % 4 (3 shuffles), then the warps' partial results through the
 * scratch buffer, read back in one order by every thread */
static void hoist_col_reduction(Em *e, const PExpr *x) {
    const PlanKernel *pk = e->pk;
    const PExpr *src = x->args[0];
    const Type *st = value_type(e, src);
    int n = frag_count(pk, st), slots = st->cols / 4;
    const char *name = arena_printf(e->a, "tkc_red%d", e->tmp++);
    const char *op = x->fn == FN_COLMAX ? "fmaxf" : x->fn == FN_COLMIN ? "fminf" : NULL;
    const char *init = x->fn == FN_COLMAX ? "-TKC_INF" : x->fn == FN_COLMIN ? "TKC_INF" : "0.f";
    need(e, "tkc_ptx.cuh", "named_barrier");
    need(e, "tkc_ptx.cuh", "shared_f32");
    L("float %s[%d];  // %s: the %d columns this thread holds (per_col slots)", name, slots, px_str(e->a, x), slots);
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

/* an inclusive prefix sum (cumsum) of a vector into an array in the vector's layout (see
 * plan_colred, plan_scans). per_col: every thread holds its columns 8 g + 2 (l % 4) + {0, 1} of each
 * 8-column group g of the whole vector, so the 4 lanes of a quad scan each group (2 shuffles up, one
 * to read the group's total) and a running total carries the groups in order; no shared memory.
 * per_row: a warp holds rows 16 w + l / 4 (+ 8) of each 64-row block; 3 shuffles up by 4, 8 and 16
 * lanes scan each half, the second half adds the first's total, and the warps' totals meet in the
 * plan's rowscan scratch between two named barriers: each thread adds the totals of the 16-row
 * groups before its own (the consumer warpgroups' in order for a row-split vector), in one order,
 * so the four lanes that hold a row get the same value. */
static void hoist_cumsum(Em *e, const PExpr *x) {
    const PlanKernel *pk = e->pk;
    const Type *t = &x->ty;
    int slots = frag_count(pk, t);
    const char *name = arena_printf(e->a, "tkc_scan%d", e->tmp++);
    Ctx c = tile_ctx(pk, t, "tkc_r");
    L("float %s[%d];  // %s", name, slots, px_str(e->a, x));
    L("#pragma unroll");
    L("for (int tkc_r = 0; tkc_r < %d; ++tkc_r) %s[tkc_r] = %s;", slots, name, elem_str(e, x->args[0], &c));
    if (t->layout == VL_COL) {
        L("{  // the 4 lanes of a quad hold each group of 8 columns; groups in order");
        IN();
        L("float tkc_run = 0.f;");
        L("#pragma unroll");
        L("for (int tkc_g = 0; tkc_g < %d; ++tkc_g) {", slots / 2);
        IN();
        L("const float tkc_v0 = %s[2 * tkc_g], tkc_p = tkc_v0 + %s[2 * tkc_g + 1];", name, name);
        L("float tkc_s = tkc_p;");
        for (int s = 1; s <= 2; s *= 2) {
            L("{ const float tkc_u = __shfl_up_sync(0xffffffffu, tkc_s, %d); if ((tkc_lane & 3) >= %d) tkc_s += tkc_u; }", s, s);
        }
        L("const float tkc_ex = __shfl_up_sync(0xffffffffu, tkc_s, 1), tkc_tot = __shfl_sync(0xffffffffu, tkc_s, tkc_lane | 3);");
        L("const float tkc_b = tkc_run + ((tkc_lane & 3) ? tkc_ex : 0.f);");
        L("%s[2 * tkc_g] = tkc_b + tkc_v0;", name);
        L("%s[2 * tkc_g + 1] = tkc_b + tkc_p;", name);
        L("tkc_run += tkc_tot;");
        OUT();
        L("}");
        OUT();
        L("}");
        vec_push(e->a, &e->hoisted, ((Hoisted){x, name}));
        return;
    }
    int blocks = slots / 2;
    L("#pragma unroll");
    L("for (int tkc_r = 0; tkc_r < %d; ++tkc_r) {  // rows l / 4 of each half of the warp's 16 (lanes 4 apart)", slots);
    IN();
    for (int s = 4; s <= 16; s *= 2)
        L("{ const float tkc_u = __shfl_up_sync(0xffffffffu, %s[tkc_r], %d); if (tkc_lane >= %d) %s[tkc_r] += tkc_u; }", name,
          s, s, name);
    OUT();
    L("}");
    L("float %s_w[%d];  // the warp's total of each 64-row block", name, blocks);
    L("#pragma unroll");
    L("for (int tkc_b = 0; tkc_b < %d; ++tkc_b) {  // the second half adds the first's total (lane 28 holds row 7)", blocks);
    IN();
    L("%s[2 * tkc_b + 1] += __shfl_sync(0xffffffffu, %s[2 * tkc_b], 28);", name, name);
    L("%s_w[tkc_b] = __shfl_sync(0xffffffffu, %s[2 * tkc_b + 1], 28);", name, name);
    OUT();
    L("}");
    const PlanBuf *sb = &pk->bufs.v[pk->rowscan_buf];
    const PlanNamedBar *nb = &pk->nbars.v[t->per_wg ? pk->rowscan_wg_bar : pk->rowscan_bar];
    int parts = t->per_wg ? t->rows / 16 : 4 * blocks * pk->consumers;
    need(e, "tkc_ptx.cuh", "named_barrier");
    need(e, "tkc_ptx.cuh", "shared_f32");
    const char *base = t->per_wg ? arena_printf(e->a, "%s_smem + (uint32_t)wg * %d", sb->name, 4 * sb->cols)
                     : sb->rows > 1 ? arena_printf(e->a, "%s_smem + %d", sb->name, (sb->rows - 1) * 4 * sb->cols)
                                    : arena_printf(e->a, "%s_smem", sb->name);
    const char *bar = t->per_wg ? arena_printf(e->a, "%d + wg", nb->id) : arena_printf(e->a, "%d", nb->id);
    /* this thread's 16-row group of block b: (wg x blocks + b) x 4 + warp for a row-split vector */
    const char *grp = t->per_wg ? "(tkc_b * 4 + tkc_warp)" : arena_printf(e->a, "((wg * %d + tkc_b) * 4 + tkc_warp)", blocks);
    L("{  // the totals of %d 16-row groups meet in '%s' (named barrier %s: %s)", parts, sb->name, nb->name, nb->why);
    IN();
    L("const uint32_t tkc_sb = %s;", base);
    L("tkc_bar_sync(%s, %d);  // every thread has read the last prefix sum's totals", bar, nb->threads);
    L("if (tkc_lane == 0) {");
    IN();
    L("#pragma unroll");
    L("for (int tkc_b = 0; tkc_b < %d; ++tkc_b) tkc_st_shared_f32(tkc_sb + (uint32_t)%s * 4, %s_w[tkc_b]);", blocks, grp, name);
    OUT();
    L("}");
    L("tkc_bar_sync(%s, %d);", bar, nb->threads);
    L("#pragma unroll");
    L("for (int tkc_b = 0; tkc_b < %d; ++tkc_b) {", blocks);
    IN();
    L("float tkc_s = 0.f;");
    L("#pragma unroll");
    L("for (int tkc_k = 0; tkc_k < %d; ++tkc_k)", parts - 1);
    L("    if (tkc_k < %s) tkc_s += tkc_ld_shared_f32(tkc_sb + (uint32_t)tkc_k * 4);", grp);
    L("%s[2 * tkc_b] += tkc_s;", name);
    L("%s[2 * tkc_b + 1] += tkc_s;", name);
    OUT();
    L("}");
    OUT();
    L("}");
    vec_push(e->a, &e->hoisted, ((Hoisted){x, name}));
}

/* a row reduction's per-thread partial results (slots per_row slots) combined over the row in the
 * row layout: shuffles over the lanes of a warp that share a row, then, when rows are spread over
 * several warps, through the plan's rowred scratch after a named barrier (lane 0 of every
 * warp writes, every thread reads the partial results of its row's warps in one order) */
static void rowwise_row_combine(Em *e, const char *name, int slots, const char *op) {
    const PlanKernel *pk = e->pk;
    const RowLayout *r = &pk->rw;
    if (r->lanes > 1) {
        L("#pragma unroll");
        L("for (int tkc_r = 0; tkc_r < %d; ++tkc_r) {  // the %d lanes of a warp that share a row", slots, r->lanes);
        IN();
        for (int s = 1; s < r->lanes; s *= 2) {
            if (op) L("%s[tkc_r] = %s(%s[tkc_r], __shfl_xor_sync(0xffffffffu, %s[tkc_r], %d));", name, op, name, name, s);
            else L("%s[tkc_r] += __shfl_xor_sync(0xffffffffu, %s[tkc_r], %d);", name, name, s);
        }
        OUT();
        L("}");
    }
    if (r->split < 2) return;
    const PlanBuf *sb = &pk->bufs.v[pk->rowred_buf];
    const PlanNamedBar *nb = &pk->nbars.v[pk->rowred_bar];
    need(e, "tkc_ptx.cuh", "named_barrier");
    need(e, "tkc_ptx.cuh", "shared_f32");
    L("{  // the %d warps of a row meet in '%s' (named barrier %s: %s)", r->split, sb->name, nb->name, nb->why);
    IN();
    /* the scratch's two copies alternate (plan_rowred), so no barrier precedes the writes */
    L("const uint32_t tkc_rb = %s_smem + tkc_rowred_copy * %d;  // this reduction's copy; the next one writes the other",
      sb->name, sb->bytes);
    L("tkc_rowred_copy ^= 1;");
    L("if (tkc_lane == 0)");
    L("    for (int tkc_r = 0; tkc_r < %d; ++tkc_r) tkc_st_shared_f32(tkc_rb + (uint32_t)(tkc_rwarp * %d + tkc_r) * 4, %s[tkc_r]);",
      slots, sb->cols, name);
    L("tkc_bar_sync(%d, %d);", nb->id, nb->threads);
    L("#pragma unroll");
    L("for (int tkc_r = 0; tkc_r < %d; ++tkc_r) {", slots);
    IN();
    L("const uint32_t tkc_ra = tkc_rb + (uint32_t)((tkc_rwarp / %d * %d) * %d + tkc_r) * 4;", r->split, r->split, sb->cols);
    L("float tkc_s = tkc_ld_shared_f32(tkc_ra);");
    L("#pragma unroll");
    L("for (int tkc_w = 1; tkc_w < %d; ++tkc_w) tkc_s %s tkc_ld_shared_f32(tkc_ra + (uint32_t)tkc_w * %d)%s;", r->split,
      op ? arena_printf(e->a, "= %s(tkc_s,", op) : "+=", 4 * sb->cols, op ? ")" : "");
    L("%s[tkc_r] = tkc_s;", name);
    OUT();
    L("}");
    OUT();
    L("}");
}

/* rowsum(where(col == K, v, z)) that the plan made a column pick (plan_colpicks): column K of v + z,
 * one value per row, from the lane of each quad that holds column K (accumulator layout: lane % 4
 * = (K % 8) / 2, fragment slot 2 (K / 8) + K % 2 of each row) */
static void hoist_colpick(Em *e, const PExpr *x) {
    const PExpr *w = x->args[0];
    const PlanKernel *pk = e->pk;
    const Type *st = value_type(e, w);
    int K = x->colpick - 1, C = st->cols, slots = 2 * (rows_wg(pk, st) / 64);
    const char *name = arena_printf(e->a, "tkc_red%d", e->tmp++);
    Ctx c = tile_ctx(pk, st, "tkc_i");
    L("float %s[%d];  // %s: column %d, from the lane that holds it", name, slots, px_str(e->a, x), K);
    L("#pragma unroll");
    L("for (int tkc_r = 0; tkc_r < %d; ++tkc_r) {", slots);
    IN();
    L("const int tkc_i = tkc_r / 2 * %d + %d + 2 * (tkc_r & 1);  // this lane's value of row slot tkc_r in column group %d",
      C / 2, 4 * (K / 8) + K % 2, K / 8);
    L("const float tkc_v = %s + %s;", elem_str(e, w->args[1], &c), elem_str(e, w->args[2], &c));
    L("%s[tkc_r] = __shfl_sync(0xffffffffu, tkc_v, (tkc_lane & ~3) | %d);", name, (K % 8) / 2);
    OUT();
    L("}");
    vec_push(e->a, &e->hoisted, ((Hoisted){x, name}));
}

/* row reductions inside x, and reciprocals of per_row divisors, are computed first into small
 * arrays, one per expression */
void hoist_row_values(Em *e, const PExpr *x) {
    if (!x) return;
    switch (x->kind) {
    case PX_CALL:
        for (int i = 0; i < x->nargs; i++) hoist_row_values(e, x->args[i]);
        if (x->fn == FN_COLMAX || x->fn == FN_COLMIN || x->fn == FN_COLSUM) hoist_col_reduction(e, x);
        if (x->fn == FN_CUMSUM) hoist_cumsum(e, x);
        if (x->fn == FN_ROWSUM && x->colpick) {
            hoist_colpick(e, x);
            return;
        }
        if (x->fn == FN_ROWMAX || x->fn == FN_ROWMIN || x->fn == FN_ROWSUM) {
            const PExpr *src = x->args[0];
            const PlanKernel *pk = e->pk;
            const Type *st = value_type(e, src);
            Type rv = *st;
            rv.kind = TY_VEC;
            rv.layout = VL_ROW;
            int n = frag_count(pk, st), slots = pk->rowwise ? frag_count(pk, &rv) : 2 * (rows_wg(pk, st) / 64);
            const char *name = arena_printf(e->a, "tkc_red%d", e->tmp++);
            const char *op = x->fn == FN_ROWMAX ? "fmaxf" : x->fn == FN_ROWMIN ? "fminf" : NULL;
            const char *init = x->fn == FN_ROWMAX ? "-TKC_INF" : x->fn == FN_ROWMIN ? "TKC_INF" : "0.f";
            L("float %s[%d];  // %s", name, slots, px_str(e->a, x));
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
            } else if (pk->rowwise) {
                rowwise_row_combine(e, name, slots, op);
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
    case PX_BINARY:
        hoist_row_values(e, x->l);
        hoist_row_values(e, x->r);
        if (x->recip) {
            /* a tile divided by a per_row vector: one reciprocal per row, then a product per element */
            const PExpr *v = x->r;
            int slots = frag_count(e->pk, &v->ty);
            const char *name = arena_printf(e->a, "tkc_rcp%d", e->tmp++);
            Ctx c = tile_ctx(e->pk, &v->ty, "tkc_r");
            L("float %s[%d];  // 1 / %s, once per row", name, slots, px_str(e->a, v));
            L("#pragma unroll");
            L("for (int tkc_r = 0; tkc_r < %d; ++tkc_r) %s[tkc_r] = 1.f / %s;", slots, name, elem_str(e, v, &c));
            vec_push(e->a, &e->hoisted, ((Hoisted){x, name}));
        }
        return;
    case PX_UNARY: hoist_row_values(e, x->l); return;
    case PX_COND: hoist_row_values(e, x->l); hoist_row_values(e, x->r); return;
    default: return;
    }
}

/* ---- declarations of register values ----------------------------------------------------------- */

const char *reg_decl(Em *e, const Symbol *y) {
    const Type *t = &y->ty;
    int n = frag_count(e->pk, t);
    if (e->pk->rowwise) {
        const RowLayout *r = &e->pk->rw;
        if (t->kind == TY_TILE && is16(t->dt))
            return arena_printf(e->a, "uint32_t %s[%d];  // rowwise %s[%d, %d]: %d chunks of 8 columns per thread, packed in pairs",
                                y->name, n / 2, dtype_name[t->dt], t->rows, t->cols, n / 8);
        if (t->kind == TY_TILE)
            return arena_printf(e->a, "float %s[%d];  // rowwise %s[%d, %d]: %d chunks of 8 columns per thread", y->name, n,
                                dtype_name[t->dt], t->rows, t->cols, n / 8);
        if (t->layout == VL_COL)
            return arena_printf(e->a, "float %s[%d];  // %s[%d] per_col: the columns of this thread's %d chunks", y->name, n,
                                dtype_name[t->dt], t->rows, r->chunks);
        return arena_printf(e->a, "float %s[%d];  // %s[%d] per_row: the %d rows this thread holds (one per pass)", y->name, n,
                            dtype_name[t->dt], t->rows, n);
    }
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

static const char *assign_rhs(Em *e, const PStmt *st, const char *cur, const Ctx *c) {
    const char *v = elem_str(e, st->rhs, c);
    switch (st->op) {
    case AS_ADD: return arena_printf(e->a, "%s + %s", cur, v);
    case AS_SUB: return arena_printf(e->a, "%s - %s", cur, v);
    case AS_MUL: return arena_printf(e->a, "%s * %s", cur, v);
    case AS_DIV: return arena_printf(e->a, "%s / %s", cur, v);
    default: return v;
    }
}

/* the offsets of the rand() and keep() calls in x, as a condition that all are multiples of the
 * elements one Philox call serves (4 and 8; empty: no call); *which gets bit 0 for rand(), bit 1
 * for keep() */
static void rand_offsets(Em *e, const PExpr *x, StrBuf *cond, int *which) {
    if (!x) return;
    switch (x->kind) {
    case PX_CALL:
        if (x->fn == FN_RAND || x->fn == FN_KEEP) {
            sb_printf(cond, "%s(((long long)(%s)) & %d) == 0", cond->len ? " && " : "", scalar_str(e, x->args[1], false),
                      x->fn == FN_RAND ? 3 : 7);
            *which |= x->fn == FN_RAND ? 1 : 2;
        }
        for (int i = 0; i < x->nargs; i++) rand_offsets(e, x->args[i], cond, which);
        return;
    case PX_BINARY: rand_offsets(e, x->l, cond, which); rand_offsets(e, x->r, cond, which); return;
    case PX_UNARY: rand_offsets(e, x->l, cond, which); return;
    case PX_COND:
        rand_offsets(e, x->cond, cond, which);
        rand_offsets(e, x->l, cond, which);
        rand_offsets(e, x->r, cond, which);
        return;
    default: return;
    }
}

static void emit_reg_assign_once(Em *e, const PStmt *st, const PExpr *lhs, const char *decl_name, const Type *dt);

/* The keep() calls of a rowwise statement whose destination is a whole tile t and whose offsets
 * are multiples of 8 (e->rand_aligned): each call's mask for this thread's n values is computed
 * first, one Philox call per 8-column chunk into 8 bits of a word (tkc_philox_keep8), so the
 * element loop reads bits instead of leaving the compiler to find the shared calls (it found
 * fewer than half of them: 13 calls where 4 serve at D = 2048). Reductions' arguments are not
 * entered: their loops run over their own tiles. */
static void hoist_keep_masks(Em *e, const PExpr *x, const Type *t, int n) {
    if (!x) return;
    switch (x->kind) {
    case PX_CALL:
        if (x->fn == FN_ROWMAX || x->fn == FN_ROWMIN || x->fn == FN_ROWSUM || x->fn == FN_COLMAX || x->fn == FN_COLMIN ||
            x->fn == FN_COLSUM || x->fn == FN_CUMSUM)
            return;
        for (int i = 0; i < x->nargs; i++) hoist_keep_masks(e, x->args[i], t, n);
        if (x->fn == FN_KEEP && !hoisted_name(e, x)) {
            const char *name = arena_printf(e->a, "tkc_keep%d", e->tmp++);
            Ctx c = tile_ctx(e->pk, t, "(8 * tkc_k)");
            const char *rc = arena_printf(e->a, "(%s * %d + %s)", row_expr(e, &c), c.cols, col_expr(e, &c, 0));
            need(e, "tkc_philox.cuh", "philox");
            need(e, "tkc_philox.cuh", "philox16");
            L("uint32_t %s[%d] = {};  // %s: this thread's %d values, a bit each", name, (n + 31) / 32, px_str(e->a, x), n);
            L("#pragma unroll");
            L("for (int tkc_k = 0; tkc_k < %d; ++tkc_k)  // one Philox call per chunk of 8 columns", n / 8);
            L("    %s[tkc_k >> 2] |= tkc_philox_keep8((uint64_t)(uint32_t)(%s), (uint64_t)((long long)(%s) >> 3) + (uint64_t)(%s >> 3), "
              "tkc_philox_threshold16(%s)) << (8 * (tkc_k & 3));",
              name, scalar_str(e, x->args[0], false), scalar_str(e, x->args[1], false), rc, scalar_str(e, x->args[2], false));
            vec_push(e->a, &e->hoisted, ((Hoisted){x, name}));
        }
        return;
    case PX_BINARY: hoist_keep_masks(e, x->l, t, n); hoist_keep_masks(e, x->r, t, n); return;
    case PX_UNARY: hoist_keep_masks(e, x->l, t, n); return;
    case PX_COND:
        hoist_keep_masks(e, x->cond, t, n);
        hoist_keep_masks(e, x->l, t, n);
        hoist_keep_masks(e, x->r, t, n);
        return;
    default: return;
    }
}

/* `dst op= expr` for a register tile or vector (or a column slice of a tile); in a rowwise kernel a
 * statement with rand() or keep() runs in two versions, picked by whether the offsets are multiples
 * of 4 (rand) and 8 (keep): then the consecutive elements of a thread's 8-column chunk share one
 * Philox call (four a call for rand(), eight for keep()) */
void emit_reg_assign(Em *e, const PStmt *st, const PExpr *lhs, const char *decl_name, const Type *dt) {
    StrBuf cond;
    sb_init(&cond);
    int which = 0;
    if (e->pk->rowwise) rand_offsets(e, st->rhs, &cond, &which);
    if (!cond.len) {
        sb_free(&cond);
        emit_reg_assign_once(e, st, lhs, decl_name, dt);
        return;
    }
    L("if (%s) {  // %s", cond.s,
      which == 1 ? "rand(): four elements per Philox call"
      : which == 2 ? "keep(): eight elements per Philox call"
                   : "rand(): four elements per Philox call, keep(): eight");
    IN();
    e->rand_aligned = true;
    emit_reg_assign_once(e, st, lhs, decl_name, dt);
    e->rand_aligned = false;
    OUT();
    L("} else {  // %s(): one Philox call per element", which == 2 ? "keep" : which == 1 ? "rand" : "rand() and keep");
    IN();
    emit_reg_assign_once(e, st, lhs, decl_name, dt);
    OUT();
    L("}");
    sb_free(&cond);
}

static void emit_reg_assign_once(Em *e, const PStmt *st, const PExpr *lhs, const char *decl_name, const Type *dt) {
    const PExpr *rhs = st->rhs;
    const char *name = decl_name;
    int row0 = 0, col0 = 0, pcols = dt->cols;
    const Type *vt = dt;
    if (!name) {
        if (lhs->kind == PX_INDEX) {
            name = lhs->base->sym->name;
            row0 = slice_lo(lhs, 0);
            col0 = lhs->nix > 1 ? slice_lo(lhs, 1) : 0;
            pcols = lhs->base->ty.cols;
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
    if (e->rand_aligned && vt->kind == TY_TILE && row0 == 0 && col0 == 0 && pcols == vt->cols && n % 8 == 0)
        hoist_keep_masks(e, rhs, vt, n);
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
