/* plan.h - the kernel plan: every decision the CUDA emitter needs, made once by lowering
 * (lower.c), checked by the verifier (verify.c) and printed by plan_dump.c (tkc --emit=plan).
 * Roles and register split, the shared-memory map with swizzles, the load groups with their
 * mbarrier rings and byte counts, the TMA maps, the grid mapping, and the consumers' program
 * with explicit waits and releases.
 * Invariant: after plan_verify() succeeds the emitter never has to decide anything that could
 * fail; it only prints. */
#ifndef TKC_PLAN_H
#define TKC_PLAN_H

#include "ast.h"
#include "hopper.h"
#include "sema.h"

/* ---- the plan's values: typed expression trees ---------------------------------------------
 * Lowering translates each statement of the .tk into plan ops whose operands are these trees
 * (plan_expr.c): every node carries its type (dtype, shape, memory space, register layout),
 * every name its symbol, every constant its value; relayouts are already replaced by the
 * temporaries they fill, and the passes rewrite the trees. The emitter translates the nodes; it
 * never sees the syntax tree. */
typedef enum {
    PX_INT, PX_FLOAT,   /* constants (ival, fval) */
    PX_NAME,            /* a symbol: register value, shared tile, tensor, scalar, let, builtin */
    PX_MEMBER,          /* block.field: a block coordinate */
    PX_TRANSPOSE,       /* base.T (a product operand) */
    PX_INDEX,           /* base[ix...]: tensor coordinates, slices of tiles and vectors */
    PX_CALL,            /* fn(args) */
    PX_BINARY,          /* l bop r */
    PX_UNARY,           /* uop l */
    PX_COND,            /* cond ? l : r */
} PExprKind;

typedef struct PExpr PExpr;

typedef struct PIndex {
    bool slice;         /* a:b or : */
    PExpr *lo, *hi;     /* for a slice: either may be NULL (open end); else lo is the index */
    Span span;
} PIndex;

struct PExpr {
    PExprKind kind;
    Type ty;
    bool is_const;      /* a compile-time value: cval (int, bool) or fval (float) */
    int64_t cval;
    double fval;
    int64_t ival;       /* PX_INT: the literal */
    double lit;         /* PX_FLOAT: the literal */
    Symbol *sym;        /* PX_NAME; PX_MEMBER: the axis */
    const char *name;   /* PX_NAME: the name; PX_CALL: the function as written */
    const char *field;  /* PX_MEMBER */
    const char *written; /* how the source writes it, where that differs (Expr.written): printed instead */
    int fn;             /* PX_CALL: the Intrinsic */
    BinOp bop;
    UnOp uop;
    PExpr *base;        /* PX_MEMBER, PX_TRANSPOSE, PX_INDEX */
    PExpr *l, *r, *cond;
    PIndex *ix;         /* PX_INDEX */
    int nix;
    PExpr **args;       /* PX_CALL */
    int nargs;
    bool recip;         /* PX_BINARY, a tile divided by a per_row vector: one reciprocal per row
                         * first, then a product per element (lowering decides, plan_recips) */
    int colpick;        /* PX_CALL rowsum(where(col == K, x, z)), z zero: K + 1, the sum is column K
                         * of x + z, read from the lane that holds it (lowering decides,
                         * plan_colpicks); 0 otherwise */
    Span span;          /* where the .tk wrote it (diagnostics and #line) */
};

/* an assignment or a let, as a plan op's operands */
typedef enum { PS_ASSIGN, PS_LET } PStmtKind;
typedef struct PStmt {
    PStmtKind kind;
    PExpr *lhs;         /* PS_ASSIGN: the destination */
    AssignOp op;
    PExpr *rhs;         /* the value (a let's initialiser) */
    Symbol *let;        /* PS_LET: the value it declares */
    int mv;             /* the MoveKind (sema.h) */
    Span span;
    const struct PStmt *origin; /* a statement lowering made for a .tk statement (a relayout through
                                 * shared memory, a rewritten copy): that statement; else NULL */
} PStmt;
typedef Vec(PStmt *) PStmtVec;

