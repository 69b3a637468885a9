/* emit_cuda.c - prints a verified plan as one self-contained .cu: the template fragments the
 * kernels use, one __global__ kernel per .tk kernel (producer warpgroup + consumer warpgroups:
 * the kernel skeleton, its tile loop and lookahead, written here) and an extern "C" host
 * launcher per kernel (emit_launch.c). The consumers' code comes from emit_elem.c (scalar and
 * elementwise expressions, register assignments), emit_store.c (stores, moves, relayouts, TMA
 * stores) and emit_ops.c (products and the op dispatch); emit_int.h is their shared state.
 * Invariant: no decisions are made here (they are in the plan); the output is a function of
 * the plan alone, so the same input gives the same bytes. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emit_int.h"

/* ---- emitter state ---------------------------------------------------------------------------- */



/* ---- the kernel ----------------------------------------------------------------------------------- */

static const char *let_ctype(const Symbol *y) { return y->ty.kind == TY_FLOAT ? "float" : "int"; }

static void emit_lets(Em *e) {
    for (int i = 0; i < e->pk->lets.n; i++) {
        const PStmt *st = e->pk->lets.v[i];
        L("const %s %s = %s;", let_ctype(st->let), st->let->name, scalar_str(e, st->rhs, false));
    }
}

/* lookahead: the next work tile's coordinates and lets, computed once for its first products and
 * carried into its iteration of the tile loop (tkc_next_<name>) instead of computed again there:
 * the carriers are declared before the first lookahead, stored by each, loaded by the loop */
typedef enum { NEXT_DECLARE, NEXT_STORE, NEXT_LOAD } NextCoords;

static void emit_next_coords(Em *e, NextCoords what) {
    const SemaKernel *sk = e->sk;
    for (int i = 0; i < sk->axes.n; i++) {
        const char *nm = sk->axes.v[i]->name;
        if (what == NEXT_DECLARE) L("int tkc_next_block_%s = 0;", nm);
        else if (what == NEXT_STORE) L("tkc_next_block_%s = block_%s;", nm, nm);
        else L("const int block_%s = tkc_next_block_%s;", nm, nm);
    }
    for (int i = 0; i < e->pk->lets.n; i++) {
        const Symbol *y = e->pk->lets.v[i]->let;
        if (what == NEXT_DECLARE) L("%s tkc_next_%s = 0;", let_ctype(y), y->name);
        else if (what == NEXT_STORE) L("tkc_next_%s = %s;", y->name, y->name);
        else L("const %s %s = tkc_next_%s;", let_ctype(y), y->name, y->name);
    }
    if (what == NEXT_LOAD)
        for (int i = 0; i < sk->axes.n; i++) L("(void)block_%s;", sk->axes.v[i]->name);
}

/* the fold of block_<nm> over the extent <ext>nm: last, first, second last, second, ... */
static void emit_fold(Em *e, const char *nm, const char *ext, const char *more) {
    L("block_%s = (block_%s & 1) ? block_%s / 2 : %s%s - 1 - block_%s / 2;  // folded: last, first, %s", nm, nm, nm, ext, nm,
      nm, more);
}

/* block_<axis> for the work tile whose index is in the variable `tile` */
static void emit_tile_coords(Em *e, const char *tile) {
    const PlanKernel *pk = e->pk;
    const SemaKernel *sk = e->sk;
    int n = sk->axes.n;
    for (int i = 0; i < n; i++) L("int block_%s;", sk->axes.v[i]->name);
    L("{");
    IN();
    L("int tkc_t = %s;%s", tile,
      pk->cluster > 1 ? arena_printf(e->a, "  // a cluster's work tile: the blocks of a cluster split axis %s",
                                     sk->axes.v[pk->cluster_axis]->name)
                      : "");
    if (pk->order == ORDER_ROW_MAJOR || n < 2) {
        L("// row-major: the last axis varies fastest");
        for (int i = n - 1; i >= 0; i--) {
            const char *nm = sk->axes.v[i]->name;
            if (i) L("block_%s = tkc_t %% tkc_wext_%s; tkc_t /= tkc_wext_%s;", nm, nm, nm);
            else L("block_%s = tkc_t;", nm);
        }
    } else {
        /* grouped order over the first two axes; further axes outermost */
        const char *a0 = sk->axes.v[0]->name, *a1 = sk->axes.v[1]->name;
        bool m = pk->order == ORDER_SUPER_M;
        const char *g = m ? a0 : a1, *o = m ? a1 : a0;
        L("// %s(%d): strips of %d %s-blocks walked column by column, for L2 reuse", m ? "super_m" : "super_n",
          pk->order_group, pk->order_group, g);
        if (n > 2) {
            L("const int tkc_plane = tkc_wext_%s * tkc_wext_%s;", a0, a1);
            L("int tkc_outer = tkc_t / tkc_plane; tkc_t %%= tkc_plane;");
            for (int i = n - 1; i >= 2; i--) {
                const char *nm = sk->axes.v[i]->name;
                if (i > 2) L("block_%s = tkc_outer %% tkc_wext_%s; tkc_outer /= tkc_wext_%s;", nm, nm, nm);
                else L("block_%s = tkc_outer;", nm);
            }
        }
        L("const int tkc_per_strip = %d * tkc_wext_%s;", pk->order_group, o);
        L("const int tkc_first = tkc_t / tkc_per_strip * %d;", pk->order_group);
        L("const int tkc_height = min(tkc_wext_%s - tkc_first, %d);", g, pk->order_group);
        L("block_%s = tkc_first + (tkc_t %% tkc_per_strip) %% tkc_height;", g);
        L("block_%s = (tkc_t %% tkc_per_strip) / tkc_height;", o);
    }
    bool cl = pk->cluster > 1;
    for (int i = 0; i < n; i++) {
        const char *nm = sk->axes.v[i]->name;
        if (sk->axes.v[i]->reversed) L("block_%s = tkc_wext_%s - 1 - block_%s;  // reversed: longest first", nm, nm, nm);
        if (sk->axes.v[i]->folded && !(cl && i == pk->cluster_axis))
            emit_fold(e, nm, "tkc_wext_", "second last, ...");
    }
    if (cl) {
        const Axis *ca = sk->axes.v[pk->cluster_axis];
        L("block_%s = block_%s * %d + (int)tkc_rank;  // this block's part of the cluster's tile", ca->name, ca->name,
          pk->cluster);
        if (ca->folded)  /* the fold of the whole axis: a cluster takes the pair it puts together */
            emit_fold(e, ca->name, "tkc_ext_", "...; with an odd extent both blocks of the last pair get the middle tile");
    }
    OUT();
    L("}");
    for (int i = 0; i < n; i++) L("(void)block_%s;", sk->axes.v[i]->name);
}

