/* verify_protocol.c - the barrier protocol of a plan, checked exhaustively on small cases.
 *
 * A kernel's roles (the producer thread and each consumer warpgroup of every block of a cluster)
 * talk through mbarriers (full: the producer's arrive.expect_tx plus the bytes TMA delivers;
 * empty: one arrival per consumer warpgroup, or per consumer of the cluster for multicast
 * groups), named barriers (bar.sync / bar.arrive with a thread count) and the tensor cores'
 * commit groups. This file turns the plan into each role's sequence of such events, following
 * the code the emitter writes for it (the same stage, phase and slot counters, the peeled first
 * step, the lookahead, the releases of the setup tiles), for small configurations: every trip
 * count from 0 to stages + 1, 0 to 3 work tiles per block in a persistent grid, both outcomes of
 * every uniform if (an if on wg and constants goes each warpgroup's own way), every block of a
 * cluster. It then explores every interleaving of the roles
 * and of the TMA copies in flight (a depth-first search over the reachable states, each state
 * visited once) and checks the rules:
 *   arrivals    no role arrives twice in one phase of an mbarrier (its count is the number of
 *               distinct arrivers each phase), and a named barrier's thread count is 128 times
 *               the warpgroups that meet on it;
 *   bytes       a load's boxes deliver the bytes of its tile, a group's expect_tx is the sum of
 *               its loads, and no barrier is left with bytes or arrivals outstanding at the end;
 *   release     a stage (or setup tile) is not refilled while a product still reads it, is not
 *               released before the products reading it completed, and every read finds the
 *               data of its own step, landed;
 *   phases      a wait returns on exactly the phase it waits for (never one phase early or
 *               late: parities alternate with the stage counter);
 *   progress    in every reachable state some role can move, until all of them finished.
 * The first violation found is reported with the configuration and the roles' positions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

enum { NBIDS = 16, STATE_CAP = 400000 };

typedef enum {
    EV_WAIT,        /* mbarrier try_wait.parity */
    EV_ARRIVE,      /* mbarrier arrive (a release of a stage) */
    EV_EXPECT,      /* mbarrier arrive.expect_tx */
    EV_ISSUE,       /* a TMA load (its boxes into one copy of a group) */
    EV_READ,        /* consumer threads read shared tiles of load groups */
    EV_MMA,         /* a product is issued: its shared operands are read until it completes */
    EV_WAIT_MMA,    /* wgmma.wait_group n */
    EV_NB_SYNC,     /* bar.sync id, threads */
    EV_NB_ARRIVE,   /* bar.arrive id, threads */
} EvKind;

typedef struct Read { int group, copy, version; } Read;

typedef struct Ev {
    EvKind k;
    int bar, copy;      /* mbarrier events: index into pk->bars, and which copy */
    int parity, want;   /* EV_WAIT: the parity the code waits on; the completions it waits for */
    int bytes;          /* EV_EXPECT */
    bool all_blocks;    /* EV_ARRIVE: into every block of the cluster */
    int arrivals;       /* EV_ARRIVE: the arrivals it stands for (a warpgroup is one role: every
                         * consumer warp releasing counts 4; 0 means 1) */
    int group, load, version, boxes, box_bytes;  /* EV_ISSUE (boxes: how many this block issues) */
    bool multicast;     /* EV_ISSUE: the boxes land in every block of the cluster */
    int r0, nr;         /* EV_READ, EV_MMA: reads[r0 .. r0 + nr) */
    int n;              /* EV_WAIT_MMA */
    int nb, threads;    /* EV_NB_* */
    const char *what;
} Ev;

typedef Vec(Ev) EvVec;

typedef struct M {
    Arena *a;
    const PlanKernel *pk;
    int B, P, C, R;     /* blocks per cluster, producers per block (0 or 1), consumers, roles */
    /* the products each role has in flight before its event pc: a role's own events alone decide
     * them, so they are computed once per program (inflight[r][pc] .. up to -1 in qpool) */
    int **inflight;
    Vec(int) qpool;
    Vec(Read) reads;
    EvVec *prog;        /* per role */
    /* the configuration */
    int ntiles, *trips;
    unsigned ifbits;
    Vec(const POp *) ifs;
    /* state layout (int offsets) */
    int o_pc, o_sub, o_bar, o_nb, o_buf, n_state;
    int *bar_base;      /* per pk->bars: first copy's slot, per block stride */
    int bar_slots;      /* mbarrier copies in one block */
    int *grp_copies, *grp_base, grp_slots;
    int *grp_bytes;     /* bytes a full copy of a group holds (what its boxes deliver) */
    /* the search */
    int *tab;           /* open addressing: state indices + 1 */
    size_t tab_cap, nstates, states_cap;
    int *states;
    long explored;
    int nb_threads[NBIDS];      /* per named barrier id: its thread count, and the warpgroups on it */
    unsigned nb_wgs[NBIDS];
    bool truncated;
    char *err;
    StrBuf msg;
} M;

/* ---- the roles' programs -------------------------------------------------------------------- */

typedef enum { MODE_NONE, MODE_FIRST, MODE_LOOP } Mode;

typedef struct W {          /* a consumer's walk: the counters the generated code keeps */
    M *m;
    EvVec *ev;
    int block, wg;
    int stage, phase, prev_stage, prev_phase, tile_phase, slot;
    int slot_used;          /* the setup copy ops address (the lookahead's next tile: the other one) */
    int G;                  /* steps consumed in this block so far (the ring's step number) */
    int tile;               /* the work tile the ops belong to */
    int T, j;               /* its trip count; the step */
    Mode mode;
    bool unchecked;         /* the lookahead's products without a real tile: reads nothing that matters */
    bool has;               /* the lookahead: a real tile with steps */
    Vec(Read) held;         /* the data this role waited for and has not released */
} W;