/* what a shared buffer is for */
#define TK_BUFKINDS(X)                                                                          \
    X(BUF_RING, "ring", "filled by TMA every pipeline step; one copy per stage")                 \
    X(BUF_ONCE, "once", "filled by TMA in setup, once per work tile")                            \
    X(BUF_SCRATCH, "scratch", "written by consumers (reg -> shared)")                            \
    X(BUF_STAGING, "staging", "store staging: registers -> shared -> TMA store")

typedef enum {
#define X(e, s, m) e,
    TK_BUFKINDS(X)
#undef X
} BufKind;
extern const char *const bufkind_name[];

typedef struct PlanBuf {
    const char *name;
    Symbol *sym;        /* the .tk tile; NULL for staging */
    BufKind kind;
    DType dt;
    int rows, cols;     /* elements; a vector has rows = 1, cols = length */
    bool is_vec;
    Swizzle swz;        /* chosen swizzle (SWZ_NONE for vectors) */
    int atom_cols;      /* elements of the contiguous dim per swizzle atom (a TMA box width) */
    int natoms;         /* cols / atom_cols: atom columns stored side by side */
    int bytes;          /* one copy (a vector's rounded up to 128: each copy starts 128-byte aligned) */
    int copies;         /* ring: stages; staging: 2 per consumer warpgroup; else 1 */
    int offset;         /* from the 1024-aligned dynamic shared memory base */
    int align;
    int group;          /* load group, or -1 */
} PlanBuf;

/* the bytes TMA delivers into one copy of a buffer: a vector's elements (its copies are padded
 * to 128 bytes, TMA's shared-memory alignment), a tile's bytes */
static inline int plan_buf_tx_bytes(const PlanBuf *b) { return b->is_vec ? b->cols * dtype_bytes[b->dt] : b->bytes; }

typedef struct PlanBarrier {
    const char *name;
    int copies;         /* one barrier per stage */
    int count;          /* arrivals per phase */
    int tx_bytes;       /* bytes the TMA copies must deliver per phase (full barriers) */
    int offset;
    const char *why;
} PlanBarrier;


typedef struct PlanMap {    /* one CUtensorMap */
    const char *name;
    Symbol *tensor;
    Arg *arg;
    int rank;
    int box[5];         /* innermost first */
    Swizzle swz;
    bool store;         /* used by TMA stores (or reduce-adds) */
} PlanMap;

typedef struct PlanLoad {   /* one `tile <- X[...]` statement */
    PStmt *st;
    int buf;
    int map;
    bool multicast;     /* the same tile for every block of the cluster: each block issues a
                         * share of the boxes and TMA writes them into all blocks */
    const PExpr *cond;  /* a load under an if: the condition it runs under (NULL: always); the
                         * producer expects only the bytes of the loads it issues */
    bool alternative;   /* fills the buffer of an earlier load of its group from another branch of
                         * an if: at most one of them runs a step, so the group counts the tile once */
} PlanLoad;

typedef struct PlanGroup {  /* tiles that land on one full barrier */
    const char *name;
    bool once;          /* a setup load (per work tile) rather than a ring */
    int full, empty;    /* barrier indices */
    int bytes;          /* expect_tx per phase */
    Vec(int) bufs;
    Vec(PlanLoad) loads;
    int first_use;      /* index of the first consumer op that reads it (-1: unused) */
    bool multicast;     /* some load is multicast: releases go to every block of the cluster */
    bool warp_release;  /* a warp's own loads (not only products) read its tiles: every consumer warp
                         * releases (after a proxy fence in each thread and __syncwarp), not one
                         * thread per warpgroup */
} PlanGroup;

