/* sema_expr.c - the semantic checks of expressions: names, members, transposes, indices and
 * slices, broadcasting, binary operators, matrix products and calls; each gets its type and
 * shape, and compile-time integers are folded. Part of the semantic checks (sema_int.h). */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "sema_int.h"

/* ---- expression checks ---------------------------------------------------------------------- */

static Type set(Expr *e, Type t) {
    e->ty = t;
    return t;
}

bool require_const_int(Sema *s, Expr *e, const char *what, int64_t *out) {
    Type t = check_expr(s, e);
    if (t.kind == TY_ERROR) return false;
    if (!is_intlike(t) || t.varying || !e->is_const) {
        diag_error(s->d, e->span, "%s must be a compile-time integer (made of literals and params)", what);
        return false;
    }
    if (t.kind == TY_BOOL) e->ty = ty_int(); /* a constant condition counts as 0 or 1 */
    *out = e->cval;
    return true;
}

static Type check_name(Sema *s, Expr *e) {
    Symbol *y = lookup(s, e->u.name);
    if (!y && s->sk) {
        for (int i = 0; i < s->sk->axes.n; i++)
            if (!strcmp(s->sk->axes.v[i]->name, e->u.name)) {
                diag_error(s->d, e->span, "'%s' is a grid axis; read its coordinate as block.%s", e->u.name, e->u.name);
                return set(e, ty_err());
            }
    }
    if (!y) {
        const char *sg = suggest(s, e->u.name);
        if (sg) diag_error(s->d, e->span, "unknown name '%s'; did you mean '%s'?", e->u.name, sg);
        else diag_error(s->d, e->span, "unknown name '%s'", e->u.name);
        return set(e, ty_err());
    }
    e->sym = y;
    y->used = true;
    switch (y->kind) {
    case SYM_PARAM:
        if (y->ty.kind == TY_ERROR) return set(e, ty_err()); /* its own error was reported */
        e->is_const = true;
        e->cval = y->cval;
        return set(e, ty_int());
    case SYM_DIM:
        if (y->is_const) {
            e->is_const = true;
            e->cval = y->cval;
        }
        return set(e, ty_int());
    case SYM_TENSOR:
    case SYM_SCALAR:
    case SYM_SHARED:
    case SYM_REG:
        return set(e, y->ty);
    case SYM_LET:
        if (y->ty.kind == TY_ERROR) return set(e, ty_err());
        e->is_const = y->is_const;
        e->cval = y->cval;
        e->fval = y->fval;
        return set(e, y->ty);
    case SYM_LOOPVAR:
        if (!s->in_block || !(s->bk == BK_LOAD || s->bk == BK_COMPUTE || s->bk == BK_STORE)) {
            diag_error(s->d, e->span,
                       "the pipeline variable '%s' exists only in the load, compute and store blocks", y->name);
            return set(e, ty_err());
        }
        return set(e, ty_int());
    case SYM_FORVAR:
        return set(e, ty_int());
    case SYM_AXIS:
        diag_error(s->d, e->span, "'%s' is a grid axis; read its coordinate as block.%s", y->name, y->name);
        return set(e, ty_err());
    case SYM_BUILTIN:
        switch ((Builtin)y->builtin) {
        case BI_BLOCK:
            return set(e, (Type){.kind = TY_GRIDREF});
        case BI_WG:
            if (!s->in_block || s->bk == BK_LOAD) {
                diag_error(s->d, e->span,
                           "'wg' (the consumer warpgroup index) exists only in consumer blocks "
                           "(setup, compute, store, finish)");
                return set(e, ty_err());
            }
            return set(e, ty_int());
        case BI_ROW:
        case BI_COL: {
            if (!s->in_block || s->bk == BK_LOAD) {
                diag_error(s->d, e->span, "'%s' is an element index and exists only in tile expressions", y->name);
                return set(e, ty_err());
            }
            Type t = ty_int();
            t.varying = y->builtin == BI_ROW ? VARY_ROW : VARY_COL;
            return set(e, t);
        }
        case BI_INF:
            e->is_const = true;
            e->fval = INFINITY;
            return set(e, ty_float());
        case BI_SMS:
            if (!s->in_entry) {
                diag_error(s->d, e->span, "'sms' (the GPU's SM count) exists only in entries, whose launcher reads it from "
                           "the device; a kernel's grid can be persistent instead");
                return set(e, ty_err());
            }
            return set(e, ty_int());
        }
    }
    return set(e, ty_err());
}

static Type check_member(Sema *s, Expr *e) {
    Expr *base = e->u.member.base;
    Type bt = check_expr(s, base);
    if (bt.kind == TY_ERROR) return set(e, ty_err());
    if (bt.kind != TY_GRIDREF) {
        diag_error(s->d, e->u.member.field_span, "%s has no field '%s'", type_str(s, bt), e->u.member.field);
        return set(e, ty_err());
    }
    SemaKernel *sk = s->sk;
    for (int i = 0; i < sk->axes.n; i++)
        if (!strcmp(sk->axes.v[i]->name, e->u.member.field)) {
            e->sym = sk->axes.v[i]->sym;
            return set(e, ty_int());
        }
    if (!sk->axes.n) diag_error(s->d, e->u.member.field_span, "block.%s: the kernel has no grid axes", e->u.member.field);
    else {
        StrBuf b;
        sb_init(&b);
        for (int i = 0; i < sk->axes.n; i++) sb_printf(&b, "%sblock.%s", i ? ", " : "", sk->axes.v[i]->name);
        diag_error(s->d, e->u.member.field_span, "the grid has no axis '%s' (it has %s)", e->u.member.field, b.s);
        sb_free(&b);
    }
    return set(e, ty_err());
}

/* x.T: transposes a tile's view. Register tiles are accepted here; lowering decides which
 * uses the back end supports. */
