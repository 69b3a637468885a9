/* plan_expr.c - the plan's values (plan.h, "the plan's values"): the typed trees lowering
 * translates each statement's expressions into, their text in .tk syntax (the plan's dump and the
 * comments of the generated code), and the queries lowering, the passes and the emitter ask of
 * them. Nothing after lowering's translation reads the syntax tree. */
#include <inttypes.h>
#include <string.h>

#include "plan.h"

/* ---- from the syntax tree ---------------------------------------------------------------------- */

static PExprKind kind_of(ExprKind k) {
    switch (k) {
    case EX_INT: return PX_INT;
    case EX_FLOAT: return PX_FLOAT;
    case EX_NAME: return PX_NAME;
    case EX_MEMBER: return PX_MEMBER;
    case EX_TRANSPOSE: return PX_TRANSPOSE;
    case EX_INDEX: return PX_INDEX;
    case EX_CALL: return PX_CALL;
    case EX_BINARY: return PX_BINARY;
    case EX_UNARY: return PX_UNARY;
    case EX_COND: return PX_COND;
    }
    return PX_INT;
}

PExpr *px_from_ast(Arena *a, const Expr *x) {
    if (!x) return NULL;
    PExpr *p = ARENA_NEW(a, PExpr);
    p->kind = kind_of(x->kind);
    p->ty = x->ty;
    p->is_const = x->is_const;
    p->cval = x->cval;
    p->fval = x->fval;
    p->sym = x->sym;
    p->fn = x->fn;
    p->span = x->span;
    p->written = x->written;
    switch (x->kind) {
    case EX_INT: p->ival = x->u.ival; break;
    case EX_FLOAT: p->lit = x->u.fval; break;
    case EX_NAME: p->name = x->u.name; break;
    case EX_MEMBER:
        p->base = px_from_ast(a, x->u.member.base);
        p->field = x->u.member.field;
        break;
    case EX_TRANSPOSE: p->base = px_from_ast(a, x->u.tr.base); break;
    case EX_INDEX:
        p->base = px_from_ast(a, x->u.index.base);
        p->nix = x->u.index.nargs;
        p->ix = ARENA_NEW_N(a, PIndex, p->nix > 0 ? p->nix : 1);
        for (int i = 0; i < p->nix; i++) {
            const IndexArg *ia = &x->u.index.args[i];
            p->ix[i] = (PIndex){ia->slice, px_from_ast(a, ia->lo), px_from_ast(a, ia->hi), ia->span};
        }
        break;
    case EX_CALL:
        p->name = x->u.call.spelled ? x->u.call.spelled : x->u.call.fn;
        p->nargs = x->u.call.nargs;
        p->args = ARENA_NEW_N(a, PExpr *, p->nargs > 0 ? p->nargs : 1);
        for (int i = 0; i < p->nargs; i++) p->args[i] = px_from_ast(a, x->u.call.args[i]);
        break;
    case EX_BINARY:
        p->bop = x->u.bin.op;
        p->l = px_from_ast(a, x->u.bin.l);
        p->r = px_from_ast(a, x->u.bin.r);
        break;
    case EX_UNARY:
        p->uop = x->u.un.op;
        p->l = px_from_ast(a, x->u.un.e);
        break;
    case EX_COND:
        p->cond = px_from_ast(a, x->u.cond.c);
        p->l = px_from_ast(a, x->u.cond.a);
        p->r = px_from_ast(a, x->u.cond.b);
        break;
    }
    return p;
}

PStmt *ps_from_ast(Arena *a, const Stmt *st) {
    PStmt *p = ARENA_NEW(a, PStmt);
    p->span = st->span;
    p->mv = st->mv;
    if (st->kind == ST_LET) {
        p->kind = PS_LET;
        p->rhs = px_from_ast(a, st->u.let.e);
        p->let = st->u.let.sym;
        return p;
    }
    p->kind = PS_ASSIGN;
    p->lhs = px_from_ast(a, st->u.assign.lhs);
    p->op = st->u.assign.op;
    p->rhs = px_from_ast(a, st->u.assign.rhs);
    return p;
}

PExpr *px_name(Arena *a, Symbol *y, Span sp) {
    PExpr *p = ARENA_NEW(a, PExpr);
    p->kind = PX_NAME;
    p->name = y->name;
    p->sym = y;
    p->ty = y->ty;
    p->span = sp;
    return p;
}

