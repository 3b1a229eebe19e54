/* Test helpers: temporary directories and small IDX files, plain or gzip. */
#ifndef CLT_TESTS_IDX_WRITE_H
#define CLT_TESTS_IDX_WRITE_H

#include <stddef.h>
#include <stdint.h>

/* Creates a fresh directory under $TMPDIR (or /tmp); exits on failure. */
void tw_mkdtemp(char *out, size_t cap, const char *tag);
/* Removes a directory tree made by the tests. */
void tw_rmtree(const char *dir);
/* "dir/name" into out (static buffer reused by each call: copy it). */
const char *tw_path(const char *dir, const char *name);
/* Writes bytes as they are, or gzip-compressed at `level` (0..9). Exit on failure. */
void tw_write_raw(const char *path, const void *data, size_t n);
void tw_write_gz(const char *path, const void *data, size_t n, int level);
/* gzip-compresses into a malloc'd buffer. */
uint8_t *tw_gzip(const void *data, size_t n, int level, size_t *out_n);
/* An IDX file in memory: header (type code, dims) then data; malloc'd. */
uint8_t *tw_idx(int type, int ndim, const uint32_t *dims, const uint8_t *data, size_t data_n,
                size_t *out_n);
/* Writes an IDX unsigned-byte file; gz selects compression. */
void tw_write_idx(const char *path, int gz, int ndim, const uint32_t *dims, const uint8_t *data);
/* Writes the four standard files into dir: n_train and n_test images of
 * rows x cols where image i has every pixel equal to tw_pixel(i, p) and
 * label i % 10 (test labels (i + 3) % 10). */
void tw_write_dataset(const char *dir, int gz, int n_train, int n_test, int rows, int cols);
static inline uint8_t tw_pixel(long i, long p) { return (uint8_t)((i * 7 + p * 13) & 255); }

#endif
