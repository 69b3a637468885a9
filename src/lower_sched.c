/* lower_sched.c - the scheduler: walks the consumers' ops and inserts the waits on load groups
 * and on products in flight and the releases of ring stages (schedule_block, schedule_compute),
 * and the release points of setup tiles. Part of lowering (lower_int.h). */
#include <string.h>

#include "lower_int.h"

/* ---- the scheduler: waits and releases -------------------------------------------------------- *
 * Products are asynchronous (wgmma commit groups); everything else is synchronous. Walking the
 * op list, the scheduler keeps the groups in flight and inserts
 *   - a wait on a load group's full barrier before the first op that reads its tiles;
 *   - wgmma.wait_group n before an op that touches registers an in-flight product writes (or
 *     writes registers it reads), n = the number of groups issued after the newest such one;
 *     products accumulating into the same registers chain without waiting;
 *   - wgmma.wait_group 1 after a product when two are in flight (one stays in flight);
 *   - a release of a load group's stage once every op of the step that reads it is done.
 * The loop body is walked twice: the second walk starts from the state the first one ends in
 * (the steady state), and what the body leaves in flight is finished after the loop. */

typedef struct Flight {
    POp *op;            /* the product */
    bool prev;          /* issued in the previous step */
} Flight;

typedef struct Sched {
    Lower *L;
    POpList *out;
    Vec(Flight) flight;
    int ngroups;            /* the arrays below have one entry per load group (sched_new) */
    bool (*waited)[2];      /* full barrier of group g waited in this step (cur/prev) */
    int *last_reader;       /* index of the last op reading group g in the step; -1 none */
    int *deferred_reader;   /* the deferred product reads group g's previous stage */
    bool (*released)[2];
    bool *pending_prev;     /* a previous-step stage still to release */
    int *first, *last;      /* group_readers' scratch */
    int pos;                /* index of the op being scheduled */
    bool in_loop;           /* scheduling the compute step (vs setup/finish) */
} Sched;

int group_of_buf(PlanKernel *pk, int buf) { return buf >= 0 ? pk->bufs.v[buf].group : -1; }

static Sched sched_new(Lower *L) {
    int n = L->pk->groups.n;
    Sched s = {.L = L, .ngroups = n};
    s.waited = (bool (*)[2])arena_alloc(L->a, sizeof(bool[2]) * (size_t)n);
    s.released = (bool (*)[2])arena_alloc(L->a, sizeof(bool[2]) * (size_t)n);
    s.last_reader = ARENA_NEW_N(L->a, int, n);
    s.deferred_reader = ARENA_NEW_N(L->a, int, n);
    s.pending_prev = ARENA_NEW_N(L->a, bool, n);
    s.first = ARENA_NEW_N(L->a, int, n);
    s.last = ARENA_NEW_N(L->a, int, n);
    return s;
}

/* an if or for whose body issues products */
bool op_nests_mma(const POp *o) {
    if (o->kind != POP_IF && o->kind != POP_FOR) return false;
    const POpList *ls[2] = {&o->then_ops, &o->else_ops};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < ls[k]->n; i++)
            if (ls[k]->v[i]->kind == POP_MMA || op_nests_mma(ls[k]->v[i])) return true;
    return false;
}

static void emit_op(Sched *s, POp *o) { vec_push(s->L->a, s->out, o); }

static void emit_wait_mma(Sched *s, int n, const char *why) {
    POp *w = pop_new(s->L, POP_WAIT_MMA);
    w->n = n;
    w->note = why;
    emit_op(s, w);
    int keep = s->flight.n - n;
    if (keep <= 0) return;
    for (int i = 0; i < keep; i++) vec_push(s->L->a, &w->done, s->flight.v[i].op);
    /* the oldest flight.n - n groups are complete */
    for (int i = keep; i < s->flight.n; i++) s->flight.v[i - keep] = s->flight.v[i];
    s->flight.n -= keep;
}

static bool flight_reads_group(Sched *s, int g, bool prev) {
    PlanKernel *pk = s->L->pk;
    for (int i = 0; i < s->flight.n; i++) {
        PlanMma *m = s->flight.v[i].op->mma;
        bool fp = s->flight.v[i].prev || m->deferred;
        if (fp != prev) continue;
        if (group_of_buf(pk, m->b.buf) == g) return true;
        if (!m->a_reg && group_of_buf(pk, m->a.buf) == g) return true;
    }
    return false;
}

