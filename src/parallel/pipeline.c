/* The gradient pipeline of one device: bucket reads on a transfer queue of
 * their own, each waiting on a marker of the compute queue placed right
 * after the kernels that produce the bucket; the worker waits for its reads
 * in bucket order and counts each arrived as it completes, so the host sums
 * it while the device still runs backward of earlier layers. Write-backs run
 * on the transfer queue too; the optimizer step waits for them. Where the
 * net's gradients are shared with the host (runtime/svm.h) there is nothing
 * to copy: a bucket's "read" is of one float, to learn when its kernels
 * are done, the sum is written into the gradients, and the optimizer,
 * enqueued after the sum, reads it there; where the replicas read each
 * other's gradients (peers.c) the host sums nothing and the optimizer,
 * enqueued once every device's read arrived, sums them. Tracing hooks in
 * here too (clt_trainer_trace). */
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "parallel/reduction.h"
#include "runtime/queue.h"

clt_status clt_pipeline_use_queue(clt_worker *w, int separate)
{
    clt_queue_release(w->xfer);
    w->xfer = NULL;
    return clt_queue_open(w->dev, separate, "clCreateCommandQueue (transfer queue)", &w->xfer);
}

clt_status clt_pipeline_open(clt_worker *w)
{
    int n = w->t->n_buckets;
    /* A CPU device has no copy engine to overlap, and Intel's CPU runtime
     * runs a second queue only once the first is idle (measured: every
     * read after the whole backward): there the reads go in order on the
     * compute queue, right after their kernels, which still lets the host
     * sum a bucket during backward. */
    CLT_TRY(clt_pipeline_use_queue(w, clt_device_get_info(w->dev)->type != CLT_DEVICE_CPU));
    CLT_TRY(clt_calloc((void **)&w->events, (size_t)n, sizeof(cl_event), "events"));
    CLT_TRY(clt_calloc((void **)&w->writes, (size_t)n, sizeof(cl_event), "events"));
    CLT_TRY(clt_calloc((void **)&w->probe, (size_t)n, sizeof(float), "bucket probes"));
    return CLT_OK;
}

void clt_pipeline_close(clt_worker *w)
{
    clt_queue_release(w->xfer);
    w->xfer = NULL;
    free(w->events);
    free(w->writes);
    free(w->probe);
}

clt_status clt_pipeline_begin(clt_worker *w)
{
    w->step_t0 = clt_now();
    return clt_queue_marker(clt_device_queue(w->dev), &w->step_start, "clEnqueueMarkerWithWaitList");
}

/* The worker waits for its own reads, in bucket order, rather than an
 * event callback counting them: NVIDIA's runtime runs callbacks long
 * after the event (a LeNet step on an H100 measured far slower with them). */
clt_status clt_pipeline_await(clt_worker *w, int b)
{
    clt_trainer *t = w->t;
    cl_int err = clt_event_wait(w->events[b]);
    pthread_mutex_lock(&t->mu);
    if (err != CL_SUCCESS) {
        char msg[96];
        snprintf(msg, sizeof msg, "reading gradient bucket %d failed (OpenCL status %d)", b, (int)err);
        clt_trainer_fail_locked(t, w->slot, CLT_ERR_OPENCL, msg);
    } else
        t->arrived[b]++;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    return err == CL_SUCCESS ? CLT_OK : CLT_ERR_OPENCL;
}

void clt_pipeline_poll_backward(clt_worker *w)
{
    if (w->backward_ended || !w->backward_done) return;
    if (clt_event_ended(w->backward_done)) {
        w->backward_end = clt_now();
        w->backward_ended = 1;
    }
}

clt_status clt_pipeline_grads_ready(void *user, clt_net *net, int layer)
{
    clt_worker *w = user;
    clt_trainer *t = w->t;
    if (t->reduction == &clt_reduction_device) return clt_net_flush(net); /* nothing to read: keep the device fed */
    if (w->next_bucket >= t->n_buckets || t->buckets[w->next_bucket].min_layer < layer) return CLT_OK;
    cl_event produced;
    CLT_TRY(clt_queue_marker(clt_device_queue(w->dev), &produced, "clEnqueueMarkerWithWaitList"));
    clt_status s = CLT_OK;
    while (s == CLT_OK && w->next_bucket < t->n_buckets && t->buckets[w->next_bucket].min_layer >= layer) {
        int b = w->next_bucket;
        const clt_bucket *bk = &t->buckets[b];
        /* Shared gradients are read in place; the read of one float says
         * when the kernels are done. A marker would do on paper, but
         * Intel's CPU runtime completes markers late (on the two-vendor
         * pair far fewer buckets were summed during backward than so). */
        int shared = clt_net_grads_shared(net);
        clt_span span = shared ? (clt_span){bk->span.offset, 1} : bk->span;
        float *to = shared ? &w->probe[b] : w->staging + bk->span.offset;
        s = clt_net_read_on(net, w->xfer, produced, CLT_NET_GRADS, span, to, &w->events[b]);
        if (s != CLT_OK) s = clt_fail_context(s, "read gradient bucket %d", b);
        w->next_bucket++;
    }
    clt_event_release(produced);
    if (s == CLT_OK) s = clt_queue_flush(w->xfer, "clFlush (transfer queue)");
    if (s == CLT_OK) s = clt_net_flush(net); /* the marker must run for the reads to start */
    return s;
}

