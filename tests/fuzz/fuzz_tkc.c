/* fuzz_tkc.c - libFuzzer targets for the compiler: the input is a .tk file, which goes through
 * what `tkc` does (parse, check, lower, verify, then every emitter but torch's, which writes
 * files) with diagnostics to /dev/null. Built with -DFUZZ_PARSE_ONLY it is the parser's target:
 * parse and dump the syntax tree, nothing after. Built with -DFUZZ_DISPATCH the input is a
 * dispatch table (`tkc --dispatch`) for a small fixed program: the table's parser, each variant
 * compiled, the table's checks, and the dispatched CUDA and header. A crash, a sanitizer report,
 * a timeout or a leak is a finding; diagnostics are not. Built and run by tests/fuzz/run.sh
 * (clang, ASan + UBSan). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dispatch.h"
#include "emit.h"
#include "parse.h"
#include "plan.h"
#include "sema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifdef FUZZ_DISPATCH
/* the program every table is tried against: a param the variants can set, one derived from it,
 * a type, two run-time dimensions and a require that reads a param */
static const char program[] =
    "param P = 0;\nparam Q = P + 1;\ntype E = bf16;\n"
    "kernel pick(in X: E[M, 64], in W: E[N, 64], out Y: E[M, 64]) {\n"
    "  require M > P;\n  grid (m: cdiv(M, 64));\n  shared x: E[64, 64];\n  reg r: E[64, 64];\n"
    "  setup { x <- X[block.m, 0]; }\n  finish { r <- x; Y[block.m, 0] <- r; }\n}\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char tk[64], table[64];
    static FILE *sink;
    if (!*tk) {
        snprintf(tk, sizeof tk, "/tmp/tkc_fuzzd_%d.tk", (int)getpid());
        snprintf(table, sizeof table, "/tmp/tkc_fuzzd_%d.dispatch", (int)getpid());
        sink = fopen("/dev/null", "w");
        FILE *f = fopen(tk, "wb");
        if (!f) return 0;
        fputs(program, f);
        fclose(f);
    }
    if (size > (1u << 14)) return 0;
    FILE *f = fopen(table, "wb");
    if (!f) return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    Arena arena = {0};
    Diag diag;
    diag_init(&diag, &arena, sink);
    Dispatch ds;
    if (dispatch_parse(&arena, &diag, table, &ds) == 0 && ds.variants.n <= 4) {
        bool ok = true;
        for (int v = 0; v < ds.variants.n && ok; v++) {
            DispatchVariant *dv = &ds.variants.v[v];
            dv->prog = ARENA_NEW(&arena, Program);
            dv->plan = ARENA_NEW(&arena, Plan);
            TypeDefine *td = arena_alloc(&arena, sizeof(TypeDefine) * (size_t)(dv->ndefines + 1));
            for (int i = 0; i < dv->ndefines; i++)
                if (dv->defines[i].is_dtype) td[dv->prog->ntype_defines++] = (TypeDefine){dv->defines[i].name, dv->defines[i].dtype, false};
            dv->prog->type_defines = td;
            SemaResult sr = {0};
            ok = parse_file(&arena, &diag, dv->prog, tk, SPAN_NONE, 0) && !diag.nerrors &&
                 sema_run(&arena, &diag, dv->prog, dv->defines, dv->ndefines, &sr) &&
                 lower_program(&arena, &diag, dv->prog, &sr, dv->plan) && plan_verify(dv->plan, &diag);
        }
        if (ok && dispatch_check(&arena, &diag, &ds)) {
            EmitOptions eo = {.source_path = tk, .tkc_version = "fuzz", .output_name = "<stdout>", .diag = &diag,
                              .dispatch = &ds};
            const DispatchVariant *v0 = &ds.variants.v[0];
            char *texts[] = {emit_cuda(&arena, v0->plan, v0->prog, &eo), emit_header(&arena, v0->plan, v0->prog, &eo)};
            for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) free(texts[i]);
        }
    }
    arena_free(&arena);
    return 0;
}
#else

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char path[64];
    static FILE *sink;
    if (!*path) {
        snprintf(path, sizeof path, "/tmp/tkc_fuzz_%d.tk", (int)getpid());
        sink = fopen("/dev/null", "w");
    }
    if (size > (1u << 16)) return 0;
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    Arena arena = {0};
    Diag diag;
    diag_init(&diag, &arena, sink);
    Program prog = {0};
    if (parse_file(&arena, &diag, &prog, path, SPAN_NONE, 0) && !diag.nerrors) {
        char *ast = ast_dump(&prog, &diag);
        free(ast);
#ifndef FUZZ_PARSE_ONLY
        SemaResult sr = {0};
        Plan plan = {0};
        if (sema_run(&arena, &diag, &prog, NULL, 0, &sr) && lower_program(&arena, &diag, &prog, &sr, &plan) &&
            plan_verify(&plan, &diag)) {
            EmitOptions eo = {.source_path = path, .tkc_version = "fuzz", .output_name = "<stdout>", .diag = &diag};
            char *texts[] = {plan_dump(&plan), emit_cuda(&arena, &plan, &prog, &eo), emit_header(&arena, &plan, &prog, &eo),
                             emit_report(&arena, &plan, &prog, &eo), emit_explain(&arena, &plan, &prog, &eo)};
            for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) free(texts[i]);
        }
#endif
    }
    arena_free(&arena);
    return 0;
}
#endif
