/* emit_torch.c - a PyTorch extension for a .tk file's kernels (tkc --emit=torch -o DIR). */
#include <stdio.h>

#include "emit.h"

int emit_torch(Arena *a, const Plan *p, const Program *prog, const EmitOptions *o, const char *dir) {
    (void)a; (void)p; (void)prog; (void)o; (void)dir;
    fprintf(stderr, "tkc: error: --emit=torch is not written yet\n");
    return 2;
}
