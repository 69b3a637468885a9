/* pass_overlap.c - zero folding (fold_zero_fills: a setup zero fill folded into the first
 * product) and the overlap pass (apply_overlap: the step's last product issued one step late).
 * Part of lowering (lower_int.h). */
#include "lower_int.h"

/* ---- zero folding and overlap --------------------------------------------------------------- */

/* `acc = 0;` in setup followed by `acc += a @ b` as acc's first use in compute: the first
 * product of each work tile overwrites instead (wgmma scale-d = 0), so no zero fill is needed */
void fold_zero_fills(Lower *L) {
    PlanKernel *pk = L->pk;
    POpList *setup = &pk->setup_ops;
    for (int i = 0; i < setup->n; i++) {
        POp *o = setup->v[i];
        if (o->kind != POP_STMT || o->st->kind != PS_ASSIGN || o->st->op != AS_SET) continue;
        PExpr *l = o->st->lhs, *r = o->st->rhs;
        if (l->kind != PX_NAME || !l->sym || l->sym->kind != SYM_REG || l->sym->ty.kind != TY_TILE) continue;
        if (!r->is_const || (r->ty.kind == TY_FLOAT ? r->fval != 0.0 : r->cval != 0)) continue;
        Symbol *acc = l->sym;
        /* acc's first use in the compute step must be a top-level accumulating product */
        POp *first = NULL;
        for (int j = 0; j < pk->compute_ops.n && !first; j++) {
            Effects e;
            op_effects(L, pk->compute_ops.v[j], &e);
            if (symset_has(&e.rd, acc) || symset_has(&e.wr, acc)) first = pk->compute_ops.v[j];
        }
        if (!first || first->kind != POP_MMA || first->mma->dst != acc || !first->mma->accumulate) continue;
        /* with overlap the step's last product is deferred: its first issue is in the second step
         * (or after the loop), never in the first, so it cannot start from scale-d = 0 there */
        if (pk->overlap) {
            POp *last = NULL;
            for (int j = 0; j < pk->compute_ops.n; j++)
                if (pk->compute_ops.v[j]->kind == POP_MMA) last = pk->compute_ops.v[j];
            if (last == first) continue;
        }
        /* and nothing later in setup may read it */
        bool later = false;
        for (int j = i + 1; j < setup->n; j++) {
            Effects e;
            op_effects(L, setup->v[j], &e);
            later |= symset_has(&e.rd, acc);
        }
        if (later) continue;
        first->mma->zero_first = true;
        for (int j = i + 1; j < setup->n; j++) setup->v[j - 1] = setup->v[j];
        setup->n--;
        i--;
        lower_note(L, "'%s = 0' in setup is folded into the first product of each work tile (wgmma scale-d = 0 on the "
                "first step); a work tile with no steps still gets zeros",
             acc->name);
    }
}

/* overlap = 1: the last product of the step (O += P @ V) is issued one step late, right after
 * the next step's first product, so the softmax between them runs while both products use
 * the tensor cores (FlashAttention-3's intra-warpgroup pipelining) */
void apply_overlap(Lower *L) {
    PlanKernel *pk = L->pk;
    POpList *ops = &pk->compute_ops;
    Span sp = L->sk->pipe ? L->sk->pipe->span : L->sk->k->name_span;
    int first = -1;
    for (int i = 0; i < ops->n; i++)
        if (ops->v[i]->kind == POP_MMA) {
            first = i;
            break;
        }
    int li = -1;
    for (int i = ops->n - 1; i >= 0; i--)
        if (ops->v[i]->kind == POP_MMA) {
            li = i;
            break;
        }
    POp *last = li >= 0 ? ops->v[li] : NULL;
    if (first < 0 || li == first) {
        diag_error(L->d, sp,
                   "overlap = 1 needs a compute block with two products at its top level: the first starts a step "
                   "and the last is deferred to the next one (as in S = Q @ K.T ... O += P @ V)");
        return;
    }
    PlanMma *m = last->mma;
    /* statements after the deferred product keep their place, so they must not touch its result */
    for (int i = li + 1; i < ops->n; i++) {
        Effects e;
        op_effects(L, ops->v[i], &e);
        if (symset_has(&e.rd, m->dst) || symset_has(&e.wr, m->dst) || ops->v[i]->kind == POP_MMA) {
            diag_error(L->d, ops->v[i]->st ? ops->v[i]->st->span : sp,
                       "with overlap = 1 the last product ('%s') is deferred to the next step, so nothing after it in "
                       "the compute block may use '%s'; move this statement before the product",
                       m->dst->name, m->dst->name);
            return;
        }
    }
    if (!m->accumulate || !m->a_reg) {
        diag_error(L->d, last->st->span,
                   "overlap = 1 defers the last product, which must accumulate (+=) and take its A operand from "
                   "registers");
        return;
    }
    /* the deferred product reads its A operand from a materialized copy */
    if (!m->a_tmp) {
        Symbol *tmp = ARENA_NEW(L->a, Symbol);
        tmp->kind = SYM_REG;
        tmp->name = arena_printf(L->a, "%s_operand", m->dst->name);
        tmp->ty = m->a_expr->ty;
        tmp->span = m->a_expr->span;
        m->a_tmp = tmp;
        PlanReg r = {tmp, value_regs(pk, &tmp->ty)};
        vec_push(L->a, &pk->regs, r);
    }
    Symbol *tmp = m->a_tmp;
    m->deferred = true;
    POp *mat = pop_new(L, POP_MATERIALIZE);
    mat->mma = m;
    mat->st = last->st;
    ops->v[li] = mat;
    /* insert the product after the first one */
    last->prev = true;
    last->skip_first = true;
    vec_push(L->a, ops, NULL);
    for (int i = ops->n - 1; i > first + 1; i--) ops->v[i] = ops->v[i - 1];
    ops->v[first + 1] = last;
    lower_note(L, "overlap: '%s' is issued one step late, right after the next step's first product, so the work "
            "between them overlaps both products; its A operand is kept in '%s'",
         px_str(L->a, last->st->rhs), tmp->name);
    if (pk->pingpong) {
        if (pk->consumers < 2) {
            diag_error(L->d, sp, "pingpong needs at least 2 consumer warpgroups");
            return;
        }
        POp *w = pop_new(L, POP_PP_WAIT), *p = pop_new(L, POP_PP_PASS);
        vec_push(L->a, ops, NULL);
        vec_push(L->a, ops, NULL);
        for (int i = ops->n - 1; i > first + 3; i--) ops->v[i] = ops->v[i - 2];
        ops->v[first + 3] = p;
        ops->v[first + 2] = ops->v[first + 1];
        ops->v[first + 1] = ops->v[first];
        ops->v[first] = w;
        lower_note(L, "pingpong: the consumer warpgroups take turns issuing their products (named barriers), so one "
                "warpgroup's softmax runs under the other's products");
    }
}
