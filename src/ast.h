/* ast.h - the syntax tree of a .tk program, the tables of its vocabulary (dtypes, memory
 * spaces, blocks, operators) and the types and symbols that sema attaches to it.
 * Invariant: every node carries the Span of the source text it came from; nodes live in the
 * program's arena; lists keep source order, so every walk over them is deterministic. */
#ifndef TKC_AST_H
#define TKC_AST_H

#include "diag.h"
#include "util.h"

/* ---- vocabulary tables (enum, spelling, and one line of meaning each) ----------------------- */

/*  name      spelling  bytes  CUDA type          meaning */
#define TK_DTYPES(X)                                                                            \
    X(DT_BF16, "bf16", 2, "__nv_bfloat16", "bfloat16: fp32's exponent range, 8-bit mantissa")    \
    X(DT_FP16, "fp16", 2, "__half", "IEEE half precision")                                       \
    X(DT_FP32, "fp32", 4, "float", "IEEE single precision, the accumulation type")               \
    X(DT_I32, "i32", 4, "int", "32-bit signed integer (indices, seeds)")

typedef enum {
#define X(e, s, b, c, m) e,
    TK_DTYPES(X)
#undef X
        DT_COUNT
} DType;

/* memory spaces: where a tile or tensor lives */
#define TK_SPACES(X)                                                                            \
    X(MS_GLOBAL, "global", "device memory; kernel arguments")                                   \
    X(MS_SHARED, "shared", "a block's shared memory; filled by TMA or by consumers")            \
    X(MS_REG, "reg", "registers of each consumer warpgroup")

typedef enum {
#define X(e, s, m) e,
    TK_SPACES(X)
#undef X
        MS_COUNT
} MemSpace;

/* the blocks of the load/compute/store/finish (LCSF) template */
#define TK_BLOCKS(X)                                                                            \
    X(BK_SETUP, "setup", "once per work tile, before the pipeline: first loads, state init")    \
    X(BK_LOAD, "load", "producer, once per pipeline step: global -> shared ring")               \
    X(BK_COMPUTE, "compute", "consumers, once per pipeline step: tile math")                    \
    X(BK_STORE, "store", "consumers, once per pipeline step: results -> global")                \
    X(BK_FINISH, "finish", "consumers, once per work tile after the pipeline: epilogue")

typedef enum {
#define X(e, s, m) e,
    TK_BLOCKS(X)
#undef X
        BK_COUNT
} BlockKind;

/* binary operators, lowest precedence first within each group */
#define TK_BINOPS(X)                                                                            \
    X(BIN_OR, "||", "logical or (scalars)")                                                      \
    X(BIN_AND, "&&", "logical and (scalars)")                                                    \
    X(BIN_EQ, "==", "equal")                                                                     \
    X(BIN_NE, "!=", "not equal")                                                                 \
    X(BIN_LT, "<", "less than")                                                                  \
    X(BIN_LE, "<=", "less or equal")                                                             \
    X(BIN_GT, ">", "greater than")                                                               \
    X(BIN_GE, ">=", "greater or equal")                                                          \
    X(BIN_ADD, "+", "add, elementwise on tiles")                                                 \
    X(BIN_SUB, "-", "subtract, elementwise on tiles")                                            \
    X(BIN_MUL, "*", "multiply, elementwise on tiles")                                            \
    X(BIN_DIV, "/", "divide (integer division on integers)")                                     \
    X(BIN_MOD, "%", "remainder (integers)")                                                      \
    X(BIN_MATMUL, "@", "matrix product of tiles (tensor cores)")

typedef enum {
#define X(e, s, m) e,
    TK_BINOPS(X)
#undef X
        BIN_COUNT
} BinOp;

#define TK_UNOPS(X)                                                                             \
    X(UN_NEG, "-", "negate")                                                                     \
    X(UN_NOT, "!", "logical not")

typedef enum {
#define X(e, s, m) e,
    TK_UNOPS(X)
#undef X
        UN_COUNT
} UnOp;

/* assignment forms of a statement */
#define TK_ASSIGNOPS(X)                                                                         \
    X(AS_SET, "=", "compute into registers (or a scalar)")                                       \
    X(AS_ADD, "+=", "accumulate; on a global tensor: atomic add of a tile")                      \
    X(AS_SUB, "-=", "subtract in place")                                                         \
    X(AS_MUL, "*=", "multiply in place")                                                         \
    X(AS_DIV, "/=", "divide in place")                                                           \
    X(AS_MOVE, "<-", "move a tile between memory spaces (TMA, ldmatrix, stmatrix)")

