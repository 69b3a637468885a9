/* util.c - arena, growable arrays, string buffer and file helpers (see util.h).
 * The arena hands out zeroed 16-byte-aligned blocks from chunks of at least 64 KiB. */
#define _DEFAULT_SOURCE  /* fileno, lstat, realpath */
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct ArenaChunk {
    ArenaChunk *next;
    size_t cap, used;
    _Alignas(16) unsigned char data[];
};

enum { ARENA_CHUNK_MIN = 64 * 1024 };

void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fputs("tkc: out of memory\n", stderr);
        exit(3);
    }
    return p;
}

void *xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fputs("tkc: out of memory\n", stderr);
        exit(3);
    }
    return q;
}

char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    return memcpy(xmalloc(n), s, n);
}

void *arena_alloc(Arena *a, size_t size) {
    size = (size + 15) & ~(size_t)15;
    ArenaChunk *c = a->head;
    if (!c || c->cap - c->used < size) {
        size_t cap = size > ARENA_CHUNK_MIN ? size : ARENA_CHUNK_MIN;
        c = xmalloc(sizeof(ArenaChunk) + cap);
        c->cap = cap;
        c->used = 0;
        c->next = a->head;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += size;
    a->used_total += size;
    memset(p, 0, size);
    return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n) {
    char *p = arena_alloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

char *arena_strdup(Arena *a, const char *s) { return arena_strndup(a, s, strlen(s)); }

char *arena_printf(Arena *a, const char *fmt, ...) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *p = arena_alloc(a, (size_t)n + 1);
    vsnprintf(p, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return p;
}

void arena_free(Arena *a) {
    ArenaChunk *c = a->head;
    while (c) {
        ArenaChunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
    a->used_total = 0;
}

void vec_grow_(Arena *a, void **v, int *cap, size_t elem, int need) {
    int ncap = *cap ? *cap * 2 : 8;
    while (ncap < need) ncap *= 2;
    void *nv = arena_alloc(a, elem * (size_t)ncap);
    if (*v) memcpy(nv, *v, elem * (size_t)*cap);
    *v = nv;
    *cap = ncap;
}

/* ---- string buffer -------------------------------------------------------------------------- */

void sb_init(StrBuf *b) { memset(b, 0, sizeof *b); }

void sb_free(StrBuf *b) {
    free(b->s);
    memset(b, 0, sizeof *b);
}

static void sb_reserve(StrBuf *b, size_t extra) {
    if (b->len + extra + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) cap *= 2;
    b->s = xrealloc(b->s, cap);
    b->cap = cap;
}

void sb_putn(StrBuf *b, const char *s, size_t n) {
    sb_reserve(b, n);
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

void sb_putc(StrBuf *b, char c) { sb_putn(b, &c, 1); }
void sb_puts(StrBuf *b, const char *s) { sb_putn(b, s, strlen(s)); }

void sb_vprintf(StrBuf *b, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    sb_reserve(b, (size_t)n);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    b->len += (size_t)n;
}

void sb_printf(StrBuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(b, fmt, ap);
    va_end(ap);
}

void sb_line(StrBuf *b, const char *fmt, ...) {
    if (fmt[0]) {
        for (int i = 0; i < b->indent; i++) sb_puts(b, "    ");
        va_list ap;
        va_start(ap, fmt);
        sb_vprintf(b, fmt, ap);
        va_end(ap);
    }
    sb_putc(b, '\n');
}

void sb_blank(StrBuf *b) {
    if (b->len >= 2 && b->s[b->len - 1] == '\n' && b->s[b->len - 2] == '\n') return;
    if (b->len == 0) return;
    sb_putc(b, '\n');
}

void sb_wrap(StrBuf *b, const char *prefix, int indent, int hang, int width, bool keep_gaps, const char *s) {
    int col = (int)strlen(prefix) + indent;
    sb_puts(b, prefix);
    for (int i = 0; i < indent; i++) sb_putc(b, ' ');
    s += strspn(s, " ");
    size_t gap = 0;
    bool first = true;
    while (*s) {
        size_t n = strcspn(s, " ");
        if (!first && col + (int)gap + (int)n > width) {
            sb_putc(b, '\n');
            sb_puts(b, prefix);
            for (int i = 0; i < indent + hang; i++) sb_putc(b, ' ');
            col = (int)strlen(prefix) + indent + hang;
        } else {
            for (size_t i = 0; i < gap; i++) sb_putc(b, ' ');
            col += (int)gap;
        }
        for (size_t i = 0; i < n; i++) sb_putc(b, s[i] == '\x01' ? ' ' : s[i]);
        col += (int)n;
        first = false;
        s += n;
        size_t run = strspn(s, " ");
        s += run;
        gap = keep_gaps ? run : run > 0;
    }
    sb_putc(b, '\n');
}

char *sb_take(StrBuf *b) {
    char *s = b->s ? b->s : xstrdup("");
    memset(b, 0, sizeof *b);
    return s;
}

/* ---- files ---------------------------------------------------------------------------------- */

char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    StrBuf b;
    sb_init(&b);
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) sb_putn(&b, buf, n);
    int err = ferror(f);
    fclose(f);
    if (err) {
        sb_free(&b);
        errno = EIO;
        return NULL;
    }
    if (len) *len = b.len;
    return sb_take(&b);
}

char *read_source(const char *path, size_t *len, const char **why) {
    struct stat st;
    FILE *f = fopen(path, "rb");
    if (!f) {
        *why = strerror(errno);
        return NULL;
    }
    if (fstat(fileno(f), &st) != 0) {
        *why = strerror(errno);
        fclose(f);
        return NULL;
    }
    if (S_ISDIR(st.st_mode)) *why = "is a directory, not a .tk file";
    else if (!S_ISREG(st.st_mode)) *why = "is not a regular file (a device, pipe or socket); tkc reads .tk files only";
    else if ((uint64_t)st.st_size > TKC_SOURCE_MAX) *why = "is larger than 64 MiB";
    else *why = NULL;
    if (*why) {
        fclose(f);
        return NULL;
    }
    StrBuf b;
    sb_init(&b);
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0 && b.len <= TKC_SOURCE_MAX) sb_putn(&b, buf, n);
    int err = ferror(f);
    fclose(f);
    if (err || b.len > TKC_SOURCE_MAX) {
        *why = err ? "could not be read (an I/O error)" : "is larger than 64 MiB";
        sb_free(&b);
        return NULL;
    }
    if (len) *len = b.len;
    return sb_take(&b);
}

/* writes data to f; 0 or -1 */
static int put_all(FILE *f, const char *data, size_t len) {
    size_t w = fwrite(data, 1, len, f);
    int bad = w != len;
    bad |= fclose(f) != 0;
    return bad ? -1 : 0;
}

int write_file(const char *path, const char *data, size_t len) {
    struct stat st;
    char *target = NULL;
    if (lstat(path, &st) == 0) {
        if (S_ISLNK(st.st_mode)) {
            /* follow the link: replace the file it names, keep the link */
            target = realpath(path, NULL);
            if (!target) {
                if (errno != ENOENT) return -1;
                /* a dangling link: write through it, creating the file it names */
                FILE *f = fopen(path, "wb");
                return f ? put_all(f, data, len) : -1;
            }
            if (stat(target, &st) != 0) {
                free(target);
                return -1;
            }
        }
        if (!S_ISREG(st.st_mode)) {
            /* a FIFO, a device, a socket: written in place, never replaced */
            FILE *f = fopen(target ? target : path, "wb");
            free(target);
            return f ? put_all(f, data, len) : -1;
        }
    }
    const char *dst = target ? target : path;
    size_t plen = strlen(dst);
    char *tmp = xmalloc(plen + 5);
    memcpy(tmp, dst, plen);
    memcpy(tmp + plen, ".tmp", 5);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        free(tmp);
        free(target);
        return -1;
    }
    if (put_all(f, data, len) != 0 || rename(tmp, dst) != 0) {
        int e = errno;
        remove(tmp);
        free(tmp);
        free(target);
        errno = e;
        return -1;
    }
    free(tmp);
    free(target);
    return 0;
}

int64_t cdiv64(int64_t a, int64_t b) { return (a + b - 1) / b; }
bool is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

const char *path_base(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

const char *fmt_bytes(int64_t n) {
    static char ring[8][32];
    static int at;
    char *out = ring[at++ & 7];
    char digits[32];
    int neg = n < 0;
    uint64_t u = neg ? 0 - (uint64_t)n : (uint64_t)n;
    int nd = snprintf(digits, sizeof digits, "%llu", (unsigned long long)u);
    int o = 0;
    if (neg) out[o++] = '-';
    for (int i = 0; i < nd; i++) {
        out[o++] = digits[i];
        int left = nd - 1 - i;
        if (left > 0 && left % 3 == 0) out[o++] = ',';
    }
    out[o] = 0;
    return out;
}
