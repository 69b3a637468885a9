/* lower_rowwise.c - kernels whose register tiles are declared rowwise (memory-bound kernels: norms,
 * softmax): the row layout the plan gives them (hopper.h RowLayout: how many warps share a row,
 * how many consumer warpgroups that takes), what such a kernel may not do (products and moves
 * through shared memory need the accumulator layout), the scratch row reductions across the warps
 * of a row meet in, and how many blocks share an SM. Part of lowering (lower_int.h). */
#include <string.h>

#include "lower_int.h"

/* values a thread holds of each row it holds at most, before a row is spread over more warps */
enum { ROW_VALUES_MAX = 32 };

/* the width the kernel's rowwise tiles share, or 0 after a diagnostic */
static int rowwise_cols(Lower *L) {
    const SemaKernel *sk = L->sk;
    int cols = 0;
    const Symbol *first = NULL;
    for (int i = 0; i < sk->regs.n; i++) {
        const Symbol *y = sk->regs.v[i];
        if (y->ty.kind != TY_TILE) continue;
        if (!first) {
            first = y;
            cols = y->ty.cols;
        } else if (y->ty.cols != cols) {
            diag_error(L->d, y->span,
                       "rowwise tiles of a kernel share their width (the row layout is the kernel's): '%s' has %d "
                       "columns, '%s' %d",
                       y->name, y->ty.cols, first->name, cols);
            return 0;
        }
    }
    return cols;
}

void plan_rowwise(Lower *L) {
    const SemaKernel *sk = L->sk;
    PlanKernel *pk = L->pk;
    pk->rowred_buf = pk->rowred_bar = -1;
    if (!sk->rowwise) {
        if (sk->row_values)
            diag_error(L->d, sk->row_values_span, "row_values applies to kernels whose register tiles are rowwise; this "
                                                  "kernel's are in the wgmma accumulator layout");
        return;
    }
    pk->rowwise = true;
    int cols = rowwise_cols(L);
    if (!cols) return;
    /* spread a row over split warps so that a thread holds at most ROW_VALUES_MAX of it (or the
     * program's row_values): 16-byte chunks of 8 columns, lanes of a warp side by side (a warp
     * instruction moves 512 contiguous bytes of bf16), more warps and consumer warpgroups for
     * wide rows. More values a thread: fewer warps share a row (fewer barriers in its reductions)
     * and more bytes in flight a thread, at more registers. */
    const int most = sk->row_values ? sk->row_values : ROW_VALUES_MAX;
    int split = 1;
    while (cols / (32 * split) > most && split < 16) split *= 2;
    if (sk->row_values)
        lower_note(L, "row_values = %d (the program): a thread holds at most %d values of a row (the default is %d)",
                   sk->row_values, sk->row_values, ROW_VALUES_MAX);
    int consumers = pk->consumers;
    if (4 * consumers < split) {
        consumers = split / 4;
        lower_note(L, "rowwise: rows of %d columns are spread over %d warps, so %d consumer warpgroups", cols, split,
                   consumers);
    }
    if (consumers > 3) {
        diag_error(L->d, sk->rowwise_span,
                   "rowwise tiles of %d columns would need %d warps per row (%d consumer warpgroups); at most 3 "
                   "consumer warpgroups fit a block",
                   cols, split, consumers);
        return;
    }
    pk->consumers = consumers;
    if (!row_layout(cols, 4 * consumers, split, &pk->rw)) {
        diag_error(L->d, sk->rowwise_span,
                   "rowwise tiles of %d columns: the row layout needs a width of 8 x %d x a power of two (16-byte "
                   "chunks of 8 columns, %d warps per row)",
                   cols, split, split);
        return;
    }
    const RowLayout *r = &pk->rw;
    lower_note(L, "rowwise: every register value is in the row layout: %d warps, %d per row; a warp's %d lanes%s hold "
               "a row's share in chunks of 8 consecutive columns (one 16-byte load or store of bf16), %d chunk%s per "
               "lane per row; one pass of the warps covers %d rows",
               r->warps, r->split, r->lanes, r->rows_per_inst > 1 ? arena_printf(L->a, " (%d rows per warp)", r->rows_per_inst) : "",
               r->chunks, r->chunks == 1 ? "" : "s", row_layout_rows(r));
}