typedef enum {
#define X(e, s, m) e,
    TK_ASSIGNOPS(X)
#undef X
        AS_COUNT
} AssignOp;

/* layouts of register vectors: which tile dimension a vector runs along */
#define TK_VECLAYOUTS(X)                                                                        \
    X(VL_NONE, "", "not a vector")                                                               \
    X(VL_ROW, "per_row", "one value per tile row (row reductions, row broadcasts)")              \
    X(VL_COL, "per_col", "one value per tile column (column reductions and broadcasts)")

typedef enum {
#define X(e, s, m) e,
    TK_VECLAYOUTS(X)
#undef X
} VecLayout;

/* built-in functions: name, arity (-1: 2 or 3), where allowed, meaning */
#define TK_INTRINSICS(X)                                                                        \
    X(FN_CDIV, "cdiv", 2, "ceiling division of integers: cdiv(a, b) = (a + b - 1) / b")       \
    X(FN_MIN, "min", 2, "minimum (integers, scalars, or elementwise on tiles and vectors)")     \
    X(FN_MAX, "max", 2, "maximum (integers, scalars, or elementwise on tiles and vectors)")     \
    X(FN_EXP, "exp", 1, "e^x, elementwise")                                                      \
    X(FN_EXP2, "exp2", 1, "2^x, elementwise (one MUFU.EX2 per element)")                         \
    X(FN_LOG, "log", 1, "natural logarithm, elementwise")                                        \
    X(FN_LOG2, "log2", 1, "base-2 logarithm, elementwise")                                       \
    X(FN_SQRT, "sqrt", 1, "square root, elementwise")                                            \
    X(FN_RSQRT, "rsqrt", 1, "1/sqrt(x), elementwise")                                            \
    X(FN_ABS, "abs", 1, "absolute value, elementwise")                                           \
    X(FN_TANH, "tanh", 1, "hyperbolic tangent, elementwise")                                     \
    X(FN_ERF, "erf", 1, "error function, elementwise (GELU's exact form: 0.5 x (1 + erf(x / sqrt 2)))") \
    X(FN_ROWMAX, "rowmax", 1, "maximum of each row of a tile: a per_row vector")                 \
    X(FN_ROWMIN, "rowmin", 1, "minimum of each row of a tile: a per_row vector")                 \
    X(FN_ROWSUM, "rowsum", 1, "sum of each row of a tile: a per_row vector")                     \
    X(FN_COLMAX, "colmax", 1, "maximum of each column of a tile: a per_col vector")              \
    X(FN_COLMIN, "colmin", 1, "minimum of each column of a tile: a per_col vector")              \
    X(FN_COLSUM, "colsum", 1, "sum of each column of a tile: a per_col vector")                  \
    X(FN_CUMSUM, "cumsum", 1, "inclusive prefix sum along a vector")                             \
    X(FN_WHERE, "where", 3, "where(cond, a, b): a where cond holds, else b, elementwise")        \
    X(FN_TRIL, "tril", -1, "tril(t, d[, fill]): keep t where col - row <= d, else fill (0)")     \
    X(FN_TRIU, "triu", -1, "triu(t, d[, fill]): keep t where col - row >= d, else fill (0)")     \
    X(FN_BF16, "bf16", 1, "convert to bf16 (round to nearest even)")                             \
    X(FN_FP16, "fp16", 1, "convert to fp16 (round to nearest even)")                             \
    X(FN_FP32, "fp32", 1, "convert to fp32")                                                     \
    X(FN_I32, "i32", 1, "convert a scalar to a 32-bit integer (truncating)")                     \
    X(FN_RAND, "rand", 2, "rand(seed, offset): uniform [0, 1) per element, counter-based")     \
    X(FN_KEEP, "keep", 3, "keep(seed, offset, p): 1 where dropout keeps an element (1 - p)")   \
    X(FN_PREV, "prev", 1, "prev(t): the ring tile loaded by the previous pipeline step")         \
    X(FN_REAL, "real", 1, "real part of a complex tile")                                         \
    X(FN_IMAG, "imag", 1, "imaginary part of a complex tile")                                    \
    X(FN_COMPLEX, "complex", 2, "complex(re, im): a complex tile from two real tiles")           \
    X(FN_SYNC, "sync", 0, "statement: barrier over all consumer warpgroups")                     \
    X(FN_AT, "at", 1, "at(e) as a global tile or vector index: the move starts at element e, not tile e")