/* the work tile a block (a cluster) takes first, or after tkc_tile: the walk of emit_tile_loop */
static const char *walk_tile(Em *e, bool next) {
    int c = e->pk->cluster;
    if (e->pk->paired)
        return next ? "tkc_pair_walk(tkc_k + 1, blockIdx.x, gridDim.x, tkc_ntiles)"
                    : "tkc_pair_walk(0, blockIdx.x, gridDim.x, tkc_ntiles)";
    if (c > 1)
        return next ? arena_printf(e->a, "tkc_tile + (int)gridDim.x / %d", c) : arena_printf(e->a, "(int)blockIdx.x / %d", c);
    return next ? "tkc_tile + (int)gridDim.x" : "(int)blockIdx.x";
}

static void emit_tile_loop(Em *e) {
    int c = e->pk->cluster;
    if (e->pk->paired) {
        need(e, "tkc_sched.cuh", "pair_walk");
        L("// folded axis: each block takes neighbouring work tiles two at a time, a long one and its short partner");
        L("for (int tkc_k = 0, tkc_tile; (tkc_tile = tkc_pair_walk(tkc_k, blockIdx.x, gridDim.x, tkc_ntiles)) >= 0; ++tkc_k) {");
    } else if (c > 1)
        L("for (int tkc_tile = blockIdx.x / %d; tkc_tile < tkc_ntiles; tkc_tile += gridDim.x / %d) {", c, c);
    else
        L("for (int tkc_tile = blockIdx.x; tkc_tile < tkc_ntiles; tkc_tile += gridDim.x) {");
}

static void emit_load_stmt(Em *e, const PlanGroup *pg, const PlanLoad *pl, const char *bar) {
    const PlanKernel *pk = e->pk;
    const PlanBuf *b = &pk->bufs.v[pl->buf];
    const PlanMap *m = &pk->maps.v[pl->map];
    const PExpr *ix = pl->st->rhs;
    int n = ix->nix;
    L("// %s <- %s  (%d box%s of %d x %d)", b->name, px_str(e->a, ix), b->natoms, b->natoms == 1 ? "" : "es",
      m->box[1], m->box[0]);
    const char *dst = buf_addr(e, pl->buf, false);
    (void)pg;
    if (m->rank == 1) need(e, "tkc_ptx.cuh", "tma_load_1d");
    int box_bytes = b->rows * b->atom_cols * dtype_bytes[b->dt];
    for (int a = 0; a < b->natoms; a++) {
        StrBuf co;
        sb_init(&co);
        if (b->is_vec) {
            sb_printf(&co, "%s", move_coord(e, ix->ix[n - 1].lo, b->cols));
            if (a) sb_printf(&co, " + %d", a * b->atom_cols);
            for (int i = n - 2; i >= 0; i--) sb_printf(&co, ", %s", scalar_str(e, ix->ix[i].lo, false));
        } else {
            sb_printf(&co, "%s, %s", move_coord_plus(e, ix->ix[n - 1].lo, b->cols, a * b->atom_cols),
                      move_coord(e, ix->ix[n - 2].lo, b->rows));
            for (int i = n - 3; i >= 0; i--) sb_printf(&co, ", %s", scalar_str(e, ix->ix[i].lo, false));
        }
        const char *off = a ? arena_printf(e->a, " + %d", a * box_bytes) : "";
        if (pl->multicast) {
            int who = b->natoms >= pk->cluster ? a % pk->cluster : 0;
            need(e, "tkc_ptx.cuh", "cluster");
            L("if (tkc_rank == %d) tkc_tma_load_%dd_mc(%s%s, &%s, %s, %s, 0x%x);  // into every block of the cluster", who,
              m->rank, dst, off, m->name, co.s, bar, (1u << pk->cluster) - 1);
        } else {
            L("tkc_tma_load_%dd(%s%s, &%s, %s, %s);", m->rank, dst, off, m->name, co.s, bar);
        }
        sb_free(&co);
    }
}

/* the bytes a group's full barrier expects this phase: all its tiles, less those of loads whose
 * condition does not hold (the producer arrives either way, so the consumers' wait returns) */