/* the consumers' program */
#define TK_POPS(X)                                                                              \
    X(POP_STMT, "stmt", "an assignment, move or let, emitted as written")                        \
    X(POP_MMA, "mma", "issue a tensor-core product (one wgmma commit group)")                   \
    X(POP_MATERIALIZE, "materialize", "convert the register A operand of a deferred product")    \
    X(POP_WAIT_FULL, "wait", "wait for a load group's full barrier")                             \
    X(POP_WAIT_MMA, "wgmma.wait", "wait until at most n product groups are in flight")           \
    X(POP_RELEASE, "release", "one thread per warpgroup (or per warp) arrives on a load group's empty barrier") \
    X(POP_IF, "if", "a conditional over uniform values")                                         \
    X(POP_FOR, "for", "a loop over uniform bounds")                                              \
    X(POP_SYNC, "sync", "barrier over the consumer warpgroups")                                  \
    X(POP_PP_WAIT, "pingpong.wait", "wait for this warpgroup's turn on the tensor cores")        \
    X(POP_PP_PASS, "pingpong.pass", "hand the tensor cores to the next warpgroup")                 \
    X(POP_MOVE, "move", "a tile between registers and shared memory (ldmatrix, stmatrix, ld/st.shared)") \
    X(POP_BAR, "bar.sync", "a named barrier over the consumer warpgroups (its id from the plan)")  \
    X(POP_FENCE, "fence.proxy.async", "the threads' shared-memory writes become visible to TMA and wgmma") \
    X(POP_STORE, "store", "a tile or vector to global memory (see the plan's stores)")

typedef enum {
#define X(e, s, m) e,
    TK_POPS(X)
#undef X
} POpKind;
extern const char *const pop_name[];

typedef struct POp POp;
typedef struct POpList { POp **v; int n, cap; } POpList;

/* a wgmma operand in shared memory */
typedef struct MmaSmem {
    int buf;
    bool trans;         /* .T in the source */
    bool mn_major;      /* the operand's contiguous dimension is M (A) or N (B): wgmma t-bit 1 */
    int row0, col0;     /* slice origin in the stored (untransposed) tile */
    bool prev;          /* prev(t): the previous pipeline step's copy */
} MmaSmem;

typedef struct PlanMma {
    Symbol *dst;
    bool accumulate;    /* += (or -=) */
    bool negate;        /* -= */
    bool zero_first;    /* `dst = 0` in setup folded: scale-d = 0 on the first step */
    bool a_reg;         /* A from registers (RS) */
    PExpr *a_expr;      /* the register A operand */
    Symbol *a_tmp;      /* materialized A operand (deferred products), else NULL */
    MmaSmem a, b;
    int m, n, k;        /* per-warpgroup product: m rows (64 per wgmma), n, k */
    int wg_m;           /* rows per warpgroup */
    DType in_dt;
    bool deferred;      /* issued one step late (overlap) */
} PlanMma;

/* how consumer threads move a tile between registers and shared memory */
#define TK_MOVEPATHS(X)                                                                         \
    X(MP_LDMATRIX, "ldmatrix.x4", "16-bit shared tile into registers: one 16 x 16 block per instruction") \
    X(MP_LDS, "ld.shared.v2", "fp32 shared tile into registers: the two neighbouring columns a thread holds") \
    X(MP_STMATRIX, "stmatrix.x4", "16-bit register values into a shared tile: one 16 x 16 block per instruction") \
    X(MP_STS, "st.shared.v2", "fp32 register values into a shared tile: two neighbouring columns per store") \
    X(MP_LDS_T, "ld.shared (transposed)", "a shared tile into registers as its transpose: one element per load") \
    X(MP_LDS_LINE, "ld.shared (one row or column)", "one row or column of a shared tile into a register vector") \
    X(MP_STS_VEC, "st.shared (vector)", "a register vector into a shared vector: one thread per entry") \
    X(MP_LDS_VEC, "ld.shared (vector)", "a shared vector into a register vector: each thread its own entries")

typedef enum {
#define X(e, s, m) e,
    TK_MOVEPATHS(X)
#undef X
} MovePath;
extern const char *const movepath_name[];

/* `reg <- shared` or `shared <- value`: the register side is in the wgmma accumulator layout
 * (row-split over the consumer warpgroups unless per_wg); addresses follow the shared tile's
 * swizzled layout (tkc_layout.cuh, the same arithmetic as hopper.c's tile_offset) */