static Type check_transpose(Sema *s, Expr *e) {
    Type t = check_expr(s, e->u.tr.base);
    if (t.kind == TY_ERROR) return set(e, ty_err());
    if (t.kind != TY_TILE) {
        diag_error(s->d, e->span, ".T transposes tiles; %s is not a tile", type_str(s, t));
        return set(e, ty_err());
    }
    if (t.partial) {
        diag_error(s->d, e->span, "'.T' of a partial tile: each warpgroup holds a part of a sum, which can be scaled, "
                   "added to other partial tiles and added into global memory with +=, not transposed");
        return set(e, ty_err());
    }
    Type r = t;
    r.rows = t.cols;
    r.cols = t.rows;
    return set(e, r);
}

/* slices of shared and register tiles and vectors: compile-time bounds, multiples of 16 */
static bool slice_bound(Sema *s, IndexArg *ia, int extent, int *lo, int *hi, bool *single) {
    int64_t l = 0, h = extent;
    *single = false;
    if (!ia->slice) {
        if (!require_const_int(s, ia->lo, "a tile index", &l)) return false;
        if (l < 0 || l >= extent) {
            diag_error(s->d, ia->span, "index %" PRId64 " is outside [0, %d)", l, extent);
            return false;
        }
        *lo = (int)l;
        *hi = (int)l + 1;
        *single = true;
        return true;
    }
    if (ia->lo && !require_const_int(s, ia->lo, "a slice bound", &l)) return false;
    if (ia->hi && !require_const_int(s, ia->hi, "a slice bound", &h)) return false;
    if (l < 0 || h > extent || l >= h) {
        diag_error(s->d, ia->span, "slice %" PRId64 ":%" PRId64 " is empty or outside [0, %d]", l, h, extent);
        return false;
    }
    if (l % 16 || h % 16) {
        diag_error(s->d, ia->span, "slice bounds must be multiples of 16 (tiles are made of 16x16 blocks); got %" PRId64 ":%" PRId64, l, h);
        return false;
    }
    *lo = (int)l;
    *hi = (int)h;
    return true;
}

/* X[i0, ..., in] of a global tensor: one integer index per dimension (slices are refused with
 * slice_msg); reports every bad index */
/* indices from at_from on may be at(e) (the tile or vector positions of a global move) */
bool check_tensor_indices(Sema *s, Expr *ix, const Symbol *t, const char *slice_msg, int at_from) {
    int n = ix->u.index.nargs;
    bool ok = true;
    if (n != t->ty.ndims) {
        diag_error(s->d, ix->span, "'%s' has %d dimensions but %d indices were given", t->name, t->ty.ndims, n);
        ok = false;
    }
    for (int i = 0; i < n; i++) {
        IndexArg *ia = &ix->u.index.args[i];
        if (ia->slice) {
            diag_error(s->d, ia->span, "%s", slice_msg);
            ok = false;
            continue;
        }
        s->at_ok = i >= at_from && ia->lo->kind == EX_CALL && !strcmp(ia->lo->u.call.fn, "at");
        Type it = check_expr(s, ia->lo);
        s->at_ok = false;
        if (it.kind == TY_ERROR) ok = false;
        else if (it.kind != TY_INT || it.varying) {
            diag_error(s->d, ia->span, "an index must be an integer, not %s", type_str(s, it));
            ok = false;
        }
    }
    return ok;
}

static Type check_index(Sema *s, Expr *e) {
    Expr *base = e->u.index.base;
    Type bt = check_expr(s, base);
    if (bt.kind == TY_ERROR) return set(e, ty_err());
    int n = e->u.index.nargs;
    if (bt.kind == TY_TENSOR) {
        /* an element read: a scalar, allowed in kernel-level lets and in setup */
        if (!s->kernel_let && !(s->in_block && s->bk == BK_SETUP)) {
            if (s->in_block && s->bk == BK_COMPUTE)
                diag_error(s->d, base->span,
                           "global tensor '%s' cannot be used in a compute block; load it into a shared tile in "
                           "'load' (or read a scalar from it in a kernel-level 'let')",
                           base->sym ? base->sym->name : "?");
            else
                diag_error(s->d, e->span,
                           "a global tensor is read only by '<-' (a tile load) or, for single elements, in a "
                           "kernel-level 'let'");
            return set(e, ty_err());
        }
        if (!check_tensor_indices(s, e, base->sym, "slices of global tensors are not allowed; move a tile with '<-'", n))
            return set(e, ty_err());
        return set(e, bt.dt == DT_I32 ? ty_int() : ty_float());
    }
    if (bt.kind == TY_TILE) {
        if (n != 2) {
            diag_error(s->d, e->span, "a tile is sliced with two ranges, [rows, cols]; got %d", n);
            return set(e, ty_err());
        }
        int r0, r1, c0, c1;
        bool rs, cs;
        if (!slice_bound(s, &e->u.index.args[0], bt.rows, &r0, &r1, &rs) ||
            !slice_bound(s, &e->u.index.args[1], bt.cols, &c0, &c1, &cs))
            return set(e, ty_err());
        if (rs && cs) {
            diag_error(s->d, e->span, "single elements of tiles cannot be used; slice a sub-tile instead");
            return set(e, ty_err());
        }
        if (rs || cs) {
            if (bt.space != MS_REG) {
                diag_error(s->d, e->span, "a single row or column can be taken only from a register tile");
                return set(e, ty_err());
            }
            if (bt.partial) {
                diag_error(s->d, e->span, "a row or column of a partial tile (a part of a sum in each warpgroup) is not "
                           "a value of its own; add the tile into global memory with +=");
                return set(e, ty_err());
            }
            /* x[:, i] is column i, one value per row: a per_row vector (and x[i, :] a per_col one) */
            Type v = cs ? ty_vec(MS_REG, bt.dt, r1 - r0, VL_ROW) : ty_vec(MS_REG, bt.dt, c1 - c0, VL_COL);
            v.per_wg = bt.per_wg;
            return set(e, v);
        }
        Type t = bt;
        t.rows = r1 - r0;
        t.cols = c1 - c0;
        return set(e, t);
    }
    if (bt.kind == TY_VEC) {
        if (n != 1) {
            diag_error(s->d, e->span, "a vector is sliced with one range; got %d", n);
            return set(e, ty_err());
        }
        int l, h;
        bool single;
        if (!slice_bound(s, &e->u.index.args[0], bt.rows, &l, &h, &single)) return set(e, ty_err());
        if (single) {
            diag_error(s->d, e->span, "single elements of vectors cannot be used; slice a sub-vector instead");
            return set(e, ty_err());
        }
        Type t = bt;
        t.rows = h - l;
        return set(e, t);
    }
    diag_error(s->d, e->span, "%s cannot be indexed", type_str(s, bt));
    return set(e, ty_err());
}

