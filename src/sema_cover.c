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
 *     tensor in some legal launch, at an end of a dimension the emitted code does not check, is
 *     an error (sema_bounds.c, check_bounds, which sema.c runs after check_outputs, on this file's
 *     evaluator and launches: sema_cover_int.h).
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

#include "sema_cover_int.h"



static bool fits32(int64_t v) { return v >= -(int64_t)INT32_MAX && v <= INT32_MAX; }

/* Evaluates an integer (or bool) expression in env. False when it cannot: a scalar argument, a
 * float, a tensor element, an unbound variable, a division by 0, or a value past 32 bits (the
 * kernel computes in int; the launches tried are small, so this only gives up). */
bool cover_eval(Env *env, const Expr *e, int64_t *out, int depth) {
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
            return cover_eval(env, y->init, out, depth + 1);
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
        if (!cover_eval(env, e->u.un.e, &a, depth + 1)) return false;
        *out = e->u.un.op == UN_NEG ? -a : !a;
        return true;
    case EX_COND:
        if (!cover_eval(env, e->u.cond.c, &a, depth + 1)) return false;
        return cover_eval(env, a ? e->u.cond.a : e->u.cond.b, out, depth + 1);
    case EX_BINARY: {
        BinOp op = e->u.bin.op;
        if (!cover_eval(env, e->u.bin.l, &a, depth + 1)) return false;
        if (op == BIN_AND && !a) return *out = 0, true;
        if (op == BIN_OR && a) return *out = 1, true;
        if (!cover_eval(env, e->u.bin.r, &b, depth + 1)) return false;
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
            if (!cover_eval(env, e->u.call.args[0], &a, depth + 1) || !cover_eval(env, e->u.call.args[1], &b, depth + 1)) return false;
            if (e->fn == FN_CDIV) {
                if (b <= 0) return false;
                *out = (a + b - 1) / b;
            } else {
                *out = e->fn == FN_MIN ? (a < b ? a : b) : (a > b ? a : b);
            }
            return fits32(*out);
        }
        if (e->fn == FN_I32 && n == 1) return cover_eval(env, e->u.call.args[0], out, depth + 1);
        return false;
    }
    default: return false;
    }
}

/* ---- what an expression depends on -------------------------------------------------------- */

static void deps_add(Deps *d, const Symbol *y) {
    for (int i = 0; i < d->n; i++)
        if (d->v[i] == y) return;
    if (d->n == (int)(sizeof d->v / sizeof *d->v)) d->overflow = true;
    else d->v[d->n++] = y;
}