typedef struct PlanMove {
    PStmt *st;
    int buf;            /* the shared tile */
    bool to_shared;
    MovePath path;
    Symbol *reg;        /* to registers: the destination tile (col0: a column slice of it) */
    int col0;
    int srow0, scol0;   /* the shared side's slice origin (t[a:b, c:d] moves that block of t) */
    const Type *rt;     /* the register side's type (the moved region) */
    bool wg0_only;      /* to shared from a per_wg value with several consumers: warpgroup 0 writes it */
    /* a relayout (see lower.c): MP_LDS_T reads the transpose; MP_LDS_LINE reads row `line` of the
     * tile as a per_col vector (line_col: column `line` as a per_row vector) */
    int line;
    bool line_col;
} PlanMove;

struct POp {
    POpKind kind;
    PStmt *st;          /* POP_STMT, POP_MMA, POP_MOVE, POP_STORE: the statement's operands */
    PExpr *cond;        /* POP_IF */
    Symbol *var;        /* POP_FOR: the loop variable, from lo to hi */
    PExpr *lo, *hi;
    PlanMma *mma;       /* POP_MMA, POP_MATERIALIZE */
    int group;          /* WAIT_FULL, RELEASE */
    bool prev;          /* WAIT_FULL/RELEASE/MMA: the previous step's stage */
    bool skip_first;    /* guard with `step > 0` */
    bool last_step;     /* RELEASE: only on the last step (setup tiles nothing after it reads) */
    bool no_steps;      /* RELEASE: only when the loop ran no step (else the last step released) */
    int n;              /* WAIT_MMA */
    POpList done;       /* WAIT_MMA: the products it completes (their registers get pinned) */
    const char *note;   /* a comment for the generated code; POP_IF: why pass_wg_bars.c left the
                         * scratch barriers of its branches inside them (check_wg_barriers' note) */
    POpList then_ops, else_ops;
    PlanMove *mv;       /* POP_MOVE */
    int bar;            /* POP_BAR: index into the kernel's named barriers */
    bool bar_shifted;   /* lowering's bookkeeping: bar already renumbered by plan_named_bars */
    int buf;            /* POP_BAR before a write of a scratch tile: the tile (its earlier readers
                         * must be done: the scheduler waits for products reading it first) */
    Vec(int) more_bufs; /* POP_BAR before writes under an if on wg (pass_wg_bars.c): the other tiles
                         * written there, whose earlier readers must be done too, like buf's */
    bool bulk_read;     /* POP_BAR: the thread that issued TMA stores from buf waits until they read it */
    int store;          /* POP_STORE: index into the kernel's stores */
};

/* a named barrier (bar.sync id, threads); ids 1..15, allocated by the plan */
typedef struct PlanNamedBar {
    const char *name;
    int id;             /* the first id */
    int ids;            /* consecutive ids (one per consumer warpgroup: id + wg) */
    int threads;
    const char *why;
} PlanNamedBar;

/* a register value the consumers hold (declared tiles, vectors, temporaries) */
typedef struct PlanReg {
    Symbol *sym;
    int regs;           /* 32-bit registers per thread */
} PlanReg;

/* how a store reaches global memory */
#define TK_STOREPATHS(X)                                                                        \
    X(SP_STAGED, "staged", "registers -> 64-row chunks in shared memory (stmatrix) -> TMA store")     \
    X(SP_DIRECT, "direct", "each thread writes the elements it holds (pairs where the strides allow)") \
    X(SP_VECTOR, "vector", "one lane of each quad writes the rows it holds")                          \
    X(SP_TMA, "tma", "a shared tile by TMA stores, one box per swizzle atom, issued by one thread")    \
    X(SP_TMA_ADD, "tma.add", "a shared tile added into global memory by TMA reduce-adds (one thread)") \
    X(SP_RED, "red", "an atomic add from registers: each thread adds its elements with red.global.add")     \
    X(SP_ROWS, "rows", "a rowwise tile: each lane writes its chunks of 8 consecutive columns (16-byte stores of bf16)")

