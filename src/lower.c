/* lower.c - lowers a checked kernel to its plan (plan.h): the entry (lower_program, lower_kernel,
 * which runs the steps and passes in order), roles and register split, the shared buffers and the
 * conditions of loads under an if. The other steps live beside it (lower_int.h): lower_ops.c
 * (statements to ops, moves, relayouts, the register estimate), lower_sched.c (waits and
 * releases), lower_mem.c (load groups with mbarrier rings, TMA maps, staged stores, the
 * shared-memory layout, named barriers, strides), lower_colred.c (column reductions),
 * lower_support.c (what the back end emits), one file per optimisation pass (pass_*.c), and
 * lower_util.c beneath them all (notes, new ops, the effects of statements and ops).
 * Invariant: every decision is recorded in the plan (and explained in its notes) so the
 * emitter only prints; budget violations (shared memory, registers) are user diagnostics. */
#include <string.h>

#include "lower_int.h"

const char *const bufkind_name[] = {
#define X(e, s, m) s,
    TK_BUFKINDS(X)
#undef X
};
const char *const pop_name[] = {
#define X(e, s, m) s,
    TK_POPS(X)
#undef X
};
const char *const movepath_name[] = {
#define X(e, s, m) s,
    TK_MOVEPATHS(X)
#undef X
};
const char *const storepath_name[] = {
#define X(e, s, m) s,
    TK_STOREPATHS(X)
#undef X
};

static void collect_let_regs(Lower *L, StmtList *l) {
    for (int i = 0; i < l->n; i++) {
        Stmt *st = l->v[i];
        if (st->kind == ST_LET && is_regval(st->u.let.sym)) {
            if (check_reg_shape(L, &st->u.let.sym->ty, st->u.let.name_span, st->u.let.name)) {
                PlanReg r = {st->u.let.sym, value_regs(L->pk, &st->u.let.sym->ty)};
                vec_push(L->a, &L->pk->regs, r);
            }
        } else if (st->kind == ST_IF) {
            collect_let_regs(L, &st->u.if_.then_s);
            collect_let_regs(L, &st->u.if_.else_s);
        } else if (st->kind == ST_FOR) {
            collect_let_regs(L, &st->u.for_.body);
        }
    }
}

/* a setup load that does not depend on the clustered axis: the cluster multicasts it */
static bool setup_multicast(Lower *L) {
    SemaKernel *sk = L->sk;
    if (!sk->blocks[BK_SETUP] || !sk->axes.n) return false;
    Stmt **loads = NULL;
    int n = 0, cap = 0;
    collect_g2s(&sk->blocks[BK_SETUP]->u.block.body, &loads, &n, &cap, L->a);
    for (int i = 0; i < n; i++)
        if (!expr_depends_on(loads[i]->u.assign.rhs, sk->axes.v[L->pk->cluster_axis]->sym)) return true;
    return false;
}

