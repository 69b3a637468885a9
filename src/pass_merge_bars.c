/* pass_merge_bars.c - scratch barriers a step does not need (plan_merge_bars). Part of lowering
 * (lower_int.h); runs on the scheduled lists, after plan_coalesce_bars.
 *
 * Each consumer write of a shared tile is lowered between two named barriers: one before it (every
 * earlier reader of the tile is done) and one after it (the tile is complete). Two rewrites drop
 * those that another barrier already provides.
 *
 * 1. A barrier before a write whose earlier readers are all in earlier steps (the step's first use
 *    of the tile is this write). Preconditions, for every tile the barrier guards: nothing in the
 *    step before the barrier reads or writes the tile; in each step list (the first step and the
 *    later ones) every product reading the tile is waited for within the step, and no TMA store
 *    and no product carried into the next step reads it; setup, finish and the ops after the loop
 *    do not touch it; and a barrier of all consumer threads after a write (never itself dropped
 *    here) lies at the top level between one step's last use and the next step's write: earlier
 *    in this step, or after the last use in every step list, where the last use counts the wait
 *    that completes a product reading the tile (before it, with two consumer warpgroups, one may
 *    pass the barrier while the other's product still reads the tile: golden merge_bars_wait). Then every reader of an earlier step
 *    (of this work tile or an earlier one) completed before its thread reached that barrier, which
 *    every thread passed before it reaches this step's write.
 * 2. Two barriers on the same named barrier with nothing between them: the second adds no order
 *    to the first, so one goes; where the second waits for TMA stores to read a tile (bulk_read),
 *    the thread that issued them waits before the first. A barrier before a write (one that
 *    merged nothing yet, and no wait for TMA stores: that wait would move earlier) merges into an
 *    earlier barrier on the same named barrier in the same list too when the ops between them
 *    leave its tiles alone: none reads or writes them, and no wait between them completes a
 *    product reading them (the scheduler put such a wait there for this barrier). A barrier made by
 *    a merge is never moved again, and an if or for the first step's list shares with the later
 *    steps' (one without products) is rewritten once (golden merge_bars_shared_if).
 * The notes say how many went and why. */
#include <string.h>

#include "lower_int.h"

static bool list_touches(Lower *L, const POpList *ops, int from, int to, const Symbol *y) {
    for (int i = from; i < to && i < ops->n; i++)
        if (op_touches_tile(L, ops->v[i], y)) return true;
    return false;
}

static void remove_at(POpList *ops, int i) {
    for (int j = i + 1; j < ops->n; j++) ops->v[j - 1] = ops->v[j];
    ops->n--;
}

/* the tiles barrier b guards (buf, then more_bufs) */
static int guarded(const POp *b, int k) { return k ? b->more_bufs.v[k - 1] : b->buf; }
static int nguarded(const POp *b) { return b->buf < 0 ? 0 : 1 + b->more_bufs.n; }

/* the ops of ops[from, to) in program order, nested bodies included */
static void flatten(Lower *L, const POpList *ops, int from, int to, POpList *out) {
    for (int i = from; i < to && i < ops->n; i++) {
        POp *o = ops->v[i];
        vec_push(L->a, out, o);
        if (o->kind == POP_IF || o->kind == POP_FOR) {
            flatten(L, &o->then_ops, 0, o->then_ops.n, out);
            flatten(L, &o->else_ops, 0, o->else_ops.n, out);
        }
    }
}

static bool reads_as_product(const POp *o, int buf) {
    if (o->kind != POP_MMA) return false;
    return o->mma->b.buf == buf || (!o->mma->a_reg && o->mma->a.buf == buf);
}

static bool is_after_bar(const PlanKernel *pk, const POp *o) {
    return o->kind == POP_BAR && o->bar == pk->nbar_scratch && o->buf < 0 && !o->more_bufs.n;
}

/* every reader of tile buf in a step list completes within the step: its products are waited for
 * there, no TMA store reads it and no product reading it runs into the next step */
