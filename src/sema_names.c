/* sema_names.c - the C spellings of .tk names. A legal .tk name that the generated code cannot use
 * as written (reserved_why: a C++ keyword such as `xor`, a standard macro such as `NULL`, a name
 * the generated code declares, a Python keyword of the torch module, `_Bool`, a `tkc_` prefix) is
 * kept, and written differently everywhere tkc writes it (CUDA, C header, torch module, plan): a
 * `_` is appended (`xor_`), or for a reserved prefix `u_` is put in front (`u__Bool`, `u_tkc_x`),
 * until the spelling is neither reserved nor another name of the program. Runs after the checks,
 * so every diagnostic of the program names what the .tk wrote; lowering notes each renaming. */
#include <string.h>

#include "sema_int.h"

static bool taken(const Sema *s, const char *n) {
    for (int i = 0; i < s->declared.n; i++)
        if (!strcmp(s->declared.v[i].sym->name, n)) return true;
    return false;
}

/* the spelling of name: the same for every symbol of that name (the grad chain binds arguments
 * of several kernels by name), unique in the program */
static const char *spell(Sema *s, SemaResult *out, const char *name) {
    for (int i = 0; i < out->renames.n; i++)
        if (!strcmp(out->renames.v[i].tk_name, name)) return out->renames.v[i].sym->name;
    const char *c = name;
    while (reserved_why(c) || (c != name && taken(s, c))) {
        bool prefix = c[0] == '_' || !strncmp(c, "tkc_", 4) || !strncmp(c, "TKC_", 4) || !strncmp(c, "block_", 6) ||
                      !strncmp(c, "cuda", 4) || !strncmp(c, "CU", 2);
        c = prefix && reserved_why(c) ? arena_printf(s->a, "u_%s", c) : arena_printf(s->a, "%s_", c);
    }
    return c;
}

typedef struct Ren {
    const Sema *s;
    const SemaResult *out;
} Ren;

static const char *renamed(const Ren *r, const Symbol *y, const char *name) {
    if (!y) return name;
    for (int i = 0; i < r->out->renames.n; i++)
        if (r->out->renames.v[i].sym == y) return y->name;
    return name;
}

static void ren_expr(const Ren *r, Expr *e);
static void ren_stmts(const Ren *r, StmtList *l);

static void ren_exprs(const Ren *r, Expr **v, int n) {
    for (int i = 0; i < n; i++) ren_expr(r, v[i]);
}

static void ren_expr(const Ren *r, Expr *e) {
    if (!e) return;
    switch (e->kind) {
    case EX_NAME: e->u.name = renamed(r, e->sym, e->u.name); return;
    case EX_MEMBER:
        e->u.member.field = renamed(r, e->sym, e->u.member.field);
        ren_expr(r, e->u.member.base);
        return;
    case EX_TRANSPOSE: ren_expr(r, e->u.tr.base); return;
    case EX_INDEX:
        ren_expr(r, e->u.index.base);
        for (int i = 0; i < e->u.index.nargs; i++) {
            ren_expr(r, e->u.index.args[i].lo);
            ren_expr(r, e->u.index.args[i].hi);
        }
        return;
    case EX_CALL: ren_exprs(r, e->u.call.args, e->u.call.nargs); return;
    case EX_BINARY:
        ren_expr(r, e->u.bin.l);
        ren_expr(r, e->u.bin.r);
        return;
    case EX_UNARY: ren_expr(r, e->u.un.e); return;
    case EX_COND:
        ren_expr(r, e->u.cond.c);
        ren_expr(r, e->u.cond.a);
        ren_expr(r, e->u.cond.b);
        return;
    default: return;
    }
}

