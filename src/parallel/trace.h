/* A step trace for Chrome's trace-event format (Perfetto, chrome://tracing):
 * per device a compute-queue track (layers by pass, from profiling markers)
 * and a transfer-queue track (bucket reads and write-backs), per worker a
 * host track (bucket sums, write-backs), under MPI a track of the
 * processes' sums (from start to completion seen); device times mapped onto the host
 * clock through the marker that ends backward. */
#ifndef CLT_PARALLEL_TRACE_H
#define CLT_PARALLEL_TRACE_H

#include "core/error.h"
#include "runtime/cl.h"

typedef enum { CLT_TR_FORWARD, CLT_TR_BACKWARD, CLT_TR_OPTIMIZER, CLT_TR_READ, CLT_TR_WRITE, CLT_TR_SUM,
               CLT_TR_WRITE_BACK, CLT_TR_ALLREDUCE } clt_trace_kind;

typedef struct clt_trace_event {
    clt_trace_kind kind;
    int index;        /* layer or bucket */
    double ts, dur;   /* host clock, seconds */
} clt_trace_event;

/* One worker's events (written by its thread only) and its step's pending
 * device markers. */
typedef struct clt_trace {
    clt_trace_event *ev;
    int n, cap;
    int dropped;      /* events beyond CLT_TRACE_CAP */
    cl_event *marks;  /* this step's compute-queue markers, after layers */
    int *mark_layer;  /* layer, or -1 (step begin), -2 (optimizer end) */
    int *mark_pass;
    int n_marks, cap_marks;
} clt_trace;

#define CLT_TRACE_CAP (1 << 20)

/* Adds one event (silently counted as dropped once full or out of memory). */
void clt_trace_add(clt_trace *tr, clt_trace_kind kind, int index, double ts, double dur);
/* Enqueues a profiling marker on queue q after layer `layer` of `pass`. */
clt_status clt_trace_mark(clt_trace *tr, cl_command_queue q, int layer, int pass);
/* Turns the step's markers into compute-queue events, with device time
 * `dev_ref` (ns) equal to host time `host_ref` (s; < 0: unknown, the
 * markers are only released). */
void clt_trace_close_step(clt_trace *tr, cl_ulong dev_ref, double host_ref);
/* A transfer event from its profiling times. */
void clt_trace_transfer(clt_trace *tr, clt_trace_kind kind, int bucket, cl_event e, cl_ulong dev_ref,
                        double host_ref);
void clt_trace_free(clt_trace *tr);

/* Writes k workers' traces as one JSON document, atomically. names[i]
 * names device slot i's tracks. */
clt_status clt_trace_write(const char *path, const clt_trace *const *tr, const char *const *names, int k);

#endif