static void lower_roles(Lower *L) {
    SemaKernel *sk = L->sk;
    PlanKernel *pk = L->pk;
    pk->consumers = sk->consumers;
    pk->threads = 128 * (pk->consumers + 1);
    pk->no_pipeline = !sk->pipe;
    pk->stages = sk->pipe ? sk->stages : 0;
    pk->persistent = sk->persistent;
    pk->cluster = sk->cluster;
    pk->cluster_axis = sk->cluster_axis;
    /* a persistent block takes the tiles of a folded axis two at a time (see emit_tile_loop); in
     * clusters, the blocks of a cluster take the pair together */
    for (int i = 0; i < sk->axes.n; i++) pk->paired |= pk->persistent && sk->axes.v[i]->folded && pk->cluster < 2;
    pk->order = sk->order;
    pk->order_group = sk->order_group;
    pk->overlap = sk->overlap;
    pk->pingpong = sk->pingpong;
    pk->setup_stages = 1;
    if (sk->setup_stages == 2) {
        if (!pk->persistent)
            lower_note(L, "setup_stages = 2 asked for, one copy kept: without a persistent grid each block runs one work tile");
        else if (pk->cluster > 1 && setup_multicast(L))
            lower_note(L, "setup_stages = 2 asked for, one copy kept: two copies are not implemented for setup loads that a "
                    "cluster multicasts (they would be released block to block)");
        else
            pk->setup_stages = 2;
    }
    int p, c;
    reg_split_default(pk->consumers, &p, &c);
    pk->min_blocks = sk->blocks_per_sm > 1 && sk->pipe ? sk->blocks_per_sm : 1;
    const int cap = block_reg_cap(pk->threads, pk->min_blocks), pool = pk->threads * cap;
    if (pk->min_blocks > 1) {
        /* several blocks per SM: the block's pool split, the producer the least */
        p = 24;
        c = (pool / 128 - p) / pk->consumers / 8 * 8;
        if (c > 256) c = 256;
    }
    if (sk->producer_regs) p = sk->producer_regs;
    if (sk->consumer_regs) c = sk->consumer_regs;
    pk->producer_regs = p;
    pk->consumer_regs = c;
    pk->split_why = sk->producer_regs || sk->consumer_regs ? "program" : pk->min_blocks > 1 ? "blocks_per_sm" : "default";
    if (pk->min_blocks > 1)
        lower_note(L, "blocks_per_sm = %d: each block gets %s registers (%d threads x %d, __launch_bounds__(%d, %d)), so "
                   "setmaxnreg gives the producer %d and each consumer thread %d",
                   pk->min_blocks, fmt_bytes(pool), pk->threads, cap, pk->threads, pk->min_blocks, p, c);
    if (!reg_split_fits(pk->consumers, p, c, pool))
        diag_error(L->d, sk->regs_span.file >= 0 ? sk->regs_span : sk->k->name_span,
                   "register split does not fit the block's registers: 128 x %d (producer) + %d x 128 x %d (consumers) "
                   "= %s > %s (%d threads x %d registers, what __launch_bounds__(%d, %d) gives each thread)",
                   p, pk->consumers, c, fmt_bytes(128 * (p + pk->consumers * c)), fmt_bytes(pool), pk->threads, cap,
                   pk->threads, pk->min_blocks);
}

static void note_roles(Lower *L) {
    PlanKernel *pk = L->pk;
    if (pk->no_producer) return; /* plan_no_producer said it */
    lower_note(L, "roles: warpgroup 0 is the producer (one thread issues TMA, setmaxnreg.dec %d); warpgroups 1..%d are "
            "consumers (setmaxnreg.inc %d); %d threads",
         pk->producer_regs, pk->consumers, pk->consumer_regs, pk->threads);
}

static void lower_regs(Lower *L) {
    SemaKernel *sk = L->sk;
    PlanKernel *pk = L->pk;
    for (int i = 0; i < sk->regs.n; i++) {
        Symbol *y = sk->regs.v[i];
        if (y->ty.kind == TY_ERROR) continue;
        if (!check_reg_shape(L, &y->ty, y->span, y->name)) continue;
        PlanReg r = {y, value_regs(pk, &y->ty)};
        vec_push(L->a, &pk->regs, r);
    }
    for (int b = 0; b < BK_COUNT; b++)
        if (sk->blocks[b] && b != BK_LOAD) collect_let_regs(L, &sk->blocks[b]->u.block.body);
    StrBuf cols;
    sb_init(&cols);
    int ncols = 0;
    for (int i = 0; i < pk->regs.n; i++) {
        const Symbol *y = pk->regs.v[i].sym;
        if (y->ty.kind != TY_VEC || y->ty.layout != VL_COL) continue;
        sb_printf(&cols, "%s'%s'", ncols++ ? ", " : "", y->name);
    }
    if (ncols && pk->rowwise)
        lower_note(L, "per_col vector%s %s: each thread holds the columns of its chunks of the rowwise tiles (%d values), "
                   "so broadcasting into a tile reads a register (no shuffles)",
                   ncols > 1 ? "s" : "", cols.s, 8 * pk->rw.chunks);
    else if (ncols)
        lower_note(L, "per_col vector%s %s: each thread holds the length / 4 columns it owns in the tiles' wgmma fragment layout, "
                "slot k = column 8 (k / 2) + 2 (lane %% 4) + k %% 2, the same in every warp and warpgroup, so "
                "broadcasting into a tile reads a register (no shuffles)",
             ncols > 1 ? "s" : "", cols.s);
    sb_free(&cols);
}

/* the estimate: declared values + temporaries + a fixed overhead for addresses, loop
 * counters, descriptors and the reductions' scratch */
/* ---- shared memory -------------------------------------------------------------------------- */