/* elementwise combination of two operand types (arithmetic, min/max, where) */
static Type broadcast(Sema *s, Type a, Type b, Span sa, Span sb, Span whole) {
    if (a.kind == TY_ERROR || b.kind == TY_ERROR) return ty_err();
    if (a.kind == TY_BOOL) a.kind = TY_INT;
    if (b.kind == TY_BOOL) b.kind = TY_INT;
    Type *ops[2] = {&a, &b};
    Span sp[2] = {sa, sb};
    for (int i = 0; i < 2; i++) {
        Type *t = ops[i];
        if (t->kind == TY_TENSOR) {
            diag_error(s->d, sp[i], "a global tensor cannot be used in arithmetic; move a tile with '<-' first");
            return ty_err();
        }
        if (t->kind == TY_GRIDREF) {
            diag_error(s->d, sp[i], "'block' is not a value; use block.<axis>");
            return ty_err();
        }
        if (is_tv(*t) && t->space == MS_SHARED) {
            diag_error(s->d, sp[i],
                       "a shared %s cannot be used in arithmetic; load it into registers first (reg <- shared)",
                       t->kind == TY_TILE ? "tile" : "vector");
            return ty_err();
        }
        if (t->kind == TY_VOID) {
            diag_error(s->d, sp[i], "this expression has no value");
            return ty_err();
        }
    }
    if (is_scalar(a) && is_scalar(b)) {
        Type r = (a.kind == TY_FLOAT || b.kind == TY_FLOAT) ? ty_float() : ty_int();
        r.varying = a.varying | b.varying;
        return r;
    }
    /* at least one tile or vector */
    if (is_tv(a) && is_tv(b)) {
        if (a.per_wg != b.per_wg) {
            diag_error(s->d, whole, "cannot combine a per_wg register value with a row-split one (%s and %s)",
                       type_str(s, a), type_str(s, b));
            return ty_err();
        }
        if (a.complex != b.complex) {
            diag_error(s->d, whole, "cannot combine complex and real tiles; use complex(re, im) or real(x)");
            return ty_err();
        }
        DType dt;
        if (!join_dtype(a.dt, b.dt, &dt)) {
            diag_error(s->d, whole, "dtype mismatch: %s and %s; convert one side explicitly (e.g. %s(x))",
                       dtype_name[a.dt], dtype_name[b.dt], dtype_name[DT_FP32]);
            return ty_err();
        }
        if (a.kind == TY_TILE && b.kind == TY_TILE) {
            if (a.rows != b.rows || a.cols != b.cols) {
                diag_error(s->d, whole, "shape mismatch: %s and %s", shape_str(s, a), shape_str(s, b));
                return ty_err();
            }
            a.dt = dt;
            return a;
        }
        if (a.kind == TY_VEC && b.kind == TY_VEC) {
            if (a.layout == b.layout) {
                if (a.rows != b.rows) {
                    diag_error(s->d, whole, "length mismatch: vectors of %d and %d", a.rows, b.rows);
                    return ty_err();
                }
                a.dt = dt;
                return a;
            }
            /* per_row (+) per_col: the outer combination, a tile */
            Type row = a.layout == VL_ROW ? a : b, col = a.layout == VL_ROW ? b : a;
            Type t = ty_tile(MS_REG, dt, row.rows, col.rows);
            t.per_wg = a.per_wg;
            return t;
        }
        Type t = a.kind == TY_TILE ? a : b, v = a.kind == TY_TILE ? b : a;
        Span vs = a.kind == TY_TILE ? sb : sa;
        if (v.layout == VL_ROW && v.rows != t.rows) {
            diag_error(s->d, vs, "a per_row vector of length %d does not match the %d rows of the %s tile", v.rows,
                       t.rows, shape_str(s, t));
            return ty_err();
        }
        if (v.layout == VL_COL && v.rows != t.cols) {
            diag_error(s->d, vs, "a per_col vector of length %d does not match the %d columns of the %s tile",
                       v.rows, t.cols, shape_str(s, t));
            return ty_err();
        }
        t.dt = dt;
        return t;
    }
    Type tv = is_tv(a) ? a : b, sc = is_tv(a) ? b : a;
    if (tv.kind == TY_VEC && sc.varying) {
        int need = tv.layout == VL_ROW ? VARY_ROW : VARY_COL;
        if (sc.varying & ~need) {
            Type t = tv.layout == VL_ROW ? ty_tile(MS_REG, tv.dt, tv.rows, 0) : ty_tile(MS_REG, tv.dt, 0, tv.rows);
            (void)t;
            diag_error(s->d, whole,
                       "a %s vector combined with '%s' would need a tile; assign the expression to a tile",
                       veclayout_name[tv.layout], tv.layout == VL_ROW ? "col" : "row");
            return ty_err();
        }
    }
    return tv;
}

static Type check_matmul(Sema *s, Expr *e);

