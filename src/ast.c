/* ast.c - vocabulary tables, node constructors and the stable text dump of the tree
 * (tkc --emit=ast). The dump prints expressions as prefix forms so precedence is visible. */
#include "ast.h"

#include <inttypes.h>
#include <string.h>

const char *const argmode_name[] = {"in", "out", "inout"};

const char *const dtype_name[] = {
#define X(e, s, b, c, m) s,
    TK_DTYPES(X)
#undef X
};
const int dtype_bytes[] = {
#define X(e, s, b, c, m) b,
    TK_DTYPES(X)
#undef X
};
const char *const dtype_cuda[] = {
#define X(e, s, b, c, m) c,
    TK_DTYPES(X)
#undef X
};
const char *const space_name[] = {
#define X(e, s, m) s,
    TK_SPACES(X)
#undef X
};
const char *const block_name[] = {
#define X(e, s, m) s,
    TK_BLOCKS(X)
#undef X
};
const char *const binop_name[] = {
#define X(e, s, m) s,
    TK_BINOPS(X)
#undef X
};
const char *const unop_name[] = {
#define X(e, s, m) s,
    TK_UNOPS(X)
#undef X
};
const char *const assignop_name[] = {
#define X(e, s, m) s,
    TK_ASSIGNOPS(X)
#undef X
};
const char *const veclayout_name[] = {
#define X(e, s, m) s,
    TK_VECLAYOUTS(X)
#undef X
};

const char *const builtin_name[BI_COUNT] = {"block", "wg", "row", "col", "inf", "sms"};

const char *const intrinsic_name[] = {
#define X(e, s, n, m) s,
    TK_INTRINSICS(X)
#undef X
};
const int intrinsic_arity[] = {
#define X(e, s, n, m) n,
    TK_INTRINSICS(X)
#undef X
};

bool dtype_from_name(const char *s, DType *out) {
    for (int i = 0; i < DT_COUNT; i++)
        if (!strcmp(s, dtype_name[i])) {
            *out = (DType)i;
            return true;
        }
    return false;
}

Expr *ast_expr(Arena *a, ExprKind k, Span s) {
    Expr *e = ARENA_NEW(a, Expr);
    e->kind = k;
    e->span = s;
    return e;
}

Expr *ast_copy_expr(Arena *a, const Expr *e, const char *const *names, Expr *const *repl, int n) {
    if (!e) return NULL;
    if (e->kind == EX_NAME)
        for (int i = 0; i < n; i++)
            if (!strcmp(e->u.name, names[i])) return ast_copy_expr(a, repl[i], NULL, NULL, 0);
    Expr *c = ast_expr(a, e->kind, e->span);
    c->u = e->u;
    c->written = e->written;
    switch (e->kind) {
    case EX_MEMBER: c->u.member.base = ast_copy_expr(a, e->u.member.base, names, repl, n); break;
    case EX_TRANSPOSE: c->u.tr.base = ast_copy_expr(a, e->u.tr.base, names, repl, n); break;
    case EX_INDEX:
        c->u.index.base = ast_copy_expr(a, e->u.index.base, names, repl, n);
        c->u.index.args = ARENA_NEW_N(a, IndexArg, e->u.index.nargs > 0 ? e->u.index.nargs : 1);
        for (int i = 0; i < e->u.index.nargs; i++) {
            c->u.index.args[i] = e->u.index.args[i];
            c->u.index.args[i].lo = ast_copy_expr(a, e->u.index.args[i].lo, names, repl, n);
            c->u.index.args[i].hi = ast_copy_expr(a, e->u.index.args[i].hi, names, repl, n);
        }
        break;
    case EX_CALL:
        c->u.call.args = ARENA_NEW_N(a, Expr *, e->u.call.nargs > 0 ? e->u.call.nargs : 1);
        for (int i = 0; i < e->u.call.nargs; i++) c->u.call.args[i] = ast_copy_expr(a, e->u.call.args[i], names, repl, n);
        break;
    case EX_BINARY:
        c->u.bin.l = ast_copy_expr(a, e->u.bin.l, names, repl, n);
        c->u.bin.r = ast_copy_expr(a, e->u.bin.r, names, repl, n);
        break;
    case EX_UNARY: c->u.un.e = ast_copy_expr(a, e->u.un.e, names, repl, n); break;
    case EX_COND:
        c->u.cond.c = ast_copy_expr(a, e->u.cond.c, names, repl, n);
        c->u.cond.a = ast_copy_expr(a, e->u.cond.a, names, repl, n);
        c->u.cond.b = ast_copy_expr(a, e->u.cond.b, names, repl, n);
        break;
    default: break;
    }
    return c;
}