/* loads of y: found; nested: under a for (an if is fine: see load_conditions) */

static void find_loads(StmtList *l, Symbol *y, bool *found, bool *nested, int depth) {
    for (int i = 0; i < l->n; i++) {
        Stmt *st = l->v[i];
        if (st->kind == ST_ASSIGN && st->mv == MV_G2S && lhs_root(st->u.assign.lhs) == y) {
            *found = true;
            if (depth) *nested = true;
        }
        if (st->kind == ST_IF) {
            find_loads(&st->u.if_.then_s, y, found, nested, depth);
            find_loads(&st->u.if_.else_s, y, found, nested, depth);
        }
        if (st->kind == ST_FOR) find_loads(&st->u.for_.body, y, found, nested, depth + 1);
    }
}

/* c1 && c2 (either may be NULL: true), typed for the emitter */
static const Expr *cond_and(Lower *L, const Expr *a, const Expr *b) {
    if (!a) return b;
    if (!b) return a;
    Expr *e = ast_expr(L->a, EX_BINARY, b->span);
    e->u.bin.op = BIN_AND;
    e->u.bin.l = (Expr *)a;
    e->u.bin.r = (Expr *)b;
    e->ty = b->ty;
    return e;
}

static const Expr *cond_not(Lower *L, const Expr *c) {
    Expr *e = ast_expr(L->a, EX_UNARY, c->span);
    e->u.un.op = UN_NOT;
    e->u.un.e = (Expr *)c;
    e->ty = c->ty;
    return e;
}

/* the condition each load under an if runs under (the producer evaluates it: conditions of the
 * load and setup blocks are over scalars, the grid and the pipeline variable) */
static void load_conditions(Lower *L, StmtList *l, const Expr *cond, const IfPath *path) {
    for (int i = 0; i < l->n; i++) {
        Stmt *st = l->v[i];
        if (st->kind == ST_ASSIGN && st->mv == MV_G2S && cond) {
            LoadCond lc = {st, cond, path};
            vec_push(L->a, &L->load_conds, lc);
        }
        if (st->kind == ST_IF) {
            IfPath *then_p = ARENA_NEW(L->a, IfPath), *else_p = ARENA_NEW(L->a, IfPath);
            *then_p = (IfPath){st, false, path};
            *else_p = (IfPath){st, true, path};
            load_conditions(L, &st->u.if_.then_s, cond_and(L, cond, st->u.if_.cond), then_p);
            load_conditions(L, &st->u.if_.else_s, cond_and(L, cond, cond_not(L, st->u.if_.cond)), else_p);
        }
    }
}


static bool stmts_touch_shared(const StmtList *l, const Symbol *y, bool write) {
    for (int i = 0; i < l->n; i++) {
        const Stmt *st = l->v[i];
        switch (st->kind) {
        case ST_ASSIGN:
            if (write && st->mv == MV_R2S && lhs_root(st->u.assign.lhs) == y) return true;
            if (!write && (expr_mentions(st->u.assign.rhs, y) ||
                           (st->mv != MV_R2S && st->mv != MV_G2S && expr_mentions(st->u.assign.lhs, y))))
                return true;
            break;
        case ST_LET:
            if (!write && expr_mentions(st->u.let.e, y)) return true;
            break;
        case ST_IF:
            if (stmts_touch_shared(&st->u.if_.then_s, y, write) || stmts_touch_shared(&st->u.if_.else_s, y, write)) return true;
            break;
        case ST_FOR:
            if (stmts_touch_shared(&st->u.for_.body, y, write)) return true;
            break;
        case ST_EXPR: case ST_SCRATCH: break;
        }
    }
    return false;
}

/* does a consumer block (any but load) write (or read) the shared tile y? */
static bool consumers_touch(const SemaKernel *sk, const Symbol *y, bool write) {
    for (int b = 0; b < BK_COUNT; b++)
        if (sk->blocks[b] && b != BK_LOAD && stmts_touch_shared(&sk->blocks[b]->u.block.body, y, write)) return true;
    return false;
}

