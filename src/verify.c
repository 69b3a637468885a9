/* verify.c - the plan verifier: checks the invariants the emitter relies on, after lowering.
 * A failure here is a bug in tkc, not in the user's program, and is reported as one
 * ("internal error: plan check failed: ..."), never as a crash. */
#include <string.h>

#include "check_cache.h"
#include "plan.h"

typedef struct V {
    Diag *d;
    const PlanKernel *pk;
    bool ok;
} V;

static void fail(V *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(V *v, const char *fmt, ...) {
    StrBuf msg;
    sb_init(&msg);
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&msg, fmt, ap);
    va_end(ap);
    diag_error(v->d, v->pk->sk->k->name_span, "internal error: plan check failed for kernel '%s': %s",
               v->pk->name, msg.s);
    sb_free(&msg);
    v->ok = false;
}

static bool is_16bit(DType d) { return d == DT_BF16 || d == DT_FP16; }

static bool is_reg_value(const Symbol *y) {
    return y && (y->kind == SYM_REG || (y->kind == SYM_LET && (y->ty.kind == TY_TILE || y->ty.kind == TY_VEC)));
}

static bool has_reg(const PlanKernel *pk, const Symbol *y) {
    for (int i = 0; i < pk->regs.n; i++)
        if (pk->regs.v[i].sym == y) return true;
    return false;
}

/* a tree's shape: every node has its operands, every name its symbol, every register value it
 * reads is one the plan holds (pk->regs), and an elementwise tile node combines tiles of its own
 * shape with vectors and scalars */
static void check_tree(V *v, const PExpr *x, const char *what) {
    if (!x) {
        fail(v, "%s: a missing operand", what);
        return;
    }
    switch (x->kind) {
    case PX_NAME:
        if (!x->sym) fail(v, "%s: '%s' names no symbol", what, x->name ? x->name : "?");
        else if (is_reg_value(x->sym) && !has_reg(v->pk, x->sym))
            fail(v, "%s: the register value '%s' is not in the plan's registers", what, x->sym->name);
        return;
    case PX_MEMBER:
        if (!x->field || !x->base) fail(v, "%s: a block coordinate without its axis", what);
        return;
    case PX_TRANSPOSE: check_tree(v, x->base, what); return;
    case PX_INDEX:
        check_tree(v, x->base, what);
        for (int i = 0; i < x->nix; i++) {
            if (x->ix[i].lo) check_tree(v, x->ix[i].lo, what);
            if (x->ix[i].hi) check_tree(v, x->ix[i].hi, what);
            if (!x->ix[i].slice && !x->ix[i].lo) fail(v, "%s: an index without its value", what);
        }
        return;
    case PX_CALL:
        if (!x->name || (x->nargs && !x->args)) fail(v, "%s: a call without its function or arguments", what);
        for (int i = 0; i < x->nargs; i++) check_tree(v, x->args[i], what);
        return;
    case PX_BINARY:
        check_tree(v, x->l, what);
        check_tree(v, x->r, what);
        if (x->l && x->r && x->bop != BIN_MATMUL && x->ty.kind == TY_TILE)
            for (int k = 0; k < 2; k++) {
                const Type *t = k ? &x->r->ty : &x->l->ty;
                if (t->kind == TY_TILE && (t->rows != x->ty.rows || t->cols != x->ty.cols))
                    fail(v, "%s: a [%d, %d] tile in a [%d, %d] elementwise op", what, t->rows, t->cols, x->ty.rows, x->ty.cols);
            }
        return;
    case PX_UNARY: check_tree(v, x->l, what); return;
    case PX_COND:
        check_tree(v, x->cond, what);
        check_tree(v, x->l, what);
        check_tree(v, x->r, what);
        return;
    default: return;
    }
}

static void check_stmt(V *v, const POp *o) {
    const PStmt *st = o->st;
    const char *what = pop_name[o->kind];
    if (!st) {
        fail(v, "a %s op without its operands", what);
        return;
    }
    if (st->kind == PS_LET) {
        if (!st->let) fail(v, "a let without its value");
        else if (is_reg_value(st->let) && !has_reg(v->pk, st->let))
            fail(v, "the let '%s' holds registers the plan does not count", st->let->name);
    } else {
        check_tree(v, st->lhs, what);
    }
    check_tree(v, st->rhs, what);
}

