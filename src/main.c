/* main.c - the tkc driver. main() is the pipeline: parse, check, lower, verify, emit; each
 * phase reports through one Diag, and a phase runs only if the ones before it found no error.
 * Exit status: 0 success, 1 diagnostics in the program, 2 usage errors or unreadable files, 3 out of memory. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dispatch.h"
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
    const char *dispatch;     /* --dispatch TABLE */
    bool no_dispatch;         /* --no-dispatch: not the table the .tk names */
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
          "  --dispatch TABLE   compile every variant the table names (-D sets) into one file, behind launchers\n"
          "                     that pick one at each launch by the table's rules on the run-time dimensions\n"
          "  --no-dispatch      compile the program once, not with the table its `dispatch` statement names\n"
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
        } else if (!strcmp(a, "--dispatch")) {
            if (++i >= argc) return usage_error("%s needs a table file", "--dispatch");
            if (o->dispatch) return usage_error("%s given twice", "--dispatch");
            o->dispatch = argv[i];
        } else if (!strcmp(a, "--no-dispatch")) {
            o->no_dispatch = true;
        } else if (!strncmp(a, "-D", 2)) {
            const char *d = a[2] ? a + 2 : (++i < argc ? argv[i] : NULL);
            if (!d) return usage_error("%s needs NAME=VALUE", "-D");
            if (!define_parse(NULL, d, &o->defines[o->ndefines]))
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
    if (o->dispatch && o->no_dispatch) return usage_error("%s", "--dispatch and --no-dispatch together");
    if (o->dispatch && o->emit == EMIT_AST) return usage_error("%s", "--dispatch does not go with --emit=ast (the syntax tree is one program's)");
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

/* Parses, checks, lowers and verifies the program with these -D overrides into prog and plan.
 * Returns 0, 1 (diagnostics) or 2 (unreadable input). With --emit=ast it stops after parsing and
 * returns the dump in *ast_text. */
static int compile(Arena *a, Diag *d, const Options *opt, Define *defs, int ndefs, Program *prog, Plan *plan, char **ast_text) {
    /* -D NAME=DTYPE reaches the parser: it applies each to its `type NAME` */
    TypeDefine *tdefs = arena_alloc(a, sizeof(TypeDefine) * (size_t)(ndefs + 1));
    for (int i = 0; i < ndefs; i++)
        if (defs[i].is_dtype) tdefs[prog->ntype_defines++] = (TypeDefine){defs[i].name, defs[i].dtype, false};
    prog->type_defines = tdefs;
    int errors0 = d->nerrors;
    if (!parse_file(a, d, prog, opt->input, SPAN_NONE, 0)) return 2;
    for (int i = 0; i < prog->ntype_defines; i++)
        if (!tdefs[i].used) {
            bool param = false;
            for (int j = 0; j < prog->params.n; j++) param |= !strcmp(prog->params.v[j]->name, tdefs[i].name);
            if (param)
                diag_error(d, SPAN_NONE, "-D %s=%s: '%s' is a param (an integer), not a type", tdefs[i].name,
                           dtype_name[tdefs[i].dt], tdefs[i].name);
            else
                diag_error(d, SPAN_NONE, "-D %s: the program has no type named '%s' (declare it with 'type %s = ...;')",
                           tdefs[i].name, tdefs[i].name, tdefs[i].name);
        }
    if (d->nerrors != errors0) return 1;
    if (opt->emit == EMIT_AST) {
        for (int i = 0; i < ndefs; i++) {
            if (defs[i].is_dtype) continue; /* applied by the parser */
            bool found = false;
            for (int j = 0; j < prog->params.n; j++)
                if (!strcmp(prog->params.v[j]->name, defs[i].name)) {
                    prog->params.v[j]->overridden = true;
                    prog->params.v[j]->override_value = defs[i].value;
                    found = true;
                }
            if (!found) diag_error(d, SPAN_NONE, "-D %s: the program has no param named '%s'", defs[i].name, defs[i].name);
        }
        if (d->nerrors != errors0) return 1;
        *ast_text = ast_dump(prog, d);
        return 0;
    }
    SemaResult sr = {0};
    if (!sema_run(a, d, prog, defs, ndefs, &sr)) return 1;
    if (!lower_program(a, d, prog, &sr, plan)) return 1;
    if (!plan_verify(plan, d)) return 1;
    return 0;
}

/* a variant of ds that sets a param a -D of the command line sets too (*name: the param), or NULL */
static const DispatchVariant *define_clash(const Options *opt, const Dispatch *ds, const char **name) {
    for (int v = 0; v < ds->variants.n; v++)
        for (int i = 0; i < ds->variants.v[v].ndefines; i++)
            for (int j = 0; j < opt->ndefines; j++)
                if (!strcmp(ds->variants.v[v].defines[i].name, opt->defines[j].name)) {
                    *name = opt->defines[j].name;
                    return &ds->variants.v[v];
                }
    return NULL;
}

/* every variant of a parsed table compiled with the command line's -D and its own, then the
 * table checked against them */
static int compile_variants(Arena *a, Diag *d, const Options *opt, Dispatch *ds) {
    const char *clash;
    const DispatchVariant *cv = define_clash(opt, ds, &clash);
    if (cv) {
        diag_error(d, cv->span, "variant '%s' sets %s, which -D on the command line sets too", cv->name, clash);
        return 1;
    }
    for (int v = 0; v < ds->variants.n; v++) {
        DispatchVariant *dv = &ds->variants.v[v];
        int n = opt->ndefines + dv->ndefines;
        Define *defs = arena_alloc(a, sizeof(Define) * (size_t)(n + 1));
        for (int i = 0; i < opt->ndefines; i++) defs[i] = opt->defines[i];
        for (int i = 0; i < dv->ndefines; i++) defs[opt->ndefines + i] = dv->defines[i];
        dv->prog = ARENA_NEW(a, Program);
        dv->plan = ARENA_NEW(a, Plan);
        int r = compile(a, d, opt, defs, n, dv->prog, dv->plan, NULL);
        if (r) {
            diag_note(d, dv->span, "while compiling variant '%s' (%s)", dv->name, dispatch_variant_text(a, dv));
            return r;
        }
    }
    return dispatch_check(a, d, ds) ? 0 : 1;
}

/* --emit=report of a dispatched program: the first variant's report (the launchers are the same
 * in every variant), with a "dispatch" member holding the rules and every variant's own report */
static char *dispatch_report(Arena *a, const Dispatch *ds, const EmitOptions *eo) {
    StrBuf b;
    sb_init(&b);
    sb_printf(&b, "{\n  \"dispatch\": {\"table\": \"%s\", \"rules\": [", path_base(ds->path));
    for (int r = 0; r < ds->rules.n; r++)
        sb_printf(&b, "%s\n    {\"when\": \"%s\", \"variant\": \"%s\", \"applies\": %s}", r ? "," : "",
                  dispatch_rule_text(a, &ds->rules.v[r], false), ds->variants.v[ds->rules.v[r].variant].name,
                  ds->rules.v[r].left_out ? "false" : "true");
    sb_puts(&b, "\n  ], \"variants\": [");
    char *first = NULL;
    for (int v = 0, n = 0; v < ds->variants.n; v++) {
        const DispatchVariant *dv = &ds->variants.v[v];
        if (dv->unused) continue; /* no rule of this build picks it */
        char *t = emit_report(a, dv->plan, dv->prog, eo);
        sb_printf(&b, "%s\n{\"variant\": \"%s\", \"defines\": \"%s\", \"report\":\n%s}", n ? "," : "", dv->name,
                  dispatch_variant_text(a, dv), t);
        if (n++) free(t);
        else first = t;
    }
    sb_puts(&b, "\n  ]},");
    const char *rest = first ? strchr(first, '{') : NULL;
    sb_puts(&b, rest ? rest + 1 : "}\n");
    free(first);
    return sb_take(&b);
}

/* --emit=plan or --explain of a dispatched program: the rules, then each variant's */
static char *dispatch_each(Arena *a, const Dispatch *ds, const EmitOptions *eo, EmitKind kind) {
    if (kind == EMIT_REPORT) return dispatch_report(a, ds, eo);
    StrBuf b;
    sb_init(&b);
    const char *hash = kind == EMIT_PLAN ? "#" : "";
    sb_printf(&b, "%s dispatch table %s: the first rule that holds at launch picks the variant\n", hash, path_base(ds->path));
    dispatch_rules_lines(&b, a, ds, hash);
    if (ds->kernels.n) {
        sb_printf(&b, "%s  dispatched kernels:", hash);
        for (int i = 0; i < ds->kernels.n; i++) sb_printf(&b, " %s", ds->kernels.v[i]);
        sb_puts(&b, " (the others: the last rule's variant)\n");
    }
    for (int v = 0; v < ds->variants.n; v++) {
        const DispatchVariant *dv = &ds->variants.v[v];
        if (dv->unused) {
            sb_printf(&b, "\n%s variant %s (%s): no rule of this build picks it, so it is left out\n",
                      kind == EMIT_PLAN ? "#" : "====", dv->name, dispatch_variant_text(a, dv));
            continue;
        }
        char *t = kind == EMIT_PLAN ? plan_dump(dv->plan) : emit_explain(a, dv->plan, dv->prog, eo);
        sb_printf(&b, "\n%s variant %s (%s)\n%s", kind == EMIT_PLAN ? "#" : "====", dv->name, dispatch_variant_text(a, dv), t);
        free(t);
    }
    return sb_take(&b);
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
    Plan plan = {0};
    Dispatch ds = {0};
    bool dispatched = false;
    if (!opt.dispatch) {
        rc = compile(&arena, &diag, &opt, opt.defines, opt.ndefines, &prog, &plan, &text);
        if (rc || text) goto ast_done;
        /* the table the .tk names: unless --no-dispatch, or the command line sets a param the
         * table's variants set (that -D picks the variant) */
        if (prog.dispatch && !opt.no_dispatch) {
            rc = dispatch_parse(&arena, &diag, prog.dispatch, &ds);
            if (rc) goto done;
            const char *clash;
            if (!define_clash(&opt, &ds, &clash)) {
                rc = compile_variants(&arena, &diag, &opt, &ds);
                if (rc) goto done;
                dispatched = true;
            }
        }
    } else {
        rc = dispatch_parse(&arena, &diag, opt.dispatch, &ds);
        if (!rc) rc = compile_variants(&arena, &diag, &opt, &ds);
        if (rc) goto done;
        dispatched = true;
    }
    if (dispatched) {
        prog = *ds.variants.v[0].prog;
        plan = *ds.variants.v[0].plan;
        vec_push(&arena, &prog.files, (const char *)ds.path);  /* the depfile: a changed table rebuilds too */
    }
    rc = 1;
    EmitOptions eo = {.source_path = opt.input, .module_name = opt.module_name,
                      .tkc_version = TKC_VERSION,
                      .output_name = opt.output && strcmp(opt.output, "-") ? opt.output : "<stdout>",
                      .line_directives = opt.line_directives,
                      .diag = &diag,
                      .dispatch = dispatched ? &ds : NULL};
    switch (opt.emit) {
    case EMIT_PLAN: text = dispatched ? dispatch_each(&arena, &ds, &eo, EMIT_PLAN) : plan_dump(&plan); break;
    case EMIT_HEADER: text = emit_header(&arena, &plan, &prog, &eo); break;
    case EMIT_REPORT: text = dispatched ? dispatch_each(&arena, &ds, &eo, EMIT_REPORT) : emit_report(&arena, &plan, &prog, &eo); break;
    case EMIT_EXPLAIN: text = dispatched ? dispatch_each(&arena, &ds, &eo, EMIT_EXPLAIN) : emit_explain(&arena, &plan, &prog, &eo); break;
    case EMIT_TORCH:
        rc = opt.check ? 0 : emit_torch(&arena, &plan, &prog, &eo, opt.output);
        if (!rc) rc = write_depfile(&opt, &prog);
        goto done;
    default: text = emit_cuda(&arena, &plan, &prog, &eo); break;
    }
    rc = write_output(&opt, text);
    if (!rc) rc = write_depfile(&opt, &prog);
    goto done;

ast_done:
    if (text) rc = write_output(&opt, text);
done:
    free(text);
    free_options(&opt);
    arena_free(&arena);
    return rc;
}
