/* plan_dump.c - the stable text form of a kernel plan (tkc --emit=plan): roles, registers,
 * grid, pipeline, shared-memory map with swizzles, barriers, TMA maps, the producer's loads
 * and the consumers' scheduled program. Same plan, same bytes. */
#include <string.h>

#include "plan.h"

/* the type an elementwise statement computes, in the plan's terms: dtype and shape, the register
 * layout (the accumulator fragments of tiles, or a vector's per_row / per_col slots), and how the
 * consumer warpgroups share it */
static void dump_value_type(StrBuf *b, const PlanKernel *pk, const PStmt *st) {
    const Type *t = NULL;
    if (st->kind == PS_ASSIGN && st->mv == MV_NONE) t = &st->lhs->ty;
    else if (st->kind == PS_LET && st->let) t = &st->let->ty;
    if (!t) return;
    if (t->kind == TY_TILE && pk->rowwise)
        sb_printf(b, "  [%s[%d, %d] in registers, row layout]", dtype_name[t->dt], t->rows, t->cols);
    else if (t->kind == TY_TILE)
        sb_printf(b, "  [%s[%d, %d] in registers, accumulator layout, %s]", dtype_name[t->dt], t->rows, t->cols,
                  t->per_wg || pk->consumers == 1 ? "whole per warpgroup" : "rows split over the warpgroups");
    else if (t->kind == TY_VEC && pk->rowwise)
        sb_printf(b, "  [%s[%d] %s in registers, row layout]", dtype_name[t->dt], t->rows, veclayout_name[t->layout]);
    else if (t->kind == TY_VEC)
        sb_printf(b, "  [%s[%d] %s in registers%s]", dtype_name[t->dt], t->rows, veclayout_name[t->layout],
                  t->layout == VL_COL || t->per_wg || pk->consumers == 1 ? "" : ", rows split over the warpgroups");
    else if (t->kind == TY_FLOAT || t->kind == TY_INT || t->kind == TY_BOOL)
        sb_printf(b, "  [%s scalar]", t->kind == TY_FLOAT ? "fp32" : t->kind == TY_INT ? "int" : "bool");
}

static void indent(StrBuf *b, int n) {
    for (int i = 0; i < n; i++) sb_puts(b, "  ");
}

const char *plan_major_name(bool mn, char which) {
    if (!mn) return "K-major";
    return which == 'A' ? "M-major" : "N-major";
}