static const char *group_tx(Em *e, const PlanGroup *pg) {
    int base = 0;
    StrBuf b;
    sb_init(&b);
    for (int i = 0; i < pg->loads.n; i++) {
        const PlanLoad *pl = &pg->loads.v[i];
        int bytes = plan_buf_tx_bytes(&e->pk->bufs.v[pl->buf]);
        if (!pl->cond) base += bytes;
        else sb_printf(&b, " + ((%s) ? %d : 0)", scalar_str(e, pl->cond, false), bytes);
    }
    const char *r = b.len ? arena_printf(e->a, "%d%s", base, b.s) : arena_printf(e->a, "%d", pg->bytes);
    sb_free(&b);
    return r;
}

/* a load, under its if when it has a condition (--line-directives: the .tk line covers the load's
 * own comment and code, inside the if) */
static void emit_cond_load(Em *e, const PlanGroup *pg, const PlanLoad *pl, const char *bar) {
    if (pl->cond) {
        L("if (%s) {  // a load under an if", scalar_str(e, pl->cond, false));
        IN();
    }
    line_to_tk(e, pl->st->span);
    emit_load_stmt(e, pg, pl, bar);
    line_back(e);
    if (pl->cond) {
        OUT();
        L("}");
    }
}

/* the end of a work tile: the next one uses the other copy of the setup tiles (setup_stages = 2),
 * and the phase of their barriers flips once both copies were used */
static void emit_next_setup_slot(Em *e) {
    if (e->pk->setup_stages > 1) L("if (++tkc_setup_slot == 2) { tkc_setup_slot = 0; tkc_tile_phase ^= 1; }");
    else L("tkc_tile_phase ^= 1;");
}

/* the producer computes the block's scalar lets too, where its loads may use them */
static void emit_scalar_lets(Em *e, const PStmtVec *l) {
    for (int i = 0; i < l->n; i++) {
        const Symbol *y = l->v[i]->let;
        L("const %s %s = %s;", y->ty.kind == TY_FLOAT ? "float" : "int", y->name, scalar_str(e, l->v[i]->rhs, false));
    }
}

static void emit_producer(Em *e) {
    const PlanKernel *pk = e->pk;
    const SemaKernel *sk = e->sk;
    need(e, "tkc_ptx.cuh", "tma_load");
    need(e, "tkc_ptx.cuh", "setmaxnreg");
    if (!pk->groups.n) {
        L("// ---- producer warpgroup: nothing to load; it gives its registers to the consumers ----");
        L("tkc_setmaxnreg_dec<%d>();", pk->producer_regs);
        return;
    }
    L("// ---- producer warpgroup: one thread issues every TMA load ----");
    L("tkc_setmaxnreg_dec<%d>();", pk->producer_regs);
    L("if (threadIdx.x == 0) {");
    IN();
    for (int i = 0; i < pk->maps.n; i++)
        if (!pk->maps.v[i].store) L("tkc_tma_prefetch_map(&%s);", pk->maps.v[i].name);
    L("int tkc_%stile_phase = 0;", pk->no_pipeline ? "" : "stage = 0, tkc_phase = 0, tkc_");
    if (pk->setup_stages > 1) L("int tkc_setup_slot = 0;  // the copy of the setup tiles this work tile uses");
    emit_tile_loop(e);
    IN();
    emit_tile_coords(e, "tkc_tile");
    emit_lets(e);
    emit_scalar_lets(e, &e->pk->setup_lets);
    for (int g = 0; g < pk->groups.n; g++) {
        const PlanGroup *pg = &pk->groups.v[g];
        if (!pg->once) continue;
        if (pk->setup_stages > 1)
            L("// setup tiles, once per work tile: wait until the consumers are done with this copy's last ones "
              "(two tiles back)");
        else L("// setup tiles, once per work tile: wait until the consumers are done with the last ones");
        L("tkc_mbar_wait(%s, tkc_tile_phase ^ 1);", group_bar(e, g, false, false));
        L("tkc_mbar_expect_tx(%s, %s);", group_bar(e, g, true, false), group_tx(e, pg));
        for (int i = 0; i < pg->loads.n; i++) {
            emit_cond_load(e, pg, &pg->loads.v[i], group_bar(e, g, true, false));
        }
    }
    if (pk->no_pipeline) {
        L("// no pipeline: nothing is loaded per step");
        emit_next_setup_slot(e);
        OUT();
        L("}");
        OUT();
        L("}");
        return;
    }
    L("const int tkc_steps = %s;", scalar_str(e, e->pk->trips, false));
    L("for (int %s = 0; %s < tkc_steps; ++%s) {", sk->loopvar->name, sk->loopvar->name, sk->loopvar->name);
    IN();
    emit_scalar_lets(e, &e->pk->load_lets);
    for (int g = 0; g < pk->groups.n; g++) {
        const PlanGroup *pg = &pk->groups.v[g];
        if (pg->once) continue;
        L("tkc_mbar_wait(%s + 8 * tkc_stage, tkc_phase ^ 1);  // the consumers released this stage", pk->bars.v[pg->empty].name);
        L("tkc_mbar_expect_tx(%s + 8 * tkc_stage, %s);", pk->bars.v[pg->full].name, group_tx(e, pg));
        for (int i = 0; i < pg->loads.n; i++) {
            emit_cond_load(e, pg, &pg->loads.v[i], arena_printf(e->a, "%s + 8 * tkc_stage", pk->bars.v[pg->full].name));
        }
    }
    L("if (++tkc_stage == %d) { tkc_stage = 0; tkc_phase ^= 1; }", pk->stages);
    OUT();
    L("}");
    emit_next_setup_slot(e);
    OUT();
    L("}");
    OUT();
    L("}");
}

