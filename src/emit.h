/* emit.h - the CUDA emitter: prints a verified plan as one self-contained .cu file (device code
 * with inline PTX from templates/, and a host launcher per kernel).
 * Invariant: output depends only on the plan and options: same input, same bytes. */
#ifndef TKC_EMIT_H
#define TKC_EMIT_H

#include "plan.h"

struct Dispatch;

typedef struct EmitOptions {
    const char *source_path;    /* as given on the command line, for the header comment */
    const char *tkc_version;
    const char *output_name;    /* the file being written ("<stdout>" when none), for #line */
    bool line_directives;       /* #line directives that point nvcc and debuggers at .tk lines */
    const Diag *diag;           /* the source files, for line numbers */
    const char *module_name;    /* --emit=torch: the module's name (NULL: the .tk file's stem) */
    const struct Dispatch *dispatch;  /* --dispatch: the variants (their plans) and the rule that picks
                                       * one at launch; NULL for a program compiled once */
} EmitOptions;

/* Each returns heap text the caller frees. */
char *emit_cuda(Arena *a, const Plan *p, const Program *prog, const EmitOptions *o);
/* --emit=header: a C header declaring every kernel's launcher (emit_header.c) */
char *emit_header(Arena *a, const Plan *p, const Program *prog, const EmitOptions *o);
/* --emit=report: the plan's decisions and budgets as JSON (emit_report.c) */
char *emit_report(Arena *a, const Plan *p, const Program *prog, const EmitOptions *o);
/* --explain: the same for a person to read (emit_explain.c) */
char *emit_explain(Arena *a, const Plan *p, const Program *prog, const EmitOptions *o);
/* --emit=torch: writes a PyTorch extension (sources and a .py module) into dir; returns 0, or
 * prints a message and returns 2 when dir cannot be written (emit_torch.c) */
int emit_torch(Arena *a, const Plan *p, const Program *prog, const EmitOptions *o, const char *dir);

#endif