/* the grid axes, pipeline and loop variables and dimensions e reads, through lets */
void cover_deps_of(Deps *d, const Expr *e, int depth) {
    if (depth > MAX_DEPTH) d->overflow = true;
    if (!e || depth > MAX_DEPTH || e->is_const) return;
    switch (e->kind) {
    case EX_NAME:
        if (!e->sym) return;
        if (e->sym->kind == SYM_LOOPVAR || e->sym->kind == SYM_FORVAR || e->sym->kind == SYM_DIM) deps_add(d, e->sym);
        else if (e->sym->kind == SYM_LET && !e->sym->is_const) cover_deps_of(d, e->sym->init, depth + 1);
        return;
    case EX_MEMBER:
        if (e->sym && e->sym->kind == SYM_AXIS) deps_add(d, e->sym);
        return;
    case EX_TRANSPOSE: cover_deps_of(d, e->u.tr.base, depth + 1); return;
    case EX_INDEX:
        cover_deps_of(d, e->u.index.base, depth + 1);
        for (int i = 0; i < e->u.index.nargs; i++) {
            cover_deps_of(d, e->u.index.args[i].lo, depth + 1);
            cover_deps_of(d, e->u.index.args[i].hi, depth + 1);
        }
        return;
    case EX_CALL:
        for (int i = 0; i < e->u.call.nargs; i++) cover_deps_of(d, e->u.call.args[i], depth + 1);
        return;
    case EX_BINARY: cover_deps_of(d, e->u.bin.l, depth + 1); cover_deps_of(d, e->u.bin.r, depth + 1); return;
    case EX_UNARY: cover_deps_of(d, e->u.un.e, depth + 1); return;
    case EX_COND:
        if (e->u.cond.c->is_const) {
            cover_deps_of(d, e->u.cond.c->cval ? e->u.cond.a : e->u.cond.b, depth + 1);
            return;
        }
        cover_deps_of(d, e->u.cond.c, depth + 1);
        cover_deps_of(d, e->u.cond.a, depth + 1);
        cover_deps_of(d, e->u.cond.b, depth + 1);
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


/* the iteration variables in d (what the expressions evaluated at a store read) and those their
 * ranges depend on, into c->it, outermost first; false if there are too many */
bool cover_iters_of(Cover *c, const CStore *cs, Deps *d) {
    const SemaKernel *sk = c->sk;
    /* the innermost ranges first: a loop's bounds may read the variables outside it */
    for (int f = cs->nfors - 1; f >= 0; f--) {
        const Stmt *fs = cs->fors[f];
        if (!deps_has(d, fs->u.for_.sym)) continue;
        cover_deps_of(d, fs->u.for_.lo, 0);
        cover_deps_of(d, fs->u.for_.hi, 0);
    }
    if (sk->loopvar && deps_has(d, sk->loopvar)) cover_deps_of(d, sk->pipe->u.pipe.trips, 0);
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
    cover_deps_of(&d, idx, 0);
    return cover_iters_of(c, cs, &d);
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
        if (++c->evals > ENUM_CAP || c->env.work > WORK_CAP || !cover_eval(&c->env, c->idx, &v, 0)) {
            c->unknown = true;
            return;
        }
        int64_t start = c->at ? v : v * c->unit;
        mark_range(c, start, start + c->unit);
        return;
    }
    int64_t lo = 0, hi;
    if ((c->it[k].lo && !cover_eval(&c->env, c->it[k].lo, &lo, 0)) || !cover_eval(&c->env, c->it[k].hi, &hi, 0)) {
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
int64_t cover_store_unit(const CStore *cs, int j, int n) {
    if (cs->moved.kind == TY_TILE) {
        if (j == n - 2) return cs->moved.rows;
        if (j == n - 1) return cs->moved.cols;
        return 1;
    }
    return j == n - 1 ? cs->moved.rows : 1;
}


/* marks the indices of dimension j (length len) that store cs reaches; false if it cannot tell
 * (then every index counts as reached) */
static bool store_reach(Cover *c, const CStore *cs, int j, int n) {
    const Expr *ix = cs->ix->u.index.args[j].lo;
    c->at = cover_is_at(ix);
    c->idx = c->at ? ix->u.call.args[0] : ix;
    c->unit = cover_store_unit(cs, j, n);
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
        case ST_ASSIGN: cover_deps_of(d, st->u.assign.lhs, 0); cover_deps_of(d, st->u.assign.rhs, 0); break;
        case ST_IF:
            cover_deps_of(d, st->u.if_.cond, 0);
            stmt_deps(d, &st->u.if_.then_s);
            stmt_deps(d, &st->u.if_.else_s);
            break;
        case ST_FOR:
            cover_deps_of(d, st->u.for_.lo, 0);
            cover_deps_of(d, st->u.for_.hi, 0);
            stmt_deps(d, &st->u.for_.body);
            break;
        case ST_LET: cover_deps_of(d, st->u.let.e, 0); break;
        case ST_EXPR: cover_deps_of(d, st->u.expr.e, 0); break;
        case ST_SCRATCH: break;  /* entries only */
        }
    }
}

/* A free dimension sizes only outputs: it is in no input's shape, and no expression of the kernel
 * but a requirement reads it (as MB in `out S: fp32[MB, 64]` beside `grid (m: cdiv(M, 128))`
 * and `require MB * 128 >= M`). Its size is the caller's to match to the grid, so the launches
 * tried give it its smallest legal value (set_free). */
void cover_free_dims(const SemaKernel *sk, bool *free) {
    Deps d = {.n = 0};
    for (int i = 0; i < sk->args.n; i++) {
        const Arg *g = sk->args.v[i];
        if (g->mode == ARG_OUT) continue;
        for (int j = 0; j < g->ts.ndims; j++) cover_deps_of(&d, g->ts.dims[j], 0);
    }
    for (int i = 0; i < sk->axes.n; i++) cover_deps_of(&d, sk->axes.v[i]->extent, 0);
    if (sk->pipe) cover_deps_of(&d, sk->pipe->u.pipe.trips, 0);
    for (int i = 0; i < sk->lets.n; i++) cover_deps_of(&d, sk->lets.v[i]->u.let.e, 0);
    for (int b = 0; b < BK_COUNT; b++)
        if (sk->blocks[b]) stmt_deps(&d, &sk->blocks[b]->u.block.body);
    for (int i = 0; i < sk->dims.n; i++) free[i] = !d.overflow && !deps_has(&d, sk->dims.v[i]);
}

/* gives each free dimension the smallest value (1 .. 65536, a multiple of its alignment) for which
 * the requirements that name it hold; false if there is none */
static bool set_free(Cover *c, const bool *free) {
    const SemaKernel *sk = c->sk;
    const int nr = sk->requires.n;
    c->env.nv = 0;
    if (!c->req_names && nr) {
        c->req_names = ARENA_NEW_N(c->s->a, bool, (size_t)sk->dims.n * (size_t)nr);
        for (int r = 0; r < nr; r++) {
            Deps d = {.n = 0};
            cover_deps_of(&d, sk->requires.v[r], 0);
            for (int i = 0; i < sk->dims.n; i++) c->req_names[i * nr + r] = free[i] && deps_has(&d, sk->dims.v[i]);
        }
    }
    for (int i = 0; i < sk->dims.n; i++)
        if (free[i]) c->env.dims[i] = dim_align(sk, sk->dims.v[i]);
    for (int i = 0; i < sk->dims.n; i++) {
        if (!free[i]) continue;
        int64_t al = dim_align(sk, sk->dims.v[i]);
        bool ok = false;
        for (int64_t v = al; v <= 65536 && !ok; v += al) {
            c->env.dims[i] = v;
            ok = true;
            for (int r = 0; r < nr && ok; r++) {
                if (!c->req_names[i * nr + r]) continue;
                int64_t x;
                ok = cover_eval(&c->env, sk->requires.v[r], &x, 0) && x;
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
        if (!cover_eval(&c->env, sk->axes.v[i]->extent, &e, 0) || e < 1) return false;
        tiles *= e;
        if (tiles > INT32_MAX) return false;
    }
    for (int i = 0; i < sk->requires.n; i++) {
        Deps d = {.n = 0};
        cover_deps_of(&d, sk->requires.v[i], 0);
        if (!d.n && !d.overflow) continue; /* scalars and params only: assumed satisfiable */
        int64_t v;
        if (!cover_eval(&c->env, sk->requires.v[i], &v, 0) || !v) return false;
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

bool cover_is_store(const Stmt *st) {
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
        } else if (cover_is_store(st)) {
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
const char *cover_slice_str(Arena *a, const char *name, int n, int j, int64_t lo, int64_t hi) {
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
const char *cover_launch_str(Cover *c, const Deps *d) {
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
void cover_launch_deps(Cover *c, Deps *d, const Arg *g, const CStore *stores, int ns, int j) {
    cover_deps_of(d, g->ts.dims[j], 0);
    for (int i = 0; i < ns; i++) {
        if (stores[i].ix->u.index.base->sym != g->sym) continue;
        const Expr *ix = stores[i].ix->u.index.args[j].lo;
        Cover probe = *c;
        if (!store_iters(&probe, &stores[i], cover_is_at(ix) ? ix->u.call.args[0] : ix)) continue;
        cover_deps_of(d, ix, 0);
        for (int k = 0; k < probe.nit; k++) {
            cover_deps_of(d, probe.it[k].lo, 0);
            cover_deps_of(d, probe.it[k].hi, 0);
        }
    }
    for (int i = 0; i < c->sk->requires.n; i++) {
        Deps r = {.n = 0};
        cover_deps_of(&r, c->sk->requires.v[i], 0);
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
    if (!cover_eval(&c->env, g->ts.dims[j], &len, 0) || len < 1 || len > DIM_CAP) return false;
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
    cover_launch_deps(c, &d, g, stores, ns, j);
    const char *with = cover_launch_str(c, &d);
    int n = g->ts.ndims;
    diag_error(s->d, g->span, "output '%s' is not fully written: %sno store writes %s, so it keeps whatever the memory held",
               g->name, *with ? with : "for every launch, ", cover_slice_str(a, g->name, n, j, lo, hi));
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
                           : whole       ? arena_printf(a, "this store writes only %s", cover_slice_str(a, g->name, n, j, first, last))
                                         : arena_printf(a, "this store writes parts of %s", cover_slice_str(a, g->name, n, j, first, last));
        /* the common forms: a grid axis, a constant tile index */
        const char *why = "";
        const Expr *base = cover_is_at(ix) ? NULL : ix;
        if (base && base->kind == EX_MEMBER && base->sym && base->sym->kind == SYM_AXIS) {
            const Axis *ax = c->sk->axes.v[base->sym->index];
            int64_t e = 0;
            c->env.nv = 0;
            if (cover_eval(&c->env, ax->extent, &e, 0)) {
                int64_t u = cover_store_unit(cs, j, n);
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
            int64_t u = cover_store_unit(cs, j, n);
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
            if (to && (!from || cover_eval(&c->env, from, &l, 0)) && cover_eval(&c->env, to, &h, 0))
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
void cover_launch_consts(Cover *c, I64Vec *ks, const Symbol *sym, const CStore *cs, int ns) {
    const SemaKernel *sk = c->sk;
    for (int i = 0; i < sk->axes.n; i++) consts_of(ks, c->s->a, sk->axes.v[i]->extent, 0);
    for (int i = 0; i < sk->requires.n; i++) consts_of(ks, c->s->a, sk->requires.v[i], 0);
    if (sk->pipe) consts_of(ks, c->s->a, sk->pipe->u.pipe.trips, 0);
    for (int i = 0; i < ns; i++) {
        if (sym && cs[i].ix->u.index.base->sym != sym) continue;
        int n = cs[i].ix->u.index.nargs;
        consts_of(ks, c->s->a, cs[i].ix, 0);
        for (int j = 0; j < n; j++) vec_push(c->s->a, ks, cover_store_unit(&cs[i], j, n));
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
bool cover_for_each_launch(Cover *c, const I64Vec *ks, bool (*fn)(Cover *c, void *ctx), void *ctx) {
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
    cover_launch_consts(c, &ks, g->sym, stores, ns);
    OutCheck o = {g, stores, ns};
    return cover_for_each_launch(c, &ks, output_gap, &o);
}

/* the first run-time scalar argument e reads (through lets), or NULL */
static const Symbol *scalar_read(const Expr *e, int depth) {
    if (!e || depth > MAX_DEPTH || e->is_const) return NULL;
    const Symbol *r = NULL;
    switch (e->kind) {
    case EX_NAME:
        if (e->sym && e->sym->kind == SYM_SCALAR) return e->sym;
        if (e->sym && e->sym->kind == SYM_LET && !e->sym->is_const) return scalar_read(e->sym->init, depth + 1);
        return NULL;
    case EX_TRANSPOSE: return scalar_read(e->u.tr.base, depth + 1);
    case EX_INDEX:
        for (int i = 0; i < e->u.index.nargs && !r; i++) {
            r = scalar_read(e->u.index.args[i].lo, depth + 1);
            if (!r) r = scalar_read(e->u.index.args[i].hi, depth + 1);
        }
        return r;
    case EX_CALL:
        for (int i = 0; i < e->u.call.nargs && !r; i++) r = scalar_read(e->u.call.args[i], depth + 1);
        return r;
    case EX_BINARY:
        r = scalar_read(e->u.bin.l, depth + 1);
        return r ? r : scalar_read(e->u.bin.r, depth + 1);
    case EX_UNARY: return scalar_read(e->u.un.e, depth + 1);
    case EX_COND:
        r = scalar_read(e->u.cond.c, depth + 1);
        if (!r) r = scalar_read(e->u.cond.a, depth + 1);
        return r ? r : scalar_read(e->u.cond.b, depth + 1);
    default: return NULL;
    }
}

/* a store into an out tensor whose index reads a scalar argument: which elements it writes is
 * decided at launch, so the coverage check counts it as writing everything it could; say so */
static void warn_scalar_indices(Sema *s, const Arg *g, const CStore *stores, int ns) {
    for (int k = 0; k < ns; k++) {
        const Expr *ix = stores[k].ix;
        if (ix->u.index.base->sym != g->sym) continue;
        const Symbol *y = NULL;
        for (int j = 0; j < ix->u.index.nargs && !y; j++) y = scalar_read(ix->u.index.args[j].lo, 0);
        if (!y) continue;
        diag_warning(s->d, ix->span,
                     "tkc cannot show that the stores write all of '%s': this index reads the run-time scalar '%s', so "
                     "the launch decides which elements it writes, and an element no store writes keeps what the "
                     "memory held (declare '%s' zeroed, or index it by grid axes, dimensions and params)",
                     g->name, y->name, g->name);
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
    cover_free_dims(sk, c.free);
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
        warn_scalar_indices(s, g, stores.v, stores.n);
        check_output(&c, g, stores.v, stores.n);
    }
}
