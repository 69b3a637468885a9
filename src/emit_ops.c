/* emit_ops.c - the CUDA emitter's consumer ops: products (wgmma) and the pins after their waits,
 * the load groups' barriers, and the dispatch of statements and plan ops with their #line
 * directives. Part of the CUDA emitter (emit_int.h). */
#include "emit_int.h"

/* ---- products, their pins, group barriers ----------------------------------------------------- */


static void emit_mma(Em *e, const POp *o) {
    const PlanKernel *pk = e->pk;
    const PlanMma *m = o->mma;
    const PlanBuf *bb = &pk->bufs.v[m->b.buf];
    int nn, count;
    plan_mma_shape(m, &nn, &count);
    int ninst = m->n / nn;
    const char *dtn = m->in_dt == DT_BF16 ? "bf16" : "fp16";
    const char *form = m->a_reg ? "rs" : "ss";
    char frag[64];
    snprintf(frag, sizeof frag, "wgmma_m64n%dk16_%s_%s", nn, form, dtn);
    need(e, "wgmma.cuh", arena_strdup(e->a, frag));
    need(e, "tkc_ptx.cuh", "wgmma_sync");
    const char *dst = m->dst->name;
    int dhalf = m->n / 2;
    L("// %s %s %s  [wgmma m64n%dk16 x %d, %s]", m->dst->name, assignop_name[o->st->op],
      px_str(e->a, o->st->rhs), nn, count,
      m->a_reg ? "A from registers" : "A and B from shared memory");
    if (o->skip_first && e->mode == STEP_NONE) {
        L("if (tkc_steps > 0) {");
        IN();
    } else {
        L("{");
        IN();
    }
    /* a register A operand: the packed 16-bit pairs */
    const char *apairs = NULL;
    if (m->a_reg) {
        if (m->a_tmp) {
            apairs = m->a_tmp->name;
            if (!m->deferred) {
                /* convert now; the registers stay pinned until the product is waited for */
                const char *k = m->in_dt == DT_BF16 ? "bf16" : "fp16";
                need(e, "tkc_ptx.cuh", "math");
                const PExpr *src = m->a_expr->kind == PX_CALL ? m->a_expr->args[0] : m->a_expr;
                e->hoisted.n = 0;
                hoist_row_values(e, src);
                L("#pragma unroll");
                L("for (int tkc_p = 0; tkc_p < %d; ++tkc_p) %s[tkc_p] = tkc_pack_%s(%s, %s);", frag_count(pk, &m->a_expr->ty) / 2, apairs, k,
                  elem_str(e, src, &(Ctx){CX_TILE, m->a_expr->ty.cols, rows_wg(pk, &m->a_expr->ty), m->a_expr->ty.per_wg, "(2 * tkc_p)"}),
                  elem_str(e, src, &(Ctx){CX_TILE, m->a_expr->ty.cols, rows_wg(pk, &m->a_expr->ty), m->a_expr->ty.per_wg, "(2 * tkc_p + 1)"}));
            }
        } else {
            apairs = m->a_expr->sym->name;
        }
    }
    L("#pragma unroll");
    L("for (int tkc_i = 0; tkc_i < %d; ++tkc_i) tkc_pin(%s[tkc_i]);", frag_count(pk, &m->dst->ty), dst);
    L("tkc_wgmma_fence();");
    MmaOperandLayout bl;
    TileLayout btl = {bb->rows, bb->cols, dtype_bytes[bb->dt], bb->swz};
    bl = mma_operand_layout(&btl, m->b.mn_major);
    uint32_t b0 = m->b.mn_major ? mma_operand_offset(&btl, true, m->b.col0, m->b.row0)
                                : mma_operand_offset(&btl, false, m->b.row0, m->b.col0);
    L("const uint64_t tkc_db = tkc_desc(%s + %u, %u, %u, %d);  // %s: %s, %s", buf_addr(e, m->b.buf, o->prev), b0, bl.lbo,
      bl.sbo, bl.mode, bb->name, m->b.mn_major ? "N-major" : "K-major", swizzle_name(bb->swz));
    TileLayout atl = {0};
    if (!m->a_reg) {
        const PlanBuf *ab = &pk->bufs.v[m->a.buf];
        atl = (TileLayout){ab->rows, ab->cols, dtype_bytes[ab->dt], ab->swz};
        MmaOperandLayout al = mma_operand_layout(&atl, m->a.mn_major);
        uint32_t a0 = m->a.mn_major ? mma_operand_offset(&atl, true, m->a.col0, m->a.row0)
                                    : mma_operand_offset(&atl, false, m->a.row0, m->a.col0);
        const char *wgoff = "";
        bool split = !m->dst->ty.per_wg;
        if (split) {
            uint32_t step = mma_operand_offset(&atl, m->a.mn_major, m->wg_m, 0) - mma_operand_offset(&atl, m->a.mn_major, 0, 0);
            wgoff = arena_printf(e->a, " + (uint32_t)wg * %u", step);
        }
        L("const uint64_t tkc_da = tkc_desc(%s + %u%s, %u, %u, %d);  // %s: %s, %s", buf_addr(e, m->a.buf, o->prev), a0, wgoff,
          al.lbo, al.sbo, al.mode, ab->name, m->a.mn_major ? "M-major" : "K-major", swizzle_name(ab->swz));
    }
    for (int rb = 0; rb < m->wg_m / 64; rb++)
        for (int p = 0; p < ninst; p++)
            for (int kk = 0; kk < m->k / 16; kk++) {
                uint32_t boff = mma_operand_offset(&btl, m->b.mn_major, p * nn, kk * 16) - mma_operand_offset(&btl, m->b.mn_major, 0, 0);
                const char *sd = "1";
                if (kk == 0 && !m->accumulate) sd = "0";
                else if (kk == 0 && m->zero_first) sd = e->mode == STEP_FIRST ? "0" : "1";
                int sa = m->negate ? -1 : 1;
                const char *acc = arena_printf(e->a, "&%s[%d]", dst, rb * dhalf + p * nn / 2);
                if (m->a_reg) {
                    int q = rb * (m->k / 4) + 4 * kk;
                    L("tkc_wgmma_m64n%dk16_rs_%s<%d, %d>(%s, %s[%d], %s[%d], %s[%d], %s[%d], tkc_db + %u, %s);", nn, dtn,
                      m->b.mn_major, sa, acc, apairs, q, apairs, q + 1, apairs, q + 2, apairs, q + 3, boff >> 4, sd);
                } else {
                    uint32_t aoff = mma_operand_offset(&atl, m->a.mn_major, rb * 64, kk * 16) - mma_operand_offset(&atl, m->a.mn_major, 0, 0);
                    L("tkc_wgmma_m64n%dk16_ss_%s<%d, %d, %d>(%s, tkc_da + %u, tkc_db + %u, %s);", nn, dtn, m->a.mn_major,
                      m->b.mn_major, sa, acc, aoff >> 4, boff >> 4, sd);
                }
            }
    L("tkc_wgmma_commit();");
    L("#pragma unroll");
    L("for (int tkc_i = 0; tkc_i < %d; ++tkc_i) tkc_pin(%s[tkc_i]);", frag_count(pk, &m->dst->ty), dst);
    OUT();
    L("}");
}

