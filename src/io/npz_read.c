/* .npz reading. The whole file is read into memory and every zip field is
 * untrusted: offsets and sizes are checked against the real size before
 * use, entries may not overlap, a deflate entry must inflate to exactly its
 * declared size (the output buffer grows with what really comes out, never
 * with what a header claims) and match its CRC-32, and every .npy header
 * must parse strictly (npy.c). The central directory is authoritative; the
 * local headers must agree with it. */
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/alloc.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "io/npy.h"
#include "io/npz.h"
#include "io/zip.h"

/* zlib counts in uInt: feed it at most this much at a time. */
#define ZCHUNK ((size_t)1 << 30)

struct npz_item {
    clt_npz_entry e;
    char *name;          /* key, NUL-terminated, without ".npy" */
    char dtype[16];
    uint8_t *buf;        /* the array data (owned) */
    /* Zip fields, used while reading. */
    const uint8_t *zname;/* name in the file, with ".npy" */
    size_t zname_len;
    uint16_t flags, method;
    uint32_t crc;
    uint64_t csize, usize, lho, data_start;
};

struct clt_npz {
    char *path;
    int n;
    struct npz_item *items;   /* archive order */
    struct npz_item **sorted; /* by name, for lookups */
};

typedef struct reader {
    const uint8_t *p;
    size_t n;
    const char *label;
} reader;

/* A name from the file, safe to print: control bytes, quotes and
 * backslashes escaped, long names cut. */
static const char *printable(const uint8_t *s, size_t n, char *buf, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (o + 8 >= cap) {
            memcpy(buf + o, "...", 3);
            o += 3;
            break;
        }
        unsigned char c = s[i];
        if (c < 0x20 || c == 0x7f || c == '"' || c == '\\')
            o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", c);
        else
            buf[o++] = (char)c;
    }
    buf[o] = 0;
    return buf;
}

static clt_status entry_fail(const reader *r, const struct npz_item *it, clt_status s, const char *fmt, ...)
    CLT_PRINTF(4, 5);

