/* TensorBoard event files with protobuf-c (io/tfevents.h). */
#include "io/tfevents.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/file_lock.h"
#include "io/tfrecord.h"
#include "proto/tfevent.pb-c.h"

/* The version TensorBoard's own writers put first in a file. */
#define FILE_VERSION "brain.Event:2"

struct clt_tfevents {
    int fd;
    int64_t size;    /* bytes in the file: every write ends a record */
    int64_t cut_events, torn_bytes; /* what the open cut off */
    clt_file_lock lock;
    char path[CLT_PATH_CAP];
};

/* What the events of one file say, up to `cut`, where the file is
 * continued: before the first event past keep_steps or a torn record. */
typedef struct scan_result {
    size_t cut;
    int64_t cut_events, torn_bytes; /* past keep_steps; from the first bad record on */
    int64_t summaries, last_step;
} scan_result;

static double wall_time(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static clt_status write_event(clt_tfevents *w, const Tensorflow__Event *ev)
{
    size_t n = tensorflow__event__get_packed_size(ev);
    unsigned char *buf = malloc(n ? n : 1);
    if (!buf) return clt_fail(CLT_ERR_NO_MEMORY, "%s: no memory for an event of %zu bytes", w->path, n);
    tensorflow__event__pack(ev, buf);
    clt_status s = clt_tfrecord_write(w->fd, w->path, &w->size, buf, n);
    free(buf);
    return s;
}

static clt_status write_version(clt_tfevents *w)
{
    Tensorflow__Event ev = TENSORFLOW__EVENT__INIT;
    ev.wall_time = wall_time();
    ev.what_case = TENSORFLOW__EVENT__WHAT_FILE_VERSION;
    ev.file_version = FILE_VERSION;
    return write_event(w, &ev);
}

/* Walks the records of buf; keep_steps as clt_tfevents_open takes it. */
static clt_status scan_events(const char *path, const unsigned char *buf, size_t len, int64_t keep_steps,
                              scan_result *r)
{
    memset(r, 0, sizeof *r);
    size_t pos = 0;
    for (int64_t i = 0;; i++) {
        const unsigned char *data;
        size_t n, at = pos;
        clt_status s = clt_tfrecord_next(buf, len, &pos, &data, &n);
        if (s == CLT_ERR_NOT_FOUND) break;
        Tensorflow__Event *ev = s == CLT_OK ? tensorflow__event__unpack(NULL, n, data) : NULL;
        /* the first record says what the file is: another kind is not ours
         * to cut or extend */
        int versioned = ev && ev->what_case == TENSORFLOW__EVENT__WHAT_FILE_VERSION &&
                        !strncmp(ev->file_version, "brain.Event:", 12);
        if (i == 0 && !versioned) {
            char why[256];
            snprintf(why, sizeof why, "%s", s == CLT_OK ? "not a file_version event" : clt_last_error());
            tensorflow__event__free_unpacked(ev, NULL);
            return clt_fail(CLT_ERR_FORMAT, "%s is not a TensorBoard event file that cltrain can continue: its first "
                            "record is %s", path, why);
        }
        int summary = ev && ev->what_case == TENSORFLOW__EVENT__WHAT_SUMMARY;
        int64_t step = ev ? ev->step : 0;
        tensorflow__event__free_unpacked(ev, NULL);
        if (!ev) { /* torn or corrupt: nothing after it can be trusted to be whole */
            r->torn_bytes = (int64_t)(len - at);
            break;
        }
        /* from the first step this run makes again on, the rest goes */
        if (r->cut_events || (summary && keep_steps >= 0 && step > keep_steps)) {
            r->cut_events++;
            continue;
        }
        r->cut = pos;
        if (summary) r->summaries++, r->last_step = step;
    }
    return CLT_OK;
}

static clt_status scan_file(const char *path, int64_t keep_steps, scan_result *r)
{
    unsigned char *buf;
    size_t len;
    CLT_TRY(clt_read_file(path, 0, &buf, &len));
    clt_status s = scan_events(path, buf, len, keep_steps, r);
    free(buf);
    return s;
}

/* The event files of dir (TensorBoard's rule: "tfevents" in the name),
 * scanned; the newest name (TensorBoard reads them in name order) into
 * newest ("" if none). A new run refuses a directory with summaries. */
static clt_status survey(const char *dir, int64_t keep_steps, char *newest, scan_result *last)
{
    DIR *d = opendir(dir);
    if (!d) return clt_fail(CLT_ERR_IO, "%s: cannot read the directory: %s", dir, strerror(errno));
    newest[0] = 0;
    clt_status s = CLT_OK;
    char path[CLT_PATH_CAP];
    for (struct dirent *e; s == CLT_OK && (e = readdir(d));) {
        struct stat st;
        if (!strstr(e->d_name, "tfevents") ||
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path || stat(path, &st) != 0 ||
            !S_ISREG(st.st_mode))
            continue;
        scan_result r;
        if (keep_steps < 0 && (s = scan_file(path, -1, &r)) == CLT_OK && r.summaries)
            s = clt_fail(CLT_ERR_INVALID_ARG, "%s already holds the events of a run (%s, up to step %lld), and "
                         "TensorBoard draws the events of one directory as one run: give this run another directory, "
                         "or resume that run", dir, e->d_name, (long long)r.last_step);
        if (s == CLT_OK && strcmp(path, newest) > 0) snprintf(newest, CLT_PATH_CAP, "%s", path);
    }
    closedir(d);
    if (s == CLT_OK && newest[0]) s = scan_file(newest, keep_steps, last);
    return s;
}

/* A new file beginning with the version event; the directory synced so
 * that the file survives a crash along with its contents. */
static clt_status create_file(clt_tfevents *w, const char *dir)
{
    char host[256] = "localhost";
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = 0;
    for (char *c = host; *c; c++)
        if (*c == '/') *c = '_';
    if (snprintf(w->path, sizeof w->path, "%s/events.out.tfevents.%lld.%s.%ld", dir, (long long)time(NULL), host,
                 (long)getpid()) >= (int)sizeof w->path)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: path too long", dir);
    w->fd = open(w->path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (w->fd < 0) return clt_fail(CLT_ERR_IO, "%s: cannot create it: %s", w->path, strerror(errno));
    CLT_TRY(write_version(w));
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        (void)fsync(dfd); /* best effort: some file systems refuse it */
        close(dfd);
    }
    return CLT_OK;
}

/* Continues `path`, cut at r->cut. */
static clt_status continue_file(clt_tfevents *w, const char *path, const scan_result *r)
{
    snprintf(w->path, sizeof w->path, "%s", path);
    w->fd = open(w->path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (w->fd < 0) return clt_fail(CLT_ERR_IO, "%s: cannot append to it: %s", w->path, strerror(errno));
    struct stat st;
    if (fstat(w->fd, &st) != 0) return clt_fail(CLT_ERR_IO, "%s: %s", w->path, strerror(errno));
    w->size = (int64_t)r->cut;
    if ((int64_t)st.st_size != w->size && ftruncate(w->fd, (off_t)w->size) != 0)
        return clt_fail(CLT_ERR_IO, "%s: cannot cut it to its %lld bytes of complete events: %s", w->path,
                        (long long)w->size, strerror(errno));
    w->cut_events = r->cut_events, w->torn_bytes = r->torn_bytes;
    /* a file that died before its first record is whole again */
    if (w->size == 0) return write_version(w);
    return CLT_OK;
}

static clt_status open_in(clt_tfevents *w, const char *dir, int64_t keep_steps)
{
    struct stat st;
    CLT_TRY(clt_mkdir_p(dir));
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return clt_fail(CLT_ERR_IO, "%s is not a directory", dir);
    if (access(dir, W_OK) != 0)
        return clt_fail(CLT_ERR_IO, "%s: cannot write in the directory: %s", dir, strerror(errno));
    CLT_TRY(clt_file_lock_take(&w->lock, dir, "cltrain's TensorBoard writer"));
    char newest[CLT_PATH_CAP];
    scan_result r;
    CLT_TRY(survey(dir, keep_steps, newest, &r));
    return newest[0] ? continue_file(w, newest, &r) : create_file(w, dir);
}

clt_status clt_tfevents_open(const char *dir, int64_t keep_steps, clt_tfevents **out)
{
    *out = NULL;
    size_t len = dir ? strlen(dir) : 0;
    if (!len || len >= CLT_PATH_CAP - 64) return clt_fail(CLT_ERR_INVALID_ARG, "an event directory of %zu bytes", len);
    char trimmed[CLT_PATH_CAP];
    snprintf(trimmed, sizeof trimmed, "%s", dir);
    while (len > 1 && trimmed[len - 1] == '/') trimmed[--len] = 0; /* the lock sits beside the directory */
    clt_tfevents *w = calloc(1, sizeof *w);
    if (!w) return clt_fail(CLT_ERR_NO_MEMORY, "no memory for an event writer");
    w->fd = -1;
    w->lock.fd = -1;
    clt_status s = open_in(w, trimmed, keep_steps);
    if (s != CLT_OK) {
        clt_tfevents_close(w);
        return s;
    }
    *out = w;
    return CLT_OK;
}

const char *clt_tfevents_path(const clt_tfevents *w) { return w->path; }

void clt_tfevents_cut(const clt_tfevents *w, int64_t *events, int64_t *torn_bytes)
{
    *events = w->cut_events;
    *torn_bytes = w->torn_bytes;
}

clt_status clt_tfevents_add(clt_tfevents *w, int64_t step, int n, const char *const *tags, const float *values)
{
    if (n < 1) return clt_fail(CLT_ERR_INVALID_ARG, "an event of %d values", n);
    Tensorflow__Summary__Value *vals = calloc((size_t)n, sizeof *vals);
    Tensorflow__Summary__Value **ptrs = calloc((size_t)n, sizeof *ptrs);
    clt_status s = CLT_OK;
    if (!vals || !ptrs) s = clt_fail(CLT_ERR_NO_MEMORY, "no memory for an event of %d values", n);
    for (int i = 0; s == CLT_OK && i < n; i++) {
        tensorflow__summary__value__init(&vals[i]);
        vals[i].tag = (char *)tags[i];
        vals[i].value_case = TENSORFLOW__SUMMARY__VALUE__VALUE_SIMPLE_VALUE;
        vals[i].simple_value = values[i];
        ptrs[i] = &vals[i];
    }
    if (s == CLT_OK) {
        Tensorflow__Summary summary = TENSORFLOW__SUMMARY__INIT;
        summary.n_value = (size_t)n;
        summary.value = ptrs;
        Tensorflow__Event ev = TENSORFLOW__EVENT__INIT;
        ev.wall_time = wall_time();
        ev.step = step;
        ev.what_case = TENSORFLOW__EVENT__WHAT_SUMMARY;
        ev.summary = &summary;
        s = write_event(w, &ev);
    }
    free(vals);
    free(ptrs);
    return s;
}

clt_status clt_tfevents_sync(clt_tfevents *w)
{
    if (fsync(w->fd) != 0) return clt_fail(CLT_ERR_IO, "%s: sync failed: %s", w->path, strerror(errno));
    return CLT_OK;
}

void clt_tfevents_close(clt_tfevents *w)
{
    if (!w) return;
    if (w->fd >= 0) {
        (void)fsync(w->fd); /* a failure here was reported by the last sync the caller checked */
        close(w->fd);
    }
    clt_file_lock_drop(&w->lock);
    free(w);
}