/* lookahead: a work tile's first products (the head of the first step), issued before the
 * previous tile's finish (or before the tile loop, for the first tile). The products are issued
 * unconditionally, so every path through the tile loop carries exactly one group in flight into
 * the wait that starts the next tile: ptxas keeps the products asynchronous only when it can
 * follow them that way. Without a next tile (or one without steps) the products read whatever
 * the buffers hold and their result is never read; the barrier waits and the pingpong turns run
 * only for a real tile. The tile's coordinates and lets shadow the current tile's in the block. */
static void emit_lookahead(Em *e, const char *tile, const char *phase) {
    const PlanKernel *pk = e->pk;
    const SemaKernel *sk = e->sk;
    L("{");
    IN();
    L("const int tkc_ahead = %s;  // the work tile whose first products are issued here", tile);
    L("int tkc_has = 0;  // a real tile with at least one step");
    L("if (tkc_ahead >= 0 && tkc_ahead < tkc_ntiles) {");
    IN();
    emit_tile_coords(e, "tkc_ahead");
    emit_lets(e);
    emit_next_coords(e, NEXT_STORE);
    L("tkc_has = (%s) > 0;", scalar_str(e, e->pk->trips, false));
    OUT();
    L("}");
    L("const int %s = 0;", sk->loopvar->name);
    L("(void)%s;", sk->loopvar->name);
    int mode = e->mode;
    e->mode = STEP_FIRST;
    /* the products unconditionally; runs of other ops (barrier waits, pingpong turns) for real tiles */
    L("if (tkc_has) {");
    IN();
    for (int g = 0; g < pk->groups.n; g++)
        if (pk->groups.v[g].once) L("tkc_mbar_wait(%s, %s);  // %s landed", group_bar(e, g, true, false), phase, pk->groups.v[g].name);
    bool open = true;
    for (int i = 0; i < pk->ahead_head; i++) {
        const POp *o = pk->first_ops.v[i];
        if ((o->kind == POP_MMA) == open) {
            if (open) {
                OUT();
                L("}");
            } else {
                L("if (tkc_has) {");
                IN();
            }
            open = !open;
        }
        emit_op(e, o);
    }
    if (open) {
        OUT();
        L("}");
    }
    e->mode = mode;
    OUT();
    L("}");
}

/* the end of a pipeline step: this stage becomes the previous one, and the ring moves on */
static void emit_stage_advance(Em *e) {
    L("tkc_prev_stage = tkc_stage;");
    L("tkc_prev_phase = tkc_phase;");
    L("if (++tkc_stage == %d) { tkc_stage = 0; tkc_phase ^= 1; }", e->pk->stages);
}

