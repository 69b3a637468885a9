/* emit.h - the CUDA emitter: prints a verified plan as one self-contained .cu file (device code
 * with inline PTX from templates/, and a host launcher per kernel).
 * Invariant: output depends only on the plan and options: same input, same bytes. */
#ifndef TKC_EMIT_H
#define TKC_EMIT_H

#include "plan.h"

typedef struct EmitOptions {
    const char *source_path;    /* as given on the command line, for the header comment */
    const char *tkc_version;
} EmitOptions;

/* Returns heap text the caller frees. */
char *emit_cuda(Arena *a, const Plan *p, const Program *prog, const EmitOptions *o);

#endif
