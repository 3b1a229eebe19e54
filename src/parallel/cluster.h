/* The processes of a run across machines (MPI): each drives its local
 * devices; per gradient bucket one in-place allreduce sums the processes'
 * local sums. cluster_mpi.c implements it over an MPI communicator,
 * cluster_none.c (a build without MPI) refuses one. Called by one thread at
 * a time (worker 0 during a step, the caller's thread between steps): MPI
 * needs MPI_THREAD_SERIALIZED. */
#ifndef CLT_PARALLEL_CLUSTER_H
#define CLT_PARALLEL_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

typedef struct clt_cluster clt_cluster;

/* comm points to an MPI_Comm (duplicated: the trainer's traffic stays
 * apart); `weights` are this process's n_local devices' split weights.
 * Gathers every process's weights in rank order: the global device list. */
clt_status clt_cluster_open(void *comm, int n_local, const float *weights, clt_cluster **out);
/* After a failed step with sums still in flight (clt_cluster_pending) the
 * communicator is left to MPI_Abort, which the caller must then call; the
 * buffers those sums write must stay allocated. */
void clt_cluster_close(clt_cluster *c);
int clt_cluster_rank(const clt_cluster *c);
int clt_cluster_size(const clt_cluster *c);
/* Devices of all processes, this process's first one among them, and
 * the weights of all (rank order). */
int clt_cluster_devices(const clt_cluster *c);
int clt_cluster_first(const clt_cluster *c);
const float *clt_cluster_weights(const clt_cluster *c);

/* Starts summing `count` floats in place over the processes as request
 * `slot` (one per gradient bucket, started in order 0 .. slots-1 every
 * step) and lets earlier ones progress. */
clt_status clt_cluster_start_sum(clt_cluster *c, int slot, int slots, float *buf, size_t count);
/* Progresses the started sums (MPI moves non-blocking collectives only
 * inside its calls) and gives in *done how many leading ones are complete;
 * with `wait`, first waits for the next incomplete one, if any started. */
clt_status clt_cluster_progress(clt_cluster *c, int wait, int *done);
/* Whether a started sum is not complete yet. */
int clt_cluster_pending(const clt_cluster *c);
/* Blocking in-place sums over the processes. */
clt_status clt_cluster_sum_floats(clt_cluster *c, float *v, size_t n);
clt_status clt_cluster_sum_doubles(clt_cluster *c, double *v, size_t n);
/* Process 0's n floats to every process. */
clt_status clt_cluster_broadcast(clt_cluster *c, float *v, size_t n);
/* Whether every process passed the same value. */
clt_status clt_cluster_same(clt_cluster *c, uint64_t v, int *same);

#endif
