/* lower_util.c - what every lowering step uses: notes, new plan ops, the shared buffer of a
 * symbol, the register symbols and shared tiles a statement or op reads and writes (the effects
 * the scheduler and the passes reason with), register shapes and sizes, a shared tile's layout.
 * It imports nothing else of lowering, so the steps and passes (lower_int.h) stand above it. */
#include <string.h>

#include "lower_int.h"

void lower_note(Lower *L, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    StrBuf b;
    sb_init(&b);
    sb_vprintf(&b, fmt, ap);
    va_end(ap);
    vec_push(L->a, &L->pk->notes, arena_strdup(L->a, b.s));
    sb_free(&b);
}


POp *pop_new(Lower *L, POpKind k) {
    POp *o = ARENA_NEW(L->a, POp);
    o->kind = k;
    o->group = -1;
    o->bar = o->buf = o->store = -1;
    return o;
}

/* the plan's tree of a statement, made once (later calls return the same one) */
PStmt *lower_ps(Lower *L, const Stmt *st) {
    for (int i = 0; i < L->translated.n; i++)
        if (L->translated.v[i].st == st) return L->translated.v[i].ps;
    PStmt *ps = ps_from_ast(L->a, st);
    vec_push(L->a, &L->translated, ((Translated){st, ps}));
    return ps;
}

PStmt *ps_new(Lower *L, PStmtKind k, Span sp) {
    PStmt *ps = ARENA_NEW(L->a, PStmt);
    ps->kind = k;
    ps->span = sp;
    return ps;
}

int buf_of_sym(PlanKernel *pk, const Symbol *y) {
    for (int i = 0; i < pk->bufs.n; i++)
        if (pk->bufs.v[i].sym == y) return i;
    return -1;
}

/* the shared tile an MMA operand expression names: t, t.T, t[slice], prev(t) */
PExpr *operand_root(PExpr *e, bool *trans, bool *prev, int *r0, int *c0) {
    *trans = false;
    *prev = false;
    *r0 = *c0 = 0;
    for (;;) {
        if (e->kind == PX_TRANSPOSE) {
            /* the slice origins found so far (outside this .T) are in the transposed view's
             * coordinates: below it they are the other way round */
            int t = *r0;
            *r0 = *c0;
            *c0 = t;
            *trans = !*trans;
            e = e->base;
        } else if (e->kind == PX_CALL && e->fn == FN_PREV) {
            *prev = true;
            e = e->args[0];
        } else if (e->kind == PX_INDEX) {
            PIndex *ra = &e->ix[0], *ca = &e->ix[1];
            int rl = ra->lo ? (int)ra->lo->cval : 0, cl = ca->lo ? (int)ca->lo->cval : 0;
            /* in the coordinates of the tile this index slices (the .T above it swapped those of outer slices) */
            *r0 += rl;
            *c0 += cl;
            e = e->base;
        } else {
            return e;
        }
    }
}

/* ---- register symbols an expression or statement reads and writes -------------------------- */

void symset_add(Lower *L, SymSet *s, Symbol *y) {
    for (int i = 0; i < s->n; i++)
        if (s->v[i] == y) return;
    vec_push(L->a, s, y);
}

bool symset_has(const SymSet *s, const Symbol *y) {
    for (int i = 0; i < s->n; i++)
        if (s->v[i] == y) return true;
    return false;
}

bool is_regval(const Symbol *y) {
    return y && (y->kind == SYM_REG || (y->kind == SYM_LET && (y->ty.kind == TY_TILE || y->ty.kind == TY_VEC)));
}

void expr_reads(Lower *L, PExpr *e, SymSet *regs, SymSet *bufs) {
    if (!e) return;
    switch (e->kind) {
    case PX_NAME:
        if (is_regval(e->sym)) symset_add(L, regs, e->sym);
        if (e->sym && e->sym->kind == SYM_SHARED && bufs) symset_add(L, bufs, e->sym);
        return;
    case PX_MEMBER: return;
    case PX_TRANSPOSE: expr_reads(L, e->base, regs, bufs); return;
    case PX_INDEX:
        expr_reads(L, e->base, regs, bufs);
        for (int i = 0; i < e->nix; i++) {
            expr_reads(L, e->ix[i].lo, regs, bufs);
            expr_reads(L, e->ix[i].hi, regs, bufs);
        }
        return;
    case PX_CALL:
        for (int i = 0; i < e->nargs; i++) expr_reads(L, e->args[i], regs, bufs);
        return;
    case PX_BINARY:
        expr_reads(L, e->l, regs, bufs);
        expr_reads(L, e->r, regs, bufs);
        return;
    case PX_UNARY: expr_reads(L, e->l, regs, bufs); return;
    case PX_COND:
        expr_reads(L, e->cond, regs, bufs);
        expr_reads(L, e->l, regs, bufs);
        expr_reads(L, e->r, regs, bufs);
        return;
    default: return;
    }
}

Symbol *lhs_root(Expr *e) {
    while (e && e->kind == EX_INDEX) e = e->u.index.base;
    return e && e->kind == EX_NAME ? e->sym : NULL;
}

