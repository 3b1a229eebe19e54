/* The atomic writer follows links, refuses what is not a regular file,
 * cleans stale temporaries of dead writers; the reader never blocks. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "core/atomic_file.h"

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

    /* a dead writer's temporary goes on the next save; a live one's, and
     * files not of our naming, stay */
    char *dead = path_in(dir, "real.tmp.999999999.abc.12.0"), *live = path_in(dir, "real.tmp.1.abc.12.0");
    char *other = path_in(dir, "real.tmp.999999999.notours");
    for (char **p = (char *[]){dead, live, other, NULL}; *p; p++) close(open(*p, O_CREAT | O_WRONLY, 0644));
    int before = count_entries(dir);
    CHECK_OK(clt_write_file_atomic(link, "again", 5));
    CHECK(access(dead, F_OK) != 0, "the dead writer's temporary stayed");
    CHECK(access(live, F_OK) == 0 && access(other, F_OK) == 0, "a temporary not to clean was removed");
    CHECK(count_entries(dir) == before - 1, "entries %d, before %d", count_entries(dir), before);

    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.') unlink(path_in(dir, e->d_name));
    if (d) closedir(d);
    rmdir(dir);
    return test_result();
}