static void lower_buffers(Lower *L) {
    SemaKernel *sk = L->sk;
    PlanKernel *pk = L->pk;
    for (int i = 0; i < sk->shared.n; i++) {
        Symbol *y = sk->shared.v[i];
        if (y->ty.kind == TY_ERROR) continue;
        PlanBuf b = {.name = y->name, .sym = y, .dt = y->ty.dt, .group = -1, .copies = 1};
        bool in_load = false, in_setup = false, nested = false;
        if (sk->blocks[BK_LOAD]) find_loads(&sk->blocks[BK_LOAD]->u.block.body, y, &in_load, &nested, 0);
        if (sk->blocks[BK_SETUP]) find_loads(&sk->blocks[BK_SETUP]->u.block.body, y, &in_setup, &nested, 0);
        if (nested)
            diag_error(L->d, y->span,
                       "'%s' is loaded under a for; the sm_90a back end needs every TMA load of a step at the top "
                       "level of its block or under an if (a for would load the same tile several times)",
                       y->name);
        b.kind = in_load ? BUF_RING : in_setup ? BUF_ONCE : BUF_SCRATCH;
        if (b.kind == BUF_SCRATCH && !consumers_touch(sk, y, true) && consumers_touch(sk, y, false))
            diag_error(L->d, y->span,
                       "shared tile '%s' is read but nothing writes it: load it in setup or load (%s <- X[...]), "
                       "or move registers into it (%s <- value)",
                       y->name, y->name, y->name);
        if (b.kind == BUF_RING) {
            b.copies = pk->stages;
            BlockKind outside[] = {BK_SETUP, BK_FINISH};
            for (int k = 0; k < 2; k++)
                if (sk->blocks[outside[k]] && stmts_touch_shared(&sk->blocks[outside[k]]->u.block.body, y, false))
                    diag_error(L->d, y->span,
                               "'%s' is loaded every step (a ring of %d stages) but %s reads it; a ring tile exists only "
                               "during a step (compute and store): move it to registers or a shared tile there",
                               y->name, pk->stages, block_name[outside[k]]);
        }
        if (b.kind == BUF_ONCE) b.copies = pk->setup_stages;
        int eb = dtype_bytes[y->ty.dt];
        if (y->ty.complex) {
            diag_error(L->d, y->span, "complex shared tiles are not supported by the sm_90a back end yet");
            continue;
        }
        if (y->ty.kind == TY_VEC) {
            b.is_vec = true;
            b.rows = 1;
            b.cols = y->ty.rows;
            b.swz = SWZ_NONE;
            /* TMA loads it in 1-d boxes of at most 256 elements, each a multiple of 16 bytes (any
             * multiple of 16 elements is) starting 128-byte aligned in shared memory: one box when
             * the vector fits, else the widest that divides it in 128-byte multiples */
            b.atom_cols = b.cols;
            if (b.cols > TMA_BOX_MAX) {
                b.atom_cols = TMA_BOX_MAX;
                while (b.atom_cols > 0 && (b.cols % b.atom_cols || b.atom_cols * eb % 128)) b.atom_cols -= 16;
                if (b.atom_cols <= 0) {
                    diag_error(L->d, y->span,
                               "shared vector '%s' of %d elements takes more than one TMA box (at most %d elements), and "
                               "it does not split into boxes of a 128-byte multiple; use a length that is a multiple of %d",
                               y->name, b.cols, TMA_BOX_MAX, 128 / eb);
                    continue;
                }
            }
            b.natoms = b.cols / b.atom_cols;
            b.bytes = (b.cols * eb + 127) / 128 * 128;  /* copies (ring stages) start 128-byte aligned */
            b.align = 128;
        } else {
            buf_tile_layout(&b, y->ty.rows, y->ty.cols, eb);
            lower_note(L, "swizzle %s for '%s': a row is %d x %d B = %d B, so the widest span that divides it is %d B",
                 swizzle_name(b.swz), y->name, b.cols, eb, b.cols * eb, swizzle_bytes(b.swz));
        }
        vec_push(L->a, &pk->bufs, b);
    }
}

/* ---- entry ------------------------------------------------------------------------------------ */

/* the scalar lets of a block, translated */
static void block_scalar_lets(Lower *L, BlockKind bk, PStmtVec *v) {
    if (!L->sk->blocks[bk]) return;
    StmtList *l = &L->sk->blocks[bk]->u.block.body;
    for (int i = 0; i < l->n; i++) {
        const Stmt *st = l->v[i];
        if (st->kind != ST_LET) continue;
        TypeKind k = st->u.let.sym->ty.kind;
        if (k == TY_INT || k == TY_FLOAT) vec_push(L->a, v, lower_ps(L, st));
    }
}