bool ast_expr_any(const Expr *e, bool (*visit)(const Expr *, void *), void *ctx) {
    if (!e) return false;
    if (visit(e, ctx)) return true;
    switch (e->kind) {
    case EX_MEMBER: return ast_expr_any(e->u.member.base, visit, ctx);
    case EX_TRANSPOSE: return ast_expr_any(e->u.tr.base, visit, ctx);
    case EX_INDEX:
        for (int i = 0; i < e->u.index.nargs; i++)
            if (ast_expr_any(e->u.index.args[i].lo, visit, ctx) || ast_expr_any(e->u.index.args[i].hi, visit, ctx))
                return true;
        return ast_expr_any(e->u.index.base, visit, ctx);
    case EX_CALL:
        for (int i = 0; i < e->u.call.nargs; i++)
            if (ast_expr_any(e->u.call.args[i], visit, ctx)) return true;
        return false;
    case EX_BINARY: return ast_expr_any(e->u.bin.l, visit, ctx) || ast_expr_any(e->u.bin.r, visit, ctx);
    case EX_UNARY: return ast_expr_any(e->u.un.e, visit, ctx);
    case EX_COND:
        return ast_expr_any(e->u.cond.c, visit, ctx) || ast_expr_any(e->u.cond.a, visit, ctx) ||
               ast_expr_any(e->u.cond.b, visit, ctx);
    default: return false;
    }
}

bool ast_stmt_any(const Stmt *st, bool (*visit)(const Expr *, void *), void *ctx) {
    switch (st->kind) {
    case ST_ASSIGN: return ast_expr_any(st->u.assign.lhs, visit, ctx) || ast_expr_any(st->u.assign.rhs, visit, ctx);
    case ST_IF:
        return ast_expr_any(st->u.if_.cond, visit, ctx) || ast_stmts_any(&st->u.if_.then_s, visit, ctx) ||
               ast_stmts_any(&st->u.if_.else_s, visit, ctx);
    case ST_FOR:
        return ast_expr_any(st->u.for_.lo, visit, ctx) || ast_expr_any(st->u.for_.hi, visit, ctx) ||
               ast_stmts_any(&st->u.for_.body, visit, ctx);
    case ST_LET: return ast_expr_any(st->u.let.e, visit, ctx);
    case ST_EXPR: return ast_expr_any(st->u.expr.e, visit, ctx);
    default: return false;
    }
}

bool ast_stmts_any(const StmtList *l, bool (*visit)(const Expr *, void *), void *ctx) {
    for (int i = 0; i < l->n; i++)
        if (ast_stmt_any(l->v[i], visit, ctx)) return true;
    return false;
}

