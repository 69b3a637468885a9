/* sema_cover_int.h - what the two halves of the launch-evaluating checks share: sema_cover.c
 * (the outputs' coverage, with the evaluator and the launch enumeration both use) and
 * sema_bounds.c (accesses outside their tensors). Internal to those two files. */
#ifndef TKC_SEMA_COVER_INT_H
#define TKC_SEMA_COVER_INT_H

#include "sema_int.h"

enum {
    MAX_VARS = 16,              /* iteration variables bound at once (axes, pipeline, loops) */
    MAX_DEPTH = 64,             /* let nesting followed by the evaluator */
    DIM_CAP = 1 << 22,          /* longest dimension checked (indices) */
    ENUM_CAP = 1 << 17,         /* values bound and indices evaluated per store and dimension */
    CAND_MAX = 160,             /* candidate values per dimension */
    WORK_CAP = 40000000,        /* evaluations and marked indices per kernel */
};

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


typedef struct Deps {
    const Symbol *v[256];
    int n;
    bool overflow;      /* too many, or nested too deep to follow: the list may be incomplete */
} Deps;

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
    /* per free dimension i and requirement r, [i * requires + r]: r names dimension i (set_free's
     * question for every value it tries, answered once); NULL until set_free first runs */
    bool *req_names;
} Cover;

static inline bool cover_is_at(const Expr *e) { return e && e->kind == EX_CALL && e->fn == FN_AT && e->u.call.nargs == 1; }

/* sema_cover.c: the evaluator, dependencies, iteration variables and launches */
void cover_deps_of(Deps *d, const Expr *e, int depth);
bool cover_eval(Env *env, const Expr *e, int64_t *out, int depth);
bool cover_for_each_launch(Cover *c, const I64Vec *ks, bool (*fn)(Cover *c, void *ctx), void *ctx);
void cover_free_dims(const SemaKernel *sk, bool *free);
bool cover_is_store(const Stmt *st);
bool cover_iters_of(Cover *c, const CStore *cs, Deps *d);
void cover_launch_consts(Cover *c, I64Vec *ks, const Symbol *sym, const CStore *cs, int ns);
void cover_launch_deps(Cover *c, Deps *d, const Arg *g, const CStore *stores, int ns, int j);
const char *cover_launch_str(Cover *c, const Deps *d);
const char *cover_slice_str(Arena *a, const char *name, int n, int j, int64_t lo, int64_t hi);
int64_t cover_store_unit(const CStore *cs, int j, int n);

#endif
