/* IDX files (the MNIST format): 2 zero bytes, a type code, the number of
 * dimensions, one big-endian uint32 per dimension, then the data. Every
 * header field is untrusted: the declared size is checked against the real
 * size (file size, or what the gzip stream inflates to) before it is used. */
#include "data/idx.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/atomic_file.h"
#include "core/error.h"
#include "data/gunzip.h"

#define IDX_TYPE_UBYTE 0x08
#define IDX_MAX_HEADER (4 + 4 * CLT_IDX_MAX_DIMS)

static const char *type_name(unsigned code)
{
    switch (code) {
    case 0x08: return "unsigned byte";
    case 0x09: return "signed byte";
    case 0x0B: return "int16";
    case 0x0C: return "int32";
    case 0x0D: return "float32";
    case 0x0E: return "float64";
    default: return NULL;
    }
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* "60000 x 28 x 28" */
static void dims_str(const clt_idx *idx, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < idx->ndim && len < cap; i++) {
        int w = snprintf(buf + len, cap - len, "%s%" PRId64, i ? " x " : "", idx->dims[i]);
        if (w < 0) break;
        len += (size_t)w;
    }
}

/* Checks the 4 magic bytes; returns the number of dimensions through *ndim. */
static clt_status check_magic(const uint8_t *m, const char *label, int *ndim)
{
    if (m[0] != 0 || m[1] != 0)
        return clt_fail(CLT_ERR_FORMAT,
                        "%s: bad magic number %02x %02x %02x %02x: not an IDX file "
                        "(the first two bytes must be zero)", label, m[0], m[1], m[2], m[3]);
    if (m[2] != IDX_TYPE_UBYTE) {
        const char *name = type_name(m[2]);
        if (name)
            return clt_fail(CLT_ERR_FORMAT,
                            "%s: unsupported IDX data type code 0x%02x (%s): only 0x08 "
                            "(unsigned byte) is supported", label, m[2], name);
        return clt_fail(CLT_ERR_FORMAT, "%s: invalid IDX data type code 0x%02x "
                        "(only 0x08, unsigned byte, is supported)", label, m[2]);
    }
    if (m[3] == 0)
        return clt_fail(CLT_ERR_FORMAT, "%s: IDX header declares 0 dimensions", label);
    if (m[3] > CLT_IDX_MAX_DIMS)
        return clt_fail(CLT_ERR_FORMAT, "%s: IDX header declares %u dimensions, at most %d are supported",
                        label, m[3], CLT_IDX_MAX_DIMS);
    *ndim = m[3];
    return CLT_OK;
}

/* Reads the dimensions and computes the data size, refusing overflow and
 * sizes above CLT_IDX_MAX_BYTES. */
static clt_status parse_dims(const uint8_t *p, int ndim, const char *label, clt_idx *idx)
{
    uint64_t size = 1;
    int overflow = 0;
    idx->ndim = ndim;
    for (int i = 0; i < ndim; i++) {
        uint32_t d = be32(p + 4 * i);
        idx->dims[i] = d;
        if (d != 0 && size > UINT64_MAX / d) overflow = 1;
        else size *= d;
    }
    char dims[160];
    dims_str(idx, dims, sizeof dims);
    /* A zero dimension makes the product 0 even after an overflow. */
    for (int i = 0; i < ndim; i++)
        if (idx->dims[i] == 0) overflow = 0, size = 0;
    if (overflow)
        return clt_fail(CLT_ERR_FORMAT, "%s: IDX dimensions %s overflow: their product does not "
                        "fit in 64 bits", label, dims);
    if (size > CLT_IDX_MAX_BYTES)
        return clt_fail(CLT_ERR_FORMAT, "%s: IDX dimensions %s declare %" PRIu64 " bytes of data, "
                        "more than the 4 GiB limit", label, dims, size);
    idx->size = (size_t)size;
    return CLT_OK;
}

