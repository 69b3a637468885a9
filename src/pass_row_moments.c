/* pass_row_moments.c - the row moments pass (plan_row_moments): in a rowwise kernel, a row sum of
 * squared deviations, rowsum((s - m) * (s - m)), that follows rowsum(s) of the same values takes
 * both from one reduction. Part of lowering (lower_int.h).
 *
 * rowsum(s) then reduces two numbers per row: the sum and the sum of squared deviations from each
 * part's own mean, combined over lanes and warps with Chan's formula for parts of equal counts
 * (M2 = M2a + M2b + (Sb - Sa)^2 / 2n). The second statement then reads
 * rowsum((s - m)^2) = M2 + N (S / N - m)^2, which is the same sum for any per-row m (with m the
 * mean, the second term is 0), so the second reduction's shuffles and its meeting of the warps
 * (a named barrier) go. Preconditions, said in the notes when one fails: the same op list holds
 * both statements, nothing between them (nor the first statement) writes s, and m is a per_row
 * value or a scalar. */
#include "lower_int.h"

/* the rowsum(s) of a plain register tile s in x, first found, or NULL */
static const PExpr *find_tile_rowsum(const PExpr *x) {
    if (!x) return NULL;
    switch (x->kind) {
    case PX_CALL:
        if (x->fn == FN_ROWSUM && !x->colpick && x->args[0]->kind == PX_NAME && x->args[0]->ty.kind == TY_TILE &&
            x->args[0]->ty.space == MS_REG)
            return x;
        for (int i = 0; i < x->nargs; i++) {
            const PExpr *r = find_tile_rowsum(x->args[i]);
            if (r) return r;
        }
        return NULL;
    case PX_BINARY: {
        const PExpr *r = find_tile_rowsum(x->l);
        return r ? r : find_tile_rowsum(x->r);
    }
    case PX_UNARY: return find_tile_rowsum(x->l);
    case PX_COND: {
        const PExpr *r = find_tile_rowsum(x->l);
        return r ? r : find_tile_rowsum(x->r);
    }
    default: return NULL;
    }
}

/* s - m, m a per_row register vector or a scalar: m, else NULL */
static const PExpr *deviation_of(const PExpr *d, const Symbol *s) {
    if (d->kind != PX_BINARY || d->bop != BIN_SUB || d->l->kind != PX_NAME || d->l->sym != s) return NULL;
    const PExpr *m = d->r;
    if (m->kind != PX_NAME) return NULL;
    if (m->ty.kind == TY_VEC && m->ty.space == MS_REG && m->ty.layout == VL_ROW) return m;
    if ((m->ty.kind == TY_FLOAT || m->ty.kind == TY_INT) && !m->ty.varying) return m;
    return NULL;
}

/* rowsum((s - m) * (s - m)) in x, first found: the call, with its m */
static const PExpr *find_sq_rowsum(const PExpr *x, const Symbol *s, const PExpr **m) {
    if (!x) return NULL;
    switch (x->kind) {
    case PX_CALL:
        if (x->fn == FN_ROWSUM && !x->colpick) {
            const PExpr *a = x->args[0];
            if (a->kind == PX_BINARY && a->bop == BIN_MUL) {
                const PExpr *ml = deviation_of(a->l, s), *mr = deviation_of(a->r, s);
                if (ml && mr && ml->sym == mr->sym) {
                    *m = ml;
                    return x;
                }
            }
        }
        for (int i = 0; i < x->nargs; i++) {
            const PExpr *r = find_sq_rowsum(x->args[i], s, m);
            if (r) return r;
        }
        return NULL;
    case PX_BINARY: {
        const PExpr *r = find_sq_rowsum(x->l, s, m);
        return r ? r : find_sq_rowsum(x->r, s, m);
    }
    case PX_UNARY: return find_sq_rowsum(x->l, s, m);
    case PX_COND: {
        const PExpr *r = find_sq_rowsum(x->l, s, m);
        return r ? r : find_sq_rowsum(x->r, s, m);
    }
    default: return NULL;
    }
}

static const PExpr *stmt_rhs(const POp *o) { return o->kind == POP_STMT && o->st ? o->st->rhs : NULL; }

static bool writes(Lower *L, POp *o, const Symbol *s) {
    Effects e;
    op_effects(L, o, &e);
    return symset_has(&e.wr, s);
}

static void moments_in(Lower *L, POpList *l) {
    PlanKernel *pk = L->pk;
    for (int i = 0; i < l->n; i++) {
        if (l->v[i]->kind == POP_IF) moments_in(L, &l->v[i]->then_ops), moments_in(L, &l->v[i]->else_ops);
        if (l->v[i]->kind == POP_FOR) moments_in(L, &l->v[i]->then_ops);
        const PExpr *sum = find_tile_rowsum(stmt_rhs(l->v[i]));
        if (!sum) continue;
        const Symbol *s = sum->args[0]->sym;
        if (writes(L, l->v[i], s)) continue;
        for (int j = i + 1; j < l->n; j++) {
            const PExpr *m = NULL, *sq = find_sq_rowsum(stmt_rhs(l->v[j]), s, &m);
            if (sq) {
                PlanMoments pm = {.sum = sum, .sq = sq, .m = m, .n = s->ty.cols};
                vec_push(L->a, &pk->moments, pm);
                lower_note(L, "row moments: rowsum(%s) also reduces each part's squared deviations from its own mean "
                              "(Chan's formula over lanes%s), and rowsum((%s - %s) * (%s - %s)) follows from the two "
                              "without a reduction of its own",
                           s->name, pk->rw.split > 1 ? " and warps" : "", s->name, m->name, s->name, m->name);
                break;
            }
            if (writes(L, l->v[j], s)) {
                const PExpr *mm = NULL;
                for (int k = j + 1; k < l->n; k++)
                    if (find_sq_rowsum(stmt_rhs(l->v[k]), s, &mm)) {
                        lower_note(L, "row moments: not for rowsum(%s): '%s' changes between it and the squared "
                                      "deviations' sum", s->name, s->name);
                        break;
                    }
                break;
            }
        }
    }
}

void plan_row_moments(Lower *L) {
    PlanKernel *pk = L->pk;
    if (!pk->rowwise || !pk->rw.cols) return;
    moments_in(L, &pk->setup_ops);
    moments_in(L, &pk->compute_ops);
    moments_in(L, &pk->finish_ops);
}
