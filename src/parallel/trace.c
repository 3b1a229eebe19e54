/* Step traces: recording (one worker thread per clt_trace), the JSON, and
 * the trainer's calls that turn them on and write them. */
#include "parallel/trace.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/atomic_file.h"
#include "core/error.h"
#include "parallel/trainer.h"
#include "runtime/queue.h"

void clt_trace_add(clt_trace *tr, clt_trace_kind kind, int index, double ts, double dur)
{
    if (tr->n == tr->cap) {
        int cap = tr->cap ? 2 * tr->cap : 1024;
        clt_trace_event *ev = cap <= CLT_TRACE_CAP ? realloc(tr->ev, (size_t)cap * sizeof *ev) : NULL;
        if (!ev) {
            tr->dropped++;
            return;
        }
        tr->ev = ev;
        tr->cap = cap;
    }
    tr->ev[tr->n++] = (clt_trace_event){kind, index, ts, dur < 0 ? 0 : dur};
}

static int grow_marks(clt_trace *tr)
{
    if (tr->n_marks < tr->cap_marks) return 1;
    int cap = tr->cap_marks ? 2 * tr->cap_marks : 64;
    cl_event *m = realloc(tr->marks, (size_t)cap * sizeof *m);
    if (m) tr->marks = m;
    int *l = m ? realloc(tr->mark_layer, (size_t)cap * sizeof *l) : NULL;
    if (l) tr->mark_layer = l;
    int *p = l ? realloc(tr->mark_pass, (size_t)cap * sizeof *p) : NULL;
    if (p) tr->mark_pass = p;
    if (!p) return 0;
    tr->cap_marks = cap;
    return 1;
}

clt_status clt_trace_mark(clt_trace *tr, cl_command_queue q, int layer, int pass)
{
    if (!grow_marks(tr)) return clt_fail(CLT_ERR_NO_MEMORY, "trace markers");
    cl_event e;
    CLT_TRY(clt_queue_marker(q, &e, "clEnqueueMarkerWithWaitList (trace)"));
    tr->marks[tr->n_marks] = e;
    tr->mark_layer[tr->n_marks] = layer;
    tr->mark_pass[tr->n_marks] = pass;
    tr->n_marks++;
    return CLT_OK;
}

static double on_host(cl_ulong t, cl_ulong dev_ref, double host_ref)
{
    return host_ref + ((double)t - (double)dev_ref) * 1e-9;
}

void clt_trace_close_step(clt_trace *tr, cl_ulong dev_ref, double host_ref)
{
    cl_ulong prev = 0;
    for (int i = 0; i < tr->n_marks; i++) {
        cl_ulong end = clt_event_time(tr->marks[i], CL_PROFILING_COMMAND_END);
        if (host_ref >= 0 && i > 0 && end >= prev && tr->mark_layer[i] != -1) {
            clt_trace_kind k = tr->mark_layer[i] == -2 ? CLT_TR_OPTIMIZER
                               : tr->mark_pass[i] ? CLT_TR_BACKWARD
                                                  : CLT_TR_FORWARD;
            clt_trace_add(tr, k, tr->mark_layer[i], on_host(prev, dev_ref, host_ref), (double)(end - prev) * 1e-9);
        }
        if (end) prev = end;
        clt_event_release(tr->marks[i]);
    }
    tr->n_marks = 0;
}

void clt_trace_transfer(clt_trace *tr, clt_trace_kind kind, int bucket, cl_event e, cl_ulong dev_ref,
                        double host_ref)
{
    cl_ulong a = clt_event_time(e, CL_PROFILING_COMMAND_START), b = clt_event_time(e, CL_PROFILING_COMMAND_END);
    if (!a || !b || b < a) return;
    clt_trace_add(tr, kind, bucket, on_host(a, dev_ref, host_ref), (double)(b - a) * 1e-9);
}

void clt_trace_free(clt_trace *tr)
{
    for (int i = 0; i < tr->n_marks; i++) clt_event_release(tr->marks[i]);
    free(tr->ev);
    free(tr->marks);
    free(tr->mark_layer);
    free(tr->mark_pass);
    memset(tr, 0, sizeof *tr);
}

/* Track of an event kind within a device slot: compute queue, transfer
 * queue, host thread, the processes' sums. */
