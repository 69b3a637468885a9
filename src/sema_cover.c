/* sema_cover.c - the outputs' coverage and the accesses' bounds: every element of an `out` tensor
 * is written by a store, and no access reaches outside its tensor where the emitted code does not
 * drop it, or the program gets a diagnostic. Part of the semantic checks (sema_int.h); runs on a
 * kernel that passed every other check.
 *
 * Three rules (docs/language.md, section 15, "Outputs are written whole" and "Indices stay
 * inside their tensors"):
 *   - an `out` tensor that no statement stores into (`<-` or `+=`) is an error, unless it is
 *     `zeroed` (the launcher clears it: an output of zeros is what the program says);
 *   - an `out` tensor (not zeroed) that some legal launch leaves partly unwritten is an error;
 *   - a store, atomic add, thread-issued load or element read whose index falls outside its
 *     tensor in some legal launch, at an end of a dimension the emitted code does not check
 *     (check_bounds: the code's checks per path are in bound_guards), is an error.
 *
 * The second rule is decided by evaluation, not by algebra: tkc tries concrete launches (values
 * of the run-time dimensions) that the launcher accepts, and for each one computes, dimension by
 * dimension, which indices the stores can reach. A store's index along a dimension is evaluated
 * for every value of the grid axes, the pipeline variable and the loop variables it depends on
 * (through lets too), so the set it computes contains every index the store writes (an `if`
 * around it only removes indices). If some index of a dimension is reached by no store, that
 * whole slice of the tensor is never written in that launch: an error that names the launch.
 * Where an index cannot be evaluated (it reads a scalar argument or a tensor element, or has too
 * many values to list), that store counts as reaching every index of the dimension, so tkc never
 * reports a launch it has not shown to leave elements unwritten. A dimension that only sizes
 * outputs (free_dims) is the caller's to match to the grid: it takes its smallest legal value.
 * A launch counts as legal when every run-time dimension is in 1 .. 2^31 - 1, the product of the
 * grid extents is in 1 .. 2^31 - 1 (each extent at least 1), every requirement that names a
 * dimension evaluates to true (requirements over scalar arguments alone are assumed
 * satisfiable), and every dimension that is the last one of a tensor makes a row a multiple of
 * 16 bytes (what TMA asks; applied to every tensor, which only rules out more launches). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sema_int.h"

enum {
    MAX_VARS = 16,              /* iteration variables bound at once (axes, pipeline, loops) */
    MAX_DEPTH = 64,             /* let nesting followed by the evaluator */
    DIM_CAP = 1 << 22,          /* longest dimension checked (indices) */
    ENUM_CAP = 1 << 17,         /* values bound and indices evaluated per store and dimension */
    CAND_MAX = 160,             /* candidate values per dimension */
};
static const int64_t WORK_CAP = 40000000; /* evaluations and marked indices per kernel */

/* a store to an output, with the loops around it (innermost last) */
typedef struct CStore {
    Stmt *st;
    Expr *ix;                   /* the tensor access T[...] */
    Type moved;
    BlockKind bk;
    Stmt *fors[MAX_VARS];
    int nfors;
} CStore;
typedef Vec(CStore) CStoreVec;
typedef Vec(int64_t) I64Vec;

/* one concrete launch, and the iteration variables bound while evaluating an index */
typedef struct Env {
    int64_t *dims;              /* by the dimension's Symbol.index */
    const Symbol *vsym[MAX_VARS];
    int64_t vval[MAX_VARS];
    int nv;
    int64_t work;               /* evaluations so far (WORK_CAP) */
} Env;

static bool fits32(int64_t v) { return v >= -(int64_t)INT32_MAX && v <= INT32_MAX; }

/* Evaluates an integer (or bool) expression in env. False when it cannot: a scalar argument, a
 * float, a tensor element, an unbound variable, a division by 0, or a value past 32 bits (the
 * kernel computes in int; the launches tried are small, so this only gives up). */
static bool eval(Env *env, const Expr *e, int64_t *out, int depth) {
    if (!e || depth > MAX_DEPTH) return false;
    env->work++;
    if (e->ty.kind != TY_INT && e->ty.kind != TY_BOOL) return false;
    if (e->is_const) {
        *out = e->cval;
        return true;
    }
    int64_t a, b;
    switch (e->kind) {
    case EX_INT: *out = e->u.ival; return true;
    case EX_NAME: {
        const Symbol *y = e->sym;
        if (!y) return false;
        switch (y->kind) {
        case SYM_PARAM: *out = y->cval; return y->is_const;
        case SYM_DIM: *out = env->dims[y->index]; return true;
        case SYM_LET:
            if (y->is_const) {
                *out = y->cval;
                return true;
            }
            return eval(env, y->init, out, depth + 1);
        case SYM_LOOPVAR:
        case SYM_FORVAR:
        case SYM_BUILTIN: /* wg, where the bounds check binds it */
            for (int i = env->nv - 1; i >= 0; i--)
                if (env->vsym[i] == y) {
                    *out = env->vval[i];
                    return true;
                }
            return false;
        default: return false;
        }
    }
    case EX_MEMBER:
        if (!e->sym || e->sym->kind != SYM_AXIS) return false;
        for (int i = env->nv - 1; i >= 0; i--)
            if (env->vsym[i] == e->sym) {
                *out = env->vval[i];
                return true;
            }
        return false;
    case EX_UNARY:
        if (!eval(env, e->u.un.e, &a, depth + 1)) return false;
        *out = e->u.un.op == UN_NEG ? -a : !a;
        return true;
    case EX_COND:
        if (!eval(env, e->u.cond.c, &a, depth + 1)) return false;
        return eval(env, a ? e->u.cond.a : e->u.cond.b, out, depth + 1);
    case EX_BINARY: {
        BinOp op = e->u.bin.op;
        if (!eval(env, e->u.bin.l, &a, depth + 1)) return false;
        if (op == BIN_AND && !a) return *out = 0, true;
        if (op == BIN_OR && a) return *out = 1, true;
        if (!eval(env, e->u.bin.r, &b, depth + 1)) return false;
        switch (op) {
        case BIN_OR: case BIN_AND: *out = b != 0; break;
        case BIN_EQ: *out = a == b; break;
        case BIN_NE: *out = a != b; break;
        case BIN_LT: *out = a < b; break;
        case BIN_LE: *out = a <= b; break;
        case BIN_GT: *out = a > b; break;
        case BIN_GE: *out = a >= b; break;
        case BIN_ADD: *out = a + b; break;
        case BIN_SUB: *out = a - b; break;
        case BIN_MUL: *out = a * b; break; /* both fit in 32 bits: no 64-bit overflow */
        case BIN_DIV:
            if (!b) return false;
            *out = a / b;
            break;
        case BIN_MOD:
            if (!b) return false;
            *out = a % b;
            break;
        default: return false;
        }
        return fits32(*out);
    }
    case EX_CALL: {
        int n = e->u.call.nargs;
        if ((e->fn == FN_CDIV || e->fn == FN_MIN || e->fn == FN_MAX) && n == 2) {
            if (!eval(env, e->u.call.args[0], &a, depth + 1) || !eval(env, e->u.call.args[1], &b, depth + 1)) return false;
            if (e->fn == FN_CDIV) {
                if (b <= 0) return false;
                *out = (a + b - 1) / b;
            } else {
                *out = e->fn == FN_MIN ? (a < b ? a : b) : (a > b ? a : b);
            }
            return fits32(*out);
        }
        if (e->fn == FN_I32 && n == 1) return eval(env, e->u.call.args[0], out, depth + 1);
        return false;
    }
    default: return false;
    }
}