typedef enum {
#define X(e, s, n, m) e,
    TK_INTRINSICS(X)
#undef X
        FN_COUNT,
    FN_NONE = -1
} Intrinsic;
extern const char *const intrinsic_name[];
extern const int intrinsic_arity[];

/* names the language predefines inside kernels */
typedef enum { BI_BLOCK, BI_WG, BI_ROW, BI_COL, BI_INF, BI_SMS } Builtin;  /* sms: entries only */
enum { BI_COUNT = BI_SMS + 1 };
extern const char *const builtin_name[BI_COUNT];  /* the predefined names, by Builtin */

extern const char *const dtype_name[];
extern const int dtype_bytes[];
extern const char *const dtype_cuda[];
extern const char *const space_name[];
extern const char *const block_name[];
extern const char *const binop_name[];
extern const char *const unop_name[];
extern const char *const assignop_name[];
extern const char *const veclayout_name[];

/* ---- types and symbols (filled in by sema) -------------------------------------------------- */

typedef enum {
    TY_ERROR,   /* an error was already reported; suppress follow-ups */
    TY_VOID,
    TY_BOOL,
    TY_INT,     /* integer scalar (compile-time or run-time) */
    TY_FLOAT,   /* fp32 scalar */
    TY_TENSOR,  /* global tensor argument */
    TY_TILE,    /* 2-D tile in shared memory or registers */
    TY_VEC,     /* 1-D vector in shared memory or registers */
    TY_GRIDREF, /* the `block` object */
} TypeKind;

typedef struct Type {
    TypeKind kind;
    DType dt;
    MemSpace space;
    int rows, cols;     /* tile: block-level shape; vec: rows = length */
    VecLayout layout;   /* vec in registers */
    bool per_wg;        /* reg tile/vec held whole by every consumer warpgroup (not row-split) */
    bool partial;       /* per_wg, and the warpgroups' copies are parts of one sum (+= adds every one) */
    int ndims;          /* tensor rank */
    bool complex;       /* complex tile (a pair of real tiles) */
    bool rowwise;       /* a declared register tile in the row layout (the kernel's layout: SemaKernel.rowwise) */
    int varying;        /* scalars that vary per element: VARY_ROW | VARY_COL (row, col) */
} Type;

enum { VARY_ROW = 1, VARY_COL = 2 };

typedef enum {
    SYM_PARAM,      /* compile-time integer parameter */
    SYM_DIM,        /* run-time tensor dimension */
    SYM_TENSOR,     /* global tensor argument */
    SYM_SCALAR,     /* run-time scalar argument */
    SYM_LET,        /* named value (compile-time or run-time scalar) */
    SYM_SHARED,     /* shared tile or vector */
    SYM_REG,        /* register tile or vector */
    SYM_LOOPVAR,    /* the pipeline's iteration variable */
    SYM_FORVAR,     /* a for-loop variable */
    SYM_AXIS,       /* a grid axis, read as block.<name> */
    SYM_BUILTIN,    /* row, col, wg, inf, block */
} SymKind;

typedef struct Symbol {
    SymKind kind;
    const char *name;
    Span span;
    Type ty;
    bool is_const;      /* value known at compile time */
    int64_t cval;       /* that value (integers) */
    double fval;        /* that value (float lets) */
    int index;          /* position among its kind (args, decls, axes...) */
    struct Expr *init;  /* for lets: the defining expression */
    int builtin;        /* for SYM_BUILTIN: which one */
    bool used;
} Symbol;

/* ---- expressions ---------------------------------------------------------------------------- */

typedef enum {
    EX_INT,         /* 42 */
    EX_FLOAT,       /* 1.5, 1e-5 */
    EX_NAME,        /* identifier */
    EX_MEMBER,      /* base.field (block.m) */
    EX_TRANSPOSE,   /* x.T */
    EX_INDEX,       /* base[i, j, a:b, :] */
    EX_CALL,        /* f(args) */
    EX_BINARY,
    EX_UNARY,
    EX_COND,        /* c ? a : b */
} ExprKind;

typedef struct Expr Expr;

typedef struct IndexArg {
    Span span;
    bool slice;     /* a:b or : */
    Expr *lo, *hi;  /* for a slice: either may be NULL (open end); else lo is the index */
} IndexArg;