PExpr *px_copy(Arena *a, const PExpr *x) {
    PExpr *p = ARENA_NEW(a, PExpr);
    *p = *x;
    return p;
}

/* ---- text ---------------------------------------------------------------------------------------
 * The same text ast.c prints for the syntax tree: the same precedences and parentheses. */

static int binop_prec(BinOp op) {
    switch (op) {
    case BIN_OR: return 1;
    case BIN_AND: return 2;
    case BIN_EQ: case BIN_NE: return 3;
    case BIN_LT: case BIN_LE: case BIN_GT: case BIN_GE: return 4;
    case BIN_ADD: case BIN_SUB: return 5;
    default: return 6;
    }
}

static void print_float(StrBuf *b, double v) {
    char buf[64];
    snprintf(buf, sizeof buf, "%.17g", v);
    if (!strpbrk(buf, ".eEn")) strcat(buf, ".0");
    sb_puts(b, buf);
}

static void print_prec(StrBuf *b, const PExpr *x, int prec) {
    if (x->written) {  /* as the source writes it: a def call, a copy's wg */
        sb_puts(b, x->written);
        return;
    }
    switch (x->kind) {
    case PX_INT: sb_printf(b, "%" PRId64, x->ival); break;
    case PX_FLOAT: print_float(b, x->lit); break;
    case PX_NAME: sb_puts(b, x->name); break;
    case PX_MEMBER:
        print_prec(b, x->base, 9);
        sb_printf(b, ".%s", x->field);
        break;
    case PX_TRANSPOSE:
        print_prec(b, x->base, 9);
        sb_puts(b, ".T");
        break;
    case PX_INDEX:
        print_prec(b, x->base, 9);
        sb_putc(b, '[');
        for (int i = 0; i < x->nix; i++) {
            const PIndex *ia = &x->ix[i];
            if (i) sb_puts(b, ", ");
            if (ia->slice) {
                if (ia->lo) print_prec(b, ia->lo, 0);
                sb_putc(b, ':');
                if (ia->hi) print_prec(b, ia->hi, 0);
            } else {
                print_prec(b, ia->lo, 0);
            }
        }
        sb_putc(b, ']');
        break;
    case PX_CALL:
        sb_printf(b, "%s(", x->name);
        for (int i = 0; i < x->nargs; i++) {
            if (i) sb_puts(b, ", ");
            print_prec(b, x->args[i], 0);
        }
        sb_putc(b, ')');
        break;
    case PX_BINARY: {
        int p = binop_prec(x->bop);
        if (p < prec) sb_putc(b, '(');
        print_prec(b, x->l, p);
        sb_printf(b, " %s ", binop_name[x->bop]);
        print_prec(b, x->r, p + 1);
        if (p < prec) sb_putc(b, ')');
        break;
    }
    case PX_UNARY:
        sb_puts(b, unop_name[x->uop]);
        print_prec(b, x->l, 8);
        break;
    case PX_COND:
        if (prec > 0) sb_putc(b, '(');
        print_prec(b, x->cond, 1);
        sb_puts(b, " ? ");
        print_prec(b, x->l, 1);
        sb_puts(b, " : ");
        print_prec(b, x->r, 0);
        if (prec > 0) sb_putc(b, ')');
        break;
    }
}

void px_print(StrBuf *b, const PExpr *x) { print_prec(b, x, 0); }

const char *px_str(Arena *a, const PExpr *x) {
    StrBuf b;
    sb_init(&b);
    px_print(&b, x);
    const char *s = arena_strdup(a, b.s ? b.s : "");
    sb_free(&b);
    return s;
}

void plan_stmt_text(StrBuf *b, const PStmt *st) {
    if (st->kind == PS_LET) {
        sb_printf(b, "let %s = ", st->let->name);
        px_print(b, st->rhs);
        return;
    }
    px_print(b, st->lhs);
    sb_printf(b, " %s ", assignop_name[st->op]);
    px_print(b, st->rhs);
}

const char *plan_stmt_str(Arena *a, const PStmt *st) {
    StrBuf b;
    sb_init(&b);
    plan_stmt_text(&b, st);
    const char *r = arena_strdup(a, b.s ? b.s : "");
    sb_free(&b);
    return r;
}