static void emit_consumer_finish(Em *e);
static void emit_consumer(Em *e) {
    const PlanKernel *pk = e->pk;
    const SemaKernel *sk = e->sk;
    if (pk->no_producer) {
        L("// ---- consumer warpgroups (no producer: nothing to load) ----");
        L("const int wg = threadIdx.x / 128;              // consumer index");
    } else {
        L("// ---- consumer warpgroups ----");
        L("tkc_setmaxnreg_inc<%d>();", pk->consumer_regs);
        L("const int wg = tkc_wgi - 1;                    // consumer index");
    }
    L("const int tkc_wg_thread = threadIdx.x %% 128;");
    L("const int tkc_warp = tkc_wg_thread / 32, tkc_lane = threadIdx.x %% 32;");
    L("const int tkc_lrow = 16 * tkc_warp + tkc_lane / 4;  // this thread's first row in a 64-row block");
    L("const int tkc_lcol = 2 * (tkc_lane %% 4);            // and its first column in an 8-column slab");
    L("(void)tkc_lrow; (void)tkc_lcol; (void)tkc_warp;");
    if (pk->rowwise) {
        L("const int tkc_rwarp = wg * 4 + tkc_warp;  // the row layout's warp: %d consumer warps, %d per row", pk->rw.warps,
          pk->rw.split);
        L("(void)tkc_rwarp;");
    }
    for (int i = 0; i < pk->regs.n; i++) {
        const Symbol *y = pk->regs.v[i].sym;
        if (y->kind == SYM_LET) continue; /* declared where the let is */
        L("%s", reg_decl(e, y));
    }
    if (pk->tail) {
        L("// the narrow last step's copies (live only while '%s' and '%s' are not)", pk->tail->s->name, pk->tail->op->name);
        L("%s", reg_decl(e, pk->tail->s_narrow));
        L("%s", reg_decl(e, pk->tail->op_narrow));
    }
    if (pk->pingpong) {
        need(e, "tkc_ptx.cuh", "named_barrier");
        L("if (wg == %d) tkc_bar_arrive(%d, 256);  // pingpong: consumer 0 goes first", pk->consumers - 1,
          pk->nbars.v[pk->nbar_pingpong].id);
    }
    if (pk->rowred_buf >= 0)
        L("uint32_t tkc_rowred_copy = 0;  // the copy of 'rowred' the next row reduction writes (they alternate)");
    if (pk->block_ops.n) {
        L("// once per block: loads that are the same for every work tile (the values stay in registers)");
        e->mode = STEP_NONE;
        emit_ops(e, &pk->block_ops);
    }
    L("int %stkc_tile_phase = 0, tkc_st_cnt = 0;", pk->no_pipeline ? "" : "tkc_stage = 0, tkc_phase = 0, ");
    L("(void)tkc_st_cnt;");
    if (pk->setup_stages > 1) L("int tkc_setup_slot = 0;  // the copy of the setup tiles this work tile reads");
    if (pk->lookahead) {
        L("// each work tile's coordinates and lets, computed where its first products are issued");
        emit_next_coords(e, NEXT_DECLARE);
        L("// lookahead: the first tile's first products; every later tile's are issued before the finish of the one before");
        emit_lookahead(e, walk_tile(e, false), "tkc_tile_phase");
    }
    emit_tile_loop(e);
    IN();
    if (pk->lookahead) {
        L("// coordinates and lets: from the lookahead that issued this tile's first products");
        emit_next_coords(e, NEXT_LOAD);
    } else {
        emit_tile_coords(e, "tkc_tile");
        emit_lets(e);
    }
    L("// setup");
    e->mode = STEP_NONE;
    emit_ops(e, &pk->setup_ops);
    if (pk->no_pipeline) {
        L("// no pipeline: finish follows setup");
        emit_ops(e, &pk->after_ops);
        emit_consumer_finish(e);
        return;
    }
    L("const int tkc_steps = %s;", scalar_str(e, e->pk->trips, false));
    L("int tkc_prev_stage = 0, tkc_prev_phase = 0;");
    L("(void)tkc_prev_stage; (void)tkc_prev_phase;");
    if (pk->lookahead) {
        e->mode = STEP_FIRST;
        emit_op(e, pk->first_ops.v[pk->ahead_head]);
        e->mode = STEP_NONE;
    }
    if (pk->peel_first) {
        L("if (tkc_steps > 0) {  // the first step, on its own: it has no previous step%s",
          pk->lookahead ? " (its first products were issued before)" : "");
        IN();
        L("const int %s = 0;", sk->loopvar->name);
        L("(void)%s;", sk->loopvar->name);
        e->mode = STEP_FIRST;
        if (pk->lookahead) emit_op_range(e, &pk->first_ops, pk->ahead_head + 1, pk->first_ops.n);
        else emit_ops(e, &pk->first_ops);
        emit_stage_advance(e);
        OUT();
        L("}");
    }
    const char *jv = sk->loopvar->name;
    if (pk->tail) {
        const PlanTail *t = pk->tail;
        L("int tkc_narrow = 0;  // the last step leaves at most %d columns of %s unmasked: it runs on %s and %s", t->cols,
          t->s->name, t->s_narrow->name, t->op_narrow->name);
        L("if (tkc_steps > 1) {");
        IN();
        L("const int %s = tkc_steps - 1;", jv);
        StrBuf c;
        sb_init(&c);
        sb_printf(&c, "%s - %s <= %d", scalar_str(e, t->bound, false), scalar_str(e, t->jw, false), t->cols);
        if (t->guard) sb_printf(&c, " && %s", scalar_str(e, t->guard, false));
        for (int i = 0; i < t->scales.n; i++) sb_printf(&c, " && %s > 0.f", scalar_str(e, t->scales.v[i], false));
        L("tkc_narrow = %s;", c.s);
        sb_free(&c);
        OUT();
        L("}");
    }
    L("for (int %s = %d; %s < tkc_steps%s; ++%s) {  // %s", jv, pk->peel_first ? 1 : 0, jv, pk->tail ? " - tkc_narrow" : "", jv,
      pk->peel_first ? "the steady state" : "every step");
    IN();
    e->mode = STEP_LOOP;
    emit_ops(e, &pk->compute_ops);
    emit_stage_advance(e);
    OUT();
    L("}");
    if (pk->tail) {
        L("if (tkc_narrow) {  // the last step, on %d columns: the masked ones would add nothing", pk->tail->cols);
        IN();
        L("const int %s = tkc_steps - 1;", jv);
        e->nar = pk->tail;
        emit_ops(e, &pk->compute_ops);
        e->nar = NULL;
        emit_stage_advance(e);
        OUT();
        L("}");
    }
    e->mode = STEP_NONE;
    L("// after the steps");
    if (pk->lookahead) {
        emit_op_range(e, &pk->after_ops, 0, pk->ahead_split);
        L("// lookahead: the next work tile's first products, run by the tensor cores during this tile's finish");
        if (pk->setup_stages > 1) e->slot = "(tkc_setup_slot ^ 1)";  /* the next tile's copy */
        emit_lookahead(e, walk_tile(e, true), pk->setup_stages > 1 ? "tkc_tile_phase ^ tkc_setup_slot" : "tkc_tile_phase ^ 1");
        e->slot = "tkc_setup_slot";
        emit_op_range(e, &pk->after_ops, pk->ahead_split, pk->after_ops.n);
    } else {
        emit_ops(e, &pk->after_ops);
    }
    for (int i = 0; i < pk->compute_ops.n; i++) {
        const POp *o = pk->compute_ops.v[i];
        if (o->kind == POP_MMA && o->mma->zero_first) {
            L("if (tkc_steps == 0) {  // no product ran: %s keeps its zero fill", o->mma->dst->name);
            IN();
            L("#pragma unroll");
            L("for (int tkc_i = 0; tkc_i < %d; ++tkc_i) %s[tkc_i] = 0.f;", frag_count(pk, &o->mma->dst->ty), o->mma->dst->name);
            OUT();
            L("}");
        }
    }
    emit_consumer_finish(e);
}

