/* parse.c - reads a .tk file, registers it for diagnostics and runs the scanner and parser over
 * it. Imports are resolved relative to the importing file and parsed once each. */
#define _XOPEN_SOURCE 700
#include "parse.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tk.tab.h"

typedef void *yyscan_t;
int tk_yylex_init_extra(ParseCtx *extra, yyscan_t *scanner);
int tk_yylex_destroy(yyscan_t scanner);
struct yy_buffer_state *tk_yy_scan_bytes(const char *bytes, int len, yyscan_t scanner);
int tk_yyparse(void *scanner, ParseCtx *pc);

static char *resolve_import(Arena *a, Diag *d, Span from, const char *path) {
    if (path[0] == '/' || from.file < 0) return arena_strdup(a, path);
    const char *importer = d->files.v[from.file].path;
    const char *slash = strrchr(importer, '/');
    if (!slash) return arena_strdup(a, path);
    return arena_printf(a, "%.*s/%s", (int)(slash - importer), importer, path);
}

void parse_dispatch(ParseCtx *pc, const char *path, Span s) {
    if (pc->depth > 0) return; /* an imported file's table is not the importing program's */
    if (pc->prog->dispatch) {
        diag_error(pc->diag, s, "a second dispatch table: a program names at most one");
        return;
    }
    pc->prog->dispatch = resolve_import(pc->arena, pc->diag, s, path);
    pc->prog->dispatch_written = path;
    pc->prog->dispatch_span = s;
}

bool parse_file(Arena *a, Diag *d, Program *prog, const char *path, Span from, int depth) {
    const char *full = from.file >= 0 ? resolve_import(a, d, from, path) : path;
    /* the same file under another spelling (lib/../x.tk) is the same file */
    char *real = realpath(full, NULL);
    const char *key = real ? arena_strdup(a, real) : full;
    free(real);
    for (int i = 0; i < prog->real_files.n; i++)
        if (!strcmp(prog->real_files.v[i], key)) return true; /* imported already */
    if (depth > 16) {
        diag_error(d, from, "imports nest deeper than 16 files");
        return false;
    }
    size_t len;
    const char *why = NULL;
    char *text = read_source(full, &len, &why);
    if (!text) {
        if (from.file >= 0) diag_error(d, from, "cannot read imported file '%s': %s", full, why);
        else diag_error(d, SPAN_NONE, "cannot read '%s': %s", full, why);
        return false;
    }
    char *kept = arena_strndup(a, text, len);
    free(text);
    vec_push(a, &prog->files, arena_strdup(a, full));
    vec_push(a, &prog->real_files, key);

    ParseCtx pc = {.arena = a, .diag = d, .prog = prog, .text = kept, .len = (uint32_t)len, .depth = depth};
    pc.file = diag_add_file(d, full, kept, (uint32_t)len);
    yyscan_t sc;
    tk_yylex_init_extra(&pc, &sc);
    pc.scanner = sc;
    tk_yy_scan_bytes(kept, (int)len, sc);
    tk_yyparse(sc, &pc);
    tk_yylex_destroy(sc);
    return true;
}
