/* Reading the zip container of an .npz (layout in zip.h). Every field is
 * untrusted: offsets and sizes are checked against the real size before
 * use, entries may not overlap, and the local headers must agree with the
 * central directory, which is authoritative. zip_read.c finds and reads the
 * directory and the local headers; zip_inflate.c takes out an entry's data;
 * npz_read.c makes arrays of the entries. */
#ifndef CLT_IO_ZIP_READ_H
#define CLT_IO_ZIP_READ_H

#include <stddef.h>
#include <stdint.h>

#include <zlib.h>

#include "core/error.h"

/* The archive's bytes (all of the file) and its name for error details. */
typedef struct clt_zip_reader {
    const uint8_t *p;
    size_t n;
    const char *label;
} clt_zip_reader;

/* Where the central directory is (from the end record). */
typedef struct clt_zip_dir {
    uint64_t count, cd_offset, cd_size;
    uint64_t cd_end; /* where the central directory must end */
} clt_zip_dir;

/* One entry's fields; `name` points into the reader's bytes. */
typedef struct clt_zip_entry {
    const uint8_t *name; /* as stored, not NUL-terminated */
    size_t name_len;
    uint16_t flags, method;
    uint32_t crc;
    uint64_t csize, usize, lho, data_start;
} clt_zip_entry;

/* Finds the end record (zip64 too) and checks where the directory lies. */
clt_status clt_zip_find_directory(const clt_zip_reader *r, clt_zip_dir *d);
/* Reads d->count central directory entries into `entries`, refusing
 * encryption, methods other than stored and deflate, and split archives. */
clt_status clt_zip_read_directory(const clt_zip_reader *r, const clt_zip_dir *d, clt_zip_entry *entries);
/* Checks the n entries' local headers against the directory, sets their
 * data_start, and refuses entries whose bytes overlap. */
clt_status clt_zip_read_locals(const clt_zip_reader *r, const clt_zip_dir *d, clt_zip_entry *entries, int n);
/* An entry's data, read in pieces (zip_inflate.c): open, read exactly the
 * bytes asked (never past the declared usize), finish once all usize bytes
 * are out (checks that the stream ends there and the CRC-32), close always
 * (also after a failure). A file can thus be refused on what its first
 * bytes declare before the rest is inflated. */
typedef struct clt_zip_stream {
    const clt_zip_reader *r;
    const clt_zip_entry *it;
    z_stream zs;
    int inflating, ended; /* deflate: zlib started; its stream end seen */
    const uint8_t *in;    /* next byte not yet given to zlib (stored: the data) */
    uint64_t in_left, out;
    uint32_t crc;         /* over the bytes out so far */
} clt_zip_stream;

clt_status clt_zip_stream_open(clt_zip_stream *s, const clt_zip_reader *r, const clt_zip_entry *it);
clt_status clt_zip_stream_read(clt_zip_stream *s, uint8_t *dst, size_t n);
clt_status clt_zip_stream_finish(clt_zip_stream *s);
void clt_zip_stream_close(clt_zip_stream *s);

/* A name from the file, safe to print: control bytes, quotes and
 * backslashes escaped, long names cut. Returns buf. */
const char *clt_zip_printable(const uint8_t *s, size_t n, char *buf, size_t cap);
/* Sets the detail "<file>: entry "<name>": <message>" and returns s. */
clt_status clt_zip_fail(const clt_zip_reader *r, const clt_zip_entry *it, clt_status s, const char *fmt, ...)
    CLT_PRINTF(4, 5);

#endif
