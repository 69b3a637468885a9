/* pass_wg_bars.c - shared tiles written under a condition on wg, with the scratch barriers
 * around the whole if (plan_wg_branch_bars). Part of lowering (lower_int.h).
 *
 * A consumer write of a shared tile is lowered between two scratch barriers of every consumer
 * warpgroup (lower_ops.c lower_r2s): one before it (every earlier reader of the tile is done) and
 * one after it (the tile is complete for its readers). Under `if (wg == 0) { ... } else { ... }`
 * the warpgroups that skip the write would never reach them, so check_wg_barriers rejects such a
 * write. Yet warpgroups that fill different parts of a tile (Based's order-2 features: the first
 * half of the blocks by warpgroup 0, the second by warpgroup 1), or tiles of their own, need
 * exactly that. This pass moves the barriers out of the if: one before it for each tile the
 * branches write (the scheduler waits for the products reading that tile before it, as for any
 * write) and one after it, which every warpgroup reaches whichever branch it took.
 *
 * Preconditions, each said in a note when it fails: the if's condition reads wg; the branches
 * hold no nested if, loop, sync() or pingpong turn; nothing in them reads a tile they write (the
 * barrier after the write that made it visible is now after the if); no two writes of the
 * branches (the same branch or the two) cover one element of a tile, so the writes need no order
 * among themselves; no written tile is also read by TMA stores. A write of a per_wg value there is
 * made by the warpgroup that reaches it (not by warpgroup 0 alone, as an unconditional one). */
#include "lower_int.h"

/* the source line of an if's condition, for the notes */
static int cond_line(Lower *L, const POp *f) {
    int line = 0, col = 0;
    diag_linecol(L->d, f->cond->span, &line, &col);
    return line;
}

/* a branch's ops: the moves into shared tiles are collected, the scratch barriers counted; false
 * (with *why) where the pass does not apply */
static bool scan_branch(Lower *L, const POpList *ops, POpList *writes, int *bars, const char **why) {
    PlanKernel *pk = L->pk;
    for (int i = 0; i < ops->n; i++) {
        POp *o = ops->v[i];
        switch (o->kind) {
        case POP_IF:
        case POP_FOR:
        case POP_SYNC:
        case POP_PP_WAIT:
        case POP_PP_PASS: *why = "a branch holds a nested if, loop, sync() or pingpong turn"; return false;
        case POP_BAR:
            if (o->bar == pk->nbar_scratch) {
                if (o->bulk_read) {
                    *why = "a written tile is also read by TMA stores";
                    return false;
                }
                ++*bars;
            }
            break;
        case POP_MOVE:
            if (o->mv->to_shared) vec_push(L->a, writes, o);
            break;
        default: break;
        }
    }
    return true;
}

/* does any op of the branch other than the writes read a tile in writes */
static bool reads_written(Lower *L, const POpList *ops, const POpList *writes) {
    for (int i = 0; i < ops->n; i++) {
        POp *o = ops->v[i];
        if (o->kind == POP_BAR || o->kind == POP_FENCE || (o->kind == POP_MOVE && o->mv->to_shared)) continue;
        Effects e;
        op_effects(L, o, &e);
        for (int j = 0; j < writes->n; j++)
            if (symset_has(&e.bufs, L->pk->bufs.v[writes->v[j]->mv->buf].sym)) return true;
    }
    return false;
}

/* the ops of a branch without its scratch barriers; its moves into shared tiles made by the
 * warpgroup that reaches them */
static void strip_branch(Lower *L, POpList *ops) {
    int n = 0;
    for (int i = 0; i < ops->n; i++) {
        POp *o = ops->v[i];
        if (o->kind == POP_BAR && o->bar == L->pk->nbar_scratch) continue;
        if (o->kind == POP_MOVE && o->mv->to_shared) o->mv->wg0_only = false;
        ops->v[n++] = o;
    }
    ops->n = n;
}