typedef enum {
#define X(e, s, m) e,
    TK_STOREPATHS(X)
#undef X
} StorePath;
extern const char *const storepath_name[];
/* each thread writes (or adds) its own elements: no map, no staging chunks */
#define PLAN_STORE_DIRECT(ps) ((ps)->path == SP_DIRECT || (ps)->path == SP_RED || (ps)->path == SP_ROWS)

typedef struct PlanStore { /* a store to global memory */
    PStmt *st;
    StorePath path;
    bool wg0_only;      /* SP_RED of a per_wg value: every warpgroup holds all of it, the first one adds it;
                         * SP_VECTOR of a row-split per_col vector: every warpgroup holds the same
                         * columns, the first one writes them (unless a condition on wg decides
                         * which warpgroups reach the store: then each that does) */
    int map;            /* SP_STAGED, SP_TMA, SP_TMA_ADD */
    int chunk_rows, chunk_cols;
    int buf;            /* SP_TMA, SP_TMA_ADD: the shared tile */
    BlockKind block;    /* store (every step) or finish */
    /* SP_STAGED at(row) whose row is not provably >= 0: a 64-row chunk above the tensor is
     * written by the threads (TMA stores need non-negative coordinates) */
    bool may_start_above;
} PlanStore;

/* The narrow last step. The step's score tile `s` (filled by the step's first product, one column
 * per key) is masked to -inf beyond `bound - j * W` (a conjunct `j * W + col < bound` of a where),
 * its masked columns end up as probabilities of exactly 0, and the deferred product (K over the
 * same columns) reads it. When the last step leaves at most `cols` columns unmasked, it runs on
 * copies that hold only the first `cols` columns: its first product, row maxima and sums,
 * elementwise ops and the deferred product skip the rest, which would add nothing. */
typedef struct PlanTail {
    Symbol *s, *s_narrow;       /* the score tile and its narrow copy */
    Symbol *op, *op_narrow;     /* the deferred product's A operand and its narrow copy */
    PlanMma *first, *deferred;  /* as planned (full width) */
    PlanMma first_narrow, deferred_narrow;  /* the same products on `cols` columns */
    int cols;
    PExpr *bound, *jw;          /* the mask's `bound` and `j * W` */
    PExpr *guard;               /* the if around the mask (it must run in the narrow step), or NULL */
    Vec(PExpr *) scales;         /* scalars that multiply -inf scores: positive, or no narrow step */
} PlanTail;