static Type check_binary(Sema *s, Expr *e) {
    BinOp op = e->u.bin.op;
    if (op == BIN_MATMUL) return check_matmul(s, e);
    bool mm = s->matmul_ok;
    s->matmul_ok = false;
    Type l = check_expr(s, e->u.bin.l), r = check_expr(s, e->u.bin.r);
    s->matmul_ok = mm;
    if (l.kind == TY_ERROR || r.kind == TY_ERROR) return set(e, ty_err());
    Expr *L = e->u.bin.l, *R = e->u.bin.r;
    switch (op) {
    case BIN_OR:
    case BIN_AND: {
        if (!is_intlike(l) || !is_intlike(r)) {
            diag_error(s->d, e->u.bin.op_span, "'%s' needs integer or bool operands, not %s and %s", binop_name[op],
                       type_str(s, l), type_str(s, r));
            return set(e, ty_err());
        }
        Type t = ty_bool();
        t.varying = l.varying | r.varying;
        if (L->is_const && R->is_const) {
            e->is_const = true;
            e->cval = op == BIN_OR ? (L->cval || R->cval) : (L->cval && R->cval);
        } else if (op == BIN_AND && ((L->is_const && !L->cval) || (R->is_const && !R->cval))) {
            e->is_const = true; /* false && x */
            e->cval = 0;
        }
        return set(e, t);
    }
    case BIN_EQ: case BIN_NE: case BIN_LT: case BIN_LE: case BIN_GT: case BIN_GE: {
        if (!is_scalar(l) || !is_scalar(r)) {
            diag_error(s->d, e->u.bin.op_span,
                       "comparisons take scalars (use where(cond, a, b) for tiles), not %s and %s", type_str(s, l),
                       type_str(s, r));
            return set(e, ty_err());
        }
        Type t = ty_bool();
        t.varying = l.varying | r.varying;
        if (L->is_const && R->is_const && l.kind != TY_FLOAT && r.kind != TY_FLOAT) {
            int64_t a = L->cval, b = R->cval, v = 0;
            switch (op) {
            case BIN_EQ: v = a == b; break;
            case BIN_NE: v = a != b; break;
            case BIN_LT: v = a < b; break;
            case BIN_LE: v = a <= b; break;
            case BIN_GT: v = a > b; break;
            default: v = a >= b; break;
            }
            e->is_const = true;
            e->cval = v;
        }
        return set(e, t);
    }
    case BIN_MOD:
        if (l.kind != TY_INT || r.kind != TY_INT) {
            diag_error(s->d, e->u.bin.op_span, "'%%' takes integers, not %s and %s", type_str(s, l), type_str(s, r));
            return set(e, ty_err());
        }
        /* fall through */
    case BIN_ADD: case BIN_SUB: case BIN_MUL: case BIN_DIV: {
        Type t = broadcast(s, l, r, L->span, R->span, e->span);
        if (t.kind == TY_ERROR) return set(e, t);
        if (l.partial || r.partial) {
            /* a sum of parts stays one under scaling (x * s, x / s) and under adding another sum of parts */
            bool both = l.partial && r.partial;
            bool ok = op == BIN_MUL ? !both : op == BIN_DIV ? !r.partial : both;
            if (!ok) {
                diag_error(s->d, e->u.bin.op_span, "'%s' of %s and %s: a partial tile (each warpgroup holds a part of a "
                           "sum) can be scaled (x * s, x / s) and added to partial tiles, which keeps it a sum of parts",
                           binop_name[op], type_str(s, l), type_str(s, r));
                return set(e, ty_err());
            }
            t.partial = true;
            t.per_wg = true;
        }
        if (t.kind == TY_INT && (op == BIN_DIV || op == BIN_MOD) && R->is_const && R->cval == 0) {
            diag_error(s->d, R->span, "division by zero: the divisor is always 0");
            return set(e, ty_err());
        }
        if (t.kind == TY_INT && L->is_const && R->is_const) {
            int64_t a = L->cval, b = R->cval, v = 0;
            bool over = false;
            switch (op) {
            case BIN_ADD: over = __builtin_add_overflow(a, b, &v); break;
            case BIN_SUB: over = __builtin_sub_overflow(a, b, &v); break;
            case BIN_MUL: over = __builtin_mul_overflow(a, b, &v); break;
            case BIN_DIV: over = a == INT64_MIN && b == -1; v = over ? 0 : a / b; break;
            default: over = a == INT64_MIN && b == -1; v = over ? 0 : a % b; break;
            }
            if (over || v > INT32_MAX || v < INT32_MIN) {
                diag_error(s->d, e->span, "this constant does not fit in 32 bits");
                return set(e, ty_err());
            }
            e->is_const = true;
            e->cval = v;
        } else if (t.kind == TY_FLOAT && L->is_const && R->is_const) {
            double a = l.kind == TY_FLOAT ? L->fval : (double)L->cval;
            double b = r.kind == TY_FLOAT ? R->fval : (double)R->cval;
            e->is_const = true;
            e->fval = op == BIN_ADD ? a + b : op == BIN_SUB ? a - b : op == BIN_MUL ? a * b : a / b;
        }
        return set(e, t);
    }
    default:
        break;
    }
    return set(e, ty_err());
}

/* Is e usable as a wgmma operand from shared memory: a shared tile, its transpose, a slice of
 * it, or prev() of it? */
static bool is_shared_operand(const Expr *e) {
    return e->ty.kind == TY_TILE && e->ty.space == MS_SHARED;
}

