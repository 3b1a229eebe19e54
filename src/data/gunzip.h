/* Streaming gunzip over a buffer in memory. The caller says how many bytes
 * it wants per call, so output is always bounded by the caller (never by
 * what a header inside the stream claims). */
#ifndef CLT_DATA_GUNZIP_H
#define CLT_DATA_GUNZIP_H

#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#include "cltrain.h"

typedef struct clt_gunzip {
    z_stream z;
    const uint8_t *src;
    size_t n;          /* compressed bytes in src */
    size_t fed;        /* bytes of src handed to zlib so far */
    const char *label; /* names the input in error messages */
    int active;        /* inflateInit2 succeeded */
    int done;          /* every member ended and no input is left */
} clt_gunzip;

/* Starts decoding a gzip stream (one member or several concatenated). */
clt_status clt_gunzip_init(clt_gunzip *g, const uint8_t *src, size_t n, const char *label);
/* Inflates up to `want` bytes into dst. *got < want only when the stream has
 * ended cleanly; a truncated or corrupt stream is CLT_ERR_FORMAT. */
clt_status clt_gunzip_read(clt_gunzip *g, uint8_t *dst, size_t want, size_t *got);
/* Releases zlib state; safe to call twice. */
void clt_gunzip_end(clt_gunzip *g);

#endif