/* ---- what an expression depends on -------------------------------------------------------- */

typedef struct Deps {
    const Symbol *v[256];
    int n;
    bool overflow;      /* too many, or nested too deep to follow: the list may be incomplete */
} Deps;

static void deps_add(Deps *d, const Symbol *y) {
    for (int i = 0; i < d->n; i++)
        if (d->v[i] == y) return;
    if (d->n == (int)(sizeof d->v / sizeof *d->v)) d->overflow = true;
    else d->v[d->n++] = y;
}

/* the grid axes, pipeline and loop variables and dimensions e reads, through lets */
static void deps_of(Deps *d, const Expr *e, int depth) {
    if (depth > MAX_DEPTH) d->overflow = true;
    if (!e || depth > MAX_DEPTH || e->is_const) return;
    switch (e->kind) {
    case EX_NAME:
        if (!e->sym) return;
        if (e->sym->kind == SYM_LOOPVAR || e->sym->kind == SYM_FORVAR || e->sym->kind == SYM_DIM) deps_add(d, e->sym);
        else if (e->sym->kind == SYM_LET && !e->sym->is_const) deps_of(d, e->sym->init, depth + 1);
        return;
    case EX_MEMBER:
        if (e->sym && e->sym->kind == SYM_AXIS) deps_add(d, e->sym);
        return;
    case EX_TRANSPOSE: deps_of(d, e->u.tr.base, depth + 1); return;
    case EX_INDEX:
        deps_of(d, e->u.index.base, depth + 1);
        for (int i = 0; i < e->u.index.nargs; i++) {
            deps_of(d, e->u.index.args[i].lo, depth + 1);
            deps_of(d, e->u.index.args[i].hi, depth + 1);
        }
        return;
    case EX_CALL:
        for (int i = 0; i < e->u.call.nargs; i++) deps_of(d, e->u.call.args[i], depth + 1);
        return;
    case EX_BINARY: deps_of(d, e->u.bin.l, depth + 1); deps_of(d, e->u.bin.r, depth + 1); return;
    case EX_UNARY: deps_of(d, e->u.un.e, depth + 1); return;
    case EX_COND:
        if (e->u.cond.c->is_const) {
            deps_of(d, e->u.cond.c->cval ? e->u.cond.a : e->u.cond.b, depth + 1);
            return;
        }
        deps_of(d, e->u.cond.c, depth + 1);
        deps_of(d, e->u.cond.a, depth + 1);
        deps_of(d, e->u.cond.b, depth + 1);
        return;
    default: return;
    }
}

static bool deps_has(const Deps *d, const Symbol *y) {
    for (int i = 0; i < d->n; i++)
        if (d->v[i] == y) return true;
    return false;
}

/* ---- the indices one store reaches along one dimension ------------------------------------ */

/* the iteration variables of a store, outermost first, with the expressions of their ranges */
typedef struct Iter {
    const Symbol *sym;
    const Expr *lo, *hi;        /* lo NULL: 0 */
} Iter;

typedef struct Cover {
    Sema *s;
    SemaKernel *sk;
    Env env;
    unsigned char *mark;        /* one byte per index of the dimension being checked */
    int64_t mark_cap;
    const Expr *idx;            /* the index along the dimension (at()'s argument for at) */
    bool at;
    int64_t unit, len;
    Iter it[MAX_VARS];
    int nit;
    int64_t evals;
    bool unknown;
    bool *free;                 /* per dimension: it only sizes outputs (free_dims) */
} Cover;

/* the iteration variables in d (what the expressions evaluated at a store read) and those their
 * ranges depend on, into c->it, outermost first; false if there are too many */
static bool iters_of(Cover *c, const CStore *cs, Deps *d) {
    const SemaKernel *sk = c->sk;
    /* the innermost ranges first: a loop's bounds may read the variables outside it */
    for (int f = cs->nfors - 1; f >= 0; f--) {
        const Stmt *fs = cs->fors[f];
        if (!deps_has(d, fs->u.for_.sym)) continue;
        deps_of(d, fs->u.for_.lo, 0);
        deps_of(d, fs->u.for_.hi, 0);
    }
    if (sk->loopvar && deps_has(d, sk->loopvar)) deps_of(d, sk->pipe->u.pipe.trips, 0);
    if (d->overflow) return false;
    c->nit = 0;
    for (int i = 0; i < sk->axes.n; i++)
        if (deps_has(d, sk->axes.v[i]->sym)) c->it[c->nit++] = (Iter){sk->axes.v[i]->sym, NULL, sk->axes.v[i]->extent};
    if (sk->loopvar && deps_has(d, sk->loopvar)) {
        if (cs->bk != BK_STORE && cs->bk != BK_LOAD && cs->bk != BK_COMPUTE) return false;
        c->it[c->nit++] = (Iter){sk->loopvar, NULL, sk->pipe->u.pipe.trips};
    }
    for (int f = 0; f < cs->nfors; f++) {
        const Stmt *fs = cs->fors[f];
        if (!deps_has(d, fs->u.for_.sym)) continue;
        if (c->nit == MAX_VARS) return false;
        c->it[c->nit++] = (Iter){fs->u.for_.sym, fs->u.for_.lo, fs->u.for_.hi};
    }
    return true;
}

/* the variables a store's index along dim depends on, and those their ranges depend on,
 * outermost first; false if there are too many */
static bool store_iters(Cover *c, const CStore *cs, const Expr *idx) {
    Deps d = {.n = 0};
    deps_of(&d, idx, 0);
    return iters_of(c, cs, &d);
}

static void mark_range(Cover *c, int64_t lo, int64_t hi) {
    if (lo < 0) lo = 0;
    if (hi > c->len) hi = c->len;
    if (lo < hi) {
        memset(c->mark + lo, 1, (size_t)(hi - lo));
        c->env.work += hi - lo;
    }
}

/* binds the variables it[k..] over their ranges and marks what the index reaches */
static void enumerate(Cover *c, int k) {
    if (c->unknown) return;
    if (k == c->nit) {
        int64_t v;
        if (++c->evals > ENUM_CAP || c->env.work > WORK_CAP || !eval(&c->env, c->idx, &v, 0)) {
            c->unknown = true;
            return;
        }
        int64_t start = c->at ? v : v * c->unit;
        mark_range(c, start, start + c->unit);
        return;
    }
    int64_t lo = 0, hi;
    if ((c->it[k].lo && !eval(&c->env, c->it[k].lo, &lo, 0)) || !eval(&c->env, c->it[k].hi, &hi, 0)) {
        c->unknown = true;
        return;
    }
    int slot = c->env.nv++;
    c->env.vsym[slot] = c->it[k].sym;
    for (int64_t v = lo; v < hi && !c->unknown; v++) {
        if (++c->evals > ENUM_CAP) {
            c->unknown = true;
            break;
        }
        c->env.vval[slot] = v;
        enumerate(c, k + 1);
    }
    c->env.nv--;
}

/* the tile (or vector) size a store moves along dimension j of an n-dimensional tensor; 1 for the
 * dimensions it indexes in elements */
static int64_t store_unit(const CStore *cs, int j, int n) {
    if (cs->moved.kind == TY_TILE) {
        if (j == n - 2) return cs->moved.rows;
        if (j == n - 1) return cs->moved.cols;
        return 1;
    }
    return j == n - 1 ? cs->moved.rows : 1;
}

