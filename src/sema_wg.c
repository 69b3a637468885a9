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

/* visit: a name that is ctx */
static bool is_name(const Expr *e, void *ctx) { return e->kind == EX_NAME && !strcmp(e->u.name, (const char *)ctx); }

/* visit: a slice (a:b) whose bounds read wg; ctx: where the first one is (a Span) */
static bool is_wg_slice(const Expr *e, void *ctx) {
    if (e->kind != EX_INDEX) return false;
    for (int i = 0; i < e->u.index.nargs; i++) {
        const IndexArg *ia = &e->u.index.args[i];
        if (ia->slice && (ast_expr_any(ia->lo, is_name, "wg") || ast_expr_any(ia->hi, is_name, "wg"))) {
            *(Span *)ctx = ia->span;
            return true;
        }
    }
    return false;
}

static bool stmt_has_wg_slice(const Stmt *st, Span *at) { return ast_stmt_any(st, is_wg_slice, at); }

static bool stmt_names(const Stmt *st, const char *name) { return ast_stmt_any(st, is_name, (void *)name); }

/* ---- copies with wg replaced by a warpgroup's index ------------------------------------------- */

/* statements lo .. hi - 1 of from, appended to to, with wg replaced by the index of one warpgroup (printed
 * as wg: comments and the plan keep the source's spelling) */
static void copy_list(Arena *a, StmtList *to, const StmtList *from, int lo, int hi, int64_t wg) {
    Expr *k = ast_expr(a, EX_INT, (Span){.file = -1});
    k->u.ival = wg;
    k->written = "wg";
    const char *names[] = {"wg"};
    for (int i = lo; i < hi; i++) vec_push(a, to, ast_copy_stmt(a, from->v[i], names, &k, 1));
}

/* ---- the run ---------------------------------------------------------------------------------- */

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
        if (st->kind == ST_LET && list_names_after(body, last, st->u.let.name)) {
            Span here;
            if (stmt_has_wg_slice(st, &here)) {
                diag_error(s->d, st->u.let.name_span,
                           "'%s' reads a slice whose bounds read wg, so each consumer warpgroup has its own value, "
                           "but it is used after the statements tkc writes out once per warpgroup, where no "
                           "one value exists; declare a register value (reg %s: ...) and assign it instead",
                           st->u.let.name, st->u.let.name);
                copy_list(s->a, &out, body, i, i + 1, 0);  /* warpgroup 0's copy stands in: no errors follow */
            } else {
                vec_push(s->a, &out, body->v[i]);
            }
            i++;
            continue;
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
