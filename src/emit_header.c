/* emit_header.c - the C header of a .tk file's launchers (tkc --emit=header). */
#include "emit.h"

char *emit_header(Arena *a, const Plan *p, const Program *prog, const EmitOptions *o) {
    (void)a; (void)p; (void)prog; (void)o;
    return NULL; /* not written yet */
}
