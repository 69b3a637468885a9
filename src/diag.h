/* diag.h - source files, spans and diagnostics ("file:line:col: error: message", the source
 * line, and a caret line "^~~~" under the span).
 * Invariant: a Span is a byte range in one registered source file; line and column are derived
 * lazily from the file's line table, so tokens and nodes carry only offsets. */
#ifndef TKC_DIAG_H
#define TKC_DIAG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "util.h"

typedef struct Span {
    int file;           /* index into Diag.files; -1 for "no location" */
    uint32_t begin;     /* byte offset of the first character */
    uint32_t end;       /* byte offset one past the last character (end >= begin) */
} Span;

#define SPAN_NONE ((Span){-1, 0, 0})

typedef struct SrcFile {
    const char *path;   /* as given on the command line or in an import */
    const char *text;   /* NUL-terminated contents */
    uint32_t len;
    uint32_t *line_start;   /* byte offset of each line's first character */
    int nlines;
} SrcFile;

typedef enum { DIAG_ERROR, DIAG_WARNING, DIAG_NOTE } DiagLevel;

typedef struct DiagSeen {
    int lvl, file;
    uint32_t begin, end;
    const char *text;
} DiagSeen;

typedef struct Diag {
    Vec(SrcFile) files;
    FILE *out;          /* where diagnostics go (stderr by default) */
    int nerrors, nwarnings;
    int max_errors;     /* stop reporting after this many (0 = unlimited) */
    bool suppressed;    /* set once max_errors was reached */
    Arena *arena;
    /* between diag_dedup_begin and _end, a diagnostic identical to one already reported in that window
     * (level, span and text) is dropped: checking the per-warpgroup copies of statements (sema_wg.c)
     * would report each of their errors once per copy */
    bool dedup;
    Vec(DiagSeen) seen;
} Diag;

void diag_init(Diag *d, Arena *a, FILE *out);
/* Registers a file's text (which must outlive d) and returns its index. */
int diag_add_file(Diag *d, const char *path, const char *text, uint32_t len);
void diag_linecol(const Diag *d, Span s, int *line, int *col);
Span span_join(Span a, Span b);

void diag_report(Diag *d, DiagLevel lvl, Span s, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void diag_vreport(Diag *d, DiagLevel lvl, Span s, const char *fmt, va_list ap);
#define diag_error(d, s, ...) diag_report((d), DIAG_ERROR, (s), __VA_ARGS__)
#define diag_warning(d, s, ...) diag_report((d), DIAG_WARNING, (s), __VA_ARGS__)
#define diag_note(d, s, ...) diag_report((d), DIAG_NOTE, (s), __VA_ARGS__)

void diag_dedup_begin(Diag *d);
void diag_dedup_end(Diag *d);

/* Levenshtein distance, for "did you mean" suggestions. */
int edit_distance(const char *a, const char *b);

#endif