/* "<file>: entry "<name>": <message>" */
static clt_status entry_fail(const reader *r, const struct npz_item *it, clt_status s, const char *fmt, ...)
{
    char msg[1024], name[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return clt_fail(s, "%s: entry \"%s\": %s", r->label, printable(it->zname, it->zname_len, name, sizeof name),
                    msg);
}

/* ---- end of central directory ---------------------------------------- */

typedef struct zip_dir {
    uint64_t count, cd_offset, cd_size;
    uint64_t cd_end; /* where the central directory must end */
} zip_dir;

static clt_status find_directory(const reader *r, zip_dir *d)
{
    const uint8_t *p = r->p;
    size_t n = r->n;
    if (n == 0) return clt_fail(CLT_ERR_FORMAT, "%s: the file is empty, not an .npz (zip) archive", r->label);
    if (n >= 6 && memcmp(p, "\x93NUMPY", 6) == 0)
        return clt_fail(CLT_ERR_FORMAT, "%s: this is a single .npy array, not an .npz archive (a zip of .npy files)",
                        r->label);
    if (n < ZIP_EOCD_SIZE)
        return clt_fail(CLT_ERR_FORMAT, "%s: %zu bytes is too short for a zip archive (.npz)", r->label, n);

    /* The end record is in the last 22 + 65535 bytes; its comment must
     * reach exactly to the end of the file. */
    size_t lowest = n - ZIP_EOCD_SIZE > ZIP_MAX_COMMENT ? n - ZIP_EOCD_SIZE - ZIP_MAX_COMMENT : 0;
    size_t pos = SIZE_MAX;
    for (size_t i = n - ZIP_EOCD_SIZE + 1; i-- > lowest;) {
        if (zip_le32(p + i) == ZIP_EOCD_SIG && i + ZIP_EOCD_SIZE + zip_le16(p + i + 20) == n) {
            pos = i;
            break;
        }
    }
    if (pos == SIZE_MAX) {
        if (zip_le32(p) == ZIP_LOCAL_SIG)
            return clt_fail(CLT_ERR_FORMAT,
                            "%s: zip end of central directory record not found: the file is truncated or corrupt",
                            r->label);
        return clt_fail(CLT_ERR_FORMAT, "%s: not an .npz file: no zip end of central directory record", r->label);
    }
    const uint8_t *e = p + pos;
    uint32_t disk = zip_le16(e + 4), cd_disk = zip_le16(e + 6);
    uint64_t n_disk = zip_le16(e + 8), n_total = zip_le16(e + 10);
    uint64_t cd_size = zip_le32(e + 12), cd_offset = zip_le32(e + 16);
    uint64_t end = pos;
    int saturated = n_disk == ZIP_U16_MAX || n_total == ZIP_U16_MAX || cd_size == ZIP_U32_MAX ||
                    cd_offset == ZIP_U32_MAX || disk == ZIP_U16_MAX || cd_disk == ZIP_U16_MAX;

    if (pos >= ZIP64_LOCATOR_SIZE && zip_le32(e - ZIP64_LOCATOR_SIZE) == ZIP64_LOCATOR_SIG) {
        const uint8_t *l = e - ZIP64_LOCATOR_SIZE;
        size_t lpos = pos - ZIP64_LOCATOR_SIZE;
        uint32_t ldisk = zip_le32(l + 4), ndisks = zip_le32(l + 16);
        uint64_t rec = zip_le64(l + 8);
        if (ldisk != 0 || ndisks > 1)
            return clt_fail(CLT_ERR_FORMAT, "%s: multi-disk (split) zip archives are not supported", r->label);
        if (rec > lpos || lpos - rec < ZIP64_EOCD_SIZE)
            return clt_fail(CLT_ERR_FORMAT, "%s: zip64 end record offset %" PRIu64 " is out of range", r->label,
                            rec);
        const uint8_t *z = p + rec;
        if (zip_le32(z) != ZIP64_EOCD_SIG)
            return clt_fail(CLT_ERR_FORMAT, "%s: no zip64 end record at offset %" PRIu64, r->label, rec);
        if (zip_le64(z + 4) != lpos - rec - 12)
            return clt_fail(CLT_ERR_FORMAT, "%s: zip64 end record size %" PRIu64 " does not reach its locator",
                            r->label, zip_le64(z + 4));
        disk = zip_le32(z + 16);
        cd_disk = zip_le32(z + 20);
        n_disk = zip_le64(z + 24);
        n_total = zip_le64(z + 32);
        cd_size = zip_le64(z + 40);
        cd_offset = zip_le64(z + 48);
        end = rec;
    } else if (saturated) {
        return clt_fail(CLT_ERR_FORMAT, "%s: zip end record needs zip64 values but has no zip64 locator", r->label);
    }
    if (disk != 0 || cd_disk != 0 || n_disk != n_total)
        return clt_fail(CLT_ERR_FORMAT, "%s: multi-disk (split) zip archives are not supported", r->label);
    if (cd_offset > end || cd_size != end - cd_offset)
        return clt_fail(CLT_ERR_FORMAT,
                        "%s: central directory (offset %" PRIu64 ", %" PRIu64 " bytes) does not end at the end "
                        "record (offset %" PRIu64 "): truncated or corrupt",
                        r->label, cd_offset, cd_size, end);
    if (n_total > cd_size / ZIP_CENTRAL_SIZE || n_total > INT_MAX)
        return clt_fail(CLT_ERR_FORMAT, "%s: %" PRIu64 " entries cannot fit a central directory of %" PRIu64 " bytes",
                        r->label, n_total, cd_size);
    d->count = n_total;
    d->cd_offset = cd_offset;
    d->cd_size = cd_size;
    d->cd_end = end;
    return CLT_OK;
}

/* ---- central directory ------------------------------------------------ */

/* The zip64 extra field: 8-byte values for the fields saturated in the
 * fixed header, in the order uncompressed size, compressed size, local
 * header offset, then a 4-byte disk number. */
static clt_status zip64_extra(const reader *r, const struct npz_item *it, const uint8_t *x, size_t xlen,
                              uint64_t *usize, uint64_t *csize, uint64_t *lho, uint32_t *disk)
{
    int found = 0;
    size_t at = 0;
    while (xlen - at >= 4) {
        unsigned id = zip_le16(x + at), size = zip_le16(x + at + 2);
        if (size > xlen - at - 4)
            return entry_fail(r, it, CLT_ERR_FORMAT, "extra field 0x%04x (%u bytes) runs past the extra data", id,
                              size);
        if (id == ZIP_EXTRA_ZIP64) {
            if (found++) return entry_fail(r, it, CLT_ERR_FORMAT, "two zip64 extra fields");
            const uint8_t *f = x + at + 4;
            size_t left = size;
            uint64_t *want[3] = {usize, csize, lho};
            for (int k = 0; k < 3; k++) {
                if (!want[k] || *want[k] != ZIP_U32_MAX) continue;
                if (left < 8) return entry_fail(r, it, CLT_ERR_FORMAT, "zip64 extra field is too short");
                *want[k] = zip_le64(f);
                f += 8;
                left -= 8;
            }
            if (disk && *disk == ZIP_U16_MAX) {
                if (left < 4) return entry_fail(r, it, CLT_ERR_FORMAT, "zip64 extra field is too short");
                *disk = zip_le32(f);
            }
        }
        at += 4 + (size_t)size;
    }
    int need = (usize && *usize == ZIP_U32_MAX) || (csize && *csize == ZIP_U32_MAX) ||
               (lho && *lho == ZIP_U32_MAX) || (disk && *disk == ZIP_U16_MAX);
    if (need && !found)
        return entry_fail(r, it, CLT_ERR_FORMAT, "a size or offset is 0xffffffff but no zip64 extra field gives it");
    return CLT_OK;
}

static const char *method_name(unsigned m)
{
    switch (m) {
    case 1: return "shrink";
    case 6: return "implode";
    case 9: return "deflate64";
    case 12: return "bzip2";
    case 14: return "lzma";
    case 93: return "zstd";
    case 95: return "xz";
    case 99: return "AES encryption";
    default: return "unknown";
    }
}

static clt_status read_directory(const reader *r, const zip_dir *d, struct npz_item *items)
{
    uint64_t at = d->cd_offset;
    for (uint64_t i = 0; i < d->count; i++) {
        struct npz_item *it = &items[i];
        if (d->cd_end - at < ZIP_CENTRAL_SIZE)
            return clt_fail(CLT_ERR_FORMAT, "%s: central directory entry %" PRIu64 " is truncated", r->label, i);
        const uint8_t *q = r->p + at;
        if (zip_le32(q) != ZIP_CENTRAL_SIG)
            return clt_fail(CLT_ERR_FORMAT, "%s: central directory entry %" PRIu64 " has a bad signature (offset %" PRIu64
                            ")", r->label, i, at);
        size_t nlen = zip_le16(q + 28), xlen = zip_le16(q + 30), clen = zip_le16(q + 32);
        if (ZIP_CENTRAL_SIZE + nlen + xlen + clen > d->cd_end - at)
            return clt_fail(CLT_ERR_FORMAT, "%s: central directory entry %" PRIu64 " runs past the directory", r->label,
                            i);
        it->zname = q + ZIP_CENTRAL_SIZE;
        it->zname_len = nlen;
        it->flags = zip_le16(q + 8);
        it->method = zip_le16(q + 10);
        it->crc = zip_le32(q + 16);
        it->csize = zip_le32(q + 20);
        it->usize = zip_le32(q + 24);
        it->lho = zip_le32(q + 42);
        uint32_t disk = zip_le16(q + 34);
        CLT_TRY(zip64_extra(r, it, q + ZIP_CENTRAL_SIZE + nlen, xlen, &it->usize, &it->csize, &it->lho, &disk));
        if (it->flags & (ZIP_FLAG_ENCRYPTED | ZIP_FLAG_STRONG_ENC | ZIP_FLAG_MASKED_DIR))
            return entry_fail(r, it, CLT_ERR_FORMAT, "encrypted entries are not supported");
        if (it->flags & ZIP_FLAG_PATCHED)
            return entry_fail(r, it, CLT_ERR_FORMAT, "patched-data entries are not supported");
        if (it->method != ZIP_METHOD_STORED && it->method != ZIP_METHOD_DEFLATE)
            return entry_fail(r, it, CLT_ERR_FORMAT,
                              "compression method %u (%s) is not supported: only stored (0) and deflate (8)",
                              it->method, method_name(it->method));
        if (disk != 0) return entry_fail(r, it, CLT_ERR_FORMAT, "multi-disk (split) archives are not supported");
        at += ZIP_CENTRAL_SIZE + nlen + xlen + clen;
    }
    if (at != d->cd_end)
        return clt_fail(CLT_ERR_FORMAT, "%s: %" PRIu64 " stray bytes after the last central directory entry", r->label,
                        d->cd_end - at);
    return CLT_OK;
}

/* Keys: "<key>.npy", no control bytes; copied NUL-terminated. */
static clt_status take_names(const reader *r, struct npz_item *items, int n)
{
    for (int i = 0; i < n; i++) {
        struct npz_item *it = &items[i];
        for (size_t k = 0; k < it->zname_len; k++)
            if (it->zname[k] < 0x20 || it->zname[k] == 0x7f)
                return entry_fail(r, it, CLT_ERR_FORMAT, "the name contains a control character");
        if (it->zname_len < 4 || memcmp(it->zname + it->zname_len - 4, ".npy", 4) != 0)
            return entry_fail(r, it, CLT_ERR_FORMAT, "the name does not end in .npy: not a NumPy array");
        if (it->zname_len == 4) return entry_fail(r, it, CLT_ERR_FORMAT, "the key before .npy is empty");
        size_t len = it->zname_len - 4;
        it->name = malloc(len + 1);
        if (!it->name) return clt_fail(CLT_ERR_NO_MEMORY, "%s: cannot allocate a name", r->label);
        memcpy(it->name, it->zname, len);
        it->name[len] = 0;
    }
    return CLT_OK;
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(struct npz_item *const *)a)->name, (*(struct npz_item *const *)b)->name);
}