/* after a wgmma.wait_group: pin the registers of the products it completed, so the compiler
 * neither moved nor reused them while the products ran (products still in flight are left
 * alone: touching their registers would make ptxas serialize the pipeline) */
static void emit_pins(Em *e, const POp *w) {
    Vec(const Symbol *) done = {0};
    for (int i = 0; i < w->done.n; i++) {
        const PlanMma *m = w->done.v[i]->mma;
        if (e->nar && m == e->nar->first) m = &e->nar->first_narrow;
        const Symbol *ys[2] = {m->dst, m->a_tmp};
        for (int k = 0; k < 2; k++) {
            const Symbol *y = ys[k];
            if (!y) continue;
            bool seen = false;
            for (int j = 0; j < done.n; j++) seen |= done.v[j] == y;
            if (seen) continue;
            vec_push(e->a, &done, y);
            int n = frag_count(e->pk, &y->ty);
            if (y->ty.kind == TY_TILE && is16(y->ty.dt)) n /= 2;
            L("#pragma unroll");
            L("for (int tkc_i = 0; tkc_i < %d; ++tkc_i) tkc_pin(%s[tkc_i]);", n, y->name);
        }
    }
}

const char *group_bar(Em *e, int g, bool full, bool prev) {
    const PlanGroup *pg = &e->pk->groups.v[g];
    const PlanBarrier *b = &e->pk->bars.v[full ? pg->full : pg->empty];
    if (pg->once) return b->copies > 1 ? arena_printf(e->a, "%s + 8 * %s", b->name, e->slot) : b->name;
    return arena_printf(e->a, "%s + 8 * %s", b->name, prev ? "tkc_prev_stage" : "tkc_stage");
}