static void try_releases(Sched *s) {
    PlanKernel *pk = s->L->pk;
    for (int g = 0; g < pk->groups.n; g++) {
        if (pk->groups.v[g].once) continue;
        /* the previous step's stage */
        if (s->pending_prev[g] && !flight_reads_group(s, g, true) && (s->deferred_reader[g] < 0 || s->pos > s->deferred_reader[g])) {
            POp *r = pop_new(s->L, POP_RELEASE);
            r->group = g;
            r->prev = true;
            r->skip_first = true;
            emit_op(s, r);
            s->pending_prev[g] = false;
            s->released[g][1] = true;
        }
        /* this step's stage: after its last reader is issued and complete */
        if (!s->released[g][0] && s->last_reader[g] >= 0 && s->pos > s->last_reader[g] && !flight_reads_group(s, g, false)) {
            POp *r = pop_new(s->L, POP_RELEASE);
            r->group = g;
            emit_op(s, r);
            s->released[g][0] = true;
        }
    }
}

static void wait_for_conflicts(Sched *s, Effects *e, bool is_mma, Symbol *mma_dst) {
    int newest = -1;
    for (int i = 0; i < s->flight.n; i++) {
        PlanMma *m = s->flight.v[i].op->mma;
        Effects fe;
        op_effects(s->L, s->flight.v[i].op, &fe);
        bool conflict = false;
        /* the op touches registers the product writes */
        if (symset_has(&e->rd, m->dst) || symset_has(&e->wr, m->dst)) {
            conflict = !(is_mma && mma_dst == m->dst);
        }
        /* the op writes registers the product reads (its A operand) */
        for (int j = 0; j < e->wr.n && !conflict; j++)
            if (e->wr.v[j] != m->dst && symset_has(&fe.rd, e->wr.v[j])) conflict = true;
        /* the op (or the barrier before it) writes a shared tile the product reads */
        for (int j = 0; j < e->wbufs.n && !conflict; j++)
            if (symset_has(&fe.bufs, e->wbufs.v[j])) conflict = true;
        if (conflict) newest = i;
    }
    if (newest >= 0) emit_wait_mma(s, s->flight.n - 1 - newest, "registers of a product in flight");
}

static void sched_op(Sched *s, POp *o);

/* a branch or loop body: scheduled like a block of its own that starts and ends with no product
 * in flight (the barrier waits for its tiles come before the branch) */
static void sched_nested(Sched *s, POpList *in, POpList *out) {
    Sched sub = *s;
    sub.out = out;
    memset(&sub.flight, 0, sizeof sub.flight);
    for (int i = 0; i < in->n; i++) sched_op(&sub, in->v[i]);
    if (sub.flight.n) emit_wait_mma(&sub, 0, "products inside a branch or loop finish inside it");
}

static void sched_op(Sched *s, POp *o) {
    PlanKernel *pk = s->L->pk;
    Effects e;
    op_effects(s->L, o, &e);
    /* full barriers of the load groups this op reads */
    for (int i = 0; i < e.bufs.n; i++) {
        int b = buf_of_sym(pk, e.bufs.v[i]);
        int g = group_of_buf(pk, b);
        if (g < 0) continue;
        bool prev = o->kind == POP_MMA && o->mma->deferred;
        if (pk->groups.v[g].once) {
            if (!s->waited[g][0] && !s->in_loop) {
                POp *w = pop_new(s->L, POP_WAIT_FULL);
                w->group = g;
                emit_op(s, w);
                s->waited[g][0] = true;
            }
            continue;
        }
        if (!s->waited[g][prev]) {
            POp *w = pop_new(s->L, POP_WAIT_FULL);
            w->group = g;
            w->prev = prev;
            w->skip_first = prev;
            emit_op(s, w);
            s->waited[g][prev] = true;
        }
    }
    if (o->kind == POP_MMA) {
        wait_for_conflicts(s, &e, true, o->mma->dst);
        emit_op(s, o);
        vec_push(s->L->a, &s->flight, ((Flight){o, false}));
        return;
    }
    if (o->kind == POP_IF || o->kind == POP_FOR) {
        if (op_nests_mma(o)) {
            if (s->flight.n) emit_wait_mma(s, 0, "products inside a branch or loop start with none in flight");
            /* the branch's (or loop body's) own schedule, into a copy of the op: the same op is
             * walked for the first step and for the steady state */
            POp *c = pop_new(s->L, o->kind);
            *c = *o;
            c->then_ops = (POpList){0};
            c->else_ops = (POpList){0};
            sched_nested(s, &o->then_ops, &c->then_ops);
            if (o->else_ops.n) sched_nested(s, &o->else_ops, &c->else_ops);
            emit_op(s, c);
            return;
        } else {
            wait_for_conflicts(s, &e, false, NULL);
        }
        emit_op(s, o);
        return;
    }
    wait_for_conflicts(s, &e, false, NULL);
    emit_op(s, o);
}