/* reads and writes of registers and shared buffers by one assignment or let */
void stmt_effects(Lower *L, PStmt *st, SymSet *rd, SymSet *wr, SymSet *bufs) {
    if (st->kind == PS_LET) {
        expr_reads(L, st->rhs, rd, bufs);
        if (is_regval(st->let)) symset_add(L, wr, st->let);
        return;
    }
    PExpr *lhs = st->lhs, *rhs = st->rhs;
    expr_reads(L, rhs, rd, bufs);
    Symbol *root = px_root(lhs);
    if (st->mv == MV_R2S || st->mv == MV_S2G || st->mv == MV_ADD_S2G) {
        if (root && bufs) symset_add(L, bufs, root);
    } else if (st->mv == MV_R2G || st->mv == MV_ADD_R2G) {
        /* global destination: nothing in registers is written */
    } else if (root && is_regval(root)) {
        symset_add(L, wr, root);
        if ((st->op != AS_SET && st->op != AS_MOVE) || lhs->kind != PX_NAME) symset_add(L, rd, root);
    }
    if (lhs->kind == PX_INDEX)
        for (int i = 0; i < lhs->nix; i++) {
            expr_reads(L, lhs->ix[i].lo, rd, NULL);
            expr_reads(L, lhs->ix[i].hi, rd, NULL);
        }
}

bool stmt_is_mma(const PStmt *st) {
    return st->kind == PS_ASSIGN && st->rhs->kind == PX_BINARY && st->rhs->bop == BIN_MATMUL;
}

bool ast_stmt_is_mma(const Stmt *st) {
    return st->kind == ST_ASSIGN && st->u.assign.rhs->kind == EX_BINARY && st->u.assign.rhs->u.bin.op == BIN_MATMUL;
}

bool stmts_have_mma(const StmtList *l) {
    for (int i = 0; i < l->n; i++) {
        Stmt *st = l->v[i];
        if (ast_stmt_is_mma(st)) return true;
        if (st->kind == ST_IF && (stmts_have_mma(&st->u.if_.then_s) || stmts_have_mma(&st->u.if_.else_s))) return true;
        if (st->kind == ST_FOR && stmts_have_mma(&st->u.for_.body)) return true;
    }
    return false;
}

/* ---- roles and registers -------------------------------------------------------------------- */

int rows_per_wg(PlanKernel *pk, const Type *t) { return t->per_wg ? t->rows : t->rows / pk->consumers; }

/* values a thread holds of a register value in the row layout (rowwise kernels) */
static int rowwise_values(const PlanKernel *pk, const Type *t) {
    const RowLayout *r = &pk->rw;
    if (t->kind == TY_TILE) return t->rows * t->cols / (32 * r->warps);
    if (t->layout == VL_COL) return 8 * r->chunks;
    return t->rows / row_layout_rows(r);
}

/* 32-bit registers per consumer thread for a register value */
int value_regs(PlanKernel *pk, const Type *t) {
    int bytes = dtype_bytes[t->dt];
    if (pk->rowwise && pk->rw.cols) {
        int n = rowwise_values(pk, t);
        return t->kind == TY_TILE && bytes == 2 ? (n + 1) / 2 : n > 0 ? n : 1;
    }
    int cplx = t->complex ? 2 : 1;
    if (t->kind == TY_TILE) return cplx * rows_per_wg(pk, t) * t->cols * bytes / (4 * 128);
    if (t->layout == VL_ROW) return cplx * (rows_per_wg(pk, t) / 64 > 0 ? rows_per_wg(pk, t) / 64 : 1) * 2;
    return cplx * (t->rows / 4 > 0 ? t->rows / 4 : 1);
}

bool check_reg_shape(Lower *L, const Type *t, Span sp, const char *name) {
    PlanKernel *pk = L->pk;
    if (pk->rowwise) {
        if (!pk->rw.cols) return false; /* reported by plan_rowwise */
        const RowLayout *r = &pk->rw;
        if (t->kind == TY_VEC && t->layout == VL_COL) {
            if (t->rows == r->cols) return true;
            diag_error(L->d, sp, "'%s' has %d entries; a per_col vector of a rowwise kernel has one per column of its "
                       "tiles (%d)", name, t->rows, r->cols);
            return false;
        }
        if (t->rows % row_layout_rows(r)) {
            diag_error(L->d, sp, "'%s' has %d rows; rowwise values take multiples of %d rows (one pass of the %d consumer "
                       "warps, %d per row%s)", name, t->rows, row_layout_rows(r), r->warps, r->split,
                       r->rows_per_inst > 1 ? arena_printf(L->a, ", %d rows per warp", r->rows_per_inst) : "");
            return false;
        }
        return true;
    }
    if (t->kind == TY_VEC && t->layout == VL_COL) return true;
    int r = t->rows;
    if (!t->per_wg && r % pk->consumers) {
        diag_error(L->d, sp, "'%s' has %d rows, which do not split evenly over %d consumer warpgroups", name, r,
                   pk->consumers);
        return false;
    }
    int rw = rows_per_wg(pk, t);
    if (rw % 64) {
        diag_error(L->d, sp,
                   "'%s' gives each consumer warpgroup %d rows; register tiles hold multiples of 64 rows per "
                   "warpgroup (the wgmma fragment layout)%s",
                   name, rw, t->per_wg ? "" : arena_printf(L->a, " (%d rows / %d consumers)", r, pk->consumers));
        return false;
    }
    return true;
}

