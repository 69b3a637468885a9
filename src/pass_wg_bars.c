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
 * among themselves. A tile TMA stores read (a dQ step added into global memory by a reduce-add)
 * is fine: the barrier before the if first waits, in the thread that issued those stores, until
 * they have read it. A write of a per_wg value there is
 * made by the warpgroup that reaches it (not by warpgroup 0 alone, as an unconditional one).
 *
 * Tiles a warpgroup keeps to itself: where a branch reads a tile it writes (a chain of products
 * through scratch tiles, one chain per warpgroup), the barriers cannot leave the if, but when
 * every tile the branches write is touched nowhere else in the kernel (private to its branch)
 * and each branch is one warpgroup's (`wg == 0` or `wg == 1` with two consumer warpgroups), the
 * branch's scratch barriers become barriers of that warpgroup alone (scratch_wg: id + wg, 128
 * threads): no other warpgroup reads or writes those tiles. The same holds for one tile that the two
 * branches split (slices that read wg, sema_wg.c: `s[:, 128 * wg:128 * wg + 128]`): touched only
 * inside the if, and the bounding boxes of each branch's accesses (writes, register loads and product
 * operands; any other access is not tracked and keeps the barriers) do not overlap. */
#include "lower_int.h"

/* the source line of an if's condition, for the notes */
static int cond_line(Lower *L, const POp *f) {
    int line = 0, col = 0;
    diag_linecol(L->d, f->cond->span, &line, &col);
    return line;
}

/* a branch's ops: the moves into shared tiles are collected, the scratch barriers counted (bulk, when
 * not NULL: one of them first waits until TMA stores have read its tile); false (with *why) where the
 * pass does not apply */
