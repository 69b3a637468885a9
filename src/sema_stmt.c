/* sema_stmt.c - the semantic checks of statements: reads before assignment, global accesses,
 * register lvalues, moves between memory spaces, assignments, blocks and ifs. Part of the
 * semantic checks (sema_int.h). */
#include <inttypes.h>
#include <string.h>

#include "sema_int.h"

/* ---- statements ----------------------------------------------------------------------------- */

static bool is_assigned(Sema *s, Symbol *y) {
    for (int i = 0; i < s->assigned.n; i++)
        if (s->assigned.v[i] == y) return true;
    return false;
}

static void mark_assigned(Sema *s, Symbol *y) {
    if (y && !is_assigned(s, y)) vec_push(s->a, &s->assigned, y);
}

/* reports register tiles read before any assignment (in block order: setup, compute, store,
 * finish); each symbol once */
static void check_reads(Sema *s, Expr *e) {
    if (!e) return;
    switch (e->kind) {
    case EX_NAME:
        if (e->sym && e->sym->kind == SYM_REG && !is_assigned(s, e->sym)) {
            diag_error(s->d, e->span,
                       "register tile '%s' is read before it is assigned; initialise it in setup (e.g. '%s = 0;')",
                       e->sym->name, e->sym->name);
            mark_assigned(s, e->sym);
        }
        return;
    case EX_MEMBER: check_reads(s, e->u.member.base); return;
    case EX_TRANSPOSE: check_reads(s, e->u.tr.base); return;
    case EX_INDEX:
        check_reads(s, e->u.index.base);
        for (int i = 0; i < e->u.index.nargs; i++) {
            check_reads(s, e->u.index.args[i].lo);
            check_reads(s, e->u.index.args[i].hi);
        }
        return;
    case EX_CALL:
        for (int i = 0; i < e->u.call.nargs; i++) check_reads(s, e->u.call.args[i]);
        return;
    case EX_BINARY: check_reads(s, e->u.bin.l); check_reads(s, e->u.bin.r); return;
    case EX_UNARY: check_reads(s, e->u.un.e); return;
    case EX_COND: check_reads(s, e->u.cond.c); check_reads(s, e->u.cond.a); check_reads(s, e->u.cond.b); return;
    default: return;
    }
}

static Symbol *tensor_of(Sema *s, Expr *e) {
    if (e->kind != EX_INDEX || e->u.index.base->kind != EX_NAME) return NULL;
    Symbol *y = lookup(s, e->u.index.base->u.name);
    return y && y->kind == SYM_TENSOR ? y : NULL;
}

/* The root symbol of an lvalue-ish expression (name, slice of a name, transpose of a name). */
static Symbol *root_sym(Expr *e) {
    while (e) {
        if (e->kind == EX_NAME) return e->sym;
        if (e->kind == EX_INDEX) e = e->u.index.base;
        else if (e->kind == EX_TRANSPOSE) e = e->u.tr.base;
        else return NULL;
    }
    return NULL;
}

/* Checks a tile or vector access X[i0, ..., in] of a global tensor that moves `moved` (the
 * type on the other side of '<-' or '+='). The last two indices of a tile access (the last
 * one of a vector access) count in units of the moved shape. */
