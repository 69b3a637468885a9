/* util.h - the small runtime every phase of tkc shares: an arena allocator, growable arrays,
 * a string buffer that owns indentation, and file reading.
 * Invariant: everything a phase allocates lives in one Arena and is freed with it at once. */
#ifndef TKC_UTIL_H
#define TKC_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- arena ---------------------------------------------------------------------------------- */

typedef struct ArenaChunk ArenaChunk;
typedef struct Arena {
    ArenaChunk *head;   /* newest chunk first */
    size_t used_total;  /* bytes handed out, for tests and statistics */
} Arena;

void *arena_alloc(Arena *a, size_t size);             /* zeroed, 16-byte aligned */
char *arena_strdup(Arena *a, const char *s);
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_printf(Arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void arena_free(Arena *a);                            /* releases every chunk; a is reusable */

#define ARENA_NEW(a, T) ((T *)arena_alloc((a), sizeof(T)))
#define ARENA_NEW_N(a, T, n) ((T *)arena_alloc((a), sizeof(T) * (size_t)(n)))

/* ---- growable arrays (arena-backed) --------------------------------------------------------- */
/* A Vec(T) is {T *v; int n, cap;}. vec_push grows by doubling inside the arena; the old block
 * is abandoned to the arena, which frees it with everything else. */

#define Vec(T) struct { T *v; int n, cap; }
void vec_grow_(Arena *a, void **v, int *cap, size_t elem, int need);
#define vec_push(a, vec, x)                                                                    \
    do {                                                                                       \
        if ((vec)->n >= (vec)->cap)                                                            \
            vec_grow_((a), (void **)&(vec)->v, &(vec)->cap, sizeof(*(vec)->v), (vec)->n + 1);  \
        (vec)->v[(vec)->n++] = (x);                                                            \
    } while (0)

/* ---- string buffer -------------------------------------------------------------------------- */
/* Heap-backed (not arena) because emitted files can be large and are written out at once.
 * sb_line() writes the current indentation, the formatted text and a newline. */

typedef struct StrBuf {
    char *s;
    size_t len, cap;
    int indent;         /* in units of 4 spaces */
} StrBuf;

void sb_init(StrBuf *b);
void sb_free(StrBuf *b);
void sb_putc(StrBuf *b, char c);
void sb_puts(StrBuf *b, const char *s);
void sb_putn(StrBuf *b, const char *s, size_t n);
void sb_printf(StrBuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_vprintf(StrBuf *b, const char *fmt, va_list ap);
void sb_line(StrBuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_blank(StrBuf *b);       /* an empty line, never two in a row */
char *sb_take(StrBuf *b);       /* returns the NUL-terminated text and resets b */
/* Appends text as a paragraph wrapped at width columns, ending in '\n': every line starts with
 * prefix and indent spaces, continuation lines with hang more. Words are split at spaces and
 * joined by one space, or with keep_gaps by the run of spaces between them (unless a line breaks
 * there). '\x01' prints as a space that never breaks. Leading spaces of text are dropped. */
void sb_wrap(StrBuf *b, const char *prefix, int indent, int hang, int width, bool keep_gaps, const char *text);

/* ---- files and misc ------------------------------------------------------------------------- */

/* Reads a whole file; returns NULL and sets errno on failure. *len excludes the added NUL. */
char *read_file(const char *path, size_t *len);
/* The largest source file tkc reads (a .tk or an import) */
#define TKC_SOURCE_MAX (64u << 20)
/* Reads a .tk source: a regular file of at most TKC_SOURCE_MAX bytes. On failure returns NULL and
 * sets *why to what went wrong ("is a directory", "is not a regular file ...", "is larger than
 * ...", or strerror). */
char *read_source(const char *path, size_t *len, const char **why);
/* Writes an output. A regular file (or a new one) is written to path.tmp, then renamed over it (a
 * build never sees half a file); a symbolic link is followed, and the file it names is replaced
 * the same way; anything else that exists at path (a FIFO, a device such as /dev/null, a socket)
 * is opened and written in place, never replaced. Returns 0 or -1 with errno set. */
int write_file(const char *path, const char *data, size_t len);

void *xmalloc(size_t n);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
/* the file name in a path: what follows the last '/' */
const char *path_base(const char *path);

int64_t cdiv64(int64_t a, int64_t b);
bool is_pow2(int64_t x);
/* Formats n with thousands separators ("232,448") into a static ring of buffers. */
const char *fmt_bytes(int64_t n);

#endif