void plan_ctl_text(StrBuf *b, const POp *o) {
    if (o->kind == POP_IF) {
        sb_puts(b, "if (");
        px_print(b, o->cond);
        sb_puts(b, ")");
        return;
    }
    sb_printf(b, "for %s in ", o->var->name);
    px_print(b, o->lo);
    sb_puts(b, " .. ");
    px_print(b, o->hi);
}

/* ---- queries ------------------------------------------------------------------------------------ */

bool px_mentions(const PExpr *x, const Symbol *sym) {
    if (!x) return false;
    switch (x->kind) {
    case PX_NAME: return x->sym == sym;
    case PX_MEMBER: return x->sym == sym || px_mentions(x->base, sym);
    case PX_TRANSPOSE: return px_mentions(x->base, sym);
    case PX_INDEX:
        if (px_mentions(x->base, sym)) return true;
        for (int i = 0; i < x->nix; i++)
            if (px_mentions(x->ix[i].lo, sym) || px_mentions(x->ix[i].hi, sym)) return true;
        return false;
    case PX_CALL:
        for (int i = 0; i < x->nargs; i++)
            if (px_mentions(x->args[i], sym)) return true;
        return false;
    case PX_BINARY: return px_mentions(x->l, sym) || px_mentions(x->r, sym);
    case PX_UNARY: return px_mentions(x->l, sym);
    case PX_COND: return px_mentions(x->cond, sym) || px_mentions(x->l, sym) || px_mentions(x->r, sym);
    default: return false;
    }
}

bool px_is_builtin(const PExpr *x, int b) {
    return x && x->kind == PX_NAME && x->sym && x->sym->kind == SYM_BUILTIN && x->sym->builtin == b;
}

int plan_persistent_per_sm(const PlanKernel *pk) { return pk->min_blocks > 1 && pk->cluster < 2 ? pk->min_blocks : 1; }

bool px_calls(const PExpr *x, Intrinsic fn) {
    if (!x) return false;
    switch (x->kind) {
    case PX_MEMBER: case PX_TRANSPOSE: return px_calls(x->base, fn);
    case PX_INDEX:
        if (px_calls(x->base, fn)) return true;
        for (int i = 0; i < x->nix; i++)
            if (px_calls(x->ix[i].lo, fn) || px_calls(x->ix[i].hi, fn)) return true;
        return false;
    case PX_CALL:
        if (x->fn == fn) return true;
        for (int i = 0; i < x->nargs; i++)
            if (px_calls(x->args[i], fn)) return true;
        return false;
    case PX_BINARY: return px_calls(x->l, fn) || px_calls(x->r, fn);
    case PX_UNARY: return px_calls(x->l, fn);
    case PX_COND: return px_calls(x->cond, fn) || px_calls(x->l, fn) || px_calls(x->r, fn);
    default: return false;
    }
}

bool px_depends_on(Arena *a, const PExpr *x, const Symbol *sym) {
    if (!x) return false;
    switch (x->kind) {
    case PX_NAME:
        return x->sym == sym || (x->sym && x->sym->kind == SYM_LET && x->sym->init &&
                                 px_depends_on(a, px_from_ast(a, x->sym->init), sym));
    case PX_MEMBER: return x->sym == sym || px_depends_on(a, x->base, sym);
    case PX_TRANSPOSE: return px_depends_on(a, x->base, sym);
    case PX_INDEX:
        if (px_depends_on(a, x->base, sym)) return true;
        for (int i = 0; i < x->nix; i++)
            if (px_depends_on(a, x->ix[i].lo, sym) || px_depends_on(a, x->ix[i].hi, sym)) return true;
        return false;
    case PX_CALL:
        for (int i = 0; i < x->nargs; i++)
            if (px_depends_on(a, x->args[i], sym)) return true;
        return false;
    case PX_BINARY: return px_depends_on(a, x->l, sym) || px_depends_on(a, x->r, sym);
    case PX_UNARY: return px_depends_on(a, x->l, sym);
    case PX_COND:
        /* a value depends only on the branch a compile-time condition takes */
        if (x->cond->is_const) return px_depends_on(a, x->cond->cval ? x->l : x->r, sym);
        return px_depends_on(a, x->cond, sym) || px_depends_on(a, x->l, sym) || px_depends_on(a, x->r, sym);
    default: return false;
    }
}

Symbol *px_root(const PExpr *x) {
    while (x && x->kind == PX_INDEX) x = x->base;
    return x && x->kind == PX_NAME ? x->sym : NULL;
}
