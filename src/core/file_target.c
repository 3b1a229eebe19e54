/* What an atomic write replaces: the target behind symbolic links, checked
 * to be a regular file; and the cleaning of temporaries left by killed
 * writers. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/file_lock.h"

const char *clt_file_kind(unsigned mode)
{
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISLNK(mode)) return "a symbolic link";
    return "not a regular file";
}

const char *clt_path_split(const char *path, char *dir)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        strcpy(dir, ".");
        return path;
    }
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    memcpy(dir, path, n);
    dir[n] = 0;
    return slash + 1;
}

clt_status clt_atomic_target(const char *path, char *out, int *exists)
{
    if (!path || !path[0]) return clt_fail(CLT_ERR_INVALID_ARG, "empty output path");
    if (strlen(path) >= CLT_PATH_CAP) return clt_fail(CLT_ERR_INVALID_ARG, "%.80s...: path too long", path);
    char cur[CLT_PATH_CAP], dir[CLT_PATH_CAP], link[CLT_PATH_CAP];
    strcpy(cur, path);
    for (int hops = 0;; hops++) {
        struct stat st;
        if (lstat(cur, &st) != 0) {
            if (errno != ENOENT) return clt_fail(CLT_ERR_IO, "%s: %s", path, strerror(errno));
            const char *base = clt_path_split(cur, dir);
            if (!base[0]) return clt_fail(CLT_ERR_INVALID_ARG, "%s: names a directory, not a file", path);
            if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
                return clt_fail(CLT_ERR_IO, "%s: directory %s does not exist", path, dir);
            if (exists) *exists = 0;
            break;
        }
        if (S_ISLNK(st.st_mode)) {
            if (hops == 40) return clt_fail(CLT_ERR_IO, "%s: too many levels of symbolic links", path);
            ssize_t n = readlink(cur, link, sizeof link - 1);
            if (n < 0) return clt_fail(CLT_ERR_IO, "%s: %s", cur, strerror(errno));
            link[n] = 0;
            clt_path_split(cur, dir);
            /* a relative link is relative to the link's own directory */
            if (link[0] != '/' && snprintf(cur, sizeof cur, "%s/%s", dir, link) >= (int)sizeof cur)
                return clt_fail(CLT_ERR_INVALID_ARG, "%s: path too long", path);
            if (link[0] == '/') strcpy(cur, link);
            continue;
        }
        if (!S_ISREG(st.st_mode)) {
            if (strcmp(cur, path) == 0)
                return clt_fail(CLT_ERR_INVALID_ARG, "%s is %s, not a regular file: refusing to replace it", path,
                                clt_file_kind(st.st_mode));
            return clt_fail(CLT_ERR_INVALID_ARG, "%s leads to %s, which is %s, not a regular file: refusing to replace it",
                            path, cur, clt_file_kind(st.st_mode));
        }
        if (exists) *exists = 1;
        break;
    }
    strcpy(out, cur);
    return CLT_OK;
}

/* Whether name is base + ".tmp." + our suffix (PID.HEX.NSEC.ATTEMPT); the
 * PID goes to *pid. Nothing else is ever removed. */
static int our_temporary(const char *name, const char *base, long *pid)
{
    size_t bl = strlen(base);
    if (strncmp(name, base, bl) != 0 || strncmp(name + bl, ".tmp.", 5) != 0) return 0;
    const char *rest = name + bl + 5;
    unsigned long addr;
    long nsec;
    int attempt, used = -1;
    if (sscanf(rest, "%ld.%lx.%ld.%d%n", pid, &addr, &nsec, &attempt, &used) != 4 || used < 0) return 0;
    return rest[used] == 0 && *pid > 0 && rest[0] >= '0' && rest[0] <= '9';
}

/* Whether the temporary at path is provably dead: unlocked (its writer
 * locks it from the moment it exists: clt_atomic_open) and not written for
 * a minute (the lock is taken just after the file appears). A PID says
 * nothing here: the writer may run in another PID namespace (a
 * container) or on another machine sharing the disk. */
static int dead_temporary(const char *path)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return 0;
    struct stat st;
    int dead = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && time(NULL) - st.st_mtime >= CLT_STALE_SECONDS &&
               clt_file_locked_by_other(fd) == 0;
    close(fd);
    return dead;
}

void clt_atomic_clean_stale(const char *target)
{
    char dir[CLT_PATH_CAP], file[CLT_PATH_CAP + 300];
    const char *base = clt_path_split(target, dir);
    DIR *d = opendir(dir);
    if (!d) return; /* cleaning is a courtesy: the write goes on */
    for (struct dirent *e; (e = readdir(d));) {
        long pid;
        /* this process's own: its locks do not conflict with themselves
         * where only POSIX record locks exist */
        if (!our_temporary(e->d_name, base, &pid) || pid == (long)getpid()) continue;
        snprintf(file, sizeof file, "%s/%s", dir, e->d_name);
        if (dead_temporary(file)) unlink(file);
    }
    closedir(d);
}