static void dump_ops(StrBuf *b, const PlanKernel *pk, const POpList *ops, int depth) {
    for (int i = 0; i < ops->n; i++) {
        const POp *o = ops->v[i];
        indent(b, depth);
        switch (o->kind) {
        case POP_STMT:
            plan_stmt_text(b, o->st);
            dump_value_type(b, pk, o->st);
            break;
        case POP_MMA: {
            const PlanMma *m = o->mma;
            sb_printf(b, "mma %s%s ", m->dst->name, m->accumulate ? (m->negate ? " -=" : " +=") : " =");
            if (m->a_tmp) sb_puts(b, m->a_tmp->name);
            else px_print(b, o->st->rhs->l);
            sb_puts(b, " @ ");
            px_print(b, o->st->rhs->r);
            int inst_n, count;
            plan_mma_shape(m, &inst_n, &count);
            sb_printf(b, "  [wgmma m64n%dk16 x %d per warpgroup, %s, A %s, B %s (%s)%s%s%s]", inst_n, count,
                      m->a_reg ? "RS" : "SS",
                      m->a_reg ? "registers" : plan_major_name(m->a.mn_major, 'A'), plan_major_name(m->b.mn_major, 'B'),
                      swizzle_name(pk->bufs.v[m->b.buf].swz), m->zero_first ? ", scale-d 0 on the first step" : "",
                      o->prev ? ", previous step's stage" : "", o->skip_first ? ", skipped on the first step" : "");
            /* a sliced operand: where its block starts in the stored (untransposed) tile */
            if (!m->a_reg && (m->a.row0 || m->a.col0))
                sb_printf(b, " (A from %s[%d, %d])", pk->bufs.v[m->a.buf].name, m->a.row0, m->a.col0);
            if (m->b.row0 || m->b.col0)
                sb_printf(b, " (B from %s[%d, %d])", pk->bufs.v[m->b.buf].name, m->b.row0, m->b.col0);
            break;
        }
        case POP_MATERIALIZE:
            sb_printf(b, "%s = ", o->mma->a_tmp->name);
            px_print(b, o->mma->a_expr);
            sb_puts(b, "  [A operand of the deferred product]");
            break;
        case POP_WAIT_FULL:
            sb_printf(b, "wait %s%s", pk->bars.v[pk->groups.v[o->group].full].name,
                      o->prev ? " (previous step's stage)" : "");
            if (o->skip_first) sb_puts(b, ", skipped on the first step");
            break;
        case POP_WAIT_MMA:
            sb_printf(b, "wgmma.wait_group %d", o->n);
            if (o->note) sb_printf(b, "  (%s)", o->note);
            break;
        case POP_RELEASE:
            sb_printf(b, "release %s%s", pk->bars.v[pk->groups.v[o->group].empty].name,
                      o->prev ? " (previous step's stage)" : "");
            if (o->skip_first) sb_puts(b, ", skipped on the first step");
            if (o->last_step) sb_puts(b, ", on the last step only");
            if (o->no_steps) sb_puts(b, ", only when no step ran");
            if (pk->groups.v[o->group].warp_release) sb_puts(b, ", by every warp after a proxy fence (its threads read the stage)");
            break;
        case POP_IF:
        case POP_FOR:
            plan_ctl_text(b, o);
            sb_putc(b, '\n');
            dump_ops(b, pk, &o->then_ops, depth + 1);
            if (o->else_ops.n) {
                indent(b, depth);
                sb_puts(b, "else\n");
                dump_ops(b, pk, &o->else_ops, depth + 1);
            }
            continue;
        case POP_SYNC:
            sb_puts(b, "sync (all consumer warpgroups)");
            break;
        case POP_PP_WAIT:
            sb_puts(b, "pingpong: wait for this warpgroup's turn");
            break;
        case POP_PP_PASS:
            sb_puts(b, "pingpong: pass the turn to the next warpgroup");
            break;
        case POP_MOVE: {
            const PlanMove *m = o->mv;
            const PlanBuf *pb = &pk->bufs.v[m->buf];
            sb_puts(b, "move ");
            plan_stmt_text(b, o->st);
            const char *who = m->wg0_only ? ", warpgroup 0 writes the per_wg value"
                              : m->rt->kind == TY_VEC ? (m->rt->layout == VL_COL ? ", per_col: one thread per column writes"
                                                                                : ", per_row: one lane per row")
                              : m->rt->per_wg || pk->consumers == 1 ? ", whole tile per warpgroup"
                                                                    : ", each warpgroup its rows";
            if (!m->to_shared && m->rt->kind == TY_VEC) who = m->rt->layout == VL_COL ? ", into per_col slots" : ", into per_row slots";
            if (pb->is_vec) sb_printf(b, "  [%s, %s%s]", movepath_name[m->path], pb->name, who);
            else sb_printf(b, "  [%s, %s %s swizzle%s]", movepath_name[m->path], pb->name, swizzle_name(pb->swz), who);
            if (m->srow0 || m->scol0) sb_printf(b, " (the block at %s[%d, %d])", pb->name, m->srow0, m->scol0);
            break;
        }
        case POP_BAR: {
            const PlanNamedBar *nb = &pk->nbars.v[o->bar];
            sb_printf(b, "bar.sync %d%s, %d (%s)", nb->id, nb->ids > 1 ? " + wg" : "", nb->threads, nb->name);
            if (o->note) sb_printf(b, ": %s", o->note);
            break;
        }
        case POP_FENCE:
            sb_puts(b, "fence.proxy.async");
            if (o->note) sb_printf(b, " (%s)", o->note);
            break;
        case POP_STORE:
            sb_puts(b, "store ");
            plan_stmt_text(b, o->st);
            if (o->store >= 0) sb_printf(b, "  [%s]", storepath_name[pk->stores.v[o->store].path]);
            break;
        }
        sb_putc(b, '\n');
    }
}

