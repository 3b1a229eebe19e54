/* An entry's data out of a zip archive: stored bytes copied, deflate data
 * inflated to exactly the declared size into a buffer that grows with what
 * really comes out (never with what a header claims), then the CRC-32
 * checked. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "io/zip.h"
#include "io/zip_read.h"

/* ---- entry data ------------------------------------------------------- */

/* Inflates raw deflate data to exactly `usize` bytes into a buffer that
 * grows with the real output. */
static clt_status inflate_exact(const clt_zip_reader *r, const clt_zip_entry *it, const uint8_t *src, size_t usize,
                                uint8_t **out)
{
    size_t cap = it->csize > SIZE_MAX / 4 ? usize : (size_t)it->csize * 4;
    if (cap < ((size_t)1 << 16)) cap = (size_t)1 << 16;
    if (cap > usize) cap = usize;
    uint8_t *buf = malloc(cap ? cap : 1);
    if (!buf) return clt_zip_fail(r, it, CLT_ERR_NO_MEMORY, "cannot allocate %zu bytes", cap);
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) {
        free(buf);
        return clt_zip_fail(r, it, CLT_ERR_NO_MEMORY, "cannot start zlib's inflate");
    }
    const uint8_t *in = src;
    uint64_t in_left = it->csize;
    size_t produced = 0;
    uint8_t probe[1];
    int probing = 0;
    clt_status s = CLT_OK;
    for (;;) {
        if (zs.avail_in == 0 && in_left) {
            uInt k = in_left > CLT_ZCHUNK ? (uInt)CLT_ZCHUNK : (uInt)in_left;
            zs.next_in = (Bytef *)(uintptr_t)in;
            zs.avail_in = k;
            in += k;
            in_left -= k;
        }
        if (zs.avail_out == 0) {
            if (produced == usize) {
                /* All declared bytes are out: anything more is an error. */
                zs.next_out = probe;
                zs.avail_out = 1;
                probing = 1;
            } else {
                if (produced == cap) {
                    size_t ncap = cap > usize / 2 ? usize : cap * 2;
                    uint8_t *nb = realloc(buf, ncap);
                    if (!nb) {
                        s = clt_zip_fail(r, it, CLT_ERR_NO_MEMORY, "cannot allocate %zu bytes", ncap);
                        break;
                    }
                    buf = nb;
                    cap = ncap;
                }
                size_t room = cap - produced;
                zs.next_out = buf + produced;
                zs.avail_out = room > CLT_ZCHUNK ? (uInt)CLT_ZCHUNK : (uInt)room;
            }
        }
        uInt before = zs.avail_out;
        int ret = inflate(&zs, Z_NO_FLUSH);
        size_t got = before - zs.avail_out;
        if (probing && got) {
            s = clt_zip_fail(r, it, CLT_ERR_FORMAT, "deflate data inflates to more than the declared %zu bytes", usize);
            break;
        }
        if (!probing) produced += got;
        if (ret == Z_STREAM_END) break;
        if (ret == Z_OK) continue;
        if (ret == Z_BUF_ERROR && zs.avail_in == 0 && in_left == 0) {
            s = clt_zip_fail(r, it, CLT_ERR_FORMAT,
                             "deflate data ends early after %zu of %zu bytes: truncated or corrupt", produced, usize);
            break;
        }
        if (ret == Z_BUF_ERROR) continue; /* more input or output space comes next round */
        if (ret == Z_MEM_ERROR)
            s = clt_zip_fail(r, it, CLT_ERR_NO_MEMORY, "zlib ran out of memory");
        else
            s = clt_zip_fail(r, it, CLT_ERR_FORMAT, "bad deflate data: %s", zs.msg ? zs.msg : "zlib error");
        break;
    }
    if (s == CLT_OK && produced != usize)
        s = clt_zip_fail(r, it, CLT_ERR_FORMAT, "deflate data inflates to %zu bytes, the directory declares %zu",
                         produced, usize);
    if (s == CLT_OK && (zs.avail_in || in_left))
        s = clt_zip_fail(r, it, CLT_ERR_FORMAT, "%" PRIu64 " bytes of compressed data follow the end of the deflate stream",
                         (uint64_t)zs.avail_in + in_left);
    inflateEnd(&zs);
    if (s != CLT_OK) {
        free(buf);
        return s;
    }
    *out = buf;
    return CLT_OK;
}

clt_status clt_zip_extract(const clt_zip_reader *r, const clt_zip_entry *it, uint8_t **out)
{
    const uint8_t *src = r->p + it->data_start;
    if (it->usize > SIZE_MAX - 1)
        return clt_zip_fail(r, it, CLT_ERR_NO_MEMORY, "%" PRIu64 " bytes do not fit this host's memory", it->usize);
    size_t usize = (size_t)it->usize;
    uint8_t *buf = NULL;
    if (it->method == ZIP_METHOD_STORED) {
        if (it->csize != it->usize)
            return clt_zip_fail(r, it, CLT_ERR_FORMAT, "stored entry has %" PRIu64 " bytes but declares %" PRIu64,
                                it->csize, it->usize);
        buf = malloc(usize ? usize : 1);
        if (!buf) return clt_zip_fail(r, it, CLT_ERR_NO_MEMORY, "cannot allocate %zu bytes", usize);
        if (usize) memcpy(buf, src, usize);
    } else {
        if (it->usize / ZIP_DEFLATE_MAX_RATIO > it->csize + 16)
            return clt_zip_fail(r, it, CLT_ERR_FORMAT,
                                "declares %" PRIu64 " bytes, more than %" PRIu64 " deflate bytes can hold",
                                it->usize, it->csize);
        CLT_TRY(inflate_exact(r, it, src, usize, &buf));
    }
    uint32_t crc = clt_crc32(0, buf, usize);
    if (crc != it->crc) {
        free(buf);
        return clt_zip_fail(r, it, CLT_ERR_FORMAT, "CRC-32 mismatch (computed %08" PRIx32 ", stored %08" PRIx32
                            "): the data is corrupt", crc, it->crc);
    }
    *out = buf;
    return CLT_OK;
}
