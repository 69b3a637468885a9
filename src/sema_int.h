/* sema_int.h - the semantic checks' private interface, shared by their files (sema.c,
 * sema_expr.c, sema_stmt.c): the Sema state and scopes, the type helpers, and the checks more
 * than one file uses, grouped by the file that defines them. Not for use outside the checks: the
 * public interface is sema.h. */
#ifndef TKC_SEMA_INT_H
#define TKC_SEMA_INT_H

#include "sema.h"

typedef struct Scope {
    Vec(Symbol *) syms;
    struct Scope *parent;
} Scope;

/* a symbol the program declares, and its kernel (NULL: a param) */
typedef struct SemaDeclared {
    Symbol *sym;
    SemaKernel *sk;
} SemaDeclared;

typedef struct Sema {
    Arena *a;
    Diag *d;
    Program *prog;
    Scope global;
    Scope *scope;
    SemaKernel *sk;
    bool in_block;
    bool in_entry;          /* checking an entry's statements (sms is defined there) */
    BlockKind bk;
    bool kernel_let;        /* checking a kernel-level let: element reads of tensors allowed */
    bool matmul_ok;         /* the expression being checked may be a matrix product */
    bool at_ok;             /* the expression being checked is a tile (vector) index of a global move */
    Symbol *builtin[BI_COUNT];
    Vec(Symbol *) assigned; /* reg symbols assigned so far, in block order */
    Vec(Symbol *) g2s;      /* shared symbols loaded by TMA, with the block kind in g2s_bk */
    int depth;              /* expression nesting */
    int wg_branch;          /* inside an if whose condition depends on wg */
    bool too_deep;
    Vec(int) g2s_bk;
    Vec(SemaDeclared) declared;
} Sema;

/* sema_wg.c: the top-level statements of a consumer block from the first to the last whose slice bounds
 * read wg become an if on wg with one copy per consumer warpgroup (wg replaced by its index); true when
 * it rewrote body */
bool sema_specialise_wg(Sema *s, StmtList *body);

/* sema_def.c: the program's defs (names, parameters, what their bodies name); a call of a def: e becomes
 * the def's body with the arguments in place and is checked (*is_def false: not a def, e untouched) */
void check_defs(Sema *s);
Type sema_expand_def(Sema *s, Expr *e, bool *is_def);

/* sema_cover.c: the outputs of the kernel being checked (s->sk) are stored, all of them */
void check_outputs(Sema *s);
/* sema_bounds.c: its accesses stay inside their tensors (after check_outputs, on a kernel with a grid) */
void check_bounds(Sema *s);

/* sema_grad.c */
void check_grads(Sema *s, SemaResult *out);
/* sema_entry.c: the entries (after the kernels) */
void check_entries(Sema *s, SemaResult *out);

/* sema_args.c: a kernel's or an entry's arguments, into s->sk */
void check_args_of(Sema *s, Kernel *k);
/* sema.c */
Symbol *lookup(Sema *s, const char *name);
/* sema_scope.c: the checked kernel of that name, or NULL */
SemaKernel *sema_kernel_named(SemaResult *out, const char *name);
/* sema_scope.c: "kernel 'K' is left out of this build: its condition 'C' is false" (sk->left_out) */
const char *left_out_why(Sema *s, const SemaKernel *sk);
Symbol *new_sym(Sema *s, SymKind k, const char *name, Span sp);
const char *symkind_desc(SymKind k);
bool declare(Sema *s, Symbol *y);
/* sema_names.c: the C spellings of names the generated code cannot use as written */
void sema_names(Sema *s, SemaResult *out);
void push_scope(Sema *s, Scope *sc);
void pop_scope(Sema *s);
const char *suggest(Sema *s, const char *name);
Type ty_err(void);
Type ty_int(void);
Type ty_float(void);
Type ty_bool(void);
Type ty_tile(MemSpace sp, DType dt, int r, int c);
Type ty_vec(MemSpace sp, DType dt, int n, VecLayout l);
bool is_scalar(Type t);
bool is_numeric(Type t);
bool is_intlike(Type t);
bool is_tv(Type t);
const char *type_str(Sema *s, Type t);
const char *shape_str(Sema *s, Type t);
bool join_dtype(DType a, DType b, DType *out);

/* sema_expr.c */
bool require_const_int(Sema *s, Expr *e, const char *what, int64_t *out);
bool check_tensor_indices(Sema *s, Expr *ix, const Symbol *t, const char *slice_msg, int at_from);
Type check_expr(Sema *s, Expr *e);
/* the first part of e a host launcher cannot compute (NULL: none): a kernel's requirement takes
 * dimensions, scalar arguments, params, constant lets, inf and any intrinsic; an entry's host value
 * (entry) also its lets and sms, and of the intrinsics cdiv, min and max */
const Expr *not_on_host(const Expr *e, bool entry);

/* sema_stmt.c */
void check_stmts(Sema *s, StmtList *l);

#endif
