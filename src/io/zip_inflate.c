/* An entry's data out of a zip archive, read in pieces so a caller can
 * check what the first bytes declare before it takes the rest: stored bytes
 * copied, deflate data inflated, never past the size the directory
 * declares; the end of the stream and the CRC-32 are checked at the end. */
#include <inttypes.h>
#include <string.h>

#include "io/zip.h"
#include "io/zip_read.h"

clt_status clt_zip_stream_open(clt_zip_stream *s, const clt_zip_reader *r, const clt_zip_entry *it)
{
    memset(s, 0, sizeof *s);
    s->r = r;
    s->it = it;
    s->in = r->p + it->data_start;
    s->in_left = it->csize;
    if (it->usize > SIZE_MAX - 1)
        return clt_zip_fail(r, it, CLT_ERR_NO_MEMORY, "%" PRIu64 " bytes do not fit this host's memory", it->usize);
    if (it->method == ZIP_METHOD_STORED) {
        if (it->csize != it->usize)
            return clt_zip_fail(r, it, CLT_ERR_FORMAT, "stored entry has %" PRIu64 " bytes but declares %" PRIu64,
                                it->csize, it->usize);
        return CLT_OK;
    }
    if (it->usize / ZIP_DEFLATE_MAX_RATIO > it->csize + 16)
        return clt_zip_fail(r, it, CLT_ERR_FORMAT, "declares %" PRIu64 " bytes, more than %" PRIu64 " deflate bytes can hold",
                            it->usize, it->csize);
    if (inflateInit2(&s->zs, -MAX_WBITS) != Z_OK)
        return clt_zip_fail(r, it, CLT_ERR_NO_MEMORY, "cannot start zlib's inflate");
    s->inflating = 1;
    return CLT_OK;
}

void clt_zip_stream_close(clt_zip_stream *s)
{
    if (s->inflating) inflateEnd(&s->zs);
    s->inflating = 0;
}

/* One inflate call into dst[0..room): *got bytes come out. */
static clt_status inflate_some(clt_zip_stream *s, uint8_t *dst, size_t room, size_t *got)
{
    if (s->zs.avail_in == 0 && s->in_left) {
        uInt k = s->in_left > CLT_ZCHUNK ? (uInt)CLT_ZCHUNK : (uInt)s->in_left;
        s->zs.next_in = (Bytef *)(uintptr_t)s->in;
        s->zs.avail_in = k;
        s->in += k;
        s->in_left -= k;
    }
    s->zs.next_out = dst;
    s->zs.avail_out = room > CLT_ZCHUNK ? (uInt)CLT_ZCHUNK : (uInt)room;
    uInt before = s->zs.avail_out;
    int ret = inflate(&s->zs, Z_NO_FLUSH);
    *got = before - s->zs.avail_out;
    if (ret == Z_STREAM_END) s->ended = 1;
    if (ret == Z_OK || ret == Z_STREAM_END) return CLT_OK;
    if (ret == Z_BUF_ERROR && (s->zs.avail_in || s->in_left)) return CLT_OK; /* room or input comes next round */
    if (ret == Z_BUF_ERROR)
        return clt_zip_fail(s->r, s->it, CLT_ERR_FORMAT,
                            "deflate data ends early after %" PRIu64 " of %" PRIu64 " bytes: truncated or corrupt",
                            s->out + *got, s->it->usize);
    if (ret == Z_MEM_ERROR) return clt_zip_fail(s->r, s->it, CLT_ERR_NO_MEMORY, "zlib ran out of memory");
    return clt_zip_fail(s->r, s->it, CLT_ERR_FORMAT, "bad deflate data: %s", s->zs.msg ? s->zs.msg : "zlib error");
}

clt_status clt_zip_stream_read(clt_zip_stream *s, uint8_t *dst, size_t n)
{
    if (n > s->it->usize - s->out)
        return clt_zip_fail(s->r, s->it, CLT_ERR_INTERNAL, "read of %zu bytes past the declared %" PRIu64, n,
                            s->it->usize);
    if (!s->inflating) {
        if (n) memcpy(dst, s->in + s->out, n);
    } else {
        size_t done = 0;
        while (done < n) {
            if (s->ended)
                return clt_zip_fail(s->r, s->it, CLT_ERR_FORMAT, "deflate data inflates to %" PRIu64
                                    " bytes, the directory declares %" PRIu64, s->out + done, s->it->usize);
            size_t got;
            CLT_TRY(inflate_some(s, dst + done, n - done, &got));
            done += got;
        }
    }
    s->crc = clt_crc32(s->crc, dst, n);
    s->out += n;
    return CLT_OK;
}

clt_status clt_zip_stream_finish(clt_zip_stream *s)
{
    const clt_zip_reader *r = s->r;
    const clt_zip_entry *it = s->it;
    if (s->out != it->usize)
        return clt_zip_fail(r, it, CLT_ERR_INTERNAL, "finished after %" PRIu64 " of %" PRIu64 " bytes", s->out,
                            it->usize);
    /* All declared bytes are out: one more byte is an error. */
    while (s->inflating && !s->ended) {
        uint8_t probe[1];
        size_t got;
        CLT_TRY(inflate_some(s, probe, 1, &got));
        if (got)
            return clt_zip_fail(r, it, CLT_ERR_FORMAT, "deflate data inflates to more than the declared %" PRIu64 " bytes",
                                it->usize);
    }
    if (s->inflating && (s->zs.avail_in || s->in_left))
        return clt_zip_fail(r, it, CLT_ERR_FORMAT, "%" PRIu64 " bytes of compressed data follow the end of the deflate stream",
                            (uint64_t)s->zs.avail_in + s->in_left);
    if (s->crc != it->crc)
        return clt_zip_fail(r, it, CLT_ERR_FORMAT, "CRC-32 mismatch (computed %08" PRIx32 ", stored %08" PRIx32
                            "): the data is corrupt", s->crc, it->crc);
    return CLT_OK;
}