static bool check_global_access(Sema *s, Expr *ix, Symbol *t, Type moved, bool write, Span stmt_span) {
    Expr *base = ix->u.index.base;
    base->sym = t;
    t->used = true;
    base->ty = t->ty;
    ix->ty = t->ty;
    int n = ix->u.index.nargs;
    int need = moved.kind == TY_TILE ? 2 : 1;
    if (!check_tensor_indices(s, ix, t, "global tiles are addressed by tile index, not by slice", n - need) ||
        moved.kind == TY_ERROR)
        return false;
    Arg *arg = s->sk->args.v[t->index];
    if (write && arg->mode == ARG_IN) {
        diag_error(s->d, base->span, "'%s' is an 'in' tensor and cannot be written; declare it 'out' or 'inout'", t->name);
        diag_note(s->d, arg->span, "'%s' is declared here", t->name);
        return false;
    }
    if (!write && arg->mode == ARG_OUT) {
        diag_error(s->d, base->span, "'%s' is an 'out' tensor and cannot be read; declare it 'in' or 'inout'", t->name);
        diag_note(s->d, arg->span, "'%s' is declared here", t->name);
        return false;
    }
    if (n < need) {
        diag_error(s->d, ix->span, "a %s moves along the last %d dimension%s, but '%s' has only %d",
                   moved.kind == TY_TILE ? "tile" : "vector", need, need > 1 ? "s" : "", t->name, n);
        return false;
    }
    if (moved.dt != t->ty.dt) {
        diag_error(s->d, stmt_span, "dtype mismatch: '%s' holds %s but the %s is %s%s", t->name, dtype_name[t->ty.dt],
                   moved.kind == TY_TILE ? "tile" : "vector", dtype_name[moved.dt],
                   write ? arena_printf(s->a, "; convert it with %s(...)", dtype_name[t->ty.dt]) : "");
        return false;
    }
    if (moved.complex) {
        diag_error(s->d, stmt_span, "complex tiles move to global memory as two real tiles: real(x) and imag(x)");
        return false;
    }
    /* TMA: rows of the contiguous dimension must be 16-byte multiples; boxes at most 256 */
    Expr *inner = arg->ts.dims[arg->ts.ndims - 1];
    if (inner->is_const && (inner->cval * dtype_bytes[t->ty.dt]) % 16 && need == 2) {
        diag_error(s->d, inner->span,
                   "TMA needs 16-byte aligned rows: the last dimension of '%s' is %" PRId64 " x %d B = %" PRId64
                   " B, not a multiple of 16",
                   t->name, inner->cval, dtype_bytes[t->ty.dt], inner->cval * dtype_bytes[t->ty.dt]);
        return false;
    }
    if (moved.kind == TY_TILE && moved.rows > 256) {
        diag_error(s->d, stmt_span,
                   "TMA box limit: a tile moved by TMA has at most 256 rows, this one has %d; use a smaller tile "
                   "or two moves",
                   moved.rows);
        return false;
    }
    return true;
}

static bool in_consumer_block(Sema *s) { return s->in_block && s->bk != BK_LOAD; }

/* an assignment target that sema accepts for =, +=, -=, *=, /= : a register tile or vector,
 * or a column slice of a register tile */
static bool check_reg_lvalue(Sema *s, Expr *L, Type lt, AssignOp op) {
    if (lt.kind == TY_ERROR) return false;
    Symbol *root = root_sym(L);
    if (root && root->kind == SYM_SHARED) {
        diag_error(s->d, L->span, "shared tile '%s' is written with '<-' (from registers or global memory), not '%s'",
                   root->name, assignop_name[op]);
        return false;
    }
    if (root && (root->kind == SYM_LET || root->kind == SYM_PARAM || root->kind == SYM_DIM || root->kind == SYM_SCALAR ||
                 root->kind == SYM_LOOPVAR || root->kind == SYM_FORVAR)) {
        diag_error(s->d, L->span, "'%s' is a %s and cannot be assigned", root->name, symkind_desc(root->kind));
        return false;
    }
    if (!root || root->kind != SYM_REG || L->kind == EX_TRANSPOSE || !is_tv(lt)) {
        diag_error(s->d, L->span, "the left side of '%s' must be a register tile or vector", assignop_name[op]);
        return false;
    }
    if (!in_consumer_block(s)) {
        diag_error(s->d, L->span, "register tiles live in the consumer warpgroups; the load block runs on the producer");
        return false;
    }
    return true;
}

/* value assigned into a register destination: same shape (or a scalar fill, or a vector
 * broadcast into a tile) and same dtype */