/* the finish block of a work tile, the end of the tile loop, and what the block waits for before it exits */
static void emit_consumer_finish(Em *e) {
    const PlanKernel *pk = e->pk;
    L("// finish");
    for (int i = 0; i < pk->lazy_sums.n; i++) {
        const Symbol *y = pk->lazy_sums.v[i];
        L("#pragma unroll");
        L("for (int tkc_r = 0; tkc_r < %d; ++tkc_r) {  // %s: add the partial sums of the 4 lanes of each row's quad",
          2 * (rows_wg(pk, &y->ty) / 64), y->name);
        IN();
        for (int sh = 1; sh <= 2; sh *= 2) L("%s[tkc_r] += __shfl_xor_sync(0xffffffffu, %s[tkc_r], %d);", y->name, y->name, sh);
        OUT();
        L("}");
    }
    emit_ops(e, &pk->finish_ops);
    emit_next_setup_slot(e);
    OUT();
    L("}");
    if (pk->lookahead) L("tkc_wgmma_wait<0>();  // the lookahead products issued after the last tile (never read)");
    if (pk->staging_buf >= 0 || pk->tma_stores)
        L("if (tkc_wg_thread == 0) tkc_bulk_wait<0>();  // every store has landed before the block exits");
}


static void emit_kernel(Em *e) {
    const PlanKernel *pk = e->pk;
    const SemaKernel *sk = e->sk;
    need(e, "tkc_ptx.cuh", "smem");
    need(e, "tkc_ptx.cuh", "mbarrier");
    /* the plan as a comment */
    char *plan = plan_dump_kernel(pk);
    L("// ================================================================================================");
    L("// kernel %s: the plan tkc chose (tkc --emit=plan prints the same)", pk->name);
    L("// ================================================================================================");
    for (char *p = plan; *p;) {
        char *nl = strchr(p, '\n');
        if (!nl) nl = p + strlen(p);
        L("// %.*s", (int)(nl - p), p);
        p = *nl ? nl + 1 : nl;
    }
    free(plan);
    StrBuf params;
    sb_init(&params);
    kernel_params(e, &params, true);
    L("__global__ void __launch_bounds__(%d, %d) tkc_%s_kernel(%s) {", pk->threads, pk->min_blocks > 0 ? pk->min_blocks : 1,
      pk->name, params.s);
    sb_free(&params);
    IN();
    L("extern __shared__ __align__(1024) unsigned char tkc_smem_raw[];");
    L("unsigned char *const tkc_smem = tkc_align_smem(tkc_smem_raw);");
    L("// shared memory map");
    for (int i = 0; i < pk->bufs.n; i++) {
        const PlanBuf *b = &pk->bufs.v[i];
        L("const uint32_t %s_smem = tkc_smem_addr(tkc_smem + %d);  // %s %s[%d, %d], swizzle %s, %d x %d B", b->name, b->offset,
          bufkind_name[b->kind], dtype_name[b->dt], b->rows, b->cols, swizzle_name(b->swz), b->copies, b->bytes);
    }
    for (int i = 0; i < pk->bars.n; i++) {
        const PlanBarrier *b = &pk->bars.v[i];
        L("const uint32_t %s = tkc_smem_addr(tkc_smem + %d);  // %d mbarrier%s", b->name, b->offset, b->copies,
          b->copies == 1 ? "" : "s");
    }
    L("if (threadIdx.x == 0) {");
    IN();
    for (int i = 0; i < pk->bars.n; i++) {
        const PlanBarrier *b = &pk->bars.v[i];
        if (b->copies == 1) L("tkc_mbar_init(%s, %d);", b->name, b->count);
        else L("for (int tkc_s = 0; tkc_s < %d; ++tkc_s) tkc_mbar_init(%s + 8 * tkc_s, %d);", b->copies, b->name, b->count);
    }
    L("tkc_mbar_init_fence();");
    OUT();
    L("}");
    L("__syncthreads();");
    if (pk->cluster > 1) {
        need(e, "tkc_ptx.cuh", "cluster");
        L("const uint32_t tkc_rank = tkc_cluster_rank();  // this block's place in its cluster of %d", pk->cluster);
        L("tkc_cluster_sync();  // every block's barriers exist before any multicast lands");
    }
    if (pk->pdl_trigger || pk->pdl_wait) need(e, "tkc_ptx.cuh", "grid_dep");
    if (pk->pdl_trigger)
        L("tkc_grid_dep_launch();  // plan: the kernel an entry launches next may start now (programmatic dependent launch)");
    if (pk->pdl_wait)
        L("tkc_grid_dep_wait();  // plan: an entry may start this kernel early; the grid before it has ended past here");
    for (int i = 0; i < sk->axes.n; i++) {
        const char *nm = sk->axes.v[i]->name;
        L("const int tkc_ext_%s = %s;", nm, scalar_str(e, e->pk->extents.v[i], false));
        if (i == pk->cluster_axis && pk->cluster > 1)
            L("const int tkc_wext_%s = tkc_cdiv(tkc_ext_%s, %d);  // the walk counts clusters along %s", nm, nm, pk->cluster, nm);
        else
            L("const int tkc_wext_%s = tkc_ext_%s;", nm, nm);
    }
    StrBuf nt;
    sb_init(&nt);
    for (int i = 0; i < sk->axes.n; i++) sb_printf(&nt, "%stkc_wext_%s", i ? " * " : "", sk->axes.v[i]->name);
    L("const int tkc_ntiles = %s;  // work tiles%s", nt.s ? nt.s : "1", pk->cluster > 1 ? " (one per cluster)" : "");
    sb_free(&nt);
    if (pk->no_producer) {
        emit_consumer(e);
    } else {
        L("const int tkc_wgi = threadIdx.x / 128;  // warpgroup: 0 = producer, 1.. = consumers");
        L("if (tkc_wgi == 0) {");
        IN();
        emit_producer(e);
        OUT();
        L("} else {");
        IN();
        emit_consumer(e);
        OUT();
        L("}");
    }
    if (pk->cluster > 1)
        L("tkc_cluster_sync();  // no block leaves while a peer may still multicast into it or arrive on its barriers");
    OUT();
    L("}");
}

