/* The data-parallel trainer's internals: one worker thread per device,
 * gradient buckets, the step protocol (docs/ARCHITECTURE.md, "The
 * training step"). */
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
typedef struct clt_reduction clt_reduction; /* reduction.h */
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
    int taken;            /* buckets of this step whose processes' sum this worker took (reduce_mpi.c) */
    /* Buffers of this device's context over every replica's (peers.c):
     * gradients in device order; parameters, then each state slot, this
     * replica's first. */
    cl_mem peer_g[CLT_GRADS_MAX];
    cl_mem peer_out[1 + CLT_OPTIM_SLOTS][CLT_GRADS_MAX];
};

/* Synchronised batch norm's rounds (sync_bn.c): per-device contributions
 * of the current round, double-buffered by round parity. */
typedef struct clt_bn_rounds {
    int rounds;           /* per step (clt_net_sync_plan); 0: no layer uses batch statistics */
    float *slots[2];      /* [parity][slot * cap + i] */
    int *len[2];          /* floats each device contributed (0: empty shard) */
    double *count[2];
    int cap;
    int64_t arrivals;     /* contributions so far in this step */
    float *x;             /* across processes: the local sum of a round, then everyone's */
    double xn;
    int64_t crossed;      /* rounds of this step whose cross-process sum is in */
} clt_bn_rounds;

struct clt_trainer {
    clt_trainer_config cfg;
    clt_reduce_fn reduce; /* the host sum of a bucket slice (clt_trainer_set_reduce) */
    void *reduce_user;
    const clt_reduction *reduction; /* how a step reduces (clt_reduction_choose) */
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
    int32_t *eval_pred;  /* NULL, or each evaluated sample's class (clt_trainer_evaluate_predicted) */
    int64_t steps;
    clt_optim_settings optim; /* from cfg; lr as clt_trainer_set_lr left it */
    int64_t optim_steps;  /* optimizer steps, a loaded checkpoint's included (the running one counts) */
    clt_bn_rounds bn;
};

/* Life cycle (trainer.c). Records the first failure and wakes every
 * waiter (mutex held); slot -1: not a device's (MPI between the
 * processes). */
void clt_trainer_fail_locked(clt_trainer *t, int slot, clt_status s, const char *msg);
/* The replicas (replicas.c): one net per device with one parameter layout,
 * sharing with the host what each device can (test hooks: test_hooks.h). */
struct clt_trainer_test_hooks;
clt_status clt_replicas_create(clt_trainer *t, const struct clt_trainer_test_hooks *hooks);

/* Who gets which samples (split.c): shards of n samples over every device
 * (every process's, with MPI: each process computes the same list and
 * takes its own devices' part); for training, a lone sample of a shard
 * whose batch norm needs two joins the largest shard. */
clt_status clt_trainer_assign_shards(clt_trainer *t, int n, int training);
/* The auto split's weights follow each device's measured samples/s. */
void clt_trainer_update_auto_split(clt_trainer *t);

/* Whether the workers' current shards (w->n) fit the devices' memory and
 * the process's limits; CLT_ERR_DEVICE_MEMORY with the estimate and the
 * limit (memory.c). */
clt_status clt_trainer_memory_check(clt_trainer *t);
/* The memory check where `most` samples on a device (of any process) is
 * more than any checked before; collective under MPI. */
clt_status clt_trainer_fit_memory(clt_trainer *t, int most);

/* The default host sum (reduce.c): clt_reduce_fn in fixed device order. */
clt_status clt_reduce_local_sum(void *user, const float *const *in, int k, float *out, size_t count,
                                float scale);
/* The sum in device order of in[0..k), times scale, written to each of
 * out[0..n_out) (which may be among the in[]: a block is read before it is
 * written). clt_reduce_local_sum is its n_out = 1; the trainer writes
 * every device's staging in the same pass. */
void clt_reduce_local_sum_to(const float *const *in, int k, float *const *out, int n_out, size_t count, float scale);

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
 * parameters (clt_replicas_create made them so where peers may apply: CPU
 * devices, no MPI, no clipping, not the host_sum hook). Before the
 * parameters are set (its checks write them); a device that cannot leaves
 * the host sum and replicated updates to all. */
void clt_peers_open(clt_trainer *t);
/* Releases w's peer buffers once its queue is done (before any net is destroyed). */
void clt_peers_close(clt_worker *w);

/* Batch norm across the devices (sync_bn.c). Allocates the rounds'
 * buffers where the net has layers with batch statistics. */
clt_status clt_sync_bn_plan(clt_trainer *t);
void clt_sync_bn_free(clt_trainer *t);
/* The hook a synchronised step passes to the net (its rounds restart). */
clt_sync clt_sync_bn_hook(clt_worker *w);
/* An empty shard takes part in every round of the step. */
clt_status clt_sync_bn_no_shard(clt_worker *w);
/* After a step: the replicas' running statistics made identical again. */
clt_status clt_sync_bn_after_step(clt_trainer *t);

/* Worker thread body (worker.c). */
void *clt_worker_main(void *arg);
/* Waits (mutex held) until *counter reaches the device count or the
 * trainer failed; returns 0 on failure. Adds the wait after this device's
 * backward ended to its idle time. Worker 0 keeps the processes' sums
 * moving meanwhile (MPI progresses them only inside its calls). */
int clt_worker_wait_all(clt_worker *w, const int *counter);

#endif
