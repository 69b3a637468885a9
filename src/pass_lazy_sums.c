/* pass_lazy_sums.c - the lazy row sums pass (plan_lazy_sums): per_row sums kept per lane
 * through the loop and reduced across the quad once in finish. Part of lowering (lower_int.h). */
#include "lower_int.h"

/* ---- lazy row sums ------------------------------------------------------------------------- */

typedef Vec(const Expr *) ConstExprs;

/* rowsum(x) of a register tile that does not read y */
static bool is_tile_rowsum(const Expr *e, const Symbol *y) {
    return e->kind == EX_CALL && e->fn == FN_ROWSUM && e->u.call.args[0]->ty.kind == TY_TILE &&
           !expr_depends_on(e->u.call.args[0], y);
}

/* the same value in the four lanes of a quad: a per_row vector or a scalar that does not vary by column */
static bool row_uniform(const Expr *e) {
    if (e->ty.kind == TY_VEC) return e->ty.space == MS_REG && e->ty.layout == VL_ROW && !e->ty.per_wg;
    return (e->ty.kind == TY_FLOAT || e->ty.kind == TY_INT) && !(e->ty.varying & VARY_COL);
}

/* y, or y scaled by a row-uniform value that does not read y */
static bool is_scaled_self(const Expr *e, const Symbol *y) {
    if (e->kind == EX_NAME) return e->sym == y;
    if (e->kind != EX_BINARY || e->u.bin.op != BIN_MUL) return false;
    const Expr *a = e->u.bin.l, *b = e->u.bin.r;
    if (a->kind == EX_NAME && a->sym == y) return row_uniform(b) && !expr_depends_on(b, y);
    if (b->kind == EX_NAME && b->sym == y) return row_uniform(a) && !expr_depends_on(a, y);
    return false;
}

/* every statement of l touches y only as `y = y * a + rowsum(x)` (either order, a optional) or
 * `y += rowsum(x)`; the rowsums are collected in rs */
static bool only_sum_updates(Lower *L, StmtList *l, Symbol *y, ConstExprs *rs) {
    for (int i = 0; i < l->n; i++) {
        Stmt *st = l->v[i];
        if (st->kind == ST_ASSIGN && st->mv == MV_NONE && st->u.assign.lhs->kind == EX_NAME &&
            st->u.assign.lhs->sym == y) {
            Expr *r = st->u.assign.rhs;
            if (st->u.assign.op == AS_ADD && is_tile_rowsum(r, y)) {
                vec_push(L->a, rs, r);
                continue;
            }
            if (st->u.assign.op == AS_SET && r->kind == EX_BINARY && r->u.bin.op == BIN_ADD) {
                if (is_tile_rowsum(r->u.bin.r, y) && is_scaled_self(r->u.bin.l, y)) {
                    vec_push(L->a, rs, r->u.bin.r);
                    continue;
                }
                if (is_tile_rowsum(r->u.bin.l, y) && is_scaled_self(r->u.bin.r, y)) {
                    vec_push(L->a, rs, r->u.bin.l);
                    continue;
                }
            }
            return false;
        }
        if (st->kind == ST_IF) {
            if (expr_depends_on(st->u.if_.cond, y) || !only_sum_updates(L, &st->u.if_.then_s, y, rs) ||
                !only_sum_updates(L, &st->u.if_.else_s, y, rs))
                return false;
            continue;
        }
        if (st->kind == ST_FOR) {
            if (!only_sum_updates(L, &st->u.for_.body, y, rs)) return false;
            continue;
        }
        SymSet rd = {0}, wr = {0};
        stmt_effects(L, st, &rd, &wr, NULL);
        if (symset_has(&rd, y) || symset_has(&wr, y)) return false;
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
        StmtList *su = &sk->blocks[BK_SETUP]->u.block.body;
        bool ok = true, zeroed = false;
        for (int k = 0; k < su->n && ok; k++) {
            Stmt *st = su->v[k];
            SymSet rd = {0}, wr = {0};
            stmt_effects(L, st, &rd, &wr, NULL);
            if (symset_has(&rd, y)) ok = false;
            else if (symset_has(&wr, y))
                ok = st->kind == ST_ASSIGN && st->u.assign.op == AS_SET && st->u.assign.lhs->kind == EX_NAME &&
                     st->u.assign.rhs->is_const && st->u.assign.rhs->cval == 0 && (zeroed = true);
        }
        if (!ok || !zeroed) continue;
        /* neither load nor store reads it */
        for (int b = 0; b < BK_COUNT && ok; b++) {
            if (b != BK_LOAD && b != BK_STORE) continue;
            if (!sk->blocks[b]) continue;
            StmtList *bl = &sk->blocks[b]->u.block.body;
            for (int k = 0; k < bl->n && ok; k++) {
                SymSet rd = {0}, wr = {0};
                stmt_effects(L, bl->v[k], &rd, &wr, NULL);
                ok = !symset_has(&rd, y) && !symset_has(&wr, y);
            }
        }
        ConstExprs rs = {0};
        if (!ok || !only_sum_updates(L, &sk->blocks[BK_COMPUTE]->u.block.body, y, &rs) || !rs.n) continue;
        vec_push(L->a, &pk->lazy_sums, y);
        for (int k = 0; k < rs.n; k++) vec_push(L->a, &pk->lazy_rowsums, rs.v[k]);
        lower_note(L, "'%s' only adds row sums in the loop: each lane keeps its partial sums and finish adds the four of a "
                "row's quad once, so the rowsum%s that feed%s it skip%s the per-step shuffles",
             y->name, rs.n > 1 ? "s" : "", rs.n > 1 ? "" : "s", rs.n > 1 ? "" : "s");
    }
}