static void dump_kernel(StrBuf *b, const PlanKernel *pk) {
    const SemaKernel *sk = pk->sk;
    sb_printf(b, "kernel %s\n", pk->name);
    if (pk->no_producer) {
        sb_printf(b, "  roles: no producer (nothing to load); consumer warpgroups 0..%d; %d threads; %d block%s per SM\n",
                  pk->consumers - 1, pk->threads, pk->min_blocks, pk->min_blocks == 1 ? "" : "s");
    } else {
        sb_printf(b, "  roles: producer warpgroup 0 (setmaxnreg %d), consumer warpgroups 1..%d (setmaxnreg %d); %d threads\n",
                  pk->producer_regs, pk->consumers, pk->consumer_regs, pk->threads);
        sb_printf(b, "  registers: 128 x %d + %d x 128 x %d = %s of 65,536\n", pk->producer_regs, pk->consumers,
                  pk->consumer_regs, fmt_bytes(128 * (pk->producer_regs + pk->consumers * pk->consumer_regs)));
    }
    if (pk->rowwise)
        sb_printf(b, "  register layout: rows (%d columns; %d warps, %d per row, %d lanes per row%s, %d chunk%s of 8 columns "
                  "per lane)\n", pk->rw.cols, pk->rw.warps, pk->rw.split, pk->rw.lanes,
                  pk->rw.rows_per_inst > 1 ? ", several rows per warp" : "", pk->rw.chunks, pk->rw.chunks == 1 ? "" : "s");
    sb_printf(b, "  consumer registers (estimate): %d of %d =", pk->reg_estimate, pk->consumer_regs);
    for (int i = 0; i < pk->regs.n; i++)
        if (pk->regs.v[i].sym->kind != SYM_LET) sb_printf(b, " %s %d +", pk->regs.v[i].sym->name, pk->regs.v[i].regs);
    if (pk->reg_lets) sb_printf(b, " temporaries (peak) %d +", pk->reg_lets);
    sb_printf(b, " overhead %d", pk->reg_overhead);
    if (pk->reg_live_peak) sb_printf(b, "; at most %d live at once in a step", pk->reg_live_peak);
    sb_puts(b, "\n  grid:");
    for (int i = 0; i < sk->axes.n; i++) {
        sb_printf(b, "%s %s = ", i ? "," : "", sk->axes.v[i]->name);
        px_print(b, pk->extents.v[i]);
        if (sk->axes.v[i]->reversed) sb_puts(b, " (reversed)");
        if (sk->axes.v[i]->folded) sb_puts(b, " (folded)");
    }
    int per = plan_persistent_per_sm(pk);
    if (pk->paired) sb_puts(b, "; persistent, tiles in pairs (min(ceil(work tiles / 2), SMs");
    else if (pk->persistent) sb_puts(b, "; persistent (min(work tiles, SMs");
    else sb_puts(b, "; one block per work tile");
    if (pk->paired || pk->persistent) {
        if (per > 1) sb_printf(b, " x %d", per);
        sb_puts(b, ") blocks)");
    }
    if (pk->cluster > 1) sb_printf(b, "; clusters of %d blocks along %s", pk->cluster, sk->axes.v[pk->cluster_axis]->name);
    if (pk->order == ORDER_ROW_MAJOR) sb_puts(b, "; order row_major\n");
    else sb_printf(b, "; order %s(%d)\n", pk->order == ORDER_SUPER_M ? "super_m" : "super_n", pk->order_group);
    if (pk->zeroed.n) {
        sb_puts(b, "  launcher: clears");
        for (int i = 0; i < pk->zeroed.n; i++) sb_printf(b, "%s %s", i ? "," : "", pk->zeroed.v[i]->name);
        sb_puts(b, " on the stream before the kernel (zeroed), with a kernel that lets this one launch as it starts;"
                   " the launch is programmatic\n");
    }
    if (pk->pdl_wait || pk->pdl_trigger)
        sb_printf(b, "  programmatic dependent launch:%s%s%s\n",
                  pk->pdl_trigger ? " lets the next kernel of an entry start (griddepcontrol.launch_dependents, as a block starts)" : "",
                  pk->pdl_trigger && pk->pdl_wait ? ";" : "",
                  pk->pdl_wait ? " waits for the kernel before it (griddepcontrol.wait, after the barrier set-up)" : "");
    if (pk->no_pipeline) {
        sb_puts(b, "  pipeline: none (setup, then finish, once per work tile; no ring, no steps)\n");
    } else {
        sb_printf(b, "  pipeline: %s < ", sk->loopvar->name);
        px_print(b, pk->trips);
        sb_printf(b, "; %d stage%s%s%s\n", pk->stages, pk->stages == 1 ? "" : "s", pk->overlap ? "; overlap" : "",
                  pk->pingpong ? "; pingpong" : "");
    }
    sb_puts(b, "  shared memory (from the 1024-aligned base):\n");
    sb_puts(b, "    offset    bytes     name        shape              swizzle  copies  kind\n");
    for (int i = 0; i < pk->bufs.n; i++) {
        const PlanBuf *pb = &pk->bufs.v[i];
        char shape[64];
        if (pb->is_vec) snprintf(shape, sizeof shape, "%s[%d]", dtype_name[pb->dt], pb->cols);
        else snprintf(shape, sizeof shape, "%s[%d, %d]", dtype_name[pb->dt], pb->rows, pb->cols);
        char swz[32];
        if (pb->natoms > 1) snprintf(swz, sizeof swz, "%s x%d", swizzle_name(pb->swz), pb->natoms);
        else snprintf(swz, sizeof swz, "%s", swizzle_name(pb->swz));
        sb_printf(b, "    %-9s %-9s %-11s %-18s %-8s %-7d %s", fmt_bytes(pb->offset), fmt_bytes(pb->bytes * pb->copies),
                  pb->name, shape, swz, pb->copies, bufkind_name[pb->kind]);
        if (pb->group >= 0) sb_printf(b, " (group %s)", pk->groups.v[pb->group].name);
        sb_putc(b, '\n');
    }
    int nb = 0;
    for (int i = 0; i < pk->bars.n; i++) nb += 8 * pk->bars.v[i].copies;
    if (pk->bars.n) sb_printf(b, "    %-9s %-9s barriers\n", fmt_bytes(pk->bars.v[0].offset), fmt_bytes(nb));
    sb_printf(b, "    total %s + %s base alignment = %s of %s\n", fmt_bytes(pk->smem_used), fmt_bytes(SMEM_SLACK),
              fmt_bytes(pk->smem_total), fmt_bytes(SMEM_LIMIT));
    sb_puts(b, "  barriers:\n");
    for (int i = 0; i < pk->bars.n; i++) {
        const PlanBarrier *pb = &pk->bars.v[i];
        sb_printf(b, "    %s[%d] at %s: count %d", pb->name, pb->copies, fmt_bytes(pb->offset), pb->count);
        if (pb->tx_bytes) sb_printf(b, ", %s bytes per phase", fmt_bytes(pb->tx_bytes));
        sb_printf(b, " (%s)\n", pb->why);
    }
    if (pk->nbars.n) {
        sb_puts(b, "  named barriers:\n");
        for (int i = 0; i < pk->nbars.n; i++) {
            const PlanNamedBar *nbr = &pk->nbars.v[i];
            if (nbr->ids > 1) sb_printf(b, "    %s: ids %d..%d (id %d + wg)", nbr->name, nbr->id, nbr->id + nbr->ids - 1, nbr->id);
            else sb_printf(b, "    %s: id %d", nbr->name, nbr->id);
            sb_printf(b, ", %d threads (%s)\n", nbr->threads, nbr->why);
        }
    }
    bool any = false;
    for (int i = 0; i < pk->arg_strides.n; i++) any |= pk->arg_strides.v[i];
    if (any) {
        sb_puts(b, "  strides passed to the kernel (threads address these directly):");
        for (int i = 0; i < pk->arg_strides.n; i++)
            if (pk->arg_strides.v[i]) sb_printf(b, " %s", sk->args.v[i]->name);
        sb_putc(b, '\n');
    }
    sb_puts(b, "  tma maps:\n");
    for (int i = 0; i < pk->maps.n; i++) {
        const PlanMap *m = &pk->maps.v[i];
        sb_printf(b, "    %s: %s %s rank %d, box {", m->name, m->tensor->name, dtype_name[m->tensor->ty.dt], m->rank);
        for (int d = 0; d < m->rank; d++) sb_printf(b, "%s%d", d ? ", " : "", m->box[d]);
        sb_printf(b, "}, swizzle %s%s\n", swizzle_name(m->swz), m->store ? ", stores" : "");
    }
    sb_puts(b, "  producer:\n");
    for (int g = 0; g < pk->groups.n; g++) {
        const PlanGroup *pg = &pk->groups.v[g];
        int uncond = 0;
        bool conds = false;
        for (int i = 0; i < pg->loads.n; i++) {
            if (pg->loads.v[i].cond) conds = true;
            else uncond += plan_buf_tx_bytes(&pk->bufs.v[pg->loads.v[i].buf]);
        }
        if (conds)
            sb_printf(b, "    %s: wait %s, expect %s bytes + the bytes of the conditional loads that run (at most %s) on %s\n",
                      pg->once ? "per work tile" : "per step", pk->bars.v[pg->empty].name, fmt_bytes(uncond),
                      fmt_bytes(pg->bytes), pk->bars.v[pg->full].name);
        else
            sb_printf(b, "    %s: wait %s, expect %s bytes on %s\n", pg->once ? "per work tile" : "per step",
                      pk->bars.v[pg->empty].name, fmt_bytes(pg->bytes), pk->bars.v[pg->full].name);
        for (int i = 0; i < pg->loads.n; i++) {
            const PlanLoad *pl = &pg->loads.v[i];
            sb_puts(b, "      ");
            plan_stmt_text(b, pl->st);
            sb_printf(b, "  [%s, %d box%s%s", pk->maps.v[pl->map].name, pk->bufs.v[pl->buf].natoms,
                      pk->bufs.v[pl->buf].natoms == 1 ? "" : "es", pl->multicast ? ", multicast to the cluster" : "");
            if (pl->cond) {
                sb_puts(b, ", only when ");
                px_print(b, pl->cond);
            }
            if (pl->alternative) sb_printf(b, "; another branch's load of %s: the tile counts once", pk->bufs.v[pl->buf].name);
            sb_puts(b, "]\n");
        }
    }
    sb_puts(b, "  consumers:\n");
    if (pk->block_ops.n) {
        sb_puts(b, "    once per block, before the first work tile:\n");
        dump_ops(b, pk, &pk->block_ops, 3);
    }
    sb_puts(b, "    setup:\n");
    dump_ops(b, pk, &pk->setup_ops, 3);
    if (!pk->no_pipeline && pk->peel_first) {
        sb_puts(b, "    first step:\n");
        dump_ops(b, pk, &pk->first_ops, 3);
        sb_puts(b, "    every later step:\n");
        dump_ops(b, pk, &pk->compute_ops, 3);
    } else if (!pk->no_pipeline) {
        sb_puts(b, "    every step (the first one too):\n");
        dump_ops(b, pk, &pk->compute_ops, 3);
    }
    if (pk->tail) {
        const PlanTail *t = pk->tail;
        sb_puts(b, "    the last step, narrow, when ");
        px_print(b, t->bound);
        sb_puts(b, " - ");
        px_print(b, t->jw);
        sb_printf(b, " <= %d", t->cols);
        if (t->guard) {
            sb_puts(b, " and (");
            px_print(b, t->guard);
            sb_puts(b, ")");
        }
        for (int i = 0; i < t->scales.n; i++) {
            sb_puts(b, " and ");
            px_print(b, t->scales.v[i]);
            sb_puts(b, " > 0");
        }
        sb_printf(b, ":\n      the ops of every later step on %s %s[%d, %d] and %s; %s = ... [wgmma m64n%dk16]; after the "
                     "steps, %s over %d rows of %s\n",
                  t->s_narrow->name, dtype_name[t->s_narrow->ty.dt], t->s_narrow->ty.rows, t->cols, t->op_narrow->name,
                  t->s_narrow->name, t->cols, t->deferred->dst->name, t->cols, pk->bufs.v[t->deferred->b.buf].name);
    }
    sb_puts(b, pk->no_pipeline ? "    after setup:\n" : "    after the steps:\n");
    dump_ops(b, pk, &pk->after_ops, 3);
    sb_puts(b, "    finish:\n");
    dump_ops(b, pk, &pk->finish_ops, 3);
    for (int i = 0; i < pk->stores.n; i++) {
        const PlanStore *ps = &pk->stores.v[i];
        sb_printf(b, "  store (%s): ", block_name[ps->block]);
        plan_stmt_text(b, ps->st);
        switch (ps->path) {
        case SP_DIRECT: sb_puts(b, "  [direct from registers, no staging]\n"); break;
        case SP_STAGED:
            sb_printf(b, "  [%dx%d chunks through staging, %s]\n", ps->chunk_rows, ps->chunk_cols, pk->maps.v[ps->map].name);
            break;
        case SP_VECTOR:
            sb_puts(b, ps->st->rhs->ty.layout == VL_COL ? "  [per_col vector from registers, one thread per column]\n"
                                                                  : "  [vector from registers, one lane per row]\n");
            break;
        case SP_TMA: case SP_TMA_ADD:
            sb_printf(b, "  [%s of '%s', %s, issued by thread 0 of consumer 0]\n", ps->path == SP_TMA ? "TMA store" : "TMA reduce-add",
                      pk->bufs.v[ps->buf].name, pk->maps.v[ps->map].name);
            break;
        case SP_RED:
            sb_printf(b, "  [atomic add from registers: red.global.add.%s%s%s]\n",
                      ps->st->rhs->ty.dt == DT_FP32 ? "f32" : ps->st->rhs->ty.dt == DT_BF16 ? "bf16" : "f16",
                      ps->st->rhs->ty.kind != TY_TILE ? ""
                      : ps->st->rhs->ty.dt == DT_FP32 ? ", v2 where the strides allow" : ", x2 where the strides allow",
                      ps->wg0_only ? ", by the first warpgroup (per_wg)"
                      : ps->st->rhs->ty.partial ? ", by every warpgroup (partial: each adds its part)" : "");
            break;
        case SP_ROWS:
            sb_puts(b, "  [rowwise tile from registers: 16-byte stores of 8 columns where the strides allow]\n");
            break;
        }
    }
    sb_puts(b, "  decisions:\n");
    for (int i = 0; i < pk->notes.n; i++) sb_printf(b, "    - %s\n", pk->notes.v[i]);
}

