/* The zip container as .npz uses it: record signatures, fixed sizes and
 * little-endian field access, shared by the reader and the writer. Layout
 * follows PKWARE's APPNOTE.TXT (sections 4.3 and 4.5). */
#ifndef CLT_IO_ZIP_H
#define CLT_IO_ZIP_H

#include <stdint.h>
#include <string.h>

#define ZIP_LOCAL_SIG 0x04034b50u     /* local file header */
#define ZIP_CENTRAL_SIG 0x02014b50u   /* central directory file header */
#define ZIP_EOCD_SIG 0x06054b50u      /* end of central directory record */
#define ZIP64_EOCD_SIG 0x06064b50u    /* zip64 end of central directory record */
#define ZIP64_LOCATOR_SIG 0x07064b50u /* zip64 end of central directory locator */

#define ZIP_LOCAL_SIZE 30   /* fixed part of a local header */
#define ZIP_CENTRAL_SIZE 46 /* fixed part of a central directory header */
#define ZIP_EOCD_SIZE 22    /* end record without its comment */
#define ZIP64_EOCD_SIZE 56  /* zip64 end record without extensible data */
#define ZIP64_LOCATOR_SIZE 20
#define ZIP_MAX_COMMENT 65535

#define ZIP_EXTRA_ZIP64 0x0001 /* extra field id of the zip64 sizes */

#define ZIP_FLAG_ENCRYPTED 0x0001u
#define ZIP_FLAG_DESCRIPTOR 0x0008u  /* crc and sizes follow the data */
#define ZIP_FLAG_PATCHED 0x0020u     /* compressed patched data */
#define ZIP_FLAG_STRONG_ENC 0x0040u
#define ZIP_FLAG_UTF8 0x0800u
#define ZIP_FLAG_MASKED_DIR 0x2000u  /* central directory encrypted */

#define ZIP_METHOD_STORED 0
#define ZIP_METHOD_DEFLATE 8

#define ZIP_U32_MAX 0xffffffffu
#define ZIP_U16_MAX 0xffffu

/* Largest inflate ratio deflate can reach (zlib's FAQ: 1032:1). A declared
 * uncompressed size above (compressed + slack) x this is a lie. */
#define ZIP_DEFLATE_MAX_RATIO 1032u

/* 1980-01-01 00:00:00 in MS-DOS format: NumPy writes this fixed date too, so
 * equal contents give equal files. */
#define ZIP_DOS_TIME 0
#define ZIP_DOS_DATE ((0u << 9) | (1u << 5) | 1u)

static inline uint16_t zip_le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

static inline uint32_t zip_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t zip_le64(const uint8_t *p)
{
    return (uint64_t)zip_le32(p) | (uint64_t)zip_le32(p + 4) << 32;
}

static inline void zip_put16(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static inline void zip_put32(uint8_t *p, uint32_t v)
{
    zip_put16(p, v & 0xffffu);
    zip_put16(p + 2, v >> 16);
}

/* 1 on a little-endian host. The files are little-endian on every host. */
static inline int zip_host_is_le(void)
{
    const uint16_t one = 1;
    uint8_t b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* Reverses the bytes of n 4-byte words in place (big-endian hosts). */
static inline void zip_swap32(void *data, size_t n)
{
    uint8_t *p = data;
    for (size_t i = 0; i < n; i++, p += 4) {
        uint8_t t = p[0];
        p[0] = p[3];
        p[3] = t;
        t = p[1];
        p[1] = p[2];
        p[2] = t;
    }
}

/* zlib takes uInt lengths: larger buffers go in chunks of this size. */
#define CLT_ZCHUNK ((size_t)1 << 30)

/* crc32 continued over n bytes of any size (crc 0 starts a new one). */
uint32_t clt_crc32(uint32_t crc, const uint8_t *p, size_t n);

#endif