/* the kernel's uniform values into the plan: lets, trip count, grid extents */
static void translate_uniforms(Lower *L) {
    SemaKernel *sk = L->sk;
    PlanKernel *pk = L->pk;
    for (int i = 0; i < sk->lets.n; i++) {
        const KItem *it = sk->lets.v[i];
        PStmt *ps = ps_new(L, PS_LET, it->span);
        ps->let = it->u.let.sym;
        ps->rhs = px_from_ast(L->a, it->u.let.e);
        vec_push(L->a, &pk->lets, ps);
    }
    block_scalar_lets(L, BK_SETUP, &pk->setup_lets);
    block_scalar_lets(L, BK_LOAD, &pk->load_lets);
    if (sk->pipe) pk->trips = px_from_ast(L->a, sk->pipe->u.pipe.trips);
    for (int i = 0; i < sk->axes.n; i++) vec_push(L->a, &pk->extents, px_from_ast(L->a, sk->axes.v[i]->extent));
    for (int i = 0; i < sk->args.n; i++) {
        const Arg *g = sk->args.v[i];
        PExpr **d = g->ts.ndims ? ARENA_NEW_N(L->a, PExpr *, g->ts.ndims) : NULL;
        for (int k = 0; k < g->ts.ndims; k++) d[k] = px_from_ast(L->a, g->ts.dims[k]);
        vec_push(L->a, &pk->arg_dims, d);
    }
    for (int i = 0; i < sk->requires.n; i++) vec_push(L->a, &pk->requires, px_from_ast(L->a, sk->requires.v[i]));
}

/* a vector that finish loads from global memory into registers: each thread loads its values one
 * at a time after the main loop, their latency in the epilogue (bench/RESULTS.md run 131: 5% of
 * linear_bias at 1024..16384 rows). Said, with the faster form, when the kernel has a pipeline */
static void note_finish_vec_loads_in(Lower *L, const POpList *ops) {
    for (int i = 0; i < ops->n; i++) {
        const POp *o = ops->v[i];
        if (o->kind == POP_IF) {
            note_finish_vec_loads_in(L, &o->then_ops);
            note_finish_vec_loads_in(L, &o->else_ops);
        }
        if (o->kind != POP_STMT || o->st->kind != PS_ASSIGN || o->st->mv != MV_G2R || o->st->lhs->ty.kind != TY_VEC)
            continue;
        lower_note(L, "'%s' in finish: each consumer thread loads its elements from global memory one by one after the "
                "main loop, their latency not hidden; a shared vector loaded in setup (by TMA, with the other setup "
                "tiles) and moved to registers in finish is faster",
                plan_stmt_str(L->a, o->st));
    }
}

static void note_finish_vec_loads(Lower *L) {
    if (!L->pk->rowwise) note_finish_vec_loads_in(L, &L->pk->finish_ops);
}

