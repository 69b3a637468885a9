/* main.c - the tkc driver. main() is the pipeline: parse, check, lower, verify, emit; each
 * phase reports through one Diag, and a phase runs only if the ones before it found no error.
 * Exit status: 0 success, 1 diagnostics in the program, 2 usage errors or unreadable files, 3 out of memory. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "emit.h"
#include "parse.h"
#include "plan.h"
#include "sema.h"

#define TKC_VERSION "0.1.0"

typedef enum { EMIT_CU, EMIT_PLAN, EMIT_AST, EMIT_HEADER, EMIT_REPORT, EMIT_TORCH, EMIT_EXPLAIN } EmitKind;

typedef struct Options {
    const char *input;
    const char *output;
    EmitKind emit;
    bool check;
    bool line_directives;
    bool depfile;           /* -MD */
    const char *depfile_path; /* -MF */
    const char *module_name;  /* --module-name (--emit=torch) */
    Define *defines;
    int ndefines;
} Options;

static void usage(FILE *f) {
    fputs("usage: tkc FILE.tk [-o OUT] [--emit=KIND] [-D NAME=VALUE]... [options]\n"
          "       tkc --explain FILE.tk [-D NAME=VALUE]...\n"
          "\n"
          "Compiles a tile program to self-contained CUDA for Hopper (sm_90a).\n"
          "\n"
          "  -o OUT             write the result to OUT (default: standard output; a directory for torch)\n"
          "  --emit=cu          CUDA source: kernels and host launchers (the default)\n"
          "  --emit=header      a C header declaring the launchers (C and C++)\n"
          "  --emit=torch       a PyTorch extension: sources and a .py module written into the directory -o\n"
          "  --emit=plan        the kernel plan: roles, shared-memory map, swizzles, barriers, schedule\n"
          "  --emit=report      the plan's decisions and budgets as JSON\n"
          "  --emit=ast         the syntax tree\n"
          "  --explain          the plan's decisions and budgets, for a person to read\n"
          "  -D NAME=VALUE      override a compile-time param (an integer) or type (bf16, fp16, ...)\n"
          "  --module-name NAME with --emit=torch: the module's name (default: the .tk file's stem), so that\n"
          "                     -D variants of one .tk can be imported side by side\n"
          "  -MD                also write a Make/Ninja depfile (OUT.d, or the -MF path)\n"
          "  -MF FILE           the depfile's path\n"
          "  --line-directives  #line directives in the CUDA, pointing nvcc and debuggers at .tk lines\n"
          "  --check            run every check, write nothing\n"
          "  --help             this text\n"
          "  --version          the version\n"
          "\n"
          "Exit status: 0 success, 1 errors in the program, 2 usage errors or unreadable files, 3 out of memory.\n",
          f);
}

static int usage_error(const char *fmt, const char *arg) {
    fputs("tkc: error: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs("\n(run 'tkc --help' for usage)\n", stderr);
    return 2;
}

static bool parse_define(const char *s, Define *out) {
    const char *eq = strchr(s, '=');
    if (!eq || eq == s) return false;
    for (const char *p = s; p < eq; p++)
        if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (p > s && *p >= '0' && *p <= '9')))
            return false;
    out->is_dtype = false;
    out->value = 0;
    if (!dtype_from_name(eq + 1, &out->dtype)) {  /* NAME=DTYPE for a `type`, else NAME=INTEGER */
        char *end;
        errno = 0;
        long long v = strtoll(eq + 1, &end, 0);
        if (errno || *end || end == eq + 1 || v < -2147483647LL || v > 2147483647LL) return false;
        out->value = v;
    } else {
        out->is_dtype = true;
    }
    out->name = xstrdup(s);
    ((char *)out->name)[eq - s] = 0;
    out->used = false;
    return true;
}

