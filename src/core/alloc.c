#include "core/alloc.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

int clt_mul_size(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a) return 0;
    *out = a * b;
    return 1;
}

clt_status clt_calloc(void **out, size_t n, size_t size, const char *what)
{
    size_t total;
    *out = NULL;
    if (!clt_mul_size(n, size, &total))
        return clt_fail(CLT_ERR_NO_MEMORY, "%s: size %zu x %zu overflows", what, n, size);
    void *p = calloc(total ? total : 1, 1);
    if (!p) return clt_fail(CLT_ERR_NO_MEMORY, "%s: cannot allocate %zu bytes", what, total);
    *out = p;
    return CLT_OK;
}

clt_status clt_aligned_alloc(void **out, size_t n, size_t size, const char *what)
{
    size_t total;
    *out = NULL;
    if (!clt_mul_size(n, size, &total) || total > SIZE_MAX - 64)
        return clt_fail(CLT_ERR_NO_MEMORY, "%s: size %zu x %zu overflows", what, n, size);
    total = (total + 63) & ~(size_t)63;
    void *p = aligned_alloc(64, total ? total : 64);
    if (!p) return clt_fail(CLT_ERR_NO_MEMORY, "%s: cannot allocate %zu bytes", what, total);
    *out = p;
    return CLT_OK;
}

void clt_aligned_free(void *p) { free(p); }

clt_status clt_grow(void **items, int count, int *cap, size_t size, int first, const char *what)
{
    if (count < *cap) return CLT_OK;
    int next = *cap ? *cap * 2 : first;
    size_t total;
    if (next <= *cap || !clt_mul_size((size_t)next, size, &total))
        return clt_fail(CLT_ERR_NO_MEMORY, "%s: %d entries overflow", what, *cap);
    void *p = realloc(*items, total);
    if (!p) return clt_fail(CLT_ERR_NO_MEMORY, "%s: cannot allocate %zu bytes", what, total);
    *items = p;
    *cap = next;
    return CLT_OK;
}

void clt_free(void *p) { free(p); }

clt_status clt_strdup(char **out, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (!p) return clt_fail(CLT_ERR_NO_MEMORY, "cannot allocate %zu bytes for a string", n);
    memcpy(p, s, n);
    *out = p;
    return CLT_OK;
}
