/* How a step turns every device's gradients into one optimizer update:
 * one strategy per mode, each in a file of its own, chosen by
 * clt_reduction_choose when the trainer is created and again when
 * clt_trainer_set_reduce replaces the host sum. The worker runs a
 * strategy's stages in order (worker.c, run_step): begin, then bucket for
 * every gradient bucket once every device's copy of it reached the host,
 * then finish, which ends with the optimizer update. */
#ifndef CLT_PARALLEL_REDUCTION_H
#define CLT_PARALLEL_REDUCTION_H

#include "parallel/trainer.h"

struct clt_reduction {
    const char *name;
    clt_status (*begin)(clt_worker *w);         /* NULL: nothing before the buckets */
    clt_status (*bucket)(clt_worker *w, int b); /* NULL: the gradients never leave the device */
    clt_status (*finish)(clt_worker *w);        /* NULL: every bucket is updated already */
};

/* One device alone, the default sum, no clipping: the gradients stay on
 * the device (reduce_device.c). */
extern const clt_reduction clt_reduction_device;
/* The host sums each bucket in slices, one per worker thread, straight
 * into every device's staging; each bucket is written back and updated as
 * soon as it is summed (reduce_host.c). */
extern const clt_reduction clt_reduction_host;
/* As host, with the caller's sum (clt_trainer_set_reduce) into the
 * trainer's sum buffer (reduce_host.c). */
extern const clt_reduction clt_reduction_hook;
/* Replicas that update each other: no host sum (peers.c). */
extern const clt_reduction clt_reduction_peers;
/* The host sum, then the global norm's clipping factor applied on the
 * way back, and one update of every parameter (reduce_clip.c). */
extern const clt_reduction clt_reduction_clip;
/* The host sum, then the sum over the MPI processes bucket by bucket,
 * clipped if asked, and one update of every parameter (reduce_mpi.c). */
extern const clt_reduction clt_reduction_mpi;

const clt_reduction *clt_reduction_choose(const clt_trainer *t);

/* Shared stages (reduce_host.c): 1 / the batch size, which scales every sum. */
float clt_reduction_scale(const clt_trainer *t);
/* This thread's slice of bucket b summed (by the trainer's sum function
 * into t->sum, or with into_staging the default sum into every device's
 * staging), then waits until every slice is. */
clt_status clt_reduction_sum_slice(clt_worker *w, int b, int into_staging);
/* Bucket b of t->sum, times factor, through this device's staging back to it. */
clt_status clt_reduction_write_sum(clt_worker *w, int b, float factor);
/* Bucket b of this device's staging back to it. */
clt_status clt_reduction_write_staged(clt_worker *w, int b);
/* The optimizer update of bucket b (b < 0: of every parameter) once its
 * write-back landed. */
clt_status clt_reduction_update(clt_worker *w, int b);
/* Every bucket of t->sum back to the device, scaled to the clipping
 * norm (reduce_clip.c). */
clt_status clt_reduction_write_clipped(clt_worker *w);
/* Worker 0 alone calls MPI: progresses the processes' sums (with `wait`,
 * waits for the next one) and publishes how many leading buckets are in
 * (reduce_mpi.c). */
clt_status clt_reduction_mpi_progress(clt_worker *w, int wait);

#endif