Stmt *ast_copy_stmt(Arena *a, const Stmt *st, const char *const *names, Expr *const *repl, int n) {
    Stmt *c = ast_stmt(a, st->kind, st->span);
    c->u = st->u;
    switch (st->kind) {
    case ST_ASSIGN:
        c->u.assign.lhs = ast_copy_expr(a, st->u.assign.lhs, names, repl, n);
        c->u.assign.rhs = ast_copy_expr(a, st->u.assign.rhs, names, repl, n);
        break;
    case ST_IF:
        c->u.if_.cond = ast_copy_expr(a, st->u.if_.cond, names, repl, n);
        c->u.if_.then_s = c->u.if_.else_s = (StmtList){0};
        for (int i = 0; i < st->u.if_.then_s.n; i++)
            vec_push(a, &c->u.if_.then_s, ast_copy_stmt(a, st->u.if_.then_s.v[i], names, repl, n));
        for (int i = 0; i < st->u.if_.else_s.n; i++)
            vec_push(a, &c->u.if_.else_s, ast_copy_stmt(a, st->u.if_.else_s.v[i], names, repl, n));
        break;
    case ST_FOR:
        c->u.for_.lo = ast_copy_expr(a, st->u.for_.lo, names, repl, n);
        c->u.for_.hi = ast_copy_expr(a, st->u.for_.hi, names, repl, n);
        c->u.for_.body = (StmtList){0};
        for (int i = 0; i < st->u.for_.body.n; i++)
            vec_push(a, &c->u.for_.body, ast_copy_stmt(a, st->u.for_.body.v[i], names, repl, n));
        c->u.for_.sym = NULL;
        break;
    case ST_LET:
        c->u.let.e = ast_copy_expr(a, st->u.let.e, names, repl, n);
        c->u.let.sym = NULL;
        break;
    case ST_EXPR: c->u.expr.e = ast_copy_expr(a, st->u.expr.e, names, repl, n); break;
    default: break;
    }
    return c;
}

Stmt *ast_stmt(Arena *a, StmtKind k, Span s) {
    Stmt *st = ARENA_NEW(a, Stmt);
    st->kind = k;
    st->span = s;
    return st;
}

KItem *ast_kitem(Arena *a, KItemKind k, Span s) {
    KItem *it = ARENA_NEW(a, KItem);
    it->kind = k;
    it->span = s;
    return it;
}

/* ---- printing expressions back in .tk syntax ------------------------------------------------ */

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

static void print_expr_prec(StrBuf *b, const Expr *e, int prec);

static void print_float(StrBuf *b, double v) {
    char buf[64];
    snprintf(buf, sizeof buf, "%.17g", v);
    if (!strpbrk(buf, ".eEn")) strcat(buf, ".0");
    sb_puts(b, buf);
}

static void print_expr_prec(StrBuf *b, const Expr *e, int prec) {
    if (e->written) {
        sb_puts(b, e->written);
        return;
    }
    switch (e->kind) {
    case EX_INT: sb_printf(b, "%" PRId64, e->u.ival); break;
    case EX_FLOAT: print_float(b, e->u.fval); break;
    case EX_NAME: sb_puts(b, e->u.name); break;
    case EX_MEMBER:
        print_expr_prec(b, e->u.member.base, 9);
        sb_printf(b, ".%s", e->u.member.field);
        break;
    case EX_TRANSPOSE:
        print_expr_prec(b, e->u.tr.base, 9);
        sb_puts(b, ".T");
        break;
    case EX_INDEX:
        print_expr_prec(b, e->u.index.base, 9);
        sb_putc(b, '[');
        for (int i = 0; i < e->u.index.nargs; i++) {
            const IndexArg *ia = &e->u.index.args[i];
            if (i) sb_puts(b, ", ");
            if (ia->slice) {
                if (ia->lo) print_expr_prec(b, ia->lo, 0);
                sb_putc(b, ':');
                if (ia->hi) print_expr_prec(b, ia->hi, 0);
            } else {
                print_expr_prec(b, ia->lo, 0);
            }
        }
        sb_putc(b, ']');
        break;
    case EX_CALL:
        sb_printf(b, "%s(", e->u.call.fn);
        for (int i = 0; i < e->u.call.nargs; i++) {
            if (i) sb_puts(b, ", ");
            print_expr_prec(b, e->u.call.args[i], 0);
        }
        sb_putc(b, ')');
        break;
    case EX_BINARY: {
        int p = binop_prec(e->u.bin.op);
        if (p < prec) sb_putc(b, '(');
        print_expr_prec(b, e->u.bin.l, p);
        sb_printf(b, " %s ", binop_name[e->u.bin.op]);
        print_expr_prec(b, e->u.bin.r, p + 1);
        if (p < prec) sb_putc(b, ')');
        break;
    }
    case EX_UNARY:
        sb_puts(b, unop_name[e->u.un.op]);
        print_expr_prec(b, e->u.un.e, 8);
        break;
    case EX_COND:
        if (prec > 0) sb_putc(b, '(');
        print_expr_prec(b, e->u.cond.c, 1);
        sb_puts(b, " ? ");
        print_expr_prec(b, e->u.cond.a, 1);
        sb_puts(b, " : ");
        print_expr_prec(b, e->u.cond.b, 0);
        if (prec > 0) sb_putc(b, ')');
        break;
    }
}

