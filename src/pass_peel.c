/* pass_peel.c - the first step, peeled or not (plan_peel). Part of lowering (lower_int.h). */
#include "lower_int.h"

/* ---- the first step: peeled or not ---------------------------------------------------------- */

static bool op_lists_equal(const POpList *a, const POpList *b);

static bool ops_equal(const POp *x, const POp *y) {
    if (x == y) return true;
    if (x->kind != y->kind || x->st != y->st || x->mma != y->mma || x->group != y->group || x->prev != y->prev ||
        x->skip_first != y->skip_first || x->last_step != y->last_step || x->no_steps != y->no_steps || x->n != y->n ||
        x->mv != y->mv || x->bar != y->bar || x->buf != y->buf || x->bulk_read != y->bulk_read || x->store != y->store)
        return false;
    return op_lists_equal(&x->then_ops, &y->then_ops) && op_lists_equal(&x->else_ops, &y->else_ops);
}

static bool op_lists_equal(const POpList *a, const POpList *b) {
    if (a->n != b->n) return false;
    for (int i = 0; i < a->n; i++)
        if (!ops_equal(a->v[i], b->v[i])) return false;
    return true;
}

static bool ops_zero_first(const POpList *ops) {
    for (int i = 0; i < ops->n; i++)
        if ((ops->v[i]->kind == POP_MMA && ops->v[i]->mma->zero_first) || ops_zero_first(&ops->v[i]->then_ops) ||
            ops_zero_first(&ops->v[i]->else_ops))
            return true;
    return false;
}

void plan_peel(Lower *L) {
    PlanKernel *pk = L->pk;
    if (pk->no_pipeline) return;
    pk->peel_first = pk->lookahead || ops_zero_first(&pk->first_ops) || !op_lists_equal(&pk->first_ops, &pk->compute_ops);
    if (!pk->peel_first)
        lower_note(L, "the first step's schedule is every later step's (nothing is carried from one step to the next), so "
                "the loop starts at step 0 and the step is emitted once");
}
