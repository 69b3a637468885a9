/* templates.c - finds fragments inside the embedded template files. A fragment starts at a
 * line "// @fragment NAME" and ends before the next such line (or the end of the file). */
#include "templates.h"

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