static int by_offset(const void *a, const void *b)
{
    const struct npz_item *p = *(struct npz_item *const *)a, *q = *(struct npz_item *const *)b;
    if (p->lho != q->lho) return p->lho < q->lho ? -1 : 1;
    return p < q ? -1 : p > q; /* ties in archive order: the same report every time */
}

/* ---- local headers ---------------------------------------------------- */

static clt_status read_local(const reader *r, const zip_dir *d, struct npz_item *it)
{
    /* Entry data lies before the central directory. */
    uint64_t limit = d->cd_offset;
    if (it->lho > limit || limit - it->lho < ZIP_LOCAL_SIZE)
        return entry_fail(r, it, CLT_ERR_FORMAT, "local header offset %" PRIu64 " is outside the entry area (%" PRIu64
                          " bytes)", it->lho, limit);
    const uint8_t *q = r->p + it->lho;
    if (zip_le32(q) != ZIP_LOCAL_SIG)
        return entry_fail(r, it, CLT_ERR_FORMAT, "no local header at offset %" PRIu64, it->lho);
    unsigned lflags = zip_le16(q + 6), lmethod = zip_le16(q + 8);
    uint64_t lcrc = zip_le32(q + 14), lcsize = zip_le32(q + 18), lusize = zip_le32(q + 22);
    size_t lnlen = zip_le16(q + 26), lxlen = zip_le16(q + 28);
    if (lnlen + lxlen > limit - it->lho - ZIP_LOCAL_SIZE)
        return entry_fail(r, it, CLT_ERR_FORMAT, "local header runs past the entry area");
    if (lnlen != it->zname_len || memcmp(q + ZIP_LOCAL_SIZE, it->zname, lnlen) != 0)
        return entry_fail(r, it, CLT_ERR_FORMAT, "the local header names another file");
    if (lmethod != it->method)
        return entry_fail(r, it, CLT_ERR_FORMAT, "local header says method %u, the central directory %u", lmethod,
                          it->method);
    if (lflags & (ZIP_FLAG_ENCRYPTED | ZIP_FLAG_STRONG_ENC))
        return entry_fail(r, it, CLT_ERR_FORMAT, "encrypted entries are not supported");
    if (!((lflags | it->flags) & ZIP_FLAG_DESCRIPTOR)) {
        /* Sizes and CRC are in the local header too (zip64: both sizes in
         * its extra field when either is saturated). */
        if (lcsize == ZIP_U32_MAX || lusize == ZIP_U32_MAX) {
            lcsize = lusize = ZIP_U32_MAX;
            CLT_TRY(zip64_extra(r, it, q + ZIP_LOCAL_SIZE + lnlen, lxlen, &lusize, &lcsize, NULL, NULL));
        }
        if (lcrc != it->crc || lcsize != it->csize || lusize != it->usize)
            return entry_fail(r, it, CLT_ERR_FORMAT,
                              "local header (crc %08" PRIx64 ", sizes %" PRIu64 "/%" PRIu64
                              ") disagrees with the central directory (crc %08" PRIx32 ", sizes %" PRIu64 "/%" PRIu64 ")",
                              lcrc, lcsize, lusize, it->crc, it->csize, it->usize);
    }
    it->data_start = it->lho + ZIP_LOCAL_SIZE + lnlen + lxlen;
    if (it->csize > limit - it->data_start)
        return entry_fail(r, it, CLT_ERR_FORMAT,
                          "%" PRIu64 " bytes of data at offset %" PRIu64 " run past the entry area (%" PRIu64
                          " bytes): truncated or corrupt",
                          it->csize, it->data_start, limit);
    return CLT_OK;
}