static PlanKernel *lower_kernel(Lower *L, SemaKernel *sk) {
    PlanKernel *pk = ARENA_NEW(L->a, PlanKernel);
    L->sk = sk;
    L->pk = pk;
    L->recip_noted = false;
    pk->sk = sk;
    pk->name = sk->k->name;
    pk->nbar_staging = pk->nbar_pingpong = pk->nbar_sync = pk->nbar_scratch = pk->nbar_scratch_wg = -1;
    pk->colred_buf = pk->colred_bar = pk->colred_wg_bar = -1;
    pk->rowscan_buf = pk->rowscan_bar = pk->rowscan_wg_bar = -1;
    check_support(L);
    if (L->d->nerrors > L->errors0) return pk;
    translate_uniforms(L);
    L->load_conds.n = 0;
    if (sk->blocks[BK_LOAD]) load_conditions(L, &sk->blocks[BK_LOAD]->u.block.body, NULL, NULL);
    if (sk->blocks[BK_SETUP]) load_conditions(L, &sk->blocks[BK_SETUP]->u.block.body, NULL, NULL);
    lower_roles(L);
    plan_rowwise(L);
    check_rowwise(L);
    if (L->d->nerrors > L->errors0) return pk;
    lower_zeroed(L);
    lower_regs(L);
    lower_buffers(L);
    for (int i = 0; i < sk->wg_runs.n; i++) {
        int l0, l1, c;
        diag_linecol(L->d, sk->wg_runs.v[i].span, &l0, &c);
        Span end = sk->wg_runs.v[i].span;
        end.begin = end.end > end.begin ? end.end - 1 : end.begin;
        diag_linecol(L->d, end, &l1, &c);
        lower_note(L, "slices at %s read wg: those statements are specialised per consumer warpgroup, one copy each "
                   "with its wg (%d copies under an if on wg, as if written out by hand)",
                   l0 == l1 ? arena_printf(L->a, "line %d", l0) : arena_printf(L->a, "lines %d-%d", l0, l1),
                   sk->wg_runs.v[i].consumers);
    }
    if (sk->blocks[BK_SETUP]) lower_stmts(L, &sk->blocks[BK_SETUP]->u.block.body, &pk->setup_ops, BK_SETUP);
    POpList body = {0};
    if (sk->blocks[BK_COMPUTE]) lower_stmts(L, &sk->blocks[BK_COMPUTE]->u.block.body, &body, BK_COMPUTE);
    if (sk->blocks[BK_STORE]) {
        /* the store block runs after compute in every step: its ops join the step's schedule */
        POpList st = {0};
        lower_stmts(L, &sk->blocks[BK_STORE]->u.block.body, &st, BK_STORE);
        for (int i = 0; i < st.n; i++) vec_push(L->a, &body, st.v[i]);
        if (st.n) lower_note(L, "the store block runs at the end of every step, after compute, in the same schedule");
    }
    if (sk->blocks[BK_FINISH]) lower_stmts(L, &sk->blocks[BK_FINISH]->u.block.body, &pk->finish_ops, BK_FINISH);
    if (L->d->nerrors > L->errors0) return pk;
    pk->compute_ops = body;
    plan_block_loads(L);
    lower_groups(L, &pk->compute_ops);
    fold_zero_fills(L);
    plan_wg_branch_bars(L);
    if (pk->pingpong && !pk->overlap) diag_error(L->d, sk->pipe->span, "pingpong = 1 needs overlap = 1");
    pk->step_ops = pk->compute_ops;
    pk->step_ops.v = ARENA_NEW_N(L->a, POp *, pk->compute_ops.n > 0 ? pk->compute_ops.n : 1);
    if (pk->compute_ops.n) memcpy(pk->step_ops.v, pk->compute_ops.v, sizeof(POp *) * (size_t)pk->compute_ops.n);
    pk->step_ops.cap = pk->step_ops.n;
    if (pk->overlap) apply_overlap(L);
    estimate_regs(L);
    plan_no_producer(L);
    /* two consumer warpgroups with large register tiles: the 240/24 split instead of 232/40 */
    if (pk->consumers == 2 && !pk->no_producer && !L->sk->producer_regs && !L->sk->consumer_regs && pk->reg_estimate > REG_HEAVY_ESTIMATE) {
        pk->producer_regs = 24;
        pk->consumer_regs = 240;
        pk->split_why = "heavy_consumers";
    }
    note_roles(L);
    if (!strcmp(pk->split_why, "heavy_consumers"))
        lower_note(L, "register split 240/24 rather than 232/40: the consumers' estimate (%d) is over %d", pk->reg_estimate,
             REG_HEAVY_ESTIMATE);
    check_reg_budget(L);
    collect_stores(L, &pk->compute_ops, BK_STORE); /* the store block's ops joined the step's */
    collect_stores(L, &pk->finish_ops, BK_FINISH);
    plan_colred(L);
    plan_rowred(L);
    plan_store_wgs(L, &pk->compute_ops, 0);
    check_wg_barriers(L);
    plan_store_wgs(L, &pk->finish_ops, 0);
    lower_staging(L);
    layout_smem(L);
    if (L->d->nerrors > L->errors0) return pk;
    /* setup and finish: products there are waited for before their results are used, and
     * before the block ends */
    schedule_block(L, &pk->setup_ops, false, "the setup block's products");
    schedule_block(L, &pk->finish_ops, true, "the finish block's products");
    /* consumers: setup (then wait for the setup tiles), the scheduled step, finish */
    POpList sched = {0}, first = {0}, after = {0};
    if (!pk->no_pipeline) schedule_compute(L, &pk->compute_ops, &first, &sched, &after);
    pk->first_ops = first;
    if (pk->overlap) {
        /* after the loop, the last deferred product */
        for (int i = 0; i < pk->compute_ops.n; i++) {
            POp *o = pk->compute_ops.v[i];
            if (o->kind != POP_MMA || !o->mma->deferred) continue;
            POp *w = pop_new(L, POP_WAIT_FULL);
            w->group = group_of_buf(pk, o->mma->b.buf);
            w->prev = true;
            w->skip_first = true;
            POp *tail = pop_new(L, POP_MMA);
            *tail = *o;
            tail->prev = true;
            tail->skip_first = true;
            tail->note = "the deferred product of the last step";
            POpList nafter = {0};
            vec_push(L->a, &nafter, w);
            vec_push(L->a, &nafter, tail);
            POp *w0 = pop_new(L, POP_WAIT_MMA);
            w0->n = 0;
            w0->note = "the last step's products";
            vec_push(L->a, &w0->done, tail);
            vec_push(L->a, &nafter, w0);
            POp *rel = pop_new(L, POP_RELEASE);
            rel->group = w->group;
            rel->prev = true;
            rel->skip_first = true;
            rel->note = "the last step's stage";
            vec_push(L->a, &nafter, rel);
            for (int j = 0; j < after.n; j++) {
                if (after.v[j]->kind != POP_WAIT_MMA) vec_push(L->a, &nafter, after.v[j]);
                else
                    for (int k = 0; k < after.v[j]->done.n; k++) vec_push(L->a, &w0->done, after.v[j]->done.v[k]);
            }
            after = nafter;
        }
    }
    pk->compute_ops = sched;
    pk->after_ops = after;
    /* setup tiles: wait before the loop (after setup's own statements), release after finish */
    for (int g = 0; g < pk->groups.n; g++) {
        if (!pk->groups.v[g].once) continue;
        bool waited = false; /* by schedule_block, before the setup op that first reads them */
        for (int i = 0; i < pk->setup_ops.n; i++)
            waited |= pk->setup_ops.v[i]->kind == POP_WAIT_FULL && pk->setup_ops.v[i]->group == g;
        POp *w = pop_new(L, POP_WAIT_FULL);
        w->group = g;
        /* before the first setup statement that reads the setup tiles, else at the end of setup */
        int at = pk->setup_ops.n;
        for (int i = 0; i < pk->setup_ops.n && at == pk->setup_ops.n; i++) {
            Effects e;
            op_effects(L, pk->setup_ops.v[i], &e);
            for (int j = 0; j < pk->groups.v[g].bufs.n; j++)
                if (symset_has(&e.bufs, pk->bufs.v[pk->groups.v[g].bufs.v[j]].sym)) at = i;
        }
        if (!waited) {
            vec_push(L->a, &pk->setup_ops, NULL);
            for (int i = pk->setup_ops.n - 1; i > at; i--) pk->setup_ops.v[i] = pk->setup_ops.v[i - 1];
            pk->setup_ops.v[at] = w;
        }
        POp *r = pop_new(L, POP_RELEASE);
        r->group = g;
        r->note = "the setup tiles are no longer read";
        bool finish_reads = false;
        for (int i = 0; i < pk->finish_ops.n; i++) {
            Effects e;
            op_effects(L, pk->finish_ops.v[i], &e);
            for (int j = 0; j < pk->groups.v[g].bufs.n; j++)
                finish_reads |= symset_has(&e.bufs, pk->bufs.v[pk->groups.v[g].bufs.v[j]].sym);
        }
        if (finish_reads) {
            vec_push(L->a, &pk->finish_ops, r);
            continue;
        }
        /* read only by the compute step: the last step releases the setup tiles as soon as its
         * readers are complete, so the producer loads the next work tile's setup tiles (and
         * then its first stages) under this tile's last step and epilogue */
        int at_first = release_point(L, &pk->first_ops, g), at_loop = release_point(L, &pk->compute_ops, g);
        if (at_first >= 0 && at_loop >= 0 && !ops_read_group(L, &pk->after_ops, g)) {
            insert_release(L, &pk->first_ops, at_first + 1, g);
            insert_release(L, &pk->compute_ops, at_loop + 1, g);
            r->no_steps = true;
            r->note = "no step ran, so no step released the setup tiles";
            pk->early_setup_release = true;
            /* first after the steps: before the lookahead (after the last product), whose wait
             * for the next tile's setup tiles needs this release when no step ran */
            vec_push(L->a, &pk->after_ops, NULL);
            for (int i = pk->after_ops.n - 1; i > 0; i--) pk->after_ops.v[i] = pk->after_ops.v[i - 1];
            pk->after_ops.v[0] = r;
            continue;
        }
        vec_push(L->a, &pk->after_ops, r);
    }
    if (pk->no_pipeline)
        lower_note(L, "no pipeline statement: each work tile runs setup, then finish, once; no ring, no steps, no ring "
                "barriers; %s",
             pk->groups.n ? "the producer loads the setup tiles once per work tile"
                          : "nothing is loaded, so there is no producer warpgroup");
    else
        lower_note(L, "pipeline: %d stage%s; the producer refills a stage as soon as every consumer warpgroup releases it",
             pk->stages, pk->stages == 1 ? "" : "s");
    if (pk->persistent)
        lower_note(L, "persistent grid: %s walks the work tiles; %s",
                   plan_persistent_per_sm(pk) > 1 ? arena_printf(L->a, "each of %d blocks per SM", plan_persistent_per_sm(pk))
                                                  : "one block per SM",
                   pk->no_pipeline && !pk->groups.n
                       ? "with nothing loaded by TMA there is no producer: each block loads its tiles' values itself"
                       : "stage and phase counters carry across tiles so the producer prefetches the next tile during the "
                         "epilogue");
    if (pk->setup_stages > 1)
        lower_note(L, "setup tiles in two copies (setup_stages = 2): work tile k reads copy k %% 2, so the producer loads the "
                "next tile's setup tiles as soon as the tile before this one released them, not after this one's last step");
    if (!pk->no_pipeline) plan_lookahead(L);
    if (pk->lookahead)
        lower_note(L, "lookahead: the first step's products for the next work tile are issued right after this tile's last "
                "products, before its finish, so the tensor cores work during the epilogue");
    else if (pk->no_lookahead)
        lower_note(L, "no lookahead (the next work tile's first products under this tile's finish): %s", pk->no_lookahead);
    if (!pk->no_pipeline) note_finish_vec_loads(L);
    note_colpicks(L);
    if (pk->early_setup_release)
        lower_note(L, "the setup tiles are released by the last step, once its products that read them are complete: the "
                "producer loads the next work tile's setup tiles during the last step and the finish block");
    plan_tail(L);
    plan_lazy_sums(L);
    plan_coalesce_bars(L);
    plan_merge_bars(L);
    plan_named_bars(L);
    plan_peel(L);
    plan_release_arrivals(L);
    plan_arg_strides(L);
    return pk;
}