static void ren_stmts(const Ren *r, StmtList *l) {
    for (int i = 0; i < l->n; i++) {
        Stmt *st = l->v[i];
        switch (st->kind) {
        case ST_ASSIGN:
            ren_expr(r, st->u.assign.lhs);
            ren_expr(r, st->u.assign.rhs);
            break;
        case ST_IF:
            ren_expr(r, st->u.if_.cond);
            ren_stmts(r, &st->u.if_.then_s);
            ren_stmts(r, &st->u.if_.else_s);
            break;
        case ST_FOR:
            st->u.for_.var = renamed(r, st->u.for_.sym, st->u.for_.var);
            ren_expr(r, st->u.for_.lo);
            ren_expr(r, st->u.for_.hi);
            ren_stmts(r, &st->u.for_.body);
            break;
        case ST_LET:
            st->u.let.name = renamed(r, st->u.let.sym, st->u.let.name);
            ren_expr(r, st->u.let.e);
            break;
        case ST_EXPR: ren_expr(r, st->u.expr.e); break;
        case ST_SCRATCH:
            st->u.scratch.name = renamed(r, st->u.scratch.sym, st->u.scratch.name);
            ren_exprs(r, st->u.scratch.ts->dims, st->u.scratch.ts->ndims);
            break;
        }
    }
}

static void ren_type(const Ren *r, TypeSpec *ts) { ren_exprs(r, ts->dims, ts->ndims); }

static void ren_opts(const Ren *r, OptionList *o) {
    for (int i = 0; i < o->n; i++) ren_expr(r, o->v[i].value);
}

void sema_names(Sema *s, SemaResult *out) {
    for (int i = 0; i < s->declared.n; i++) {
        Symbol *y = s->declared.v[i].sym;
        const char *why = reserved_why(y->name);
        if (!why) continue;
        const char *tk = y->name, *c = spell(s, out, tk);
        vec_push(s->a, &out->renames, ((SemaRename){.sym = y, .tk_name = tk, .why = why, .sk = s->declared.v[i].sk}));
        y->name = c;
    }
    if (!out->renames.n) return;
    /* the syntax tree spells them so too: everything after sema prints names from either */
    Ren r = {s, out};
    Program *p = s->prog;
    for (int i = 0; i < p->params.n; i++) {
        Param *pa = p->params.v[i];
        pa->name = renamed(&r, pa->sym, pa->name);
        ren_expr(&r, pa->value);
    }
    for (int i = 0; i < p->kernels.n; i++) {
        Kernel *k = p->kernels.v[i];
        for (int j = 0; j < k->nargs; j++) {
            k->args[j].name = renamed(&r, k->args[j].sym, k->args[j].name);
            ren_type(&r, &k->args[j].ts);
        }
        for (int j = 0; j < k->nitems; j++) {
            KItem *it = k->items[j];
            switch (it->kind) {
            case KI_GRID:
                for (int a = 0; a < it->u.grid.naxes; a++) {
                    Axis *ax = &it->u.grid.axes[a];
                    ax->name = renamed(&r, ax->sym, ax->name);
                    ren_expr(&r, ax->extent);
                }
                ren_opts(&r, &it->u.grid.opts);
                break;
            case KI_PIPELINE:
                it->u.pipe.var = renamed(&r, it->u.pipe.sym, it->u.pipe.var);
                ren_expr(&r, it->u.pipe.trips);
                ren_opts(&r, &it->u.pipe.opts);
                break;
            case KI_DECL:
                it->u.decl.d->name = renamed(&r, it->u.decl.d->sym, it->u.decl.d->name);
                ren_type(&r, &it->u.decl.d->ts);
                break;
            case KI_LET:
                it->u.let.name = renamed(&r, it->u.let.sym, it->u.let.name);
                ren_expr(&r, it->u.let.e);
                break;
            case KI_REQUIRE: ren_expr(&r, it->u.require.cond); break;
            case KI_BLOCK: ren_stmts(&r, &it->u.block.body); break;
            }
        }
    }
    for (int i = 0; i < p->entries.n; i++) {
        Kernel *k = p->entries.v[i];
        for (int j = 0; j < k->nargs; j++) {
            k->args[j].name = renamed(&r, k->args[j].sym, k->args[j].name);
            ren_type(&r, &k->args[j].ts);
        }
        ren_stmts(&r, &k->body);
    }
}
