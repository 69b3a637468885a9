/* pass_narrow_tail.c - the narrow last step (plan_tail): when the last pipeline step covers
 * fewer columns, the analysis of what the masked columns hold and whether the step may run on the
 * narrow width. Part of lowering (lower_int.h). */
#include <math.h>

#include "lower_int.h"

/* ---- the narrow last step ------------------------------------------------------------------- */

/* What the masked columns of the score tile hold at a point of the step (tail analysis). */
typedef enum { DEAD_ANY, DEAD_NEG_INF, DEAD_ZERO, DEAD_FINITE } DeadVal;

typedef struct TailScan {
    Lower *L;
    PlanTail *t;
    int W;
    Vec(Symbol *) compute_lets;
    const char *why;    /* the first reason against, or NULL */
} TailScan;

static bool is_name_of(const PExpr *x, const Symbol *y) { return x && x->kind == PX_NAME && x->sym == y; }

static bool is_neg_inf(const PExpr *x) {
    if (x && x->is_const && x->ty.kind == TY_FLOAT && isinf(x->fval) && x->fval < 0) return true;
    return x && x->kind == PX_UNARY && x->uop == UN_NEG && x->l->kind == PX_NAME && x->l->sym &&
           x->l->sym->kind == SYM_BUILTIN && x->l->sym->builtin == BI_INF;
}

/* a uniform scalar the consumers can evaluate before the loop: no row, col, tiles, vectors or
 * lets of the compute block */
static bool tail_uniform(TailScan *ts, const PExpr *x) {
    if (!x || (x->ty.kind != TY_INT && x->ty.kind != TY_FLOAT && x->ty.kind != TY_BOOL) || x->ty.varying) return false;
    for (int i = 0; i < ts->compute_lets.n; i++)
        if (px_mentions(x, ts->compute_lets.v[i])) return false;
    return true;
}

/* is x `j * W` (either order) */
static bool is_step_offset(TailScan *ts, const PExpr *x) {
    if (!x || x->kind != PX_BINARY || x->bop != BIN_MUL) return false;
    const PExpr *a = x->l, *b = x->r;
    if (is_name_of(b, ts->L->sk->loopvar)) { const PExpr *t = a; a = b; b = t; }
    return is_name_of(a, ts->L->sk->loopvar) && b->is_const && b->cval == ts->W;
}

/* finds a conjunct `j * W + col < bound` (or `col + j * W < bound`) of c */
static bool find_col_bound(TailScan *ts, PExpr *c) {
    if (c->kind == PX_BINARY && c->bop == BIN_AND) return find_col_bound(ts, c->l) || find_col_bound(ts, c->r);
    if (c->kind != PX_BINARY || c->bop != BIN_LT) return false;
    PExpr *a = c->l, *x = c->r;
    if (a->kind != PX_BINARY || a->bop != BIN_ADD || !tail_uniform(ts, x)) return false;
    PExpr *p = a->l, *q = a->r;
    if (px_is_builtin(p, BI_COL)) { PExpr *t = p; p = q; q = t; }
    if (!px_is_builtin(q, BI_COL) || !is_step_offset(ts, p)) return false;
    ts->t->bound = x;
    ts->t->jw = p;
    return true;
}

/* the value of x at a masked column, given what s holds there; scalars that multiply -inf are
 * recorded (they must be positive) */
static DeadVal dead_value(TailScan *ts, const PExpr *x, DeadVal s_val) {
    const Symbol *s = ts->t->s;
    if (!px_mentions(x, s)) return DEAD_FINITE;
    if (is_name_of(x, s)) return s_val;
    if (x->kind == PX_BINARY) {
        DeadVal a = dead_value(ts, x->l, s_val), b = dead_value(ts, x->r, s_val);
        const PExpr *other = x->r;
        if (b != DEAD_FINITE) {
            DeadVal t = a; a = b; b = t;
            other = x->l;
        }
        if (b != DEAD_FINITE) return DEAD_ANY;
        switch (x->bop) {
        case BIN_MUL:
            if (a == DEAD_ZERO) return DEAD_ZERO;
            if (a == DEAD_NEG_INF && tail_uniform(ts, other)) {
                vec_push(ts->L->a, &ts->t->scales, (PExpr *)other);
                return DEAD_NEG_INF;
            }
            if (a == DEAD_NEG_INF && !ts->why)
                ts->why = "-inf scores are multiplied by a value the step cannot check for a positive sign before the loop "
                          "(a scalar of the kernel, not of the compute block)";
            return DEAD_ANY;
        case BIN_ADD: return a == DEAD_NEG_INF ? DEAD_NEG_INF : DEAD_ANY;
        case BIN_SUB: return a == DEAD_NEG_INF && other == x->r ? DEAD_NEG_INF : DEAD_ANY;
        default: return DEAD_ANY;
        }
    }
    if (x->kind == PX_CALL && (x->fn == FN_EXP2 || x->fn == FN_EXP))
        return dead_value(ts, x->args[0], s_val) == DEAD_NEG_INF ? DEAD_ZERO : DEAD_ANY;
    return DEAD_ANY;
}