static Type check_matmul(Sema *s, Expr *e) {
    if (!s->matmul_ok) {
        diag_error(s->d, e->u.bin.op_span,
                   "a matrix product must be the whole right-hand side of an assignment to a register tile "
                   "(acc = a @ b or acc += a @ b)");
        s->matmul_ok = false;
        check_expr(s, e->u.bin.l);
        check_expr(s, e->u.bin.r);
        return set(e, ty_err());
    }
    s->matmul_ok = false;
    Type a = check_expr(s, e->u.bin.l), b = check_expr(s, e->u.bin.r);
    if (a.kind == TY_ERROR || b.kind == TY_ERROR) return set(e, ty_err());
    bool ok = true;
    if (a.kind != TY_TILE) {
        diag_error(s->d, e->u.bin.l->span, "the left operand of '@' must be a tile, not %s", type_str(s, a));
        ok = false;
    }
    if (b.kind != TY_TILE) {
        diag_error(s->d, e->u.bin.r->span, "the right operand of '@' must be a tile, not %s", type_str(s, b));
        ok = false;
    }
    if (!ok) return set(e, ty_err());
    if (!is_shared_operand(e->u.bin.r)) {
        diag_error(s->d, e->u.bin.r->span,
                   "the right operand of '@' must be in shared memory (wgmma reads B from shared memory); "
                   "move the register tile to a shared tile with '<-' first");
        ok = false;
    }
    if (a.space == MS_REG && e->u.bin.l->kind == EX_TRANSPOSE) {
        diag_error(s->d, e->u.bin.l->span,
                   "a register operand of '@' cannot be transposed (wgmma takes register A operands K-major)");
        ok = false;
    }
    if (a.dt != b.dt || (a.dt != DT_BF16 && a.dt != DT_FP16)) {
        if (a.dt != b.dt)
            diag_error(s->d, e->u.bin.op_span, "dtype mismatch in '@': %s and %s (both operands must be bf16 or both fp16)",
                       dtype_name[a.dt], dtype_name[b.dt]);
        else
            diag_error(s->d, e->u.bin.op_span,
                       "'@' multiplies bf16 or fp16 tiles on the tensor cores; convert the operands with bf16(x)");
        ok = false;
    }
    if (a.cols != b.rows) {
        diag_error(s->d, e->u.bin.op_span, "inner dimensions of '@' differ: %s @ %s (%d != %d)", shape_str(s, a),
                   shape_str(s, b), a.cols, b.rows);
        ok = false;
    }
    if (a.complex != b.complex) {
        diag_error(s->d, e->u.bin.op_span, "'@' of a complex and a real tile; both must be complex or both real");
        ok = false;
    }
    if (!ok) return set(e, ty_err());
    Type r = ty_tile(MS_REG, DT_FP32, a.rows, b.cols);
    r.per_wg = a.space == MS_REG && a.per_wg;
    r.complex = a.complex;
    return set(e, r);
}

static bool check_args(Sema *s, Expr *e, int want) {
    int n = e->u.call.nargs;
    if (want >= 0 && n != want) {
        diag_error(s->d, e->span, "%s() takes %d argument%s, %d given", e->u.call.fn, want, want == 1 ? "" : "s", n);
        for (int i = 0; i < n; i++) check_expr(s, e->u.call.args[i]);
        return false;
    }
    return true;
}

static Type unary_math(Sema *s, Expr *e, Type t) {
    if (t.kind == TY_INT || t.kind == TY_BOOL) {
        Type f = ty_float();
        f.varying = t.varying;
        return f;
    }
    if (t.kind == TY_FLOAT) return t;
    if (is_tv(t)) {
        if (t.space != MS_REG) {
            diag_error(s->d, e->u.call.args[0]->span, "%s() works on register values; %s is in shared memory",
                       e->u.call.fn, type_str(s, t));
            return ty_err();
        }
        return t;
    }
    diag_error(s->d, e->u.call.args[0]->span, "%s() takes a number or a register tile, not %s", e->u.call.fn,
               type_str(s, t));
    return ty_err();
}

