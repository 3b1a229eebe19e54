#define _GNU_SOURCE /* F_OFD_SETLK */
#include "core/file_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"

#ifdef F_OFD_SETLK
#define LOCK_SET F_OFD_SETLK
#define LOCK_GET F_OFD_GETLK
#else
#define LOCK_SET F_SETLK
#define LOCK_GET F_GETLK
#endif

int clt_file_lock_fd(int fd)
{
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    return fcntl(fd, LOCK_SET, &fl) == 0 ? 0 : -1;
}

int clt_file_locked_by_other(int fd)
{
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    if (fcntl(fd, LOCK_GET, &fl) != 0) return -1;
    return fl.l_type != F_UNLCK;
}

/* ".NAME.lock" beside target. */
static clt_status lock_path(const char *target, char *out, size_t cap)
{
    const char *slash = strrchr(target, '/');
    int dir = slash ? (int)(slash - target + 1) : 0;
    if (snprintf(out, cap, "%.*s.%s.lock", dir, target, slash ? slash + 1 : target) >= (int)cap)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: path too long", target);
    return CLT_OK;
}

static clt_status held_by_other(const char *target, int fd)
{
    char who[256];
    ssize_t n = pread(fd, who, sizeof who - 1, 0);
    who[n > 0 ? n : 0] = 0;
    char *nl = strchr(who, '\n');
    if (nl) *nl = 0;
    return clt_fail(CLT_ERR_IO, "%s is being written by another run (%s): give this run another path, or stop that "
                    "one first", target, who[0] ? who : "its lock holds no name yet");
}

clt_status clt_file_lock_take(clt_file_lock *l, const char *target, const char *who)
{
    l->fd = -1;
    CLT_TRY(lock_path(target, l->path, sizeof l->path));
    for (int attempt = 0; attempt < 20; attempt++) {
        int created = 1, fd = open(l->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 && errno == EEXIST) created = 0, fd = open(l->path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && (errno == EACCES || errno == EPERM || errno == EROFS)) {
            /* a directory this process cannot write in, or another user's
             * lock file left in a sticky one: it can only be read; held, it
             * names its holder, else nothing writes there now */
            int ro = open(l->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
            clt_status s = ro >= 0 && clt_file_locked_by_other(ro) == 1 ? held_by_other(target, ro) : CLT_OK;
            if (ro >= 0) close(ro);
            return s;
        }
        if (fd < 0) return clt_fail(CLT_ERR_IO, "%s: cannot create its lock %s: %s", target, l->path, strerror(errno));
        if (clt_file_lock_fd(fd) != 0) {
            int err = errno;
            clt_status s = err == EAGAIN || err == EACCES ? held_by_other(target, fd) : CLT_OK;
            /* no record locks here (ENOLCK, EINVAL): nothing to prove, and
             * a file another run made is not this one's to remove */
            if (s == CLT_OK && created) unlink(l->path);
            close(fd);
            return s;
        }
        /* the file may have been removed by its last holder, and another
         * created since: the lock must be on the file the path names */
        struct stat a, b;
        if (fstat(fd, &a) != 0 || stat(l->path, &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
            close(fd);
            continue;
        }
        char host[128] = "", line[400], when[64] = "";
        gethostname(host, sizeof host - 1);
        time_t now = time(NULL);
        struct tm tm;
        if (gmtime_r(&now, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
        int len = snprintf(line, sizeof line, "%s, process %ld on host %s, since %s\n", who, (long)getpid(), host, when);
        if (ftruncate(fd, 0) != 0 || pwrite(fd, line, (size_t)len, 0) != len) {
            /* the lock holds even where its note cannot be written */
        }
        l->fd = fd;
        return CLT_OK;
    }
    return clt_fail(CLT_ERR_IO, "%s: its lock %s keeps being replaced", target, l->path);
}

void clt_file_lock_drop(clt_file_lock *l)
{
    if (l->fd < 0) return;
    unlink(l->path); /* while held: a taker that opened it sees the inode change */
    close(l->fd);
    l->fd = -1;
}