/* every mention of s in x is rowmax(s) (the masked columns must hold -inf) or rowsum(s) (0) */
static bool reductions_only(TailScan *ts, const PExpr *x, DeadVal s_val) {
    const Symbol *s = ts->t->s;
    if (!x || !px_mentions(x, s)) return true;
    switch (x->kind) {
    case PX_CALL:
        if ((x->fn == FN_ROWMAX && s_val == DEAD_NEG_INF) || (x->fn == FN_ROWSUM && s_val == DEAD_ZERO))
            return is_name_of(x->args[0], s);
        for (int i = 0; i < x->nargs; i++)
            if (!reductions_only(ts, x->args[i], s_val)) return false;
        return x->ty.kind != TY_TILE;
    case PX_BINARY:
        return x->ty.kind != TY_TILE && reductions_only(ts, x->l, s_val) && reductions_only(ts, x->r, s_val);
    case PX_UNARY: return x->ty.kind != TY_TILE && reductions_only(ts, x->l, s_val);
    case PX_COND:
        return x->ty.kind != TY_TILE && reductions_only(ts, x->l, s_val) && reductions_only(ts, x->r, s_val);
    default: return false;
    }
}

/* a register tile other than s, or a shared tile, in x (a statement that would need it narrowed too) */
static bool mentions_other_tile(TailScan *ts, PExpr *x) {
    SymSet regs = {0}, bufs = {0};
    expr_reads(ts->L, x, &regs, &bufs);
    for (int i = 0; i < regs.n; i++)
        if (regs.v[i] != ts->t->s && regs.v[i]->ty.kind == TY_TILE) return true;
    for (int i = 0; i < bufs.n; i++)
        if (bufs.v[i]->ty.kind == TY_TILE) return true;
    return false;
}

/* does op o (with the ops nested in it) read or write the register value y */
static bool op_mentions(Lower *L, POp *o, const Symbol *y) {
    Effects e;
    op_effects(L, o, &e);
    return symset_has(&e.rd, y) || symset_has(&e.wr, y);
}

static bool ops_mention(Lower *L, const POpList *l, const Symbol *y) {
    for (int i = 0; i < l->n; i++)
        if (op_mentions(L, l->v[i], y)) return true;
    return false;
}

/* one op between the step's first product and the deferred one; returns the new value of the
 * masked columns, or DEAD_ANY with ts->why set */
static DeadVal tail_op(TailScan *ts, POp *o, DeadVal v, bool in_if) {
    const Symbol *s = ts->t->s;
    PStmt *st = o->st;
    if (st && st->kind == PS_LET && st->let) vec_push(ts->L->a, &ts->compute_lets, st->let);
    if (!op_mentions(ts->L, o, s)) return v;
    if (o->kind == POP_FOR) {
        ts->why = "the score tile is used inside a for loop";
        return DEAD_ANY;
    }
    if (o->kind == POP_IF) {
        if (in_if || o->else_ops.n || !tail_uniform(ts, o->cond) || ts->t->guard) {
            ts->why = "the score tile is used under a nested or two-way if, or one that depends on the step's values";
            return DEAD_ANY;
        }
        DeadVal w = v;
        for (int i = 0; i < o->then_ops.n && !ts->why; i++) w = tail_op(ts, o->then_ops.v[i], w, true);
        ts->t->guard = o->cond;
        return w;
    }
    if (!st) return v;
    if (st->kind == PS_LET || (st->kind == PS_ASSIGN && !is_name_of(st->lhs, s))) {
        if (st->kind == PS_ASSIGN && px_mentions(st->lhs, s)) {
            ts->why = "part of the score tile is assigned";
            return DEAD_ANY;
        }
        if (!reductions_only(ts, st->rhs, v)) {
            ts->why = "the score tile is read other than by rowmax after the mask or rowsum after exp2";
            return DEAD_ANY;
        }
        return v;
    }
    if (st->op != AS_SET || mentions_other_tile(ts, st->rhs)) {
        ts->why = "the score tile is updated in place or together with another tile";
        return DEAD_ANY;
    }
    PExpr *r = st->rhs;
    if (r->kind == PX_CALL && r->fn == FN_WHERE && is_name_of(r->args[1], s) && is_neg_inf(r->args[2])) {
        if (!ts->t->bound && find_col_bound(ts, r->args[0])) return DEAD_NEG_INF;
        ts->why = "the mask has no conjunct 'j * W + col < bound' (W the score tile's columns)";
        return DEAD_ANY;
    }
    DeadVal w = dead_value(ts, r, v);
    if (w == DEAD_ANY && !ts->why) ts->why = "an update of the score tile does not keep masked columns at -inf or 0";
    return w;
}