void ast_print_expr(StrBuf *b, const Expr *e) { print_expr_prec(b, e, 0); }

char *ast_expr_str(Arena *a, const Expr *e) {
    StrBuf b;
    sb_init(&b);
    ast_print_expr(&b, e);
    char *s = arena_strdup(a, b.s ? b.s : "");
    sb_free(&b);
    return s;
}

/* ---- the tree dump (prefix forms, one node per line, with positions) ------------------------ */

typedef struct Dumper {
    StrBuf b;
    const Diag *d;
} Dumper;

static void at(Dumper *du, Span s) {
    int line, col;
    diag_linecol(du->d, s, &line, &col);
    sb_printf(&du->b, "  @%d:%d\n", line, col);
}

static void dump_sexpr(StrBuf *b, const Expr *e) {
    switch (e->kind) {
    case EX_INT: sb_printf(b, "%" PRId64, e->u.ival); break;
    case EX_FLOAT: print_float(b, e->u.fval); break;
    case EX_NAME: sb_puts(b, e->u.name); break;
    case EX_MEMBER:
        sb_puts(b, "(. ");
        dump_sexpr(b, e->u.member.base);
        sb_printf(b, " %s)", e->u.member.field);
        break;
    case EX_TRANSPOSE:
        sb_puts(b, "(.T ");
        dump_sexpr(b, e->u.tr.base);
        sb_putc(b, ')');
        break;
    case EX_INDEX:
        sb_puts(b, "(index ");
        dump_sexpr(b, e->u.index.base);
        for (int i = 0; i < e->u.index.nargs; i++) {
            const IndexArg *ia = &e->u.index.args[i];
            sb_putc(b, ' ');
            if (ia->slice) {
                sb_puts(b, "(: ");
                if (ia->lo) dump_sexpr(b, ia->lo);
                else sb_puts(b, "_");
                sb_putc(b, ' ');
                if (ia->hi) dump_sexpr(b, ia->hi);
                else sb_puts(b, "_");
                sb_putc(b, ')');
            } else {
                dump_sexpr(b, ia->lo);
            }
        }
        sb_putc(b, ')');
        break;
    case EX_CALL:
        sb_printf(b, "(call %s", e->u.call.fn);
        for (int i = 0; i < e->u.call.nargs; i++) {
            sb_putc(b, ' ');
            dump_sexpr(b, e->u.call.args[i]);
        }
        sb_putc(b, ')');
        break;
    case EX_BINARY:
        sb_printf(b, "(%s ", binop_name[e->u.bin.op]);
        dump_sexpr(b, e->u.bin.l);
        sb_putc(b, ' ');
        dump_sexpr(b, e->u.bin.r);
        sb_putc(b, ')');
        break;
    case EX_UNARY:
        sb_printf(b, "(%s ", e->u.un.op == UN_NEG ? "neg" : "not");
        dump_sexpr(b, e->u.un.e);
        sb_putc(b, ')');
        break;
    case EX_COND:
        sb_puts(b, "(? ");
        dump_sexpr(b, e->u.cond.c);
        sb_putc(b, ' ');
        dump_sexpr(b, e->u.cond.a);
        sb_putc(b, ' ');
        dump_sexpr(b, e->u.cond.b);
        sb_putc(b, ')');
        break;
    }
}

static void ind(Dumper *du, int depth) {
    for (int i = 0; i < depth; i++) sb_puts(&du->b, "  ");
}