/* ---- entry data ------------------------------------------------------- */

/* Inflates raw deflate data to exactly `usize` bytes into a buffer that
 * grows with the real output. */
static clt_status inflate_exact(const reader *r, const struct npz_item *it, const uint8_t *src, size_t usize,
                                uint8_t **out)
{
    size_t cap = it->csize > SIZE_MAX / 4 ? usize : (size_t)it->csize * 4;
    if (cap < ((size_t)1 << 16)) cap = (size_t)1 << 16;
    if (cap > usize) cap = usize;
    uint8_t *buf = malloc(cap ? cap : 1);
    if (!buf) return entry_fail(r, it, CLT_ERR_NO_MEMORY, "cannot allocate %zu bytes", cap);
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) {
        free(buf);
        return entry_fail(r, it, CLT_ERR_NO_MEMORY, "cannot start zlib's inflate");
    }
    const uint8_t *in = src;
    uint64_t in_left = it->csize;
    size_t produced = 0;
    uint8_t probe[1];
    int probing = 0;
    clt_status s = CLT_OK;
    for (;;) {
        if (zs.avail_in == 0 && in_left) {
            uInt k = in_left > ZCHUNK ? (uInt)ZCHUNK : (uInt)in_left;
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
                        s = entry_fail(r, it, CLT_ERR_NO_MEMORY, "cannot allocate %zu bytes", ncap);
                        break;
                    }
                    buf = nb;
                    cap = ncap;
                }
                size_t room = cap - produced;
                zs.next_out = buf + produced;
                zs.avail_out = room > ZCHUNK ? (uInt)ZCHUNK : (uInt)room;
            }
        }
        uInt before = zs.avail_out;
        int ret = inflate(&zs, Z_NO_FLUSH);
        size_t got = before - zs.avail_out;
        if (probing && got) {
            s = entry_fail(r, it, CLT_ERR_FORMAT, "deflate data inflates to more than the declared %zu bytes", usize);
            break;
        }
        if (!probing) produced += got;
        if (ret == Z_STREAM_END) break;
        if (ret == Z_OK) continue;
        if (ret == Z_BUF_ERROR && zs.avail_in == 0 && in_left == 0) {
            s = entry_fail(r, it, CLT_ERR_FORMAT,
                           "deflate data ends early after %zu of %zu bytes: truncated or corrupt", produced, usize);
            break;
        }
        if (ret == Z_BUF_ERROR) continue; /* more input or output space comes next round */
        if (ret == Z_MEM_ERROR)
            s = entry_fail(r, it, CLT_ERR_NO_MEMORY, "zlib ran out of memory");
        else
            s = entry_fail(r, it, CLT_ERR_FORMAT, "bad deflate data: %s", zs.msg ? zs.msg : "zlib error");
        break;
    }
    if (s == CLT_OK && produced != usize)
        s = entry_fail(r, it, CLT_ERR_FORMAT, "deflate data inflates to %zu bytes, the directory declares %zu",
                       produced, usize);
    if (s == CLT_OK && (zs.avail_in || in_left))
        s = entry_fail(r, it, CLT_ERR_FORMAT, "%" PRIu64 " bytes of compressed data follow the end of the deflate stream",
                       (uint64_t)zs.avail_in + in_left);
    inflateEnd(&zs);
    if (s != CLT_OK) {
        free(buf);
        return s;
    }
    *out = buf;
    return CLT_OK;
}