/* a shared tile's layout: the widest swizzle whose span divides a row, atom columns of that span
 * side by side, aligned to the swizzle period (hopper.h) */
void buf_tile_layout(PlanBuf *b, int rows, int cols, int eb) {
    b->rows = rows;
    b->cols = cols;
    b->swz = swizzle_choose(cols * eb);
    TileLayout tl = {rows, cols, eb, b->swz};
    b->atom_cols = tile_atom_cols(&tl);
    b->natoms = cols / b->atom_cols;
    b->bytes = tile_bytes(&tl);
    b->align = swizzle_align(b->swz);
}

const PExpr *load_cond(Lower *L, const Stmt *st) {
    for (int i = 0; i < L->load_conds.n; i++)
        if (L->load_conds.v[i].st == st) return px_from_ast(L->a, L->load_conds.v[i].cond);
    return NULL;
}

static const IfPath *load_path(const Lower *L, const Stmt *st) {
    for (int i = 0; i < L->load_conds.n; i++)
        if (L->load_conds.v[i].st == st) return L->load_conds.v[i].path;
    return NULL;
}

/* loads a and b are in different branches of one if: at most one of them runs in a step */
bool loads_exclusive(const Lower *L, const Stmt *a, const Stmt *b) {
    for (const IfPath *pa = load_path(L, a); pa; pa = pa->up)
        for (const IfPath *pb = load_path(L, b); pb; pb = pb->up)
            if (pa->ifst == pb->ifst && pa->els != pb->els) return true;
    return false;
}

/* the effects of the ops nested in an if or for: reads, writes, shared tiles, written tiles */
static void nested_effects(Lower *L, POp *o, Effects *e) {
    POpList *ls[2] = {&o->then_ops, &o->else_ops};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < ls[k]->n; i++) {
            Effects ne;
            op_effects(L, ls[k]->v[i], &ne);
            for (int j = 0; j < ne.rd.n; j++) symset_add(L, &e->rd, ne.rd.v[j]);
            for (int j = 0; j < ne.wr.n; j++) symset_add(L, &e->wr, ne.wr.v[j]);
            for (int j = 0; j < ne.bufs.n; j++) symset_add(L, &e->bufs, ne.bufs.v[j]);
            for (int j = 0; j < ne.wbufs.n; j++) symset_add(L, &e->wbufs, ne.wbufs.v[j]);
        }
}

void op_effects(Lower *L, POp *o, Effects *e) {
    memset(e, 0, sizeof *e);
    switch (o->kind) {
    case POP_MMA: {
        PlanMma *m = o->mma;
        symset_add(L, &e->wr, m->dst);
        if (m->accumulate) symset_add(L, &e->rd, m->dst);
        if (m->a_tmp) symset_add(L, &e->rd, m->a_tmp);
        else if (m->a_reg) expr_reads(L, m->a_expr, &e->rd, NULL);
        if (!m->a_reg) symset_add(L, &e->bufs, L->pk->bufs.v[m->a.buf].sym);
        symset_add(L, &e->bufs, L->pk->bufs.v[m->b.buf].sym);
        return;
    }
    case POP_MATERIALIZE:
        expr_reads(L, o->mma->a_expr, &e->rd, NULL);
        symset_add(L, &e->wr, o->mma->a_tmp);
        return;
    case POP_MOVE:
        stmt_effects(L, o->st, &e->rd, &e->wr, &e->bufs);
        if (o->mv->to_shared) symset_add(L, &e->wbufs, L->pk->bufs.v[o->mv->buf].sym);
        return;
    case POP_BAR:
        if (o->buf >= 0) symset_add(L, &e->wbufs, L->pk->bufs.v[o->buf].sym);
        for (int i = 0; i < o->more_bufs.n; i++) symset_add(L, &e->wbufs, L->pk->bufs.v[o->more_bufs.v[i]].sym);
        return;
    case POP_STMT:
        stmt_effects(L, o->st, &e->rd, &e->wr, &e->bufs);
        return;
    case POP_IF:
        expr_reads(L, o->cond, &e->rd, NULL);
        nested_effects(L, o, e);
        return;
    case POP_FOR:
        nested_effects(L, o, e);
        return;
    case POP_STORE:
        if (o->st) stmt_effects(L, o->st, &e->rd, &e->wr, &e->bufs);
        return;
    default:
        return;
    }
}

bool op_touches_tile(Lower *L, POp *o, const Symbol *y) {
    Effects e;
    op_effects(L, o, &e);
    return symset_has(&e.bufs, y) || symset_has(&e.wbufs, y);
}