static bool step_completes(Lower *L, const POpList *ops, int buf, const char **why) {
    PlanKernel *pk = L->pk;
    const Symbol *y = pk->bufs.v[buf].sym;
    POpList flat = {0};
    flatten(L, ops, 0, ops->n, &flat);
    for (int i = 0; i < flat.n; i++) {
        POp *o = flat.v[i];
        if (o->kind == POP_STORE && op_touches_tile(L, o, y)) {
            *why = "TMA stores read it";
            return false;
        }
        if (!reads_as_product(o, buf)) continue;
        bool done = !o->prev && !o->mma->deferred;
        if (done) {
            done = false;
            for (int j = i + 1; j < flat.n && !done; j++) {
                POp *w = flat.v[j];
                if (w->kind != POP_WAIT_MMA) continue;
                for (int k = 0; k < w->done.n && !done; k++) done = w->done.v[k] == o;
            }
        }
        if (!done) {
            *why = "a product reading it runs into the next step";
            return false;
        }
    }
    return true;
}

/* a barrier of every consumer thread (not one this pass drops) at the top level of ops[from, to) */
static bool has_after_bar(const PlanKernel *pk, const POpList *ops, int from, int to) {
    for (int i = from; i < to && i < ops->n; i++)
        if (is_after_bar(pk, ops->v[i])) return true;
    return false;
}

/* whether op o (or a body nested in it) waits for a product that reads tile buf */
static bool waits_for_reader(const POp *o, int buf) {
    if (o->kind == POP_WAIT_MMA)
        for (int k = 0; k < o->done.n; k++)
            if (reads_as_product(o->done.v[k], buf)) return true;
    if (o->kind != POP_IF && o->kind != POP_FOR) return false;
    const POpList *bodies[] = {&o->then_ops, &o->else_ops};
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < bodies[b]->n; i++)
            if (waits_for_reader(bodies[b]->v[i], buf)) return true;
    return false;
}

/* a step list ends its use of tile buf with such a barrier: after the last op that touches the
 * tile and after the last wait for a product that reads it (before that wait, a product issued by
 * one warpgroup may still read the tile while another passes the barrier) */
static bool ends_with_bar(Lower *L, const POpList *ops, int buf) {
    const Symbol *y = L->pk->bufs.v[buf].sym;
    int last = -1;
    for (int i = 0; i < ops->n; i++)
        if (op_touches_tile(L, ops->v[i], y) || waits_for_reader(ops->v[i], buf)) last = i;
    return has_after_bar(L->pk, ops, last + 1, ops->n);
}

/* the source line of the first write of buf after ops[i] (0: none found) */
static int write_line(Lower *L, const POpList *ops, int i, int buf) {
    POpList flat = {0};
    flatten(L, ops, i + 1, ops->n, &flat);
    for (int k = 0; k < flat.n; k++) {
        const POp *o = flat.v[k];
        if (o->kind != POP_MOVE || !o->mv->to_shared || o->mv->buf != buf) continue;
        int line = 0, col;
        diag_linecol(L->d, o->st->span, &line, &col);
        return line;
    }
    return 0;
}

/* what rewrite 1 needs to know of a tile, whichever barrier before its writes it asks about: why no
 * such barrier may go (NULL: it may, given a covering barrier), and whether every step list ends
 * its use of the tile with a barrier of every consumer thread */
typedef struct TileFacts {
    bool known, ends_with_bar;
    const char *why;
} TileFacts;

static const TileFacts *tile_facts(Lower *L, TileFacts *facts, int buf) {
    PlanKernel *pk = L->pk;
    TileFacts *f = &facts[buf];
    if (f->known) return f;
    f->known = true;
    const Symbol *y = pk->bufs.v[buf].sym;
    const POpList *once[] = {&pk->block_ops, &pk->setup_ops, &pk->after_ops, &pk->finish_ops};
    for (size_t j = 0; j < sizeof once / sizeof once[0] && !f->why; j++)
        if (list_touches(L, once[j], 0, once[j]->n, y)) f->why = "it is used outside the steps";
    if (!f->why && step_completes(L, &pk->first_ops, buf, &f->why)) step_completes(L, &pk->compute_ops, buf, &f->why);
    f->ends_with_bar = ends_with_bar(L, &pk->first_ops, buf) && ends_with_bar(L, &pk->compute_ops, buf);
    return f;
}