clt_status clt_pipeline_end_backward(clt_worker *w)
{
    CLT_TRY(clt_pipeline_grads_ready(w, w->net, -1)); /* buckets holding no layer's gradients */
    CLT_TRY(clt_queue_marker(clt_device_queue(w->dev), &w->backward_done, "clEnqueueMarkerWithWaitList"));
    return clt_net_flush(w->net);
}

void clt_pipeline_no_shard(clt_worker *w)
{
    clt_trainer *t = w->t;
    memset(w->staging, 0, t->flat * sizeof(float)); /* an empty shard adds nothing */
    pthread_mutex_lock(&t->mu);
    for (int b = 0; b < t->n_buckets; b++) t->arrived[b]++;
    w->backward_end = clt_now();
    w->backward_ended = 1;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

clt_status clt_pipeline_write_back(clt_worker *w, int b)
{
    /* Shared gradients hold the sum already; what reads it is enqueued after. */
    if (clt_net_grads_shared(w->net)) return CLT_OK;
    const clt_bucket *bk = &w->t->buckets[b];
    clt_status s = clt_net_write_on(w->net, w->xfer, NULL, CLT_NET_GRADS, bk->span, w->staging + bk->span.offset,
                                    &w->writes[b]);
    if (s != CLT_OK) return clt_fail_context(s, "write reduced gradients");
    return clt_queue_flush(w->xfer, "clFlush (transfer queue)");
}

clt_status clt_pipeline_mark(void *user, int layer, int pass)
{
    clt_worker *w = user;
    return clt_trace_mark(&w->trace, clt_device_queue(w->dev), layer, pass);
}

clt_status clt_pipeline_before_update(clt_worker *w, int b)
{
    cl_uint n = b < 0 ? (cl_uint)w->t->n_buckets : 1;
    if (!clt_net_grads_shared(w->net))
        CLT_TRY(clt_queue_barrier(clt_device_queue(w->dev), n, b < 0 ? w->writes : &w->writes[b],
                                  "clEnqueueBarrierWithWaitList (reduced gradients)"));
    /* the trace's optimizer span starts once the (first) write-back landed */
    return w->tracing && b <= 0 ? clt_pipeline_mark(w, -1, 2) : CLT_OK;
}

/* Device time of event e (profiling, seconds) and the part of it before
 * device time `until` (ns; 0: none). */
static double event_seconds(cl_event e, cl_ulong until, double *before)
{
    cl_ulong a = clt_event_time(e, CL_PROFILING_COMMAND_START), b = clt_event_time(e, CL_PROFILING_COMMAND_END);
    if (!a || !b || b < a) return 0;
    cl_ulong cut = until < b ? until : b;
    if (cut > a) *before += (double)(cut - a) * 1e-9;
    return (double)(b - a) * 1e-9;
}

void clt_pipeline_settle(clt_worker *w)
{
    clt_trainer *t = w->t;
    if (w->tracing && w->trace.n_marks && clt_pipeline_mark(w, -2, 2) != CLT_OK) w->trace.dropped++;
    clt_queue_drain(clt_device_queue(w->dev));
    clt_queue_drain(w->xfer);
    cl_ulong bend = w->backward_done ? clt_event_time(w->backward_done, CL_PROFILING_COMMAND_END) : 0;
    /* QUEUED: the device clock's reading when the marker was enqueued,
     * which is when step_t0 was taken (it may start later) */
    cl_ulong start = w->step_start ? clt_event_time(w->step_start, CL_PROFILING_COMMAND_QUEUED) : 0;
    if (bend && start && bend >= start) { /* the device's clock from the step's start */
        w->backward_end = w->step_t0 + (double)(bend - start) * 1e-9;
        w->backward_ended = 1;
    } else
        clt_pipeline_poll_backward(w);
    double host_ref = w->backward_done && bend && w->backward_ended ? w->backward_end : -1;
    if (w->tracing) clt_trace_close_step(&w->trace, bend, host_ref);
    cl_event *lists[2] = {w->events, w->writes};
    for (int l = 0; l < 2; l++)
        for (int b = 0; b < t->n_buckets; b++) {
            if (!lists[l][b]) continue;
            if (w->tracing && host_ref >= 0)
                clt_trace_transfer(&w->trace, l ? CLT_TR_WRITE : CLT_TR_READ, b, lists[l][b], bend, host_ref);
            w->stats.transfer_s += event_seconds(lists[l][b], bend, &w->hidden_transfer_s);
            clt_event_release(lists[l][b]);
            lists[l][b] = NULL;
        }
    clt_event_release(w->backward_done);
    clt_event_release(w->step_start);
    w->backward_done = w->step_start = NULL;
}
