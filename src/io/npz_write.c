/* .npz writing: each entry (local header, .npy header, data) goes to a
 * temporary file as it is added; commit appends the central directory and
 * the end record, then fsyncs and renames (core/atomic_file.h). Layout as
 * numpy.savez: fixed 1980-01-01 timestamps, stored or raw-deflate entries,
 * plain zip (no zip64: the writer refuses what would need it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/hash.h"
#include "io/npy.h"
#include "io/npz.h"
#include "io/zip.h"

#define ZCHUNK ((size_t)1 << 30)
#define MAX_KEY 1024
#define MAX_ENTRIES 65534u /* 0xffff in the end record means zip64 */
#define MADE_BY 0x0314u    /* Unix, zip 2.0, as Python's zipfile */

enum { W_OPEN, W_COMMITTED, W_FAILED };

struct wentry {
    char *zname; /* "<key>.npy" */
    size_t zlen;
    uint64_t hash;
    uint16_t method, flags;
    uint32_t crc, csize, usize, lho;
};

struct clt_npz_writer {
    clt_atomic_file af;
    int compress;
    int state;
    uint64_t offset; /* bytes written so far */
    struct wentry *ents;
    size_t n, cap;
};

clt_status clt_npz_writer_fail(clt_npz_writer *w, clt_status s)
{
    if (w && w->state == W_OPEN) {
        clt_atomic_abort(&w->af);
        w->state = W_FAILED;
    }
    return s;
}

static clt_status refuse(clt_npz_writer *w, const char *op)
{
    if (!w) return clt_fail(CLT_ERR_INVALID_ARG, "%s: writer is NULL", op);
    if (w->state == W_COMMITTED)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: %s is already committed", op, w->af.path);
    return clt_fail(CLT_ERR_INVALID_ARG, "%s: an earlier call on the writer of %s failed; the file is left as it was",
                    op, w->af.path);
}

clt_status clt_npz_writer_create(const char *path, int compress, clt_npz_writer **out)
{
    if (out) *out = NULL;
    if (!path || !out) return clt_fail(CLT_ERR_INVALID_ARG, "clt_npz_writer_create: NULL argument");
    if (!*path) return clt_fail(CLT_ERR_INVALID_ARG, "clt_npz_writer_create: empty path");
    clt_npz_writer *w = calloc(1, sizeof *w);
    if (!w) return clt_fail(CLT_ERR_NO_MEMORY, "%s: cannot allocate a writer", path);
    clt_status s = clt_atomic_open(&w->af, path);
    if (s != CLT_OK) {
        free(w);
        return s;
    }
    w->compress = compress != 0;
    w->state = W_OPEN;
    *out = w;
    return CLT_OK;
}

void clt_npz_writer_destroy(clt_npz_writer *w)
{
    if (!w) return;
    if (w->state == W_OPEN) clt_atomic_abort(&w->af);
    for (size_t i = 0; i < w->n; i++) free(w->ents[i].zname);
    free(w->ents);
    free(w);
}

static clt_status check_key(const clt_npz_writer *w, const char *op, const char *name, uint64_t *hash)
{
    if (!name || !*name) return clt_fail(CLT_ERR_INVALID_ARG, "%s: %s: empty key", op, w->af.path);
    size_t len = strlen(name);
    if (len > MAX_KEY)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: %s: key of %zu bytes (at most %d)", op, w->af.path, len, MAX_KEY);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
            return clt_fail(CLT_ERR_INVALID_ARG, "%s: %s: key contains a control character", op, w->af.path);
    *hash = clt_hash(CLT_HASH_INIT, name, len);
    for (size_t i = 0; i < w->n; i++)
        if (w->ents[i].hash == *hash && w->ents[i].zlen == len + 4 && memcmp(w->ents[i].zname, name, len) == 0)
            return clt_fail(CLT_ERR_INVALID_ARG, "%s: %s: key \"%s\" is already in the archive", op, w->af.path, name);
    if (w->n >= MAX_ENTRIES)
        return clt_fail(CLT_ERR_UNSUPPORTED, "%s: %s: more than %u entries would need zip64", op, w->af.path,
                        MAX_ENTRIES);
    return CLT_OK;
}

