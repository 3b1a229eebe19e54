/* Host allocation helpers: every size product is overflow-checked, every
 * failure sets the error detail. */
#ifndef CLT_CORE_ALLOC_H
#define CLT_CORE_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "cltrain.h"

/* *out = n * size zeroed bytes; CLT_ERR_NO_MEMORY (with detail naming `what`)
 * on overflow or failure. */
clt_status clt_calloc(void **out, size_t n, size_t size, const char *what);
/* 64-byte aligned, uninitialised; free with clt_aligned_free. */
clt_status clt_aligned_alloc(void **out, size_t n, size_t size, const char *what);
void clt_aligned_free(void *p);
/* a * b without overflow; returns 0 on overflow, 1 on success. */
int clt_mul_size(size_t a, size_t b, size_t *out);
/* Makes room for one more item in *items (*count used of *cap, `size`
 * bytes each): the capacity doubles from `first`; CLT_ERR_NO_MEMORY (detail
 * naming `what`) leaves the table as it was. */
clt_status clt_grow(void **items, int count, int *cap, size_t size, int first, const char *what);
/* strdup that reports failure through the error detail. */
clt_status clt_strdup(char **out, const char *s);

#endif