static bool is_at(const Expr *e) { return e && e->kind == EX_CALL && e->fn == FN_AT && e->u.call.nargs == 1; }

/* marks the indices of dimension j (length len) that store cs reaches; false if it cannot tell
 * (then every index counts as reached) */
static bool store_reach(Cover *c, const CStore *cs, int j, int n) {
    const Expr *ix = cs->ix->u.index.args[j].lo;
    c->at = is_at(ix);
    c->idx = c->at ? ix->u.call.args[0] : ix;
    c->unit = store_unit(cs, j, n);
    c->evals = 0;
    c->unknown = false;
    c->env.nv = 0;
    if (!store_iters(c, cs, c->idx)) return false;
    enumerate(c, 0);
    return !c->unknown;
}

/* ---- the launches tried ------------------------------------------------------------------- */

/* the bytes of a row of a tensor whose last dimension is dm must be a multiple of 16 */
static int64_t dim_align(const SemaKernel *sk, const Symbol *dm) {
    int64_t a = 1;
    for (int i = 0; i < sk->args.n; i++) {
        const Arg *g = sk->args.v[i];
        if (!g->ts.ndims || g->ts.dims[g->ts.ndims - 1]->sym != dm) continue;
        int64_t need = 16 / dtype_bytes[g->ts.dt];
        if (need > a) a = need; /* 1, 4, 8: the larger is a multiple of the smaller */
    }
    return a;
}

/* the dimensions the kernel's expressions read (extents, trips, requirements, lets, statements) */
static void stmt_deps(Deps *d, const StmtList *l) {
    for (int i = 0; i < l->n; i++) {
        const Stmt *st = l->v[i];
        switch (st->kind) {
        case ST_ASSIGN: deps_of(d, st->u.assign.lhs, 0); deps_of(d, st->u.assign.rhs, 0); break;
        case ST_IF:
            deps_of(d, st->u.if_.cond, 0);
            stmt_deps(d, &st->u.if_.then_s);
            stmt_deps(d, &st->u.if_.else_s);
            break;
        case ST_FOR:
            deps_of(d, st->u.for_.lo, 0);
            deps_of(d, st->u.for_.hi, 0);
            stmt_deps(d, &st->u.for_.body);
            break;
        case ST_LET: deps_of(d, st->u.let.e, 0); break;
        case ST_EXPR: deps_of(d, st->u.expr.e, 0); break;
        }
    }
}

/* A free dimension sizes only outputs: it is in no input's shape, and no expression of the kernel
 * but a requirement reads it (as MB in `out S: fp32[MB, 64]` beside `grid (m: cdiv(M, 128))`
 * and `require MB * 128 >= M`). Its size is the caller's to match to the grid, so the launches
 * tried give it its smallest legal value (set_free). */
static void free_dims(const SemaKernel *sk, bool *free) {
    Deps d = {.n = 0};
    for (int i = 0; i < sk->args.n; i++) {
        const Arg *g = sk->args.v[i];
        if (g->mode == ARG_OUT) continue;
        for (int j = 0; j < g->ts.ndims; j++) deps_of(&d, g->ts.dims[j], 0);
    }
    for (int i = 0; i < sk->axes.n; i++) deps_of(&d, sk->axes.v[i]->extent, 0);
    if (sk->pipe) deps_of(&d, sk->pipe->u.pipe.trips, 0);
    for (int i = 0; i < sk->lets.n; i++) deps_of(&d, sk->lets.v[i]->u.let.e, 0);
    for (int b = 0; b < BK_COUNT; b++)
        if (sk->blocks[b]) stmt_deps(&d, &sk->blocks[b]->u.block.body);
    for (int i = 0; i < sk->dims.n; i++) free[i] = !d.overflow && !deps_has(&d, sk->dims.v[i]);
}

/* gives each free dimension the smallest value (1 .. 65536, a multiple of its alignment) for which
 * the requirements that name it hold; false if there is none */
static bool set_free(Cover *c, const bool *free) {
    const SemaKernel *sk = c->sk;
    c->env.nv = 0;
    for (int i = 0; i < sk->dims.n; i++)
        if (free[i]) c->env.dims[i] = dim_align(sk, sk->dims.v[i]);
    for (int i = 0; i < sk->dims.n; i++) {
        if (!free[i]) continue;
        int64_t al = dim_align(sk, sk->dims.v[i]);
        bool ok = false;
        for (int64_t v = al; v <= 65536 && !ok; v += al) {
            c->env.dims[i] = v;
            ok = true;
            for (int r = 0; r < sk->requires.n && ok; r++) {
                Deps d = {.n = 0};
                deps_of(&d, sk->requires.v[r], 0);
                if (!deps_has(&d, sk->dims.v[i])) continue;
                int64_t x;
                ok = eval(&c->env, sk->requires.v[r], &x, 0) && x;
            }
            if (c->env.work > WORK_CAP) return false;
        }
        if (!ok) return false;
    }
    return true;
}

static bool legal(Cover *c) {
    const SemaKernel *sk = c->sk;
    c->env.nv = 0;
    for (int i = 0; i < sk->dims.n; i++) {
        int64_t v = c->env.dims[i];
        if (v < 1 || v > INT32_MAX || v % dim_align(sk, sk->dims.v[i])) return false;
    }
    int64_t tiles = 1;
    for (int i = 0; i < sk->axes.n; i++) {
        int64_t e;
        if (!eval(&c->env, sk->axes.v[i]->extent, &e, 0) || e < 1) return false;
        tiles *= e;
        if (tiles > INT32_MAX) return false;
    }
    for (int i = 0; i < sk->requires.n; i++) {
        Deps d = {.n = 0};
        deps_of(&d, sk->requires.v[i], 0);
        if (!d.n && !d.overflow) continue; /* scalars and params only: assumed satisfiable */
        int64_t v;
        if (!eval(&c->env, sk->requires.v[i], &v, 0) || !v) return false;
    }
    return true;
}

/* positive integer constants of e (tile sizes, divisors, offsets), for the candidate values */
static void consts_of(I64Vec *out, Arena *a, const Expr *e, int depth) {
    if (!e || depth > MAX_DEPTH) return;
    if (e->is_const && (e->ty.kind == TY_INT) && e->cval > 1 && e->cval < (1 << 20)) {
        vec_push(a, out, e->cval);
        if (e->kind != EX_BINARY && e->kind != EX_CALL) return;
    }
    switch (e->kind) {
    case EX_NAME:
        if (e->sym && e->sym->kind == SYM_LET && !e->sym->is_const) consts_of(out, a, e->sym->init, depth + 1);
        return;
    case EX_INDEX:
        for (int i = 0; i < e->u.index.nargs; i++) consts_of(out, a, e->u.index.args[i].lo, depth + 1);
        return;
    case EX_CALL:
        for (int i = 0; i < e->u.call.nargs; i++) consts_of(out, a, e->u.call.args[i], depth + 1);
        return;
    case EX_BINARY: consts_of(out, a, e->u.bin.l, depth + 1); consts_of(out, a, e->u.bin.r, depth + 1); return;
    case EX_UNARY: consts_of(out, a, e->u.un.e, depth + 1); return;
    case EX_COND:
        consts_of(out, a, e->u.cond.c, depth + 1);
        consts_of(out, a, e->u.cond.a, depth + 1);
        consts_of(out, a, e->u.cond.b, depth + 1);
        return;
    default: return;
    }
}

static int cmp_i64(const void *x, const void *y) {
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return a < b ? -1 : a > b;
}

/* distinct values near the multiples of the kernel's constants (where a grid of tiles starts or
 * stops covering a dimension), ascending but for 1, which comes last */