static clt_status size_mismatch(const clt_idx *idx, const char *label, size_t have, const char *what)
{
    char dims[160];
    dims_str(idx, dims, sizeof dims);
    size_t hdr = 4 + 4 * (size_t)idx->ndim;
    if (have < idx->size)
        return clt_fail(CLT_ERR_FORMAT,
                        "%s: truncated: the IDX header declares %s = %zu bytes of data, but only "
                        "%zu %sfollow the %zu-byte header", label, dims, idx->size, have, what, hdr);
    return clt_fail(CLT_ERR_FORMAT,
                    "%s: extra bytes: %zu %sfollow the %zu-byte header, but the IDX header declares "
                    "%s = %zu bytes of data", label, have, what, hdr, dims, idx->size);
}

static clt_status parse_plain(const uint8_t *src, size_t n, const char *label, clt_idx *idx)
{
    int ndim;
    if (n < 4)
        return clt_fail(CLT_ERR_FORMAT, "%s: truncated IDX header: the file has %zu bytes, the "
                        "header needs at least 4", label, n);
    CLT_TRY(check_magic(src, label, &ndim));
    size_t hdr = 4 + 4 * (size_t)ndim;
    if (n < hdr)
        return clt_fail(CLT_ERR_FORMAT, "%s: truncated IDX header: %d dimensions need a %zu-byte "
                        "header, the file has %zu bytes", label, ndim, hdr, n);
    CLT_TRY(parse_dims(src + 4, ndim, label, idx));
    if (n - hdr != idx->size) return size_mismatch(idx, label, n - hdr, "bytes ");
    idx->data = malloc(idx->size ? idx->size : 1);
    if (!idx->data)
        return clt_fail(CLT_ERR_NO_MEMORY, "%s: cannot allocate %zu bytes", label, idx->size);
    if (idx->size) memcpy(idx->data, src + hdr, idx->size);
    return CLT_OK;
}

/* Reads exactly `want` decompressed bytes, or fails naming what was short. */
static clt_status gz_read_header(clt_gunzip *g, uint8_t *dst, size_t want, size_t have,
                                 const char *label)
{
    size_t got;
    CLT_TRY(clt_gunzip_read(g, dst, want, &got));
    if (got == want) return CLT_OK;
    if (have + got == 0)
        return clt_fail(CLT_ERR_FORMAT, "%s: the gzip stream decompresses to nothing (empty IDX file)",
                        label);
    return clt_fail(CLT_ERR_FORMAT, "%s: truncated IDX header: the decompressed data ends after %zu "
                    "bytes, the header needs %zu", label, have + got, have + want);
}

static clt_status parse_gzip_body(clt_gunzip *g, const char *label, size_t n, clt_idx *idx)
{
    uint8_t hdr[IDX_MAX_HEADER];
    int ndim;
    CLT_TRY(gz_read_header(g, hdr, 4, 0, label));
    CLT_TRY(check_magic(hdr, label, &ndim));
    CLT_TRY(gz_read_header(g, hdr + 4, 4 * (size_t)ndim, 4, label));
    CLT_TRY(parse_dims(hdr + 4, ndim, label, idx));

    /* The header is not trusted for the allocation: start from a guess tied
     * to the compressed size and grow only as real data arrives, so a small
     * file claiming gigabytes never gets them. */
    size_t cap = n < ((size_t)1 << 40) / 8 ? n * 8 : idx->size;
    if (cap < ((size_t)1 << 20)) cap = (size_t)1 << 20;
    if (cap > idx->size) cap = idx->size;
    uint8_t *buf = malloc(cap ? cap : 1);
    if (!buf) return clt_fail(CLT_ERR_NO_MEMORY, "%s: cannot allocate %zu bytes", label, cap);
    size_t have = 0;
    for (;;) {
        size_t got;
        clt_status s = clt_gunzip_read(g, buf + have, cap - have, &got);
        if (s != CLT_OK) {
            free(buf);
            return s;
        }
        have += got;
        if (have < cap || cap == idx->size) break; /* stream ended, or all declared bytes read */
        size_t next = cap > idx->size / 2 ? idx->size : cap * 2;
        uint8_t *grown = realloc(buf, next);
        if (!grown) {
            free(buf);
            return clt_fail(CLT_ERR_NO_MEMORY, "%s: cannot allocate %zu bytes", label, next);
        }
        buf = grown;
        cap = next;
    }
    /* One byte more than declared tells extra data from a clean end, and
     * reading it also drives zlib through the trailer (CRC and length). */
    uint8_t probe;
    size_t extra = 0;
    clt_status s = have == idx->size ? clt_gunzip_read(g, &probe, 1, &extra) : CLT_OK;
    if (s == CLT_OK && (have != idx->size || extra))
        s = size_mismatch(idx, label, have + extra, extra ? "or more decompressed bytes "
                                                           : "decompressed bytes ");
    if (s != CLT_OK) {
        free(buf);
        return s;
    }
    idx->data = buf;
    return CLT_OK;
}