static bool scan_branch(Lower *L, const POpList *ops, POpList *writes, int *bars, bool *bulk, const char **why) {
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
                if (bulk) *bulk |= o->bulk_read; /* a written tile is also read by TMA stores */
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

/* the ops of ops (and of their branches) that touch shared tile y */
static int touches(Lower *L, const POpList *ops, const Symbol *y) {
    int n = 0;
    for (int i = 0; i < ops->n; i++) {
        POp *o = ops->v[i];
        if (o->kind == POP_IF || o->kind == POP_FOR) {
            n += touches(L, &o->then_ops, y) + touches(L, &o->else_ops, y);
            if (o->kind == POP_IF && o->cond && px_mentions(o->cond, y)) n++;
            continue;
        }
        if (op_touches_tile(L, o, y)) n++;
    }
    return n;
}

/* the condition selects one of the two consumer warpgroups: wg == K or K == wg, K 0 or 1 (so the
 * else branch is the other one's) */
static bool one_wg(const PExpr *c) {
    if (!c || c->kind != PX_BINARY || c->bop != BIN_EQ) return false;
    const PExpr *k = px_is_builtin(c->l, BI_WG) ? c->r : px_is_builtin(c->r, BI_WG) ? c->l : NULL;
    return k && k->is_const && (k->cval == 0 || k->cval == 1);
}

/* are the tiles a branch writes (writes) touched only by the branch (branch) */
static bool branch_private(Lower *L, const POpList *branch, const POpList *writes, const char **why) {
    PlanKernel *pk = L->pk;
    const POpList *lists[] = {&pk->setup_ops, &pk->compute_ops, &pk->finish_ops};
    for (int i = 0; i < writes->n; i++) {
        const PlanBuf *b = &pk->bufs.v[writes->v[i]->mv->buf];
        if (b->kind != BUF_SCRATCH || !b->sym) {
            *why = arena_printf(L->a, "'%s' is not a scratch tile", b->name);
            return false;
        }
        int all = 0;
        for (int k = 0; k < 3; k++) all += touches(L, lists[k], b->sym);
        if (all != touches(L, branch, b->sym)) {
            *why = arena_printf(L->a, "'%s' is also used outside the branch that writes it", b->name);
            return false;
        }
    }
    return true;
}

/* the smallest block holding both */
static PlanRegion region_join(PlanRegion a, PlanRegion b) {
    return (PlanRegion){a.r0 < b.r0 ? a.r0 : b.r0, a.c0 < b.c0 ? a.c0 : b.c0, a.r1 > b.r1 ? a.r1 : b.r1,
                        a.c1 > b.c1 ? a.c1 : b.c1};
}

/* the block of shared tile buf that op o reads or writes (a bounding box), false where tkc does not
 * track it (any other kind of access) */
static bool op_box(Lower *L, const POp *o, int buf, PlanRegion *r) {
    const PlanKernel *pk = L->pk;
    if (o->kind == POP_MOVE && o->mv->buf == buf) {
        const PlanMove *m = o->mv;
        if (m->to_shared) {
            *r = plan_write_region(pk, o);
            return true;
        }
        if ((m->path != MP_LDMATRIX && m->path != MP_LDS) || !m->rt) return false;
        *r = (PlanRegion){m->srow0, m->scol0, m->srow0 + m->rt->rows, m->scol0 + m->rt->cols};
        return true;
    }
    if (o->kind == POP_MMA) {
        const PlanMma *x = o->mma;
        bool any = false;
        PlanRegion box = {0, 0, 0, 0};
        int mall = x->m * (x->dst && (x->dst->ty.per_wg || x->dst->ty.partial) ? 1 : pk->consumers);
        if (!x->a_reg && x->a.buf == buf) {
            box = x->a.trans ? (PlanRegion){x->a.row0, x->a.col0, x->a.row0 + x->k, x->a.col0 + mall}
                             : (PlanRegion){x->a.row0, x->a.col0, x->a.row0 + mall, x->a.col0 + x->k};
            any = true;
        }
        if (x->b.buf == buf) {
            PlanRegion b = x->b.trans ? (PlanRegion){x->b.row0, x->b.col0, x->b.row0 + x->n, x->b.col0 + x->k}
                                      : (PlanRegion){x->b.row0, x->b.col0, x->b.row0 + x->k, x->b.col0 + x->n};
            box = any ? region_join(box, b) : b;
            any = true;
        }
        if (!any) return false;
        *r = box;
        return true;
    }
    return false;
}

/* the bounding box of the accesses of a branch's ops to buf: false (with *why) where one of them is
 * not tracked; *some: the branch touches buf */
static bool branch_box(Lower *L, const POpList *ops, int buf, PlanRegion *box, bool *some, const char **why) {
    const PlanBuf *b = &L->pk->bufs.v[buf];
    *some = false;
    for (int i = 0; i < ops->n; i++) {
        const POp *o = ops->v[i];
        if (o->kind == POP_BAR || o->kind == POP_FENCE) continue;
        Effects e;
        op_effects(L, (POp *)o, &e);
        if (!symset_has(&e.bufs, b->sym) && !symset_has(&e.wbufs, b->sym)) continue;
        PlanRegion r;
        if (!op_box(L, o, buf, &r)) {
            *why = arena_printf(L->a, "an access of '%s' whose elements tkc does not track", b->name);
            return false;
        }
        *box = *some ? region_join(*box, r) : r;
        *some = true;
    }
    return true;
}

/* the tiles the two branches write are touched only inside this if, and the blocks of each that the
 * two branches touch do not overlap (one tile split between the warpgroups, as slices that read wg
 * make it: `s[:, 128 * wg:128 * wg + 128]`): each warpgroup's accesses are its own */
static bool split_private(Lower *L, POp *f, const POpList *wt, const POpList *we, const char **why) {
    PlanKernel *pk = L->pk;
    const POpList *lists[] = {&pk->setup_ops, &pk->compute_ops, &pk->finish_ops};
    const POpList *both[] = {wt, we};
    for (int w = 0; w < 2; w++)
        for (int i = 0; i < both[w]->n; i++) {
            int buf = both[w]->v[i]->mv->buf;
            const PlanBuf *b = &pk->bufs.v[buf];
            if (b->kind != BUF_SCRATCH || !b->sym) {
                *why = arena_printf(L->a, "'%s' is not a scratch tile", b->name);
                return false;
            }
            int all = 0;
            for (int k = 0; k < 3; k++) all += touches(L, lists[k], b->sym);
            if (all != touches(L, &f->then_ops, b->sym) + touches(L, &f->else_ops, b->sym)) {
                *why = arena_printf(L->a, "'%s' is also used outside the if on wg that writes it", b->name);
                return false;
            }
            PlanRegion rt, re;
            bool st, se;
            if (!branch_box(L, &f->then_ops, buf, &rt, &st, why) || !branch_box(L, &f->else_ops, buf, &re, &se, why))
                return false;
            if (st && se && plan_regions_overlap(rt, re)) {
                *why = arena_printf(L->a, "both warpgroups' branches touch the same elements of '%s'", b->name);
                return false;
            }
        }
    return true;
}

/* the barrier of one warpgroup's scratch tiles (id + wg, 128 threads) */
static int scratch_wg_bar(Lower *L) {
    PlanKernel *pk = L->pk;
    if (pk->nbar_scratch_wg < 0) {
        PlanNamedBar nb = {.name = "scratch_wg", .ids = pk->consumers, .threads = 128,
                           .why = "consumer writes of a warpgroup's own shared tiles: that warpgroup alone"};
        vec_push(L->a, &pk->nbars, nb);
        pk->nbar_scratch_wg = pk->nbars.n - 1;
    }
    return pk->nbar_scratch_wg;
}

static void privatise_branch(Lower *L, POpList *ops) {
    for (int i = 0; i < ops->n; i++) {
        POp *o = ops->v[i];
        if (o->kind == POP_BAR && o->bar == L->pk->nbar_scratch) o->bar = scratch_wg_bar(L);
        if (o->kind == POP_MOVE && o->mv->to_shared) o->mv->wg0_only = false;
    }
}

/* the branches' tiles are their warpgroups' own (see the head of the file): true where the
 * branches' barriers became their warpgroup's */
static bool private_if(Lower *L, POp *f, const char **why) {
    PlanKernel *pk = L->pk;
    if (pk->consumers != 2 || !one_wg(f->cond)) {
        *why = "the condition is not wg == 0 or wg == 1 with two consumer warpgroups";
        return false;
    }
    POpList wt = {0}, we = {0};
    int bars = 0;
    const char *w2 = NULL;
    if (!scan_branch(L, &f->then_ops, &wt, &bars, NULL, &w2) || !scan_branch(L, &f->else_ops, &we, &bars, NULL, &w2)) {
        *why = w2;
        return false;
    }
    const char *why_whole = NULL;
    if ((!branch_private(L, &f->then_ops, &wt, &why_whole) || !branch_private(L, &f->else_ops, &we, &why_whole)) &&
        !split_private(L, f, &wt, &we, why))
        return false;
    privatise_branch(L, &f->then_ops);
    privatise_branch(L, &f->else_ops);
    lower_note(L, "shared tiles written under the condition on wg at line %d are each one warpgroup's own (no other "
               "op of the kernel touches them): the %d scratch barriers of its branches are that warpgroup's alone",
               cond_line(L, f), bars);
    return true;
}

/* one if: true where its barriers moved out (before: the ops to put ahead of it, after: behind) */
static bool hoist_if(Lower *L, POp *f, POpList *before, POpList *after) {
    PlanKernel *pk = L->pk;
    POpList writes = {0};
    int bars = 0;
    bool bulk = false;
    const char *why = NULL;
    if (!scan_branch(L, &f->then_ops, &writes, &bars, &bulk, &why) ||
        !scan_branch(L, &f->else_ops, &writes, &bars, &bulk, &why)) {
        if (bars || writes.n) {
            lower_note(L, "shared-tile writes under the condition on wg at line %d keep their barriers: %s", cond_line(L, f), why);
            f->note = why;
        }
        return false;
    }
    if (!bars) return false;
    if (reads_written(L, &f->then_ops, &writes) || reads_written(L, &f->else_ops, &writes)) {
        const char *why2 = NULL;
        if (private_if(L, f, &why2)) return false;
        f->note = arena_printf(L->a, "a branch reads a shared tile it writes, and its tiles are not its warpgroup's own: %s",
                               why2);
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
    b->bulk_read = bulk; /* the thread that issued TMA stores of them waits until they have read them */
    b->note = arena_printf(L->a, "every earlier reader of %s is done%s (written under the if on wg below)", names.s,
                           bulk ? " (and its TMA stores have read it)" : "");
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
