/* Atomic file replacement: write to a temporary file beside the target,
 * flush and fsync it, then rename over the target. A crash at any point
 * leaves either the old file or the new one, never a torn one. */
#ifndef CLT_CORE_ATOMIC_FILE_H
#define CLT_CORE_ATOMIC_FILE_H

#include <stddef.h>
#include <stdio.h>

#include "cltrain.h"

typedef struct clt_atomic_file {
    FILE *f;
    char path[4096];
    char tmp[4096 + 64];
} clt_atomic_file;

clt_status clt_atomic_open(clt_atomic_file *af, const char *path);
/* Writes n bytes; a failure sets the detail naming the file. */
clt_status clt_atomic_write(clt_atomic_file *af, const void *data, size_t n);
/* Flushes, syncs and renames into place; on failure removes the temporary. */
clt_status clt_atomic_commit(clt_atomic_file *af);
/* Drops the temporary file (after a failure). Safe after commit. */
void clt_atomic_abort(clt_atomic_file *af);
/* Whole-file helper. */
clt_status clt_write_file_atomic(const char *path, const void *data, size_t n);
/* Reads a whole file into a malloc'd buffer (NUL-terminated beyond *n). */
clt_status clt_read_file(const char *path, unsigned char **data, size_t *n);
/* mkdir -p */
clt_status clt_mkdir_p(const char *path);

#endif
