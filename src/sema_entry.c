/* sema_entry.c - `entry NAME(args) { ... }`: a host launcher that runs kernels of the program in
 * order. Its statements are `let` (a host value), `scratch NAME: dtype[dims];` (device memory the
 * launcher allocates on the stream and frees after the last kernel), `if` on host values (a
 * condition on params alone is decided at compile time) and calls `kernel(arg, ...);`. A call
 * passes one expression per argument of the kernel: a tensor of the entry (an argument or a
 * scratch, `.T` swapping its last two dimensions) of the kernel argument's element type and rank,
 * or a host value for a scalar. The kernel's run-time dimensions bind from the shapes passed; two
 * shapes that bind one dimension differently become a check of the launcher. Part of the semantic
 * checks (sema_int.h). */
#include <string.h>

#include "sema_int.h"

typedef struct Ent {
    Sema *s;
    SemaResult *out;
    SemaEntry *se;
    Vec(Symbol *) written;  /* tensors some call has written so far (source order) */
    int dead;               /* inside a branch an if on params alone does not take */
} Ent;

static const char *article(DType dt) { return dtype_name[dt][0] == 'b' ? "a" : "an"; }

static bool is_scratch(const Ent *E, const Symbol *y) {
    for (int i = 0; i < E->se->scratch.n; i++)
        if (E->se->scratch.v[i] == y) return true;
    return false;
}

static bool was_written(const Ent *E, const Symbol *y) {
    for (int i = 0; i < E->written.n; i++)
        if (E->written.v[i] == y) return true;
    return false;
}

/* a host value: a scalar the launcher computes from dimensions, scalars, params and lets */
static Type host_value(Ent *E, Expr *e, const char *what) {
    Type t = check_expr(E->s, e);
    if (t.kind == TY_ERROR) return t;
    const Expr *bad = not_on_host(e, true);
    if (bad || !is_scalar(t) || t.varying) {
        const char *got = bad && bad->kind == EX_NAME && bad->sym
                              ? arena_printf(E->s->a, "'%s', a %s", bad->u.name, symkind_desc(bad->sym->kind))
                              : bad ? "this" : type_str(E->s, t);
        diag_error(E->s->d, bad ? bad->span : e->span,
                   "%s is computed by the launcher before any kernel runs: it can use dimensions, scalar arguments, "
                   "params, lets, sms, literals, arithmetic and cdiv/min/max, not %s",
                   what, got);
        return ty_err();
    }
    return t;
}

/* the entry's tensor an argument names (x or x.T), or NULL after an error */
static Symbol *tensor_arg(Ent *E, Expr *ce, bool *trans) {
    *trans = ce->kind == EX_TRANSPOSE;
    Expr *n = *trans ? ce->u.tr.base : ce;
    if (n->kind != EX_NAME) return NULL;
    Symbol *y = lookup(E->s, n->u.name);
    if (!y || y->kind != SYM_TENSOR) return NULL;
    n->sym = y;
    n->ty = y->ty;
    ce->sym = y;
    ce->ty = y->ty;
    y->used = true;
    return y;
}

const TypeSpec *entry_shape(const SemaEntry *se, const Symbol *y) {
    const Kernel *k = se->sk->k;
    for (int i = 0; i < k->nargs; i++)
        if (k->args[i].sym == y) return &k->args[i].ts;
    for (int i = 0; i < se->scratch.n; i++)
        if (se->scratch.v[i] == y) return se->scratch_ts.v[i];
    return NULL;
}

static bool same_text(Ent *E, const Expr *a, const Expr *b) {
    if (a->is_const && b->is_const) return a->cval == b->cval;
    return !strcmp(ast_expr_str(E->s->a, a), ast_expr_str(E->s->a, b));
}

/* after a call that could not be checked: the tensors it names count as written (no follow-ups) */
static void mark_named(Ent *E, const Expr *call) {
    for (int i = 0; i < call->u.call.nargs; i++) {
        const Expr *ce = call->u.call.args[i];
        if (ce->kind == EX_TRANSPOSE) ce = ce->u.tr.base;
        Symbol *y = ce->kind == EX_NAME ? lookup(E->s, ce->u.name) : NULL;
        if (y && y->kind == SYM_TENSOR && !was_written(E, y)) vec_push(E->s->a, &E->written, y);
    }
}