/* rowwise values: shapes the layout takes, and constructs it does not */
static void rowwise_expr(Lower *L, const Expr *e) {
    if (!e) return;
    switch (e->kind) {
    case EX_TRANSPOSE:
        diag_error(L->d, e->span, "a rowwise kernel cannot transpose register tiles (products and relayouts need the "
                                  "accumulator layout)");
        return;
    case EX_INDEX:
        if (e->u.index.base->ty.space == MS_REG && e->u.index.base->ty.kind != TY_TENSOR) {
            diag_error(L->d, e->span, "slices of rowwise register values are not supported by the sm_90a back end yet");
            return;
        }
        rowwise_expr(L, e->u.index.base);
        return;
    case EX_CALL:
        if (e->fn == FN_COLSUM || e->fn == FN_COLMAX || e->fn == FN_COLMIN) {
            diag_error(L->d, e->span, "column reductions of rowwise tiles are not supported by the sm_90a back end yet");
            return;
        }
        if (e->fn == FN_CUMSUM) {
            diag_error(L->d, e->span, "cumsum() in a rowwise kernel is not supported by the sm_90a back end yet (its "
                                      "shuffles follow the wgmma accumulator layout)");
            return;
        }
        for (int i = 0; i < e->u.call.nargs; i++) rowwise_expr(L, e->u.call.args[i]);
        return;
    case EX_BINARY:
        if (e->u.bin.op == BIN_MATMUL) {
            diag_error(L->d, e->span, "products read register tiles in the wgmma accumulator layout; a rowwise kernel "
                                      "has no products");
            return;
        }
        rowwise_expr(L, e->u.bin.l);
        rowwise_expr(L, e->u.bin.r);
        return;
    case EX_UNARY: rowwise_expr(L, e->u.un.e); return;
    case EX_COND:
        rowwise_expr(L, e->u.cond.a);
        rowwise_expr(L, e->u.cond.b);
        return;
    default: return;
    }
}

static void rowwise_stmts(Lower *L, const StmtList *l) {
    for (int i = 0; i < l->n; i++) {
        const Stmt *st = l->v[i];
        switch (st->kind) {
        case ST_ASSIGN: {
            const Expr *lhs = st->u.assign.lhs, *rhs = st->u.assign.rhs;
            if ((st->mv == MV_S2R || st->mv == MV_R2S) && (lhs->ty.kind == TY_TILE || rhs->ty.kind == TY_TILE)) {
                diag_error(L->d, st->span, "moves of rowwise tiles between registers and shared memory are not "
                                           "supported by the sm_90a back end yet (ldmatrix and stmatrix address the "
                                           "accumulator layout)");
                break;
            }
            if (st->mv == MV_NONE && lhs->ty.kind == TY_VEC && rhs->ty.kind == TY_VEC && lhs->ty.layout != rhs->ty.layout) {
                diag_error(L->d, st->span, "per_row <-> per_col relayouts in a rowwise kernel are not supported by the "
                                           "sm_90a back end yet");
                break;
            }
            if (st->mv == MV_NONE) rowwise_expr(L, lhs);
            rowwise_expr(L, rhs);
            break;
        }
        case ST_LET: rowwise_expr(L, st->u.let.e); break;
        case ST_IF:
            rowwise_stmts(L, &st->u.if_.then_s);
            rowwise_stmts(L, &st->u.if_.else_s);
            break;
        case ST_FOR: rowwise_stmts(L, &st->u.for_.body); break;
        case ST_EXPR: case ST_SCRATCH: break;
        }
    }
}

/* what a rowwise kernel may not do, and the shapes of its values */
void check_rowwise(Lower *L) {
    const SemaKernel *sk = L->sk;
    PlanKernel *pk = L->pk;
    if (!pk->rowwise || !pk->rw.cols) return;
    for (int b = 0; b < BK_COUNT; b++)
        if (sk->blocks[b] && b != BK_LOAD) rowwise_stmts(L, &sk->blocks[b]->u.block.body);
}

/* does x hold a row reduction */
static bool has_rowred(const PExpr *x) {
    if (!x) return false;
    switch (x->kind) {
    case PX_CALL:
        if (x->fn == FN_ROWSUM || x->fn == FN_ROWMAX || x->fn == FN_ROWMIN) return true;
        for (int i = 0; i < x->nargs; i++)
            if (has_rowred(x->args[i])) return true;
        return false;
    case PX_BINARY: return has_rowred(x->l) || has_rowred(x->r);
    case PX_UNARY: return has_rowred(x->l);
    case PX_COND: return has_rowred(x->l) || has_rowred(x->r);
    default: return false;
    }
}

static bool ops_rowred(const POpList *ops) {
    for (int i = 0; i < ops->n; i++) {
        const POp *o = ops->v[i];
        if (o->st && has_rowred(o->st->rhs)) return true;
        if (ops_rowred(&o->then_ops) || ops_rowred(&o->else_ops)) return true;
    }
    return false;
}

/* the most row iterations a per_row value of the kernel has (the scratch's slots per warp) */
static int max_row_iters(const PlanKernel *pk) {
    int q = 1;
    for (int i = 0; i < pk->regs.n; i++) {
        const Type *t = &pk->regs.v[i].sym->ty;
        int n = t->rows / row_layout_rows(&pk->rw);
        if ((t->kind == TY_TILE || (t->kind == TY_VEC && t->layout == VL_ROW)) && n > q) q = n;
    }
    return q;
}