static void check_ops(V *v, const POpList *ops) {
    const PlanKernel *pk = v->pk;
    for (int i = 0; i < ops->n; i++) {
        const POp *o = ops->v[i];
        if (!o) {
            fail(v, "empty op");
            continue;
        }
        if ((o->kind == POP_WAIT_FULL || o->kind == POP_RELEASE) && (o->group < 0 || o->group >= pk->groups.n))
            fail(v, "%s names no load group", pop_name[o->kind]);
        if (o->kind == POP_WAIT_MMA && (o->n < 0 || o->n > 7)) fail(v, "wgmma.wait_group %d is out of range", o->n);
        if (o->kind == POP_STMT || o->kind == POP_MOVE || o->kind == POP_STORE || o->kind == POP_MMA) check_stmt(v, o);
        if (o->kind == POP_IF && (!o->cond || o->cond->ty.varying)) fail(v, "an if without a uniform condition");
        if (o->kind == POP_IF && o->cond) check_tree(v, o->cond, "if");
        if (o->kind == POP_FOR && (!o->var || !o->lo || !o->hi)) fail(v, "a for without its variable or bounds");
        if (o->kind == POP_MOVE && (!o->mv || o->mv->buf < 0 || o->mv->buf >= pk->bufs.n)) fail(v, "a move without its shared tile");
        if (o->kind == POP_STORE && o->store >= 0 && (o->store >= pk->stores.n || pk->stores.v[o->store].st != o->st))
            fail(v, "a store op that does not name its store");
        if (o->kind == POP_BAR && (o->bar < 0 || o->bar >= pk->nbars.n)) fail(v, "a named barrier op without its barrier");
        if (o->kind == POP_MMA) {
            const PlanMma *m = o->mma;
            if (!m || m->b.buf < 0 || m->b.buf >= pk->bufs.n) fail(v, "a product without a shared B operand");
            else if (!m->a_reg && (m->a.buf < 0 || m->a.buf >= pk->bufs.n)) fail(v, "a product without its A operand");
            else if (m->wg_m % 64 || m->k % 16 || m->n % 8 || m->n <= 0) fail(v, "product shape m%d n%d k%d", m->wg_m, m->n, m->k);
            else if (m->zero_first && m->deferred)
                fail(v, "a deferred product starts from scale-d = 0 on the first step, where it is not issued");
        }
        check_ops(v, &o->then_ops);
        check_ops(v, &o->else_ops);
    }
}