static void dump_typespec(StrBuf *b, const TypeSpec *ts) {
    sb_puts(b, dtype_name[ts->dt]);
    if (ts->ndims) {
        sb_putc(b, '[');
        for (int i = 0; i < ts->ndims; i++) {
            if (i) sb_puts(b, ", ");
            ast_print_expr(b, ts->dims[i]);
        }
        sb_putc(b, ']');
    }
    for (int i = 0; i < ts->nattrs; i++) sb_printf(b, " %s", ts->attrs[i]);
}

static void dump_options(Dumper *du, const OptionList *o, int depth) {
    for (int i = 0; i < o->n; i++) {
        ind(du, depth);
        sb_printf(&du->b, "option %s", o->v[i].key);
        if (o->v[i].value) {
            sb_puts(&du->b, " = ");
            dump_sexpr(&du->b, o->v[i].value);
        }
        at(du, o->v[i].span);
    }
}

static void dump_stmts(Dumper *du, const StmtList *l, int depth);

static void dump_stmt(Dumper *du, const Stmt *s, int depth) {
    ind(du, depth);
    switch (s->kind) {
    case ST_ASSIGN:
        sb_printf(&du->b, "(%s ", assignop_name[s->u.assign.op]);
        dump_sexpr(&du->b, s->u.assign.lhs);
        sb_putc(&du->b, ' ');
        dump_sexpr(&du->b, s->u.assign.rhs);
        sb_putc(&du->b, ')');
        at(du, s->span);
        break;
    case ST_LET:
        sb_printf(&du->b, "let %s = ", s->u.let.name);
        dump_sexpr(&du->b, s->u.let.e);
        at(du, s->span);
        break;
    case ST_IF:
        sb_puts(&du->b, "if ");
        dump_sexpr(&du->b, s->u.if_.cond);
        at(du, s->span);
        dump_stmts(du, &s->u.if_.then_s, depth + 1);
        if (s->u.if_.has_else) {
            ind(du, depth);
            sb_puts(&du->b, "else\n");
            dump_stmts(du, &s->u.if_.else_s, depth + 1);
        }
        break;
    case ST_EXPR:
        sb_puts(&du->b, "(expr ");
        dump_sexpr(&du->b, s->u.expr.e);
        sb_putc(&du->b, ')');
        at(du, s->span);
        break;
    case ST_SCRATCH:
        sb_printf(&du->b, "scratch %s: ", s->u.scratch.name);
        dump_typespec(&du->b, s->u.scratch.ts);
        at(du, s->span);
        break;
    case ST_FOR:
        sb_printf(&du->b, "for %s in ", s->u.for_.var);
        dump_sexpr(&du->b, s->u.for_.lo);
        sb_puts(&du->b, " .. ");
        dump_sexpr(&du->b, s->u.for_.hi);
        at(du, s->span);
        dump_stmts(du, &s->u.for_.body, depth + 1);
        break;
    }
}

static void dump_stmts(Dumper *du, const StmtList *l, int depth) {
    for (int i = 0; i < l->n; i++) dump_stmt(du, l->v[i], depth);
}