static int candidates(int64_t *out, const int64_t *k, int nk, int64_t align) {
    int64_t tmp[4096];
    int n = 0;
    for (int64_t v = 1; v <= 16; v++) tmp[n++] = v;
    for (int i = 0; i < nk && n < 4000; i++)
        for (int64_t m = 1; m <= 4 && n < 4000; m++) {
            int64_t b = k[i] * m;
            tmp[n++] = b - 1;
            tmp[n++] = b;
            tmp[n++] = b + 1;
            tmp[n++] = b + align;
        }
    for (int i = 0; i < n; i++) tmp[i] = (tmp[i] + align - 1) / align * align; /* aligned, rounded up */
    qsort(tmp, (size_t)n, sizeof *tmp, cmp_i64);
    int m = 0;
    for (int i = 0; i < n && m < CAND_MAX; i++)
        if (tmp[i] >= 1 && tmp[i] <= 65536 && (!m || tmp[i] != out[m - 1])) out[m++] = tmp[i];
    /* 1 last: a launch of one row, head or batch rarely shows what a store misses */
    if (m > 1 && out[0] == 1) {
        memmove(out, out + 1, sizeof *out * (size_t)(m - 1));
        out[m - 1] = 1;
    }
    return m;
}

/* ---- the checks ----------------------------------------------------------------------------- */

static bool is_store(const Stmt *st) {
    return st->kind == ST_ASSIGN &&
           (st->mv == MV_R2G || st->mv == MV_S2G || st->mv == MV_ADD_R2G || st->mv == MV_ADD_S2G);
}

static void collect(Sema *s, CStoreVec *out, StmtList *l, BlockKind bk, Stmt **fors, int nfors) {
    for (int i = 0; i < l->n; i++) {
        Stmt *st = l->v[i];
        if (st->kind == ST_IF) {
            collect(s, out, &st->u.if_.then_s, bk, fors, nfors);
            if (st->u.if_.has_else) collect(s, out, &st->u.if_.else_s, bk, fors, nfors);
        } else if (st->kind == ST_FOR) {
            if (nfors == MAX_VARS) continue; /* deeper stores are not checked */
            fors[nfors] = st;
            collect(s, out, &st->u.for_.body, bk, fors, nfors + 1);
        } else if (is_store(st)) {
            Expr *L = st->u.assign.lhs;
            if (L->kind != EX_INDEX || !L->u.index.base->sym) continue;
            CStore cs = {.st = st, .ix = L, .moved = st->u.assign.rhs->ty, .bk = bk, .nfors = nfors};
            memcpy(cs.fors, fors, sizeof(Stmt *) * (size_t)nfors);
            vec_push(s->a, out, cs);
        }
    }
}

static bool is_zeroed(const Arg *g) {
    for (int j = 0; j < g->ts.nattrs; j++)
        if (!strcmp(g->ts.attrs[j], "zeroed")) return true;
    return false;
}

/* T[:, 64:72, :] */
static const char *slice_str(Arena *a, const char *name, int n, int j, int64_t lo, int64_t hi) {
    StrBuf b;
    sb_init(&b);
    sb_printf(&b, "%s[", name);
    for (int i = 0; i < n; i++) {
        if (i) sb_puts(&b, ", ");
        if (i != j) sb_putc(&b, ':');
        else if (hi == lo + 1) sb_printf(&b, "%" PRId64, lo);
        else sb_printf(&b, "%" PRId64 ":%" PRId64, lo, hi);
    }
    sb_putc(&b, ']');
    const char *r = arena_strdup(a, b.s);
    sb_free(&b);
    return r;
}

/* "with M = 72, N = 256, " for the dimensions in d; "" when there are none */
static const char *launch_str(Cover *c, const Deps *d) {
    StrBuf b;
    sb_init(&b);
    int k = 0;
    for (int i = 0; i < c->sk->dims.n; i++) {
        const Symbol *dm = c->sk->dims.v[i];
        if (!deps_has(d, dm)) continue;
        sb_printf(&b, "%s%s = %" PRId64, k++ ? ", " : "with ", dm->name, c->env.dims[i]);
    }
    if (k) sb_puts(&b, ", ");
    const char *r = arena_strdup(c->s->a, b.s ? b.s : "");
    sb_free(&b);
    return r;
}

/* the dimensions the indices of dimension j depend on: the tensor's, the stores' indices and the
 * ranges of their variables, and those the requirements tie to them (but free dimensions, which
 * only size outputs: their smallest legal values) */
static void launch_deps(Cover *c, Deps *d, const Arg *g, const CStore *stores, int ns, int j) {
    deps_of(d, g->ts.dims[j], 0);
    for (int i = 0; i < ns; i++) {
        if (stores[i].ix->u.index.base->sym != g->sym) continue;
        const Expr *ix = stores[i].ix->u.index.args[j].lo;
        Cover probe = *c;
        if (!store_iters(&probe, &stores[i], is_at(ix) ? ix->u.call.args[0] : ix)) continue;
        deps_of(d, ix, 0);
        for (int k = 0; k < probe.nit; k++) {
            deps_of(d, probe.it[k].lo, 0);
            deps_of(d, probe.it[k].hi, 0);
        }
    }
    for (int i = 0; i < c->sk->requires.n; i++) {
        Deps r = {.n = 0};
        deps_of(&r, c->sk->requires.v[i], 0);
        bool ties = false;
        for (int k = 0; k < r.n; k++) ties |= r.v[k]->kind == SYM_DIM && deps_has(d, r.v[k]);
        for (int k = 0; ties && k < r.n; k++)
            if (r.v[k]->kind == SYM_DIM && !c->free[r.v[k]->index]) deps_add(d, r.v[k]);
    }
}

/* the first index of dimension j of output g that no store reaches in the current launch:
 * true and [*lo, *hi) the gap; false when every index is reached (or tkc cannot tell) */
static bool find_gap(Cover *c, const Arg *g, const CStore *stores, int ns, int j, int64_t *lo, int64_t *hi) {
    int64_t len;
    c->env.nv = 0;
    if (!eval(&c->env, g->ts.dims[j], &len, 0) || len < 1 || len > DIM_CAP) return false;
    if (len > c->mark_cap) {
        c->mark = ARENA_NEW_N(c->s->a, unsigned char, len);
        c->mark_cap = len;
    }
    c->len = len;
    memset(c->mark, 0, (size_t)len);
    for (int i = 0; i < ns; i++) {
        if (stores[i].ix->u.index.base->sym != g->sym) continue;
        if (!store_reach(c, &stores[i], j, g->ts.ndims)) return false;
    }
    int64_t p = 0;
    while (p < len && c->mark[p]) p++;
    if (p == len) return false;
    int64_t q = p;
    while (q < len && !c->mark[q]) q++;
    *lo = p;
    *hi = q;
    return true;
}

/* what a store moves along dimension j of an n-dimensional tensor: "rows", "columns", "elements" */
static const char *unit_noun(const CStore *cs, int j, int n) {
    if (cs->moved.kind == TY_TILE) return j == n - 2 ? "rows" : j == n - 1 ? "columns" : NULL;
    return j == n - 1 ? "elements" : NULL;
}

static const char *axis_desc(Arena *a, const Axis *ax, int64_t extent, int64_t unit, const char *noun) {
    return arena_printf(a, "the grid has %s = %" PRId64 " work tile%s along '%s'%s", ast_expr_str(a, ax->extent), extent,
                        extent == 1 ? "" : "s", ax->name,
                        noun ? arena_printf(a, ", each storing %" PRId64 " %s", unit, noun) : "");
}

