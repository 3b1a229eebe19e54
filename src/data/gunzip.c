/* zlib inflate driven in bounded steps: see gunzip.h. */
#include "data/gunzip.h"

#include <limits.h>
#include <string.h>

#include "core/error.h"

/* zlib counts in uInt (32 bits): feed and drain in chunks below that. */
#define CHUNK ((size_t)1 << 30)

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

clt_status clt_gunzip_init(clt_gunzip *g, const uint8_t *src, size_t n, const char *label)
{
    memset(g, 0, sizeof *g);
    g->src = src;
    g->n = n;
    g->label = label;
    /* 16 + MAX_WBITS: gzip wrapper only, so the CRC-32 and length in the
     * trailer of every member are checked by zlib. */
    int r = inflateInit2(&g->z, 16 + MAX_WBITS);
    if (r != Z_OK)
        return clt_fail(r == Z_MEM_ERROR ? CLT_ERR_NO_MEMORY : CLT_ERR_INTERNAL,
                        "%s: cannot start zlib inflate (%s)", label, g->z.msg ? g->z.msg : zError(r));
    g->active = 1;
    return CLT_OK;
}

/* Offset in src of the next byte zlib has not consumed. */
static size_t consumed(const clt_gunzip *g) { return g->fed - g->z.avail_in; }

static clt_status member_end(clt_gunzip *g)
{
    size_t at = consumed(g), left = g->n - at;
    if (left == 0) {
        g->done = 1;
        return CLT_OK;
    }
    /* gzip allows concatenated members; anything else is garbage. */
    if (left < 2 || g->src[at] != 0x1f || g->src[at + 1] != 0x8b)
        return clt_fail(CLT_ERR_FORMAT,
                        "%s: %zu bytes of trailing garbage after the end of the gzip stream "
                        "(at compressed offset %zu)", g->label, left, at);
    if (inflateReset(&g->z) != Z_OK)
        return clt_fail(CLT_ERR_INTERNAL, "%s: zlib inflateReset failed", g->label);
    return CLT_OK;
}

clt_status clt_gunzip_read(clt_gunzip *g, uint8_t *dst, size_t want, size_t *got)
{
    *got = 0;
    while (*got < want && !g->done) {
        if (g->z.avail_in == 0 && g->fed < g->n) {
            size_t chunk = min_size(g->n - g->fed, CHUNK);
            g->z.next_in = (Bytef *)(uintptr_t)(g->src + g->fed);
            g->z.avail_in = (uInt)chunk;
            g->fed += chunk;
        }
        size_t room = min_size(want - *got, CHUNK);
        g->z.next_out = dst + *got;
        g->z.avail_out = (uInt)room;
        int r = inflate(&g->z, Z_NO_FLUSH);
        *got += room - g->z.avail_out;
        switch (r) {
        case Z_OK:
            break;
        case Z_STREAM_END:
            CLT_TRY(member_end(g));
            break;
        case Z_BUF_ERROR:
            /* No progress was possible: with room left, only the input can
             * be missing. */
            if (g->z.avail_in == 0 && g->fed == g->n)
                return clt_fail(CLT_ERR_FORMAT,
                                "%s: truncated gzip stream: the compressed data (%zu bytes) ends "
                                "before the end of the stream", g->label, g->n);
            return clt_fail(CLT_ERR_INTERNAL, "%s: zlib made no progress", g->label);
        case Z_MEM_ERROR:
            return clt_fail(CLT_ERR_NO_MEMORY, "%s: zlib is out of memory", g->label);
        default: /* Z_DATA_ERROR, Z_NEED_DICT, Z_STREAM_ERROR */
            return clt_fail(CLT_ERR_FORMAT, "%s: corrupt gzip stream near compressed offset %zu: %s",
                            g->label, consumed(g), g->z.msg ? g->z.msg : zError(r));
        }
    }
    return CLT_OK;
}

void clt_gunzip_end(clt_gunzip *g)
{
    if (g->active) inflateEnd(&g->z);
    g->active = 0;
}
