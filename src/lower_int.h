/* lower_int.h - lowering's private interface, shared by its files (lower.c and those it names):
 * the Lower state, the types and helpers more than one file uses, and each file's entry points,
 * grouped by the file that defines them. Not for use outside lowering: the public interface is
 * plan.h. */
#ifndef TKC_LOWER_INT_H
#define TKC_LOWER_INT_H

#include "plan.h"

/* the ifs around a statement, innermost first: which branch of which if */
typedef struct IfPath {
    const Stmt *ifst;
    bool els;
    const struct IfPath *up;
} IfPath;

typedef struct LoadCond {
    const Stmt *st;     /* a TMA load under an if of the load or setup block */
    const Expr *cond;   /* the conjunction of the conditions around it */
    const IfPath *path; /* the branches it is in (two loads in different branches of one if never both run) */
} LoadCond;

/* a statement and its translation (lower_ps): one tree per statement, so the plan's references to
 * it (stores, loads) are the same object */
typedef struct Translated {
    const Stmt *st;
    PStmt *ps;
} Translated;

typedef struct Lower {
    Arena *a;
    Diag *d;
    SemaKernel *sk;
    PlanKernel *pk;
    int errors0;
    Vec(LoadCond) load_conds;
    Vec(Translated) translated;
    bool recip_noted;   /* plan_recips said it once for the kernel */
    int colpicks;       /* plan_colpicks: the row sums it turned into column reads */
    const PStmt *colpick_first; /* the first statement with one (the plan's note names it) */
} Lower;

typedef struct SymSet {
    Symbol **v;
    int n, cap;
} SymSet;

/* shared buffers and registers an op touches */
typedef struct Effects {
    SymSet rd, wr, bufs;
    SymSet wbufs;       /* shared tiles the op writes (consumer writes of scratch tiles) */
} Effects;

/* lower.c */
void lower_note(Lower *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
POp *pop_new(Lower *L, POpKind k);
int buf_of_sym(PlanKernel *pk, const Symbol *y);
PExpr *operand_root(PExpr *e, bool *trans, bool *prev, int *r0, int *c0);
PStmt *lower_ps(Lower *L, const Stmt *st);
PStmt *ps_new(Lower *L, PStmtKind k, Span sp);
void symset_add(Lower *L, SymSet *s, Symbol *y);
bool symset_has(const SymSet *s, const Symbol *y);
bool is_regval(const Symbol *y);
void expr_reads(Lower *L, PExpr *e, SymSet *regs, SymSet *bufs);
Symbol *lhs_root(Expr *e);
void stmt_effects(Lower *L, PStmt *st, SymSet *rd, SymSet *wr, SymSet *bufs);
bool stmt_is_mma(const PStmt *st);
bool ast_stmt_is_mma(const Stmt *st);
bool stmts_have_mma(const StmtList *l);
int rows_per_wg(PlanKernel *pk, const Type *t);
int value_regs(PlanKernel *pk, const Type *t);
bool check_reg_shape(Lower *L, const Type *t, Span sp, const char *name);
const PExpr *load_cond(Lower *L, const Stmt *st);
bool loads_exclusive(const Lower *L, const Stmt *a, const Stmt *b);
bool loads_exclusive(const Lower *L, const Stmt *a, const Stmt *b);

/* lower_ops.c */
void lower_stmts(Lower *L, StmtList *l, POpList *out, BlockKind bk);
void op_effects(Lower *L, POp *o, Effects *e);
/* op o (an if or for: any op of its bodies) reads or writes shared tile y */
bool op_touches_tile(Lower *L, POp *o, const Symbol *y);
void estimate_regs(Lower *L);
/* registers ptxas adds for Philox calls made per element (rand(), keep() outside rowwise tiles): 0 or 48 */
int plan_philox_regs(const PlanKernel *pk);
void check_reg_budget(Lower *L);
/* lower_colred.c: does a uniform condition or bound read wg */
bool px_mentions_wg(const PExpr *x);
/* lower_ops.c: barriers every consumer warpgroup must reach, under a condition on wg (a user error) */
void check_wg_barriers(Lower *L);

/* lower_sched.c */
int group_of_buf(PlanKernel *pk, int buf);
bool op_nests_mma(const POp *o);
void schedule_compute(Lower *L, POpList *body, POpList *first, POpList *out, POpList *after);
void schedule_block(Lower *L, POpList *ops, bool setup_waited, const char *why);
bool ops_read_group(Lower *L, POpList *ops, int g);
int release_point(Lower *L, POpList *ops, int g);
void insert_release(Lower *L, POpList *ops, int at, int g);

/* pass_lookahead.c */
void plan_lookahead(Lower *L);

/* pass_colpick.c: marks a statement's column picks; the plan's note on them */
void plan_colpicks(Lower *L, PStmt *st);
void note_colpicks(Lower *L);

/* pass_block_loads.c */
void plan_block_loads(Lower *L);

/* pass_narrow_tail.c */
void plan_tail(Lower *L);

/* lower_mem.c */
void collect_g2s(StmtList *l, Stmt ***v, int *n, int *cap, Arena *a);
void lower_groups(Lower *L, POpList *compute_ops);
void collect_stores(Lower *L, POpList *ops, BlockKind bk);
void lower_staging(Lower *L);
void layout_smem(Lower *L);
int stmt_colred_regs(const PStmt *st);
void plan_store_wgs(Lower *L, const POpList *ops, int wg_depth);
void plan_colred(Lower *L);
void plan_arg_strides(Lower *L);
void plan_named_bars(Lower *L);

/* pass_overlap.c */
void fold_zero_fills(Lower *L);
void apply_overlap(Lower *L);

/* pass_peel.c */
void plan_peel(Lower *L);
void plan_release_arrivals(Lower *L);
void plan_coalesce_bars(Lower *L);
/* pass_merge_bars.c */
void plan_merge_bars(Lower *L);
/* pass_coalesce_bars.c: the block of its shared tile a register-to-shared move writes */
typedef struct PlanRegion { int r0, c0, r1, c1; } PlanRegion;
PlanRegion plan_write_region(const PlanKernel *pk, const POp *o);
bool plan_regions_overlap(PlanRegion a, PlanRegion b);

/* pass_wg_bars.c */
void plan_wg_branch_bars(Lower *L);

/* lower_support.c */
void check_support(Lower *L);
void lower_zeroed(Lower *L);

/* lower_rowwise.c */
void plan_rowwise(Lower *L);
void check_rowwise(Lower *L);
void plan_rowred(Lower *L);
void plan_no_producer(Lower *L);

/* pass_lazy_sums.c */
void plan_lazy_sums(Lower *L);

void buf_tile_layout(PlanBuf *b, int rows, int cols, int eb);

#endif