/* the error for output g, dimension j, with the current launch; then a note per store */
static void report_gap(Cover *c, const Arg *g, const CStore *stores, int ns, int j, int64_t lo, int64_t hi) {
    Sema *s = c->s;
    Arena *a = s->a;
    Deps d = {.n = 0};
    launch_deps(c, &d, g, stores, ns, j);
    const char *with = launch_str(c, &d);
    int n = g->ts.ndims;
    diag_error(s->d, g->span, "output '%s' is not fully written: %sno store writes %s, so it keeps whatever the memory held",
               g->name, *with ? with : "for every launch, ", slice_str(a, g->name, n, j, lo, hi));
    int notes = 0;
    for (int i = 0; i < ns && notes < 4; i++) {
        const CStore *cs = &stores[i];
        if (cs->ix->u.index.base->sym != g->sym) continue;
        const Expr *ix = cs->ix->u.index.args[j].lo;
        memset(c->mark, 0, (size_t)c->len);
        if (!store_reach(c, cs, j, n)) continue;
        int64_t first = 0;
        while (first < c->len && !c->mark[first]) first++;
        int64_t last = c->len;
        while (last > first && !c->mark[last - 1]) last--;
        bool whole = true;
        for (int64_t p = first; p < last; p++) whole &= c->mark[p] != 0;
        const char *what = first == last ? arena_printf(a, "this store writes no index of dimension %d of '%s'", j, g->name)
                           : whole       ? arena_printf(a, "this store writes only %s", slice_str(a, g->name, n, j, first, last))
                                         : arena_printf(a, "this store writes parts of %s", slice_str(a, g->name, n, j, first, last));
        /* the common forms: a grid axis, a constant tile index */
        const char *why = "";
        const Expr *base = is_at(ix) ? NULL : ix;
        if (base && base->kind == EX_MEMBER && base->sym && base->sym->kind == SYM_AXIS) {
            const Axis *ax = c->sk->axes.v[base->sym->index];
            int64_t e = 0;
            c->env.nv = 0;
            if (eval(&c->env, ax->extent, &e, 0)) {
                int64_t u = store_unit(cs, j, n);
                why = arena_printf(a, ": %s", axis_desc(a, ax, e, u, unit_noun(cs, j, n)));
                const Expr *x = ax->extent;
                if (x->kind == EX_BINARY && x->u.bin.op == BIN_DIV && u > 1)
                    why = arena_printf(a, "%s; '/' rounds down, so the last partial tile is dropped: use cdiv(%s, %s), or "
                                          "require %s %% %s == 0",
                                       why, ast_expr_str(a, x->u.bin.l), ast_expr_str(a, x->u.bin.r),
                                       ast_expr_str(a, x->u.bin.l), ast_expr_str(a, x->u.bin.r));
                else if (x->kind == EX_CALL && x->fn == FN_CDIV && x->u.call.nargs == 2 && x->u.call.args[1]->is_const &&
                         x->u.call.args[1]->cval > u)
                    why = arena_printf(a, "%s, but cdiv() counts tiles of %" PRId64 ": use cdiv(%s, %" PRId64 ")", why,
                                       x->u.call.args[1]->cval, ast_expr_str(a, x->u.call.args[0]), u);
            }
        } else if (base && base->is_const) {
            int64_t u = store_unit(cs, j, n);
            const Expr *dx = g->ts.dims[j];
            const char *noun = unit_noun(cs, j, n);
            why = arena_printf(a, ": a constant index names one %s%s; index this dimension by a grid axis or a loop to cover "
                                  "it%s",
                               cs->moved.kind == TY_TILE ? "tile" : noun ? "vector" : "index",
                               noun ? arena_printf(a, " of %" PRId64 " %s", u, noun) : "",
                               base->cval == 0 && dx->kind == EX_NAME && dx->sym && dx->sym->kind == SYM_DIM
                                   ? arena_printf(a, ", or require %s <= %" PRId64, dx->sym->name, u)
                                   : "");
        } else if (base && base->kind == EX_NAME && base->sym &&
                   (base->sym->kind == SYM_FORVAR || base->sym->kind == SYM_LOOPVAR)) {
            /* a loop variable: its range, where it does not depend on other variables */
            const Expr *from = NULL, *to = NULL;
            if (base->sym->kind == SYM_LOOPVAR) to = c->sk->pipe->u.pipe.trips;
            for (int f = 0; f < cs->nfors; f++)
                if (cs->fors[f]->u.for_.sym == base->sym) from = cs->fors[f]->u.for_.lo, to = cs->fors[f]->u.for_.hi;
            int64_t l = 0, h = 0;
            c->env.nv = 0;
            if (to && (!from || eval(&c->env, from, &l, 0)) && eval(&c->env, to, &h, 0))
                why = arena_printf(a, ": '%s' runs over %s .. %s: %" PRId64 " value%s from %" PRId64, base->sym->name,
                                   from ? ast_expr_str(a, from) : "0", ast_expr_str(a, to), h > l ? h - l : 0,
                                   h - l == 1 ? "" : "s", l);
        }
        diag_note(s->d, cs->ix->u.index.args[j].span, "%s%s", what, why);
        notes++;
    }
}

/* the constants the launches are built around: the grid's extents, the requirements, the pipeline's
 * trip count and, for each access in cs[0 .. ns) to the tensor sym (NULL: every access), its
 * indices, tile sizes and loop ranges */
static void launch_consts(Cover *c, I64Vec *ks, const Symbol *sym, const CStore *cs, int ns) {
    const SemaKernel *sk = c->sk;
    for (int i = 0; i < sk->axes.n; i++) consts_of(ks, c->s->a, sk->axes.v[i]->extent, 0);
    for (int i = 0; i < sk->requires.n; i++) consts_of(ks, c->s->a, sk->requires.v[i], 0);
    if (sk->pipe) consts_of(ks, c->s->a, sk->pipe->u.pipe.trips, 0);
    for (int i = 0; i < ns; i++) {
        if (sym && cs[i].ix->u.index.base->sym != sym) continue;
        int n = cs[i].ix->u.index.nargs;
        consts_of(ks, c->s->a, cs[i].ix, 0);
        for (int j = 0; j < n; j++) vec_push(c->s->a, ks, store_unit(&cs[i], j, n));
        for (int f = 0; f < cs[i].nfors; f++) {
            consts_of(ks, c->s->a, cs[i].fors[f]->u.for_.lo, 0);
            consts_of(ks, c->s->a, cs[i].fors[f]->u.for_.hi, 0);
        }
    }
}

/* Tries the legal launches built around the constants ks, in order, calling fn(c, ctx) with each
 * in c->env.dims; stops when fn returns true (then true) or the work runs out (false). The
 * launches: every dimension the same candidate value, then one dimension varying while the others
 * are 256, 64, 1024; free dimensions take their smallest legal values. */