/* ---- statements and ops ----------------------------------------------------------------------- */

static void emit_stmt(Em *e, const PStmt *st) {
    switch (st->kind) {
    case PS_LET: {
        const Symbol *y = st->let;
        if (y->ty.kind == TY_TILE || y->ty.kind == TY_VEC) {
            L("%s", reg_decl(e, y));
            PStmt fake = {.kind = PS_ASSIGN, .span = st->span};
            fake.op = AS_SET;
            fake.rhs = st->rhs;
            emit_reg_assign(e, &fake, NULL, y->name, &y->ty);
        } else {
            L("const %s %s = %s;", y->ty.kind == TY_FLOAT ? "float" : "int", y->name, scalar_str(e, st->rhs, false));
        }
        return;
    }
    case PS_ASSIGN:
        if (st->mv == MV_G2R) {
            if (st->lhs->ty.kind == TY_TILE) emit_rows_load(e, st);
            else emit_vec_load(e, st);
            return;
        }
        if (st->mv == MV_S2R) {
            emit_vec_from_shared(e, st);
            return;
        }
        emit_reg_assign(e, st, st->lhs, NULL, &st->lhs->ty);
        return;
    default:
        return;
    }
}

void emit_op(Em *e, const POp *o) {
    const PlanKernel *pk = e->pk;
    /* ops that need a previous step: always true inside the loop (it starts at step 1) */
    const char *guard = e->mode == STEP_NONE ? "tkc_steps > 0" : NULL;
    switch (o->kind) {
    case POP_STMT:
        if (o->st->kind == PS_ASSIGN) {
            StrBuf b;
            sb_init(&b);
            if (o->st->origin) sb_printf(&b, "%s: ", plan_stmt_str(e->a, o->st->origin));
            px_print(&b, o->st->lhs);
            sb_printf(&b, " %s ", assignop_name[o->st->op]);
            px_print(&b, o->st->rhs);
            L("// %s", b.s);
            sb_free(&b);
        } else if (o->st->kind == PS_LET) {
            L("// let %s = %s", o->st->let->name, px_str(e->a, o->st->rhs));
        }
        emit_stmt(e, o->st);
        return;
    case POP_MMA:
        if (e->nar && o->mma == e->nar->first) {
            POp narrow = *o;
            narrow.mma = (PlanMma *)&e->nar->first_narrow;  /* read only */
            emit_mma(e, &narrow);
        } else if (pk->tail && o->mma == pk->tail->deferred && e->mode == STEP_NONE) {
            /* the last step's deferred product: over the narrow copy's columns when it ran narrow */
            POp narrow = *o;
            narrow.mma = (PlanMma *)&pk->tail->deferred_narrow;  /* read only */
            L("// %s %s %s: the last step's, over %d rows of %s when that step ran narrow", o->mma->dst->name,
              assignop_name[o->st->op], px_str(e->a, o->st->rhs), pk->tail->cols,
              pk->bufs.v[o->mma->b.buf].name);
            L("if (tkc_narrow) {");
            IN();
            emit_mma(e, &narrow);
            OUT();
            L("} else {");
            IN();
            emit_mma(e, o);
            OUT();
            L("}");
        } else {
            emit_mma(e, o);
        }
        return;
    case POP_MATERIALIZE: {
        const PlanMma *m = e->nar && o->mma == e->nar->deferred ? &e->nar->deferred_narrow : o->mma;
        const char *k = m->in_dt == DT_BF16 ? "bf16" : "fp16";
        const PExpr *src = m->a_expr->kind == PX_CALL && (m->a_expr->fn == FN_BF16 || m->a_expr->fn == FN_FP16)
                              ? m->a_expr->args[0] : m->a_expr;
        need(e, "tkc_ptx.cuh", "math");
        e->hoisted.n = 0;
        hoist_row_values(e, src);
        const Type *at = value_type(e, m->a_expr);
        Ctx c0 = tile_ctx(pk, at, "(2 * tkc_p)"), c1 = tile_ctx(pk, at, "(2 * tkc_p + 1)");
        L("// %s = %s: the A operand of the deferred product", m->a_tmp->name, px_str(e->a, m->a_expr));
        L("#pragma unroll");
        L("for (int tkc_p = 0; tkc_p < %d; ++tkc_p) %s[tkc_p] = tkc_pack_%s(%s, %s);", frag_count(pk, at) / 2, m->a_tmp->name, k,
          elem_str(e, src, &c0), elem_str(e, src, &c1));
        return;
    }
    case POP_WAIT_FULL: {
        const PlanGroup *pg = &pk->groups.v[o->group];
        const char *par = pg->once ? "tkc_tile_phase" : o->prev ? "tkc_prev_phase" : "tkc_phase";
        if (o->skip_first && guard) L("if (%s) tkc_mbar_wait(%s, %s);  // %s landed", guard, group_bar(e, o->group, true, o->prev), par, pg->name);
        else L("tkc_mbar_wait(%s, %s);  // %s landed", group_bar(e, o->group, true, o->prev), par, pg->name);
        return;
    }
    case POP_WAIT_MMA:
        L("tkc_wgmma_wait<%d>();%s%s", o->n, o->note ? "  // " : "", o->note ? o->note : "");
        emit_pins(e, o);
        return;
    case POP_RELEASE: {
        const PlanGroup *pg = &pk->groups.v[o->group];
        /* one thread per warpgroup, or lane 0 of every warp once the warp's own loads are done */
        const char *who = pg->warp_release ? "tkc_lane == 0" : "tkc_wg_thread == 0";
        if (pg->warp_release) {
            /* the warp's own loads read the tiles through the generic proxy and the producer refills
             * them with TMA (the async proxy): each thread fences its reads before the release */
            need(e, "tkc_ptx.cuh", "proxy_fence");
            L("tkc_fence_proxy_async();  // this thread's reads of %s are done before TMA refills it", pg->name);
            L("__syncwarp();  // every lane of this warp is done with %s", pg->name);
        }
        const char *cond = o->skip_first && guard ? arena_printf(e->a, "%s && %s", guard, who) : who;
        if (o->last_step) cond = arena_printf(e->a, "%s == tkc_steps - 1 && %s", e->sk->loopvar->name, who);
        if (o->no_steps) cond = arena_printf(e->a, "tkc_steps == 0 && %s", who);
        if (pg->multicast && pk->cluster > 1)
            L("if (%s) for (uint32_t tkc_c = 0; tkc_c < %d; ++tkc_c) tkc_mbar_arrive_cluster(%s, tkc_c);  // release %s%s "
              "in every block of the cluster",
              cond, pk->cluster, group_bar(e, o->group, false, o->prev), pg->name, o->prev ? " (previous step)" : "");
        else
            L("if (%s) tkc_mbar_arrive(%s);  // release %s%s%s%s", cond, group_bar(e, o->group, false, o->prev), pg->name,
              o->prev ? " (previous step)" : "", o->last_step || o->no_steps ? ": " : "",
              o->last_step || o->no_steps ? o->note : "");
        return;
    }
    case POP_IF:
        L("if (%s) {", scalar_str(e, o->cond, false));
        IN();
        emit_ops(e, &o->then_ops);
        OUT();
        if (o->else_ops.n) {
            L("} else {");
            IN();
            emit_ops(e, &o->else_ops);
            OUT();
        }
        L("}");
        return;
    case POP_FOR: {
        const char *v = o->var->name;
        if (o->lo->is_const && o->hi->is_const) L("#pragma unroll");
        L("for (int %s = %s; %s < %s; ++%s) {", v, scalar_str(e, o->lo, false), v, scalar_str(e, o->hi, false), v);
        IN();
        emit_ops(e, &o->then_ops);
        OUT();
        L("}");
        return;
    }
    case POP_SYNC:
        need(e, "tkc_ptx.cuh", "named_barrier");
        L("tkc_bar_sync(%d, %d);  // sync(): all consumer warpgroups", pk->nbars.v[pk->nbar_sync].id, 128 * pk->consumers);
        return;
    case POP_PP_WAIT:
        need(e, "tkc_ptx.cuh", "named_barrier");
        L("tkc_bar_sync(%d + wg, 256);  // pingpong: wait for this warpgroup's turn on the tensor cores",
          pk->nbars.v[pk->nbar_pingpong].id);
        return;
    case POP_MOVE:
        L("// %s%s%s  [%s]", o->st->origin ? plan_stmt_str(e->a, o->st->origin) : "", o->st->origin ? ": " : "",
          plan_stmt_str(e->a, o->st), movepath_name[o->mv->path]);
        if (o->mv->path >= MP_LDS_T) emit_move_relayout(e, o->mv);
        else if (o->mv->to_shared) emit_move_r2s(e, o->mv);
        else emit_move_s2r(e, o->mv);
        return;
    case POP_BAR: {
        const PlanNamedBar *nb = &pk->nbars.v[o->bar];
        need(e, "tkc_ptx.cuh", "named_barrier");
        if (o->bulk_read) {
            need(e, "tkc_ptx.cuh", "tma_store");
            L("if (wg == 0 && tkc_wg_thread == 0) tkc_bulk_wait_read<0>();  // TMA stores have read '%s'",
              pk->bufs.v[o->buf].name);
        }
        L("tkc_bar_sync(%d%s, %d);  // %s: %s", nb->id, nb->ids > 1 ? " + wg" : "", nb->threads, nb->name,
          o->note ? o->note : nb->why);
        return;
    }
    case POP_FENCE:
        need(e, "tkc_ptx.cuh", "proxy_fence");
        L("tkc_fence_proxy_async();  // %s", o->note ? o->note : "visible to the async proxy");
        return;
    case POP_STORE:
        emit_store(e, o);
        return;
    case POP_PP_PASS:
        L("tkc_bar_arrive(%d + (wg + 1) %% %d, 256);  // pingpong: the next warpgroup's turn", pk->nbars.v[pk->nbar_pingpong].id,
          pk->consumers);
        return;
    }
}