static int track_of(clt_trace_kind k)
{
    switch (k) {
    case CLT_TR_FORWARD: case CLT_TR_BACKWARD: case CLT_TR_OPTIMIZER: return 0;
    case CLT_TR_READ: case CLT_TR_WRITE: return 1;
    case CLT_TR_ALLREDUCE: return 3;
    default: return 2;
    }
}

static const char *const kind_names[] = {"forward", "backward", "optimizer", "read", "write", "sum", "write-back",
                                          "allreduce"};
static const char *const track_names[] = {"compute queue", "transfer queue", "host thread", "MPI processes"};

/* Names come from device names: keep only characters JSON takes as is. */
static void json_safe(char *out, size_t cap, const char *in)
{
    size_t j = 0;
    for (size_t i = 0; in[i] && j + 1 < cap; i++) out[j++] = (in[i] == '"' || in[i] == '\\' || in[i] < 32) ? '_' : in[i];
    out[j] = 0;
}

static clt_status put(clt_atomic_file *af, const char *fmt, ...) CLT_PRINTF(2, 3);
static clt_status put(clt_atomic_file *af, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return clt_atomic_write(af, buf, n < 0 ? 0 : (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

static clt_status write_all(clt_atomic_file *af, const clt_trace *const *tr, const char *const *names, int k)
{
    double t0 = -1;
    for (int d = 0; d < k; d++)
        for (int i = 0; i < tr[d]->n; i++)
            if (t0 < 0 || tr[d]->ev[i].ts < t0) t0 = tr[d]->ev[i].ts;
    CLT_TRY(put(af, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n"));
    const char *sep = "";
    for (int d = 0; d < k; d++) {
        char name[256];
        json_safe(name, sizeof name, names[d]);
        CLT_TRY(put(af, "%s{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, \"tid\": 0, \"args\": {\"name\": \"device %d: %s\"}}",
                    sep, d, d, name));
        sep = ",\n";
        int processes = 0; /* the MPI track only where it has events */
        for (int i = 0; i < tr[d]->n; i++) processes |= tr[d]->ev[i].kind == CLT_TR_ALLREDUCE;
        for (int q = 0; q < 3 + processes; q++)
            CLT_TRY(put(af, ",\n{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, \"tid\": %d, \"args\": {\"name\": \"%s\"}}",
                        d, q, track_names[q]));
        for (int i = 0; i < tr[d]->n; i++) {
            const clt_trace_event *e = &tr[d]->ev[i];
            const char *what = e->kind <= CLT_TR_OPTIMIZER ? "layer" : "bucket";
            CLT_TRY(put(af, ",\n{\"ph\": \"X\", \"name\": \"%s %s %d\", \"cat\": \"%s\", \"pid\": %d, \"tid\": %d, "
                            "\"ts\": %.3f, \"dur\": %.3f}",
                        kind_names[e->kind], what, e->index, kind_names[e->kind], d, track_of(e->kind),
                        (e->ts - t0) * 1e6, e->dur * 1e6));
        }
    }
    return put(af, "\n]}\n");
}

clt_status clt_trace_write(const char *path, const clt_trace *const *tr, const char *const *names, int k)
{
    clt_atomic_file af;
    CLT_TRY(clt_atomic_open(&af, path));
    clt_status s = write_all(&af, tr, names, k);
    if (s == CLT_OK) return clt_atomic_commit(&af);
    clt_atomic_abort(&af);
    return s;
}

clt_status clt_trainer_trace(clt_trainer *t, int on)
{
    if (!t) return clt_fail(CLT_ERR_INVALID_ARG, "clt_trainer_trace: trainer is NULL");
    for (int i = 0; i < t->k; i++) {
        clt_worker *w = &t->workers[i];
        w->tracing = on != 0;
        clt_net_set_layer_mark(w->net, on ? clt_pipeline_mark : NULL, w);
    }
    return CLT_OK;
}

clt_status clt_trainer_write_trace(const clt_trainer *t, const char *path)
{
    if (!t || !path) return clt_fail(CLT_ERR_INVALID_ARG, "clt_trainer_write_trace: NULL argument");
    const clt_trace *tr[CLT_MAX_DEVICES];
    const char *names[CLT_MAX_DEVICES];
    for (int i = 0; i < t->k; i++) {
        tr[i] = &t->workers[i].trace;
        names[i] = clt_device_get_info(t->workers[i].dev)->name;
    }
    return clt_trace_write(path, tr, names, t->k);
}
