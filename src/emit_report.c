/* emit_report.c - the plan explained: JSON (tkc --emit=report) and prose (tkc --explain). */
#include "emit.h"

char *emit_report(Arena *a, const Plan *p, const Program *prog, const EmitOptions *o) {
    (void)a; (void)p; (void)prog; (void)o;
    return NULL; /* not written yet */
}

char *emit_explain(Arena *a, const Plan *p, const Program *prog, const EmitOptions *o) {
    (void)a; (void)p; (void)prog; (void)o;
    return NULL; /* not written yet */
}
