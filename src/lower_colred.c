/* lower_colred.c - column reductions (colsum, colmax, colmin), prefix sums of per_row vectors
 * (cumsum) and per_col vector stores: which statements have them, the registers they hold while
 * they run, the scratch buffers and named barriers the plan gives them (plan_colred, plan_scans),
 * and which warpgroup writes a per_col store. */
#include <string.h>

#include "lower_int.h"

/* ---- column reductions ------------------------------------------------------------------------ */

typedef struct ColReds {
    Lower *L;           /* NULL: only count */
    int regs;           /* the per_col arrays' registers (length / 4 each) */
    int cols;           /* the widest reduced tile */
    bool split, per_wg; /* of a row-split tile, of a per_wg tile */
    int n;
    int wg_depth;       /* inside an if or for whose condition or bounds read wg */
    bool step;          /* walking the compute or store block (the step) */
    bool pingpong_split; /* a row-split column reduction in a pingpong step */
    /* prefix sums of per_row vectors (cumsum): how many, of row-split and of per_wg vectors, and
     * the most 16-row groups one meets over (all consumer warpgroups' for a row-split vector) */
    int scans;
    bool scan_split, scan_wg;
    int scan_parts;
} ColReds;

static bool mentions_wg(const Expr *e) {
    if (!e) return false;
    switch (e->kind) {
    case EX_NAME: return e->sym && e->sym->kind == SYM_BUILTIN && e->sym->builtin == BI_WG;
    case EX_CALL:
        for (int i = 0; i < e->u.call.nargs; i++)
            if (mentions_wg(e->u.call.args[i])) return true;
        return false;
    case EX_BINARY: return mentions_wg(e->u.bin.l) || mentions_wg(e->u.bin.r);
    case EX_UNARY: return mentions_wg(e->u.un.e);
    case EX_COND: return mentions_wg(e->u.cond.c) || mentions_wg(e->u.cond.a) || mentions_wg(e->u.cond.b);
    default: return false;
    }
}

static void find_colreds_expr(const Expr *e, ColReds *cr) {
    if (!e) return;
    switch (e->kind) {
    case EX_CALL:
        if (e->fn == FN_COLSUM || e->fn == FN_COLMAX || e->fn == FN_COLMIN) {
            const Type *t = &e->u.call.args[0]->ty;
            if (t->cols > cr->cols) cr->cols = t->cols;
            if (t->per_wg) cr->per_wg = true;
            else cr->split = true;
            cr->n++;
            cr->regs += t->cols / 4;
            if (!cr->L) {
            } else if (!t->per_wg && cr->L->pk->consumers > 1 && cr->wg_depth)
                diag_error(cr->L->d, e->span,
                           "%s() of a row-split tile under a condition on wg: it combines the rows of every consumer "
                           "warpgroup, so every one must reach it, or they deadlock",
                           e->u.call.fn);
            else if (!t->per_wg && cr->L->pk->consumers > 1 && cr->step && cr->L->pk->pingpong)
                cr->pingpong_split = true;
        }
        if (e->fn == FN_CUMSUM && e->ty.kind == TY_VEC && e->ty.layout == VL_ROW) {
            const Type *t = &e->ty;
            int parts = t->rows / 16;
            if (parts > cr->scan_parts) cr->scan_parts = parts;
            if (t->per_wg) cr->scan_wg = true;
            else cr->scan_split = true;
            cr->scans++;
            if (cr->L && !t->per_wg && cr->L->pk->consumers > 1 && cr->wg_depth)
                diag_error(cr->L->d, e->span,
                           "cumsum() of a row-split per_row vector under a condition on wg: it adds up the rows of every "
                           "consumer warpgroup, so every one must reach it, or they deadlock");
        }
        for (int i = 0; i < e->u.call.nargs; i++) find_colreds_expr(e->u.call.args[i], cr);
        return;
    case EX_BINARY: find_colreds_expr(e->u.bin.l, cr); find_colreds_expr(e->u.bin.r, cr); return;
    case EX_UNARY: find_colreds_expr(e->u.un.e, cr); return;
    case EX_COND: find_colreds_expr(e->u.cond.a, cr); find_colreds_expr(e->u.cond.b, cr); return;
    case EX_INDEX: find_colreds_expr(e->u.index.base, cr); return;
    default: return;
    }
}

static void find_colreds(const StmtList *l, ColReds *cr) {
    for (int i = 0; i < l->n; i++) {
        const Stmt *st = l->v[i];
        switch (st->kind) {
        case ST_ASSIGN: find_colreds_expr(st->u.assign.rhs, cr); break;
        case ST_LET: find_colreds_expr(st->u.let.e, cr); break;
        case ST_IF: {
            int w = mentions_wg(st->u.if_.cond);
            cr->wg_depth += w;
            find_colreds(&st->u.if_.then_s, cr);
            find_colreds(&st->u.if_.else_s, cr);
            cr->wg_depth -= w;
            break;
        }
        case ST_FOR: {
            int w = mentions_wg(st->u.for_.lo) || mentions_wg(st->u.for_.hi);
            cr->wg_depth += w;
            find_colreds(&st->u.for_.body, cr);
            cr->wg_depth -= w;
            break;
        }
        case ST_EXPR: case ST_SCRATCH: break;
        }
    }
}