uint32_t clt_crc32(uint32_t crc, const uint8_t *p, size_t n)
{
    uLong c = crc;
    while (n) {
        uInt k = n > CLT_ZCHUNK ? (uInt)CLT_ZCHUNK : (uInt)n;
        c = crc32(c, p, k);
        p += k;
        n -= k;
    }
    return (uint32_t)c;
}

/* Raw deflate of a then b into a buffer of an + bn bytes. *out stays NULL
 * when the result would not be smaller (the entry is then stored). */
static clt_status deflate_parts(const uint8_t *a, size_t an, const uint8_t *b, size_t bn, uint8_t **out,
                                size_t *outn)
{
    *out = NULL;
    size_t cap = an + bn;
    uint8_t *buf = malloc(cap ? cap : 1);
    if (!buf) return clt_fail(CLT_ERR_NO_MEMORY, "cannot allocate %zu bytes to compress an entry", cap);
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        free(buf);
        return clt_fail(CLT_ERR_NO_MEMORY, "cannot start zlib's deflate");
    }
    const uint8_t *part[2] = {a, b};
    size_t left[2] = {an, bn};
    size_t produced = 0;
    int k = 0, done = 0;
    clt_status s = CLT_OK;
    while (!done) {
        if (zs.avail_in == 0) {
            while (k < 2 && left[k] == 0) k++;
            if (k < 2) {
                uInt c = left[k] > ZCHUNK ? (uInt)ZCHUNK : (uInt)left[k];
                zs.next_in = (Bytef *)(uintptr_t)part[k];
                zs.avail_in = c;
                part[k] += c;
                left[k] -= c;
            }
        }
        int flush = left[0] == 0 && left[1] == 0 ? Z_FINISH : Z_NO_FLUSH;
        if (produced == cap) break; /* not smaller than the input: store */
        size_t room = cap - produced;
        zs.next_out = buf + produced;
        zs.avail_out = room > ZCHUNK ? (uInt)ZCHUNK : (uInt)room;
        uInt before = zs.avail_out;
        int ret = deflate(&zs, flush);
        produced += before - zs.avail_out;
        if (ret == Z_STREAM_END)
            done = 1;
        else if (ret != Z_OK && ret != Z_BUF_ERROR) {
            s = clt_fail(CLT_ERR_INTERNAL, "zlib's deflate failed (%d)", ret);
            break;
        }
    }
    deflateEnd(&zs);
    if (s != CLT_OK || !done || produced >= cap) {
        free(buf);
        return s;
    }
    *out = buf;
    *outn = produced;
    return CLT_OK;
}