static Type check_call(Sema *s, Expr *e) {
    bool is_def;
    Type dt = sema_expand_def(s, e, &is_def);
    if (is_def) return dt;
    e->fn = FN_NONE;
    for (int i = 0; i < FN_COUNT; i++)
        if (!strcmp(e->u.call.fn, intrinsic_name[i])) e->fn = i;
    if (e->fn == FN_NONE) {
        const char *best = NULL;
        int bestd = 3;
        for (int i = 0; i < FN_COUNT; i++) {
            int dd = edit_distance(e->u.call.fn, intrinsic_name[i]);
            if (dd < bestd) {
                bestd = dd;
                best = intrinsic_name[i];
            }
        }
        if (best) diag_error(s->d, e->u.call.fn_span, "unknown function '%s'; did you mean '%s'?", e->u.call.fn, best);
        else diag_error(s->d, e->u.call.fn_span, "unknown function '%s'", e->u.call.fn);
        for (int i = 0; i < e->u.call.nargs; i++) check_expr(s, e->u.call.args[i]);
        return set(e, ty_err());
    }
    Intrinsic fn = (Intrinsic)e->fn;
    int arity = intrinsic_arity[fn];
    if (fn == FN_TRIL || fn == FN_TRIU) {
        if (e->u.call.nargs != 2 && e->u.call.nargs != 3) {
            diag_error(s->d, e->span, "%s() takes 2 or 3 arguments (tile, diagonal[, fill]), %d given",
                       e->u.call.fn, e->u.call.nargs);
            return set(e, ty_err());
        }
    } else if (!check_args(s, e, arity)) {
        return set(e, ty_err());
    }
    if (fn == FN_AT && !s->at_ok) {
        diag_error(s->d, e->span, "at() is a tile or vector index of a global move (T[..., at(row), col] <- ...), where "
                                  "it gives the first element instead of the tile number");
        s->at_ok = false;
        for (int i = 0; i < e->u.call.nargs; i++) check_expr(s, e->u.call.args[i]);
        return set(e, ty_err());
    }
    s->at_ok = false;
    bool mm = s->matmul_ok;
    s->matmul_ok = false;
    Type at[3] = {ty_err(), ty_err(), ty_err()};
    bool bad = false;
    for (int i = 0; i < e->u.call.nargs && i < 3; i++) {
        at[i] = check_expr(s, e->u.call.args[i]);
        if (at[i].kind == TY_ERROR) bad = true;
    }
    s->matmul_ok = mm;
    if (bad) return set(e, ty_err());
    Expr **A = e->u.call.args;
    for (int i = 0; i < e->u.call.nargs && i < 3; i++)
        if (at[i].partial && fn != FN_FP32) {
            diag_error(s->d, A[i]->span, "%s() of a partial tile: each warpgroup holds a part of a sum, so only linear "
                       "arithmetic applies (scaling, adding partial tiles); add it into global memory with += first",
                       e->u.call.fn);
            return set(e, ty_err());
        }
    switch (fn) {
    case FN_AT:
        if (at[0].kind != TY_INT || at[0].varying) {
            diag_error(s->d, A[0]->span, "at() takes an integer element index, not %s", type_str(s, at[0]));
            return set(e, ty_err());
        }
        return set(e, ty_int());
    case FN_CDIV:
    case FN_MIN:
    case FN_MAX: {
        if (at[0].kind == TY_INT && at[1].kind == TY_INT && !at[0].varying && !at[1].varying) {
            if (A[0]->is_const && A[1]->is_const) {
                int64_t a = A[0]->cval, b = A[1]->cval;
                if (fn == FN_CDIV && b <= 0) {
                    diag_error(s->d, A[1]->span, "cdiv() by %" PRId64 "; the divisor must be positive", b);
                    return set(e, ty_err());
                }
                e->is_const = true;
                e->cval = fn == FN_CDIV ? cdiv64(a, b) : fn == FN_MIN ? (a < b ? a : b) : (a > b ? a : b);
            }
            return set(e, ty_int());
        }
        if (fn == FN_CDIV) {
            diag_error(s->d, e->span, "cdiv() takes integers, not %s and %s", type_str(s, at[0]), type_str(s, at[1]));
            return set(e, ty_err());
        }
        Type t = broadcast(s, at[0], at[1], A[0]->span, A[1]->span, e->span);
        if (t.kind == TY_INT) t = ty_float(), t.varying = at[0].varying | at[1].varying;
        if (t.kind == TY_FLOAT && A[0]->is_const && A[1]->is_const) {
            double a = at[0].kind == TY_FLOAT ? A[0]->fval : (double)A[0]->cval;
            double b = at[1].kind == TY_FLOAT ? A[1]->fval : (double)A[1]->cval;
            e->is_const = true;
            e->fval = fn == FN_MIN ? fmin(a, b) : fmax(a, b);
        }
        return set(e, t);
    }
    case FN_EXP: case FN_EXP2: case FN_LOG: case FN_LOG2: case FN_SQRT: case FN_RSQRT: case FN_ABS: case FN_TANH:
    case FN_ERF: {
        Type t = unary_math(s, e, at[0]);
        if (t.kind == TY_FLOAT && A[0]->is_const) {
            double x = at[0].kind == TY_FLOAT ? A[0]->fval : (double)A[0]->cval;
            double v = 0;
            switch (fn) {
            case FN_EXP: v = exp(x); break;
            case FN_EXP2: v = exp2(x); break;
            case FN_LOG: v = log(x); break;
            case FN_LOG2: v = log2(x); break;
            case FN_SQRT: v = sqrt(x); break;
            case FN_RSQRT: v = 1.0 / sqrt(x); break;
            case FN_ABS: v = fabs(x); break;
            case FN_ERF: v = erf(x); break;
            default: v = tanh(x); break;
            }
            e->is_const = true;
            e->fval = v;
        }
        return set(e, t);
    }
    case FN_ROWMAX: case FN_ROWMIN: case FN_ROWSUM: case FN_COLMAX: case FN_COLMIN: case FN_COLSUM: {
        Type t = at[0];
        if (t.kind != TY_TILE || t.space != MS_REG) {
            diag_error(s->d, A[0]->span, "%s() reduces a register tile, not %s", e->u.call.fn, type_str(s, t));
            return set(e, ty_err());
        }
        bool rows = fn == FN_ROWMAX || fn == FN_ROWMIN || fn == FN_ROWSUM;
        Type v = ty_vec(MS_REG, DT_FP32, rows ? t.rows : t.cols, rows ? VL_ROW : VL_COL);
        v.per_wg = t.per_wg;
        return set(e, v);
    }
    case FN_CUMSUM:
        if (at[0].kind != TY_VEC) {
            diag_error(s->d, A[0]->span, "cumsum() takes a vector, not %s", type_str(s, at[0]));
            return set(e, ty_err());
        }
        return set(e, at[0]);
    case FN_WHERE: {
        if (!is_intlike(at[0])) {
            diag_error(s->d, A[0]->span, "the condition of where() must be a comparison or integer, not %s",
                       type_str(s, at[0]));
            return set(e, ty_err());
        }
        Type t = broadcast(s, at[1], at[2], A[1]->span, A[2]->span, e->span);
        if (t.kind == TY_ERROR) return set(e, t);
        if (is_scalar(t)) {
            if (t.kind == TY_INT && (at[1].kind == TY_FLOAT || at[2].kind == TY_FLOAT)) t = ty_float();
            t.varying |= at[0].varying | at[1].varying | at[2].varying;
        } else if (t.kind == TY_VEC && at[0].varying) {
            int need = t.layout == VL_ROW ? VARY_ROW : VARY_COL;
            if (at[0].varying & ~need) {
                diag_error(s->d, A[0]->span, "this condition varies along the %s, but a %s vector has one value per %s",
                           t.layout == VL_ROW ? "columns" : "rows", veclayout_name[t.layout],
                           t.layout == VL_ROW ? "row" : "column");
                return set(e, ty_err());
            }
        }
        return set(e, t);
    }
    case FN_TRIL:
    case FN_TRIU: {
        if (at[0].kind != TY_TILE || at[0].space != MS_REG) {
            diag_error(s->d, A[0]->span, "%s() masks a register tile, not %s", e->u.call.fn, type_str(s, at[0]));
            return set(e, ty_err());
        }
        if (at[1].kind != TY_INT || at[1].varying) {
            diag_error(s->d, A[1]->span, "the diagonal offset of %s() must be an integer, not %s", e->u.call.fn,
                       type_str(s, at[1]));
            return set(e, ty_err());
        }
        if (e->u.call.nargs == 3 && !(is_numeric(at[2]) && !at[2].varying)) {
            diag_error(s->d, A[2]->span, "the fill value of %s() must be a number, not %s", e->u.call.fn,
                       type_str(s, at[2]));
            return set(e, ty_err());
        }
        return set(e, at[0]);
    }
    case FN_BF16: case FN_FP16: case FN_FP32: case FN_I32: {
        DType to = fn == FN_BF16 ? DT_BF16 : fn == FN_FP16 ? DT_FP16 : fn == FN_FP32 ? DT_FP32 : DT_I32;
        Type t = at[0];
        if (is_scalar(t)) {
            Type r = to == DT_I32 ? ty_int() : ty_float();
            r.varying = t.varying;
            if (A[0]->is_const) {
                e->is_const = true;
                double x = t.kind == TY_FLOAT ? A[0]->fval : (double)A[0]->cval;
                if (to == DT_I32) e->cval = (int64_t)x;
                else e->fval = x;
            }
            return set(e, r);
        }
        if (!is_tv(t) || t.space != MS_REG) {
            diag_error(s->d, A[0]->span, "%s() converts register tiles, vectors and scalars, not %s", e->u.call.fn,
                       type_str(s, t));
            return set(e, ty_err());
        }
        if (to == DT_I32) {
            diag_error(s->d, e->span, "tiles cannot be converted to i32");
            return set(e, ty_err());
        }
        t.dt = to;
        return set(e, t);
    }
    case FN_RAND: {
        if (!is_numeric(at[0]) || !is_numeric(at[1]) || at[0].varying || at[1].varying) {
            diag_error(s->d, e->span, "rand(seed, offset) takes two integers");
            return set(e, ty_err());
        }
        Type t = ty_float();
        t.varying = VARY_ROW | VARY_COL;
        return set(e, t);
    }
    case FN_KEEP: {
        if (at[0].kind != TY_INT || at[1].kind != TY_INT || at[0].varying || at[1].varying) {
            diag_error(s->d, e->span, "keep(seed, offset, p) takes two integers and a probability");
            return set(e, ty_err());
        }
        if (!is_numeric(at[2]) || at[2].varying) {
            diag_error(s->d, A[2]->span, "the probability of keep() must be one number for the whole tile, not %s",
                       type_str(s, at[2]));
            return set(e, ty_err());
        }
        Type t = ty_int();
        t.varying = VARY_ROW | VARY_COL;
        return set(e, t);
    }
    case FN_PREV: {
        Expr *x = A[0];
        if (x->kind != EX_NAME || at[0].kind != TY_TILE || at[0].space != MS_SHARED) {
            diag_error(s->d, x->span, "prev() takes the name of a shared tile that the load block fills");
            return set(e, ty_err());
        }
        if (!s->in_block || (s->bk != BK_COMPUTE && s->bk != BK_STORE)) {
            diag_error(s->d, e->span, "prev() exists only in compute and store blocks");
            return set(e, ty_err());
        }
        bool ring = false;
        for (int i = 0; i < s->g2s.n; i++) ring |= s->g2s.v[i] == x->sym && s->g2s_bk.v[i] == BK_LOAD;
        if (!ring) {
            diag_error(s->d, x->span, "prev(%s): '%s' is not filled by the load block, so there is no previous step's copy",
                       x->sym->name, x->sym->name);
            return set(e, ty_err());
        }
        if (s->sk->stages < 2) {
            diag_error(s->d, e->span, "prev() needs at least 2 pipeline stages: the previous step's copy must still be "
                                      "in the ring");
            return set(e, ty_err());
        }
        return set(e, at[0]);
    }
    case FN_REAL:
    case FN_IMAG:
        if (!is_tv(at[0]) || !at[0].complex) {
            diag_error(s->d, A[0]->span, "%s() takes a complex tile, not %s", e->u.call.fn, type_str(s, at[0]));
            return set(e, ty_err());
        }
        at[0].complex = false;
        return set(e, at[0]);
    case FN_COMPLEX: {
        if (at[0].complex || at[1].complex || !is_tv(at[0])) {
            diag_error(s->d, e->span, "complex(re, im) takes two real register tiles");
            return set(e, ty_err());
        }
        Type t = broadcast(s, at[0], at[1], A[0]->span, A[1]->span, e->span);
        if (t.kind == TY_ERROR) return set(e, t);
        t.complex = true;
        return set(e, t);
    }
    case FN_SYNC:
        diag_error(s->d, e->span, "sync() is a statement (sync();), not a value");
        return set(e, ty_err());
    default:
        break;
    }
    return set(e, ty_err());
}

