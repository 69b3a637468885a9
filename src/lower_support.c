/* lower_support.c - what the sm_90a back end emits today (check_support: the constructs it does
 * not, as user diagnostics), and the `zeroed` outputs. Part of lowering (lower_int.h). */
#include <string.h>

#include "lower_int.h"

/* ---- what the sm_90a back end emits today ---------------------------------------------------- */

/* what names the construct; "are" for plural names ("per_col vectors") */
static void unsupported_(Lower *L, Span sp, const char *what, bool plural) {
    diag_error(L->d, sp, "%s %s not supported by the sm_90a back end yet", what, plural ? "are" : "is");
}
#define unsupported(L, sp, what) unsupported_((L), (sp), (what), false)
#define unsupported_plural(L, sp, what) unsupported_((L), (sp), (what), true)

/* rows of a register tile (or entries of a per_row vector) are held in blocks of 64 by each
 * warpgroup: a row slice must take whole blocks of a value one warpgroup holds whole */
static void check_row_slice(Lower *L, const Expr *e) {
    const Type *bt = &e->u.index.base->ty;
    const IndexArg *a = &e->u.index.args[0];
    int lo = a->lo ? (int)a->lo->cval : 0, hi = a->hi ? (int)a->hi->cval : bt->rows;
    if (!bt->per_wg && L->sk->consumers > 1)
        diag_error(L->d, e->span,
                   "'%s' is split over %d consumer warpgroups by rows, so its rows cannot be sliced; declare it per_wg "
                   "(every warpgroup holds all of it) or use one consumer warpgroup",
                   e->u.index.base->sym->name, L->sk->consumers);
    else if (lo % 64 || hi % 64)
        diag_error(L->d, a->span,
                   "a row slice of a register %s takes whole blocks of 64 rows (the wgmma fragment layout); got %d:%d",
                   bt->kind == TY_TILE ? "tile" : "vector", lo, hi);
}

static void support_expr(Lower *L, Expr *e) {
    if (!e) return;
    switch (e->kind) {
    case EX_TRANSPOSE:
        support_expr(L, e->u.tr.base);
        return;
    case EX_INDEX:
        if (e->ty.kind == TY_VEC && e->u.index.base->ty.kind == TY_TILE)
            ; /* one row or column: a relayout */
        else if (e->u.index.base->ty.space == MS_REG &&
                 ((e->u.index.base->ty.kind == TY_TILE && (e->u.index.args[0].lo || e->u.index.args[0].hi)) ||
                  (e->u.index.base->ty.kind == TY_VEC && e->u.index.base->ty.layout == VL_ROW)))
            check_row_slice(L, e);
        /* per_col vectors: every thread holds its columns of the whole vector, so any slice works */
        support_expr(L, e->u.index.base);
        return;
    case EX_CALL:
        switch (e->fn) {
        case FN_CUMSUM: unsupported(L, e->span, "cumsum()"); break;
        case FN_REAL: case FN_IMAG: case FN_COMPLEX: unsupported_plural(L, e->span, "complex tiles"); break;
        default: break;
        }
        for (int i = 0; i < e->u.call.nargs; i++) support_expr(L, e->u.call.args[i]);
        return;
    case EX_BINARY:
        support_expr(L, e->u.bin.l);
        support_expr(L, e->u.bin.r);
        return;
    case EX_UNARY: support_expr(L, e->u.un.e); return;
    case EX_COND: support_expr(L, e->u.cond.c); support_expr(L, e->u.cond.a); support_expr(L, e->u.cond.b); return;
    default: return;
    }
}

static void support_stmts(Lower *L, StmtList *l, BlockKind bk) {
    for (int i = 0; i < l->n; i++) {
        Stmt *st = l->v[i];
        switch (st->kind) {
        case ST_ASSIGN:
            if (st->mv == MV_G2S) break;
            if (st->mv == MV_R2S && st->u.assign.lhs->ty.kind == TY_VEC)
                unsupported(L, st->span, "moving vectors from registers to shared memory");
            if (ast_stmt_is_mma(st)) {
                support_expr(L, st->u.assign.rhs->u.bin.l);
                break;
            }
            if (st->u.assign.lhs->kind == EX_INDEX && st->mv == MV_NONE) support_expr(L, st->u.assign.lhs);
            support_expr(L, st->u.assign.rhs);
            break;
        case ST_LET: support_expr(L, st->u.let.e); break;
        case ST_IF:
            support_stmts(L, &st->u.if_.then_s, bk);
            support_stmts(L, &st->u.if_.else_s, bk);
            break;
        case ST_FOR: support_stmts(L, &st->u.for_.body, bk); break;
        case ST_EXPR: break;
        }
    }
}

void check_support(Lower *L) {
    SemaKernel *sk = L->sk;
    for (int b = 0; b < BK_COUNT; b++)
        if (sk->blocks[b] && b != BK_LOAD) support_stmts(L, &sk->blocks[b]->u.block.body, (BlockKind)b);
    for (int i = 0; i < sk->regs.n; i++) {
        Symbol *y = sk->regs.v[i];
        if (y->ty.complex) unsupported_plural(L, y->span, "complex tiles");
    }
}

/* `zeroed` outputs, cleared by the launcher on the stream before the kernel runs */
void lower_zeroed(Lower *L) {
    SemaKernel *sk = L->sk;
    PlanKernel *pk = L->pk;
    for (int i = 0; i < sk->args.n; i++) {
        const Arg *a = sk->args.v[i];
        bool z = false;
        for (int j = 0; j < a->ts.nattrs; j++) z |= !strcmp(a->ts.attrs[j], "zeroed");
        if (!z || !a->ts.ndims) continue;
        vec_push(L->a, &pk->zeroed, a);
        lower_note(L, "'%s' is zeroed: the launcher clears it on the stream before the kernel runs (one cudaMemsetAsync when "
                "its strides are contiguous, else a small kernel that writes zeros through its strides, touching "
                "nothing outside the view)",
             a->name);
    }
}