static void dump_kitem(Dumper *du, const KItem *it) {
    StrBuf *b = &du->b;
    ind(du, 2);
    switch (it->kind) {
    case KI_GRID:
        sb_puts(b, "grid");
        at(du, it->span);
        for (int i = 0; i < it->u.grid.naxes; i++) {
            const Axis *ax = &it->u.grid.axes[i];
            ind(du, 3);
            sb_printf(b, "axis %s = ", ax->name);
            dump_sexpr(b, ax->extent);
            if (ax->reversed) sb_puts(b, " reversed");
            if (ax->folded) sb_puts(b, " folded");
            at(du, ax->span);
        }
        dump_options(du, &it->u.grid.opts, 3);
        break;
    case KI_PIPELINE:
        sb_printf(b, "pipeline %s < ", it->u.pipe.var);
        dump_sexpr(b, it->u.pipe.trips);
        at(du, it->span);
        dump_options(du, &it->u.pipe.opts, 3);
        break;
    case KI_DECL:
        sb_printf(b, "%s %s: ", space_name[it->u.decl.d->space], it->u.decl.d->name);
        dump_typespec(b, &it->u.decl.d->ts);
        at(du, it->u.decl.d->span);
        break;
    case KI_LET:
        sb_printf(b, "let %s = ", it->u.let.name);
        dump_sexpr(b, it->u.let.e);
        at(du, it->span);
        break;
    case KI_REQUIRE:
        sb_puts(b, "require ");
        dump_sexpr(b, it->u.require.cond);
        at(du, it->span);
        break;
    case KI_BLOCK:
        sb_printf(b, "block %s", block_name[it->u.block.kind]);
        at(du, it->span);
        dump_stmts(du, &it->u.block.body, 3);
        break;
    }
}

char *ast_dump(const Program *p, const Diag *d) {
    Dumper du = {.d = d};
    sb_init(&du.b);
    sb_puts(&du.b, "program\n");
    if (p->dispatch) {
        sb_printf(&du.b, "  dispatch \"%s\"", p->dispatch_written);
        at(&du, p->dispatch_span);
    }
    for (int i = 0; i < p->types.n; i++) {
        const TypeAlias *t = p->types.v[i];
        sb_printf(&du.b, "  type %s = %s%s", t->name, dtype_name[t->dt], t->overridden ? " (overridden)" : "");
        at(&du, t->span);
    }
    for (int i = 0; i < p->params.n; i++) {
        const Param *pa = p->params.v[i];
        sb_printf(&du.b, "  param %s = ", pa->name);
        dump_sexpr(&du.b, pa->value);
        if (pa->overridden) sb_printf(&du.b, " (overridden: %" PRId64 ")", pa->override_value);
        at(&du, pa->span);
    }
    for (int k = 0; k < p->kernels.n; k++) {
        const Kernel *kn = p->kernels.v[k];
        sb_printf(&du.b, "  kernel %s", kn->name);
        if (kn->when) {
            sb_puts(&du.b, " if ");
            dump_sexpr(&du.b, kn->when);
        }
        at(&du, kn->span);
        for (int i = 0; i < kn->nargs; i++) {
            const Arg *a = &kn->args[i];
            sb_printf(&du.b, "    arg %s %s: ", argmode_name[a->mode], a->name);
            dump_typespec(&du.b, &a->ts);
            at(&du, a->span);
        }
        for (int i = 0; i < kn->nitems; i++) dump_kitem(&du, kn->items[i]);
    }
    for (int k = 0; k < p->entries.n; k++) {
        const Kernel *kn = p->entries.v[k];
        sb_printf(&du.b, "  entry %s", kn->name);
        at(&du, kn->span);
        for (int i = 0; i < kn->nargs; i++) {
            const Arg *a = &kn->args[i];
            sb_printf(&du.b, "    arg %s %s: ", argmode_name[a->mode], a->name);
            dump_typespec(&du.b, &a->ts);
            at(&du, a->span);
        }
        dump_stmts(&du, &kn->body, 2);
    }
    for (int f = 0; f < p->defs.n; f++) {
        const FnDef *fd = p->defs.v[f];
        sb_printf(&du.b, "  def %s(", fd->name);
        for (int i = 0; i < fd->nparams; i++) sb_printf(&du.b, "%s%s", i ? ", " : "", fd->params[i]);
        sb_puts(&du.b, ") = ");
        dump_sexpr(&du.b, fd->body);
        at(&du, fd->span);
    }
    for (int g = 0; g < p->grads.n; g++) {
        const GradDecl *gd = p->grads.v[g];
        sb_printf(&du.b, "  grad %s =", gd->fwd);
        for (int i = 0; i < gd->nchain; i++) {
            sb_putc(&du.b, ' ');
            dump_sexpr(&du.b, gd->chain[i]);
        }
        at(&du, gd->span);
    }
    return sb_take(&du.b);
}