/* Plans the narrow last step (PlanTail); sets pk->tail, or pk->no_tail when the step has a
 * masked score tile feeding a deferred product but something else stands in the way. */
void plan_tail(Lower *L) {
    PlanKernel *pk = L->pk;
    const SemaKernel *sk = L->sk;
    if (!sk->narrow_tail || !pk->overlap || !sk->blocks[BK_COMPUTE]) return;
    /* the step's ops in program order (before scheduling) */
    POpList *body = &pk->step_ops;
    int first = -1, last = -1;
    for (int i = 0; i < body->n; i++)
        if (body->v[i]->kind == POP_MMA) {
            if (first < 0) first = i;
            last = i;
        }
    if (first < 0 || last == first) return;
    PlanMma *fm = body->v[first]->mma, *dm = body->v[last]->mma;
    if (!fm || !dm || !dm->deferred || !dm->a_tmp || fm->accumulate || fm->a_reg) return;
    const PExpr *ax = dm->a_expr;
    if (ax->kind == PX_CALL && (ax->fn == FN_BF16 || ax->fn == FN_FP16)) ax = ax->args[0];
    if (!is_name_of(ax, fm->dst)) return;
    /* from here on the kernel has the shape: s = a @ b, ..., o += f(s) @ c deferred */
    PlanTail *t = ARENA_NEW(L->a, PlanTail);
    TailScan ts = {.L = L, .t = t, .W = fm->n};
    t->s = fm->dst;
    t->op = dm->a_tmp;
    t->first = fm;
    t->deferred = dm;
    t->cols = 64;
    /* a copy of half the score tile or more saves too little for the registers it takes (with
     * 128-column tiles ptxas spilled and serialized the products at D = 64) */
    if (fm->n <= 2 * t->cols) return;
    if (fm->n % 16 || dm->k != fm->n || fm->b.col0 || fm->b.row0 || dm->b.row0 || dm->b.col0 || fm->b.mn_major ||
        !dm->b.mn_major || fm->dst->ty.dt != DT_FP32)
        ts.why = "the products do not run over whole score-tile columns from column 0";
    DeadVal v = DEAD_ANY;
    for (int i = first + 1; i < last && !ts.why; i++) v = tail_op(&ts, body->v[i], v, false);
    if (!ts.why && !t->bound) ts.why = "no mask sets the score tile's columns past a bound to -inf";
    if (!ts.why && v != DEAD_ZERO)
        ts.why = "the deferred product's operand is not exactly 0 in masked columns (exp2 of -inf scores)";
    for (int i = last + 1; i < body->n && !ts.why; i++)
        if (op_mentions(L, body->v[i], t->s)) ts.why = "the score tile is used after the deferred product";
    if (!ts.why && (ops_mention(L, &pk->setup_ops, t->s) || ops_mention(L, &pk->finish_ops, t->s)))
        ts.why = "the score tile is used outside the compute block";
    if (ts.why) {
        pk->no_tail = ts.why;
        lower_note(L, "no narrow last step (a last step with few unmasked columns of '%s' on narrow copies): %s", t->s->name,
             ts.why);
        return;
    }
    /* the narrow copies */
    t->s_narrow = ARENA_NEW(L->a, Symbol);
    *t->s_narrow = *t->s;
    t->s_narrow->name = arena_printf(L->a, "%s_tail", t->s->name);
    t->s_narrow->ty.cols = t->cols;
    t->op_narrow = ARENA_NEW(L->a, Symbol);
    *t->op_narrow = *t->op;
    t->op_narrow->name = arena_printf(L->a, "%s_tail", t->op->name);
    t->op_narrow->ty.cols = t->cols;
    t->first_narrow = *fm;
    t->first_narrow.dst = t->s_narrow;
    t->first_narrow.n = t->cols;
    t->deferred_narrow = *dm;
    t->deferred_narrow.a_tmp = t->op_narrow;
    t->deferred_narrow.k = t->cols;
    pk->tail = t;
    StrBuf sc;
    sb_init(&sc);
    for (int i = 0; i < t->scales.n; i++) sb_printf(&sc, "%s%s > 0", i ? ", " : "", px_str(L->a, t->scales.v[i]));
    lower_note(L, "narrow last step: when the last step leaves at most %d of the %d columns of '%s' unmasked (%s - %s <= %d%s%s), "
            "it runs on %d-column copies ('%s', '%s'): its products, row reductions and elementwise ops skip the masked "
            "columns, whose probabilities are exactly 0",
         t->cols, fm->n, t->s->name, px_str(L->a, t->bound), px_str(L->a, t->jw), t->cols,
         t->scales.n ? " and " : "", t->scales.n ? sc.s : "", t->cols, t->s_narrow->name, t->op_narrow->name);
    sb_free(&sc);
}
