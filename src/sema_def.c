/* sema_def.c - `def NAME(a, b) = EXPR;`: named expressions, expanded where they are called.
 *
 * A def names an expression over its parameters (an activation, a complex product's real part), so a
 * program writes it once and calls it in every kernel that needs it. A call NAME(x, y) is replaced,
 * before it is checked, by a copy of EXPR with each parameter replaced by a copy of its argument; the
 * copy is then checked where the call stands, like any expression written there (its types follow the
 * arguments: a def of scalars, vectors or tiles alike). Nothing else is new to the rest of the compiler.
 * A def's body may name its parameters, the program's params and row, col, inf and wg, and call other
 * defs (not itself, directly or through others); a `?:` whose condition is a compile-time value chooses
 * between any two values, so `ACT == 1 ? max(z, 0.0) : z` picks an activation by a param. */
#include <string.h>

#include "sema_int.h"

static FnDef *find_def(const Sema *s, const char *name) {
    for (int i = 0; i < s->prog->defs.n; i++)
        if (!strcmp(s->prog->defs.v[i]->name, name)) return s->prog->defs.v[i];
    return NULL;
}

typedef struct BodyNames {
    Sema *s;
    const FnDef *f;
} BodyNames;

/* visit: a name of a def's body that is none of its parameters, program params or builtins is reported */
static bool check_body_name(const Expr *e, void *ctx) {
    const BodyNames *c = ctx;
    if (e->kind != EX_NAME) return false;
    for (int i = 0; i < c->f->nparams; i++)
        if (!strcmp(e->u.name, c->f->params[i])) return false;
    static const char *const builtins[] = {"row", "col", "inf", "wg"};
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        if (!strcmp(e->u.name, builtins[i])) return false;
    for (int i = 0; i < c->s->prog->params.n; i++)
        if (!strcmp(e->u.name, c->s->prog->params.v[i]->name)) return false;
    diag_error(c->s->d, e->span,
               "'%s' in def '%s' is neither one of its parameters nor a param; a def sees only those (and row, col, "
               "inf, wg): pass it as an argument",
               e->u.name, c->f->name);
    return false;  /* go on: every such name is reported */
}

void check_defs(Sema *s) {
    const Program *p = s->prog;
    for (int i = 0; i < p->defs.n; i++) {
        FnDef *f = p->defs.v[i];
        for (int j = 0; j < i; j++)
            if (!strcmp(p->defs.v[j]->name, f->name)) {
                diag_error(s->d, f->name_span, "def '%s' is defined twice", f->name);
                diag_note(s->d, p->defs.v[j]->name_span, "the first one is here");
            }
        for (int k = 0; k < FN_COUNT; k++)
            if (!strcmp(f->name, intrinsic_name[k]))
                diag_error(s->d, f->name_span, "'%s' is a built-in function; a def needs another name", f->name);
        for (int k = 0; k < p->params.n; k++)
            if (!strcmp(f->name, p->params.v[k]->name))
                diag_error(s->d, f->name_span, "'%s' is a param; a def needs another name", f->name);
        for (int a = 0; a < f->nparams; a++)
            for (int b = 0; b < a; b++)
                if (f->params[a][0] && !strcmp(f->params[a], f->params[b]))
                    diag_error(s->d, f->param_spans[a], "def '%s' has two parameters named '%s'", f->name, f->params[a]);
        ast_expr_any(f->body, check_body_name, &(BodyNames){s, f});
    }
}

Type sema_expand_def(Sema *s, Expr *e, bool *is_def) {
    FnDef *f = find_def(s, e->u.call.fn);
    *is_def = f != NULL;
    if (!f) return ty_err();
    if (e->u.call.nargs != f->nparams) {
        diag_error(s->d, e->span, "def '%s' takes %d argument%s, not %d", f->name, f->nparams, f->nparams == 1 ? "" : "s",
                   e->u.call.nargs);
        diag_note(s->d, f->name_span, "'%s' is defined here", f->name);
        return e->ty = ty_err();
    }
    if (f->expanding) {
        diag_error(s->d, e->span, "def '%s' calls itself; a def is expanded where it is called, so it cannot recurse",
                   f->name);
        return e->ty = ty_err();
    }
    /* the body with each parameter replaced by its argument, checked here; the defs it calls expand in
     * turn while this one is marked */
    Span call = e->span;
    const char *written = ast_expr_str(s->a, e);
    *e = *ast_copy_expr(s->a, f->body, f->params, e->u.call.args, f->nparams);
    e->written = written;  /* comments and the plan print the call as written */
    f->expanding = true;
    int errors0 = s->d->nerrors;
    Type t = check_expr(s, e);
    f->expanding = false;
    if (s->d->nerrors > errors0) diag_note(s->d, call, "in this call of def '%s'", f->name);
    return t;
}