static void check_call(Ent *E, Stmt *st) {
    Sema *s = E->s;
    Expr *e = st->u.expr.e;
    const char *name = e->u.call.fn;
    SemaKernel *ck = sema_kernel_named(E->out, name);
    if (!ck) {
        bool entry = false;
        for (int i = 0; i < s->prog->entries.n; i++) entry |= !strcmp(s->prog->entries.v[i]->name, name);
        if (entry) diag_error(s->d, e->u.call.fn_span, "'%s' is an entry: an entry calls kernels, not other entries", name);
        else diag_error(s->d, e->u.call.fn_span, "no kernel named '%s' (an entry's statements are let, scratch, if and kernel "
                        "calls)", name);
        mark_named(E, e);
        return;
    }
    const Kernel *k = ck->k;
    if (ck->left_out && !E->dead) {
        diag_error(s->d, e->u.call.fn_span, "%s", left_out_why(s, ck));
        diag_note(s->d, k->when->span, "the condition is here");
    }
    if (e->u.call.nargs != k->nargs) {
        diag_error(s->d, e->span, "kernel '%s' takes %d arguments, not %d", name, k->nargs, e->u.call.nargs);
        mark_named(E, e);
        return;
    }
    SemaCall *c = ARENA_NEW(s->a, SemaCall);
    c->callee = ck;
    c->args = e->u.call.args;
    c->dims = ARENA_NEW_N(s->a, Expr *, ck->dims.n > 0 ? ck->dims.n : 1);
    const char **dim_from = ARENA_NEW_N(s->a, const char *, ck->dims.n > 0 ? ck->dims.n : 1);
    int errors0 = s->d->nerrors;
    Vec(Symbol *) writes = {0};
    for (int i = 0; i < k->nargs; i++) {
        const Arg *ka = &k->args[i];
        Expr *ce = e->u.call.args[i];
        if (!ka->ts.ndims) {
            Type t = host_value(E, ce, arena_printf(s->a, "argument '%s' of '%s'", ka->name, name));
            if (t.kind != TY_ERROR && ka->ts.dt == DT_I32 && t.kind != TY_INT && t.kind != TY_BOOL)
                diag_error(s->d, ce->span, "'%s' of '%s' is an i32 scalar, but this is %s", ka->name, name, type_str(s, t));
            continue;
        }
        bool tr;
        Symbol *y = tensor_arg(E, ce, &tr);
        if (!y) {
            diag_error(s->d, ce->span, "'%s' of '%s' is a tensor: pass a tensor of the entry (an argument or a scratch, or "
                       "its transpose NAME.T)", ka->name, name);
            continue;
        }
        const TypeSpec *ts = entry_shape(E->se, y);
        if (y->ty.dt != ka->ts.dt || y->ty.ndims != ka->ts.ndims) {
            diag_error(s->d, ce->span, "'%s' of '%s' is %s %s tensor of rank %d, but '%s' is %s %s tensor of rank %d", ka->name,
                       name, article(ka->ts.dt), dtype_name[ka->ts.dt], ka->ts.ndims, y->name, article(y->ty.dt),
                       dtype_name[y->ty.dt], y->ty.ndims);
            continue;
        }
        if (tr && ts->ndims < 2) {
            diag_error(s->d, ce->span, "'%s' has one dimension: .T swaps the last two", y->name);
            continue;
        }
        bool scratch = is_scratch(E, y);
        const Arg *ea = NULL;
        for (int j = 0; j < E->se->sk->k->nargs; j++)
            if (E->se->sk->k->args[j].sym == y) ea = &E->se->sk->k->args[j];
        if (ka->mode != ARG_IN && !scratch && ea && ea->mode == ARG_IN) {
            diag_error(s->d, ce->span, "'%s' of '%s' is %s: the kernel writes it, but '%s' is an input of the entry", ka->name,
                       name, argmode_name[ka->mode], y->name);
            continue;
        }
        if (ka->mode != ARG_OUT && (scratch || (ea && ea->mode == ARG_OUT)) && !was_written(E, y)) {
            diag_error(s->d, ce->span, "'%s' of '%s' reads %s '%s' before any kernel of the entry writes it", ka->name, name,
                       scratch ? "scratch" : "the entry's output", y->name);
            continue;
        }
        if (ka->mode != ARG_IN) vec_push(s->a, &writes, y);
        for (int d = 0; d < ka->ts.ndims; d++) {
            int src = tr && d >= ka->ts.ndims - 2 ? (d == ka->ts.ndims - 1 ? d - 1 : d + 1) : d;
            Expr *have = ts->dims[src];
            const Expr *want = ka->ts.dims[d];
            const char *where = !tr && !strcmp(ka->name, y->name)
                                    ? arena_printf(s->a, "'%s' dimension %d", ka->name, d)
                                    : arena_printf(s->a, "'%s' dimension %d (%s%s)", ka->name, d, y->name, tr ? ".T" : "");
            if (want->sym && want->sym->kind == SYM_DIM) {
                int di = want->sym->index;
                if (!c->dims[di]) {
                    c->dims[di] = have;
                    dim_from[di] = where;
                } else if (!same_text(E, c->dims[di], have)) {
                    if (c->dims[di]->is_const && have->is_const) {
                        diag_error(s->d, ce->span, "'%s' of '%s' is %lld from %s but %lld from %s", want->sym->name, name,
                                   (long long)c->dims[di]->cval, dim_from[di], (long long)have->cval, where);
                        continue;
                    }
                    vec_push(s->a, &c->checks, ((SemaCallCheck){c->dims[di], have,
                        arena_printf(s->a, "%s of %s: %s and %s", want->sym->name, name, dim_from[di], where)}));
                }
            } else if (have->is_const) {
                if (have->cval != want->cval)
                    diag_error(s->d, ce->span, "%s of '%s' is %lld, but %s is %lld", where, name, (long long)want->cval,
                               ast_expr_str(s->a, have), (long long)have->cval);
            } else {
                vec_push(s->a, &c->checks, ((SemaCallCheck){have, (Expr *)want,
                    arena_printf(s->a, "%s of %s, fixed at %lld", where, name, (long long)want->cval)}));
            }
        }
    }
    /* what it writes counts as written even after an error (no follow-up errors for later reads) */
    for (int i = 0; i < writes.n; i++)
        if (!was_written(E, writes.v[i])) vec_push(s->a, &E->written, writes.v[i]);
    if (s->d->nerrors != errors0) return;
    e->ty = (Type){.kind = TY_VOID};
    st->u.expr.call = c;
}

