/* lower_support.c - what the sm_90a back end emits today (check_support: the constructs it does
 * not, as user diagnostics), and the `zeroed` outputs. Part of lowering (lower_int.h). */
#include <inttypes.h>
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
        case ST_EXPR: case ST_SCRATCH: break;
        }
    }
}

/* A global move's constant tile index places the tile at element index x size, which the kernel
 * and TMA address in 32 bits: a constant that puts the tile past 2^31 - 1 (or before -2^31) would
 * wrap onto real elements, so it is an error (a tensor the launcher accepts has at most 2^31 - 1
 * elements along a dimension). */
static void check_coords(Lower *L, const StmtList *l) {
    for (int i = 0; i < l->n; i++) {
        const Stmt *st = l->v[i];
        if (st->kind == ST_IF) {
            check_coords(L, &st->u.if_.then_s);
            check_coords(L, &st->u.if_.else_s);
            continue;
        }
        if (st->kind == ST_FOR) {
            check_coords(L, &st->u.for_.body);
            continue;
        }
        if (st->kind != ST_ASSIGN || st->mv == MV_NONE || st->mv == MV_S2R || st->mv == MV_R2S) continue;
        bool load = st->mv == MV_G2S || st->mv == MV_G2R;
        const Expr *g = load ? st->u.assign.rhs : st->u.assign.lhs, *v = load ? st->u.assign.lhs : st->u.assign.rhs;
        if (g->kind != EX_INDEX) continue;
        int n = g->u.index.nargs;
        for (int k = 0; k < n; k++) {
            const Expr *x = g->u.index.args[k].lo;
            if (!x) continue;
            int64_t size = 1;
            if (v->ty.kind == TY_TILE && k == n - 2) size = v->ty.rows;
            else if (v->ty.kind == TY_TILE && k == n - 1) size = v->ty.cols;
            else if (v->ty.kind == TY_VEC && k == n - 1) size = v->ty.rows;
            bool at = x->kind == EX_CALL && x->fn == FN_AT;
            const Expr *c = at ? x->u.call.args[0] : x;
            if (!c->is_const) continue;
            int64_t first = at ? c->cval : c->cval * size, last = first + (at ? size : size) - 1;
            if (first < INT32_MIN || last > INT32_MAX)
                diag_error(L->d, x->span,
                           "this index puts the %s at element %" PRId64 " of dimension %d, past what the kernel addresses "
                           "(32-bit element indices: a tensor has at most 2^31 - 1 elements along a dimension)",
                           v->ty.kind == TY_VEC ? "vector" : "tile", first, k);
        }
    }
}

void check_support(Lower *L) {
    SemaKernel *sk = L->sk;
    for (int b = 0; b < BK_COUNT; b++)
        if (sk->blocks[b] && b != BK_LOAD) support_stmts(L, &sk->blocks[b]->u.block.body, (BlockKind)b);
    for (int b = 0; b < BK_COUNT; b++)
        if (sk->blocks[b]) check_coords(L, &sk->blocks[b]->u.block.body);
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
        lower_note(L, "'%s' is zeroed: the launcher clears it on the stream before the kernel runs, with a small kernel "
                "(16-byte stores when its strides are contiguous, else zeros written through its strides, touching "
                "nothing outside the view)",
             a->name);
    }
}
