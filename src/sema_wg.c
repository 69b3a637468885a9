/* sema_wg.c - slices that read wg: statements specialised per consumer warpgroup (sema_specialise_wg).
 *
 * A slice bound of a tile or vector must be a compile-time integer, so that every operand has a fixed
 * place; but kernels whose consumer warpgroups split a tile (each its own column half of a product,
 * its own scratch tile, its own part of an output) were written as `if (wg == 0) { ... } else { ... }`
 * with the same statements twice. Here a slice bound may also read `wg` (`v[:, 64 * wg:64 * wg + 64]`):
 * before a consumer block is checked, the top-level statements from the first to the last whose slice
 * bounds read wg (and, so that lets keep their scope, up to the last use of a let among them) are
 * replaced by an if on wg with one copy per consumer warpgroup, wg replaced by that warpgroup's index in
 * its copy. Every bound is then a compile-time integer again, and the rest of the compiler sees the if
 * a kernel would have written by hand (an inner `if (wg == ...)` becomes a constant condition, decided
 * at compile time). Diagnostics of the copies are reported once (diag dedup). Rowwise kernels, whose
 * lowering may add warpgroups, and the load block, which runs on the producer, are left as written:
 * there a wg in a slice bound is the usual error (a slice bound must be a compile-time integer). */
#include <string.h>

#include "sema_int.h"

static bool is_wg(const Expr *e) { return e && e->kind == EX_NAME && !strcmp(e->u.name, "wg"); }