static void entry_stmts(Ent *E, StmtList *l);

static void entry_stmt(Ent *E, Stmt *st) {
    Sema *s = E->s;
    switch (st->kind) {
    case ST_LET: {
        Type t = host_value(E, st->u.let.e, arena_printf(s->a, "let %s", st->u.let.name));
        Symbol *y = new_sym(s, SYM_LET, st->u.let.name, st->u.let.name_span);
        y->init = st->u.let.e;
        y->ty = t;
        y->is_const = st->u.let.e->is_const;
        y->cval = st->u.let.e->cval;
        y->fval = st->u.let.e->fval;
        st->u.let.sym = y;
        declare(s, y);
        return;
    }
    case ST_SCRATCH: {
        TypeSpec *ts = st->u.scratch.ts;
        if (ts->ndims < 1 || ts->ndims > 4)
            diag_error(s->d, ts->span, "a scratch tensor has 1 to 4 dimensions");
        for (int j = 0; j < ts->nattrs; j++)
            diag_error(s->d, ts->attr_spans[j], "a scratch tensor takes no attribute ('%s'); a kernel's 'zeroed' output "
                       "clears it", ts->attrs[j]);
        for (int d = 0; d < ts->ndims; d++) {
            Type t = host_value(E, ts->dims[d], "a scratch dimension");
            if (t.kind != TY_ERROR && t.kind != TY_INT)
                diag_error(s->d, ts->dims[d]->span, "a scratch dimension is an integer, not %s", type_str(s, t));
            else if (t.kind != TY_ERROR && ts->dims[d]->is_const && ts->dims[d]->cval < 1)
                diag_error(s->d, ts->dims[d]->span, "a scratch dimension must be positive");
        }
        Symbol *y = new_sym(s, SYM_TENSOR, st->u.scratch.name, st->u.scratch.name_span);
        y->ty = (Type){.kind = TY_TENSOR, .dt = ts->dt, .space = MS_GLOBAL, .ndims = ts->ndims};
        y->index = -1 - E->se->scratch.n;
        st->u.scratch.sym = y;
        vec_push(s->a, &E->se->scratch, y);
        vec_push(s->a, &E->se->scratch_ts, ts);
        declare(s, y);
        return;
    }
    case ST_IF: {
        Type t = host_value(E, st->u.if_.cond, "an entry's if condition");
        if (t.kind != TY_ERROR && !is_intlike(t))
            diag_error(s->d, st->u.if_.cond->span, "an if condition is an integer or bool, not %s", type_str(s, t));
        /* a branch that an if on params alone does not take is checked too, but may call a kernel
         * left out of this build (kernel NAME(...) if (COND)) */
        const Expr *c = st->u.if_.cond;
        bool fixed = t.kind != TY_ERROR && c->is_const;
        Scope sc;
        push_scope(s, &sc);
        E->dead += fixed && !c->cval;
        entry_stmts(E, &st->u.if_.then_s);
        E->dead -= fixed && !c->cval;
        pop_scope(s);
        push_scope(s, &sc);
        E->dead += fixed && c->cval;
        entry_stmts(E, &st->u.if_.else_s);
        E->dead -= fixed && c->cval;
        pop_scope(s);
        return;
    }
    case ST_EXPR:
        if (st->u.expr.e->kind == EX_CALL) {
            check_call(E, st);
            return;
        }
        break;
    case ST_ASSIGN: case ST_FOR: break;
    }
    diag_error(s->d, st->span, "an entry runs kernels: its statements are let, scratch, if and kernel calls "
               "(kernel(arg, ...);)");
}

