/* Internal side of the .npz reader and writer (public calls in cltrain.h):
 * in-memory reading (tests, fuzzing), lookups that do not touch the error
 * detail, and failing a writer from outside. A net's parameters to and from
 * .npz are nn/net_npz.h. */
#ifndef CLT_IO_NPZ_H
#define CLT_IO_NPZ_H

#include <stddef.h>
#include <stdint.h>

#include "cltrain.h"

/* Reads an archive from memory; `label` names it in error details (a path
 * or "<memory>"). The bytes are not kept. Same checks as clt_npz_read. */
clt_status clt_npz_read_memory(const uint8_t *data, size_t n, const char *label, clt_npz **out);

/* Said of each entry once its .npy header is read, before its data is
 * inflated (e->data and e->bytes are NULL, the rest is set; `path` is the
 * archive's path or label): CLT_OK reads the data; CLT_OK with *skip = 1
 * leaves it unread (the entry stays listed with NULL data and bytes, its
 * CRC unchecked); any other status refuses the file with the filter's
 * detail. How a caller that knows the shapes to expect bounds the memory a
 * hostile file can take. */
typedef clt_status (*clt_npz_filter)(void *ctx, const char *path, const clt_npz_entry *e, int *skip);
typedef struct clt_npz_filter_spec {
    clt_npz_filter fn; /* NULL: every entry is read */
    void *ctx;
} clt_npz_filter_spec;

/* clt_npz_read and clt_npz_read_memory with a filter (fn may be NULL). */
clt_status clt_npz_read_filtered(const char *path, clt_npz_filter fn, void *ctx, clt_npz **out);
clt_status clt_npz_read_memory_filtered(const uint8_t *data, size_t n, const char *label, clt_npz_filter fn,
                                        void *ctx, clt_npz **out);

/* A bare .npy file (numpy.save) as an archive of one entry named `name`,
 * with the same checks as an archive's entries. */
clt_status clt_npy_read(const char *path, const char *name, clt_npz **out);

/* The entry named `name` (without ".npy"), or NULL; sets no error detail.
 * The pointer lives as long as the archive. */
const clt_npz_entry *clt_npz_get(const clt_npz *npz, const char *name);
/* The path (or label) the archive was read from. */
const char *clt_npz_path(const clt_npz *npz);

/* "(2, 3)", "(5,)" or "()" into buf; returns buf. */
const char *clt_npz_shape_str(int ndim, const int64_t *shape, char *buf, size_t cap);

/* Marks the writer failed: the temporary file goes, the target stays as it
 * was, and later calls are refused. Returns s, for `return
 * clt_npz_writer_fail(w, s);` when a caller's own step fails mid-archive. */
clt_status clt_npz_writer_fail(clt_npz_writer *w, clt_status s);

#endif
