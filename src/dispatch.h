/* dispatch.h - launch-time dispatch: several compiled variants of one .tk (param sets) behind one
 * launcher per kernel, and the rule that picks a variant from the launch's run-time dimensions.
 * The rule is a table file (`--dispatch FILE`), written by a tuning run on the GPU and committed:
 *
 *   # comments
 *   variant long  SHORT=0            a name and the -D overrides that make it
 *   variant short SHORT=1
 *   kernel attn_fwd                  optional: the kernels dispatched (default: every kernel);
 *                                    the others are the last rule's variant
 *   when N <= 1536: short            conditions on run-time dimensions (a dimension or a product
 *   when B * H <= 8 && N > 4096: x   of them, compared with an integer), joined by &&; a condition
 *   when D == 64 && N <= 2560: short on a compile-time param (the command line's -D) is decided
 *                                    when tkc runs: a rule whose param test fails is left out
 *   otherwise: long                  required, last
 *
 * The first rule that holds picks the variant. Every variant compiles the whole program; each
 * dispatched kernel must keep the same launcher (parameters, types, order) in every variant.
 * Invariant: parsing and checking depend only on the file's bytes and the program (deterministic). */
#ifndef TKC_DISPATCH_H
#define TKC_DISPATCH_H

#include "diag.h"
#include "plan.h"
#include "sema.h"

typedef enum { DOP_LT, DOP_LE, DOP_GT, DOP_GE, DOP_EQ, DOP_NE } DispatchOp;

typedef struct DispatchCond {
    Vec(const char *) dims;     /* their product */
    DispatchOp op;
    int64_t value;
    Span span;
    /* set by dispatch_check: the name is a compile-time param of the program (the same in every
     * variant: one the command line's -D sets, say, not one a variant sets), so the condition is
     * decided when tkc runs; `holds` is its value */
    bool is_static, holds;
} DispatchCond;

typedef struct DispatchRule {
    Vec(DispatchCond) conds;    /* all must hold; none: `otherwise` */
    int variant;
    Span span;
    const char *left_out;       /* why the rule is not in the launcher (a param test fails, or an
                                 * earlier rule always holds), or NULL: it applies */
} DispatchRule;

typedef struct DispatchVariant {
    const char *name;
    Define *defines;
    int ndefines;
    Span span;
    /* filled by the driver: the program compiled with this variant's defines */
    Program *prog;
    Plan *plan;
    /* set by dispatch_check: no rule of this build picks it (each that does is left out), so the
     * .cu, the plan and the explanation leave it out */
    bool unused;
} DispatchVariant;

typedef struct Dispatch {
    const char *path;
    Vec(DispatchVariant) variants;
    Vec(DispatchRule) rules;
    Vec(const char *) kernels;  /* empty: every kernel */
    Vec(Span) kernel_spans;
} Dispatch;

extern const char *const dispatch_op_text[];

/* Reads and parses a table: 0, 1 (diagnostics: a malformed table) or 2 (it cannot be read). */
int dispatch_parse(Arena *a, Diag *d, const char *path, Dispatch *out);
/* After every variant compiled: the dispatched kernels exist in every variant with one launcher,
 * and every name a rule tests is a run-time dimension of each of them or a param with one value
 * in every variant (whose conditions it decides here: is_static, holds, left_out). */
/* the variants some rule of this build picks */
int dispatch_variants_used(const Dispatch *ds);
bool dispatch_check(Arena *a, Diag *d, Dispatch *ds);
/* is kernel `name` dispatched (else it comes from the last rule's variant) */
bool dispatch_covers(const Dispatch *ds, const char *name);
/* "N <= 1536 && B * H <= 8" (or "otherwise"); with c_code, the launcher's C condition: only the
 * run-time tests, the integers as long long ("" when none is left) */
char *dispatch_rule_text(Arena *a, const DispatchRule *r, bool c_code);
/* every rule, a line each: "PREFIX  RULE -> VARIANT (DEFINES)[: left out, WHY]" */
void dispatch_rules_lines(StrBuf *b, Arena *a, const Dispatch *ds, const char *prefix);
/* "SHORT=1, BN=128" */
char *dispatch_variant_text(Arena *a, const DispatchVariant *v);

#endif
