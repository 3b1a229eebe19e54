#include "core/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "core/file_lock.h"

clt_status clt_atomic_open(clt_atomic_file *af, const char *path)
{
    memset(af, 0, sizeof *af);
    CLT_TRY(clt_atomic_target(path, af->path, NULL));
    clt_atomic_clean_stale(af->path);
    /* pid, handle address and clock make the name unique; O_EXCL and a
     * retry guard against the rare collision. The pid comes first: the
     * cleaning above reads it. */
    int fd = -1;
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        snprintf(af->tmp, sizeof af->tmp, "%s.tmp.%ld.%lx.%ld.%d", af->path, (long)getpid(),
                 (unsigned long)(uintptr_t)af, (long)ts.tv_nsec, attempt);
        fd = open(af->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        clt_status s = clt_fail(CLT_ERR_IO, "%s: cannot create a temporary file beside it: %s", path, strerror(errno));
        af->tmp[0] = 0;
        return s;
    }
    /* held while it is written: what proves to a cleaner that it is alive */
    (void)clt_file_lock_fd(fd);
    af->f = fdopen(fd, "wb");
    if (!af->f) {
        close(fd);
        unlink(af->tmp);
        return clt_fail(CLT_ERR_IO, "%s: %s", af->tmp, strerror(errno));
    }
    return CLT_OK;
}

clt_status clt_atomic_write(clt_atomic_file *af, const void *data, size_t n)
{
    if (n && fwrite(data, 1, n, af->f) != n)
        return clt_fail(CLT_ERR_IO, "%s: write failed: %s", af->path, strerror(errno));
    return CLT_OK;
}

clt_status clt_atomic_commit(clt_atomic_file *af)
{
    int bad = fflush(af->f) != 0;
    bad |= fsync(fileno(af->f)) != 0;
    int err = errno;
    bad |= fclose(af->f) != 0;
    af->f = NULL;
    if (bad) {
        unlink(af->tmp);
        return clt_fail(CLT_ERR_IO, "%s: write failed: %s", af->path, strerror(err));
    }
    /* the target may have been replaced since the open: never rename over
     * what is not a regular file */
    struct stat st;
    if (lstat(af->path, &st) == 0 && !S_ISREG(st.st_mode)) {
        unlink(af->tmp);
        af->tmp[0] = 0;
        return clt_fail(CLT_ERR_IO, "%s became %s while being written: not replaced", af->path,
                        clt_file_kind(st.st_mode));
    }
    if (rename(af->tmp, af->path) != 0) {
        err = errno;
        unlink(af->tmp);
        return clt_fail(CLT_ERR_IO, "%s: cannot rename temporary file into place: %s", af->path,
                        strerror(err));
    }
    af->tmp[0] = 0;
    return CLT_OK;
}

void clt_atomic_abort(clt_atomic_file *af)
{
    if (af->f) fclose(af->f);
    af->f = NULL;
    if (af->tmp[0]) unlink(af->tmp);
    af->tmp[0] = 0;
}

clt_status clt_write_file_atomic(const char *path, const void *data, size_t n)
{
    clt_atomic_file af;
    CLT_TRY(clt_atomic_open(&af, path));
    clt_status s = clt_atomic_write(&af, data, n);
    if (s == CLT_OK) return clt_atomic_commit(&af);
    clt_atomic_abort(&af);
    return s;
}

clt_status clt_read_file(const char *path, size_t max_bytes, unsigned char **data, size_t *n)
{
    *data = NULL;
    *n = 0;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; the type is
     * checked before any read, then reads block as usual. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return clt_fail(errno == ENOENT ? CLT_ERR_NOT_FOUND : CLT_ERR_IO, "%s: %s", path, strerror(errno));
    struct stat st;
    clt_status s = CLT_OK;
    if (fstat(fd, &st) != 0) s = clt_fail(CLT_ERR_IO, "%s: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode)) s = clt_fail(CLT_ERR_IO, "%s is %s, not a regular file", path, clt_file_kind(st.st_mode));
    else if ((uint64_t)st.st_size >= SIZE_MAX || (max_bytes && (uint64_t)st.st_size > max_bytes))
        s = clt_fail(CLT_ERR_FORMAT, "%s: file too large (%llu bytes; at most %zu)", path,
                     (unsigned long long)st.st_size, max_bytes ? max_bytes : SIZE_MAX - 1);
    if (s != CLT_OK) {
        close(fd);
        return s;
    }
    int flags = fcntl(fd, F_GETFL);
    FILE *f = flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0 ? NULL : fdopen(fd, "rb");
    if (!f) {
        s = clt_fail(CLT_ERR_IO, "%s: %s", path, strerror(errno));
        close(fd);
        return s;
    }
    size_t size = (size_t)st.st_size;
    unsigned char *buf = malloc(size + 1);
    if (!buf) {
        fclose(f);
        return clt_fail(CLT_ERR_NO_MEMORY, "%s: cannot allocate %zu bytes", path, size);
    }
    size_t got = fread(buf, 1, size, f);
    int rerr = ferror(f), more = !rerr && got == size && fgetc(f) != EOF;
    fclose(f);
    if (got != size || rerr || more) {
        free(buf);
        return more ? clt_fail(CLT_ERR_IO, "%s: file changed size while being read", path)
                    : clt_fail(CLT_ERR_IO, "%s: read failed (%zu of %zu bytes)", path, got, size);
    }
    buf[size] = 0;
    *data = buf;
    *n = size;
    return CLT_OK;
}

clt_status clt_mkdir_p(const char *path)
{
    char buf[4096];
    if (strlen(path) >= sizeof buf) return clt_fail(CLT_ERR_INVALID_ARG, "%s: path too long", path);
    strcpy(buf, path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return clt_fail(CLT_ERR_IO, "cannot create directory %s: %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
        return clt_fail(CLT_ERR_IO, "cannot create directory %s: %s", buf, strerror(errno));
    return CLT_OK;
}