/* the per_col arrays' registers (length / 4 each) of the column reductions in x, and the arrays
 * prefix sums (cumsum) fill */
static int colred_regs(const PExpr *x) {
    if (!x) return 0;
    switch (x->kind) {
    case PX_CALL: {
        int n = 0;
        if (x->fn == FN_COLSUM || x->fn == FN_COLMAX || x->fn == FN_COLMIN) n += x->args[0]->ty.cols / 4;
        if (x->fn == FN_CUMSUM) n += x->ty.layout == VL_COL ? x->ty.rows / 4 : 2 * ((x->ty.rows + 63) / 64);
        for (int i = 0; i < x->nargs; i++) n += colred_regs(x->args[i]);
        return n;
    }
    case PX_BINARY: return colred_regs(x->l) + colred_regs(x->r);
    case PX_UNARY: return colred_regs(x->l);
    case PX_COND: return colred_regs(x->l) + colred_regs(x->r);
    case PX_INDEX: return colred_regs(x->base);
    default: return 0;
    }
}

/* registers the column reductions and prefix sums of one statement (an assignment or a let) hold
 * while it runs */
int stmt_colred_regs(const PStmt *st) { return colred_regs(st->rhs); }

/* does a uniform condition or bound read wg */
bool px_mentions_wg(const PExpr *x) {
    if (!x) return false;
    switch (x->kind) {
    case PX_NAME: return x->sym && x->sym->kind == SYM_BUILTIN && x->sym->builtin == BI_WG;
    case PX_CALL:
        for (int i = 0; i < x->nargs; i++)
            if (px_mentions_wg(x->args[i])) return true;
        return false;
    case PX_BINARY: return px_mentions_wg(x->l) || px_mentions_wg(x->r);
    case PX_UNARY: return px_mentions_wg(x->l);
    case PX_COND: return px_mentions_wg(x->cond) || px_mentions_wg(x->l) || px_mentions_wg(x->r);
    default: return false;
    }
}

/* which warpgroups make the stores of a value every warpgroup holds (the plan store's wg0_only).
 * Stores of row-split per_col vectors: one thread per column writes it, in warpgroup 0, unless a
 * condition on wg decides which warpgroups reach the store (the plan store's wg0_only). The same
 * for atomic adds of a per_wg value: the first warpgroup adds it, unless such a condition decides
 * (then each warpgroup that gets there adds its own copy: `if (wg == 1) { T[...] += x; }` is
 * warpgroup 1's) */
void plan_store_wgs(Lower *L, const POpList *ops, int wg_depth) {
    for (int i = 0; i < ops->n; i++) {
        const POp *o = ops->v[i];
        if (o->kind == POP_IF || o->kind == POP_FOR) {
            int w = o->kind == POP_IF ? px_mentions_wg(o->cond) : px_mentions_wg(o->lo) || px_mentions_wg(o->hi);
            plan_store_wgs(L, &o->then_ops, wg_depth + w);
            plan_store_wgs(L, &o->else_ops, wg_depth + w);
            continue;
        }
        if (o->kind != POP_STORE || o->store < 0) continue;
        PlanStore *ps = &L->pk->stores.v[o->store];
        const Type *t = &ps->st->rhs->ty;
        if (ps->path == SP_RED && ps->wg0_only && wg_depth) {
            ps->wg0_only = false;
            lower_note(L, "'%s += ...' (a per_wg value) is under a condition on wg: each warpgroup that gets there "
                       "adds its own copy", px_str(L->a, ps->st->lhs));
            continue;
        }
        if (ps->path != SP_VECTOR || t->layout != VL_COL || t->per_wg) continue;
        ps->wg0_only = !wg_depth;
        lower_note(L, "'%s <- ...' (a per_col vector): %s", px_str(L->a, ps->st->lhs),
                   wg_depth ? "under a condition on wg, so lanes 0..3 of the first warp of each warpgroup that gets "
                              "there write it (every warpgroup holds the same columns)"
                            : "lanes 0..3 of the first warp of consumer warpgroup 0 write it, one thread per column");
    }
}

/* a named barrier of count consecutive ids (one per consumer warpgroup, or 1); plan_named_bars
 * gives every barrier its id once lowering has asked for all of them */
static int add_named_barrier(Lower *L, const char *name, int count, int threads, const char *why) {
    PlanKernel *pk = L->pk;
    PlanNamedBar nb = {.name = name, .ids = count, .threads = threads, .why = why};
    vec_push(L->a, &pk->nbars, nb);
    return pk->nbars.n - 1;
}

/* Prefix sums of per_row vectors (cumsum) add up a thread's rows inside its warp with shuffles
 * (rows 16 w + l / 4 and + 8 of a 64-row block: 3 shuffles up by 4, 8 and 16 lanes, then the first
 * half's total into the second), then the warps meet: lane 0 of each warp writes its warp's total
 * of each 64-row block into a scratch row with one fp32 per 16-row group, between two named
 * barriers, and every thread adds the totals of the groups before its own, in one order. A
 * per_row vector's groups are all consumer warpgroups' for a row-split vector (length / 16 in
 * all, in the buffer's last row), and one warpgroup's for a per_wg vector (row wg). */
