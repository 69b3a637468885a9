/* parse.h - the front door of the front end: reads a .tk file (and what it imports) into the
 * Program. The scanner (grammar/tk.l) and parser (grammar/tk.y) are reentrant and pure; all
 * their state lives in ParseCtx.
 * Invariant: syntax errors are reported through Diag and parsing continues at the next ';' or
 * '}', so one run reports several errors; a program with errors is never lowered. */
#ifndef TKC_PARSE_H
#define TKC_PARSE_H

#include "ast.h"
#include "diag.h"

typedef struct ParseCtx {
    Arena *arena;
    Diag *diag;
    Program *prog;
    int file;               /* index of the file being scanned */
    const char *text;
    uint32_t len;
    uint32_t offset;        /* scanner position (byte offset) */
    Vec(Span) open_braces;  /* for "block opened here" notes at end of file */
    Span comment_start;
    int depth;              /* import nesting */
    void *scanner;          /* yyscan_t */
} ParseCtx;

/* Parses path into prog; returns false if it could not be read (already reported). Imports
 * are parsed in place, once each, relative to the importing file. */
bool parse_file(Arena *a, Diag *d, Program *prog, const char *path, Span from, int depth);
/* `dispatch "table";` (the parser's action): the table the driver compiles the program with,
 * resolved against the file that names it; the main file's only (an imported file's is not the
 * importing program's table), once */
void parse_dispatch(ParseCtx *pc, const char *path, Span s);

#endif
