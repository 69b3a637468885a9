/* templates.c - the embedded template files: finds fragments in the CUDA ones (a fragment starts
 * at a line "// @fragment NAME" and ends before the next such line or the end of the file), and
 * fills in the regions of the others (template_fill, for the Python module of --emit=torch). */
#include "templates.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static const TemplateFile *find_file(const char *name) {
    for (int i = 0; i < tkc_ntemplates; i++)
        if (!strcmp(tkc_templates[i].name, name)) return &tkc_templates[i];
    return NULL;
}

const char *template_fragment(const char *file, const char *fragment, size_t *len) {
    const TemplateFile *f = find_file(file);
    if (!f) return NULL;
    static const char marker[] = "// @fragment ";
    size_t ml = sizeof marker - 1, fl = strlen(fragment);
    const char *p = f->text, *end = f->text + f->len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        if ((size_t)(le - p) == ml + fl && !memcmp(p, marker, ml) && !memcmp(p + ml, fragment, fl)) {
            const char *start = nl ? nl + 1 : end, *q = start;
            while (q < end) {
                if ((size_t)(end - q) >= ml && !memcmp(q, marker, ml)) break;
                const char *n2 = memchr(q, '\n', (size_t)(end - q));
                q = n2 ? n2 + 1 : end;
            }
            *len = (size_t)(q - start);
            return start;
        }
        p = nl ? nl + 1 : end;
    }
    return NULL;
}

const char *template_text(const char *file, size_t *len) {
    const TemplateFile *f = find_file(file);
    if (!f) return NULL;
    *len = f->len;
    return f->text;
}

/* if the line [p, le) is "<comment> @tkc <word> NAME", the NAME (and its length in *nl) */
static const char *region_marker(const char *p, const char *le, const char *comment, const char *word, size_t *nl) {
    size_t cl = strlen(comment), wl = strlen(word);
    if ((size_t)(le - p) < cl + 6 + wl + 2 || memcmp(p, comment, cl) || memcmp(p + cl, " @tkc ", 6) ||
        memcmp(p + cl + 6, word, wl) || p[cl + 6 + wl] != ' ')
        return NULL;
    const char *name = p + cl + 6 + wl + 1;
    *nl = (size_t)(le - name);
    return name;
}

int template_fill(StrBuf *out, const char *text, size_t len, const char *comment, const TemplateRegion *regions, int n,
                  char *err, size_t errsize) {
    enum { MAX_REGIONS = 64 };
    bool used[MAX_REGIONS] = {false};
    if (n > MAX_REGIONS) {
        snprintf(err, errsize, "more than %d regions", MAX_REGIONS);
        return -1;
    }
    const char *p = text, *end = text + len;
    int line = 0;
    const TemplateRegion *open = NULL; /* the region whose stand-in is being skipped */
    int open_line = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end, *next = nl ? nl + 1 : end;
        line++;
        size_t bl, el;
        const char *begin = region_marker(p, le, comment, "begin", &bl);
        const char *fin = begin ? NULL : region_marker(p, le, comment, "end", &el);
        if (begin) {
            if (open) {
                snprintf(err, errsize, "line %d: a region begins inside the region '%s' of line %d", line, open->name,
                         open_line);
                return -1;
            }
            int r = 0;
            while (r < n && (strlen(regions[r].name) != bl || memcmp(regions[r].name, begin, bl))) r++;
            if (r == n) {
                snprintf(err, errsize, "line %d: tkc fills no region '%.*s'", line, (int)bl, begin);
                return -1;
            }
            if (used[r]) {
                snprintf(err, errsize, "line %d: a second region '%s'", line, regions[r].name);
                return -1;
            }
            used[r] = true;
            open = &regions[r];
            open_line = line;
            if (open->text) sb_puts(out, open->text);
        } else if (fin) {
            if (!open || strlen(open->name) != el || memcmp(open->name, fin, el)) {
                snprintf(err, errsize, "line %d: the end of a region '%.*s' that did not begin", line, (int)el, fin);
                return -1;
            }
            open = NULL;
        } else if (!open) {
            sb_putn(out, p, (size_t)(next - p));
        }
        p = next;
    }
    if (open) {
        snprintf(err, errsize, "line %d: the region '%s' has no end", open_line, open->name);
        return -1;
    }
    for (int r = 0; r < n; r++)
        if (!used[r]) {
            snprintf(err, errsize, "no region '%s'", regions[r].name);
            return -1;
        }
    return 0;
}
