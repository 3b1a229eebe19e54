/* The data-parallel trainer's internals: one worker thread per device,
 * gradient buckets, the step protocol (see DESIGN.md, "The data-parallel
 * step"). */
#ifndef CLT_PARALLEL_TRAINER_H
#define CLT_PARALLEL_TRAINER_H

#include <pthread.h>

#include "cltrain_diag.h"
#include "core/clock.h"
#include "nn/net.h"
#include "parallel/cluster.h"
#include "parallel/trace.h"
#include "runtime/device.h"

typedef struct clt_trainer clt_trainer;

/* The auto split of n samples over `all` devices of measured rates (samples
 * per second, > 0), in whole units of 32 samples (the CPU kernels pad a
 * shard to 32 lanes) when the batch has 4 units a device: proportional
 * units, the rest to the fastest device. Units move from the shard the rates make slowest as
 * long as that shortens the predicted step (the slowest shard's time), and
 * the split in use, `prev` (NULL: none; used when it sums to n), stays
 * unless the new one predicts a step at least 5% shorter: measured rates
 * are noisy, and a split that flips between steps costs more than it wins.
 * Returns 0 and leaves sizes alone when n is too small for units. */
int clt_split_units(int n, int all, const float *rates, const int *prev, int *sizes);

/* Devices over all the MPI processes of a trainer (checked at create). */
#define CLT_MAX_ALL_DEVICES (CLT_MAX_DEVICES * 8)

/* The first gradient bucket's size cap (later ones: bucket_bytes). */
#define CLT_FIRST_BUCKET_BYTES ((size_t)1 << 20)

/* A contiguous range of the flat gradient buffer, complete once the
 * backward of layer `min_layer` (and every later layer) is enqueued. */
typedef struct clt_bucket {
    clt_span span;
    int min_layer;
} clt_bucket;

typedef struct clt_worker clt_worker;
typedef enum { CMD_NONE, CMD_STEP, CMD_EVAL, CMD_QUIT } clt_command;

struct clt_worker {
    clt_trainer *t;
    int slot;
    clt_device *dev;
    clt_net *net;
    pthread_t thread;
    int thread_started;
    float *staging;       /* the net's pinned host staging for its gradients, or its
                           * shared gradients themselves (clt_net_staging) */
    cl_command_queue xfer; /* the transfer queue beside the device's compute queue */
    cl_event *events;     /* one read event per bucket */
    cl_event *writes;     /* one write-back event per bucket */
    float *probe;         /* per bucket: where its one-float read lands (shared gradients) */
    cl_event step_start;  /* marker before the step's upload */
    double step_t0;       /* clt_now() when it was enqueued */
    cl_event backward_done; /* marker after the whole backward */
    double backward_end;  /* when it completed: seen by polling, exact (profiling) at settle */
    int backward_ended;
    int early_sums;       /* buckets of this step summed before this device's backward ended */
    double hidden_transfer_s, hidden_reduce_s; /* parts of transfer and reduction during backward */
    int tracing;          /* clt_trainer_trace */
    clt_trace trace;
    int next_bucket;      /* next bucket to enqueue during backward */
    int off, n;           /* this step's shard */
    double loss;          /* results of the last command */
    int64_t correct;
    clt_status status;
    char error[2048];
    clt_trainer_device_stats stats;
    double ema_sps;       /* smoothed samples/s for the auto split */
    int inject_fail_at;   /* tests: fail at this step (0 = never) */
    int64_t bn_round;     /* synchronised batch norm rounds done this step */
    /* Buffers of this device's context over every replica's (peers.c):
     * gradients in device order; parameters, then each state slot, this
     * replica's first. */
    cl_mem peer_g[CLT_GRADS_MAX];
    cl_mem peer_out[1 + CLT_OPTIM_SLOTS][CLT_GRADS_MAX];
};