struct Expr {
    ExprKind kind;
    Span span;
    union {
        int64_t ival;
        double fval;
        const char *name;
        struct { Expr *base; const char *field; Span field_span; } member;
        struct { Expr *base; } tr;
        struct { Expr *base; IndexArg *args; int nargs; } index;
        struct { const char *fn; Span fn_span; Expr **args; int nargs;
                 const char *spelled; /* a conversion written with a `type` name: that name (fn is the dtype's) */
        } call;
        struct { BinOp op; Expr *l, *r; Span op_span; } bin;
        struct { UnOp op; Expr *e; } un;
        struct { Expr *c, *a, *b; } cond;
    } u;
    /* sema */
    Type ty;
    Symbol *sym;        /* EX_NAME, EX_MEMBER (block.x) */
    bool is_const;
    int64_t cval;
    double fval;        /* compile-time float value, when is_const and ty is float */
    int fn;             /* EX_CALL: the Intrinsic, or FN_NONE */
    const char *written;  /* how the source writes this expression where that differs from what it became
                           * (a def call, sema_def.c: `act(acc)`; a copy's wg, sema_wg.c): comments and the
                           * plan print it */
};

/* ---- statements ----------------------------------------------------------------------------- */

typedef enum { ST_ASSIGN, ST_IF, ST_FOR, ST_LET, ST_EXPR, ST_SCRATCH } StmtKind;

typedef struct Stmt Stmt;
typedef struct StmtList { Stmt **v; int n, cap; } StmtList;

struct Stmt {
    StmtKind kind;
    Span span;
    union {
        struct { Expr *lhs; AssignOp op; Span op_span; Expr *rhs; } assign;
        struct { Expr *cond; StmtList then_s, else_s; bool has_else; } if_;
        struct { const char *var; Span var_span; Expr *lo, *hi; StmtList body; Symbol *sym; } for_;
        struct { const char *name; Span name_span; Expr *e; Symbol *sym; } let;
        struct { Expr *e; struct SemaCall *call; /* an entry's kernel call (sema) */ } expr;
        struct { const char *name; Span name_span; struct TypeSpec *ts; Symbol *sym; } scratch;  /* entries only */
    } u;
    int mv;             /* sema: the MoveKind of an assignment (sema.h) */
};

/* ---- kernel items --------------------------------------------------------------------------- */

typedef struct Option {
    const char *key;
    Span key_span;
    Expr *value;        /* NULL for a bare flag such as `persistent` */
    Span span;
} Option;
typedef struct OptionList { Option *v; int n, cap; } OptionList;

typedef struct Axis {
    const char *name;
    Span span;
    Expr *extent;
    bool reversed;      /* walked from the last index down ("longest first") */
    bool folded;        /* walked last, first, second last, second, ... (long and short tiles paired) */
    Span mod_span;      /* the word 'reversed' or 'folded' */
    Symbol *sym;
} Axis;

typedef struct TypeSpec {
    DType dt;
    Span span;
    Expr **dims;
    int ndims;
    const char **attrs; /* per_row, per_col, per_wg */
    Span *attr_spans;
    int nattrs;
} TypeSpec;

typedef enum { ARG_IN, ARG_OUT, ARG_INOUT } ArgMode;
extern const char *const argmode_name[]; /* "in", "out", "inout": as the .tk spells them */

typedef struct Arg {
    ArgMode mode;
    const char *name;
    Span span;
    TypeSpec ts;
    Symbol *sym;
} Arg;

typedef struct Decl {
    MemSpace space;
    const char *name;
    Span span;
    TypeSpec ts;
    Symbol *sym;
} Decl;

typedef enum { KI_GRID, KI_PIPELINE, KI_DECL, KI_LET, KI_REQUIRE, KI_BLOCK } KItemKind;

typedef struct KItem {
    KItemKind kind;
    Span span;
    union {
        struct { Axis *axes; int naxes; OptionList opts; } grid;
        struct { const char *var; Span var_span; Expr *trips; OptionList opts; Symbol *sym; } pipe;
        struct { Decl *d; } decl;
        struct { const char *name; Span name_span; Expr *e; Symbol *sym; } let;
        struct { Expr *cond; } require;
        struct { BlockKind kind; StmtList body; Span open, close; } block;
    } u;
} KItem;