static bool mentions_wg(const Expr *e) {
    if (!e) return false;
    switch (e->kind) {
    case EX_NAME: return is_wg(e);
    case EX_MEMBER: return mentions_wg(e->u.member.base);
    case EX_TRANSPOSE: return mentions_wg(e->u.tr.base);
    case EX_INDEX:
        if (mentions_wg(e->u.index.base)) return true;
        for (int i = 0; i < e->u.index.nargs; i++)
            if (mentions_wg(e->u.index.args[i].lo) || mentions_wg(e->u.index.args[i].hi)) return true;
        return false;
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

/* does e hold a slice (a:b) whose bounds read wg; *at: the first such slice */
static bool has_wg_slice(const Expr *e, Span *at) {
    if (!e) return false;
    switch (e->kind) {
    case EX_MEMBER: return has_wg_slice(e->u.member.base, at);
    case EX_TRANSPOSE: return has_wg_slice(e->u.tr.base, at);
    case EX_INDEX:
        for (int i = 0; i < e->u.index.nargs; i++) {
            const IndexArg *ia = &e->u.index.args[i];
            if (ia->slice && (mentions_wg(ia->lo) || mentions_wg(ia->hi))) {
                *at = ia->span;
                return true;
            }
            if (has_wg_slice(ia->lo, at) || has_wg_slice(ia->hi, at)) return true;
        }
        return has_wg_slice(e->u.index.base, at);
    case EX_CALL:
        for (int i = 0; i < e->u.call.nargs; i++)
            if (has_wg_slice(e->u.call.args[i], at)) return true;
        return false;
    case EX_BINARY: return has_wg_slice(e->u.bin.l, at) || has_wg_slice(e->u.bin.r, at);
    case EX_UNARY: return has_wg_slice(e->u.un.e, at);
    case EX_COND: return has_wg_slice(e->u.cond.c, at) || has_wg_slice(e->u.cond.a, at) || has_wg_slice(e->u.cond.b, at);
    default: return false;
    }
}

static bool list_has_wg_slice(const StmtList *l, Span *at);

static bool stmt_has_wg_slice(const Stmt *st, Span *at) {
    switch (st->kind) {
    case ST_ASSIGN: return has_wg_slice(st->u.assign.lhs, at) || has_wg_slice(st->u.assign.rhs, at);
    case ST_IF:
        return has_wg_slice(st->u.if_.cond, at) || list_has_wg_slice(&st->u.if_.then_s, at) ||
               list_has_wg_slice(&st->u.if_.else_s, at);
    case ST_FOR:
        return has_wg_slice(st->u.for_.lo, at) || has_wg_slice(st->u.for_.hi, at) || list_has_wg_slice(&st->u.for_.body, at);
    case ST_LET: return has_wg_slice(st->u.let.e, at);
    case ST_EXPR: return has_wg_slice(st->u.expr.e, at);
    default: return false;
    }
}

static bool list_has_wg_slice(const StmtList *l, Span *at) {
    for (int i = 0; i < l->n; i++)
        if (stmt_has_wg_slice(l->v[i], at)) return true;
    return false;
}

/* ---- copies with wg replaced by a warpgroup's index ------------------------------------------- */

static Expr *copy_expr(Arena *a, const Expr *e, int64_t wg) {
    Expr *k = ast_expr(a, EX_INT, e ? e->span : (Span){.file = -1});
    k->u.ival = wg;
    k->written = "wg";  /* comments and the plan keep the source's spelling */
    const char *names[] = {"wg"};
    return ast_copy_expr(a, e, names, &k, 1);
}

static void copy_list(Arena *a, StmtList *to, const StmtList *from, int lo, int hi, int64_t wg);

static Stmt *copy_stmt(Arena *a, const Stmt *st, int64_t wg) {
    Stmt *c = ast_stmt(a, st->kind, st->span);
    c->u = st->u;
    switch (st->kind) {
    case ST_ASSIGN:
        c->u.assign.lhs = copy_expr(a, st->u.assign.lhs, wg);
        c->u.assign.rhs = copy_expr(a, st->u.assign.rhs, wg);
        break;
    case ST_IF:
        c->u.if_.cond = copy_expr(a, st->u.if_.cond, wg);
        c->u.if_.then_s = c->u.if_.else_s = (StmtList){0};
        copy_list(a, &c->u.if_.then_s, &st->u.if_.then_s, 0, st->u.if_.then_s.n, wg);
        copy_list(a, &c->u.if_.else_s, &st->u.if_.else_s, 0, st->u.if_.else_s.n, wg);
        break;
    case ST_FOR:
        c->u.for_.lo = copy_expr(a, st->u.for_.lo, wg);
        c->u.for_.hi = copy_expr(a, st->u.for_.hi, wg);
        c->u.for_.body = (StmtList){0};
        copy_list(a, &c->u.for_.body, &st->u.for_.body, 0, st->u.for_.body.n, wg);
        c->u.for_.sym = NULL;
        break;
    case ST_LET:
        c->u.let.e = copy_expr(a, st->u.let.e, wg);
        c->u.let.sym = NULL;
        break;
    case ST_EXPR: c->u.expr.e = copy_expr(a, st->u.expr.e, wg); break;
    default: break;
    }
    return c;
}

static void copy_list(Arena *a, StmtList *to, const StmtList *from, int lo, int hi, int64_t wg) {
    for (int i = lo; i < hi; i++) vec_push(a, to, copy_stmt(a, from->v[i], wg));
}

/* ---- the run ---------------------------------------------------------------------------------- */

static bool expr_names(const Expr *e, const char *name) {
    if (!e) return false;
    switch (e->kind) {
    case EX_NAME: return !strcmp(e->u.name, name);
    case EX_MEMBER: return expr_names(e->u.member.base, name);
    case EX_TRANSPOSE: return expr_names(e->u.tr.base, name);
    case EX_INDEX:
        if (expr_names(e->u.index.base, name)) return true;
        for (int i = 0; i < e->u.index.nargs; i++)
            if (expr_names(e->u.index.args[i].lo, name) || expr_names(e->u.index.args[i].hi, name)) return true;
        return false;
    case EX_CALL:
        for (int i = 0; i < e->u.call.nargs; i++)
            if (expr_names(e->u.call.args[i], name)) return true;
        return false;
    case EX_BINARY: return expr_names(e->u.bin.l, name) || expr_names(e->u.bin.r, name);
    case EX_UNARY: return expr_names(e->u.un.e, name);
    case EX_COND: return expr_names(e->u.cond.c, name) || expr_names(e->u.cond.a, name) || expr_names(e->u.cond.b, name);
    default: return false;
    }
}

static bool list_names(const StmtList *l, const char *name);

static bool stmt_names(const Stmt *st, const char *name) {
    switch (st->kind) {
    case ST_ASSIGN: return expr_names(st->u.assign.lhs, name) || expr_names(st->u.assign.rhs, name);
    case ST_IF:
        return expr_names(st->u.if_.cond, name) || list_names(&st->u.if_.then_s, name) || list_names(&st->u.if_.else_s, name);
    case ST_FOR:
        return expr_names(st->u.for_.lo, name) || expr_names(st->u.for_.hi, name) || list_names(&st->u.for_.body, name);
    case ST_LET: return expr_names(st->u.let.e, name);
    case ST_EXPR: return expr_names(st->u.expr.e, name);
    default: return false;
    }
}

static bool list_names(const StmtList *l, const char *name) {
    for (int i = 0; i < l->n; i++)
        if (stmt_names(l->v[i], name)) return true;
    return false;
}

/* does a statement after index last of body name name */
static bool list_names_after(const StmtList *body, int last, const char *name) {
    for (int j = last + 1; j < body->n; j++)
        if (stmt_names(body->v[j], name)) return true;
    return false;
}

/* a top-level `t[...] <- value` into a shared tile that a statement after the run names: its writes are
 * for the code after the run (both warpgroups read the whole tile there), so it goes in an if of its
 * own, as a kernel would write it; the if's scratch barriers then wrap it (pass_wg_bars.c), while a run
 * whose tiles stay inside it keeps barriers of each warpgroup alone */
static bool writes_for_later(Sema *s, const Stmt *st, const StmtList *body, int last) {
    if (st->kind != ST_ASSIGN || st->u.assign.op != AS_MOVE) return false;
    const Expr *l = st->u.assign.lhs;
    while (l && (l->kind == EX_INDEX || l->kind == EX_TRANSPOSE))
        l = l->kind == EX_INDEX ? l->u.index.base : l->u.tr.base;
    if (!l || l->kind != EX_NAME) return false;
    const Symbol *y = lookup(s, l->u.name);
    if (!y || y->kind != SYM_SHARED) return false;
    for (int j = last + 1; j < body->n; j++)
        if (stmt_names(body->v[j], l->u.name)) return true;
    return false;
}

/* statements first .. last (inclusive) of body as an if on wg, one copy per warpgroup, appended to out */
static void specialise(Sema *s, StmtList *out, const StmtList *body, int first, int last, Span at) {
    Arena *a = s->a;
    int n = s->sk->consumers;
    Span run = span_join(body->v[first]->span, body->v[last]->span);
    if (n == 1) {
        copy_list(a, out, body, first, last + 1, 0);
    } else {
        /* if (wg == 0) { copy 0 } else if (wg == 1) { copy 1 } ... else { copy n - 1 } */
        Stmt *top = NULL, *prev = NULL;
        for (int w = 0; w < n; w++) {
            StmtList copy = {0};
            copy_list(a, &copy, body, first, last + 1, w);
            if (w == n - 1) {
                prev->u.if_.else_s = copy;
                prev->u.if_.has_else = true;
                break;
            }
            Stmt *f = ast_stmt(a, ST_IF, run);
            Expr *wg = ast_expr(a, EX_NAME, at);
            wg->u.name = "wg";
            Expr *k = ast_expr(a, EX_INT, at);
            k->u.ival = w;
            Expr *c = ast_expr(a, EX_BINARY, at);
            c->u.bin.op = BIN_EQ;
            c->u.bin.l = wg;
            c->u.bin.r = k;
            c->u.bin.op_span = at;
            f->u.if_.cond = c;
            f->u.if_.then_s = copy;
            if (!top) top = f;
            else {
                vec_push(a, &prev->u.if_.else_s, f);
                prev->u.if_.has_else = true;
            }
            prev = f;
        }
        vec_push(a, out, top);
    }
    SemaWgRun r = {.span = run, .consumers = n};
    vec_push(a, &s->sk->wg_runs, r);
}

bool sema_specialise_wg(Sema *s, StmtList *body) {
    int first = -1, last = -1;
    Span at = {.file = -1};
    for (int i = 0; i < body->n; i++) {
        Span here;
        if (stmt_has_wg_slice(body->v[i], &here)) {
            if (first < 0) {
                first = i;
                at = here;
            }
            last = i;
        }
    }
    if (first < 0) return false;
    StmtList out = {0};
    for (int i = 0; i < first; i++) vec_push(s->a, &out, body->v[i]);
    /* one if per stretch of the run whose shared-tile writes are all for the run itself, or all for
     * later; a let that statements after the run use stays outside the ifs (its scope is the block),
     * between two stretches, unless its own slices read wg (then it has no one value to keep) */
    for (int i = first; i <= last;) {
        const Stmt *st = body->v[i];
        if (st->kind == ST_LET) {
            bool used_later = false;
            for (int j = last + 1; j < body->n && !used_later; j++) used_later = stmt_names(body->v[j], st->u.let.name);
            if (used_later) {
                Span here;
                if (stmt_has_wg_slice(st, &here))
                    diag_error(s->d, st->u.let.name_span,
                               "'%s' reads a slice whose bounds read wg, so each consumer warpgroup has its own value, "
                               "but it is used after the statements tkc writes out once per warpgroup, where no "
                               "one value exists; declare a register value (reg %s: ...) and assign it instead",
                               st->u.let.name, st->u.let.name);
                /* (warpgroup 0's copy stands in for it, so that no further errors follow from this one) */
                vec_push(s->a, &out, stmt_has_wg_slice(st, &here) ? copy_stmt(s->a, st, 0) : body->v[i]);
                i++;
                continue;
            }
        }
        bool later = writes_for_later(s, st, body, last);
        int j = i;
        while (j + 1 <= last && writes_for_later(s, body->v[j + 1], body, last) == later &&
               !(body->v[j + 1]->kind == ST_LET && list_names_after(body, last, body->v[j + 1]->u.let.name)))
            j++;
        specialise(s, &out, body, i, j, at);
        i = j + 1;
    }
    for (int i = last + 1; i < body->n; i++) vec_push(s->a, &out, body->v[i]);
    *body = out;
    return true;
}