/* --line-directives: code from a .tk statement is preceded by "#line <its line> <the .tk>" and
 * followed by a directive back to the .cu; TKC_NEXT_LINE is replaced with the real line number
 * once the whole file is assembled */
void line_to_tk(Em *e, Span sp) {
    if (!e->o->line_directives || !e->o->diag || sp.file < 0) return;
    int line, col;
    diag_linecol(e->o->diag, sp, &line, &col);
    sb_printf(e->b, "#line %d \"%s\"\n", line, e->o->diag->files.v[sp.file].path);
}

void line_back(Em *e) {
    if (!e->o->line_directives) return;
    sb_printf(e->b, "#line TKC_NEXT_LINE \"%s\"\n", e->o->output_name);
}

void emit_ops(Em *e, const POpList *ops) {
    for (int i = 0; i < ops->n; i++) {
        const POp *o = ops->v[i];
        bool mapped = o->st && (o->kind == POP_STMT || o->kind == POP_MMA || o->kind == POP_MATERIALIZE ||
                                o->kind == POP_MOVE || o->kind == POP_STORE);
        if (mapped) line_to_tk(e, o->st->span);
        emit_op(e, o);
        if (mapped) line_back(e);
    }
}

void emit_op_range(Em *e, const POpList *ops, int from, int to) {
    POpList part = {.v = ops->v + from, .n = to - from, .cap = to - from};
    emit_ops(e, &part);
}
