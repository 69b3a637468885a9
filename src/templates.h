/* templates.h - the files of templates/ (the CUDA fragments, the Python runtime of --emit=torch),
 * embedded into tkc at build time by templates/embed.c, so an installed tkc needs no template
 * folder. */
#ifndef TKC_TEMPLATES_H
#define TKC_TEMPLATES_H

#include <stddef.h>

#include "util.h"

typedef struct TemplateFile {
    const char *name;   /* file name under templates/ */
    const char *text;
    size_t len;
} TemplateFile;

extern const TemplateFile tkc_templates[];
extern const int tkc_ntemplates;

/* the text of one fragment ("// @fragment NAME" up to the next marker); NULL if absent */
const char *template_fragment(const char *file, const char *fragment, size_t *len);

/* the whole text of an embedded file; NULL if absent */
const char *template_text(const char *file, size_t *len);

/* What template_fill() writes in place of one region. */
typedef struct TemplateRegion {
    const char *name;
    const char *text;   /* whole lines, each ending in '\n' (NULL or "": nothing) */
} TemplateRegion;

/* Appends the template text[0, len) to out with its regions filled in. A region is the lines
 * from "<comment> @tkc begin NAME" to "<comment> @tkc end NAME" (comment: "#" for Python, "//"
 * for C++), the marker lines included; it is replaced by the text of the entry NAME of regions,
 * and every other line is copied as it is. Each of the n entries must fill exactly one region.
 * Returns 0, or -1 with a message in err (a region without an entry or without its end, an
 * entry without a region); out then holds a partial text. */
int template_fill(StrBuf *out, const char *text, size_t len, const char *comment, const TemplateRegion *regions, int n,
                  char *err, size_t errsize);

#endif
