#include "outputs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "core/atomic_file.h"
#include "core/file_lock.h"

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

/* In a sticky directory (/tmp, a shared scratch folder) only the owner of
 * a file, the directory's owner or a privileged process may replace it:
 * the rename at the end of an atomic write would fail. 0, or 1 after a
 * message. */
static int replaceable(const named_file *f, const char *target)
{
    char d[CLT_PATH_CAP];
    clt_path_split(target, d);
    struct stat ds, ts;
    if (stat(d, &ds) != 0 || !(ds.st_mode & S_ISVTX) || lstat(target, &ts) != 0) return 0;
    uid_t me = geteuid();
    if (me == 0 || ts.st_uid == me || ds.st_uid == me) return 0;
    fprintf(stderr, "cltrain: %s %s: cannot replace it: it belongs to user %ld in the sticky directory %s, where only "
            "its owner may replace it; choose another path\n", f->opt, f->path, (long)ts.st_uid, d);
    return 1;
}

static int writable(const named_file *f)
{
    struct stat st;
    if (!strcmp(f->opt, "--log-csv") && stat(f->path, &st) == 0) { /* appended to: no rename */
        FILE *a = cli_open_append(f->opt, f->path);
        if (a) fclose(a);
        return a ? 0 : 1;
    }
    /* a temporary beside it, removed again: the run leaves no file behind
     * where it fails before it writes */
    clt_atomic_file af;
    if (clt_atomic_open(&af, f->path) != CLT_OK) {
        fprintf(stderr, "cltrain: %s %s: cannot write there (%s)\n", f->opt, f->path, clt_last_error());
        return 1;
    }
    int bad = replaceable(f, af.path);
    clt_atomic_abort(&af);
    return bad;
}

/* One run writes an output at a time: the locks are taken for the
 * run's life. 0, or 1 after a message naming the holder. */
static int take_locks(const named_file *all, int n, cli_outputs *held)
{
    for (int i = 0; i < n; i++) {
        if (!all[i].path || !all[i].output) continue;
        char target[CLT_PATH_CAP];
        if (clt_atomic_target(all[i].path, target, NULL) != CLT_OK ||
            clt_file_lock_take(&held->locks[held->n], target, "cltrain train") != CLT_OK) {
            fprintf(stderr, "cltrain: %s %s: %s\n", all[i].opt, all[i].path, clt_last_error());
            cli_release_outputs(held);
            return 1;
        }
        held->n++;
    }
    return 0;
}

void cli_release_outputs(cli_outputs *held)
{
    for (int i = 0; i < held->n; i++) clt_file_lock_drop(&held->locks[i]);
    held->n = 0;
}

int cli_check_outputs(const cli_options *o, cli_outputs *held)
{
    named_file all[] = {{.opt = "--save", .path = o->save, .output = 1},
                        {.opt = "--export-npz", .path = o->export_npz, .output = 1},
                        {.opt = "--plot", .path = o->plot, .output = 1},
                        {.opt = "--trace", .path = o->trace, .output = 1},
                        {.opt = "--log-csv", .path = o->log_csv, .output = 1},
                        {.opt = "--output", .path = o->output, .output = 1},
                        {.opt = "--onnx", .path = o->onnx, .output = 1},
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
    held->n = 0;
    for (int i = 0; i < N; i++)
        if (all[i].path && all[i].output && writable(&all[i])) return 1;
    return take_locks(all, N, held);
}

/* Bytes of an .npz of the net's arrays, `copies` of each (parameters, and
 * the optimizer's state in a checkpoint), with room for the zip and .npy
 * headers and the text entries. */
static double npz_bytes(const clt_net *net, int copies)
{
    double bytes = 4096;
    for (int i = 0; i < clt_net_param_count(net); i++) {
        const char *name;
        int ndim;
        int64_t shape[CLT_MAX_DIMS], numel = 1;
        if (clt_net_param_info(net, i, &name, &ndim, shape) != CLT_OK) continue;
        for (int d = 0; d < ndim; d++) numel *= shape[d];
        bytes += (double)copies * (4.0 * (double)numel + 512);
    }
    return bytes;
}

static int room_for(const char *opt, const char *path, double need)
{
    char target[CLT_PATH_CAP], dir[CLT_PATH_CAP];
    if (clt_atomic_target(path, target, NULL) != CLT_OK) return 0; /* reported where it is written */
    clt_path_split(target, dir);
    struct rlimit fsize;
    if (getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY && need > (double)fsize.rlim_cur) {
        fprintf(stderr, "cltrain: %s %s: it needs about %.1f MB, and this process may write files of at most %.1f MB "
                "(ulimit -f)\n", opt, path, need / 1e6, (double)fsize.rlim_cur / 1e6);
        return 1;
    }
    struct statvfs vs;
    if (statvfs(dir, &vs) != 0) return 0;
    double free_bytes = (double)vs.f_bavail * (double)vs.f_frsize;
    if (free_bytes >= need) return 0;
    fprintf(stderr, "cltrain: %s %s: it needs about %.1f MB, and its file system has %.1f MB free\n", opt, path,
            need / 1e6, free_bytes / 1e6);
    return 1;
}

int cli_check_space(const cli_options *o, const clt_net *net, int optimizer_slots)
{
    if (o->export_npz && room_for("--export-npz", o->export_npz, npz_bytes(net, 1))) return 1;
    if (o->save && room_for("--save", o->save, npz_bytes(net, 1 + optimizer_slots))) return 1;
    return 0;
}