static void verify_kernel(V *v) {
    const PlanKernel *pk = v->pk;
    if (pk->consumers < 1 || pk->consumers > 3) fail(v, "%d consumer warpgroups", pk->consumers);
    if (pk->setup_stages < 1 || pk->setup_stages > 2 || (pk->setup_stages > 1 && !pk->persistent))
        fail(v, "%d copies of the setup tiles (persistent %d)", pk->setup_stages, pk->persistent);
    for (int g = 0; g < pk->groups.n; g++)
        if (pk->setup_stages > 1 && pk->groups.v[g].once && pk->groups.v[g].multicast)
            fail(v, "two copies of the setup tiles of '%s', which the cluster multicasts", pk->groups.v[g].name);
    if (pk->cluster > 1 && (pk->cluster_axis < 0 || pk->cluster_axis >= pk->sk->axes.n))
        fail(v, "cluster axis %d of %d", pk->cluster_axis, pk->sk->axes.n);
    if (pk->threads != 128 * (pk->consumers + (pk->no_producer ? 0 : 1))) fail(v, "thread count %d", pk->threads);
    if (pk->no_producer && (pk->groups.n || !pk->no_pipeline || pk->min_blocks < 1 || pk->min_blocks > 16))
        fail(v, "a kernel without a producer has loads, a pipeline or %d blocks per SM", pk->min_blocks);
    if (pk->rowwise) {
        RowLayout r;
        if (!row_layout(pk->rw.cols, pk->rw.warps, pk->rw.split, &r) || memcmp(&r, &pk->rw, sizeof r) ||
            pk->rw.warps != 4 * pk->consumers)
            fail(v, "the row layout of %d columns over %d warps, %d per row", pk->rw.cols, pk->rw.warps, pk->rw.split);
        for (int i = 0; i < pk->regs.n; i++) {
            const Type *t = &pk->regs.v[i].sym->ty;
            if (t->kind == TY_TILE && (t->cols != pk->rw.cols || t->rows % row_layout_rows(&pk->rw) || t->per_wg))
                fail(v, "rowwise tile '%s' is [%d, %d]", pk->regs.v[i].sym->name, t->rows, t->cols);
        }
        if ((pk->rw.split > 1) != (pk->rowred_buf >= 0) && pk->rowred_buf >= 0)
            fail(v, "a row-reduction scratch for rows one warp holds");
        /* successive row reductions alternate two copies, which is what lets them skip the barrier
         * before their writes (plan_rowred) */
        if (pk->rowred_buf >= 0 && pk->bufs.v[pk->rowred_buf].copies != 2)
            fail(v, "%d copies of the row-reduction scratch (successive reductions alternate two)",
                 pk->bufs.v[pk->rowred_buf].copies);
    }
    if (pk->tail) {
        /* the narrow last step: copies of the score tile and the deferred operand on its first
         * `cols` columns; its products narrowed on exactly those columns; an overlapped pipeline */
        const PlanTail *t = pk->tail;
        if (!pk->overlap || !t->first || !t->deferred || !t->deferred->deferred || !t->s_narrow || !t->op_narrow)
            fail(v, "a narrow last step without its deferred product or copies");
        else if (t->cols % 16 || t->cols <= 0 || t->cols >= t->first->n || t->s_narrow->ty.cols != t->cols ||
                 t->op_narrow->ty.cols != t->cols || t->first_narrow.n != t->cols || t->deferred_narrow.k != t->cols ||
                 t->deferred->k != t->first->n || t->first_narrow.dst != t->s_narrow ||
                 t->deferred_narrow.a_tmp != t->op_narrow || t->deferred->a_tmp != t->op || t->first->dst != t->s)
            fail(v, "narrow last step of %d columns over products n%d / k%d", t->cols, t->first->n, t->deferred->k);
    }
    if (!pk->no_producer &&
        !reg_split_fits(pk->consumers, pk->producer_regs, pk->consumer_regs, block_reg_pool(pk->threads, pk->min_blocks)))
        fail(v, "a %d/%d register split at %d blocks per SM does not fit the block's %d registers", pk->producer_regs,
             pk->consumer_regs, pk->min_blocks, block_reg_pool(pk->threads, pk->min_blocks));
    /* buffers: aligned, inside the budget, not overlapping */
    for (int i = 0; i < pk->bufs.n; i++) {
        const PlanBuf *b = &pk->bufs.v[i];
        if (b->offset % b->align) fail(v, "buffer %s at %d is not aligned to %d", b->name, b->offset, b->align);
        if (b->swz != SWZ_NONE && b->offset % swizzle_align(b->swz))
            fail(v, "swizzled buffer %s is off its swizzle period", b->name);
        if (b->swz != SWZ_NONE && b->bytes % swizzle_align(b->swz))
            fail(v, "ring copies of %s would leave the swizzle period", b->name);
        if (b->natoms * b->atom_cols != b->cols) fail(v, "atoms of %s do not cover its columns", b->name);
        if (b->is_vec && (b->bytes % 128 || (b->natoms > 1 && b->atom_cols * dtype_bytes[b->dt] % 128)))
            fail(v, "vector %s: a copy or a box that does not start 128-byte aligned", b->name);
        if (b->atom_cols * dtype_bytes[b->dt] > 128 && b->swz != SWZ_NONE) fail(v, "TMA box of %s is wider than its swizzle span", b->name);
        if (b->rows > TMA_BOX_MAX && b->kind <= BUF_ONCE) fail(v, "TMA box of %s has more than 256 rows", b->name);
        for (int j = 0; j < i; j++) {
            const PlanBuf *c = &pk->bufs.v[j];
            int a0 = b->offset, a1 = b->offset + b->bytes * b->copies;
            int b0 = c->offset, b1 = c->offset + c->bytes * c->copies;
            if (a0 < b1 && b0 < a1) fail(v, "buffers %s and %s overlap", b->name, c->name);
        }
        if (b->offset + b->bytes * b->copies > pk->smem_used) fail(v, "buffer %s ends past the used size", b->name);
    }
    for (int i = 0; i < pk->bars.n; i++) {
        const PlanBarrier *b = &pk->bars.v[i];
        if (b->offset % 8) fail(v, "barrier %s is not 8-byte aligned", b->name);
        if (b->count < 1) fail(v, "barrier %s expects no arrivals", b->name);
        if (b->tx_bytes >= (1 << 20)) fail(v, "barrier %s expects too many bytes", b->name);
    }
    if (pk->smem_total > SMEM_LIMIT) fail(v, "shared memory %d over the limit", pk->smem_total);
    /* load groups: the full barrier's byte count is the sum of its tiles, every tile has a map */
    for (int g = 0; g < pk->groups.n; g++) {
        const PlanGroup *pg = &pk->groups.v[g];
        int bytes = 0;
        for (int i = 0; i < pg->bufs.n; i++) bytes += plan_buf_tx_bytes(&pk->bufs.v[pg->bufs.v[i]]);
        if (bytes != pg->bytes || pk->bars.v[pg->full].tx_bytes != bytes)
            fail(v, "group %s expects %d bytes but its tiles hold %d", pg->name, pk->bars.v[pg->full].tx_bytes, bytes);
        if (pk->bars.v[pg->empty].count != pk->consumers * (pg->multicast ? pk->cluster : 1) * (pg->warp_release ? 4 : 1))
            fail(v, "group %s's empty barrier count", pg->name);
        /* a ring has a copy of each tile and barrier per stage; setup tiles one per setup stage */
        int copies = pg->once ? pk->setup_stages : pk->stages;
        if (pk->bars.v[pg->full].copies != copies || pk->bars.v[pg->empty].copies != copies)
            fail(v, "group %s has %d barrier copies, not %d", pg->name, pk->bars.v[pg->full].copies, copies);
        for (int i = 0; i < pg->bufs.n; i++)
            if (pk->bufs.v[pg->bufs.v[i]].copies != copies)
                fail(v, "tile %s of group %s has %d copies, not %d", pk->bufs.v[pg->bufs.v[i]].name, pg->name,
                     pk->bufs.v[pg->bufs.v[i]].copies, copies);
        for (int i = 0; i < pg->loads.n; i++) {
            const PlanLoad *pl = &pg->loads.v[i];
            const PlanMap *m = &pk->maps.v[pl->map];
            const PlanBuf *b = &pk->bufs.v[pl->buf];
            if (m->box[0] != b->atom_cols || (!b->is_vec && m->box[1] != b->rows) || m->swz != b->swz)
                fail(v, "map %s does not match the tile %s", m->name, b->name);
        }
    }
    for (int i = 0; i < pk->maps.n; i++) {
        const PlanMap *m = &pk->maps.v[i];
        for (int d = 0; d < m->rank; d++)
            if (m->box[d] < 1 || m->box[d] > TMA_BOX_MAX) fail(v, "map %s has box dimension %d", m->name, m->box[d]);
        if ((m->box[0] * dtype_bytes[m->tensor->ty.dt]) % 16) fail(v, "map %s box row is not a multiple of 16 B", m->name);
        if (m->swz != SWZ_NONE && m->box[0] * dtype_bytes[m->tensor->ty.dt] > swizzle_bytes(m->swz))
            fail(v, "map %s box row exceeds the swizzle span", m->name);
    }
    /* no pipeline: no ring, no steps, and nothing scheduled in them */
    if (pk->no_pipeline) {
        if (pk->stages != 0 || pk->first_ops.n || pk->compute_ops.n || pk->lookahead || pk->tail || pk->overlap)
            fail(v, "a kernel without a pipeline has steps (stages %d, %d ops)", pk->stages, pk->first_ops.n + pk->compute_ops.n);
        for (int g = 0; g < pk->groups.n; g++)
            if (!pk->groups.v[g].once) fail(v, "a kernel without a pipeline has the ring group %s", pk->groups.v[g].name);
    } else if (pk->stages < 1) {
        fail(v, "a pipeline of %d stages", pk->stages);
    }
    /* atomic adds from registers: fp32, bf16 or fp16, each thread on its own elements (no map, no staging) */
    for (int i = 0; i < pk->stores.n; i++) {
        const PlanStore *ps = &pk->stores.v[i];
        if (ps->path == SP_RED && (ps->map >= 0 || ps->st->mv != MV_ADD_R2G ||
                                   (ps->st->rhs->ty.dt != DT_FP32 && !is_16bit(ps->st->rhs->ty.dt))))
            fail(v, "an atomic add from registers that is not a direct fp32, bf16 or fp16 add");
    }
    for (int i = 0; i < pk->zeroed.n; i++)
        if (pk->zeroed.v[i]->mode == ARG_IN || !pk->zeroed.v[i]->ts.ndims) fail(v, "zeroed input '%s'", pk->zeroed.v[i]->name);
    /* named barriers: ids 1..15, one kind each, none shared */
    for (int i = 0; i < pk->nbars.n; i++) {
        const PlanNamedBar *nb = &pk->nbars.v[i];
        if (nb->id < 1 || nb->ids < 1 || nb->id + nb->ids > 16 || nb->threads % 32 || nb->threads < 32)
            fail(v, "named barrier %s: ids %d + %d, %d threads", nb->name, nb->id, nb->ids, nb->threads);
        for (int j = 0; j < i; j++)
            if (nb->id < pk->nbars.v[j].id + pk->nbars.v[j].ids && pk->nbars.v[j].id < nb->id + nb->ids)
                fail(v, "named barriers %s and %s share an id", nb->name, pk->nbars.v[j].name);
    }
    if (pk->colred_buf >= pk->bufs.n || pk->colred_bar >= pk->nbars.n || pk->colred_wg_bar >= pk->nbars.n ||
        (pk->colred_buf < 0 && (pk->colred_bar >= 0 || pk->colred_wg_bar >= 0)))
        fail(v, "column reductions without their scratch buffer or barrier");
    if (pk->rowscan_buf >= pk->bufs.n || pk->rowscan_bar >= pk->nbars.n || pk->rowscan_wg_bar >= pk->nbars.n ||
        (pk->rowscan_buf < 0 && (pk->rowscan_bar >= 0 || pk->rowscan_wg_bar >= 0)) ||
        (pk->rowscan_buf >= 0 && pk->rowscan_bar < 0 && pk->rowscan_wg_bar < 0))
        fail(v, "prefix sums of per_row vectors without their scratch buffer or barrier");
    check_ops(v, &pk->block_ops);
    check_ops(v, &pk->setup_ops);
    check_ops(v, &pk->first_ops);
    check_ops(v, &pk->compute_ops);
    check_ops(v, &pk->after_ops);
    check_ops(v, &pk->finish_ops);
    /* the proof of a kernel proved already in this process (another variant of a dispatched
     * program, the same source and params: check_cache.c) is not run again */
    if (v->ok && !check_cache_has(CHECK_PROTOCOL, pk->sk->check_key)) {
        Arena a = {0};
        ProtocolStats st = {0};
        const char *why = plan_check_protocol(&a, pk, &st);
        if (why) fail(v, "%s", why);
        else if (st.truncated)
            diag_warning(v->d, pk->sk->k->name_span,
                         "the barrier protocol check of kernel '%s' stopped at its state limit: it is proved only for the "
                         "states it visited (%ld)", pk->name, st.states);
        else check_cache_add(CHECK_PROTOCOL, pk->sk->check_key);
        arena_free(&a);
    }
}