static Type check_expr_(Sema *s, Expr *e);

/* deeply nested expressions are refused before they exhaust the stack of a recursive walk */
enum { MAX_EXPR_DEPTH = 200 };

Type check_expr(Sema *s, Expr *e) {
    if (s->depth >= MAX_EXPR_DEPTH) {
        if (!s->too_deep) diag_error(s->d, e->span, "expression nested more than %d levels deep", MAX_EXPR_DEPTH);
        s->too_deep = true;
        return set(e, ty_err());
    }
    s->depth++;
    Type t = check_expr_(s, e);
    s->depth--;
    return t;
}

static Type check_expr_(Sema *s, Expr *e) {
    switch (e->kind) {
    case EX_INT:
        e->is_const = true;
        e->cval = e->u.ival;
        return set(e, ty_int());
    case EX_FLOAT:
        e->is_const = true;
        e->fval = e->u.fval;
        return set(e, ty_float());
    case EX_NAME: return check_name(s, e);
    case EX_MEMBER: return check_member(s, e);
    case EX_TRANSPOSE: return check_transpose(s, e);
    case EX_INDEX: return check_index(s, e);
    case EX_CALL: return check_call(s, e);
    case EX_BINARY: return check_binary(s, e);
    case EX_UNARY: {
        bool mm = s->matmul_ok;
        s->matmul_ok = false;
        Type t = check_expr(s, e->u.un.e);
        s->matmul_ok = mm;
        if (t.kind == TY_ERROR) return set(e, t);
        if (e->u.un.op == UN_NOT) {
            if (!is_intlike(t)) {
                diag_error(s->d, e->span, "'!' needs an integer or bool, not %s", type_str(s, t));
                return set(e, ty_err());
            }
            if (e->u.un.e->is_const) {
                e->is_const = true;
                e->cval = !e->u.un.e->cval;
            }
            Type b = ty_bool();
            b.varying = t.varying;
            return set(e, b);
        }
        if (!is_numeric(t) && !(is_tv(t) && t.space == MS_REG)) {
            diag_error(s->d, e->span, "'-' needs a number or a register tile, not %s", type_str(s, t));
            return set(e, ty_err());
        }
        if (e->u.un.e->is_const) {
            e->is_const = true;
            e->cval = -e->u.un.e->cval;
            e->fval = -e->u.un.e->fval;
        }
        return set(e, t);
    }
    case EX_COND: {
        Type c = check_expr(s, e->u.cond.c);
        Type a = check_expr(s, e->u.cond.a);
        Type b = check_expr(s, e->u.cond.b);
        if (c.kind == TY_ERROR || a.kind == TY_ERROR || b.kind == TY_ERROR) return set(e, ty_err());
        if (!is_intlike(c) || c.varying) {
            diag_error(s->d, e->u.cond.c->span,
                       "the condition of '?:' must be a uniform integer or bool (use where() per element)");
            return set(e, ty_err());
        }
        if (e->u.cond.c->is_const && (!is_scalar(a) || !is_scalar(b) || a.varying || b.varying)) {
            /* decided at compile time: the expression is the branch taken, whatever its type (a def
             * call's spelling stays: e->written) */
            const char *written = e->written;
            *e = *(e->u.cond.c->cval ? e->u.cond.a : e->u.cond.b);
            if (written) e->written = written;
            return e->ty;
        }
        if (!is_scalar(a) || !is_scalar(b) || a.varying || b.varying) {
            diag_error(s->d, e->span, "'?:' chooses between scalars at run time; use where(cond, a, b) for tiles (a "
                       "condition fixed at compile time, made of params, chooses between any two values)");
            return set(e, ty_err());
        }
        Type t = (a.kind == TY_FLOAT || b.kind == TY_FLOAT) ? ty_float() : ty_int();
        if (e->u.cond.c->is_const) {
            Expr *pick = e->u.cond.c->cval ? e->u.cond.a : e->u.cond.b;
            if (pick->is_const) {
                e->is_const = true;
                e->cval = pick->cval;
                e->fval = pick->kind == EX_INT || pick->ty.kind == TY_INT ? (double)pick->cval : pick->fval;
            }
        }
        return set(e, t);
    }
    }
    return set(e, ty_err());
}