static bool check_value_fits(Sema *s, Type lt, Type rt, Expr *R, Span op_span) {
    if (rt.kind == TY_ERROR) return false;
    if (is_scalar(rt)) {
        if (rt.kind == TY_BOOL) {
            diag_error(s->d, R->span, "cannot assign a condition to a tile; use where(cond, a, b)");
            return false;
        }
        if (rt.varying && lt.kind == TY_VEC) {
            int need = lt.layout == VL_ROW ? VARY_ROW : VARY_COL;
            if (rt.varying & ~need) {
                diag_error(s->d, R->span, "this value varies along both tile dimensions and cannot fill a vector");
                return false;
            }
        }
        if (lt.partial && !(R->kind == EX_INT && R->u.ival == 0) && !(R->kind == EX_FLOAT && R->u.fval == 0)) {
            diag_error(s->d, R->span, "a partial tile is filled only with 0 (each warpgroup's copy is a part of the sum, "
                       "so a fill with c would count c once per warpgroup)");
            return false;
        }
        return true; /* fill or per-element function */
    }
    if (!is_tv(rt)) {
        diag_error(s->d, R->span, "cannot assign %s to a register %s", type_str(s, rt),
                   lt.kind == TY_TILE ? "tile" : "vector");
        return false;
    }
    if (rt.space == MS_SHARED) {
        diag_error(s->d, op_span, "reading a shared %s into registers is a move: write 'x <- shared'",
                   rt.kind == TY_TILE ? "tile" : "vector");
        return false;
    }
    if (lt.kind == TY_TILE && rt.kind == TY_VEC) {
        bool fits = (rt.layout == VL_ROW && rt.rows == lt.rows) || (rt.layout == VL_COL && rt.rows == lt.cols);
        if (!fits) {
            diag_error(s->d, R->span, "cannot broadcast a %s vector of %d into a %s tile", veclayout_name[rt.layout],
                       rt.rows, shape_str(s, lt));
            return false;
        }
    } else if (lt.kind != rt.kind || lt.rows != rt.rows || (lt.kind == TY_TILE && lt.cols != rt.cols)) {
        diag_error(s->d, op_span, "shape mismatch: assigning %s to %s", shape_str(s, rt), shape_str(s, lt));
        return false;
    } else if (lt.kind == TY_VEC && lt.layout != rt.layout && lt.layout && rt.layout) {
        /* a layout change between per_row and per_col vectors is allowed (through shared memory) */
    }
    if (lt.dt != rt.dt) {
        diag_error(s->d, op_span, "dtype mismatch: assigning %s to a %s %s; convert explicitly with %s(...)",
                   dtype_name[rt.dt], dtype_name[lt.dt], lt.kind == TY_TILE ? "tile" : "vector", dtype_name[lt.dt]);
        return false;
    }
    if (lt.per_wg != rt.per_wg && rt.kind == lt.kind) {
        diag_error(s->d, op_span, "cannot assign a %s value to a %s register tile", rt.per_wg ? "per_wg" : "row-split",
                   lt.per_wg ? "per_wg" : "row-split");
        return false;
    }
    if (lt.partial != rt.partial && rt.kind == lt.kind) {
        diag_error(s->d, op_span, "cannot assign a %s value to a %s register tile: a partial tile's warpgroup copies "
                   "are parts of one sum, a per_wg tile's are one value", rt.partial ? "partial" : "per_wg",
                   lt.partial ? "partial" : "per_wg");
        return false;
    }
    if (lt.complex != rt.complex) {
        diag_error(s->d, op_span, "cannot assign a %s value to a %s tile", rt.complex ? "complex" : "real",
                   lt.complex ? "complex" : "real");
        return false;
    }
    return true;
}