/* rewrite 1 for the barrier at ops[p]: whether every tile it guards is first used there in the
 * step, its readers complete within their step, and a barrier of every consumer thread lies
 * between one step's last use and the next step's write; *why says why not where a note should
 * (not for a tile the step uses before the barrier: the barrier is then not a step's first) */
static bool drop_before(Lower *L, TileFacts *facts, const POpList *ops, int p, const char **why) {
    PlanKernel *pk = L->pk;
    POp *b = ops->v[p];
    if (b->kind != POP_BAR || b->bar != pk->nbar_scratch || b->buf < 0) return false;
    if (b->bulk_read) {
        *why = "TMA stores read it, and the barrier is where their issuing thread waits for them";
        return false;
    }
    for (int k = 0; k < nguarded(b); k++)
        if (list_touches(L, ops, 0, p, pk->bufs.v[guarded(b, k)].sym)) return false;
    for (int k = 0; k < nguarded(b); k++) {
        const TileFacts *f = tile_facts(L, facts, guarded(b, k));
        if (f->why) {
            *why = f->why;
            return false;
        }
        /* the barrier that orders the earlier steps' readers before the write: one in this step
         * before it, or one after the last use in every step list that can run before this one */
        if (!f->ends_with_bar && !has_after_bar(pk, ops, 0, p)) {
            *why = "no barrier of every consumer thread lies between a step's last use of it and the next step's write";
            return false;
        }
    }
    return true;
}

static int drop_befores(Lower *L, TileFacts *facts, POpList *ops, const char **names, bool explain) {
    int dropped = 0;
    for (int i = 0; i < ops->n; i++) {
        const char *why = NULL;
        if (!drop_before(L, facts, ops, i, &why)) {
            if (explain && why) {
                int buf = ops->v[i]->buf, line = write_line(L, ops, i, buf);
                lower_note(L, "scratch barriers: the one before the write of '%s'%s stays: %s", L->pk->bufs.v[buf].name,
                           line ? arena_printf(L->a, " at line %d", line) : "", why);
            }
            continue;
        }
        const PlanBuf *b = &L->pk->bufs.v[ops->v[i]->buf];
        if (!strstr(*names, arena_printf(L->a, "'%s'", b->name)))
            *names = **names ? arena_printf(L->a, "%s, '%s'", *names, b->name) : arena_printf(L->a, "'%s'", b->name);
        remove_at(ops, i--);
        dropped++;
    }
    return dropped;
}

static void add_buf(Lower *L, POp *m, int buf) {
    if (buf < 0 || m->buf == buf) return;
    for (int i = 0; i < m->more_bufs.n; i++)
        if (m->more_bufs.v[i] == buf) return;
    if (m->buf < 0) m->buf = buf;
    else vec_push(L->a, &m->more_bufs, buf);
}

/* whether the ops between two barriers leave tile buf alone: none reads or writes it, and no wait
 * between them completes a product that reads it (the scheduler put that wait there for the barrier) */
static bool between_leaves(Lower *L, const POpList *ops, int from, int to, int buf) {
    const Symbol *y = L->pk->bufs.v[buf].sym;
    POpList flat = {0};
    flatten(L, ops, from, to, &flat);
    for (int i = 0; i < flat.n; i++) {
        POp *o = flat.v[i];
        if (o->kind == POP_IF || o->kind == POP_FOR) continue; /* their bodies are in flat */
        if (op_touches_tile(L, o, y)) return false;
        if (o->kind == POP_WAIT_MMA)
            for (int k = 0; k < o->done.n; k++)
                if (reads_as_product(o->done.v[k], buf)) return false;
    }
    return true;
}

/* rewrite 2, in ops and the bodies nested in it: a barrier merges into the one before it on the same
 * named barrier when nothing lies between them, or, for a barrier before a write (none merged
 * before), when the ops between leave its tiles alone; hoisted counts the second kind */
typedef struct Merge {
    Vec(POp *) made;    /* the barriers this pass made by merging: each has the role of an "after" barrier */
    Vec(POp *) seen;    /* the ifs and fors whose bodies it rewrote (the first step's list and the later
                         * steps' share those without products) */
} Merge;

