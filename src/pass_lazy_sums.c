/* pass_lazy_sums.c - the lazy row sums pass (plan_lazy_sums): per_row sums kept per lane
 * through the loop and reduced across the quad once in finish. Part of lowering (lower_int.h). */
#include "lower_int.h"

/* ---- lazy row sums ------------------------------------------------------------------------- */

typedef Vec(const PExpr *) ConstExprs;

/* rowsum(x) of a register tile that does not read y (and is a sum: not a column pick) */
static bool is_tile_rowsum(Arena *a, const PExpr *e, const Symbol *y) {
    return e->kind == PX_CALL && e->fn == FN_ROWSUM && !e->colpick && e->args[0]->ty.kind == TY_TILE &&
           !px_depends_on(a, e->args[0], y);
}

/* the same value in the four lanes of a quad: a per_row vector or a scalar that does not vary by column */
static bool row_uniform(const PExpr *e) {
    if (e->ty.kind == TY_VEC) return e->ty.space == MS_REG && e->ty.layout == VL_ROW && !e->ty.per_wg;
    return (e->ty.kind == TY_FLOAT || e->ty.kind == TY_INT) && !(e->ty.varying & VARY_COL);
}

/* y, or y scaled by a row-uniform value that does not read y */
static bool is_scaled_self(Arena *ar, const PExpr *e, const Symbol *y) {
    if (e->kind == PX_NAME) return e->sym == y;
    if (e->kind != PX_BINARY || e->bop != BIN_MUL) return false;
    const PExpr *a = e->l, *b = e->r;
    if (a->kind == PX_NAME && a->sym == y) return row_uniform(b) && !px_depends_on(ar, b, y);
    if (b->kind == PX_NAME && b->sym == y) return row_uniform(a) && !px_depends_on(ar, a, y);
    return false;
}

/* every op of l touches y only as `y = y * a + rowsum(x)` (either order, a optional) or
 * `y += rowsum(x)`; the rowsums are collected in rs */
static bool only_sum_updates(Lower *L, const POpList *l, Symbol *y, ConstExprs *rs) {
    for (int i = 0; i < l->n; i++) {
        POp *o = l->v[i];
        PStmt *st = o->kind == POP_STMT ? o->st : NULL;
        if (st && st->kind == PS_ASSIGN && st->mv == MV_NONE && st->lhs->kind == PX_NAME && st->lhs->sym == y) {
            PExpr *r = st->rhs;
            if (st->op == AS_ADD && is_tile_rowsum(L->a, r, y)) {
                vec_push(L->a, rs, r);
                continue;
            }
            if (st->op == AS_SET && r->kind == PX_BINARY && r->bop == BIN_ADD) {
                if (is_tile_rowsum(L->a, r->r, y) && is_scaled_self(L->a, r->l, y)) {
                    vec_push(L->a, rs, r->r);
                    continue;
                }
                if (is_tile_rowsum(L->a, r->l, y) && is_scaled_self(L->a, r->r, y)) {
                    vec_push(L->a, rs, r->l);
                    continue;
                }
            }
            return false;
        }
        if (o->kind == POP_IF) {
            if (px_depends_on(L->a, o->cond, y) || !only_sum_updates(L, &o->then_ops, y, rs) ||
                !only_sum_updates(L, &o->else_ops, y, rs))
                return false;
            continue;
        }
        if (o->kind == POP_FOR) {
            if (!only_sum_updates(L, &o->then_ops, y, rs)) return false;
            continue;
        }
        Effects e;
        op_effects(L, o, &e);
        if (symset_has(&e.rd, y) || symset_has(&e.wr, y)) return false;
    }
    return true;
}

/* A per_row register vector that starts at 0 in setup, only accumulates row sums in the compute
 * block (`l = l * alpha + rowsum(p)`, alpha the same in the four lanes of a row's quad) and is read
 * only in finish: each lane keeps its partial sums through the loop and finish adds the quad's four
 * once, instead of two shuffles per row in every step. */
void plan_lazy_sums(Lower *L) {
    SemaKernel *sk = L->sk;
    PlanKernel *pk = L->pk;
    if (!sk->blocks[BK_COMPUTE] || !sk->blocks[BK_SETUP] || !sk->blocks[BK_FINISH]) return;
    for (int i = 0; i < sk->regs.n; i++) {
        Symbol *y = sk->regs.v[i];
        if (y->ty.kind != TY_VEC || y->ty.layout != VL_ROW || y->ty.per_wg || y->ty.dt != DT_FP32) continue;
        /* setup: only y = 0 */
        bool ok = true, zeroed = false;
        for (int k = 0; k < pk->setup_ops.n && ok; k++) {
            POp *o = pk->setup_ops.v[k];
            Effects e;
            op_effects(L, o, &e);
            PStmt *st = o->kind == POP_STMT ? o->st : NULL;
            if (symset_has(&e.rd, y)) ok = false;
            else if (symset_has(&e.wr, y))
                ok = st && st->kind == PS_ASSIGN && st->op == AS_SET && st->lhs->kind == PX_NAME && st->rhs->is_const &&
                     st->rhs->cval == 0 && (zeroed = true);
        }
        if (!ok || !zeroed) continue;
        /* the step (compute and store blocks) only adds row sums to it */
        ConstExprs rs = {0};
        if (!only_sum_updates(L, &pk->step_ops, y, &rs) || !rs.n) continue;
        vec_push(L->a, &pk->lazy_sums, y);
        for (int k = 0; k < rs.n; k++) vec_push(L->a, &pk->lazy_rowsums, rs.v[k]);
        lower_note(L, "'%s' only adds row sums in the loop: each lane keeps its partial sums and finish adds the four of a "
                "row's quad once, so the rowsum%s that feed%s it skip%s the per-step shuffles",
             y->name, rs.n > 1 ? "s" : "", rs.n > 1 ? "" : "s", rs.n > 1 ? "" : "s");
    }
}