/* One entry: local header, .npy header and data. payload is little-endian. */
static clt_status add_entry(clt_npz_writer *w, const char *op, const char *name, const char *descr, int ndim,
                            const int64_t *shape, const uint8_t *payload, size_t nbytes)
{
    uint64_t hash = 0;
    CLT_TRY(check_key(w, op, name, &hash));
    uint8_t hdr[CLT_NPY_HEADER_MAX];
    size_t hlen = clt_npy_header(hdr, descr, ndim, shape);
    size_t klen = strlen(name), zlen = klen + 4;
    if (nbytes >= (size_t)ZIP_U32_MAX - hlen)
        return clt_fail(CLT_ERR_UNSUPPORTED, "%s: %s: entry \"%s\" of %zu bytes would need zip64 (4 GiB and more)", op,
                        w->af.path, name, nbytes);
    uint32_t usize = (uint32_t)(hlen + nbytes);
    uint32_t crc = clt_crc32(clt_crc32(0, hdr, hlen), payload, nbytes);

    uint8_t *packed = NULL;
    size_t packed_n = 0;
    if (w->compress) CLT_TRY(deflate_parts(hdr, hlen, payload, nbytes, &packed, &packed_n));
    uint32_t csize = packed ? (uint32_t)packed_n : usize;
    uint64_t end = w->offset + ZIP_LOCAL_SIZE + zlen + csize;
    if (end >= ZIP_U32_MAX) {
        free(packed);
        return clt_fail(CLT_ERR_UNSUPPORTED, "%s: %s: the archive would reach 4 GiB, which needs zip64", op,
                        w->af.path);
    }
    struct wentry e = {NULL, zlen, hash, packed ? ZIP_METHOD_DEFLATE : ZIP_METHOD_STORED, 0, crc, csize, usize,
                       (uint32_t)w->offset};
    for (size_t i = 0; i < klen; i++)
        if ((unsigned char)name[i] >= 0x80) e.flags |= ZIP_FLAG_UTF8;
    if (w->n == w->cap) {
        size_t ncap = w->cap ? w->cap * 2 : 16;
        struct wentry *ne = realloc(w->ents, ncap * sizeof *ne);
        if (!ne) {
            free(packed);
            return clt_fail(CLT_ERR_NO_MEMORY, "%s: cannot grow the entry list", w->af.path);
        }
        w->ents = ne;
        w->cap = ncap;
    }
    e.zname = malloc(zlen + 1);
    if (!e.zname) {
        free(packed);
        return clt_fail(CLT_ERR_NO_MEMORY, "%s: cannot allocate a name", w->af.path);
    }
    memcpy(e.zname, name, klen);
    memcpy(e.zname + klen, ".npy", 5);

    uint8_t lh[ZIP_LOCAL_SIZE];
    zip_put32(lh, ZIP_LOCAL_SIG);
    zip_put16(lh + 4, e.method == ZIP_METHOD_DEFLATE ? 20 : 10);
    zip_put16(lh + 6, e.flags);
    zip_put16(lh + 8, e.method);
    zip_put16(lh + 10, ZIP_DOS_TIME);
    zip_put16(lh + 12, ZIP_DOS_DATE);
    zip_put32(lh + 14, crc);
    zip_put32(lh + 18, csize);
    zip_put32(lh + 22, usize);
    zip_put16(lh + 26, (uint32_t)zlen);
    zip_put16(lh + 28, 0);
    clt_status s = clt_atomic_write(&w->af, lh, sizeof lh);
    if (s == CLT_OK) s = clt_atomic_write(&w->af, e.zname, zlen);
    if (s == CLT_OK && packed) s = clt_atomic_write(&w->af, packed, packed_n);
    if (s == CLT_OK && !packed) s = clt_atomic_write(&w->af, hdr, hlen);
    if (s == CLT_OK && !packed) s = clt_atomic_write(&w->af, payload, nbytes);
    free(packed);
    if (s != CLT_OK) {
        free(e.zname);
        return s;
    }
    w->ents[w->n++] = e;
    w->offset = end;
    return CLT_OK;
}

clt_status clt_npz_writer_add_f32(clt_npz_writer *w, const char *name, int ndim, const int64_t *shape,
                                  const float *data)
{
    static const char op[] = "clt_npz_writer_add_f32";
    if (!w || w->state != W_OPEN) return refuse(w, op);
    if (ndim < 0 || ndim > CLT_MAX_DIMS)
        return clt_npz_writer_fail(w, clt_fail(CLT_ERR_INVALID_ARG, "%s: %s: ndim %d (0 .. %d)", op, w->af.path, ndim,
                                               CLT_MAX_DIMS));
    if (ndim && !shape)
        return clt_npz_writer_fail(w, clt_fail(CLT_ERR_INVALID_ARG, "%s: %s: shape is NULL", op, w->af.path));
    size_t numel = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return clt_npz_writer_fail(
                w, clt_fail(CLT_ERR_INVALID_ARG, "%s: %s: dimension %d is negative", op, w->af.path, i));
        if (shape[i] == 0) numel = 0;
    }
    for (int i = 0; i < ndim && numel; i++) {
        if ((uint64_t)shape[i] > SIZE_MAX / 4 / numel)
            return clt_npz_writer_fail(w, clt_fail(CLT_ERR_INVALID_ARG, "%s: %s: shape overflows", op, w->af.path));
        numel *= (size_t)shape[i];
    }
    if (numel && !data)
        return clt_npz_writer_fail(w, clt_fail(CLT_ERR_INVALID_ARG, "%s: %s: data is NULL", op, w->af.path));
    const uint8_t *payload = (const uint8_t *)data;
    uint8_t *swapped = NULL;
    if (!zip_host_is_le() && numel) {
        swapped = malloc(numel * 4);
        if (!swapped)
            return clt_npz_writer_fail(w, clt_fail(CLT_ERR_NO_MEMORY, "%s: cannot allocate %zu bytes", w->af.path,
                                                   numel * 4));
        memcpy(swapped, data, numel * 4);
        zip_swap32(swapped, numel);
        payload = swapped;
    }
    clt_status s = add_entry(w, op, name, "<f4", ndim, shape, payload ? payload : (const uint8_t *)"", numel * 4);
    free(swapped);
    return s == CLT_OK ? s : clt_npz_writer_fail(w, s);
}