static bool in(const POp *const *v, int n, const POp *o) {
    for (int i = 0; i < n; i++)
        if (v[i] == o) return true;
    return false;
}

static int merge_bars(Lower *L, Merge *mg, POpList *ops, int *hoisted) {
    int merged = 0;
    for (int i = 0; i < ops->n; i++)
        if ((ops->v[i]->kind == POP_IF || ops->v[i]->kind == POP_FOR) && !in((const POp *const *)mg->seen.v, mg->seen.n, ops->v[i])) {
            vec_push(L->a, &mg->seen, ops->v[i]);
            merged += merge_bars(L, mg, &ops->v[i]->then_ops, hoisted);
            merged += merge_bars(L, mg, &ops->v[i]->else_ops, hoisted);
        }
    for (int i = 1; i < ops->n; i++) {
        POp *b = ops->v[i];
        if (b->kind != POP_BAR) continue;
        int j = i - 1;
        while (j >= 0 && !(ops->v[j]->kind == POP_BAR && ops->v[j]->bar == b->bar)) j--;
        if (j < 0) continue;
        POp *a = ops->v[j];
        if (j < i - 1) {
            /* not one where a thread waits for TMA stores: the wait would move earlier (run 211: 0.99x) */
            bool own = b->buf >= 0 && !b->bulk_read && !in((const POp *const *)mg->made.v, mg->made.n, b);
            for (int k = 0; k < nguarded(b) && own; k++) own = between_leaves(L, ops, j + 1, i, guarded(b, k));
            if (!own) continue;
            (*hoisted)++;
        }
        /* a fresh op: the first step's and the later steps' lists may share the ops */
        POp *m = pop_new(L, POP_BAR);
        *m = *a;
        m->more_bufs.v = NULL;
        m->more_bufs.n = m->more_bufs.cap = 0;
        m->buf = -1;
        /* the tile the bulk wait names first */
        if (b->bulk_read) add_buf(L, m, b->buf);
        for (int k = 0; k < nguarded(a); k++) add_buf(L, m, guarded(a, k));
        for (int k = 0; k < nguarded(b); k++) add_buf(L, m, guarded(b, k));
        m->bulk_read = a->bulk_read || b->bulk_read;
        m->note = arena_printf(L->a, "%s; %s", a->note ? a->note : "", b->note ? b->note : "");
        vec_push(L->a, &mg->made, m);
        ops->v[j] = m;
        remove_at(ops, i--);
        merged++;
    }
    return merged;
}

void plan_merge_bars(Lower *L) {
    PlanKernel *pk = L->pk;
    if (pk->nbar_scratch < 0 || pk->no_pipeline) return;
    const char *names = "";
    TileFacts *facts = ARENA_NEW_N(L->a, TileFacts, pk->bufs.n);
    drop_befores(L, facts, &pk->first_ops, &names, false);
    int dropped = drop_befores(L, facts, &pk->compute_ops, &names, true);
    POpList *lists[] = {&pk->setup_ops, &pk->first_ops, &pk->compute_ops, &pk->after_ops, &pk->finish_ops};
    int merged = 0, hoisted = 0;
    Merge mg = {0};
    for (size_t k = 0; k < sizeof lists / sizeof lists[0]; k++) {
        int h = 0, n = merge_bars(L, &mg, lists[k], &h);
        if (lists[k] != &pk->first_ops) { /* the first step repeats the later ones' */
            merged += n;
            hoisted += h;
        }
    }
    if (*names)
        lower_note(L, "scratch barriers: %d a step before a write of %s dropped: the step uses the tile first there, "
                   "its readers complete within their step, and a barrier of every consumer thread between one step's "
                   "last use and the next step's write already orders the earlier readers before the write", dropped, names);
    if (merged - hoisted)
        lower_note(L, "scratch barriers: %d merged into the barrier right before them on the same named barrier (nothing "
                   "between them; a wait for TMA stores to read a tile moves before the one kept)", merged - hoisted);
    if (hoisted)
        lower_note(L, "scratch barriers: %d before a write merged into an earlier barrier on the same named barrier: nothing "
                   "between the two touches the tile or waits for a product reading it", hoisted);
}
