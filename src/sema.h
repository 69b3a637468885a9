/* sema.h - semantic checks: names, types, shapes, memory spaces and the LCSF block rules.
 * sema_run() annotates the AST in place (types, symbols, constant values) and fills one
 * SemaKernel per kernel with what lowering needs in a form that is easy to walk.
 * Invariant: if diag->nerrors is unchanged after sema_run(), every expression has a type that
 * is not TY_ERROR and every rule in docs/language.md holds. */
#ifndef TKC_SEMA_H
#define TKC_SEMA_H

#include "ast.h"

/* how a `<-` or `+=` statement moves data (set on ST_ASSIGN statements) */
#define TK_MOVES(X)                                                                             \
    X(MV_NONE, "none", "not a move")                                                             \
    X(MV_G2S, "global->shared", "TMA tile load")                                                 \
    X(MV_S2G, "shared->global", "TMA tile store")                                                \
    X(MV_R2G, "reg->global", "store from registers (staged through shared memory for tiles)")    \
    X(MV_R2S, "reg->shared", "stmatrix / st.shared")                                             \
    X(MV_S2R, "shared->reg", "ldmatrix / ld.shared")                                             \
    X(MV_G2R, "global->reg", "direct load of a vector")                                          \
    X(MV_ADD_R2G, "reg+=>global", "atomic add of a register tile into global memory")            \
    X(MV_ADD_S2G, "shared+=>global", "TMA reduce-add of a shared tile into global memory")

typedef enum {
#define X(e, s, m) e,
    TK_MOVES(X)
#undef X
} MoveKind;
extern const char *const move_name[];

/* the order in which work tiles are visited */
typedef enum { ORDER_ROW_MAJOR, ORDER_SUPER_M, ORDER_SUPER_N } OrderKind;

/* statements of a consumer block specialised per warpgroup because their slices read wg (sema_wg.c) */
typedef struct SemaWgRun {
    Span span;          /* the statements, first to last */
    int consumers;      /* copies made */
} SemaWgRun;

typedef struct SemaKernel {
    Kernel *k;
    KItem *grid, *pipe;
    KItem *blocks[BK_COUNT];
    Vec(Symbol *) tensors;      /* global tensor args, in order */
    Vec(Symbol *) scalars;      /* scalar args, in order */
    Vec(Arg *) args;            /* all args, in order */
    Vec(Symbol *) dims;         /* run-time dims, in order of first appearance */
    Vec(Symbol *) shared;       /* shared decls, in order */
    Vec(Symbol *) regs;         /* reg decls, in order */
    Vec(KItem *) lets;          /* kernel-level lets, in order */
    Vec(Expr *) requires;       /* run-time conditions the launcher checks */
    Vec(Axis *) axes;
    Symbol *loopvar;
    /* evaluated options */
    bool persistent;
    int cluster;                /* blocks per cluster (1 or 2), along cluster_axis */
    int cluster_axis;           /* the folded grid axis if there is one (a cluster takes its pair of
                                   tiles), else the first */
    Span cluster_span;          /* the cluster option, for diagnostics */
    OrderKind order;
    int order_group;            /* G of super_m(G) / super_n(G) */
    int stages, consumers;
    bool overlap, pingpong;
    bool lookahead;             /* issue the next work tile's first product early (default on) */
    bool staging;               /* register tiles reach global memory through shared memory and TMA (default on) */
    int setup_stages;           /* copies of the setup tiles: 2 loads the next work tile's while this one runs */
    bool narrow_tail;           /* a last step with few unmasked columns runs on narrow copies (default on) */
    int producer_regs, consumer_regs;   /* 0 = let lowering choose */
    /* register tiles declared `rowwise`: every register value of the kernel is held in the row
     * layout (each warp whole rows, or a share of each row), not the wgmma accumulator layout */
    bool rowwise;
    /* `if (COND)` after the arguments is false for these params: the kernel is checked but not
     * compiled (lower_program leaves it out; a live entry call or a grad naming it is an error) */
    bool left_out;
    Span rowwise_span;
    /* blocks_per_sm = N on the grid: the blocks an SM holds at once in a kernel without a producer
     * (__launch_bounds__; ptxas fits the registers to it); 0 (or absent): the plan's estimate decides */
    int blocks_per_sm;
    Span blocks_span;
    /* row_values = N on the grid (rowwise kernels): a thread holds at most N values of a row before a
     * row is spread over more warps; 0 (or absent): the plan's default, 32 */
    int row_values;
    Span row_values_span;
    Span stages_span, consumers_span, regs_span;
    /* its source text and the values of the params it names (check_cache.c), or NULL */
    const char *check_key;
    Vec(SemaWgRun) wg_runs;     /* sema_wg.c: runs specialised per warpgroup, in block order */
} SemaKernel;

