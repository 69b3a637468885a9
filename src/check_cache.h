/* check_cache.h - clean outcomes of the checks that only report, remembered per kernel key for
 * the variants of a dispatched program (check_cache.c). */
#ifndef TKC_CHECK_CACHE_H
#define TKC_CHECK_CACHE_H

#include "ast.h"

typedef enum { CHECK_COVER, CHECK_PROTOCOL, CHECK_COUNT } CheckKind;

/* the key of kernel k of program p (after sema has evaluated the params), or NULL */
char *kernel_key(Arena *a, const Diag *d, const Program *p, const Kernel *k);
bool check_cache_has(CheckKind kind, const char *key);
void check_cache_add(CheckKind kind, const char *key);

#endif
