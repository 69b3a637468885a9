/* templates.h - the CUDA fragments of templates/, embedded into tkc at build time by
 * templates/embed.c, so an installed tkc needs no template folder. */
#ifndef TKC_TEMPLATES_H
#define TKC_TEMPLATES_H

#include <stddef.h>

typedef struct TemplateFile {
    const char *name;   /* file name under templates/ */
    const char *text;
    size_t len;
} TemplateFile;

extern const TemplateFile tkc_templates[];
extern const int tkc_ntemplates;

/* the text of one fragment ("// @fragment NAME" up to the next marker); NULL if absent */
const char *template_fragment(const char *file, const char *fragment, size_t *len);

#endif