/* Row reductions of rows spread over several warps: after the shuffles inside each warp, lane 0
 * of every warp writes its partial results into a scratch row per warp and, after a named
 * barrier over the consumer warps, each thread combines those of the warps of its row (in the
 * same order in every thread, so every thread of a row gets the same value). The scratch has two
 * copies that successive reductions alternate: reduction k + 2 writes reduction k's copy only
 * after every thread has passed reduction k + 1's barrier, so after its reads of reduction k,
 * and no barrier is needed before the writes. */
void plan_rowred(Lower *L) {
    PlanKernel *pk = L->pk;
    if (!pk->rowwise || pk->rw.split < 2) return;
    if (!ops_rowred(&pk->setup_ops) && !ops_rowred(&pk->finish_ops) && !ops_rowred(&pk->compute_ops)) return;
    int q = max_row_iters(pk);
    PlanBuf b = {.name = "rowred", .kind = BUF_SCRATCH, .dt = DT_FP32, .rows = pk->rw.warps, .cols = q, .is_vec = false,
                 .swz = SWZ_NONE, .atom_cols = q, .natoms = 1, .copies = 2, .align = 16, .group = -1};
    b.bytes = (pk->rw.warps * q * 4 + 15) / 16 * 16;
    vec_push(L->a, &pk->bufs, b);
    pk->rowred_buf = pk->bufs.n - 1;
    PlanNamedBar nb = {.name = "rowred", .ids = 1, .threads = 128 * pk->consumers,
                       .why = "row reductions across the warps that share a row"};
    vec_push(L->a, &pk->nbars, nb);
    pk->rowred_bar = pk->nbars.n - 1;
    lower_note(L, "row reductions: each thread reduces its values, shuffles reduce the %d lanes of a warp that share a row, "
               "and the partial results of the %d warps of a row meet in 'rowred' (%d fp32 per warp) after one named "
               "barrier; successive reductions alternate its two copies, so none waits before writing",
               pk->rw.lanes, pk->rw.split, q);
}

/* a kernel with nothing to load has no producer: every warpgroup is a consumer, without
 * setmaxnreg, and the blocks an SM holds at once follow from the register estimate */
void plan_no_producer(Lower *L) {
    PlanKernel *pk = L->pk;
    if (!pk->no_pipeline || pk->groups.n) {
        if (L->sk->blocks_per_sm > 1 && !L->sk->pipe)
            diag_error(L->d, L->sk->blocks_span, "blocks_per_sm = %d in a kernel without a pipeline that loads tiles: its "
                       "producer's setmaxnreg split is for one block per SM; load into registers (no producer) or "
                       "use a pipeline", L->sk->blocks_per_sm);
        return;
    }
    pk->no_producer = true;
    pk->threads = 128 * pk->consumers;
    pk->consumer_regs = 255;
    /* the estimate counts values; ptxas adds addresses, predicates and the loads in flight, and
     * the Philox calls made per element */
    const int philox = plan_philox_regs(pk);  /* not in the budget check: a kernel given more compiles them */
    int est = (pk->reg_estimate + 16 + philox + 7) / 8 * 8;
    if (philox)
        lower_note(L, "rand() / keep() outside rowwise tiles: one Philox call per element; the calls ptxas runs at "
                      "once take about %d registers more, counted in the blocks per SM", philox);
    if (est < 32) est = 32;
    int blocks = REG_FILE / (pk->threads * est);
    if (blocks > 2048 / pk->threads) blocks = 2048 / pk->threads;
    if (blocks > 16) blocks = 16;
    pk->min_blocks = blocks > 0 ? blocks : 1;
    if (L->sk->blocks_per_sm) {
        if (L->sk->blocks_per_sm * pk->threads > 2048)
            diag_error(L->d, L->sk->blocks_span, "blocks_per_sm = %d: %d blocks of %d threads are more than an SM's 2,048",
                       L->sk->blocks_per_sm, L->sk->blocks_per_sm, pk->threads);
        lower_note(L, "blocks_per_sm = %d (the program; the estimate gave %d): ptxas fits each thread into %d registers",
                   L->sk->blocks_per_sm, pk->min_blocks, block_reg_cap(pk->threads, L->sk->blocks_per_sm));
        pk->min_blocks = L->sk->blocks_per_sm;
    }
    lower_note(L, "nothing to load: no producer warpgroup; %d consumer thread%s per block and no setmaxnreg; about %d "
               "registers per thread (estimate %d), so %d block%s per SM (__launch_bounds__)",
               pk->threads, pk->threads == 1 ? "" : "s", est, pk->reg_estimate, pk->min_blocks, pk->min_blocks == 1 ? "" : "s");
}