/* returns -1 to continue, else an exit status */
static int parse_args(int argc, char **argv, Options *o) {
    memset(o, 0, sizeof *o);
    o->defines = xmalloc(sizeof(Define) * (size_t)(argc + 1));
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--version")) {
            printf("tkc %s\n", TKC_VERSION);
            return 0;
        } else if (!strcmp(a, "-o")) {
            if (++i >= argc) return usage_error("%s needs a file name", "-o");
            if (o->output) return usage_error("%s given twice", "-o");
            o->output = argv[i];
        } else if (!strncmp(a, "--emit=", 7)) {
            const char *k = a + 7;
            if (!strcmp(k, "cu")) o->emit = EMIT_CU;
            else if (!strcmp(k, "plan")) o->emit = EMIT_PLAN;
            else if (!strcmp(k, "ast")) o->emit = EMIT_AST;
            else if (!strcmp(k, "header")) o->emit = EMIT_HEADER;
            else if (!strcmp(k, "report")) o->emit = EMIT_REPORT;
            else if (!strcmp(k, "torch")) o->emit = EMIT_TORCH;
            else return usage_error("unknown --emit kind '%s' (expected cu, header, torch, plan, report or ast)", k);
        } else if (!strcmp(a, "--explain")) {
            o->emit = EMIT_EXPLAIN;
        } else if (!strcmp(a, "--line-directives")) {
            o->line_directives = true;
        } else if (!strcmp(a, "-MD")) {
            o->depfile = true;
        } else if (!strcmp(a, "-MF")) {
            if (++i >= argc) return usage_error("%s needs a file name", "-MF");
            o->depfile_path = argv[i];
            o->depfile = true;
        } else if (!strcmp(a, "--check")) {
            o->check = true;
        } else if (!strcmp(a, "--module-name")) {
            if (++i >= argc) return usage_error("%s needs a name", "--module-name");
            const char *m = argv[i];
            bool ok = *m && !(*m >= '0' && *m <= '9');
            for (const char *c = m; *c; c++)
                ok &= *c == '_' || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9');
            if (!ok) return usage_error("--module-name '%s' is not a Python identifier (letters, digits, '_')", m);
            o->module_name = m;
        } else if (!strncmp(a, "-D", 2)) {
            const char *d = a[2] ? a + 2 : (++i < argc ? argv[i] : NULL);
            if (!d) return usage_error("%s needs NAME=VALUE", "-D");
            if (!parse_define(d, &o->defines[o->ndefines]))
                return usage_error("bad -D '%s' (expected NAME=INTEGER, or NAME=DTYPE for a type)", d);
            for (int k = 0; k < o->ndefines; k++)
                if (!strcmp(o->defines[k].name, o->defines[o->ndefines].name))
                    return usage_error("-D %s given twice", o->defines[k].name);
            o->ndefines++;
        } else if (a[0] == '-' && a[1]) {
            return usage_error("unknown option '%s'", a);
        } else {
            if (o->input) return usage_error("more than one input file ('%s')", a);
            o->input = a;
        }
    }
    if (!o->input) return usage_error("%s", "no input file");
    if (o->emit == EMIT_TORCH && !o->output && !o->check) return usage_error("%s", "--emit=torch needs -o DIR");
    if (o->module_name && o->emit != EMIT_TORCH) return usage_error("%s", "--module-name goes with --emit=torch");
    if (o->depfile && !o->depfile_path && (!o->output || !strcmp(o->output, "-")))
        return usage_error("%s", "-MD without -o needs -MF FILE");
    return -1;
}

static int write_output(const Options *o, const char *text) {
    if (o->check) return 0;
    if (!o->output || !strcmp(o->output, "-")) {
        fputs(text, stdout);
        return fflush(stdout) ? 2 : 0;
    }
    if (write_file(o->output, text, strlen(text))) {
        fprintf(stderr, "tkc: error: cannot write '%s': %s\n", o->output, strerror(errno));
        return 2;
    }
    return 0;
}

/* a path as Make and Ninja read it in a depfile: ' ' and '#' escaped with '\\', '$' doubled */
static void dep_path(StrBuf *b, const char *path) {
    for (const char *c = path; *c; c++) {
        if (*c == ' ' || *c == '#') sb_putc(b, '\\');
        if (*c == '$') sb_putc(b, '$');
        sb_putc(b, *c);
    }
}

/* A Make/Ninja depfile: "OUT: IN IMPORT...", one target. */
static int write_depfile(const Options *o, const Program *prog) {
    if (!o->depfile || o->check) return 0;
    StrBuf b;
    sb_init(&b);
    dep_path(&b, o->output ? o->output : "-");
    sb_putc(&b, ':');
    for (int i = 0; i < prog->files.n; i++) {
        sb_puts(&b, " \\\n ");
        dep_path(&b, prog->files.v[i]);
    }
    sb_putc(&b, '\n');
    const char *path = o->depfile_path;
    char *own = NULL;
    if (!path) {
        own = xmalloc(strlen(o->output) + 3);
        strcpy(own, o->output);
        strcat(own, ".d");
        path = own;
    }
    int rc = 0;
    if (write_file(path, b.s, b.len)) {
        fprintf(stderr, "tkc: error: cannot write '%s': %s\n", path, strerror(errno));
        rc = 2;
    }
    free(own);
    sb_free(&b);
    return rc;
}