/* one if: true where its barriers moved out (before: the ops to put ahead of it, after: behind) */
static bool hoist_if(Lower *L, POp *f, POpList *before, POpList *after) {
    PlanKernel *pk = L->pk;
    POpList writes = {0};
    int bars = 0;
    const char *why = NULL;
    if (!scan_branch(L, &f->then_ops, &writes, &bars, &why) || !scan_branch(L, &f->else_ops, &writes, &bars, &why)) {
        if (bars || writes.n) {
            lower_note(L, "shared-tile writes under the condition on wg at line %d keep their barriers: %s", cond_line(L, f), why);
            f->note = why;
        }
        return false;
    }
    if (!bars) return false;
    if (reads_written(L, &f->then_ops, &writes) || reads_written(L, &f->else_ops, &writes)) {
        f->note = "a branch reads a shared tile it writes";
        lower_note(L, "shared-tile writes under the condition on wg at line %d keep their barriers: %s", cond_line(L, f), f->note);
        return false;
    }
    for (int i = 0; i < writes.n; i++)
        for (int j = 0; j < i; j++)
            if (writes.v[i]->mv->buf == writes.v[j]->mv->buf &&
                plan_regions_overlap(plan_write_region(pk, writes.v[i]), plan_write_region(pk, writes.v[j]))) {
                f->note = arena_printf(L->a, "two writes of '%s' cover the same elements", pk->bufs.v[writes.v[i]->mv->buf].name);
                lower_note(L, "shared-tile writes under the condition on wg at line %d keep their barriers: %s", cond_line(L, f), f->note);
                return false;
            }
    strip_branch(L, &f->then_ops);
    strip_branch(L, &f->else_ops);
    /* one barrier before the if for every written tile (the scheduler waits for the products
     * reading any of them first) and one after it */
    POp *b = pop_new(L, POP_BAR);
    b->bar = pk->nbar_scratch;
    StrBuf names;
    sb_init(&names);
    for (int i = 0; i < writes.n; i++) {
        int buf = writes.v[i]->mv->buf;
        bool seen = false;
        for (int j = 0; j < i; j++) seen |= writes.v[j]->mv->buf == buf;
        if (seen) continue;
        if (b->buf < 0) b->buf = buf;
        else vec_push(L->a, &b->more_bufs, buf);
        sb_printf(&names, "%s'%s'", names.len ? ", " : "", pk->bufs.v[buf].name);
    }
    b->note = arena_printf(L->a, "every earlier reader of %s is done (written under the if on wg below)", names.s);
    vec_push(L->a, before, b);
    POp *a = pop_new(L, POP_BAR);
    a->bar = pk->nbar_scratch;
    a->note = arena_printf(L->a, "%s complete (written under the if on wg above)", names.s);
    vec_push(L->a, after, a);
    lower_note(L, "shared-tile writes under the condition on wg at line %d: %d scratch barriers inside its branches become "
               "one before the if and one after it, which every warpgroup reaches (%s)", cond_line(L, f), bars, names.s);
    sb_free(&names);
    return true;
}

static void hoist_list(Lower *L, POpList *ops) {
    POpList out = {0};
    bool moved = false;
    for (int i = 0; i < ops->n; i++) {
        POp *o = ops->v[i];
        POpList before = {0}, after = {0};
        if (o->kind == POP_IF && px_mentions_wg(o->cond) && hoist_if(L, o, &before, &after)) {
            for (int j = 0; j < before.n; j++) vec_push(L->a, &out, before.v[j]);
            vec_push(L->a, &out, o);
            for (int j = 0; j < after.n; j++) vec_push(L->a, &out, after.v[j]);
            moved = true;
            continue;
        }
        vec_push(L->a, &out, o);
    }
    if (moved) *ops = out;
}

void plan_wg_branch_bars(Lower *L) {
    PlanKernel *pk = L->pk;
    if (pk->nbar_scratch < 0 || pk->consumers < 2) return;
    hoist_list(L, &pk->setup_ops);
    hoist_list(L, &pk->compute_ops);
    hoist_list(L, &pk->finish_ops);
}
