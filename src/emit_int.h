/* emit_int.h - the CUDA emitter's private interface, shared by its files (emit_cuda.c and those
 * it names): the emitter state Em, the register context Ctx, the line macros L, IN and OUT, and
 * the helpers more than one file uses, grouped by the file that defines them. Not for use
 * outside the emitter: the public interface is emit.h. */
#ifndef TKC_EMIT_INT_H
#define TKC_EMIT_INT_H

#include "api.h"
#include "emit.h"
#include "templates.h"

typedef struct Frag {
    const char *file, *name;
} Frag;
typedef Vec(Frag) FragVec;
enum { STEP_NONE, STEP_FIRST, STEP_LOOP };

typedef struct Hoisted {
    const PExpr *expr;           /* the reduction call, or the tile / per_row vector division */
    const char *name;           /* the small array that holds its values */
} Hoisted;

typedef struct Em {
    const EmitOptions *o;
    Arena *a;
    StrBuf *b;                  /* where code goes now */
    const PlanKernel *pk;
    const SemaKernel *sk;
    FragVec frags;              /* template fragments needed, in first-use order */
    int tmp;                    /* counter for temporaries */
    int mode;                   /* what is being emitted: STEP_FIRST, STEP_LOOP or STEP_NONE */
    const char *slot;           /* setup_stages = 2: the copy of the setup tiles the code being emitted reads */
    const PlanTail *nar;        /* set while the narrow last step is emitted: the score tile reads as its copy */
    /* values hoisted out of the statement being emitted: row and column reductions, and the
     * reciprocals of per_row divisors; elem() reads them by expression (as many as the
     * statement has: a growable arena vector) */
    Vec(Hoisted) hoisted;
    /* set while a rowwise statement whose rand() offsets are multiples of 4 is emitted: the four
     * elements of a group share one Philox call (tkc_philox_uniform_gw) */
    bool rand_aligned;
    /* emitting one variant of a dispatched program: its namespace (tkc_v_NAME), else NULL. Its
     * launchers are plain C++ functions there (emit_dispatch.c writes the extern "C" ones), and an
     * entry's calls name it (the C header's extern "C" launchers of the same names may be in scope) */
    const char *ns;
} Em;

#define L(...) sb_line(e->b, __VA_ARGS__)
#define IN() (e->b->indent++)
#define OUT() (e->b->indent--)

typedef enum { CX_TILE, CX_ROWVEC, CX_COLVEC, CX_SCALAR } CtxKind;

typedef struct Ctx {
    CtxKind kind;
    int cols;           /* tile: columns of the destination */
    int rwg;            /* rows per warpgroup */
    bool per_wg;
    const char *i;      /* the index expression (a variable name or "(2 * p + 1)") */
} Ctx;

/* emit_cuda.c */
void need(Em *e, const char *file, const char *frag);
void emit_cuda_head(StrBuf *out, const Plan *p, const EmitOptions *o, const char *api_note);
/* ns: a dispatched program's variant namespace (tkc_v_NAME) the body goes into, or NULL */
void emit_cuda_body(Arena *a, StrBuf *out, const Plan *p, const Program *prog, const EmitOptions *o, FragVec *shared,
                    const char *ns);
void emit_cuda_shared(Arena *a, StrBuf *out, const FragVec *frags);
char *emit_cuda_lines(char *text);
/* the .cu of a program compiled once (emit_cuda, in emit_dispatch.c, calls it without --dispatch) */
char *emit_cuda_single(Arena *a, const Plan *p, const Program *prog, const EmitOptions *o);
const char *fmt_float(Arena *a, double v);
void kernel_params(Em *e, StrBuf *b, bool decl);
/* emit_launch.c: `int device`, `int sms` of the current device, its SM count read once per device
 * into the launcher's `static std::atomic<int> sm_count[64]` (declared by the caller); `who` names
 * the launcher whose tkc_WHO_cuda takes a CUDA error */
void emit_sm_count(Em *e, const char *who);
/* emit_entry.c */
void emit_entry_launcher(Em *e, const PlanEntry *pe);

/* emit_elem.c */
const char *scalar_str(Em *e, const PExpr *x, bool host);
int rows_wg(const PlanKernel *pk, const Type *t);
int frag_count(const PlanKernel *pk, const Type *t);
bool is16(DType d);
const char *row_expr(Em *e, const Ctx *c);
const char *col_expr(Em *e, const Ctx *c, int col0);
const char *parent_index(Em *e, const Ctx *c, int pcols, int col0);
const char *elem_str(Em *e, const PExpr *x, const Ctx *c);
Ctx tile_ctx(const PlanKernel *pk, const Type *t, const char *i);
const Type *value_type(Em *e, const PExpr *x);
void hoist_row_values(Em *e, const PExpr *x);
const char *reg_decl(Em *e, const Symbol *y);
void emit_reg_assign(Em *e, const PStmt *st, const PExpr *lhs, const char *decl_name, const Type *dt);

/* emit_store.c */
const char *move_coord(Em *e, const PExpr *x, int size);
const char *move_coord_plus(Em *e, const PExpr *x, int size, int add);
void emit_vec_load(Em *e, const PStmt *st);
void emit_rows_load(Em *e, const PStmt *st);
void emit_vec_from_shared(Em *e, const PStmt *st);
void emit_move_s2r(Em *e, const PlanMove *m);
void emit_move_r2s(Em *e, const PlanMove *m);
void emit_move_relayout(Em *e, const PlanMove *m);
void emit_store(Em *e, const POp *o);

/* emit_ops.c */
const char *buf_addr(Em *e, int buf, bool prev);
const char *group_bar(Em *e, int g, bool full, bool prev);
void emit_op(Em *e, const POp *o);
void line_to_tk(Em *e, Span sp);
void line_back(Em *e);
void emit_ops(Em *e, const POpList *ops);
void emit_op_range(Em *e, const POpList *ops, int from, int to);

/* emit_launch.c */
void emit_launcher(Em *e);

#endif