static void walk_fail(W *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void push(W *w, Ev e) { vec_push(w->m->a, w->ev, e); }

static int grp_of_buf(const PlanKernel *pk, int buf) { return buf >= 0 && buf < pk->bufs.n ? pk->bufs.v[buf].group : -1; }

/* the copy a read of group g addresses and the data it should find there */
static Read read_of(W *w, int g, bool prev) {
    const PlanKernel *pk = w->m->pk;
    Read r = {.group = g};
    if (pk->groups.v[g].once) {
        r.copy = w->slot_used;
        r.version = w->tile;
    } else {
        r.copy = prev ? w->prev_stage : w->stage;
        r.version = prev ? w->G - 1 : w->G;
    }
    return r;
}

static void add_read(W *w, int g, bool prev, int r0) {
    Read r = read_of(w, g, prev);
    for (int i = r0; i < w->m->reads.n; i++)
        if (w->m->reads.v[i].group == r.group && w->m->reads.v[i].copy == r.copy) return;
    vec_push(w->m->a, &w->m->reads, r);
}

static void tree_reads(W *w, const PExpr *x, int r0) {
    if (!x) return;
    if (x->kind == PX_NAME && x->sym) {
        const PlanKernel *pk = w->m->pk;
        for (int i = 0; i < pk->bufs.n; i++)
            if (pk->bufs.v[i].sym == x->sym && pk->bufs.v[i].group >= 0) add_read(w, pk->bufs.v[i].group, false, r0);
        return;
    }
    tree_reads(w, x->base, r0);
    tree_reads(w, x->l, r0);
    tree_reads(w, x->r, r0);
    tree_reads(w, x->cond, r0);
    for (int i = 0; i < x->nix; i++) {
        tree_reads(w, x->ix[i].lo, r0);
        tree_reads(w, x->ix[i].hi, r0);
    }
    for (int i = 0; i < x->nargs; i++) tree_reads(w, x->args[i], r0);
}

static void walk_ops(W *w, const POpList *ops, int from, int to);

/* a condition's value for warpgroup wg, where it is made of constants and wg alone */
static bool eval_wg(const PExpr *x, int wg, int64_t *v) {
    if (!x) return false;
    if (x->is_const && x->kind != PX_NAME) {
        *v = x->cval;
        return true;
    }
    int64_t a, b;
    switch (x->kind) {
    case PX_INT: *v = x->ival; return true;
    case PX_NAME:
        if (x->sym && x->sym->kind == SYM_BUILTIN && x->sym->builtin == BI_WG) {
            *v = wg;
            return true;
        }
        if (x->sym && x->sym->is_const) {
            *v = x->sym->cval;
            return true;
        }
        return false;
    case PX_UNARY:
        if (!eval_wg(x->l, wg, &a)) return false;
        *v = x->uop == UN_NOT ? !a : -a;
        return true;
    case PX_BINARY:
        if (!eval_wg(x->l, wg, &a) || !eval_wg(x->r, wg, &b)) return false;
        switch (x->bop) {
        case BIN_OR: *v = a || b; return true;
        case BIN_AND: *v = a && b; return true;
        case BIN_EQ: *v = a == b; return true;
        case BIN_NE: *v = a != b; return true;
        case BIN_LT: *v = a < b; return true;
        case BIN_LE: *v = a <= b; return true;
        case BIN_GT: *v = a > b; return true;
        case BIN_GE: *v = a >= b; return true;
        case BIN_ADD: *v = a + b; return true;
        case BIN_SUB: *v = a - b; return true;
        case BIN_MUL: *v = a * b; return true;
        case BIN_DIV: return b ? (*v = a / b, true) : false;
        case BIN_MOD: return b ? (*v = a % b, true) : false;
        default: return false;
        }
    default: return false;
    }
}

/* the role's own order: a read is of data it waited for and has not released yet */
static void walk_check_reads(W *w, int r0, int nr, const char *what) {
    for (int k = r0; k < r0 + nr; k++) {
        const Read *rd = &w->m->reads.v[k];
        bool held = false;
        for (int i = 0; i < w->held.n; i++)
            held |= w->held.v[i].group == rd->group && w->held.v[i].copy == rd->copy && w->held.v[i].version == rd->version;
        const PlanGroup *pg = &w->m->pk->groups.v[rd->group];
        if (!held)
            walk_fail(w, "consumer %d reads copy %d of %s (%s, %s %d) without waiting for it, or after releasing it", w->wg, rd->copy,
                      pg->name, what, pg->once ? "work tile" : "step", rd->version);
    }
}

static void walk_op(W *w, const POp *o) {
    M *m = w->m;
    const PlanKernel *pk = m->pk;
    bool guarded = o->skip_first && w->mode == MODE_NONE; /* `if (tkc_steps > 0)` */
    if (guarded && w->T == 0) return;
    switch (o->kind) {
    case POP_WAIT_FULL: {
        const PlanGroup *pg = &pk->groups.v[o->group];
        Read r = read_of(w, o->group, o->prev);
        int parity = pg->once ? w->tile_phase : o->prev ? w->prev_phase : w->phase;
        int uses = pg->once ? pk->setup_stages : pk->stages;
        push(w, (Ev){.k = EV_WAIT, .bar = pg->full, .copy = r.copy, .parity = parity, .want = r.version / uses + 1,
                     .what = arena_printf(m->a, "wait %s%s", pg->name, o->prev ? " (previous step)" : "")});
        vec_push(m->a, &w->held, r);
        return;
    }
    case POP_RELEASE: {
        if (o->last_step && w->j != w->T - 1) return;
        if (o->no_steps && w->T != 0) return;
        const PlanGroup *pg = &pk->groups.v[o->group];
        Read r = read_of(w, o->group, o->prev);
        int r0 = m->reads.n, kept = 0;
        bool held = false;
        for (int i = 0; i < w->held.n; i++)
            if (w->held.v[i].group == r.group && w->held.v[i].copy == r.copy) held = true;
            else w->held.v[kept++] = w->held.v[i];
        w->held.n = kept;
        if (!held) walk_fail(w, "consumer %d releases copy %d of %s, which it did not wait for", w->wg, r.copy, pg->name);
        vec_push(m->a, &m->reads, r);
        push(w, (Ev){.k = EV_ARRIVE, .bar = pg->empty, .copy = r.copy, .all_blocks = pg->multicast && pk->cluster > 1,
                     .arrivals = pg->warp_release ? 4 : 1, .r0 = r0, .nr = 1, .what = arena_printf(m->a, "release %s%s", pg->name, o->prev ? " (previous step)" : "")});
        return;
    }
    case POP_MMA: {
        const PlanMma *mm = o->mma;
        int r0 = m->reads.n;
        if (!w->unchecked) {
            if (!mm->a_reg && grp_of_buf(pk, mm->a.buf) >= 0) add_read(w, grp_of_buf(pk, mm->a.buf), o->prev, r0);
            if (grp_of_buf(pk, mm->b.buf) >= 0) add_read(w, grp_of_buf(pk, mm->b.buf), o->prev, r0);
        }
        walk_check_reads(w, r0, m->reads.n - r0, "a product");
        push(w, (Ev){.k = EV_MMA, .r0 = r0, .nr = m->reads.n - r0,
                     .what = arena_printf(m->a, "product into %s", mm->dst ? mm->dst->name : "?")});
        return;
    }
    case POP_WAIT_MMA: push(w, (Ev){.k = EV_WAIT_MMA, .n = o->n, .what = "wgmma.wait"}); return;
    case POP_STMT:
    case POP_STORE:
    case POP_MOVE: {
        int r0 = m->reads.n;
        if (o->kind == POP_MOVE) {
            if (o->mv && !o->mv->to_shared && grp_of_buf(pk, o->mv->buf) >= 0) add_read(w, grp_of_buf(pk, o->mv->buf), false, r0);
        } else if (o->st) {
            tree_reads(w, o->st->rhs, r0);
            if (o->st->kind == PS_ASSIGN) tree_reads(w, o->st->lhs, r0);
        }
        walk_check_reads(w, r0, m->reads.n - r0, pop_name[o->kind]);
        if (m->reads.n > r0) push(w, (Ev){.k = EV_READ, .r0 = r0, .nr = m->reads.n - r0, .what = pop_name[o->kind]});
        return;
    }
    case POP_IF: {
        int64_t c;
        if (eval_wg(o->cond, w->wg, &c)) { /* decided by the warpgroup (or a constant): each its own way */
            walk_ops(w, c ? &o->then_ops : &o->else_ops, 0, -1);
            return;
        }
        int bit = -1;
        for (int i = 0; i < m->ifs.n; i++)
            if (m->ifs.v[i] == o) bit = i;
        if (bit < 0) {
            walk_ops(w, &o->then_ops, 0, -1);
            walk_ops(w, &o->else_ops, 0, -1);
            return;
        }
        bool taken = m->ifs.n <= 4 ? (m->ifbits >> bit) & 1 : m->ifbits & 1;
        walk_ops(w, taken ? &o->then_ops : &o->else_ops, 0, -1);
        return;
    }
    case POP_FOR: {
        int n = 2;
        if (o->lo && o->hi && o->lo->is_const && o->hi->is_const) n = (int)(o->hi->cval - o->lo->cval);
        if (n > 4) n = 4;
        for (int i = 0; i < n; i++) walk_ops(w, &o->then_ops, 0, -1);
        return;
    }
    case POP_SYNC:
        if (pk->nbar_sync >= 0)
            push(w, (Ev){.k = EV_NB_SYNC, .nb = pk->nbars.v[pk->nbar_sync].id, .threads = 128 * pk->consumers, .what = "sync()"});
        return;
    case POP_PP_WAIT:
        push(w, (Ev){.k = EV_NB_SYNC, .nb = pk->nbars.v[pk->nbar_pingpong].id + w->wg, .threads = 256, .what = "pingpong.wait"});
        return;
    case POP_PP_PASS:
        push(w, (Ev){.k = EV_NB_ARRIVE, .nb = pk->nbars.v[pk->nbar_pingpong].id + (w->wg + 1) % pk->consumers, .threads = 256,
                     .what = "pingpong.pass"});
        return;
    case POP_BAR: {
        const PlanNamedBar *nb = &pk->nbars.v[o->bar];
        push(w, (Ev){.k = EV_NB_SYNC, .nb = nb->id + (nb->ids > 1 ? w->wg : 0), .threads = nb->threads, .what = nb->name});
        return;
    }
    case POP_MATERIALIZE:
    case POP_FENCE: return;
    }
}

static void walk_ops(W *w, const POpList *ops, int from, int to) {
    if (to < 0 || to > ops->n) to = ops->n;
    for (int i = from; i < to; i++) walk_op(w, ops->v[i]);
}

static void advance(W *w) {
    w->prev_stage = w->stage;
    w->prev_phase = w->phase;
    if (++w->stage == w->m->pk->stages) {
        w->stage = 0;
        w->phase ^= 1;
    }
    w->G++;
}

static void next_setup_slot(int setup_stages, int *slot, int *tile_phase) {
    if (setup_stages > 1) {
        if (++*slot == 2) {
            *slot = 0;
            *tile_phase ^= 1;
        }
    } else {
        *tile_phase ^= 1;
    }
}

/* emit_lookahead: the head of tile k's first step, issued ahead (products always; the rest only
 * for a real tile with steps) */
static void walk_lookahead(W *w, int k, int slot, int parity) {
    const PlanKernel *pk = w->m->pk;
    int tile = w->tile, T = w->T, j = w->j, su = w->slot_used;
    Mode mode = w->mode;
    w->has = k < w->m->ntiles && w->m->trips[k] > 0;
    w->tile = k;
    w->T = k < w->m->ntiles ? w->m->trips[k] : 0;
    w->j = 0;
    w->slot_used = slot;
    w->mode = MODE_FIRST;
    if (w->has)
        for (int g = 0; g < pk->groups.n; g++)
            if (pk->groups.v[g].once) {
                push(w, (Ev){.k = EV_WAIT, .bar = pk->groups.v[g].full, .copy = slot, .parity = parity,
                             .want = k / pk->setup_stages + 1, .what = "lookahead: wait for the setup tiles"});
                vec_push(w->m->a, &w->held, ((Read){.group = g, .copy = slot, .version = k}));
            }
    for (int i = 0; i < pk->ahead_head; i++) {
        const POp *o = pk->first_ops.v[i];
        if (o->kind == POP_MMA) {
            w->unchecked = !w->has;
            walk_op(w, o);
            w->unchecked = false;
        } else if (w->has) {
            walk_op(w, o);
        }
    }
    w->tile = tile;
    w->T = T;
    w->j = j;
    w->slot_used = su;
    w->mode = mode;
}

static void walk_consumer(M *m, int block, int wg, EvVec *ev) {
    const PlanKernel *pk = m->pk;
    W w = {.m = m, .ev = ev, .block = block, .wg = wg};
    if (pk->pingpong && wg == pk->consumers - 1)
        push(&w, (Ev){.k = EV_NB_ARRIVE, .nb = pk->nbars.v[pk->nbar_pingpong].id, .threads = 256, .what = "pingpong: consumer 0 first"});
    if (pk->lookahead) walk_lookahead(&w, 0, 0, 0);
    for (int k = 0; k < m->ntiles; k++) {
        w.tile = k;
        w.T = m->trips[k];
        w.j = -1;
        w.slot_used = w.slot;
        w.mode = MODE_NONE;
        walk_ops(&w, &pk->setup_ops, 0, -1);
        if (!pk->no_pipeline) {
            w.prev_stage = w.prev_phase = 0;
            if (pk->lookahead) {
                w.mode = MODE_FIRST;
                walk_op(&w, pk->first_ops.v[pk->ahead_head]);
            }
            if (pk->peel_first && w.T > 0) {
                w.mode = MODE_FIRST;
                w.j = 0;
                walk_ops(&w, &pk->first_ops, pk->lookahead ? pk->ahead_head + 1 : 0, -1);
                advance(&w);
            }
            for (w.j = pk->peel_first ? 1 : 0; w.j < w.T; w.j++) {
                w.mode = MODE_LOOP;
                walk_ops(&w, &pk->compute_ops, 0, -1);
                advance(&w);
            }
            w.mode = MODE_NONE;
            if (pk->lookahead) {
                walk_ops(&w, &pk->after_ops, 0, pk->ahead_split);
                int slot = pk->setup_stages > 1 ? w.slot ^ 1 : w.slot;
                int parity = pk->setup_stages > 1 ? w.tile_phase ^ w.slot : w.tile_phase ^ 1;
                walk_lookahead(&w, k + 1, slot, parity);
                walk_ops(&w, &pk->after_ops, pk->ahead_split, -1);
            } else {
                walk_ops(&w, &pk->after_ops, 0, -1);
            }
        } else {
            walk_ops(&w, &pk->after_ops, 0, -1);
        }
        walk_ops(&w, &pk->finish_ops, 0, -1);
        next_setup_slot(pk->setup_stages, &w.slot, &w.tile_phase);
    }
    if (pk->lookahead) push(&w, (Ev){.k = EV_WAIT_MMA, .n = 0, .what = "wgmma.wait 0 (the last lookahead)"});
}

/* a load's boxes: how many this block issues, and the bytes of one */
static void load_boxes(const PlanKernel *pk, const PlanLoad *pl, int rank, int *boxes, int *box_bytes) {
    const PlanBuf *b = &pk->bufs.v[pl->buf];
    const PlanMap *mp = &pk->maps.v[pl->map];
    int bytes = dtype_bytes[b->dt];
    for (int d = 0; d < mp->rank; d++) bytes *= mp->box[d];
    *box_bytes = bytes;
    *boxes = 0;
    for (int a = 0; a < b->natoms; a++) {
        int who = pl->multicast ? (b->natoms >= pk->cluster ? a % pk->cluster : 0) : rank;
        if (who == rank) ++*boxes;
    }
}

static void producer_group(M *m, EvVec *ev, int block, int g, int copy, int parity, int want, int version) {
    const PlanKernel *pk = m->pk;
    const PlanGroup *pg = &pk->groups.v[g];
    int expect = 0;
    for (int i = 0; i < pg->loads.n; i++)
        if (!pg->loads.v[i].alternative) expect += plan_buf_tx_bytes(&pk->bufs.v[pg->loads.v[i].buf]);
    vec_push(m->a, ev, ((Ev){.k = EV_WAIT, .bar = pg->empty, .copy = copy, .parity = parity, .want = want,
                             .what = arena_printf(m->a, "wait until %s is released", pg->name)}));
    vec_push(m->a, ev, ((Ev){.k = EV_EXPECT, .bar = pg->full, .copy = copy, .bytes = expect,
                             .what = arena_printf(m->a, "expect_tx %s", pg->name)}));
    for (int i = 0; i < pg->loads.n; i++) {
        if (pg->loads.v[i].alternative) continue; /* the first load of its buffer stands for it */
        Ev e = {.k = EV_ISSUE, .group = g, .copy = copy, .load = i, .version = version, .multicast = pg->loads.v[i].multicast,
                .what = arena_printf(m->a, "load into %s", pk->bufs.v[pg->loads.v[i].buf].name)};
        load_boxes(pk, &pg->loads.v[i], block, &e.boxes, &e.box_bytes);
        if (e.boxes) vec_push(m->a, ev, e);
    }
}

static void walk_producer(M *m, int block, EvVec *ev) {
    const PlanKernel *pk = m->pk;
    if (!pk->groups.n) return;
    int stage = 0, phase = 0, tile_phase = 0, slot = 0, G = 0;
    for (int k = 0; k < m->ntiles; k++) {
        for (int g = 0; g < pk->groups.n; g++)
            if (pk->groups.v[g].once) producer_group(m, ev, block, g, slot, tile_phase ^ 1, k / pk->setup_stages, k);
        if (!pk->no_pipeline)
            for (int j = 0; j < m->trips[k]; j++) {
                for (int g = 0; g < pk->groups.n; g++)
                    if (!pk->groups.v[g].once) producer_group(m, ev, block, g, stage, phase ^ 1, G / pk->stages, G);
                if (++stage == pk->stages) {
                    stage = 0;
                    phase ^= 1;
                }
                G++;
            }
        next_setup_slot(pk->setup_stages, &slot, &tile_phase);
    }
}

/* ---- the state and its transitions ---------------------------------------------------------- */

#define PC(s, r) (s)[m->o_pc + (r)]
#define SUB(s, r) (s)[m->o_sub + (r)]
/* an mbarrier copy: phase (completions so far), pending arrivals, tx bytes, the arrivers' mask */
#define BAR(s, b, bar, c) (&(s)[m->o_bar + 4 * ((b) * m->bar_slots + m->bar_base[bar] + (c))])
#define NBAR(s, b, id) (&(s)[m->o_nb + 2 * ((b) * NBIDS + (id))])
#define BUF(s, b, g, c) (&(s)[m->o_buf + 2 * ((b) * m->grp_slots + m->grp_base[g] + (c))])

static int role_block(const M *m, int r) { return r / (m->P + m->C); }
static bool role_producer(const M *m, int r) { return m->P && r % (m->P + m->C) == 0; }
static int role_wg(const M *m, int r) { return r % (m->P + m->C) - m->P; }

static const char *role_name(M *m, int r) {
    const char *who = role_producer(m, r) ? "the producer" : arena_printf(m->a, "consumer %d", role_wg(m, r));
    return m->B > 1 ? arena_printf(m->a, "%s of block %d", who, role_block(m, r)) : who;
}

static void config_text(M *m, StrBuf *b) {
    if (m->ntiles < 0) {
        sb_puts(b, "every configuration");
        return;
    }
    sb_printf(b, "%d work tile%s (trip counts", m->ntiles, m->ntiles == 1 ? "" : "s");
    for (int k = 0; k < m->ntiles; k++) sb_printf(b, " %d", m->trips[k]);
    sb_printf(b, "%s)", m->ntiles ? "" : " none");
    if (m->ifs.n) sb_printf(b, ", uniform ifs %s", m->ifbits & 1 ? "taken" : "not taken");
    if (m->B > 1) sb_printf(b, ", a cluster of %d", m->B);
}

static void violation(M *m, const int *s, const char *rule, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void violation(M *m, const int *s, const char *rule, const char *fmt, ...) {
    if (m->err) return;
    StrBuf b;
    sb_init(&b);
    sb_printf(&b, "barrier protocol, rule '%s': ", rule);
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&b, fmt, ap);
    va_end(ap);
    sb_puts(&b, "; with ");
    config_text(m, &b);
    if (s) {
        sb_puts(&b, "; roles at:");
        for (int r = 0; r < m->R; r++) {
            int pc = PC(s, r);
            sb_printf(&b, " %s %s;", role_name(m, r), pc < m->prog[r].n ? m->prog[r].v[pc].what : "done");
        }
    }
    m->err = arena_strdup(m->a, b.s);
    sb_free(&b);
}

static void bar_complete_if(M *m, int *s, int b, int bar, int c) {
    int *x = BAR(s, b, bar, c);
    if (x[1] == 0 && x[2] == 0) {
        x[0]++;
        x[1] = m->pk->bars.v[bar].count;
        x[3] = 0;
    }
}

static void bar_arrive(M *m, int *s, int b, int bar, int c, int who, int arrivals) {
    int *x = BAR(s, b, bar, c);
    int bit = 1 << who;
    if (x[3] & bit) {
        violation(m, s, "arrivals", "%s arrives twice in one phase of %s[%d]%s (it counts %d arrivals a phase)", role_name(m, who),
                  m->pk->bars.v[bar].name, c, m->B > 1 ? arena_printf(m->a, " of block %d", b) : "", m->pk->bars.v[bar].count);
        return;
    }
    x[3] |= bit;
    x[1] -= arrivals;
    bar_complete_if(m, s, b, bar, c);
}

/* does a consumer role have a product in flight that reads copy c of group g */
static const char *reading(M *m, const int *s, int r, int g, int c) {
    int pc = PC(s, r);
    if (pc >= m->prog[r].n) return NULL;
    for (const int *q = m->qpool.v + m->inflight[r][pc]; *q >= 0; q++) {
        const Ev *ev = &m->prog[r].v[*q];
        for (int k = 0; k < ev->nr; k++)
            if (m->reads.v[ev->r0 + k].group == g && m->reads.v[ev->r0 + k].copy == c) return ev->what;
    }
    return NULL;
}

static void check_reads(M *m, const int *s, int r, const Ev *e) {
    int b = role_block(m, r);
    for (int k = 0; k < e->nr; k++) {
        const Read *rd = &m->reads.v[e->r0 + k];
        const int *x = BUF(s, b, rd->group, rd->copy);
        const PlanGroup *pg = &m->pk->groups.v[rd->group];
        if (x[0] != rd->version || x[1] != m->grp_bytes[rd->group])
            violation(m, s, "release", "%s reads copy %d of %s (%s) for %s %d, but it holds %s %d%s", role_name(m, r), rd->copy, pg->name,
                      e->what, pg->once ? "work tile" : "step", rd->version, pg->once ? "work tile" : "step", x[0],
                      x[1] != m->grp_bytes[rd->group] ? arena_printf(m->a, ", %d of %d bytes landed", x[1], m->grp_bytes[rd->group]) : "");
    }
}

/* can role r move; if so (and do), make the move in s */
static bool step_role(M *m, int *s, int r, bool doit) {
    int pc = PC(s, r);
    if (pc >= m->prog[r].n) return false;
    const Ev *e = &m->prog[r].v[pc];
    int b = role_block(m, r);
    switch (e->k) {
    case EV_WAIT: {
        int *x = BAR(s, b, e->bar, e->copy);
        if ((x[0] & 1) == e->parity) return false;
        if (!doit) return true;
        if (x[0] != e->want)
            violation(m, s, "phases", "%s passes its wait on %s[%d] (parity %d) after %d completed phases, where it waits for phase %d",
                      role_name(m, r), m->pk->bars.v[e->bar].name, e->copy, e->parity, x[0], e->want);
        break;
    }
    case EV_ARRIVE:
        if (!doit) return true;
        if (!role_producer(m, r)) {
            const Read *rd = &m->reads.v[e->r0];
            const char *what = reading(m, s, r, rd->group, rd->copy);
            if (what)
                violation(m, s, "release", "%s releases copy %d of %s while its %s still reads it", role_name(m, r), rd->copy,
                          m->pk->groups.v[rd->group].name, what);
        }
        for (int d = 0; d < m->B; d++)
            if (e->all_blocks || d == b) bar_arrive(m, s, d, e->bar, e->copy, r, e->arrivals ? e->arrivals : 1);
        break;
    case EV_EXPECT:
        if (!doit) return true;
        BAR(s, b, e->bar, e->copy)[2] += e->bytes;
        bar_arrive(m, s, b, e->bar, e->copy, r, 1);
        break;
    case EV_ISSUE: {
        if (!doit) return true;
        const PlanGroup *pg = &m->pk->groups.v[e->group];
        for (int d = 0; d < m->B; d++) {
            if (!e->multicast && d != b) continue;
            for (int q = 0; q < m->R; q++) {
                if (role_block(m, q) != d || role_producer(m, q)) continue;
                const char *what = reading(m, s, q, e->group, e->copy);
                if (what)
                    violation(m, s, "release", "%s refills copy %d of %s while %s's %s still reads it", role_name(m, r), e->copy, pg->name,
                              role_name(m, q), what);
            }
            int *x = BUF(s, d, e->group, e->copy);
            if (x[0] != e->version) {
                x[0] = e->version;
                x[1] = 0;
            }
            /* the boxes land at once: with the byte counts checked, a full barrier completes only
             * once every byte of its phase landed, so when they land in between changes nothing */
            x[1] += e->boxes * e->box_bytes;
            BAR(s, d, pg->full, e->copy)[2] -= e->boxes * e->box_bytes;
            bar_complete_if(m, s, d, pg->full, e->copy);
        }
        break;
    }
    case EV_READ:
        if (!doit) return true;
        check_reads(m, s, r, e);
        break;
    case EV_MMA:
        if (!doit) return true;
        check_reads(m, s, r, e);
        break;
    case EV_WAIT_MMA:
        if (!doit) return true;
        break;
    case EV_NB_ARRIVE:
    case EV_NB_SYNC: {
        int *x = NBAR(s, b, e->nb);
        if (SUB(s, r)) {        /* arrived: wait for the barrier's generation to move on */
            if (x[1] + 1 == SUB(s, r)) return false;
            if (!doit) return true;
            SUB(s, r) = 0;
            break;
        }
        if (!doit) return true;
        x[0] += 128;
        bool done = x[0] >= e->threads;
        if (done) {
            if (x[0] > e->threads)
                violation(m, s, "arrivals", "named barrier %d gets %d threads, more than its %d", e->nb, x[0], e->threads);
            x[0] = 0;
            x[1]++;
        }
        if (e->k == EV_NB_SYNC && !done) {
            SUB(s, r) = x[1] + 1;
            return true;
        }
        break;
    }
    }
    PC(s, r)++;
    return true;
}

/* a role's move: its next event, then every event up to the next one that can block (a wait on
 * an mbarrier or a named barrier). What runs in between only arrives, reads, issues or checks:
 * running it at once never disables another role, and the reads it checks are also checked
 * against the role's own waits and releases (walk_check) */
static bool move_role(M *m, int *s, int r) {
    if (!step_role(m, s, r, true)) return false;
    while (!m->err && PC(s, r) < m->prog[r].n && !SUB(s, r)) {
        EvKind k = m->prog[r].v[PC(s, r)].k;
        if (k == EV_WAIT || k == EV_NB_SYNC) break;
        step_role(m, s, r, true);
    }
    return true;
}

static void walk_fail(W *w, const char *fmt, ...) {
    M *m = w->m;
    if (m->err) return;
    StrBuf b;
    sb_init(&b);
    sb_puts(&b, "barrier protocol, rule 'release': ");
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&b, fmt, ap);
    va_end(ap);
    sb_puts(&b, "; with ");
    config_text(m, &b);
    m->err = arena_strdup(m->a, b.s);
    sb_free(&b);
}

