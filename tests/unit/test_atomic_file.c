/* The atomic writer follows links, refuses what is not a regular file,
 * cleans stale temporaries of dead writers only (proved by their locks);
 * the reader never blocks. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "core/atomic_file.h"
#include "core/file_lock.h"

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

static char *path_in(const char *dir, const char *name)
{
    static char buf[8][4096];
    static int next;
    char *p = buf[next++ % 8];
    snprintf(p, 4096, "%s/%s", dir, name);
    return p;
}

int main(void)
{
    char dir[] = "/tmp/clt_atomic_XXXXXX";
    if (!mkdtemp(dir)) return 1;
    char *real = path_in(dir, "real"), *link = path_in(dir, "link"), *fifo = path_in(dir, "fifo");
    CHECK_OK(clt_write_file_atomic(real, "old", 3));
    CHECK(symlink("real", link) == 0, "symlink");
    CHECK(mkfifo(fifo, 0600) == 0, "mkfifo");

    /* through a link: the file it points to changes, the link stays */
    CHECK_OK(clt_write_file_atomic(link, "new!", 4));
    struct stat st;
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode), "the link was replaced");
    unsigned char *data;
    size_t n;
    CHECK_OK(clt_read_file(real, 0, &data, &n));
    CHECK(n == 4 && memcmp(data, "new!", 4) == 0, "the target holds %zu bytes", n);
    free(data);

    /* a FIFO, a device, a directory, a link to a FIFO: refused, untouched */
    const char *bad[] = {fifo, "/dev/null", dir, path_in(dir, "tofifo")};
    CHECK(symlink("fifo", bad[3]) == 0, "symlink to fifo");
    for (int i = 0; i < 4; i++) {
        clt_status s = clt_write_file_atomic(bad[i], "x", 1);
        CHECK(s != CLT_OK && strstr(clt_last_error(), "not a regular file"), "%s: %s", bad[i], clt_last_error());
    }
    CHECK(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode), "the FIFO was replaced");
    CHECK(lstat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode), "/dev/null was replaced");
    CHECK(clt_write_file_atomic("", "x", 1) != CLT_OK && strstr(clt_last_error(), "empty"), "empty path");
    CHECK(clt_write_file_atomic(path_in(dir, "no/x"), "x", 1) != CLT_OK && strstr(clt_last_error(), "does not exist"),
          "missing directory: %s", clt_last_error());

    /* reading a FIFO fails at once instead of waiting for a writer */
    CHECK(clt_read_file(fifo, 0, &data, &n) != CLT_OK && strstr(clt_last_error(), "FIFO"), "read FIFO: %s",
          clt_last_error());

    /* A dead writer's temporary (unlocked, untouched for a minute) goes on
     * the next save. A live one stays, whatever its PID: one whose PID
     * does not run here (a writer in another PID namespace or on another
     * machine sharing the disk) holds its lock; so does a fresh one not
     * yet locked, and files not of our naming. */
    char *dead = path_in(dir, "real.tmp.999999999.abc.12.0"), *fresh = path_in(dir, "real.tmp.999999998.abc.12.0");
    char *elsewhere = path_in(dir, "real.tmp.999999997.abc.12.0"), *other = path_in(dir, "real.tmp.999999999.notours");
    for (char **p = (char *[]){dead, fresh, elsewhere, other, NULL}; *p; p++) close(open(*p, O_CREAT | O_WRONLY, 0644));
    struct timeval old[2] = {{time(NULL) - 2 * CLT_STALE_SECONDS, 0}, {time(NULL) - 2 * CLT_STALE_SECONDS, 0}};
    for (char **p = (char *[]){dead, elsewhere, other, NULL}; *p; p++) CHECK(utimes(*p, old) == 0, "utimes %s", *p);
    int ready[2], hold[2];
    if (pipe(ready) != 0 || pipe(hold) != 0) {
        perror("pipe");
        return 1;
    }
    pid_t writer = fork();
    if (writer < 0) {
        perror("fork");
        return 1;
    }
    if (writer == 0) { /* the other writer: holds the lock until the pipe closes */
        close(hold[1]);
        int fd = open(elsewhere, O_WRONLY);
        char c = fd >= 0 && clt_file_lock_fd(fd) == 0 ? 'y' : 'n';
        if (write(ready[1], &c, 1) != 1 || read(hold[0], &c, 1) < 0) _exit(1);
        _exit(0);
    }
    char locked = 0;
    CHECK(read(ready[0], &locked, 1) == 1 && locked == 'y', "the other writer could not lock its temporary");
    int before = count_entries(dir);
    CHECK_OK(clt_write_file_atomic(link, "again", 5));
    CHECK(access(dead, F_OK) != 0, "the dead writer's temporary stayed");
    CHECK(access(elsewhere, F_OK) == 0, "a live writer's temporary was removed (its PID does not run here)");
    CHECK(access(fresh, F_OK) == 0 && access(other, F_OK) == 0, "a temporary not to clean was removed");
    CHECK(count_entries(dir) == before - 1, "entries %d, before %d", count_entries(dir), before);
    close(hold[1]);
    waitpid(writer, NULL, 0);
    /* its writer gone, it is dead too */
    CHECK_OK(clt_write_file_atomic(link, "again", 5));
    CHECK(access(elsewhere, F_OK) != 0, "a dead writer's temporary stayed after its lock went");
    close(ready[0]), close(ready[1]), close(hold[0]);

    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.') unlink(path_in(dir, e->d_name));
    if (d) closedir(d);
    rmdir(dir);
    return test_result();
}