bool lower_program(Arena *a, Diag *d, Program *p, SemaResult *sr, Plan *out) {
    (void)p;
    Lower L = {.a = a, .d = d, .errors0 = d->nerrors};
    for (int i = 0; i < sr->kernels.n; i++) {
        if (sr->kernels.v[i]->left_out) {
            const Kernel *k = sr->kernels.v[i]->k;
            vec_push(a, &out->left_out, arena_printf(a, "%s (if %s)", k->name, ast_expr_str(a, k->when)));
            continue;
        }
        PlanKernel *pk = lower_kernel(&L, sr->kernels.v[i]);
        /* the names the generated code writes differently (sema_names.c) come first: they were decided first */
        Vec(const char *) notes = {0};
        for (int j = 0; j < sr->renames.n; j++) {
            const SemaRename *rn = &sr->renames.v[j];
            if (rn->sk && rn->sk != pk->sk) continue;
            vec_push(a, &notes, arena_printf(a, "the .tk name '%s' is written '%s' in the generated code: it is %s", rn->tk_name,
                                             rn->sym->name, rn->why));
        }
        for (int j = 0; j < pk->notes.n; j++) vec_push(a, &notes, pk->notes.v[j]);
        pk->notes.v = notes.v;
        pk->notes.n = notes.n;
        pk->notes.cap = notes.cap;
        vec_push(a, &out->kernels, pk);
    }
    for (int i = 0; i < sr->entries.n; i++) vec_push(a, &out->entries, lower_entry(a, sr->entries.v[i], out));
    plan_pdl(a, out);
    return d->nerrors == L.errors0;
}