static void free_options(Options *o) {
    for (int i = 0; i < o->ndefines; i++) free((char *)o->defines[i].name);
    free(o->defines);
    o->defines = NULL;
    o->ndefines = 0;
}

int main(int argc, char **argv) {
    Options opt;
    int rc = parse_args(argc, argv, &opt);
    if (rc >= 0) {
        free_options(&opt);
        return rc;
    }

    Arena arena = {0};
    Diag diag;
    diag_init(&diag, &arena, stderr);
    Program prog = {0};

    struct stat st;
    if (stat(opt.input, &st) == 0 && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "tkc: error: '%s' is a directory, not a .tk file\n", opt.input);
        free_options(&opt);
        return 2;
    }
    FILE *probe = fopen(opt.input, "rb");
    if (!probe) {
        fprintf(stderr, "tkc: error: cannot read '%s': %s\n", opt.input, strerror(errno));
        free_options(&opt);
        return 2;
    }
    fclose(probe);

    rc = 1;
    char *text = NULL;
    /* -D NAME=DTYPE reaches the parser: it applies each to its `type NAME` */
    TypeDefine *tdefs = arena_alloc(&arena, sizeof(TypeDefine) * (size_t)(opt.ndefines + 1));
    for (int i = 0; i < opt.ndefines; i++)
        if (opt.defines[i].is_dtype) tdefs[prog.ntype_defines++] = (TypeDefine){opt.defines[i].name, opt.defines[i].dtype, false};
    prog.type_defines = tdefs;
    if (!parse_file(&arena, &diag, &prog, opt.input, SPAN_NONE, 0)) {
        rc = 2;
        goto done;
    }
    for (int i = 0; i < prog.ntype_defines; i++)
        if (!tdefs[i].used) {
            bool param = false;
            for (int j = 0; j < prog.params.n; j++) param |= !strcmp(prog.params.v[j]->name, tdefs[i].name);
            if (param)
                diag_error(&diag, SPAN_NONE, "-D %s=%s: '%s' is a param (an integer), not a type", tdefs[i].name,
                           dtype_name[tdefs[i].dt], tdefs[i].name);
            else
                diag_error(&diag, SPAN_NONE, "-D %s: the program has no type named '%s' (declare it with 'type %s = ...;')",
                           tdefs[i].name, tdefs[i].name, tdefs[i].name);
        }
    if (diag.nerrors) goto done;
    if (opt.emit == EMIT_AST) {
        for (int i = 0; i < opt.ndefines; i++) {
            if (opt.defines[i].is_dtype) continue; /* applied by the parser */
            bool found = false;
            for (int j = 0; j < prog.params.n; j++)
                if (!strcmp(prog.params.v[j]->name, opt.defines[i].name)) {
                    prog.params.v[j]->overridden = true;
                    prog.params.v[j]->override_value = opt.defines[i].value;
                    found = true;
                }
            if (!found)
                diag_error(&diag, SPAN_NONE, "-D %s: the program has no param named '%s'", opt.defines[i].name,
                           opt.defines[i].name);
        }
        if (diag.nerrors) goto done;
        text = ast_dump(&prog, &diag);
        rc = write_output(&opt, text);
        goto done;
    }
    SemaResult sr = {0};
    if (!sema_run(&arena, &diag, &prog, opt.defines, opt.ndefines, &sr)) goto done;
    Plan plan = {0};
    if (!lower_program(&arena, &diag, &prog, &sr, &plan)) goto done;
    if (!plan_verify(&plan, &diag)) goto done;
    EmitOptions eo = {.source_path = opt.input, .module_name = opt.module_name,
                      .tkc_version = TKC_VERSION,
                      .output_name = opt.output && strcmp(opt.output, "-") ? opt.output : "<stdout>",
                      .line_directives = opt.line_directives,
                      .diag = &diag};
    switch (opt.emit) {
    case EMIT_PLAN: text = plan_dump(&plan); break;
    case EMIT_HEADER: text = emit_header(&arena, &plan, &prog, &eo); break;
    case EMIT_REPORT: text = emit_report(&arena, &plan, &prog, &eo); break;
    case EMIT_EXPLAIN: text = emit_explain(&arena, &plan, &prog, &eo); break;
    case EMIT_TORCH:
        rc = opt.check ? 0 : emit_torch(&arena, &plan, &prog, &eo, opt.output);
        if (!rc) rc = write_depfile(&opt, &prog);
        goto done;
    default: text = emit_cuda(&arena, &plan, &prog, &eo); break;
    }
    rc = write_output(&opt, text);
    if (!rc) rc = write_depfile(&opt, &prog);

done:
    free(text);
    free_options(&opt);
    arena_free(&arena);
    return rc;
}