static void check_move(Sema *s, Stmt *st) {
    Expr *L = st->u.assign.lhs, *R = st->u.assign.rhs;
    Symbol *lt_t = tensor_of(s, L), *rt_t = tensor_of(s, R);
    BlockKind bk = s->bk;
    if (lt_t && rt_t) {
        diag_error(s->d, st->u.assign.op_span, "'<-' between two global tensors; move through a shared tile");
        return;
    }
    if (rt_t) { /* a load: shared <- global, or reg vector <- global */
        Type lt = check_expr(s, L);
        if (lt.kind == TY_ERROR) return;
        if (!is_tv(lt)) {
            diag_error(s->d, L->span, "the destination of a load must be a shared tile or vector, not %s", type_str(s, lt));
            return;
        }
        if (L->kind != EX_NAME) {
            diag_error(s->d, L->span, "a load fills a whole shared tile; name the tile, not a slice of it");
            return;
        }
        if (lt.space == MS_REG) {
            if (lt.kind == TY_TILE && !s->sk->rowwise) {
                diag_error(s->d, st->u.assign.op_span,
                           "register tiles in the accumulator layout cannot be loaded from global memory; load into a "
                           "shared tile and then move it to registers (reg <- shared), or declare the tiles rowwise");
                return;
            }
            st->mv = MV_G2R;
            if (bk != BK_SETUP && bk != BK_FINISH) {
                diag_error(s->d, st->u.assign.op_span, "a load from global memory into registers belongs in setup or finish");
                return;
            }
            mark_assigned(s, L->sym);
        } else {
            st->mv = MV_G2S;
            if (bk != BK_LOAD && bk != BK_SETUP) {
                diag_error(s->d, st->u.assign.op_span,
                           "tile loads from global memory (shared <- global) belong in the load or setup block%s",
                           bk == BK_COMPUTE ? "; compute works on tiles that are already in shared memory" : "");
                return;
            }
            for (int i = 0; i < s->g2s.n; i++)
                if (s->g2s.v[i] == L->sym && s->g2s_bk.v[i] != (int)bk) {
                    diag_error(s->d, L->span,
                               "shared tile '%s' is loaded in both setup and load; a tile is either a ring buffer "
                               "(load) or loaded once per work tile (setup)",
                               L->sym->name);
                    return;
                }
            vec_push(s->a, &s->g2s, L->sym);
            vec_push(s->a, &s->g2s_bk, (int)bk);
        }
        check_global_access(s, R, rt_t, lt, false, st->span);
        return;
    }
    if (lt_t) { /* a store: global <- shared or register value */
        Type rt = check_expr(s, R);
        if (rt.kind == TY_ERROR) return;
        check_reads(s, R);
        if (!is_tv(rt)) {
            diag_error(s->d, R->span, "only tiles and vectors can be stored to global memory, not %s", type_str(s, rt));
            return;
        }
        st->mv = rt.space == MS_SHARED ? MV_S2G : MV_R2G;
        if (rt.partial) {
            diag_error(s->d, R->span, "a partial tile holds a part of a sum in each warpgroup: add it into global memory "
                       "with '+=' (every warpgroup adds its part), not '<-'");
            return;
        }
        if (bk != BK_STORE && bk != BK_FINISH) {
            diag_error(s->d, st->u.assign.op_span, "stores to global memory belong in the store or finish block");
            return;
        }
        check_global_access(s, L, lt_t, rt, true, st->span);
        return;
    }
    if (L->kind == EX_NAME && lookup(s, L->u.name) && lookup(s, L->u.name)->kind == SYM_TENSOR) {
        diag_error(s->d, L->span, "index the tensor: %s[...] <- tile", L->u.name);
        return;
    }
    if (R->kind == EX_NAME && lookup(s, R->u.name) && lookup(s, R->u.name)->kind == SYM_TENSOR) {
        diag_error(s->d, R->span, "index the tensor: tile <- %s[...]", R->u.name);
        return;
    }
    Type lt = check_expr(s, L);
    Type rt = check_expr(s, R);
    if (lt.kind == TY_ERROR || rt.kind == TY_ERROR) return;
    if (!in_consumer_block(s)) {
        diag_error(s->d, st->u.assign.op_span,
                   "the load block runs on the producer and only moves global tiles into shared memory");
        return;
    }
    if (!is_tv(lt) || !is_tv(rt)) {
        diag_error(s->d, st->u.assign.op_span, "'<-' moves tiles or vectors, not %s", type_str(s, is_tv(lt) ? rt : lt));
        return;
    }
    if (lt.space == MS_SHARED && rt.space == MS_REG) {
        st->mv = MV_R2S;
        if (rt.partial) {
            diag_error(s->d, R->span, "a partial tile holds a part of a sum in each warpgroup, which a move into shared "
                       "memory would not add up: add it into global memory with '+='");
            return;
        }
        check_reads(s, R);
    } else if (lt.space == MS_REG && rt.space == MS_SHARED) {
        st->mv = MV_S2R;
        if (L->kind != EX_NAME && L->kind != EX_INDEX) {
            diag_error(s->d, L->span, "the destination of a move must be a tile or a slice of one");
            return;
        }
        mark_assigned(s, root_sym(L));
    } else {
        diag_error(s->d, st->u.assign.op_span, "'<-' moves between memory spaces; both sides are %s%s",
                   space_name[lt.space], lt.space == MS_REG ? " (use '=')" : "");
        return;
    }
    Type a = lt, b = rt;
    if (a.kind != b.kind || a.rows != b.rows || (a.kind == TY_TILE && a.cols != b.cols)) {
        diag_error(s->d, st->u.assign.op_span, "shape mismatch: moving %s into %s", shape_str(s, rt), shape_str(s, lt));
        return;
    }
    if (a.dt != b.dt) {
        if (rt.space == MS_SHARED)
            diag_error(s->d, st->u.assign.op_span,
                       "dtype mismatch: moving %s into %s; a move does not convert: declare the register tile %s, then "
                       "convert it in registers",
                       dtype_name[b.dt], dtype_name[a.dt], dtype_name[b.dt]);
        else
            diag_error(s->d, st->u.assign.op_span, "dtype mismatch: moving %s into %s; convert with %s(...)",
                       dtype_name[b.dt], dtype_name[a.dt], dtype_name[a.dt]);
        return;
    }
}

