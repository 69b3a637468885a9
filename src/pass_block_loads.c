/* pass_block_loads.c - the per-block loads pass (plan_block_loads): in a persistent grid, a register
 * vector loaded from global memory with the same coordinates for every work tile is loaded once
 * per block, before the first tile. Part of lowering (lower_int.h). */
#include "lower_int.h"

/* ---- loads the same for every work tile ---------------------------------------------------------- */

/* x has one value for the whole launch: constants, run-time scalars and dimensions, and
 * arithmetic on them (no block coordinate, no let, no loop variable, no element position) */
static bool launch_uniform(const PExpr *x) {
    if (!x) return true;
    if (x->is_const) return true;
    switch (x->kind) {
    case PX_INT: case PX_FLOAT: return true;
    case PX_NAME: return x->sym && (x->sym->kind == SYM_SCALAR || x->sym->kind == SYM_DIM || x->sym->kind == SYM_PARAM);
    case PX_BINARY: return launch_uniform(x->l) && launch_uniform(x->r);
    case PX_UNARY: return launch_uniform(x->l);
    case PX_COND: return launch_uniform(x->cond) && launch_uniform(x->l) && launch_uniform(x->r);
    case PX_CALL:
        if (x->fn == FN_AT) return false; /* an offset load: kept where it is */
        for (int i = 0; i < x->nargs; i++)
            if (!launch_uniform(x->args[i])) return false;
        return true;
    default: return false;
    }
}

/* is o `v <- T[...]`, a register vector loaded from an `in` tensor at launch-uniform coordinates */
static bool uniform_vec_load(Lower *L, const POp *o) {
    if (o->kind != POP_STMT || !o->st || o->st->kind != PS_ASSIGN || o->st->mv != MV_G2R) return false;
    const PExpr *lhs = o->st->lhs, *rhs = o->st->rhs;
    if (lhs->kind != PX_NAME || lhs->ty.kind != TY_VEC || rhs->kind != PX_INDEX || !rhs->base || !rhs->base->sym) return false;
    const Symbol *t = rhs->base->sym;
    if (t->kind != SYM_TENSOR || L->sk->args.v[t->index]->mode != ARG_IN) return false;
    for (int i = 0; i < rhs->nix; i++) {
        const PIndex *ix = &rhs->ix[i];
        if (!launch_uniform(ix->lo) || (ix->slice && !launch_uniform(ix->hi))) return false;
    }
    return true;
}

/* does any op of l but `skip` (nested ones included) write register y */
static bool others_write(Lower *L, POpList *l, const POp *skip, Symbol *y) {
    for (int i = 0; i < l->n; i++) {
        POp *o = l->v[i];
        if (o == skip) continue;
        if (o->kind == POP_IF || o->kind == POP_FOR) {
            if (others_write(L, &o->then_ops, skip, y) || others_write(L, &o->else_ops, skip, y)) return true;
            continue;
        }
        Effects e;
        op_effects(L, o, &e);
        if (symset_has(&e.wr, y)) return true;
    }
    return false;
}

static bool written_elsewhere(Lower *L, const POp *skip, Symbol *y) {
    PlanKernel *pk = L->pk;
    POpList *lists[] = {&pk->block_ops, &pk->setup_ops, &pk->compute_ops, &pk->finish_ops};
    for (int i = 0; i < 4; i++)
        if (others_write(L, lists[i], skip, y)) return true;
    return false;
}

static bool any_uniform_load(Lower *L, const POpList *l) {
    for (int i = 0; i < l->n; i++)
        if (uniform_vec_load(L, l->v[i])) return true;
    return false;
}

/* moves the qualifying loads of l (its top level: a load under an if stays) into block_ops */
static int hoist_from(Lower *L, POpList *l, const char *block, StrBuf *said) {
    int n = 0;
    for (int i = 0; i < l->n; i++) {
        POp *o = l->v[i];
        if (!uniform_vec_load(L, o) || written_elsewhere(L, o, o->st->lhs->sym)) continue;
        vec_push(L->a, &L->pk->block_ops, o);
        for (int j = i + 1; j < l->n; j++) l->v[j - 1] = l->v[j];
        l->n--, i--, n++;
        sb_printf(said, "%s'%s' (%s)", said->len ? ", " : "", plan_stmt_str(L->a, o->st), block);
    }
    return n;
}

/* Preconditions: a persistent grid (a block runs several work tiles); the load is a register
 * vector's, from an `in` tensor (nothing in the launch writes it), at coordinates that are the
 * same for every work tile (constants, scalars, dimensions: no block coordinate, no let, no
 * at()); it is not under an if; and no other statement writes the vector. Then every tile would
 * load the same values into it: the load runs once per block, before the first work tile, and
 * the vector keeps them (its registers were counted for the whole kernel already). Says what it
 * moved, or why a persistent grid's uniform loads stay. */
void plan_block_loads(Lower *L) {
    PlanKernel *pk = L->pk;
    if (!pk->persistent) {
        if (any_uniform_load(L, &pk->setup_ops) || any_uniform_load(L, &pk->finish_ops))
            lower_note(L, "a vector load with the same coordinates for every work tile runs in every block: the grid is "
                    "not persistent (persistent = 1 would load it once per block and keep it)");
        return;
    }
    StrBuf said;
    sb_init(&said);
    int n = hoist_from(L, &pk->setup_ops, "setup", &said) + hoist_from(L, &pk->finish_ops, "finish", &said);
    if (n)
        lower_note(L, "loaded once per block, before the first work tile, and kept in registers: %s (the same "
                "coordinates for every work tile of the persistent grid)", said.s);
    sb_free(&said);
}