void plan_mma_shape(const PlanMma *m, int *inst_n, int *count) {
    int ninst = m->n > 256 ? (m->n + 255) / 256 : 1;
    *inst_n = m->n / ninst;
    *count = (m->wg_m / 64) * (m->k / 16) * ninst;
}

char *plan_dump_kernel(const PlanKernel *pk) {
    StrBuf b;
    sb_init(&b);
    dump_kernel(&b, pk);
    return sb_take(&b);
}

static void dump_steps(StrBuf *b, const PESteps *l, int depth) {
    for (int i = 0; i < l->n; i++) {
        const PEStep *s = l->v[i];
        sb_printf(b, "%*s", 2 * depth, "");
        switch (s->kind) {
        case PE_LET:
            sb_printf(b, "let %s = ", s->name);
            px_print(b, s->value);
            sb_putc(b, '\n');
            break;
        case PE_SCRATCH:
            sb_printf(b, "scratch %s: %s[", s->name, dtype_name[s->dt]);
            for (int d = 0; d < s->rank; d++) {
                if (d) sb_puts(b, ", ");
                px_print(b, s->dims[d]);
            }
            sb_puts(b, "] (contiguous, on the stream)\n");
            break;
        case PE_CALL: {
            sb_printf(b, "launch %s(", s->name);
            for (int t = 0; t < s->tensors.n; t++)
                sb_printf(b, "%s%s%s%s", t ? ", " : "", s->tensors.v[t].name, s->tensors.v[t].trans ? ".T" : "",
                          s->tensors.v[t].scratch ? " (scratch)" : "");
            const SemaKernel *ck = s->callee->sk;
            for (int d = 0; d < s->dim_values.n; d++) {
                sb_printf(b, "%s%s = ", s->tensors.n || d ? ", " : "", ck->dims.v[d]->name);
                px_print(b, s->dim_values.v[d]);
            }
            for (int d = 0; d < s->scalar_values.n; d++) {
                sb_printf(b, ", %s = ", ck->scalars.v[d]->name);
                px_print(b, s->scalar_values.v[d]);
            }
            sb_puts(b, s->pdl ? ") (programmatic: may start while the kernel before it runs)\n" : ")\n");
            for (int c = 0; c < s->checks.n; c++) {
                sb_printf(b, "%*s  check ", 2 * depth, "");
                px_print(b, s->checks.v[c].a);
                sb_puts(b, " == ");
                px_print(b, s->checks.v[c].b);
                sb_printf(b, " (%s; else TKC_ERR_DIM)\n", s->checks.v[c].why);
            }
            break;
        }
        case PE_IF:
            sb_puts(b, "if ");
            px_print(b, s->value);
            if (s->decided) {
                sb_printf(b, " (%s at compile time)\n", s->taken ? "holds" : "fails: its else branch");
                dump_steps(b, &s->then_s, depth + 1);
                break;
            }
            sb_putc(b, '\n');
            dump_steps(b, &s->then_s, depth + 1);
            if (s->else_s.n) {
                sb_printf(b, "%*selse\n", 2 * depth, "");
                dump_steps(b, &s->else_s, depth + 1);
            }
            break;
        }
    }
}

