/* The zip end record, central directory and local headers of an .npz
 * (see zip_read.h). */
#include "io/zip_read.h"

#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/zip.h"

const char *clt_zip_printable(const uint8_t *s, size_t n, char *buf, size_t cap)
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

/* "<file>: entry "<name>": <message>" */
clt_status clt_zip_fail(const clt_zip_reader *r, const clt_zip_entry *it, clt_status s, const char *fmt, ...)
{
    char msg[1024], name[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return clt_fail(s, "%s: entry \"%s\": %s", r->label,
                    clt_zip_printable(it->name, it->name_len, name, sizeof name), msg);
}

/* ---- end of central directory ---------------------------------------- */

clt_status clt_zip_find_directory(const clt_zip_reader *r, clt_zip_dir *d)
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
static clt_status zip64_extra(const clt_zip_reader *r, const clt_zip_entry *it, const uint8_t *x, size_t xlen,
                              uint64_t *usize, uint64_t *csize, uint64_t *lho, uint32_t *disk)
{
    int found = 0;
    size_t at = 0;
    while (xlen - at >= 4) {
        unsigned id = zip_le16(x + at), size = zip_le16(x + at + 2);
        if (size > xlen - at - 4)
            return clt_zip_fail(r, it, CLT_ERR_FORMAT, "extra field 0x%04x (%u bytes) runs past the extra data", id,
                                size);
        if (id == ZIP_EXTRA_ZIP64) {
            if (found++) return clt_zip_fail(r, it, CLT_ERR_FORMAT, "two zip64 extra fields");
            const uint8_t *f = x + at + 4;
            size_t left = size;
            uint64_t *want[3] = {usize, csize, lho};
            for (int k = 0; k < 3; k++) {
                if (!want[k] || *want[k] != ZIP_U32_MAX) continue;
                if (left < 8) return clt_zip_fail(r, it, CLT_ERR_FORMAT, "zip64 extra field is too short");
                *want[k] = zip_le64(f);
                f += 8;
                left -= 8;
            }
            if (disk && *disk == ZIP_U16_MAX) {
                if (left < 4) return clt_zip_fail(r, it, CLT_ERR_FORMAT, "zip64 extra field is too short");
                *disk = zip_le32(f);
            }
        }
        at += 4 + (size_t)size;
    }
    int need = (usize && *usize == ZIP_U32_MAX) || (csize && *csize == ZIP_U32_MAX) ||
               (lho && *lho == ZIP_U32_MAX) || (disk && *disk == ZIP_U16_MAX);
    if (need && !found)
        return clt_zip_fail(r, it, CLT_ERR_FORMAT, "a size or offset is 0xffffffff but no zip64 extra field gives it");
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

clt_status clt_zip_read_directory(const clt_zip_reader *r, const clt_zip_dir *d, clt_zip_entry *items)
{
    uint64_t at = d->cd_offset;
    for (uint64_t i = 0; i < d->count; i++) {
        clt_zip_entry *it = &items[i];
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
        it->name = q + ZIP_CENTRAL_SIZE;
        it->name_len = nlen;
        it->flags = zip_le16(q + 8);
        it->method = zip_le16(q + 10);
        it->crc = zip_le32(q + 16);
        it->csize = zip_le32(q + 20);
        it->usize = zip_le32(q + 24);
        it->lho = zip_le32(q + 42);
        uint32_t disk = zip_le16(q + 34);
        CLT_TRY(zip64_extra(r, it, q + ZIP_CENTRAL_SIZE + nlen, xlen, &it->usize, &it->csize, &it->lho, &disk));
        if (it->flags & (ZIP_FLAG_ENCRYPTED | ZIP_FLAG_STRONG_ENC | ZIP_FLAG_MASKED_DIR))
            return clt_zip_fail(r, it, CLT_ERR_FORMAT, "encrypted entries are not supported");
        if (it->flags & ZIP_FLAG_PATCHED)
            return clt_zip_fail(r, it, CLT_ERR_FORMAT, "patched-data entries are not supported");
        if (it->method != ZIP_METHOD_STORED && it->method != ZIP_METHOD_DEFLATE)
            return clt_zip_fail(r, it, CLT_ERR_FORMAT,
                                "compression method %u (%s) is not supported: only stored (0) and deflate (8)",
                                it->method, method_name(it->method));
        if (disk != 0) return clt_zip_fail(r, it, CLT_ERR_FORMAT, "multi-disk (split) archives are not supported");
        at += ZIP_CENTRAL_SIZE + nlen + xlen + clen;
    }
    if (at != d->cd_end)
        return clt_fail(CLT_ERR_FORMAT, "%s: %" PRIu64 " stray bytes after the last central directory entry", r->label,
                        d->cd_end - at);
    return CLT_OK;
}

static int by_offset(const void *a, const void *b)
{
    const clt_zip_entry *p = *(const clt_zip_entry *const *)a, *q = *(const clt_zip_entry *const *)b;
    if (p->lho != q->lho) return p->lho < q->lho ? -1 : 1;
    return p < q ? -1 : p > q; /* ties in archive order: the same report every time */
}

/* ---- local headers ---------------------------------------------------- */

static clt_status read_local(const clt_zip_reader *r, const clt_zip_dir *d, clt_zip_entry *it)
{
    /* Entry data lies before the central directory. */
    uint64_t limit = d->cd_offset;
    if (it->lho > limit || limit - it->lho < ZIP_LOCAL_SIZE)
        return clt_zip_fail(r, it, CLT_ERR_FORMAT, "local header offset %" PRIu64 " is outside the entry area (%" PRIu64
                            " bytes)", it->lho, limit);
    const uint8_t *q = r->p + it->lho;
    if (zip_le32(q) != ZIP_LOCAL_SIG)
        return clt_zip_fail(r, it, CLT_ERR_FORMAT, "no local header at offset %" PRIu64, it->lho);
    unsigned lflags = zip_le16(q + 6), lmethod = zip_le16(q + 8);
    uint64_t lcrc = zip_le32(q + 14), lcsize = zip_le32(q + 18), lusize = zip_le32(q + 22);
    size_t lnlen = zip_le16(q + 26), lxlen = zip_le16(q + 28);
    if (lnlen + lxlen > limit - it->lho - ZIP_LOCAL_SIZE)
        return clt_zip_fail(r, it, CLT_ERR_FORMAT, "local header runs past the entry area");
    if (lnlen != it->name_len || memcmp(q + ZIP_LOCAL_SIZE, it->name, lnlen) != 0)
        return clt_zip_fail(r, it, CLT_ERR_FORMAT, "the local header names another file");
    if (lmethod != it->method)
        return clt_zip_fail(r, it, CLT_ERR_FORMAT, "local header says method %u, the central directory %u", lmethod,
                            it->method);
    if (lflags & (ZIP_FLAG_ENCRYPTED | ZIP_FLAG_STRONG_ENC))
        return clt_zip_fail(r, it, CLT_ERR_FORMAT, "encrypted entries are not supported");
    if (!((lflags | it->flags) & ZIP_FLAG_DESCRIPTOR)) {
        /* Sizes and CRC are in the local header too (zip64: both sizes in
         * its extra field when either is saturated). */
        if (lcsize == ZIP_U32_MAX || lusize == ZIP_U32_MAX) {
            lcsize = lusize = ZIP_U32_MAX;
            CLT_TRY(zip64_extra(r, it, q + ZIP_LOCAL_SIZE + lnlen, lxlen, &lusize, &lcsize, NULL, NULL));
        }
        if (lcrc != it->crc || lcsize != it->csize || lusize != it->usize)
            return clt_zip_fail(r, it, CLT_ERR_FORMAT,
                                "local header (crc %08" PRIx64 ", sizes %" PRIu64 "/%" PRIu64
                                ") disagrees with the central directory (crc %08" PRIx32 ", sizes %" PRIu64 "/%" PRIu64 ")",
                                lcrc, lcsize, lusize, it->crc, it->csize, it->usize);
    }
    it->data_start = it->lho + ZIP_LOCAL_SIZE + lnlen + lxlen;
    if (it->csize > limit - it->data_start)
        return clt_zip_fail(r, it, CLT_ERR_FORMAT,
                            "%" PRIu64 " bytes of data at offset %" PRIu64 " run past the entry area (%" PRIu64
                            " bytes): truncated or corrupt",
                            it->csize, it->data_start, limit);
    return CLT_OK;
}

clt_status clt_zip_read_locals(const clt_zip_reader *r, const clt_zip_dir *d, clt_zip_entry *entries, int n)
{
    /* Local headers in file order: no two entries may share bytes. */
    clt_zip_entry **order = malloc((n ? (size_t)n : 1) * sizeof *order);
    if (!order) return clt_fail(CLT_ERR_NO_MEMORY, "%s: cannot allocate %d entries", r->label, n);
    for (int i = 0; i < n; i++) order[i] = &entries[i];
    qsort(order, (size_t)n, sizeof *order, by_offset);
    clt_status s = CLT_OK;
    for (int i = 0; i < n && s == CLT_OK; i++) {
        s = read_local(r, d, order[i]);
        if (s == CLT_OK && i + 1 < n && order[i]->data_start + order[i]->csize > order[i + 1]->lho) {
            char other[300];
            s = clt_zip_fail(r, order[i], CLT_ERR_FORMAT, "its data overlaps entry \"%s\"",
                             clt_zip_printable(order[i + 1]->name, order[i + 1]->name_len, other, sizeof other));
        }
    }
    free(order);
    return s;
}
