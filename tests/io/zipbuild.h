/* Hand-made zip archives and .npy arrays for the .npz tests: every field
 * the reader checks can be set wrong on purpose, and the layouts other
 * writers use (zip64 extra fields as numpy.savez writes them, data
 * descriptors, zip64 end records, comments) can be produced. Independent of
 * the library's writer on purpose. */
#ifndef CLT_TESTS_ZIPBUILD_H
#define CLT_TESTS_ZIPBUILD_H

#include <stddef.h>
#include <stdint.h>

typedef struct zb_entry {
    const char *name;       /* as stored, with ".npy" */
    const uint8_t *data;    /* uncompressed bytes */
    size_t n;
    int method;             /* 0 stored, 8 deflate (compressed here); others store the bytes under that number */
    unsigned flags;         /* extra general-purpose flag bits (both headers) */
    int descriptor;         /* flag bit 3: zero CRC and sizes locally, a data descriptor after the data */
    int zip64_local;        /* a zip64 extra field with both sizes in the local header (numpy.savez does) */
    int zip64_central;      /* saturated sizes and offset in the central directory, values in its zip64 extra */
    uint32_t crc_xor;       /* xored into the CRC in both headers */
    int64_t usize_delta;    /* added to the declared uncompressed size in both headers */
    int64_t csize_delta_cd; /* added to the compressed size in the central directory only */
    int64_t lho_delta;      /* added to the local header offset in the central directory */
    const char *local_name; /* name in the local header (NULL: name) */
    size_t trailing;        /* garbage bytes after the compressed data, counted in its size */
    uint64_t zeros;         /* deflate only: zero bytes after data, never held uncompressed (zip bombs) */
} zb_entry;

typedef struct zb_options {
    int zip64_eocd;          /* zip64 end record and locator, saturated end record */
    const char *comment;     /* archive comment (NULL: none) */
    int comment_len_delta;   /* added to the declared comment length */
    int64_t count_delta;     /* added to both entry counts of the end record */
    int64_t cd_offset_delta; /* added to the central directory offset in the end record */
    unsigned disk;           /* "number of this disk" in the end record */
} zb_options;

/* The archive in a malloc'd buffer of *size bytes; opt may be NULL. */
uint8_t *zb_build(const zb_entry *entries, int n, const zb_options *opt, size_t *size);

/* A .npy file: preamble of `version` (1, 2 or 3), the header text `dict`
 * padded with spaces and '\n' to a multiple of 64 (exactly as given when
 * raw is 1), then n data bytes. malloc'd. */
uint8_t *zb_npy(int version, const char *dict, int raw, const void *data, size_t n, size_t *size);

/* A '<f4' .npy of the given shape (numel floats from data). */
uint8_t *zb_npy_f32(int ndim, const int64_t *shape, const float *data, size_t *size);

/* Writes a buffer to a file; exits on failure. */
void zb_write_file(const char *path, const void *data, size_t n);

#endif