typedef struct PlanKernel {
    SemaKernel *sk;
    const char *name;
    int consumers;
    int threads;
    int producer_regs, consumer_regs;
    const char *split_why;  /* "default", "program" (set in the .tk) or "heavy_consumers" */
    int reg_estimate;
    int reg_overhead;
    int reg_lets;       /* peak registers of block-local (let) temporaries */
    int reg_live_peak;  /* where the sum of the register values is over the budget: the most the
                         * step holds at once, values written and read within a step counted only
                         * while live (0: not needed, the sum fits) */
    int stages;         /* ring stages; 0 without a pipeline */
    /* no pipeline statement: each work tile runs setup, then finish, once; no ring, no steps,
     * no ring barriers. Setup loads still go through the producer (one group, once per work
     * tile); with nothing to load the producer warpgroup only gives up its registers. */
    bool no_pipeline;
    /* nothing to load (no pipeline, no setup loads): no producer warpgroup, every warpgroup a
     * consumer without setmaxnreg, min_blocks blocks per SM (__launch_bounds__) */
    bool no_producer;
    int min_blocks;
    /* register tiles declared rowwise: every register value is in the row layout rw (hopper.h),
     * not the wgmma accumulator layout; rowred_buf / rowred_bar (or -1): the scratch and named
     * barrier of row reductions across the warps of a row (rw.split > 1) */
    bool rowwise;
    RowLayout rw;
    int rowred_buf, rowred_bar;
    bool persistent;
    bool paired;            /* persistent with a folded axis: blocks walk tiles in pairs */
    bool staging_halved;    /* two 64 x 32 staging chunks per warpgroup, not 64 x 64 (smem was short) */
    bool early_setup_release;
    /* lookahead: in a persistent grid, the first step's head (first_ops[0 .. ahead_head): its
     * products, the barrier waits before them) for the next work tile is issued after
     * after_ops[0 .. ahead_split) (up to this tile's last product), before the rest of them and
     * this tile's finish; each wgmma wait after it keeps one group more in flight (the head's,
     * always issued); first_ops[ahead_head] is a wait for all of the head's products */
    bool lookahead;
    int ahead_head, ahead_split;
    /* the first step runs on its own (peeled) only when its schedule differs from every later
     * step's (fewer waits or releases, a scale-d 0 product, the lookahead's head); otherwise the
     * loop starts at step 0 and first_ops is not emitted */
    bool peel_first;
    const char *no_lookahead;   /* why not, for the notes (NULL: applied, or not asked for) */ /* the last step releases the setup tiles (see lower.c) */
    int cluster;        /* blocks per cluster along cluster_axis */
    int cluster_axis;   /* the folded grid axis if there is one, else the first */
    OrderKind order;
    int order_group;
    bool overlap, pingpong;
    /* copies of the setup tiles and their barriers: 2 in a persistent grid when the .tk asks
     * (setup_stages = 2): work tile k uses copy k % 2, so the producer loads the next tile's
     * setup tiles while this one still reads its own */
    int setup_stages;
    /* per_row sums kept as each lane's partial sums through the loop (see plan_lazy_sums): the
     * rowsum()s that feed them skip their quad shuffles, and finish first adds the quad's partials */
    Vec(Symbol *) lazy_sums;
    Vec(const PExpr *) lazy_rowsums;
    PlanTail *tail;             /* the narrow last step, or NULL */
    const char *no_tail;        /* why not, when the kernel looks like one but is not (NULL otherwise) */
    Vec(PlanBuf) bufs;
    Vec(PlanBarrier) bars;
    Vec(PlanGroup) groups;
    Vec(PlanMap) maps;
    Vec(PlanReg) regs;
    Vec(PlanStore) stores;
    Vec(PlanNamedBar) nbars;
    /* per kernel argument (sk->args order): the kernel takes its strides, because threads read
     * or write it directly (element reads in lets, vector loads and stores, direct and atomic
     * stores, the rows of a staged at() store above the tensor) rather than only through TMA */
    Vec(bool) arg_strides;
    int nbar_staging, nbar_pingpong, nbar_sync, nbar_scratch; /* indices into nbars, or -1 */
    int nbar_scratch_wg;        /* a warpgroup's own scratch tiles (pass_wg_bars.c): id + wg, or -1 */
    bool tma_stores;    /* some thread issues TMA stores of shared tiles: wait for them before exit */
    /* `zeroed` outputs: the launcher clears each on the kernel's stream before the launch, with
     * a clearing kernel (16-byte stores when its strides are contiguous, else through them), and
     * launches the kernel programmatically after it (pass_pdl.c) */
    Vec(const Arg *) zeroed;
    /* programmatic dependent launch (pass_pdl.c): the kernel may start before the kernel queued
     * before it ends - an entry launches it right after another of its kernels (pdl_entry), or its
     * launcher right after the kernel that clears its `zeroed` outputs - so every thread waits for
     * the grid before it (griddepcontrol.wait) before it touches global memory (pdl_wait); an entry
     * launches another kernel that way right after this one, so every thread lets it launch
     * (griddepcontrol.launch_dependents) as soon as the block starts (pdl_trigger). Both are no-ops
     * in a launch without the attribute. */
    bool pdl_wait, pdl_trigger, pdl_entry;
    bool pdl_after_clear;   /* the launcher launches it programmatically after the kernel clearing its zeroed outputs */
    /* column reductions (colsum, colmax, colmin): after the shuffles inside each warp, the 4 warps
     * of a warpgroup (and the consumer warpgroups, for row-split tiles) meet in a shared scratch
     * buffer: colred_buf (-1: no column reductions), colred_bar (row-split tiles: all consumer
     * warpgroups) and colred_wg_bar (per_wg tiles: one id per warpgroup) index nbars (-1: none) */
    int colred_buf, colred_bar, colred_wg_bar;
    /* prefix sums of per_row vectors (cumsum): after the shuffles inside each warp, each warp's
     * total meets the other warps' in a shared scratch buffer (one fp32 per 16-row group of the
     * widest scanned vector, per warpgroup for per_wg vectors): rowscan_buf (-1: none), rowscan_bar
     * (row-split vectors: all consumer warpgroups) and rowscan_wg_bar (per_wg: one id per
     * warpgroup) index nbars (-1: none). A per_col vector's prefix sum needs neither: every thread
     * holds its columns of the whole vector, and shuffles inside a quad combine them. */
    int rowscan_buf, rowscan_bar, rowscan_wg_bar;
    int staging_buf;    /* index of the staging buffer, or -1 */
    int staging_per_wg; /* staging chunk buffers per consumer warpgroup: 2, or 1 when 2 do not fit */
    int smem_used;      /* bytes from the aligned base (buffers + barriers) */
    int smem_total;     /* smem_used + alignment slack: what the launcher requests */
    /* the kernel's uniform values, translated: its scalar lets, the setup and load blocks' scalar
     * lets (the producer computes them too, for its loads), the pipeline's trip count (NULL
     * without a pipeline) and each grid axis's extent */
    PStmtVec lets, setup_lets, load_lets;
    PExpr *trips;
    Vec(PExpr *) extents;
    /* per kernel argument (sk->args order): a tensor's dimensions, translated (NULL for scalars) */
    Vec(PExpr **) arg_dims;
    Vec(PExpr *) requires;      /* the launcher's checks, translated */
    POpList block_ops;          /* once per block, before the first work tile (persistent grids): the
                                 * loads that are the same for every tile (plan_block_loads) */
    POpList setup_ops;
    /* the step's ops (compute, then the store block) in program order, before scheduling: what
     * the passes over the step (narrow tail, lazy sums) analyse */
    POpList step_ops;
    POpList first_ops;          /* the first pipeline step (peeled: no previous step exists) */
    POpList compute_ops;        /* every later step: the steady state */
    POpList after_ops, finish_ops;
    Vec(const char *) notes;    /* decisions, in the order they were made */
} PlanKernel;

