/* Atomic file replacement: write to a temporary file beside the target,
 * flush and fsync it, then rename over the target. A crash at any point
 * leaves either the old file or the new one, never a torn one.
 *
 * The target is what the path names after following symbolic links: the
 * file a link points to is replaced and the link stays. A target that
 * exists and is not a regular file (device, FIFO, socket, directory) is
 * refused, never replaced. Temporaries are named TARGET.tmp.PID.<unique>
 * and locked while written; opening a new one removes the ones of that
 * target that are provably dead (left by a killed process): unlocked and
 * untouched for CLT_STALE_SECONDS. */
#ifndef CLT_CORE_ATOMIC_FILE_H
#define CLT_CORE_ATOMIC_FILE_H

#include <stddef.h>
#include <stdio.h>

#include "cltrain.h"

#define CLT_PATH_CAP 4096
#define CLT_STALE_SECONDS 60

typedef struct clt_atomic_file {
    FILE *f;
    char path[CLT_PATH_CAP]; /* the target, links followed */
    char tmp[CLT_PATH_CAP + 64];
} clt_atomic_file;

/* The file an atomic write to `path` replaces, links followed (at most 40),
 * into out[CLT_PATH_CAP]; *exists (when not NULL) tells whether it exists. Refuses an empty
 * path, a target that is not a regular file, and a missing parent
 * directory, naming the path. */
clt_status clt_atomic_target(const char *path, char *out, int *exists);
clt_status clt_atomic_open(clt_atomic_file *af, const char *path);
/* Writes n bytes; a failure sets the detail naming the file. */
clt_status clt_atomic_write(clt_atomic_file *af, const void *data, size_t n);
/* Flushes, syncs and renames into place; on failure removes the temporary. */
clt_status clt_atomic_commit(clt_atomic_file *af);
/* Drops the temporary file (after a failure). Safe after commit. */
void clt_atomic_abort(clt_atomic_file *af);
/* Whole-file helper. */
clt_status clt_write_file_atomic(const char *path, const void *data, size_t n);
/* Reads a whole regular file into a malloc'd buffer (NUL-terminated beyond
 * *n). Anything else (FIFO, device, directory) is refused without blocking;
 * a file of more than max_bytes (0: no limit) is CLT_ERR_FORMAT "file too
 * large" before anything is allocated; a file that changes size while it is
 * read is CLT_ERR_IO. */
clt_status clt_read_file(const char *path, size_t max_bytes, unsigned char **data, size_t *n);
/* Splits path (shorter than CLT_PATH_CAP) into its directory, into
 * dir[CLT_PATH_CAP] ("." without a slash, "/" at the root), and returns its
 * last component. */
const char *clt_path_split(const char *path, char *dir);
/* mkdir -p */
clt_status clt_mkdir_p(const char *path);
/* "a FIFO", "a directory", ... for a st_mode that is not a regular file. */
const char *clt_file_kind(unsigned mode);
/* Removes the TARGET.tmp.PID.* files beside `target` that are provably
 * dead: no process holds their lock, and none wrote them for a minute. */
void clt_atomic_clean_stale(const char *target);

#endif