struct clt_trainer {
    clt_trainer_config cfg;
    clt_reduce_fn reduce; /* the host sum of a bucket slice (clt_trainer_set_reduce) */
    void *reduce_user;
    char *spec;
    int k;
    clt_worker *workers;
    float *weights;       /* current split fractions */
    clt_cluster *cl;      /* the other processes (cfg.mpi_comm), NULL alone */
    int empty_shards;     /* devices (of every process) given no sample this step */
    int crossed;          /* leading buckets of this step whose processes' sum is in (mutex) */
    double *cross_t0;     /* per bucket: when worker 0 started the processes' sum (trace) */
    clt_bucket *buckets;
    int n_buckets;
    float *sum;           /* reduced gradients, flat */
    size_t flat;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_mutex_t gemm_mu; /* CLBlast's compiles, for every device (clt_gemm_warmup) */
    int gemm_mu_ready;
    int sync_ready;       /* mutex and condvar initialised */
    clt_command command;
    uint64_t generation;  /* bumped for every command */
    int done;             /* workers done with the current command */
    int *arrived;         /* per bucket: devices whose bucket reached the host */
    int *reduced;         /* per bucket: slices summed */
    int peer_sum;         /* each device updates its share of every replica (peers.c) */
    int failed;           /* a device failed: every waiter gives up */
    atomic_int interrupt; /* clt_trainer_interrupt: the devices' tuners keep their rules */
    int max_shard;        /* the largest shard of any device (every process's) this step */
    int first_busy;       /* the first device (of every process's) with a sample this step */
    int mem_checked;      /* the largest shard clt_trainer_memory_check passed */
    clt_status fail_status;
    char fail_msg[2200];
    /* current command's input */
    const float *images;
    const int32_t *labels;
    int batch;
    const clt_dataset *eval_ds;
    int eval_batch;
    int64_t steps;
    clt_optim_settings optim; /* from cfg; lr as clt_trainer_set_lr left it */
    int64_t optim_steps;  /* optimizer steps, a loaded checkpoint's included (the running one counts) */
    /* synchronised batch norm: per-device contributions of the current
     * round, double-buffered by round parity */
    int sync_rounds;      /* per step (clt_net_sync_plan); 0: no layer uses batch statistics */
    float *bn_slots[2];   /* [parity][slot * bn_cap + i] */
    int *bn_len[2];       /* floats each device contributed (0: empty shard) */
    double *bn_count[2];
    int bn_cap;
    int64_t bn_arrivals;  /* contributions so far in this step */
    float *bn_x;          /* across processes: the local sum of a round, then everyone's */
    double bn_xn;
    int64_t bn_crossed;   /* rounds of this step whose cross-process sum is in */
};

/* Whether the workers' current shards (w->n) fit the devices' memory and
 * the process's limits (memory.c); CLT_ERR_DEVICE_MEMORY with the estimate
 * and the limit. */
clt_status clt_trainer_memory_check(clt_trainer *t);

clt_status clt_reduce_local_sum(void *user, const float *const *in, int k, float *out, size_t count,
                                float scale);
/* The sum in device order of in[0..k), times scale, written to each of
 * out[0..n_out) (which may be among the in[]: a block is read before it is
 * written). clt_reduce_local_sum is its n_out = 1; the trainer writes
 * every device's staging in the same pass, where the sum and then a copy
 * per device read and wrote each bucket k + 2 more times. */
void clt_reduce_local_sum_to(const float *const *in, int k, float *const *out, int n_out, size_t count, float scale);
/* One device, the default reduction, no clipping: the gradients stay on
 * the device, scaled there by 1/batch (the host sum's rounding: x * scale),
 * with no round trip through the host (15 of a ResNet-18 step's 67 ms on
 * an H100). */
static inline int clt_trainer_local_step(const clt_trainer *t)
{
    return t->k == 1 && !t->cl && t->reduce == clt_reduce_local_sum && t->cfg.clip_grad_norm == 0;
}
/* The per-bucket gradient pipeline of one device (pipeline.c). */
clt_status clt_pipeline_open(clt_worker *w);
/* Before the step's first command: the marker that times it. */
clt_status clt_pipeline_begin(clt_worker *w);
/* Waits for this device's read of bucket b and counts it arrived (or
 * records the failure). */