/* first reader and last reader of each load group within a list of top-level ops */
static void group_readers(Lower *L, POpList *ops, int *first, int *last) {
    PlanKernel *pk = L->pk;
    for (int g = 0; g < pk->groups.n; g++) first[g] = last[g] = -1;
    for (int i = 0; i < ops->n; i++) {
        Effects e;
        op_effects(L, ops->v[i], &e);
        for (int j = 0; j < e.bufs.n; j++) {
            int g = group_of_buf(pk, buf_of_sym(pk, e.bufs.v[j]));
            if (g < 0) continue;
            if (ops->v[i]->kind == POP_MMA && ops->v[i]->mma->deferred) continue;
            if (first[g] < 0) first[g] = i;
            last[g] = i;
        }
    }
}

static void sched_body(Sched *s, POpList *body) {
    PlanKernel *pk = s->L->pk;
    group_readers(s->L, body, s->first, s->last);
    for (int g = 0; g < pk->groups.n; g++) {
        s->last_reader[g] = s->last[g];
        s->deferred_reader[g] = -1;
        s->waited[g][0] = s->waited[g][1] = false;
        s->released[g][0] = s->released[g][1] = false;
    }
    for (int i = 0; i < body->n; i++)
        if (body->v[i]->kind == POP_MMA && body->v[i]->mma->deferred) {
            int g = group_of_buf(pk, body->v[i]->mma->b.buf);
            s->deferred_reader[g] = i;
            s->pending_prev[g] = true;
        }
    for (int i = 0; i < body->n; i++) {
        s->pos = i;
        try_releases(s);
        POp *o = body->v[i];
        sched_op(s, o);
        s->pos = i + 1;
        try_releases(s);
    }
    /* at most one product group stays in flight into the next step; none with a one-stage
     * ring, where the next step's data can land only after this step's stage is released */
    int carry = s->L->pk->stages > 1 ? 1 : 0;
    if (s->flight.n > carry) {
        emit_wait_mma(s, carry, carry ? "keep one product group in flight" : "a one-stage ring: release the stage now");
        try_releases(s);
    }
}

/* the state one step hands to the next: products still in flight and stages still to release */
typedef struct Carry {
    int flights;
    bool *pending;      /* one per load group */
} Carry;

static Carry sched_carry(Sched *s) {
    Carry c = {.flights = s->flight.n, .pending = ARENA_NEW_N(s->L->a, bool, s->ngroups)};
    PlanKernel *pk = s->L->pk;
    for (int g = 0; g < pk->groups.n; g++)
        c.pending[g] = !pk->groups.v[g].once && !s->released[g][0] && s->last_reader[g] >= 0;
    return c;
}

static void sched_enter(Sched *s, const Carry *c) {
    for (int i = 0; i < s->flight.n; i++) s->flight.v[i].prev = true;
    for (int g = 0; g < s->ngroups; g++) s->pending_prev[g] = c->pending[g];
}

/* The compute step. The first step is scheduled on its own (it has no previous step: its
 * deferred ops drop out, so every wgmma group count is exact); every later step starts from
 * the state the first one leaves, and must leave the same state (the steady state). */
void schedule_compute(Lower *L, POpList *body, POpList *first, POpList *out, POpList *after) {
    PlanKernel *pk = L->pk;
    POpList fbody = {0};
    for (int i = 0; i < body->n; i++)
        if (!body->v[i]->skip_first) vec_push(L->a, &fbody, body->v[i]);
    Sched s = sched_new(L);
    s.in_loop = true;
    s.out = first;
    sched_body(&s, &fbody);
    Carry c1 = sched_carry(&s);
    sched_enter(&s, &c1);
    s.out = out;
    sched_body(&s, body);
    Carry c2 = sched_carry(&s);
    bool steady = c1.flights == c2.flights;
    for (int g = 0; g < pk->groups.n; g++) steady &= c1.pending[g] == c2.pending[g];
    if (!steady) {
        diag_error(L->d, L->sk->pipe ? L->sk->pipe->span : L->sk->k->name_span,
                   "internal error: the compute step has no steady schedule (%d products in flight after the first "
                   "step, %d after the second)",
                   c1.flights, c2.flights);
        return;
    }
    /* after the loop: finish the products in flight and release the last step's stages */
    if (s.flight.n) {
        POp *w = pop_new(L, POP_WAIT_MMA);
        w->n = 0;
        w->note = "the last step's products";
        for (int i = 0; i < s.flight.n; i++) vec_push(L->a, &w->done, s.flight.v[i].op);
        vec_push(L->a, after, w);
    }
    for (int g = 0; g < pk->groups.n; g++) {
        if (!c2.pending[g]) continue;
        POp *r = pop_new(L, POP_RELEASE);
        r->group = g;
        r->prev = true;
        r->skip_first = true;
        r->note = "the last step's stage";
        vec_push(L->a, after, r);
    }
}

/* setup or finish (once per work tile): products and their waits, and the setup tiles' barrier
 * before the first op that reads them (in finish they were waited for in setup) */