static clt_status read_entry(const reader *r, struct npz_item *it)
{
    const uint8_t *src = r->p + it->data_start;
    if (it->usize > SIZE_MAX - 1)
        return entry_fail(r, it, CLT_ERR_NO_MEMORY, "%" PRIu64 " bytes do not fit this host's memory", it->usize);
    size_t usize = (size_t)it->usize;
    uint8_t *buf = NULL;
    if (it->method == ZIP_METHOD_STORED) {
        if (it->csize != it->usize)
            return entry_fail(r, it, CLT_ERR_FORMAT, "stored entry has %" PRIu64 " bytes but declares %" PRIu64,
                              it->csize, it->usize);
        buf = malloc(usize ? usize : 1);
        if (!buf) return entry_fail(r, it, CLT_ERR_NO_MEMORY, "cannot allocate %zu bytes", usize);
        if (usize) memcpy(buf, src, usize);
    } else {
        if (it->usize / ZIP_DEFLATE_MAX_RATIO > it->csize + 16)
            return entry_fail(r, it, CLT_ERR_FORMAT,
                              "declares %" PRIu64 " bytes, more than %" PRIu64 " deflate bytes can hold",
                              it->usize, it->csize);
        CLT_TRY(inflate_exact(r, it, src, usize, &buf));
    }
    uint32_t crc = clt_crc32(0, buf, usize);
    if (crc != it->crc) {
        free(buf);
        return entry_fail(r, it, CLT_ERR_FORMAT, "CRC-32 mismatch (computed %08" PRIx32 ", stored %08" PRIx32
                          "): the data is corrupt", crc, it->crc);
    }
    clt_npy_info info;
    clt_status s = clt_npy_parse(buf, usize, &info);
    if (s != CLT_OK) {
        free(buf);
        char name[300];
        return clt_fail_context(s, "%s: entry \"%s\"", r->label,
                                printable(it->zname, it->zname_len, name, sizeof name));
    }
    /* The data moves to the start of the (malloc-aligned) buffer. */
    memmove(buf, buf + info.data_offset, info.nbytes);
    if (!info.is_bytes && !zip_host_is_le()) zip_swap32(buf, (size_t)info.numel);
    it->buf = buf;
    memcpy(it->dtype, info.descr, sizeof it->dtype);
    clt_npz_entry *e = &it->e;
    e->name = it->name;
    e->dtype = it->dtype;
    e->is_bytes = info.is_bytes;
    e->ndim = info.ndim;
    memcpy(e->shape, info.shape, sizeof e->shape);
    e->numel = info.numel;
    e->data = info.is_bytes ? NULL : (const float *)(const void *)buf;
    e->bytes = buf;
    e->nbytes = info.nbytes;
    return CLT_OK;
}