/* `grad FWD = K1, ...;` checked (sema_grad.c): FWD's inputs, outputs and the gradients of its
 * outputs (d<output>), then each chain kernel's outputs, bind the chain kernels' arguments by name;
 * the chain's outputs d<input> are the gradients of FWD's inputs */
typedef struct SemaGrad {
    const GradDecl *decl;
    SemaKernel *fwd;
    Vec(SemaKernel *) chain;
} SemaGrad;

/* a .tk name the generated code writes differently (sema_names.c) */
typedef struct SemaRename {
    Symbol *sym;            /* its name is now the generated code's spelling */
    const char *tk_name;    /* as the .tk spells it */
    const char *why;
    SemaKernel *sk;         /* the kernel that declares it; NULL: a param of the program */
} SemaRename;

/* an entry's call of a kernel (sema_entry.c): for each callee argument (in the callee's order) the
 * entry's expression - a tensor (an argument or a scratch, maybe `.T`: its last two dimensions
 * swapped) or a scalar value - and the callee's run-time dimensions bound from the tensors' shapes */
typedef struct SemaCallCheck {
    Expr *a, *b;        /* the two must be equal (two shapes bind one callee dimension) */
    const char *why;    /* "N of linear_bias: bias dimension 0 and Y dimension 1" */
} SemaCallCheck;

typedef struct SemaCall {
    struct SemaKernel *callee;
    Expr **args;            /* one per callee argument */
    Expr **dims;            /* one per callee run-time dimension (callee->dims), from the entry's shapes */
    Vec(SemaCallCheck) checks;
} SemaCall;

/* an entry: its signature as a SemaKernel (args, tensors, scalars, dims; no grid or blocks) */
typedef struct SemaEntry {
    SemaKernel *sk;
    Vec(Symbol *) scratch;  /* its scratch tensors, in order */
    Vec(TypeSpec *) scratch_ts; /* their shapes */
} SemaEntry;

/* the declared shape of tensor y of entry se (an argument's or a scratch's), or NULL (sema_entry.c) */
const TypeSpec *entry_shape(const SemaEntry *se, const Symbol *y);

typedef struct SemaResult {
    Vec(SemaKernel *) kernels;
    Vec(SemaEntry *) entries;
    Vec(SemaGrad) grads;
    Vec(SemaRename) renames;
} SemaResult;

typedef struct Define {
    const char *name;
    int64_t value;
    bool used;
    bool is_dtype;      /* -D NAME=DTYPE: for `type NAME` (the parser applies it), not a param */
    DType dtype;
} Define;

/* Parses "NAME=INTEGER" (a param) or "NAME=DTYPE" (a type) into out, the name copied into a
 * (or onto the heap, to free, when a is NULL); false when s is neither. */
bool define_parse(Arena *a, const char *s, Define *out);

/* Runs all checks. defines are the -D NAME=VALUE overrides; one that names no param is an
 * error. Returns false if any error was reported. */
bool sema_run(Arena *a, Diag *d, Program *p, Define *defines, int ndefines, SemaResult *out);

/* why the generated code cannot use a .tk name as written (sema_scope.c), or NULL */
const char *reserved_why(const char *name);

/* True if e (a typed expression) reads the symbol sym anywhere. */
bool expr_mentions(const Expr *e, const Symbol *sym);
/* expr_mentions, also through the initialisers of the lets e names */
bool expr_depends_on(const Expr *e, const Symbol *sym);

#endif
