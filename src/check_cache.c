/* check_cache.c - the checks that only report (sema's output coverage and bounds, the plan's
 * barrier-protocol proof) remembered for kernels already checked clean in this process: a
 * dispatched program compiles every variant, and most of its kernels come out the same in several
 * (a param that only an entry reads). A kernel's key is its source text, the values of the params
 * it names and the program's element-type names (kernel_key): the same key, the same checks'
 * outcome. Only clean outcomes are kept, so skipping a check never hides a diagnostic; at most
 * CACHE_MAX keys per check are kept, the oldest dropped first. */
#include "check_cache.h"

#include <stdlib.h>
#include <string.h>

enum { CACHE_MAX = 64 };

typedef struct Cache {
    char *keys[CACHE_MAX];
    int n, next;        /* keys held; the slot the next one goes to (oldest first) */
} Cache;

static Cache caches[CHECK_COUNT];

bool check_cache_has(CheckKind k, const char *key) {
    if (!key) return false;
    const Cache *c = &caches[k];
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->keys[i], key)) return true;
    return false;
}

void check_cache_add(CheckKind k, const char *key) {
    if (!key || check_cache_has(k, key)) return;
    Cache *c = &caches[k];
    size_t n = strlen(key) + 1;
    char *copy = malloc(n);
    if (!copy) return;  /* not remembered: the check runs again next time */
    memcpy(copy, key, n);
    if (c->n < CACHE_MAX) c->n++;
    else free(c->keys[c->next]);
    c->keys[c->next] = copy;
    c->next = (c->next + 1) % CACHE_MAX;
}

static bool is_id(char ch) { return ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'); }

/* does name occur in text as a whole identifier */
static bool names(const char *text, size_t len, const char *name) {
    size_t n = strlen(name);
    for (size_t i = 0; i + n <= len; i++)
        if (!memcmp(text + i, name, n) && (i == 0 || !is_id(text[i - 1])) && (i + n == len || !is_id(text[i + n])))
            return true;
    return false;
}

char *kernel_key(Arena *a, const Diag *d, const Program *p, const Kernel *k) {
    if (k->span.file < 0 || k->span.file >= d->files.n) return NULL;
    const SrcFile *f = &d->files.v[k->span.file];
    if (k->span.end > f->len || k->span.begin > k->span.end) return NULL;
    const char *text = f->text + k->span.begin;
    size_t len = k->span.end - k->span.begin;
    StrBuf b;
    sb_init(&b);
    sb_putn(&b, text, len);
    sb_puts(&b, "\n--");
    for (int i = 0; i < p->params.n; i++) {
        const Param *pa = p->params.v[i];
        if (pa->sym && pa->sym->is_const && names(text, len, pa->name))
            sb_printf(&b, " %s=%lld", pa->name, (long long)pa->sym->cval);
    }
    for (int i = 0; i < p->types.n; i++) sb_printf(&b, " %s:%s", p->types.v[i]->name, dtype_name[p->types.v[i]->dt]);
    char *key = arena_strdup(a, b.s ? b.s : "");
    sb_free(&b);
    return key;
}