static void check_assign(Sema *s, Stmt *st) {
    AssignOp op = st->u.assign.op;
    Expr *L = st->u.assign.lhs, *R = st->u.assign.rhs;
    if (op == AS_MOVE) {
        check_move(s, st);
        return;
    }
    Symbol *gt = tensor_of(s, L);
    if (gt) {
        if (op != AS_ADD) {
            diag_error(s->d, st->u.assign.op_span,
                       "global tensors are written with '<-' (store) or '+=' (atomic add), not '%s'", assignop_name[op]);
            return;
        }
        Type rt = check_expr(s, R);
        if (rt.kind == TY_ERROR) return;
        check_reads(s, R);
        if (!is_tv(rt)) {
            diag_error(s->d, R->span, "atomic add takes a tile or vector, not %s", type_str(s, rt));
            return;
        }
        st->mv = rt.space == MS_SHARED ? MV_ADD_S2G : MV_ADD_R2G;
        if (s->bk != BK_STORE && s->bk != BK_FINISH) {
            diag_error(s->d, st->u.assign.op_span, "atomic adds to global memory belong in the store or finish block");
            return;
        }
        if (rt.dt != DT_FP32 && rt.dt != DT_BF16 && rt.dt != DT_FP16) {
            diag_error(s->d, R->span, "atomic add takes fp32, bf16 or fp16 values");
            return;
        }
        check_global_access(s, L, gt, rt, true, st->span);
        return;
    }
    if (L->kind == EX_NAME && lookup(s, L->u.name) && lookup(s, L->u.name)->kind == SYM_TENSOR) {
        diag_error(s->d, L->span, "global tensors are written with '<-' (store) or '+=' (atomic add), and indexed: %s[...]",
                   L->u.name);
        return;
    }
    Type lt = check_expr(s, L);
    bool lok = check_reg_lvalue(s, L, lt, op);
    s->matmul_ok = (op == AS_SET || op == AS_ADD || op == AS_SUB);
    Type rt = check_expr(s, R);
    s->matmul_ok = false;
    if (!lok || rt.kind == TY_ERROR) return;
    bool is_mm = R->kind == EX_BINARY && R->u.bin.op == BIN_MATMUL;
    if (is_mm) {
        if (lt.kind != TY_TILE || lt.dt != DT_FP32) {
            diag_error(s->d, L->span, "a matrix product accumulates in fp32; '%s' is %s", root_sym(L)->name, type_str(s, lt));
            return;
        }
        if (L->kind != EX_NAME) {
            diag_error(s->d, L->span, "a matrix product writes a whole register tile, not a slice");
            return;
        }
        if (lt.rows != rt.rows || lt.cols != rt.cols) {
            diag_error(s->d, st->u.assign.op_span, "shape mismatch: %s @ %s gives %s but '%s' is %s",
                       shape_str(s, R->u.bin.l->ty), shape_str(s, R->u.bin.r->ty), shape_str(s, rt), root_sym(L)->name,
                       shape_str(s, lt));
            return;
        }
        if (lt.per_wg != rt.per_wg && R->u.bin.l->ty.space == MS_REG) {
            diag_error(s->d, st->u.assign.op_span, "cannot mix per_wg and row-split register tiles in '@'");
            return;
        }
        if (lt.complex != rt.complex) {
            diag_error(s->d, st->u.assign.op_span, "complex product into a real tile, or the reverse");
            return;
        }
    } else if (!check_value_fits(s, lt, rt, R, st->u.assign.op_span)) {
        return;
    }
    check_reads(s, R);
    if (op != AS_SET) check_reads(s, L);
    Symbol *root = root_sym(L);
    if (op == AS_SET && L->kind == EX_NAME) mark_assigned(s, root);
    else if (op == AS_SET) check_reads(s, L); /* a slice assignment keeps the rest of the tile */
}