/* ---- the archive ------------------------------------------------------ */

void clt_npz_destroy(clt_npz *npz)
{
    if (!npz) return;
    for (int i = 0; i < npz->n; i++) {
        free(npz->items[i].name);
        free(npz->items[i].buf);
    }
    free(npz->items);
    free(npz->sorted);
    free(npz->path);
    free(npz);
}

static clt_status read_archive(const reader *r, clt_npz *z)
{
    zip_dir d = {0, 0, 0, 0};
    CLT_TRY(find_directory(r, &d));
    int n = (int)d.count;
    z->items = calloc(n ? (size_t)n : 1, sizeof *z->items);
    z->sorted = calloc(n ? (size_t)n : 1, sizeof *z->sorted);
    if (!z->items || !z->sorted) return clt_fail(CLT_ERR_NO_MEMORY, "%s: cannot allocate %d entries", r->label, n);
    z->n = n;
    CLT_TRY(read_directory(r, &d, z->items));
    CLT_TRY(take_names(r, z->items, n));

    for (int i = 0; i < n; i++) z->sorted[i] = &z->items[i];
    qsort(z->sorted, (size_t)n, sizeof *z->sorted, by_name);
    for (int i = 1; i < n; i++)
        if (strcmp(z->sorted[i - 1]->name, z->sorted[i]->name) == 0)
            return entry_fail(r, z->sorted[i], CLT_ERR_FORMAT, "the name appears twice in the archive");

    /* Local headers in file order: no two entries may share bytes. */
    struct npz_item **order = malloc((n ? (size_t)n : 1) * sizeof *order);
    if (!order) return clt_fail(CLT_ERR_NO_MEMORY, "%s: cannot allocate %d entries", r->label, n);
    for (int i = 0; i < n; i++) order[i] = &z->items[i];
    qsort(order, (size_t)n, sizeof *order, by_offset);
    clt_status s = CLT_OK;
    for (int i = 0; i < n && s == CLT_OK; i++) {
        s = read_local(r, &d, order[i]);
        if (s == CLT_OK && i + 1 < n && order[i]->data_start + order[i]->csize > order[i + 1]->lho) {
            char other[300];
            s = entry_fail(r, order[i], CLT_ERR_FORMAT, "its data overlaps entry \"%s\"",
                           printable(order[i + 1]->zname, order[i + 1]->zname_len, other, sizeof other));
        }
    }
    free(order);
    CLT_TRY(s);
    for (int i = 0; i < n; i++) CLT_TRY(read_entry(r, &z->items[i]));
    return CLT_OK;
}