static void plan_scans(Lower *L, const ColReds *cr) {
    PlanKernel *pk = L->pk;
    /* rows: one per consumer warpgroup for per_wg vectors, then one for row-split vectors (apart, so
     * a warpgroup's own scan never writes where another warpgroup still reads a row-split one) */
    int cols = cr->scan_parts, rows = (cr->scan_wg ? pk->consumers : 0) + (cr->scan_split ? 1 : 0);
    PlanBuf b = {.name = "rowscan", .kind = BUF_SCRATCH, .dt = DT_FP32, .rows = rows, .cols = cols, .swz = SWZ_NONE,
                 .atom_cols = cols, .natoms = 1, .copies = 1, .align = 16, .group = -1};
    b.bytes = rows * cols * 4;
    vec_push(L->a, &pk->bufs, b);
    pk->rowscan_buf = pk->bufs.n - 1;
    if (cr->scan_split)
        pk->rowscan_bar = add_named_barrier(L, "rowscan", 1, 128 * pk->consumers,
                                            "prefix sums of row-split per_row vectors: every consumer warpgroup's warps");
    if (cr->scan_wg)
        pk->rowscan_wg_bar = add_named_barrier(L, "rowscan_wg", pk->consumers, 128,
                                               "prefix sums of per_wg per_row vectors: the 4 warps of one warpgroup");
    lower_note(L, "prefix sum%s (cumsum) of per_row vectors: 3 shuffles scan the 8 rows of each half of a warp's 16, "
                  "and the totals of the 16-row groups (%d in all) meet in 'rowscan' (one fp32 each) between two named "
                  "barriers; each thread adds the totals of the groups before its own, in one order",
               cr->scans > 1 ? "s" : "", cols);
}

/* Column reductions reduce a thread's rows, then the 8 lanes of a warp that hold the same columns
 * (shuffles), then the 4 warps of a warpgroup and, for a row-split tile, the consumer warpgroups:
 * lanes 0..3 of each warp write their partial results into a scratch row of the widest reduced
 * tile's columns, and after a named barrier every thread reads its columns' partial results in
 * the same order, so every thread holding a column gets the same value. */
void plan_colred(Lower *L) {
    SemaKernel *sk = L->sk;
    PlanKernel *pk = L->pk;
    pk->colred_buf = pk->colred_bar = pk->colred_wg_bar = -1;
    pk->rowscan_buf = pk->rowscan_bar = pk->rowscan_wg_bar = -1;
    ColReds cr = {.L = L};
    for (int b = 0; b < BK_COUNT; b++)
        if (sk->blocks[b] && b != BK_LOAD) {
            cr.step = b == BK_COMPUTE || b == BK_STORE;
            find_colreds(&sk->blocks[b]->u.block.body, &cr);
        }
    if (cr.scans) plan_scans(L, &cr);
    if (!cr.n) return;
    /* With pingpong the consumer warpgroups take turns on the tensor cores between named barriers
     * (wait for the turn, products, pass it on) and nothing else runs inside a turn, so a warpgroup
     * never waits for the other's column reduction while the other waits for its turn: the
     * reduction's barrier cannot deadlock, but it makes the warpgroups meet every step. */
    if (cr.pingpong_split)
        lower_note(L, "a column reduction of a row-split tile in a pingpong step: its barrier makes the consumer "
                   "warpgroups meet every step, outside their turns on the tensor cores, so one warpgroup's work no "
                   "longer runs under the other's products there");
    PlanBuf b = {.name = "colred", .kind = BUF_SCRATCH, .dt = DT_FP32, .rows = 4 * pk->consumers, .cols = cr.cols,
                 .swz = SWZ_NONE, .atom_cols = cr.cols, .natoms = 1, .copies = 1, .align = 16, .group = -1};
    b.bytes = b.rows * b.cols * 4;
    vec_push(L->a, &pk->bufs, b);
    pk->colred_buf = pk->bufs.n - 1;
    if (cr.split)
        pk->colred_bar = add_named_barrier(L, "colred", 1, 128 * pk->consumers,
                                           "column reductions of row-split tiles: every consumer warpgroup's warps");
    if (cr.per_wg)
        pk->colred_wg_bar = add_named_barrier(L, "colred_wg", pk->consumers, 128,
                                              "column reductions of per_wg tiles: the 4 warps of one warpgroup");
    lower_note(L, "column reduction%s: each thread reduces its rows, 3 shuffles reduce the 8 lanes of a warp that hold "
            "a column, and the partial results of the %s meet in 'colred' (one row of %d fp32 per warp) between two "
            "named barriers",
         cr.n > 1 ? "s" : "", cr.split && pk->consumers > 1 ? "warps of every consumer warpgroup" : "4 warps of a warpgroup",
         cr.cols);
}

