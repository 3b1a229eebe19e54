#include "outputs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/atomic_file.h"

/* One file named on the command line, as the file system sees it. */
typedef struct named_file {
    const char *opt, *path;
    int output;
    char where[2 * CLT_PATH_CAP]; /* canonical: directory resolved, links followed */
    int exists;
    dev_t dev;
    ino_t ino;
} named_file;

FILE *cli_open_append(const char *opt, const char *path)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0644);
    struct stat st;
    const char *why = NULL;
    if (fd < 0) why = strerror(errno);
    else if (fstat(fd, &st) != 0) why = strerror(errno);
    else if (!S_ISREG(st.st_mode)) why = clt_file_kind(st.st_mode);
    if (!why) lseek(fd, 0, SEEK_END); /* so that ftell tells an empty file (a CSV header) */
    FILE *f = why ? NULL : fdopen(fd, "a");
    if (!f) {
        if (fd >= 0) close(fd);
        fprintf(stderr, "cltrain: %s %s: cannot append there (%s)\n", opt, path, why ? why : strerror(errno));
    }
    return f;
}

/* Fills f->where and the identity; for an output also checks the target. */
static int locate(named_file *f)
{
    char target[CLT_PATH_CAP], dir[PATH_MAX];
    if (f->output) {
        if (clt_atomic_target(f->path, target, &f->exists) != CLT_OK) {
            fprintf(stderr, "cltrain: %s: %s\n", f->opt, clt_last_error()); /* the detail names the path */
            return 1;
        }
    } else if (snprintf(target, sizeof target, "%s", f->path) >= (int)sizeof target || !realpath(f->path, target)) {
        return 0; /* a missing input is reported where it is read */
    }
    struct stat st;
    f->exists = stat(target, &st) == 0;
    if (f->exists) f->dev = st.st_dev, f->ino = st.st_ino;
    char *slash = strrchr(target, '/');
    const char *base = slash ? slash + 1 : target;
    if (slash) *slash = 0;
    if (!realpath(slash ? (target[0] ? target : "/") : ".", dir)) snprintf(dir, sizeof dir, "%s", target);
    snprintf(f->where, sizeof f->where, "%s/%s", dir, base);
    return 0;
}

static int same(const named_file *a, const named_file *b)
{
    if (a->exists && b->exists) return a->dev == b->dev && a->ino == b->ino;
    return strcmp(a->where, b->where) == 0;
}

/* An output may replace an input of its own kind on purpose: --save over
 * the --resume checkpoint, --export-npz over the --init-from parameters. */
static int intended(const named_file *out, const named_file *in)
{
    return (!strcmp(out->opt, "--save") && !strcmp(in->opt, "--resume")) ||
           (!strcmp(out->opt, "--export-npz") && !strcmp(in->opt, "--init-from"));
}

static int writable(const named_file *f)
{
    if (!strcmp(f->opt, "--log-csv")) {
        FILE *a = cli_open_append(f->opt, f->path);
        if (a) fclose(a);
        return a ? 0 : 1;
    }
    clt_atomic_file af;
    if (clt_atomic_open(&af, f->path) != CLT_OK) {
        fprintf(stderr, "cltrain: %s %s: cannot write there (%s)\n", f->opt, f->path, clt_last_error());
        return 1;
    }
    clt_atomic_abort(&af);
    return 0;
}

int cli_check_outputs(const cli_options *o)
{
    named_file all[] = {{.opt = "--save", .path = o->save, .output = 1},
                        {.opt = "--export-npz", .path = o->export_npz, .output = 1},
                        {.opt = "--plot", .path = o->plot, .output = 1},
                        {.opt = "--trace", .path = o->trace, .output = 1},
                        {.opt = "--log-csv", .path = o->log_csv, .output = 1},
                        {.opt = "--resume", .path = o->resume},
                        {.opt = "--init-from", .path = o->init_from}};
    enum { N = sizeof all / sizeof all[0] };
    for (int i = 0; i < N; i++)
        if (all[i].path && locate(&all[i])) return 1;
    for (int i = 0; i < N; i++) {
        if (!all[i].path || !all[i].output) continue;
        for (int j = i + 1; j < N; j++) {
            if (!all[j].path || !same(&all[i], &all[j]) || (!all[j].output && intended(&all[i], &all[j]))) continue;
            fprintf(stderr, "cltrain: %s %s and %s %s are the same file (%s): %s\n", all[i].opt, all[i].path,
                    all[j].opt, all[j].path, all[i].where,
                    all[j].output ? "give each output its own path" : "the output would destroy the input");
            return 1;
        }
    }
    for (int i = 0; i < N; i++)
        if (all[i].path && all[i].output && writable(&all[i])) return 1;
    return 0;
}
