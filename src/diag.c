/* diag.c - diagnostics with source line and caret (see diag.h).
 * Output is deterministic: diagnostics appear in the order the phases report them. */
#include "diag.h"

#include <stdarg.h>
#include <string.h>

void diag_init(Diag *d, Arena *a, FILE *out) {
    memset(d, 0, sizeof *d);
    d->arena = a;
    d->out = out;
    d->max_errors = 50;
}

int diag_add_file(Diag *d, const char *path, const char *text, uint32_t len) {
    SrcFile f = {.path = arena_strdup(d->arena, path), .text = text, .len = len};
    int n = 1;
    for (uint32_t i = 0; i < len; i++)
        if (text[i] == '\n') n++;
    f.line_start = ARENA_NEW_N(d->arena, uint32_t, n);
    f.line_start[0] = 0;
    int k = 1;
    for (uint32_t i = 0; i < len; i++)
        if (text[i] == '\n') f.line_start[k++] = i + 1;
    f.nlines = n;
    vec_push(d->arena, &d->files, f);
    return d->files.n - 1;
}

static int line_of(const SrcFile *f, uint32_t off) {
    int lo = 0, hi = f->nlines - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (f->line_start[mid] <= off) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

void diag_linecol(const Diag *d, Span s, int *line, int *col) {
    if (s.file < 0 || s.file >= d->files.n) {
        *line = *col = 0;
        return;
    }
    const SrcFile *f = &d->files.v[s.file];
    uint32_t off = s.begin > f->len ? f->len : s.begin;
    int l = line_of(f, off);
    *line = l + 1;
    *col = (int)(off - f->line_start[l]) + 1;
}

Span span_join(Span a, Span b) {
    if (a.file < 0) return b;
    if (b.file < 0 || a.file != b.file) return a;
    Span s = a;
    if (b.begin < s.begin) s.begin = b.begin;
    if (b.end > s.end) s.end = b.end;
    return s;
}

static const char *level_name[] = {"error", "warning", "note"};

void diag_dedup_begin(Diag *d) {
    d->dedup = true;
    d->seen.n = 0;
}

void diag_dedup_end(Diag *d) {
    d->dedup = false;
    d->seen.n = 0;
}

/* in a dedup window: has this diagnostic been reported already (else remember it) */
static bool seen_before(Diag *d, DiagLevel lvl, Span s, const char *fmt, va_list ap) {
    va_list aq;
    va_copy(aq, ap);
    int len = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    char *text = arena_alloc(d->arena, (size_t)(len > 0 ? len : 0) + 1);
    va_copy(aq, ap);
    vsnprintf(text, (size_t)(len > 0 ? len : 0) + 1, fmt, aq);
    va_end(aq);
    for (int i = 0; i < d->seen.n; i++) {
        const DiagSeen *x = &d->seen.v[i];
        if (x->lvl == (int)lvl && x->file == s.file && x->begin == s.begin && x->end == s.end && !strcmp(x->text, text))
            return true;
    }
    DiagSeen x = {(int)lvl, s.file, s.begin, s.end, text};
    vec_push(d->arena, &d->seen, x);
    return false;
}

void diag_vreport(Diag *d, DiagLevel lvl, Span s, const char *fmt, va_list ap) {
    if (d->dedup && seen_before(d, lvl, s, fmt, ap)) return;
    if (lvl == DIAG_ERROR) d->nerrors++;
    if (lvl == DIAG_WARNING) d->nwarnings++;
    if (d->suppressed) return;
    if (lvl == DIAG_ERROR && d->max_errors && d->nerrors > d->max_errors) {
        fprintf(d->out, "tkc: too many errors (%d); stopping\n", d->max_errors);
        d->suppressed = true;
        return;
    }
    if (s.file < 0 || s.file >= d->files.n) {
        fprintf(d->out, "tkc: %s: ", level_name[lvl]);
        vfprintf(d->out, fmt, ap);
        fputc('\n', d->out);
        return;
    }
    const SrcFile *f = &d->files.v[s.file];
    int line, col;
    diag_linecol(d, s, &line, &col);
    fprintf(d->out, "%s:%d:%d: %s: ", f->path, line, col, level_name[lvl]);
    vfprintf(d->out, fmt, ap);
    fputc('\n', d->out);

    /* the source line, then a caret under the span's first character and tildes under the rest
     * of the span on this line; tabs are repeated so the caret lines up in any tab width */
    uint32_t ls = f->line_start[line - 1], le = ls;
    while (le < f->len && f->text[le] != '\n' && f->text[le] != '\r') le++;
    fprintf(d->out, "%.*s\n", (int)(le - ls), f->text + ls);
    uint32_t b = s.begin > le ? le : s.begin;
    uint32_t e = s.end > le ? le : s.end;
    if (e <= b) e = b + 1;
    for (uint32_t i = ls; i < b; i++) fputc(f->text[i] == '\t' ? '\t' : ' ', d->out);
    fputc('^', d->out);
    for (uint32_t i = b + 1; i < e; i++) fputc('~', d->out);
    fputc('\n', d->out);
}

void diag_report(Diag *d, DiagLevel lvl, Span s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    diag_vreport(d, lvl, s, fmt, ap);
    va_end(ap);
}

int edit_distance(const char *a, const char *b) {
    size_t n = strlen(a), m = strlen(b);
    if (n > 64 || m > 64) return 99;
    int row[65];
    for (size_t j = 0; j <= m; j++) row[j] = (int)j;
    for (size_t i = 1; i <= n; i++) {
        int prev = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= m; j++) {
            int cur = row[j];
            int sub = prev + (a[i - 1] != b[j - 1]);
            int del = row[j] + 1, ins = row[j - 1] + 1;
            row[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
            prev = cur;
        }
    }
    return row[m];
}