/* does e mention sym; with lets, also through the initialisers of the lets it names? */
static bool mentions(const Expr *e, const Symbol *sym, bool lets) {
    if (!e) return false;
    switch (e->kind) {
    case EX_NAME:
        return e->sym == sym ||
               (lets && e->sym && e->sym->kind == SYM_LET && e->sym->init && mentions(e->sym->init, sym, lets));
    case EX_MEMBER: return e->sym == sym || mentions(e->u.member.base, sym, lets);
    case EX_TRANSPOSE: return mentions(e->u.tr.base, sym, lets);
    case EX_INDEX:
        if (mentions(e->u.index.base, sym, lets)) return true;
        for (int i = 0; i < e->u.index.nargs; i++)
            if (mentions(e->u.index.args[i].lo, sym, lets) || mentions(e->u.index.args[i].hi, sym, lets)) return true;
        return false;
    case EX_CALL:
        for (int i = 0; i < e->u.call.nargs; i++)
            if (mentions(e->u.call.args[i], sym, lets)) return true;
        return false;
    case EX_BINARY: return mentions(e->u.bin.l, sym, lets) || mentions(e->u.bin.r, sym, lets);
    case EX_UNARY: return mentions(e->u.un.e, sym, lets);
    case EX_COND:
        /* a value depends only on the branch a compile-time condition takes */
        if (lets && e->u.cond.c->is_const) return mentions(e->u.cond.c->cval ? e->u.cond.a : e->u.cond.b, sym, lets);
        return mentions(e->u.cond.c, sym, lets) || mentions(e->u.cond.a, sym, lets) || mentions(e->u.cond.b, sym, lets);
    default: return false;
    }
}

bool expr_mentions(const Expr *e, const Symbol *sym) { return mentions(e, sym, false); }
bool expr_depends_on(const Expr *e, const Symbol *sym) { return mentions(e, sym, true); }

const Expr *not_on_host(const Expr *e, bool entry) {
    if (!e) return NULL;
    switch (e->kind) {
    case EX_INT: case EX_FLOAT: return NULL;
    case EX_NAME: {
        const Symbol *y = e->sym;
        if (!y) return NULL;
        switch (y->kind) {
        case SYM_DIM: case SYM_SCALAR: case SYM_PARAM: return NULL;
        case SYM_LET: return entry || y->is_const ? NULL : e;  /* an entry's lets are the launcher's own */
        case SYM_BUILTIN: return (entry ? y->builtin == BI_SMS : y->builtin == BI_INF) ? NULL : e;
        default: return e;
        }
    }
    case EX_MEMBER: case EX_INDEX: case EX_TRANSPOSE: return e;
    case EX_CALL:
        if (entry && e->fn != FN_CDIV && e->fn != FN_MIN && e->fn != FN_MAX) return e;
        for (int i = 0; i < e->u.call.nargs; i++) {
            const Expr *x = not_on_host(e->u.call.args[i], entry);
            if (x) return x;
        }
        return NULL;
    case EX_BINARY: {
        if (entry && e->u.bin.op == BIN_MATMUL) return e;
        const Expr *x = not_on_host(e->u.bin.l, entry);
        return x ? x : not_on_host(e->u.bin.r, entry);
    }
    case EX_UNARY: return not_on_host(e->u.un.e, entry);
    case EX_COND: {
        const Expr *x = not_on_host(e->u.cond.c, entry);
        if (!x) x = not_on_host(e->u.cond.a, entry);
        if (!x) x = not_on_host(e->u.cond.b, entry);
        return x;
    }
    }
    return e;
}