static void check_stmt(Sema *s, Stmt *st) {
    switch (st->kind) {
    case ST_ASSIGN:
        check_assign(s, st);
        return;
    case ST_SCRATCH:
        diag_error(s->d, st->span, "scratch memory belongs to an entry (entry NAME(...) { scratch %s: ...; }), not to a "
                   "kernel's blocks: declare tiles with shared or reg", st->u.scratch.name);
        return;
    case ST_EXPR: {
        Expr *e = st->u.expr.e;
        if (e->kind == EX_CALL && !strcmp(e->u.call.fn, "sync")) {
            e->fn = FN_SYNC;
            e->ty = (Type){.kind = TY_VOID};
            if (e->u.call.nargs) diag_error(s->d, e->span, "sync() takes no arguments");
            else if (!in_consumer_block(s) || s->bk == BK_SETUP)
                diag_error(s->d, e->span, "sync() synchronises the consumer warpgroups; use it in compute, store or finish");
            else if (s->wg_branch)
                diag_error(s->d, e->span,
                           "sync() under a condition on wg: every consumer warpgroup must reach it, or they deadlock");
            return;
        }
        check_expr(s, e);
        diag_error(s->d, e->span, "this expression does nothing; assign it ('x = ...') or move it ('x <- ...')");
        return;
    }
    case ST_LET: {
        Type t = check_expr(s, st->u.let.e);
        Symbol *y = new_sym(s, SYM_LET, st->u.let.name, st->u.let.name_span);
        y->init = st->u.let.e;
        st->u.let.sym = y;
        if (t.kind != TY_ERROR) {
            if (t.kind == TY_TENSOR || t.kind == TY_GRIDREF || t.kind == TY_VOID || t.varying ||
                (is_tv(t) && t.space == MS_SHARED)) {
                diag_error(s->d, st->u.let.e->span, "a let names a scalar or a register value, not %s", type_str(s, t));
                t = ty_err();
            } else if (is_tv(t) && !in_consumer_block(s)) {
                diag_error(s->d, st->u.let.e->span, "register values exist only in consumer blocks");
                t = ty_err();
            } else if (st->u.let.e->kind == EX_BINARY && st->u.let.e->u.bin.op == BIN_MATMUL) {
                t = ty_err();
            }
            check_reads(s, st->u.let.e);
        }
        y->ty = t;
        y->is_const = st->u.let.e->is_const;
        y->cval = st->u.let.e->cval;
        y->fval = st->u.let.e->fval;
        declare(s, y);
        return;
    }
    case ST_IF: {
        Type c = check_expr(s, st->u.if_.cond);
        if (c.kind != TY_ERROR && (!is_intlike(c) || c.varying))
            diag_error(s->d, st->u.if_.cond->span,
                       "an if condition must be a uniform integer or bool (for per-element choices use where())");
        int saved = s->wg_branch;
        if (expr_mentions(st->u.if_.cond, s->builtin[BI_WG])) s->wg_branch++;
        Scope sc;
        push_scope(s, &sc);
        check_stmts(s, &st->u.if_.then_s);
        pop_scope(s);
        if (st->u.if_.has_else) {
            Scope sc2;
            push_scope(s, &sc2);
            check_stmts(s, &st->u.if_.else_s);
            pop_scope(s);
        }
        s->wg_branch = saved;
        return;
    }
    case ST_FOR: {
        Type lo = check_expr(s, st->u.for_.lo), hi = check_expr(s, st->u.for_.hi);
        if (lo.kind != TY_ERROR && (lo.kind != TY_INT || lo.varying))
            diag_error(s->d, st->u.for_.lo->span, "a loop bound must be an integer, not %s", type_str(s, lo));
        if (hi.kind != TY_ERROR && (hi.kind != TY_INT || hi.varying))
            diag_error(s->d, st->u.for_.hi->span, "a loop bound must be an integer, not %s", type_str(s, hi));
        Scope sc;
        push_scope(s, &sc);
        Symbol *y = new_sym(s, SYM_FORVAR, st->u.for_.var, st->u.for_.var_span);
        y->ty = ty_int();
        st->u.for_.sym = y;
        declare(s, y);
        check_stmts(s, &st->u.for_.body);
        pop_scope(s);
        return;
    }
    }
}

void check_stmts(Sema *s, StmtList *l) {
    for (int i = 0; i < l->n; i++) check_stmt(s, l->v[i]);
}
