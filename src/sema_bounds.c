/* sema_bounds.c - accesses outside their tensors: a store, atomic add, thread-issued load or
 * element read whose index falls outside its tensor in some legal launch, at an end of a dimension
 * the emitted code does not check (bound_guards gives the code's checks per path), is an error.
 * The launches and the evaluation are sema_cover.c's (sema_cover_int.h). Part of the semantic
 * checks (sema_int.h); sema.c runs it after check_outputs, on a kernel that passed every other check. */
#include <inttypes.h>
#include <string.h>

#include "sema_cover_int.h"

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
            if (cover_is_store(st)) {
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
            if (!cover_eval(&c->env, b->ac->cond[i], &v, 0)) {
                c->unknown = true; /* an if tkc cannot decide: the access is not checked */
                return;
            }
            if ((v != 0) != b->ac->then[i]) return; /* the access does not run */
        }
        if (!cover_eval(&c->env, c->idx, &v, 0)) {
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
    if ((c->it[k].lo && !cover_eval(&c->env, c->it[k].lo, &lo, 0)) || !cover_eval(&c->env, c->it[k].hi, &hi, 0)) {
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
    cover_launch_deps(c, &d, b->g, cs, 1, j);
    for (int i = 0; i < ac->nconds; i++) cover_deps_of(&d, ac->cond[i], 0);
    const char *with = cover_launch_str(c, &d);
    StrBuf at;
    sb_init(&at);
    for (int k = 0; k < c->nit; k++)
        sb_printf(&at, "%s%s%s = %" PRId64, k ? ", " : " (", c->it[k].sym->kind == SYM_AXIS ? "block." : "",
                  c->it[k].sym->name, b->vals[k]);
    if (c->nit) sb_putc(&at, ')');
    const char *where = arena_strdup(a, at.s ? at.s : "");
    sb_free(&at);
    bool past = b->start >= b->len;
    const char *slice = cover_slice_str(a, t->name, n, j, b->start, b->start + c->unit);
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
        c->at = cover_is_at(ix);
        bound_guards(ac, j, n, c->at, &b.lo_ok, &b.hi_ok);
        if (b.lo_ok && b.hi_ok) continue;
        c->env.nv = 0;
        if (!cover_eval(&c->env, x->g->ts.dims[j], &b.len, 0) || b.len < 1) continue;
        c->idx = c->at ? ix->u.call.args[0] : ix;
        c->unit = cover_store_unit(&ac->cs, j, n);
        c->evals = 0;
        c->unknown = false;
        Deps d = {.n = 0};
        cover_deps_of(&d, c->idx, 0);
        for (int i = 0; i < ac->nconds; i++) cover_deps_of(&d, ac->cond[i], 0);
        if (!cover_iters_of(c, &ac->cs, &d)) continue;
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
void check_bounds(Sema *s) {
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
    cover_free_dims(sk, c.free);
    for (int i = 0; i < acc.n; i++) {
        const Symbol *t = acc.v[i].cs.ix->u.index.base->sym;
        const Arg *g = NULL;
        for (int k = 0; k < sk->args.n; k++)
            if (sk->args.v[k]->sym == t) g = sk->args.v[k];
        if (!g || g->ts.ndims != acc.v[i].cs.ix->u.index.nargs) continue;
        I64Vec ks = {0};
        cover_launch_consts(&c, &ks, NULL, &acc.v[i].cs, 1);
        BAccess x = {&acc.v[i], g, access_wg(s, &acc.v[i])};
        cover_for_each_launch(&c, &ks, access_outside, &x);
        if (c.env.work > WORK_CAP) return;
    }
}