clt_status clt_npz_writer_add_bytes(clt_npz_writer *w, const char *name, const void *data, size_t n)
{
    static const char op[] = "clt_npz_writer_add_bytes";
    if (!w || w->state != W_OPEN) return refuse(w, op);
    if (n && !data)
        return clt_npz_writer_fail(w, clt_fail(CLT_ERR_INVALID_ARG, "%s: %s: data is NULL", op, w->af.path));
    if (n > (size_t)INT64_MAX)
        return clt_npz_writer_fail(w, clt_fail(CLT_ERR_INVALID_ARG, "%s: %s: size overflows", op, w->af.path));
    int64_t shape[1] = {(int64_t)n};
    clt_status s = add_entry(w, op, name, "|u1", 1, shape, n ? data : (const uint8_t *)"", n);
    return s == CLT_OK ? s : clt_npz_writer_fail(w, s);
}

clt_status clt_npz_writer_commit(clt_npz_writer *w)
{
    if (!w || w->state != W_OPEN) return refuse(w, "clt_npz_writer_commit");
    uint64_t cd_offset = w->offset, cd_size = 0;
    clt_status s = CLT_OK;
    for (size_t i = 0; i < w->n && s == CLT_OK; i++) {
        const struct wentry *e = &w->ents[i];
        uint8_t ch[ZIP_CENTRAL_SIZE];
        zip_put32(ch, ZIP_CENTRAL_SIG);
        zip_put16(ch + 4, MADE_BY);
        zip_put16(ch + 6, e->method == ZIP_METHOD_DEFLATE ? 20 : 10);
        zip_put16(ch + 8, e->flags);
        zip_put16(ch + 10, e->method);
        zip_put16(ch + 12, ZIP_DOS_TIME);
        zip_put16(ch + 14, ZIP_DOS_DATE);
        zip_put32(ch + 16, e->crc);
        zip_put32(ch + 20, e->csize);
        zip_put32(ch + 24, e->usize);
        zip_put16(ch + 28, (uint32_t)e->zlen);
        zip_put16(ch + 30, 0); /* extra */
        zip_put16(ch + 32, 0); /* comment */
        zip_put16(ch + 34, 0); /* disk */
        zip_put16(ch + 36, 0); /* internal attributes */
        zip_put32(ch + 38, 0644u << 16); /* external: a regular file, rw-r--r-- */
        zip_put32(ch + 42, e->lho);
        s = clt_atomic_write(&w->af, ch, sizeof ch);
        if (s == CLT_OK) s = clt_atomic_write(&w->af, e->zname, e->zlen);
        cd_size += ZIP_CENTRAL_SIZE + e->zlen;
    }
    if (s == CLT_OK && cd_offset + cd_size >= ZIP_U32_MAX)
        s = clt_fail(CLT_ERR_UNSUPPORTED, "%s: the archive would reach 4 GiB, which needs zip64", w->af.path);
    if (s == CLT_OK) {
        uint8_t eocd[ZIP_EOCD_SIZE];
        zip_put32(eocd, ZIP_EOCD_SIG);
        zip_put16(eocd + 4, 0);
        zip_put16(eocd + 6, 0);
        zip_put16(eocd + 8, (uint32_t)w->n);
        zip_put16(eocd + 10, (uint32_t)w->n);
        zip_put32(eocd + 12, (uint32_t)cd_size);
        zip_put32(eocd + 16, (uint32_t)cd_offset);
        zip_put16(eocd + 20, 0);
        s = clt_atomic_write(&w->af, eocd, sizeof eocd);
    }
    if (s != CLT_OK) return clt_npz_writer_fail(w, s);
    s = clt_atomic_commit(&w->af); /* removes the temporary file on failure */
    w->state = s == CLT_OK ? W_COMMITTED : W_FAILED;
    return s;
}