/* ---- the search ----------------------------------------------------------------------------- */

static uint64_t hash_state(const int *s, int n) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++) {
        h ^= (uint32_t)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* adds s to the visited set; false if it was there. Every event's effect is fixed by the event,
 * so the roles' positions (and whether each waits on a named barrier) determine the rest of a
 * state: the barriers, the buffers, the product queues. Only those positions are stored. */
static bool visit(M *m, const int *s) {
    int n_key = 2 * m->R;
    if (2 * (m->nstates + 1) > m->tab_cap) {
        size_t cap = m->tab_cap ? 2 * m->tab_cap : 4096;
        int *tab = calloc(cap, sizeof *tab);
        if (!tab) { /* out of memory: the search stops here, said so */
            m->truncated = true;
            return false;
        }
        for (size_t i = 0; i < m->tab_cap; i++)
            if (m->tab[i]) {
                size_t h = hash_state(m->states + (size_t)(m->tab[i] - 1) * n_key, n_key) & (cap - 1);
                while (tab[h]) h = (h + 1) & (cap - 1);
                tab[h] = m->tab[i];
            }
        free(m->tab);
        m->tab = tab;
        m->tab_cap = cap;
    }
    size_t h = hash_state(s, n_key) & (m->tab_cap - 1);
    while (m->tab[h]) {
        if (!memcmp(m->states + (size_t)(m->tab[h] - 1) * n_key, s, sizeof(int) * n_key)) return false;
        h = (h + 1) & (m->tab_cap - 1);
    }
    if (m->nstates == m->states_cap) {
        size_t cap = m->states_cap ? 2 * m->states_cap : 1024;
        int *st = realloc(m->states, cap * n_key * sizeof(int));
        if (!st) {
            m->truncated = true;
            return false;
        }
        m->states = st;
        m->states_cap = cap;
    }
    memcpy(m->states + m->nstates * n_key, s, sizeof(int) * n_key);
    m->tab[h] = (int)++m->nstates;
    return true;
}

static void final_checks(M *m, const int *s) {
    const PlanKernel *pk = m->pk;
    for (int b = 0; b < m->B; b++)
        for (int i = 0; i < pk->bars.n; i++)
            for (int c = 0; c < pk->bars.v[i].copies; c++) {
                const int *x = BAR(s, b, i, c);
                if (x[2] != 0)
                    violation(m, s, "bytes", "at the end %s[%d] still waits for %d bytes", pk->bars.v[i].name, c, x[2]);
                else if (x[1] != pk->bars.v[i].count)
                    violation(m, s, "arrivals", "at the end %s[%d] still waits for %d of its %d arrivals", pk->bars.v[i].name, c, x[1],
                              pk->bars.v[i].count);
            }
}

static void explore(M *m, const int *init) {
    Vec(int) stack = {0};
    int *cur = arena_alloc(m->a, sizeof(int) * m->n_state), *nxt = arena_alloc(m->a, sizeof(int) * m->n_state);
    if (visit(m, init))
        for (int i = 0; i < m->n_state; i++) vec_push(m->a, &stack, init[i]);
    while (stack.n && !m->err) {
        stack.n -= m->n_state;
        memcpy(cur, stack.v + stack.n, sizeof(int) * m->n_state);
        m->explored++;
        bool moved = false;
        for (int r = 0; r < m->R && !m->err; r++) {
            if (!step_role(m, cur, r, false)) continue;
            moved = true;
            memcpy(nxt, cur, sizeof(int) * m->n_state);
            move_role(m, nxt, r);
            if (visit(m, nxt))
                for (int i = 0; i < m->n_state; i++) vec_push(m->a, &stack, nxt[i]);
        }
        if (!moved) {
            bool all_done = true;
            for (int r = 0; r < m->R; r++) all_done &= PC(cur, r) >= m->prog[r].n;
            if (all_done) final_checks(m, cur);
            for (int r = 0; r < m->R && !all_done; r++) {
                /* a wait whose barrier went past its phase: it waits for a parity it will not see again */
                const Ev *e = PC(cur, r) < m->prog[r].n ? &m->prog[r].v[PC(cur, r)] : NULL;
                if (e && e->k == EV_WAIT && BAR(cur, role_block(m, r), e->bar, e->copy)[0] > e->want)
                    violation(m, cur, "phases", "%s waits for phase %d of %s[%d], which has completed %d", role_name(m, r), e->want,
                              m->pk->bars.v[e->bar].name, e->copy, BAR(cur, role_block(m, r), e->bar, e->copy)[0]);
            }
            if (!all_done) violation(m, cur, "progress", "no role can move");
        }
        if (m->nstates > STATE_CAP) {
            m->truncated = true;
            break;
        }
    }
}

/* do ops (and what they nest) wait, release, issue products or meet on a named barrier */
static bool syncs(const POpList *ops) {
    for (int i = 0; i < ops->n; i++) {
        POpKind k = ops->v[i]->kind;
        if (k == POP_WAIT_FULL || k == POP_RELEASE || k == POP_MMA || k == POP_WAIT_MMA || k == POP_SYNC || k == POP_PP_WAIT ||
            k == POP_PP_PASS || k == POP_BAR || syncs(&ops->v[i]->then_ops) || syncs(&ops->v[i]->else_ops))
            return true;
    }
    return false;
}

/* the ifs whose outcome changes the protocol (the others' branches are both walked: they only read) */
static void collect_ifs(M *m, const POpList *ops) {
    for (int i = 0; i < ops->n; i++) {
        int64_t c;
        if (ops->v[i]->kind == POP_IF && !eval_wg(ops->v[i]->cond, 0, &c) &&
            (syncs(&ops->v[i]->then_ops) || syncs(&ops->v[i]->else_ops)))
            vec_push(m->a, &m->ifs, ops->v[i]);
        collect_ifs(m, &ops->v[i]->then_ops);
        collect_ifs(m, &ops->v[i]->else_ops);
    }
}

/* the layout of a state; the product queues as long as the most products a role issues */
static void layout(M *m) {
    m->qpool.n = 0;
    for (int r = 0; r < m->R; r++) {
        const EvVec *p = &m->prog[r];
        m->inflight[r] = arena_alloc(m->a, sizeof(int) * (p->n + 1));
        Vec(int) q = {0};
        for (int pc = 0; pc < p->n; pc++) {
            m->inflight[r][pc] = m->qpool.n;
            for (int i = 0; i < q.n; i++) vec_push(m->a, &m->qpool, q.v[i]);
            vec_push(m->a, &m->qpool, -1);
            if (p->v[pc].k == EV_MMA) vec_push(m->a, &q, pc);
            if (p->v[pc].k == EV_WAIT_MMA && q.n > p->v[pc].n) {
                int drop = q.n - p->v[pc].n;
                for (int i = 0; i + drop < q.n; i++) q.v[i] = q.v[i + drop];
                q.n -= drop;
            }
        }
    }
    int old = m->n_state;
    m->o_pc = 0;
    m->o_sub = m->o_pc + m->R;
    m->o_bar = m->o_sub + m->R;
    m->o_nb = m->o_bar + 4 * m->B * m->bar_slots;
    m->o_buf = m->o_nb + 2 * m->B * NBIDS;
    m->n_state = m->o_buf + 2 * m->B * m->grp_slots;
    if (m->n_state != old) { /* the stored states have another size: start the store afresh */
        free(m->states);
        m->states = NULL;
        m->states_cap = 0;
    }
}

/* one configuration: build the programs, the initial state, and search */
static void run_config(M *m, bool search) {
    const PlanKernel *pk = m->pk;
    m->reads.n = 0;
    for (int r = 0; r < m->R; r++) {
        m->prog[r].n = 0;
        if (role_producer(m, r)) walk_producer(m, role_block(m, r), &m->prog[r]);
        else walk_consumer(m, role_block(m, r), role_wg(m, r), &m->prog[r]);
    }
    layout(m);
    /* named barriers: the warpgroups of block 0 that meet on each id, over every configuration */
    for (int r = 0; r < m->R; r++)
        for (int i = 0; i < m->prog[r].n; i++) {
            const Ev *e = &m->prog[r].v[i];
            if ((e->k == EV_WAIT || e->k == EV_ARRIVE || e->k == EV_EXPECT) &&
                (e->bar < 0 || e->bar >= pk->bars.n || e->copy < 0 || e->copy >= pk->bars.v[e->bar].copies))
                violation(m, NULL, "phases", "%s %s: copy %d of a barrier with %d", role_name(m, r), e->what, e->copy,
                          e->bar >= 0 && e->bar < pk->bars.n ? pk->bars.v[e->bar].copies : 0);
            if ((e->k != EV_NB_SYNC && e->k != EV_NB_ARRIVE) || role_block(m, r)) continue;
            if (e->nb < 0 || e->nb >= NBIDS) {
                violation(m, NULL, "arrivals", "%s: named barrier %d is not one of 0 .. 15", e->what, e->nb);
                continue;
            }
            if (m->nb_threads[e->nb] && e->threads != m->nb_threads[e->nb])
                violation(m, NULL, "arrivals", "named barrier %d is used with %d and %d threads", e->nb, m->nb_threads[e->nb], e->threads);
            m->nb_threads[e->nb] = e->threads;
            m->nb_wgs[e->nb] |= 1u << r;
        }
    int *s = arena_alloc(m->a, sizeof(int) * m->n_state);
    for (int b = 0; b < m->B; b++) {
        for (int i = 0; i < pk->bars.n; i++)
            for (int c = 0; c < pk->bars.v[i].copies; c++) BAR(s, b, i, c)[1] = pk->bars.v[i].count;
        for (int g = 0; g < pk->groups.n; g++)
            for (int c = 0; c < m->grp_copies[g]; c++) BUF(s, b, g, c)[0] = -1;
    }
    m->nstates = 0;
    if (m->tab) memset(m->tab, 0, m->tab_cap * sizeof *m->tab);
    if (search && !m->err) explore(m, s);
}

const char *plan_check_protocol(Arena *a, const PlanKernel *pk, ProtocolStats *stats) {
    M mm = {.a = a, .pk = pk}, *m = &mm;
    m->P = pk->no_producer ? 0 : 1;
    m->C = pk->consumers;
    m->B = pk->cluster > 1 ? pk->cluster : 1;
    m->R = m->B * (m->P + m->C);
    if (m->R > 30) return arena_printf(a, "barrier protocol: %d roles are more than the check models", m->R);
    /* static rules first: a load's boxes deliver its tile's bytes; groups and barriers agree */
    for (int g = 0; g < pk->groups.n; g++) {
        const PlanGroup *pg = &pk->groups.v[g];
        int bytes = 0;
        for (int i = 0; i < pg->loads.n; i++) {
            const PlanLoad *pl = &pg->loads.v[i];
            int total = 0;
            for (int r = 0; r < m->B; r++) {
                int boxes, box_bytes;
                load_boxes(pk, pl, r, &boxes, &box_bytes);
                total += boxes * box_bytes;
                if (!pl->multicast) break;
            }
            if (total != plan_buf_tx_bytes(&pk->bufs.v[pl->buf]))
                return arena_printf(a, "barrier protocol, rule 'bytes': the boxes of the load into %s deliver %d bytes, its tile holds %d",
                                    pk->bufs.v[pl->buf].name, total, plan_buf_tx_bytes(&pk->bufs.v[pl->buf]));
            if (pl->alternative) { /* another branch's load of an earlier load's buffer: both conditional */
                bool first = false;
                for (int k = 0; k < i && !first; k++)
                    first = pg->loads.v[k].buf == pl->buf && !pg->loads.v[k].alternative && pg->loads.v[k].cond;
                if (!first || !pl->cond)
                    return arena_printf(a, "barrier protocol, rule 'bytes': the load into %s is marked an alternative but "
                                        "it or the first load of its buffer is not under an if", pk->bufs.v[pl->buf].name);
                continue;
            }
            bytes += total;
        }
        if (bytes != pk->bars.v[pg->full].tx_bytes)
            return arena_printf(a, "barrier protocol, rule 'bytes': %s expects %d bytes a phase, its loads deliver %d",
                                pk->bars.v[pg->full].name, pk->bars.v[pg->full].tx_bytes, bytes);
    }
    /* the layout of a state */
    m->bar_base = arena_alloc(a, sizeof(int) * (pk->bars.n + 1));
    for (int i = 0; i < pk->bars.n; i++) {
        m->bar_base[i] = m->bar_slots;
        m->bar_slots += pk->bars.v[i].copies;
    }
    int ng = pk->groups.n;
    m->grp_copies = arena_alloc(a, sizeof(int) * (ng + 1));
    m->grp_base = arena_alloc(a, sizeof(int) * (ng + 1));
    m->grp_bytes = arena_alloc(a, sizeof(int) * (ng + 1));
    for (int g = 0; g < ng; g++) {
        const PlanGroup *pg = &pk->groups.v[g];
        m->grp_copies[g] = pg->once ? pk->setup_stages : pk->stages;
        m->grp_base[g] = m->grp_slots;
        m->grp_slots += m->grp_copies[g];
        for (int i = 0; i < pg->loads.n; i++)
            if (!pg->loads.v[i].alternative) m->grp_bytes[g] += plan_buf_tx_bytes(&pk->bufs.v[pg->loads.v[i].buf]);
    }
    m->prog = arena_alloc(a, sizeof(EvVec) * m->R);
    m->inflight = arena_alloc(a, sizeof(int *) * m->R);
    collect_ifs(m, &pk->setup_ops);
    collect_ifs(m, &pk->first_ops);
    collect_ifs(m, &pk->compute_ops);
    collect_ifs(m, &pk->after_ops);
    collect_ifs(m, &pk->finish_ops);
    /* the configurations: trip counts 0 .. stages + 1 for one work tile; in a persistent grid
     * also none, and two and three tiles */
    int S = pk->no_pipeline ? 1 : pk->stages;
    int maxT = pk->no_pipeline ? 0 : S + 1;
    Vec(int) cfg = {0}; /* ntiles, trips..., flattened */
    for (int t = 0; t <= maxT; t++) {
        vec_push(a, &cfg, 1);
        vec_push(a, &cfg, t);
    }
    if (pk->persistent) {
        vec_push(a, &cfg, 0);
        int pairs[][2] = {{1, 1}, {0, 1}, {1, 0}, {maxT, 1}, {1, maxT}, {0, 0}};
        for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
            vec_push(a, &cfg, 2);
            vec_push(a, &cfg, pairs[i][0] > maxT ? maxT : pairs[i][0]);
            vec_push(a, &cfg, pairs[i][1] > maxT ? maxT : pairs[i][1]);
        }
        int triples[][3] = {{1, 1, 1}, {maxT, 0, 1}, {1, 2, 1}};
        for (size_t i = 0; i < sizeof triples / sizeof triples[0]; i++) {
            vec_push(a, &cfg, 3);
            for (int k = 0; k < 3; k++) vec_push(a, &cfg, triples[i][k] > maxT ? maxT : triples[i][k]);
        }
    }
    int nbits = m->ifs.n <= 4 ? m->ifs.n : 1;
    long configs = 0, states = 0;
    /* first every configuration's programs (what they check on their own, and the named
     * barriers' use over all of them), then the search of each */
    for (int pass = 0; pass < 2 && !m->err; pass++) {
        for (int i = 0; i < cfg.n && !m->err; i += 1 + cfg.v[i]) {
            m->ntiles = cfg.v[i];
            m->trips = cfg.v + i + 1;
            for (unsigned bits = 0; bits < (1u << nbits) && !m->err; bits++) {
                m->ifbits = bits;
                run_config(m, pass == 1);
                configs += pass;
                states += (long)m->nstates;
            }
        }
        m->ntiles = -1;
        for (int id = 0; id < NBIDS && !m->err && !pass; id++) {
            int n = __builtin_popcount(m->nb_wgs[id]);
            if (m->nb_threads[id] && m->nb_threads[id] != 128 * n)
                violation(m, NULL, "arrivals", "named barrier %d counts %d threads but %d warpgroup%s meet on it", id, m->nb_threads[id],
                          n, n == 1 ? "" : "s");
        }
    }
    free(m->tab);
    free(m->states);
    if (stats) {
        stats->configs = configs;
        stats->states = states;
        stats->truncated = m->truncated;
    }
    return m->err;
}