clt_status clt_pipeline_await(clt_worker *w, int b);
/* Marks the backward ended if its marker completed (a non-blocking look). */
void clt_pipeline_poll_backward(clt_worker *w);
/* Bucket transfers on a queue of their own (separate) or on the compute
 * queue; open picks a separate one except on CPU devices. Between steps. */
clt_status clt_pipeline_use_queue(clt_worker *w, int separate);
void clt_pipeline_close(clt_worker *w);
/* clt_grads_ready_fn: reads every bucket whose layers finished backward. */
clt_status clt_pipeline_grads_ready(void *user, clt_net *net, int layer);
/* After the backward is enqueued: the remaining buckets and the marker
 * whose completion ends this device's compute. */
clt_status clt_pipeline_end_backward(clt_worker *w);
/* An empty shard: zero gradients, every bucket arrived at once. */
void clt_pipeline_no_shard(clt_worker *w);
/* Sends bucket b of the staging (the reduced sum) back to the device. */
clt_status clt_pipeline_write_back(clt_worker *w, int b);
/* clt_layer_mark_fn of a traced net: a marker after each layer. */
clt_status clt_pipeline_mark(void *user, int layer, int pass);
/* Makes the compute queue wait for bucket b's write-back (b < 0: every
 * bucket's), the optimizer's next; the trace's optimizer span starts at
 * the first. */
clt_status clt_pipeline_before_update(clt_worker *w, int b);
/* Waits for both queues, takes the backward's end from the profiling of
 * its markers, adds up transfer times and releases the step's events. */
void clt_pipeline_settle(clt_worker *w);
/* Makes each worker's peer buffers and sets t->peer_sum where the
 * replicas can reach each other (peers.c): nets that share their
 * parameters (the trainer made them so where peers may apply: CPU
 * devices, no MPI, no clipping, not the host_sum hook). Before the
 * parameters are set (its checks write them); a device that cannot leaves
 * the host sum and replicated updates to all. */
void clt_peers_open(clt_trainer *t);
/* Releases w's peer buffers once its queue is done (before any net is destroyed). */
void clt_peers_close(clt_worker *w);
/* Enqueues w's share of bucket b's update, every replica's gradients
 * summed times scale, into every replica (once the bucket arrived from all). */
clt_status clt_peers_update(clt_worker *w, int b, float scale);
/* Whether this step's updates go through the peers: they are open and the
 * host sum is the default one (a replaced sum, clt_trainer_set_reduce, is
 * called instead). */
static inline int clt_trainer_peer_step(const clt_trainer *t)
{
    return t->peer_sum && t->reduce == clt_reduce_local_sum;
}
/* Worker thread body (worker.c). */
void *clt_worker_main(void *arg);
/* Records the first failure and wakes every waiter (mutex held); slot -1:
 * not a device's (MPI between the processes). */
void clt_trainer_fail_locked(clt_trainer *t, int slot, clt_status s, const char *msg);
/* Tests of mixed vendors on one vendor, per device slot i (NULL arrays:
 * none): force_align[i] bytes of base alignment reported instead of the
 * device's own (0: its own); force_copies[i] != 0: its gradients go
 * through copies even where the device could share them (as a GPU's
 * beside a CPU's); host_sum below. */
typedef struct clt_trainer_test_hooks {
    const size_t *force_align;
    const int *force_copies;
    int host_sum; /* != 0: the host sums even where replicas could read each other's gradients */
} clt_trainer_test_hooks;
/* clt_trainer_create with test hooks (NULL: none). */
clt_status clt_trainer_create_with(const clt_trainer_config *cfg, const clt_trainer_test_hooks *hooks,
                                   clt_trainer **out);
/* Tests: make device slot fail during step number `step` (1-based). */
void clt_trainer_inject_failure(clt_trainer *t, int slot, int64_t step);

#endif
