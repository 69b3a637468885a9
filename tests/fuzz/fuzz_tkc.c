/* fuzz_tkc.c - libFuzzer targets for the compiler: the input is a .tk file, which goes through
 * what `tkc` does (parse, check, lower, verify, then every emitter but torch's, which writes
 * files) with diagnostics to /dev/null. Built with -DFUZZ_PARSE_ONLY it is the parser's target:
 * parse and dump the syntax tree, nothing after. A crash, a sanitizer report, a timeout or a leak
 * is a finding; diagnostics are not. Built and run by tests/fuzz/run.sh (clang, ASan + UBSan). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emit.h"
#include "parse.h"
#include "plan.h"
#include "sema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