/* an entry's call launched programmatically (pass_pdl.c) may start before the kernel queued
 * before it ends: its kernel must wait for that grid before it touches global memory */
static void verify_entry_steps(V *v, const PESteps *l) {
    for (int i = 0; i < l->n; i++) {
        const PEStep *s = l->v[i];
        if (s->kind == PE_IF) {
            verify_entry_steps(v, &s->then_s);
            verify_entry_steps(v, &s->else_s);
        } else if (s->kind == PE_CALL && s->pdl && !(s->callee->pdl_wait && s->callee->pdl_entry)) {
            v->pk = s->callee;
            fail(v, "an entry launches it programmatically, but its kernel does not wait for the grid before it "
                    "(griddepcontrol.wait)");
        }
    }
}

bool plan_verify(const Plan *p, Diag *d) {
    V v = {.d = d, .ok = true};
    for (int i = 0; i < p->kernels.n; i++) {
        v.pk = p->kernels.v[i];
        verify_kernel(&v);
        /* its launcher launches it programmatically after the kernel that clears its zeroed outputs */
        if ((v.pk->zeroed.n && !v.pk->pdl_after_clear) || (v.pk->pdl_after_clear && !v.pk->pdl_wait))
            fail(&v, "a kernel with zeroed outputs is launched programmatically after the kernel that clears them "
                     "(pdl_after_clear) and waits for that grid (griddepcontrol.wait); this one %s",
                 v.pk->pdl_after_clear ? "does not wait" : "is not marked so");
    }
    for (int i = 0; i < p->entries.n; i++) verify_entry_steps(&v, &p->entries.v[i]->body);
    return v.ok;
}