static bool for_each_launch(Cover *c, const I64Vec *ks, bool (*fn)(Cover *c, void *ctx), void *ctx) {
    const SemaKernel *sk = c->sk;
    int nd = sk->dims.n;
    bool *free = c->free;
    int64_t cand[CAND_MAX];
    static const int64_t bases[] = {256, 64, 1024};
    for (int b = -1; b < (int)(sizeof bases / sizeof *bases); b++) {
        /* b = -1: every dimension the same value; else one dimension varies, the others are bases[b] */
        for (int vary = b < 0 ? -1 : 0; vary < (b < 0 ? 0 : nd); vary++) {
            if (vary >= 0 && free[vary]) continue;
            int64_t align = 1;
            for (int i = 0; i < nd; i++)
                if (!free[i] && (vary < 0 || i == vary)) {
                    int64_t al = dim_align(sk, sk->dims.v[i]);
                    if (al > align) align = al;
                }
            int nbound = 0;
            for (int i = 0; i < nd; i++) nbound += !free[i];
            int ncand = nbound ? candidates(cand, ks->v, ks->n, align) : 1;
            if (!nbound) cand[0] = 0;
            for (int k = 0; k < ncand; k++) {
                for (int i = 0; i < nd; i++)
                    if (!free[i]) c->env.dims[i] = (vary < 0 || i == vary) ? cand[k] : bases[b];
                if (c->env.work > WORK_CAP) return false;
                if (!set_free(c, free) || !legal(c)) continue;
                if (fn(c, ctx)) return true;
            }
            if (!nbound) return false; /* no size to vary: one launch says it all */
        }
    }
    return false;
}

typedef struct OutCheck {
    const Arg *g;
    const CStore *stores;
    int ns;
} OutCheck;

/* one launch of check_output: reports the first dimension of the output with a gap */
static bool output_gap(Cover *c, void *ctx) {
    const OutCheck *o = ctx;
    for (int j = 0; j < o->g->ts.ndims; j++) {
        int64_t lo, hi;
        if (find_gap(c, o->g, o->stores, o->ns, j, &lo, &hi)) {
            report_gap(c, o->g, o->stores, o->ns, j, lo, hi);
            return true;
        }
    }
    return false;
}

/* tries the launches for output g until one leaves part of it unwritten; true if reported */
static bool check_output(Cover *c, const Arg *g, const CStore *stores, int ns) {
    I64Vec ks = {0};
    launch_consts(c, &ks, g->sym, stores, ns);
    OutCheck o = {g, stores, ns};
    return for_each_launch(c, &ks, output_gap, &o);
}

/* ---- accesses outside their tensors ----------------------------------------------------------- */

/* How the emitted code reaches global memory for an access, as lowering chooses it (lower_mem.c,
 * collect_store; emit_store.c), and so which ends of which dimensions it checks (bound_guards) */
typedef enum {
    AP_TMA,     /* a shared tile or vector by TMA (store, reduce-add): past the end of any dimension is
                   clipped; a negative coordinate is not allowed */
    AP_STAGED,  /* a register tile through staging chunks and TMA stores: the same, but a 64-row chunk
                   whose at() row starts above the tensor is written by the threads, row by row */
    AP_PAIRS,   /* a register tile written or added by the threads that hold it (fp32, staging = 0,
                   `+=`): rows and columns past the end skipped, before the start only with at() */
    AP_ROWS,    /* a rowwise tile stored or loaded by the threads: rows and columns outside skipped */
    AP_VEC,     /* a register vector stored, added or loaded by the threads: its dimension past the
                   end skipped (a load reads 0), before the start only with at() */
    AP_VEC_BOTH,/* a per_col vector of a rowwise kernel loaded by the threads: both ends checked */
    AP_ELEM,    /* an element read in a let: nothing checked */
} APath;

enum { MAX_CONDS = 16 };

/* a store, thread-issued load or element read of a tensor, with the ifs around it */
typedef struct Access {
    CStore cs;                  /* ix: the tensor access T[...]; moved: the tile or vector moved */
    APath path;
    const char *noun, *verb;    /* "store" "writes", "atomic add" "adds into", "load" "reads", ... */
    const Expr *cond[MAX_CONDS];/* the conditions of the ifs around it, outermost first */
    bool then[MAX_CONDS];       /* in the if's then branch (else: its else branch) */
    int nconds;
} Access;
typedef Vec(Access) AccessVec;

/* the path lower_mem.c gives a store statement */
static APath store_path(const SemaKernel *sk, const Stmt *st) {
    Type t = st->u.assign.rhs->ty;
    if (st->mv == MV_S2G || st->mv == MV_ADD_S2G) return AP_TMA;
    if (t.kind != TY_TILE) return AP_VEC;
    if (st->mv == MV_ADD_R2G) return AP_PAIRS;
    if (sk->rowwise) return AP_ROWS;
    return dtype_bytes[t.dt] == 4 || !sk->staging ? AP_PAIRS : AP_STAGED;
}

typedef struct BCollect {
    Sema *s;
    AccessVec *out;
    Stmt *fors[MAX_VARS];
    int nfors;
    const Expr *cond[MAX_CONDS];
    bool then[MAX_CONDS];
    int nconds;
    BlockKind bk;
} BCollect;

static void access_push(BCollect *b, Stmt *st, Expr *ix, Type moved, APath path, const char *noun, const char *verb) {
    if (ix->kind != EX_INDEX || !ix->u.index.base->sym || ix->u.index.base->sym->kind != SYM_TENSOR) return;
    Access ac = {.cs = {.st = st, .ix = ix, .moved = moved, .bk = b->bk, .nfors = b->nfors},
                 .path = path, .noun = noun, .verb = verb, .nconds = b->nconds};
    memcpy(ac.cs.fors, b->fors, sizeof(Stmt *) * (size_t)b->nfors);
    memcpy(ac.cond, b->cond, sizeof(const Expr *) * (size_t)b->nconds);
    memcpy(ac.then, b->then, sizeof(bool) * (size_t)b->nconds);
    vec_push(b->s->a, b->out, ac);
}

/* the element reads T[i, j] of e (lets) */
static void elem_reads(BCollect *b, Expr *e, int depth) {
    if (!e || depth > MAX_DEPTH) return;
    switch (e->kind) {
    case EX_INDEX: {
        Type one = {.kind = TY_VEC, .rows = 1}; /* one element along every dimension */
        if (e->u.index.base->sym && e->u.index.base->sym->kind == SYM_TENSOR) access_push(b, NULL, e, one, AP_ELEM, "element read", "reads");
        for (int i = 0; i < e->u.index.nargs; i++) {
            elem_reads(b, e->u.index.args[i].lo, depth + 1);
            elem_reads(b, e->u.index.args[i].hi, depth + 1);
        }
        return;
    }
    case EX_CALL:
        for (int i = 0; i < e->u.call.nargs; i++) elem_reads(b, e->u.call.args[i], depth + 1);
        return;
    case EX_BINARY: elem_reads(b, e->u.bin.l, depth + 1); elem_reads(b, e->u.bin.r, depth + 1); return;
    case EX_UNARY: elem_reads(b, e->u.un.e, depth + 1); return;
    case EX_COND:
        elem_reads(b, e->u.cond.c, depth + 1);
        elem_reads(b, e->u.cond.a, depth + 1);
        elem_reads(b, e->u.cond.b, depth + 1);
        return;
    default: return;
    }
}