/* ---- entries: host launchers that run kernels of the program in order (lower_entry.c) ---------- */

typedef enum { PE_LET, PE_SCRATCH, PE_CALL, PE_IF } PEStepKind;

/* a tensor passed to a kernel: the entry's tensor (an argument or a scratch), maybe transposed */
typedef struct PETensor {
    const char *name;
    bool trans;         /* .T: its last two dimensions (and strides) swapped */
    bool scratch;
    int rank;           /* its dimensions as the entry declares them (before a .T) */
    PExpr *dims[4];
} PETensor;

/* two host values a call needs equal (one callee dimension bound by two shapes) */
typedef struct PECheck {
    PExpr *a, *b;
    const char *why;
} PECheck;

typedef struct PEStep PEStep;
typedef Vec(PEStep *) PESteps;
struct PEStep {
    PEStepKind kind;
    Span span;
    const char *name;           /* let, scratch: its name; call: the kernel */
    PExpr *value;               /* let: its value; if: the condition */
    DType dt;                   /* scratch: element type, rank, dimensions */
    int rank;
    PExpr *dims[4];
    const PlanKernel *callee;   /* call: the kernel; its tensors, dimensions and scalars in its launcher's order */
    Vec(PETensor) tensors;
    Vec(PExpr *) dim_values;
    Vec(PExpr *) scalar_values;
    Vec(PECheck) checks;
    bool pdl;                   /* call: launched with programmatic stream serialization (pass_pdl.c) */
    bool decided;               /* if: the condition is known at compile time; then_s holds the branch taken */
    bool taken;                 /* decided: whether the condition holds */
    PESteps then_s, else_s;
};