/* ---- the file --------------------------------------------------------------------------------------- */

static void put_fragment(StrBuf *out, const char *file, const char *frag) {
    size_t len;
    const char *t = template_fragment(file, frag, &len);
    if (!t) {
        sb_printf(out, "#error \"tkc: template fragment %s/%s is missing\"\n", file, frag);
        return;
    }
    sb_putn(out, t, len);
}

/* the file's opening, which every variant of a dispatched program shares: what generated it,
 * the includes and macros, the stream type and the status codes */
void emit_cuda_head(StrBuf *out, const Plan *p, const EmitOptions *o, const char *api_note) {
    const char *base = path_base(o->source_path);
    sb_printf(out, "// Generated by tkc %s from %s. Do not edit: change the .tk and run tkc again.\n", o->tkc_version, base);
    sb_puts(out, "// Build: nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -c THIS.cu (needs only the CUDA toolkit).\n");
    sb_puts(out, "// Host API (extern \"C\"):");
    for (int i = 0; i < p->kernels.n; i++) sb_printf(out, " tkc_%s()", p->kernels.v[i]->name);
    for (int i = 0; i < p->entries.n; i++) sb_printf(out, " tkc_%s() (entry)", p->entries.v[i]->name);
    sb_puts(out, "; each returns TKC_OK (0) or a TKC_ERR_* code.\n");
    for (int i = 0; i < p->left_out.n; i++)
        sb_printf(out, "// Left out of this build (its condition is false for these params): kernel %s.\n", p->left_out.v[i]);
    if (api_note) sb_puts(out, api_note);
    sb_putc(out, '\n');
    put_fragment(out, "tkc_ptx.cuh", "prelude");
    sb_puts(out, "\n" API_STREAM_TYPEDEF_CXX);
    sb_puts(out, "\n#ifndef TKC_STATUS_CODES\n#define TKC_STATUS_CODES\nenum {\n");
#define X(n, v, m) sb_printf(out, "    %s = %d,  // %s\n", #n, v, m);
    TK_STATUS(X)
#undef X
    sb_puts(out, "};\n#endif\n\n");
    sb_puts(out, "// the template library carries helpers a given kernel may not use\n#pragma nv_diag_suppress 177\n#pragma nv_diag_suppress 550\n\n");
}

/* the template fragments a program's kernels use (frags, in a fixed order: tkc_ptx.cuh's as they
 * appear in the file, tkc_sched.cuh's, tkc_layout.cuh's and tkc_philox.cuh's, then the wgmma
 * shapes sorted by name) and the host helpers of the launchers: once per file, whatever the
 * number of variants that use them */
void emit_cuda_shared(Arena *a, StrBuf *out, const FragVec *frags) {
    static const char *const order[] = {"smem",       "mbarrier",   "tma_load",      "tma_load_1d", "cluster",  "tma_store", "proxy_fence", "grid_dep",
                                        "tma_reduce", "wgmma_sync", "setmaxnreg",    "named_barrier", "shared_f32", "stmatrix",
                                        "ldmatrix",   "shared_v2",  "math",          "red",         "rows_edge", "zero",      "scratch",   "host",
                                        "launch_pdl", "stage"};
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++)
        for (int i = 0; i < frags->n; i++)
            if (!strcmp(frags->v[i].name, order[k]) && !strcmp(frags->v[i].file, "tkc_ptx.cuh")) {
                put_fragment(out, "tkc_ptx.cuh", order[k]);
                sb_putc(out, '\n');
            }
    for (int i = 0; i < frags->n; i++)
        if (!strcmp(frags->v[i].file, "tkc_sched.cuh") || !strcmp(frags->v[i].file, "tkc_layout.cuh") ||
            !strcmp(frags->v[i].file, "tkc_philox.cuh")) {
            put_fragment(out, frags->v[i].file, frags->v[i].name);
            sb_putc(out, '\n');
        }
    const char **w = ARENA_NEW_N(a, const char *, frags->n);
    int nw = 0;
    for (int i = 0; i < frags->n; i++)
        if (!strcmp(frags->v[i].file, "wgmma.cuh")) w[nw++] = frags->v[i].name;
    for (int i = 1; i < nw; i++)
        for (int j = i; j > 0 && strcmp(w[j - 1], w[j]) > 0; j--) {
            const char *t = w[j];
            w[j] = w[j - 1];
            w[j - 1] = t;
        }
    for (int i = 0; i < nw; i++) {
        put_fragment(out, "wgmma.cuh", w[i]);
        sb_putc(out, '\n');
    }
    sb_puts(out, "// one element of a global tensor, as a scalar (kernel-level lets)\n");
    sb_puts(out, "__device__ __forceinline__ float tkc_load_f32(const float *p, long long i) { return p[i]; }\n");
    sb_puts(out, "__device__ __forceinline__ float tkc_load_f32(const __nv_bfloat16 *p, long long i) { return __bfloat162float(p[i]); }\n");
    sb_puts(out, "__device__ __forceinline__ float tkc_load_f32(const __half *p, long long i) { return __half2float(p[i]); }\n");
    sb_puts(out, "__device__ __forceinline__ int tkc_load_f32(const int *p, long long i) { return p[i]; }\n");
    sb_puts(out, "// Element strides of a tensor (NULL: contiguous), each at least 1 (what TMA needs besides:\n"
                  "// tkc_tma_layout)\n"
                  "[[maybe_unused]] static bool tkc_strides(int64_t *st, const int64_t *given, const int64_t *dims, int rank) {\n"
                  "    int64_t c = 1;\n"
                  "    for (int d = rank - 1; d >= 0; --d) {\n"
                  "        st[d] = given ? given[d] : c;\n"
                  "        c *= dims[d];\n"
                  "        if (st[d] < 1) return false;\n"
                  "    }\n"
                  "    return true;\n"
                  "}\n");
    sb_puts(out, "[[maybe_unused]] static inline long long tkc_h_cdiv(long long a, long long b) { return (a + b - 1) / b; }\n");
    sb_puts(out, "[[maybe_unused]] static inline long long tkc_h_min(long long a, long long b) { return a < b ? a : b; }\n");
    sb_puts(out, "[[maybe_unused]] static inline long long tkc_h_max(long long a, long long b) { return a > b ? a : b; }\n\n");
}

