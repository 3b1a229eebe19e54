#include "io/tfrecord.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "io/crc32c.h"

static void put_le32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void clt_tfrecord_frame(const void *data, size_t n, unsigned char *out)
{
    uint64_t len = n;
    for (int i = 0; i < 8; i++) out[i] = (unsigned char)(len >> (8 * i));
    put_le32(out + 8, clt_crc32c_mask(clt_crc32c(0, out, 8)));
    memcpy(out + 12, data, n);
    put_le32(out + 12 + n, clt_crc32c_mask(clt_crc32c(0, data, n)));
}

clt_status clt_tfrecord_write(int fd, const char *path, int64_t *size, const void *data, size_t n)
{
    size_t total = n + CLT_TFRECORD_OVERHEAD;
    unsigned char *buf = malloc(total);
    if (!buf) return clt_fail(CLT_ERR_NO_MEMORY, "%s: no memory for a record of %zu bytes", path, n);
    clt_tfrecord_frame(data, n, buf);
    size_t done = 0;
    int err = 0;
    while (done < total) {
        ssize_t w = write(fd, buf + done, total - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            err = w < 0 ? errno : ENOSPC;
            break;
        }
        done += (size_t)w;
    }
    free(buf);
    if (!err) {
        *size += (int64_t)total;
        return CLT_OK;
    }
    /* a part of the record would be a torn record in mid-file once the
     * next one follows it */
    if (done && ftruncate(fd, (off_t)*size) != 0)
        return clt_fail(CLT_ERR_IO, "%s: write failed (%s), and cutting the partial record failed too (%s)", path,
                        strerror(err), strerror(errno));
    return clt_fail(CLT_ERR_IO, "%s: write failed: %s", path, strerror(err));
}

clt_status clt_tfrecord_next(const unsigned char *buf, size_t len, size_t *pos, const unsigned char **data,
                             size_t *n)
{
    size_t at = *pos, left = len - at;
    if (left == 0) return CLT_ERR_NOT_FOUND;
    if (left < 12) return clt_fail(CLT_ERR_FORMAT, "offset %zu: a record header cut short (%zu of 12 bytes)", at, left);
    const unsigned char *p = buf + at;
    if (clt_crc32c_mask(clt_crc32c(0, p, 8)) != get_le32(p + 8))
        return clt_fail(CLT_ERR_FORMAT, "offset %zu: the record length fails its CRC", at);
    uint64_t size = (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
    if (size > left - 12 || left - 12 - size < 4)
        return clt_fail(CLT_ERR_FORMAT, "offset %zu: a record of %llu bytes cut short (%zu bytes follow its header)",
                        at, (unsigned long long)size, left - 12);
    if (clt_crc32c_mask(clt_crc32c(0, p + 12, (size_t)size)) != get_le32(p + 12 + size))
        return clt_fail(CLT_ERR_FORMAT, "offset %zu: the record's data fails its CRC", at);
    *data = p + 12;
    *n = (size_t)size;
    *pos = at + 12 + (size_t)size + 4;
    return CLT_OK;
}