void schedule_block(Lower *L, POpList *ops, bool setup_waited, const char *why) {
    Sched s = sched_new(L);
    POpList out = {0};
    s.out = &out;
    s.in_loop = false;
    for (int g = 0; g < L->pk->groups.n; g++) s.waited[g][0] = setup_waited;
    for (int i = 0; i < ops->n; i++) sched_op(&s, ops->v[i]);
    if (s.flight.n) emit_wait_mma(&s, 0, why);
    *ops = out;
}

/* ---- the early release of setup tiles ---------------------------------------------------------- */

static bool op_reads_group(Lower *L, POp *o, int g) {
    Effects e;
    op_effects(L, o, &e);
    for (int j = 0; j < e.bufs.n; j++)
        if (group_of_buf(L->pk, buf_of_sym(L->pk, e.bufs.v[j])) == g) return true;
    return false;
}

bool ops_read_group(Lower *L, POpList *ops, int g) {
    for (int i = 0; i < ops->n; i++)
        if (op_reads_group(L, ops->v[i], g)) return true;
    return false;
}

/* the index of the op after which every reader of group g in a scheduled step is complete
 * (synchronous readers issued, products waited for); -1 when none reads it or a product
 * reading it is still in flight at the end of the step */
int release_point(Lower *L, POpList *ops, int g) {
    int point = -1;
    POpList inflight = {0};
    for (int i = 0; i < ops->n; i++) {
        POp *o = ops->v[i];
        if (o->kind == POP_WAIT_MMA) {
            for (int k = 0; k < o->done.n; k++)
                for (int p = 0; p < inflight.n; p++)
                    if (inflight.v[p] == o->done.v[k]) {
                        inflight.v[p] = inflight.v[--inflight.n];
                        point = i;
                        break;
                    }
            continue;
        }
        if (!op_reads_group(L, o, g)) continue;
        if (o->kind == POP_MMA) {
            if (o->mma->deferred) return -1;
            vec_push(L->a, &inflight, o);
        }
        point = i;
    }
    return inflight.n ? -1 : point;
}

void insert_release(Lower *L, POpList *ops, int at, int g) {
    POp *r = pop_new(L, POP_RELEASE);
    r->group = g;
    r->last_step = true;
    r->note = "the last step: nothing after it reads the setup tiles";
    vec_push(L->a, ops, NULL);
    for (int i = ops->n - 1; i > at; i--) ops->v[i] = ops->v[i - 1];
    ops->v[at] = r;
}

/* ---- who releases a stage ---------------------------------------------------------------------- *
 * A product is one operation of the whole warpgroup: once any of its warps has waited for it,
 * its reads of shared memory are done, so one thread per warpgroup can release the stage. A
 * move, or an elementwise op reading a shared tile, is each warp's own load: when thread 0's warp
 * is done, another warp of the warpgroup may still be reading (and the producer would overwrite
 * the stage under it). A load group read that way is released by every consumer warp, each after
 * __syncwarp, so the empty barrier counts four arrivals per warpgroup; and each thread first fences
 * its reads (fence.proxy.async): they are generic-proxy loads, the refill a TMA (async-proxy) write
 * that the mbarrier alone does not order after them (bench/RESULTS.md, runs 178-179). */
static bool ops_load_group(Lower *L, const POpList *ops, int g) {
    for (int i = 0; i < ops->n; i++) {
        POp *o = ops->v[i];
        if (o->kind == POP_MMA || o->kind == POP_RELEASE || o->kind == POP_WAIT_FULL) continue;
        if (o->kind == POP_IF || o->kind == POP_FOR) {
            if (ops_load_group(L, &o->then_ops, g) || ops_load_group(L, &o->else_ops, g)) return true;
            continue;
        }
        if (op_reads_group(L, o, g)) return true;
    }
    return false;
}

void plan_release_arrivals(Lower *L) {
    PlanKernel *pk = L->pk;
    for (int g = 0; g < pk->groups.n; g++) {
        PlanGroup *pg = &pk->groups.v[g];
        const POpList *lists[] = {&pk->setup_ops, &pk->first_ops, &pk->compute_ops, &pk->after_ops, &pk->finish_ops};
        for (size_t k = 0; k < sizeof lists / sizeof lists[0] && !pg->warp_release; k++)
            pg->warp_release = ops_load_group(L, lists[k], g);
        if (!pg->warp_release) continue;
        PlanBarrier *eb = &pk->bars.v[pg->empty];
        eb->count *= 4;
        eb->why = pg->once ? "lane 0 of every consumer warp, once it is done with the setup tiles (its own loads read them)"
                  : pg->multicast ? "lane 0 of every consumer warp of every block in the cluster releases the stage (its own "
                                    "loads read it; multicast writes into all of them)"
                                  : "lane 0 of every consumer warp releases the stage (the warps' own loads read it, not "
                                    "only products)";
    }
}
