/* pass_lookahead.c - the lookahead pass (plan_lookahead): in a persistent grid, the next work
 * tile's first products are issued under this tile's finish. Part of lowering (lower_int.h). */
#include "lower_int.h"

/* ---- lookahead: the next work tile's first product under this tile's finish -------------------- */

/* does any op of the list (nested ones included) touch register r? With mma, also whether one
 * is a product or a wait on products */
static bool ops_touch(Lower *L, POpList *ops, Symbol *r, bool *mma) {
    for (int i = 0; i < ops->n; i++) {
        POp *o = ops->v[i];
        if (mma && (o->kind == POP_MMA || o->kind == POP_WAIT_MMA || op_nests_mma(o))) *mma = true;
        Effects e;
        op_effects(L, o, &e);
        if (symset_has(&e.rd, r) || symset_has(&e.wr, r)) return true;
    }
    return false;
}

/* In a persistent grid, the first step's products (e.g. S = Q K^T of the next work tile) can be
 * issued right behind this tile's last product, before its finish, so the tensor cores work while
 * the consumers run the epilogue. That holds when the first step starts with products
 * that read only shared memory, followed by a wait for all of them, into registers that neither
 * finish, the ops after the loop nor setup touch, and finish issues no products of its own.
 * Sets pk->lookahead, or pk->no_lookahead. */
void plan_lookahead(Lower *L) {
    PlanKernel *pk = L->pk;
    if (!L->sk->lookahead || !pk->persistent) return;
    int h = 0, nmma = 0;
    for (; h < pk->first_ops.n && pk->first_ops.v[h]->kind != POP_WAIT_MMA; h++) {
        POp *o = pk->first_ops.v[h];
        bool ok = o->kind == POP_PP_WAIT || o->kind == POP_PP_PASS ||
                  (o->kind == POP_WAIT_FULL && !o->prev && !pk->groups.v[o->group].once) ||
                  (o->kind == POP_MMA && !o->mma->deferred && !o->prev && !o->mma->a_reg);
        if (!ok) {
            pk->no_lookahead = "the first step does something other than products before its first wait";
            return;
        }
        nmma += o->kind == POP_MMA;
    }
    if (!nmma) {
        pk->no_lookahead = "the first step does not start with products";
        return;
    }
    if (h == pk->first_ops.n) {
        pk->no_lookahead = "the first step's products stay in flight into the next step, as in a GEMM main loop";
        return;
    }
    if (pk->first_ops.v[h]->n != 0) {
        pk->no_lookahead = "the first step keeps products in flight past its first wait";
        return;
    }
    /* the next tile's setup tiles must be loadable before this tile's finish: released after the
     * loop, not in finish (else the lookahead's wait for them would never return) */
    for (int g = 0; g < pk->groups.n; g++)
        if (pk->groups.v[g].once && ops_read_group(L, &pk->finish_ops, g)) {
            pk->no_lookahead = "finish reads the setup tiles, so the next tile's cannot load before it";
            return;
        }
    for (int i = 0; i < h; i++) {
        POp *o = pk->first_ops.v[i];
        if (o->kind != POP_MMA) continue;
        bool setup_mma = false, finish_mma = false;
        bool touched = ops_touch(L, &pk->setup_ops, o->mma->dst, &setup_mma) |
                       ops_touch(L, &pk->finish_ops, o->mma->dst, &finish_mma) |
                       ops_touch(L, &pk->after_ops, o->mma->dst, NULL);
        if (touched) {
            pk->no_lookahead = arena_printf(L->a, "'%s' is used after the loop, in finish or in setup", o->mma->dst->name);
            return;
        }
        if (setup_mma || finish_mma) {
            pk->no_lookahead = "setup or finish issues products";
            return;
        }
    }
    pk->lookahead = true;
    pk->ahead_head = h;
    /* right after this tile's last product: the tensor cores take the next tile's first ones
     * behind it, and its wait comes after them */
    pk->ahead_split = 0;
    for (int i = 0; i < pk->after_ops.n; i++)
        if (pk->after_ops.v[i]->kind == POP_MMA) pk->ahead_split = i + 1;
    /* and after the release of the setup tiles for a tile without steps: the lookahead waits for
     * the next tile's, which the producer loads only after that release (with one copy) */
    for (int i = 0; i < pk->after_ops.n; i++)
        if (pk->after_ops.v[i]->kind == POP_RELEASE && pk->after_ops.v[i]->no_steps && pk->ahead_split < i + 1)
            pk->ahead_split = i + 1;
    /* every product wait after the split leaves the next tile's first products in flight too */
    for (int i = pk->ahead_split; i < pk->after_ops.n; i++) {
        POp *o = pk->after_ops.v[i];
        if (o->kind != POP_WAIT_MMA) continue;
        o->n += 1;
        o->note = arena_printf(L->a, "%s%sthe next tile's first products stay in flight", o->note ? o->note : "",
                               o->note ? "; " : "");
    }
}
