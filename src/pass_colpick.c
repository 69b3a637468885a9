/* pass_colpick.c - the column-pick pass (plan_colpicks): a row sum of where(col == K, x, z) with z
 * zero is column K of x, read from the lane that holds it. Part of lowering (lower_int.h). */
#include "lower_int.h"

/* ---- column picks ------------------------------------------------------------------------------ */

static bool is_zero_literal(const PExpr *x) {
    if (!x || !x->is_const) return false;
    if (x->ty.kind == TY_FLOAT) return x->fval == 0.0;
    return x->ty.kind == TY_INT && x->cval == 0;
}

/* z is 0, or 0 times a value that does not vary along the row (a per_row vector, a scalar): every
 * column's term is then the same +-0 (or NaN), so the row's sum is x's column K plus one of them */
static bool row_zero(const PExpr *z) {
    if (is_zero_literal(z)) return true;
    if (!z || z->kind != PX_BINARY || z->bop != BIN_MUL) return false;
    const PExpr *k = is_zero_literal(z->l) ? z->r : is_zero_literal(z->r) ? z->l : NULL;
    if (!k) return false;
    if (k->ty.kind == TY_VEC) return k->ty.space == MS_REG && k->ty.layout == VL_ROW;
    return (k->ty.kind == TY_FLOAT || k->ty.kind == TY_INT) && !(k->ty.varying & VARY_COL);
}

/* the column K of `col == K` (either order), or -1 */
static int64_t col_equals(const PExpr *c) {
    if (!c || c->kind != PX_BINARY || c->bop != BIN_EQ) return -1;
    const PExpr *k = px_is_builtin(c->l, BI_COL) ? c->r : px_is_builtin(c->r, BI_COL) ? c->l : NULL;
    if (!k || !k->is_const || k->ty.kind != TY_INT) return -1;
    return k->cval;
}

/* Preconditions: the kernel's tiles are in the wgmma accumulator layout (a rowwise kernel's rows
 * are split over lanes differently); the argument is a register tile where(col == K, x, z) with K
 * a compile-time column of it and z zero as row_zero() says. Then every term of the sum but
 * column K's is the same zero, and the sum is exactly x[r, K] + z[r, K] (x + 0.0 for z = 0: a -0
 * becomes +0, as in the sum). Marks the nodes; returns how many. */
static int mark_colpicks(Lower *L, PExpr *x) {
    if (!x) return 0;
    int n = 0;
    switch (x->kind) {
    case PX_CALL: {
        for (int i = 0; i < x->nargs; i++) n += mark_colpicks(L, x->args[i]);
        if (x->fn != FN_ROWSUM || L->pk->rowwise || x->nargs != 1) return n;
        const PExpr *w = x->args[0];
        if (w->kind != PX_CALL || w->fn != FN_WHERE || w->nargs != 3 || w->ty.kind != TY_TILE) return n;
        int64_t k = col_equals(w->args[0]);
        if (k < 0 || k >= w->ty.cols || !row_zero(w->args[2])) return n;
        x->colpick = (int)k + 1;
        return n + 1;
    }
    case PX_BINARY: return mark_colpicks(L, x->l) + mark_colpicks(L, x->r);
    case PX_UNARY: return mark_colpicks(L, x->l);
    case PX_COND: return mark_colpicks(L, x->l) + mark_colpicks(L, x->r);
    default: return 0;
    }
}

void plan_colpicks(Lower *L, PStmt *st) {
    int n = mark_colpicks(L, st->rhs);
    if (n && !L->colpicks) L->colpick_first = st;
    L->colpicks += n;
}

void note_colpicks(Lower *L) {
    if (!L->colpicks) return;
    lower_note(L, "'%s': a row sum of where(col == K, x, 0) is column K of x, so each row's value is read from the lane "
            "that holds that column (one shuffle), not summed over the row's columns (%d such row sum%s in this kernel)",
            plan_stmt_str(L->a, L->colpick_first), L->colpicks, L->colpicks == 1 ? "" : "s");
}
