/* report_int.h - the facts tkc --emit=report (emit_report.c) and --explain (emit_explain.c)
 * both print, computed from the plan once: statement text, register tile arithmetic, the
 * products, barrier and buffer bytes. Private to those two files; the public interface is
 * emit.h. */
#ifndef TKC_REPORT_INT_H
#define TKC_REPORT_INT_H

#include "api.h"
#include "emit.h"

/* the products the consumers issue, each once: setup, the steady step, finish */
typedef struct MmaRef {
    const PlanMma *m;
    const PStmt *st;
    const char *where;  /* "setup", "step", "finish" */
    bool prev;          /* reads the previous step's stage */
} MmaRef;
typedef Vec(MmaRef) MmaRefs;

/* emit_report.c */
const char *order_name(OrderKind o);
char *stmt_str(Arena *a, const PStmt *st);
bool reg_tile_arith(const PlanKernel *pk, const PlanReg *r, int *rows_wg, int *cols, int *bytes, int *cplx);
void collect_mmas(Arena *a, MmaRefs *out, const POpList *ops, const char *where);
MmaRefs all_mmas(Arena *a, const PlanKernel *pk);
int barrier_bytes(const PlanKernel *pk);
int buffers_bytes(const PlanKernel *pk);
int group_of_barrier(const PlanKernel *pk, int bar, bool *is_full);

#endif