static void dump_entry(StrBuf *b, const PlanEntry *pe) {
    sb_printf(b, "entry %s: a host launcher, no device code of its own\n", pe->name);
    sb_puts(b, "  args:");
    for (int i = 0; i < pe->sk->args.n; i++) {
        const Arg *g = pe->sk->args.v[i];
        sb_printf(b, "%s%s %s", i ? ", " : " ", argmode_name[g->mode], g->name);
        if (!g->ts.ndims) {
            sb_printf(b, ": %s", dtype_name[g->ts.dt]);
            continue;
        }
        sb_printf(b, ": %s[", dtype_name[g->ts.dt]);
        for (int d = 0; d < g->ts.ndims; d++) {
            if (d) sb_puts(b, ", ");
            px_print(b, pe->arg_dims.v[i][d]);
        }
        sb_putc(b, ']');
    }
    sb_puts(b, "\n  steps:\n");
    dump_steps(b, &pe->body, 2);
    sb_puts(b, "  decisions:\n");
    for (int i = 0; i < pe->notes.n; i++) sb_printf(b, "    - %s\n", pe->notes.v[i]);
    if (!pe->notes.n) sb_puts(b, "    - none: the steps run as written\n");
}

char *plan_dump(const Plan *p) {
    StrBuf b;
    sb_init(&b);
    for (int i = 0; i < p->kernels.n; i++) {
        if (i) sb_putc(&b, '\n');
        dump_kernel(&b, p->kernels.v[i]);
    }
    for (int i = 0; i < p->entries.n; i++) {
        sb_putc(&b, '\n');
        dump_entry(&b, p->entries.v[i]);
    }
    for (int i = 0; i < p->left_out.n; i++)
        sb_printf(&b, "%skernel %s: left out of this build, its condition is false\n", b.len ? "\n" : "", p->left_out.v[i]);
    return sb_take(&b);
}
