/* 64-bit FNV-1a: cache keys and file checksums (not for security). */
#ifndef CLT_CORE_HASH_H
#define CLT_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define CLT_HASH_INIT 0xcbf29ce484222325ull

static inline uint64_t clt_hash(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

#endif