typedef struct PlanEntry {
    const char *name;
    const SemaKernel *sk;       /* the signature: args, tensors, dims, scalars */
    Vec(PExpr **) arg_dims;     /* per argument: its dimensions (NULL for scalars) */
    PESteps body;
    int nscratch;               /* scratch tensors in all (each freed on the stream at return) */
    bool uses_sms;              /* a step reads sms: the launcher asks the device for its SM count first */
    Vec(const char *) notes;    /* the plan's decisions about it, in words */
} PlanEntry;

typedef struct Plan {
    Vec(PlanKernel *) kernels;
    Vec(PlanEntry *) entries;
    /* kernels whose `if (COND)` is false for these params, not compiled: "NAME (if COND)" */
    Vec(const char *) left_out;
} Plan;

/* lower.c: AST + sema -> plan. Reports budget and back-end errors through d. */
bool lower_program(Arena *a, Diag *d, Program *p, SemaResult *sr, Plan *out);
/* pass_pdl.c: programmatic dependent launch between consecutive kernels of each entry */
void plan_pdl(Arena *a, Plan *p);
/* verify.c: the plan's invariants; a failure is a compiler bug, reported as such. */
bool plan_verify(const Plan *p, Diag *d);
/* verify_protocol.c: the barrier protocol, explored exhaustively on small configurations (trip
 * counts, work tiles, if outcomes, a cluster's blocks). Returns NULL when every rule holds, else
 * "barrier protocol, rule 'R': ..." naming the rule and the first violation found. */
typedef struct ProtocolStats {
    long configs, states;   /* configurations checked, states visited in all */
    bool truncated;         /* some configuration had more states than the check visits */
} ProtocolStats;
const char *plan_check_protocol(Arena *a, const PlanKernel *pk, ProtocolStats *stats);
/* plan_dump.c: the stable text form (tkc --emit=plan). */
char *plan_dump(const Plan *p);
char *plan_dump_kernel(const PlanKernel *pk);
/* lower_entry.c: an entry's plan (its callees lowered already, in plan) */
PlanEntry *lower_entry(Arena *a, const SemaEntry *se, const Plan *plan);
/* plan_expr.c: the trees from the syntax tree (lowering's translation of each statement) */
PExpr *px_from_ast(Arena *a, const Expr *x);
PStmt *ps_from_ast(Arena *a, const Stmt *st);
PExpr *px_name(Arena *a, Symbol *y, Span sp);
PExpr *px_copy(Arena *a, const PExpr *x);
/* the trees in .tk syntax (the plan's text, and the comments of the generated code) */
void px_print(StrBuf *b, const PExpr *x);
const char *px_str(Arena *a, const PExpr *x);
void plan_stmt_text(StrBuf *b, const PStmt *st);
const char *plan_stmt_str(Arena *a, const PStmt *st);
/* the header of an if or for op: `if (cond)`, `for i in lo .. hi` */
void plan_ctl_text(StrBuf *b, const POp *o);
/* does x name sym anywhere */
bool px_mentions(const PExpr *x, const Symbol *sym);
/* is x the builtin name b (BI_ROW, BI_COL, ...) */
bool px_is_builtin(const PExpr *x, int b);
/* the blocks per SM a persistent launch starts: blocks_per_sm where the program asks for more than
 * one (clusters: one per SM), else 1 (emit_launch.c starts SMs x this many) */
int plan_persistent_per_sm(const PlanKernel *pk);
/* does x call the intrinsic fn anywhere */
bool px_calls(const PExpr *x, Intrinsic fn);
/* px_mentions, also through the initialisers of the lets x names (their trees made in a) */
bool px_depends_on(Arena *a, const PExpr *x, const Symbol *sym);
/* the symbol an assignment's destination names through its indices, or NULL */
Symbol *px_root(const PExpr *x);
/* the wgmma instructions of a product, per warpgroup: each m64 x n(inst_n) x k16; n is split into
 * instructions of at most 256 columns */
void plan_mma_shape(const PlanMma *m, int *inst_n, int *count);
/* how a product's operand is laid out: "K-major", or "M-major" (A) / "N-major" (B) */
const char *plan_major_name(bool mn, char which);

#endif