clt_status clt_idx_parse_memory(const uint8_t *src, size_t n, const char *label, clt_idx *out)
{
    if (!out) return clt_fail(CLT_ERR_INVALID_ARG, "clt_idx_parse_memory: out is NULL");
    memset(out, 0, sizeof *out);
    if (!label) label = "IDX data";
    if (!src && n) return clt_fail(CLT_ERR_INVALID_ARG, "%s: data is NULL", label);
    if (n == 0) return clt_fail(CLT_ERR_FORMAT, "%s: empty file", label);
    clt_status s;
    if (n >= 2 && src[0] == 0x1f && src[1] == 0x8b) {
        clt_gunzip g;
        s = clt_gunzip_init(&g, src, n, label);
        if (s == CLT_OK) s = parse_gzip_body(&g, label, n, out);
        clt_gunzip_end(&g);
    } else {
        s = parse_plain(src, n, label, out);
    }
    if (s != CLT_OK) memset(out, 0, sizeof *out);
    return s;
}

/* Whole file into memory, refusing anything a valid IDX file (plain or gzip:
 * deflate never grows data by more than a small fraction) could not be. */
static clt_status read_whole(const char *path, uint8_t **data, size_t *n)
{
    const uint64_t max_file = CLT_IDX_MAX_BYTES + CLT_IDX_MAX_BYTES / 1024 + 4096;
    /* the size is checked before anything is allocated, and a FIFO or a
     * device is refused without waiting for a writer */
    clt_status s = clt_read_file(path, (size_t)max_file, data, n);
    if (s == CLT_ERR_FORMAT) return clt_fail_context(s, "IDX data above 4 GiB is refused");
    return s;
}

clt_status clt_idx_read(const char *path, clt_idx **out)
{
    if (!out) return clt_fail(CLT_ERR_INVALID_ARG, "clt_idx_read: out is NULL");
    *out = NULL;
    if (!path) return clt_fail(CLT_ERR_INVALID_ARG, "clt_idx_read: path is NULL");
    clt_idx *idx = calloc(1, sizeof *idx);
    if (!idx) return clt_fail(CLT_ERR_NO_MEMORY, "%s: IDX header", path);
    uint8_t *raw;
    size_t n;
    clt_status s = read_whole(path, &raw, &n);
    if (s == CLT_OK) {
        s = clt_idx_parse_memory(raw, n, path, idx);
        free(raw);
    }
    if (s != CLT_OK) {
        free(idx);
        return s;
    }
    *out = idx;
    return CLT_OK;
}

void clt_idx_clear(clt_idx *idx)
{
    if (!idx) return;
    free(idx->data);
    memset(idx, 0, sizeof *idx);
}

void clt_idx_destroy(clt_idx *idx)
{
    clt_idx_clear(idx);
    free(idx);
}