static void bcollect(BCollect *b, StmtList *l) {
    const SemaKernel *sk = b->s->sk;
    for (int i = 0; i < l->n; i++) {
        Stmt *st = l->v[i];
        switch (st->kind) {
        case ST_IF:
            if (b->nconds == MAX_CONDS) continue; /* deeper accesses are not checked */
            b->cond[b->nconds] = st->u.if_.cond;
            b->then[b->nconds++] = true;
            bcollect(b, &st->u.if_.then_s);
            b->then[b->nconds - 1] = false;
            if (st->u.if_.has_else) bcollect(b, &st->u.if_.else_s);
            b->nconds--;
            break;
        case ST_FOR:
            if (b->nfors == MAX_VARS) continue;
            b->fors[b->nfors++] = st;
            bcollect(b, &st->u.for_.body);
            b->nfors--;
            break;
        case ST_LET: elem_reads(b, st->u.let.e, 0); break;
        case ST_ASSIGN: {
            Expr *L = st->u.assign.lhs, *R = st->u.assign.rhs;
            if (is_store(st)) {
                bool add = st->mv == MV_ADD_R2G || st->mv == MV_ADD_S2G;
                access_push(b, st, L, R->ty, store_path(sk, st), add ? "atomic add" : "store", add ? "adds into" : "writes");
            } else if (st->mv == MV_G2R) {
                APath p = L->ty.kind == TY_TILE                             ? AP_ROWS
                          : sk->rowwise && L->ty.layout == VL_COL ? AP_VEC_BOTH
                                                                            : AP_VEC;
                access_push(b, st, R, L->ty, p, "load", "reads");
            }
            break;
        }
        default: break;
        }
    }
}

/* which ends of dimension j (of n) the emitted code checks for the access (index at() or not) */
static void bound_guards(const Access *ac, int j, int n, bool at, bool *lo_ok, bool *hi_ok) {
    bool tdim = ac->cs.moved.kind == TY_TILE ? j >= n - 2 : j == n - 1; /* counted in tiles (vectors) */
    switch (ac->path) {
    case AP_TMA: *hi_ok = true, *lo_ok = false; return;
    case AP_STAGED: *hi_ok = true, *lo_ok = j == n - 2 && at; return;
    case AP_PAIRS: case AP_VEC: *hi_ok = tdim, *lo_ok = tdim && at; return;
    case AP_ROWS: case AP_VEC_BOTH: *hi_ok = *lo_ok = tdim; return;
    case AP_ELEM: *hi_ok = *lo_ok = false; return;
    }
}

/* one dimension of one access being checked in one launch, and the first index outside it */
typedef struct BCheck {
    Cover *c;
    const Access *ac;
    const Arg *g;
    int j;
    int64_t len;
    bool lo_ok, hi_ok;
    bool found;
    int64_t start;              /* the first element the access moves along j */
    int64_t vals[MAX_VARS];     /* the iteration variables then */
} BCheck;

/* binds the variables it[k..] over their ranges, like enumerate, until a binding under which the
 * access runs (its ifs' conditions hold) moves an element outside dimension j at an end the code
 * does not check */
static void bounds_enum(BCheck *b, int k) {
    Cover *c = b->c;
    if (c->unknown || b->found) return;
    if (k == c->nit) {
        int64_t v;
        if (++c->evals > ENUM_CAP || c->env.work > WORK_CAP) {
            c->unknown = true;
            return;
        }
        for (int i = 0; i < b->ac->nconds; i++) {
            if (!eval(&c->env, b->ac->cond[i], &v, 0)) {
                c->unknown = true; /* an if tkc cannot decide: the access is not checked */
                return;
            }
            if ((v != 0) != b->ac->then[i]) return; /* the access does not run */
        }
        if (!eval(&c->env, c->idx, &v, 0)) {
            c->unknown = true;
            return;
        }
        int64_t start = c->at ? v : v * c->unit;
        if ((start < 0 && !b->lo_ok) || (start >= b->len && !b->hi_ok)) {
            b->found = true;
            b->start = start;
            memcpy(b->vals, c->env.vval, sizeof(int64_t) * (size_t)c->env.nv);
        }
        return;
    }
    int64_t lo = 0, hi;
    if ((c->it[k].lo && !eval(&c->env, c->it[k].lo, &lo, 0)) || !eval(&c->env, c->it[k].hi, &hi, 0)) {
        c->unknown = true;
        return;
    }
    int slot = c->env.nv++;
    c->env.vsym[slot] = c->it[k].sym;
    for (int64_t v = lo; v < hi && !c->unknown && !b->found; v++) {
        if (++c->evals > ENUM_CAP) {
            c->unknown = true;
            break;
        }
        c->env.vval[slot] = v;
        bounds_enum(b, k + 1);
    }
    c->env.nv--;
}

/* why the emitted code does not drop what falls outside, and what to do */
static const char *bound_why(Arena *a, const BCheck *b, bool past, int n) {
    const Access *ac = b->ac;
    const Expr *dx = b->g->ts.dims[b->j];
    bool tdim = ac->cs.moved.kind == TY_TILE ? b->j >= n - 2 : b->j == n - 1;
    const char *guard = ac->path == AP_ELEM ? "an element read is not bounds-checked"
                        : ac->cs.moved.kind == TY_TILE
                            ? "nothing checks the indices before a tile's last two dimensions (they count in elements)"
                            : "nothing checks the indices before a vector's last dimension (they count in elements)";
    const char *then = ac->path == AP_ELEM ? "" : arena_printf(a, ", or put the %s under an 'if' that does", ac->noun);
    if (past && dx->kind == EX_NAME && dx->sym && dx->sym->kind == SYM_DIM && b->c->free[dx->sym->index]) {
        /* a dimension that sizes only outputs takes its smallest legal value: the caller's */
        const Expr *ix = ac->cs.ix->u.index.args[b->j].lo;
        const char *req = ix->kind == EX_MEMBER && ix->sym && ix->sym->kind == SYM_AXIS
                              ? arena_printf(a, " (require %s >= %s)", dx->sym->name,
                                             ast_expr_str(a, b->c->sk->axes.v[ix->sym->index]->extent))
                              : "";
        return arena_printf(a, "%s; %s sizes only outputs, so a launch may make it as small as this: tie it to the grid "
                               "with a require%s, or keep the index below %s%s",
                            guard, dx->sym->name, req, dx->sym->name, then);
    }
    if (past) return arena_printf(a, "%s; keep the index below %s%s", guard, ast_expr_str(a, dx), then);
    if (ac->path == AP_TMA || ac->path == AP_STAGED) {
        const char *tma = ac->cs.st && ac->cs.st->mv == MV_ADD_S2G ? "TMA reduce-adds" : "TMA stores";
        if (ac->path == AP_STAGED && b->j == n - 2)
            return arena_printf(a, "%s need non-negative coordinates; give the first row with at() (a 64-row chunk that "
                                   "starts above the tensor is then written by the threads, which skip the rows before "
                                   "it), or keep the index >= 0%s", tma, then);
        return arena_printf(a, "%s need non-negative coordinates; keep the index >= 0%s", tma, then);
    }
    if (tdim) {
        const char *what = ac->cs.moved.kind != TY_TILE ? "elements" : b->j == n - 2 ? "rows" : "columns";
        return arena_printf(a, "the index counts in %s of %" PRId64 " %s, and the %s before the tensor are skipped only "
                               "when the first one is given with at(); write at(...), or keep the index >= 0%s",
                            ac->cs.moved.kind == TY_TILE ? "tiles" : "vectors", b->c->unit, what, what, then);
    }
    return arena_printf(a, "%s; keep the index >= 0%s", guard, then);
}

