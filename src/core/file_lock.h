/* An advisory lock that names its holder, so that one process at a time
 * writes an output: the lock is a record lock on a file ".NAME.lock"
 * beside the output NAME, which holds the holder's process, host and start
 * time. The lock, not the file, is the truth: a process that dies drops
 * it (on a shared disk too, through the file system's lock service), and
 * the next taker reuses the file. Linux open file description locks where
 * there are, POSIX record locks elsewhere. */
#ifndef CLT_CORE_FILE_LOCK_H
#define CLT_CORE_FILE_LOCK_H

#include "cltrain.h"
#include "core/atomic_file.h"

typedef struct clt_file_lock {
    int fd; /* -1: not held */
    char path[CLT_PATH_CAP + 16];
} clt_file_lock;

/* Takes the lock of the output `target` (a path as an atomic write
 * resolves it: links followed) for `who` (e.g. "cltrain train"). Another
 * holder: CLT_ERR_IO naming it. A file system without record locks, or a
 * lock file this process may only read (a directory it cannot write in,
 * another user's left in a sticky one) that nobody holds: CLT_OK with
 * nothing held (l->fd -1), since nothing can be taken or proven there. */
clt_status clt_file_lock_take(clt_file_lock *l, const char *target, const char *who);
/* Removes the lock file and drops the lock; safe on a lock not held. */
void clt_file_lock_drop(clt_file_lock *l);

/* Whether some process holds a record lock on the open file fd (1), none
 * does (0), or it cannot be told (-1). */
int clt_file_locked_by_other(int fd);
/* Takes a write lock on fd, open for writing (0; -1 where locks fail). */
int clt_file_lock_fd(int fd);

#endif
