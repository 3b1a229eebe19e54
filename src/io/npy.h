/* .npy, NumPy's array format (numpy.lib.format): the magic "\x93NUMPY", a
 * version byte pair (1.0, 2.0 or 3.0), the header length (2 bytes for 1.0, 4
 * for later versions), a Python dict literal
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces and ended by '\n', then the raw array data. */
#ifndef CLT_IO_NPY_H
#define CLT_IO_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "cltrain.h"

/* Room for a version 1.0 header of up to CLT_MAX_DIMS dimensions. */
#define CLT_NPY_HEADER_MAX 256

typedef struct clt_npy_info {
    char descr[16];    /* "<f4", "|u1", "<i8", "|S12" */
    int is_bytes;      /* 0: little-endian float32; 1: bytes ('|S<n>') or little-endian integers ('|u1' .. '<u8') */
    size_t itemsize;   /* 4 for float32, 1 for '|u1', 8 for '<i8', n for '|S<n>' */
    int ndim;          /* 0 (a scalar) .. CLT_MAX_DIMS */
    int64_t shape[CLT_MAX_DIMS];
    int64_t numel;     /* product of the shape; 1 for a scalar */
    size_t data_offset;/* where the data starts in the .npy bytes */
    size_t nbytes;     /* numel * itemsize, exactly the bytes after the header */
} clt_npy_info;

/* Parses and checks n bytes of .npy: magic, version, header length, the
 * header dict (exactly the keys descr, fortran_order and shape; descr
 * '<f4', a little-endian integer ('|u1', '|i1', '<i2' .. '<u8') or '|S<n>'; fortran_order False; at most CLT_MAX_DIMS
 * non-negative dimensions) and that the data after the header is exactly
 * the shape's size. On failure CLT_ERR_FORMAT with a detail that names the
 * problem only (the caller adds the file and entry). */
clt_status clt_npy_parse(const uint8_t *p, size_t n, clt_npy_info *info);

/* The same checks when only the first `avail` of the n bytes are at hand
 * (an entry not yet inflated): the header must lie within them; the data's
 * size is checked against n. Reads no byte past avail. */
clt_status clt_npy_parse_header(const uint8_t *p, size_t avail, size_t n, clt_npy_info *info);

/* Bytes to read before parsing a header: more than any header NumPy reads
 * (it refuses headers over 10000 bytes). */
#define CLT_NPY_PREFIX_MAX 16384

/* Writes the version 1.0 preamble and header for an array of `descr` ("<f4"
 * or "|u1") and shape into buf (CLT_NPY_HEADER_MAX bytes); returns its
 * length, a multiple of 64 as NumPy aligns it. ndim <= CLT_MAX_DIMS. */
size_t clt_npy_header(uint8_t *buf, const char *descr, int ndim, const int64_t *shape);

/* "(2, 3)", "(5,)" or "()" into buf; returns buf. */
const char *clt_npy_shape_str(int ndim, const int64_t *shape, char *buf, size_t cap);

#endif