static void entry_stmts(Ent *E, StmtList *l) {
    for (int i = 0; i < l->n; i++) entry_stmt(E, l->v[i]);
}

static void check_entry(Sema *s, SemaResult *out, Kernel *k) {
    for (int i = 0; i < s->prog->kernels.n; i++)
        if (!strcmp(s->prog->kernels.v[i]->name, k->name)) {
            diag_error(s->d, k->name_span, "entry '%s' has the name of a kernel", k->name);
            diag_note(s->d, s->prog->kernels.v[i]->name_span, "the kernel is here");
            return;
        }
    for (int i = 0; i < out->entries.n; i++)
        if (!strcmp(out->entries.v[i]->sk->k->name, k->name)) {
            diag_error(s->d, k->name_span, "redefinition of entry '%s'", k->name);
            diag_note(s->d, out->entries.v[i]->sk->k->name_span, "the first definition is here");
            return;
        }
    SemaEntry *se = ARENA_NEW(s->a, SemaEntry);
    se->sk = ARENA_NEW(s->a, SemaKernel);
    se->sk->k = k;
    s->sk = se->sk;
    Ent E = {.s = s, .out = out, .se = se};
    int errors0 = s->d->nerrors;
    Scope ks;
    push_scope(s, &ks);
    check_args_of(s, k);
    s->in_entry = true;
    for (int i = 0; i < k->nargs; i++)
        for (int j = 0; j < k->args[i].ts.nattrs; j++)
            diag_error(s->d, k->args[i].ts.attr_spans[j], "an entry's arguments take no attributes: the kernels it calls "
                       "say how they use them ('zeroed' belongs to a kernel's output)");
    entry_stmts(&E, &k->body);
    s->in_entry = false;
    pop_scope(s);
    s->sk = NULL;
    if (s->d->nerrors != errors0) return;
    for (int i = 0; i < k->nargs; i++) {
        const Arg *a = &k->args[i];
        if (a->mode == ARG_OUT && a->ts.ndims && !was_written(&E, a->sym))
            diag_error(s->d, a->span, "no kernel of entry '%s' writes its output '%s'", k->name, a->name);
    }
    if (!k->body.n) diag_error(s->d, k->name_span, "entry '%s' runs no kernel", k->name);
    vec_push(s->a, &out->entries, se);
}

void check_entries(Sema *s, SemaResult *out) {
    for (int i = 0; i < s->prog->entries.n; i++) check_entry(s, out, s->prog->entries.v[i]);
}