/* the program's params, the fragments its kernels use, the host helpers and the kernels (in an
 * anonymous namespace), then the extern "C" launchers. For a variant of a dispatched program
 * (shared set), the launchers are plain C++ functions of the variant's namespace, and the
 * fragments and helpers are not written but added to shared (the dispatched file writes them
 * once, ahead of every variant) */
void emit_cuda_body(Arena *a, StrBuf *out, const Plan *p, const Program *prog, const EmitOptions *o, FragVec *shared,
                    const char *ns) {
    Em em = {.a = a, .o = o, .slot = "tkc_setup_slot", .ns = ns};
    Em *e = &em;
    StrBuf body;
    sb_init(&body);
    e->b = &body;
    for (int i = 0; i < p->kernels.n; i++) {
        e->pk = p->kernels.v[i];
        e->sk = e->pk->sk;
        if (i) sb_blank(&body);
        emit_kernel(e);
    }
    StrBuf launch;
    sb_init(&launch);
    e->b = &launch;
    for (int i = 0; i < p->kernels.n; i++) {
        e->pk = p->kernels.v[i];
        e->sk = e->pk->sk;
        sb_blank(&launch);
        emit_launcher(e);
    }
    e->pk = NULL;
    e->sk = NULL;
    for (int i = 0; i < p->entries.n; i++) {
        sb_blank(&launch);
        emit_entry_launcher(e, p->entries.v[i]);
    }
    sb_puts(out, "namespace {\n\n");
    for (int i = 0; i < prog->params.n; i++) {
        const Param *pa = prog->params.v[i];
        sb_printf(out, "constexpr int %s = %" PRId64 ";%s\n", pa->name, pa->sym->cval, pa->overridden ? "  // set by -D" : "");
    }
    if (prog->params.n) sb_putc(out, '\n');
    if (shared) {
        for (int i = 0; i < e->frags.n; i++) {
            bool seen = false;
            for (int k = 0; k < shared->n && !seen; k++)
                seen = !strcmp(shared->v[k].file, e->frags.v[i].file) && !strcmp(shared->v[k].name, e->frags.v[i].name);
            if (!seen) vec_push(a, shared, e->frags.v[i]);
        }
    } else {
        emit_cuda_shared(a, out, &e->frags);
    }
    sb_puts(out, body.s ? body.s : "");
    sb_puts(out, "\n}  // namespace\n");
    sb_puts(out, launch.s ? launch.s : "");
    sb_free(&body);
    sb_free(&launch);
}

/* resolves TKC_NEXT_LINE (#line directives): the number of the line after the directive */
char *emit_cuda_lines(char *text) {
    StrBuf fixed;
    sb_init(&fixed);
    int line = 1;
    static const char key[] = "TKC_NEXT_LINE";
    for (char *q = text; *q;) {
        char *nl = strchr(q, '\n');
        if (nl) *nl = 0;
        char *k = strstr(q, key);
        if (k) {
            sb_putn(&fixed, q, (size_t)(k - q));
            sb_printf(&fixed, "%d", line + 1);
            sb_puts(&fixed, k + sizeof key - 1);
        } else {
            sb_puts(&fixed, q);
        }
        if (!nl) break;
        sb_putc(&fixed, '\n');
        line++;
        q = nl + 1;
    }
    free(text);
    return sb_take(&fixed);
}

char *emit_cuda_single(Arena *a, const Plan *p, const Program *prog, const EmitOptions *o) {
    StrBuf out;
    sb_init(&out);
    emit_cuda_head(&out, p, o, NULL);
    emit_cuda_body(a, &out, p, prog, o, NULL, NULL);
    char *text = sb_take(&out);
    return o->line_directives ? emit_cuda_lines(text) : text;
}