static void report_bound(BCheck *b) {
    Cover *c = b->c;
    Arena *a = c->s->a;
    const Access *ac = b->ac;
    const CStore *cs = &ac->cs;
    const Symbol *t = cs->ix->u.index.base->sym;
    int n = cs->ix->u.index.nargs, j = b->j;
    Deps d = {.n = 0};
    launch_deps(c, &d, b->g, cs, 1, j);
    for (int i = 0; i < ac->nconds; i++) deps_of(&d, ac->cond[i], 0);
    const char *with = launch_str(c, &d);
    StrBuf at;
    sb_init(&at);
    for (int k = 0; k < c->nit; k++)
        sb_printf(&at, "%s%s%s = %" PRId64, k ? ", " : " (", c->it[k].sym->kind == SYM_AXIS ? "block." : "",
                  c->it[k].sym->name, b->vals[k]);
    if (c->nit) sb_putc(&at, ')');
    const char *where = arena_strdup(a, at.s ? at.s : "");
    sb_free(&at);
    bool past = b->start >= b->len;
    const char *slice = slice_str(a, t->name, n, j, b->start, b->start + c->unit);
    const Expr *dx = b->g->ts.dims[j];
    const char *dim = !past ? "" : dx->kind == EX_INT ? arena_printf(a, " (%" PRId64 ")", b->len)
                                                      : arena_printf(a, " (%s = %" PRId64 ")", ast_expr_str(a, dx), b->len);
    diag_error(c->s->d, cs->ix->u.index.args[j].span, "%sthe %s %s %s%s %s dimension %d of '%s'%s: %s", with, ac->noun,
               ac->verb, slice, where, past ? "past the end of" : "before the start of", j, t->name, dim,
               bound_why(a, b, past, n));
}

typedef struct BAccess {
    const Access *ac;
    const Arg *g;
    const Expr *wg_hi;          /* the number of consumer warpgroups where the access reads wg */
} BAccess;

/* where an access's ifs, loop ranges or indices read wg: the consumer warpgroups as an expression
 * (3, the most a block holds, in a rowwise kernel, whose lowering may add warpgroups), else NULL */
static const Expr *access_wg(Sema *s, const Access *ac) {
    const Symbol *wg = s->builtin[BI_WG];
    bool uses = expr_depends_on(ac->cs.ix, wg);
    for (int i = 0; i < ac->nconds; i++) uses |= expr_depends_on(ac->cond[i], wg);
    for (int f = 0; f < ac->cs.nfors; f++)
        uses |= expr_depends_on(ac->cs.fors[f]->u.for_.lo, wg) || expr_depends_on(ac->cs.fors[f]->u.for_.hi, wg);
    if (!uses) return NULL;
    Expr *e = ARENA_NEW(s->a, Expr);
    e->kind = EX_INT;
    e->ty = ty_int();
    e->is_const = true;
    e->cval = e->u.ival = s->sk->rowwise ? 3 : s->sk->consumers;
    return e;
}

/* one launch for one access: reports the first dimension it leaves at an end nothing checks */
static bool access_outside(Cover *c, void *ctx) {
    const BAccess *x = ctx;
    const Access *ac = x->ac;
    const Expr *ixe = ac->cs.ix;
    int n = ixe->u.index.nargs;
    for (int j = 0; j < n; j++) {
        const Expr *ix = ixe->u.index.args[j].lo;
        BCheck b = {.c = c, .ac = ac, .g = x->g, .j = j};
        c->at = is_at(ix);
        bound_guards(ac, j, n, c->at, &b.lo_ok, &b.hi_ok);
        if (b.lo_ok && b.hi_ok) continue;
        c->env.nv = 0;
        if (!eval(&c->env, x->g->ts.dims[j], &b.len, 0) || b.len < 1) continue;
        c->idx = c->at ? ix->u.call.args[0] : ix;
        c->unit = store_unit(&ac->cs, j, n);
        c->evals = 0;
        c->unknown = false;
        Deps d = {.n = 0};
        deps_of(&d, c->idx, 0);
        for (int i = 0; i < ac->nconds; i++) deps_of(&d, ac->cond[i], 0);
        if (!iters_of(c, &ac->cs, &d)) continue;
        if (x->wg_hi && c->nit < MAX_VARS) { /* wg first: the loops' ranges may read it */
            memmove(c->it + 1, c->it, sizeof *c->it * (size_t)c->nit++);
            c->it[0] = (Iter){c->s->builtin[BI_WG], NULL, x->wg_hi};
        }
        bounds_enum(&b, 0);
        if (b.found) {
            report_bound(&b);
            return true;
        }
    }
    return false;
}

/* Every store, thread-issued load and element read whose index can fall outside its tensor at an
 * end the emitted code does not check, in some legal launch, is an error (docs/language.md,
 * section 15, "Indices stay inside their tensors"). The launches are those of the coverage check;
 * an access under an if is checked where tkc can evaluate the conditions (then only the bindings
 * under which it runs count), and not at all where it cannot. */
static void check_bounds(Sema *s) {
    SemaKernel *sk = s->sk;
    AccessVec acc = {0};
    BCollect b = {.s = s, .out = &acc};
    for (int i = 0; i < sk->lets.n; i++) {
        b.bk = BK_SETUP;
        elem_reads(&b, sk->lets.v[i]->u.let.e, 0);
    }
    for (int k = 0; k < BK_COUNT; k++) {
        if (!sk->blocks[k]) continue;
        b.bk = (BlockKind)k;
        bcollect(&b, &sk->blocks[k]->u.block.body);
    }
    if (!acc.n) return;
    Cover c = {.s = s, .sk = sk};
    c.env.dims = ARENA_NEW_N(s->a, int64_t, sk->dims.n + 1);
    c.free = ARENA_NEW_N(s->a, bool, sk->dims.n + 1);
    free_dims(sk, c.free);
    for (int i = 0; i < acc.n; i++) {
        const Symbol *t = acc.v[i].cs.ix->u.index.base->sym;
        const Arg *g = NULL;
        for (int k = 0; k < sk->args.n; k++)
            if (sk->args.v[k]->sym == t) g = sk->args.v[k];
        if (!g || g->ts.ndims != acc.v[i].cs.ix->u.index.nargs) continue;
        I64Vec ks = {0};
        launch_consts(&c, &ks, NULL, &acc.v[i].cs, 1);
        BAccess x = {&acc.v[i], g, access_wg(s, &acc.v[i])};
        for_each_launch(&c, &ks, access_outside, &x);
        if (c.env.work > WORK_CAP) return;
    }
}

void check_outputs(Sema *s) {
    SemaKernel *sk = s->sk;
    if (!sk->grid) return;
    CStoreVec stores = {0};
    Stmt *fors[MAX_VARS];
    for (int b = 0; b < BK_COUNT; b++)
        if (sk->blocks[b]) collect(s, &stores, &sk->blocks[b]->u.block.body, (BlockKind)b, fors, 0);
    Cover c = {.s = s, .sk = sk};
    c.env.dims = ARENA_NEW_N(s->a, int64_t, sk->dims.n + 1);
    c.free = ARENA_NEW_N(s->a, bool, sk->dims.n + 1);
    free_dims(sk, c.free);
    for (int i = 0; i < sk->args.n; i++) {
        const Arg *g = sk->args.v[i];
        if (g->mode != ARG_OUT || !g->ts.ndims || !g->sym) continue;
        bool stored = false;
        for (int k = 0; k < stores.n; k++) stored |= stores.v[k].ix->u.index.base->sym == g->sym;
        if (is_zeroed(g)) continue; /* the launcher clears it: what no store writes is 0 */
        if (!stored) {
            diag_error(s->d, g->span,
                       "output '%s' is never stored: no statement of kernel '%s' writes it, so after a launch it holds "
                       "whatever the memory held; store into it in store or finish (%s[...] <- tile), or declare it "
                       "'zeroed' for an output of zeros",
                       g->name, sk->k->name, g->name);
            continue;
        }
        check_output(&c, g, stores.v, stores.n);
    }
    check_bounds(s);
}