typedef struct Kernel {
    const char *name;
    Span span, name_span;
    Arg *args;
    int nargs;
    KItem **items;
    int nitems;
    /* `entry NAME(args) { ... }`: a host launcher that runs kernels of the program in order, with
     * device scratch memory between them (sema_entry.c); no grid, no blocks, only body */
    bool entry;
    StmtList body;
    /* `kernel NAME(args) if (COND) { ... }`: COND, made of params; false: the kernel is left out of
     * this build (sema.c) */
    Expr *when;
} Kernel;

typedef struct Param {
    const char *name;
    Span span;
    Expr *value;
    Symbol *sym;
    bool overridden;    /* set from -D */
    int64_t override_value;
} Param;

/* `grad FWD = K1, K2, ...;`: the kernels that compute FWD's gradients, run in this order (the
 * torch module makes FWD differentiable with them; sema_grad.c says how arguments bind) */
typedef struct GradDecl {
    const char *fwd;
    Span span, fwd_span;
    Expr **chain;       /* names of kernels */
    int nchain;
} GradDecl;

/* `type NAME = DTYPE;`: a name for an element type, overridable with -D NAME=DTYPE. The scanner
 * reads every later NAME as that dtype, so the rest of the compiler sees plain dtypes. */
typedef struct TypeAlias {
    const char *name;
    Span span;
    DType dt;           /* the declared dtype, or -D's */
    bool overridden;
} TypeAlias;

/* a -D NAME=DTYPE override, for the parser to apply to `type NAME` (used: it found the type) */
typedef struct TypeDefine {
    const char *name;
    DType dt;
    bool used;
} TypeDefine;

/* `def NAME(a, b, ...) = EXPR;`: a named expression; a call NAME(x, y, ...) is EXPR with each parameter
 * replaced by its argument (sema_def.c), checked where it is called */
typedef struct FnDef {
    const char *name;
    Span span, name_span;
    const char **params;
    Span *param_spans;
    int nparams;
    Expr *body;
    bool expanding;     /* sema: a call of it is being expanded (a def that calls itself) */
} FnDef;

typedef struct Program {
    Vec(TypeAlias *) types;
    Vec(FnDef *) defs;          /* def declarations, in source order */
    TypeDefine *type_defines;   /* set by the driver before parsing */
    int ntype_defines;
    Vec(Param *) params;
    Vec(Kernel *) kernels;
    Vec(Kernel *) entries;      /* entry launchers, in source order */
    Vec(GradDecl *) grads;
    const char *dispatch;       /* `dispatch "table";` in the main file: the table's path (relative
                                 * paths resolved against the .tk's folder), or NULL */
    const char *dispatch_written; /* the path as the .tk writes it */
    Span dispatch_span;
    Vec(const char *) files;    /* every file read, the main one first (for depfiles) */
    Vec(const char *) real_files; /* the same files by their real paths, to read each once */
} Program;

/* ---- construction and printing -------------------------------------------------------------- */

Expr *ast_expr(Arena *a, ExprKind k, Span s);
Stmt *ast_stmt(Arena *a, StmtKind k, Span s);
/* a copy of e (the parser's fields, none of sema's) in which every name among names[0 .. n - 1] is a
 * copy of repl[i] */
Expr *ast_copy_expr(Arena *a, const Expr *e, const char *const *names, Expr *const *repl, int n);
/* the same for a statement and the statements inside it (sema's fields cleared) */
Stmt *ast_copy_stmt(Arena *a, const Stmt *st, const char *const *names, Expr *const *repl, int n);
/* visit(x, ctx) for e and every expression inside it, before its parts, until one returns true: true
 * if one did; the statement forms visit every expression of the statements, nested ones too */
bool ast_expr_any(const Expr *e, bool (*visit)(const Expr *, void *), void *ctx);
bool ast_stmt_any(const Stmt *st, bool (*visit)(const Expr *, void *), void *ctx);
bool ast_stmts_any(const StmtList *l, bool (*visit)(const Expr *, void *), void *ctx);
KItem *ast_kitem(Arena *a, KItemKind k, Span s);

/* A stable text dump of the tree (tkc --emit=ast). Spans print as line:col. */
char *ast_dump(const Program *p, const Diag *d);
/* Prints an expression back in .tk syntax (for diagnostics and plan comments). */
void ast_print_expr(StrBuf *b, const Expr *e);
char *ast_expr_str(Arena *a, const Expr *e);

bool dtype_from_name(const char *s, DType *out);

#endif