clt_status clt_npz_read_memory(const uint8_t *data, size_t n, const char *label, clt_npz **out)
{
    if (!out) return clt_fail(CLT_ERR_INVALID_ARG, "clt_npz_read: out is NULL");
    *out = NULL;
    if (!data && n) return clt_fail(CLT_ERR_INVALID_ARG, "clt_npz_read: data is NULL");
    if (!label) label = "<memory>";
    clt_npz *z = calloc(1, sizeof *z);
    if (!z) return clt_fail(CLT_ERR_NO_MEMORY, "%s: cannot allocate the archive", label);
    clt_status s = clt_strdup(&z->path, label);
    if (s == CLT_OK) {
        reader r = {data ? data : (const uint8_t *)"", n, label};
        s = read_archive(&r, z);
    }
    if (s != CLT_OK) {
        clt_npz_destroy(z);
        return s;
    }
    *out = z;
    return CLT_OK;
}

clt_status clt_npz_read(const char *path, clt_npz **out)
{
    if (out) *out = NULL;
    if (!path || !out) return clt_fail(CLT_ERR_INVALID_ARG, "clt_npz_read: NULL argument");
    unsigned char *data;
    size_t n;
    CLT_TRY(clt_read_file(path, &data, &n));
    clt_status s = clt_npz_read_memory(data, n, path, out);
    free(data);
    return s;
}

int clt_npz_count(const clt_npz *npz) { return npz ? npz->n : 0; }

const char *clt_npz_path(const clt_npz *npz) { return npz ? npz->path : ""; }

const clt_npz_entry *clt_npz_get(const clt_npz *npz, const char *name)
{
    if (!npz || !name) return NULL;
    int lo = 0, hi = npz->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(npz->sorted[mid]->name, name);
        if (c == 0) return &npz->sorted[mid]->e;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

clt_status clt_npz_entry_at(const clt_npz *npz, int i, clt_npz_entry *entry)
{
    if (!npz || !entry) return clt_fail(CLT_ERR_INVALID_ARG, "clt_npz_entry_at: NULL argument");
    if (i < 0 || i >= npz->n)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: entry %d does not exist (the archive has %d)", npz->path, i, npz->n);
    *entry = npz->items[i].e;
    return CLT_OK;
}

clt_status clt_npz_find(const clt_npz *npz, const char *name, clt_npz_entry *entry)
{
    if (!npz || !name || !entry) return clt_fail(CLT_ERR_INVALID_ARG, "clt_npz_find: NULL argument");
    const clt_npz_entry *e = clt_npz_get(npz, name);
    if (!e) return clt_fail(CLT_ERR_NOT_FOUND, "%s: no entry \"%s\"", npz->path, name);
    *entry = *e;
    return CLT_OK;
}

const char *clt_npz_shape_str(int ndim, const int64_t *shape, char *buf, size_t cap)
{
    return clt_npy_shape_str(ndim, shape, buf, cap);
}
