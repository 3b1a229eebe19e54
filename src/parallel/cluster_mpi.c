/* clt_cluster over MPI (cluster.h). */
#include "parallel/cluster.h"

#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/alloc.h"

struct clt_cluster {
    MPI_Comm comm;
    int rank, size, devices, first;
    float *weights;       /* every process's device weights, rank order */
    MPI_Request *req;     /* one per bucket */
    MPI_Status *st;       /* their statuses: MPICH's MPI_STATUSES_IGNORE, (MPI_Status *)1, makes
                           * GCC 12 warn that MPI_Testall writes a region of size 0 */
    int n_req;
    int started, done;    /* this step's sums started, and the leading ones complete */
};

static clt_status mpi_fail(int err, const char *what)
{
    char msg[MPI_MAX_ERROR_STRING + 1];
    int len = 0;
    if (MPI_Error_string(err, msg, &len) != MPI_SUCCESS) len = 0;
    msg[len] = 0;
    return clt_fail(CLT_ERR_INTERNAL, "%s: MPI error %d (%s)", what, err, len ? msg : "?");
}

#define MPI_TRY(call, what)                                                                        \
    do {                                                                                           \
        int e_ = (call);                                                                           \
        if (e_ != MPI_SUCCESS) return mpi_fail(e_, what);                                          \
    } while (0)

clt_status clt_cluster_open(void *comm, int n_local, const float *weights, clt_cluster **out)
{
    *out = NULL;
    int inited = 0, level = 0;
    MPI_Initialized(&inited);
    if (!inited) return clt_fail(CLT_ERR_INVALID_ARG, "trainer: an MPI communicator, but MPI is not initialised");
    MPI_Query_thread(&level);
    if (level < MPI_THREAD_SERIALIZED)
        return clt_fail(CLT_ERR_INVALID_ARG,
                        "trainer: MPI initialised with thread level %d; the trainer calls MPI from a worker "
                        "thread and needs MPI_THREAD_SERIALIZED (MPI_Init_thread)", level);
    clt_cluster *c;
    CLT_TRY(clt_calloc((void **)&c, 1, sizeof *c, "cluster"));
    c->comm = MPI_COMM_NULL;
    clt_status s = CLT_OK;
    int *counts = NULL, *displs = NULL, err;
    if ((err = MPI_Comm_dup(*(MPI_Comm *)comm, &c->comm)) != MPI_SUCCESS) s = mpi_fail(err, "MPI_Comm_dup");
    /* MPI errors come back as codes, not as the default abort */
    if (s == CLT_OK) MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
    if (s == CLT_OK) {
        MPI_Comm_rank(c->comm, &c->rank);
        MPI_Comm_size(c->comm, &c->size);
        s = clt_calloc((void **)&counts, (size_t)c->size, sizeof(int), "cluster");
    }
    if (s == CLT_OK) s = clt_calloc((void **)&displs, (size_t)c->size, sizeof(int), "cluster");
    if (s == CLT_OK && (err = MPI_Allgather(&n_local, 1, MPI_INT, counts, 1, MPI_INT, c->comm)) != MPI_SUCCESS)
        s = mpi_fail(err, "MPI_Allgather (device counts)");
    for (int r = 0; s == CLT_OK && r < c->size; r++) {
        displs[r] = c->devices;
        if (r == c->rank) c->first = c->devices;
        c->devices += counts[r];
    }
    if (s == CLT_OK) s = clt_calloc((void **)&c->weights, (size_t)c->devices, sizeof(float), "cluster");
    if (s == CLT_OK && (err = MPI_Allgatherv(weights, n_local, MPI_FLOAT, c->weights, counts, displs, MPI_FLOAT,
                                             c->comm)) != MPI_SUCCESS)
        s = mpi_fail(err, "MPI_Allgatherv (split weights)");
    free(counts);
    free(displs);
    if (s != CLT_OK) {
        clt_cluster_close(c);
        return s;
    }
    *out = c;
    return CLT_OK;
}

void clt_cluster_close(clt_cluster *c)
{
    if (!c) return;
    /* A failed step can leave sums in flight: freeing an active collective's
     * request is erroneous, and the job must abort anyway (the other
     * processes wait for this one), so the requests and the communicator
     * are left to MPI_Abort. */
    int active = 0;
    for (int i = 0; i < c->n_req; i++) active |= c->req[i] != MPI_REQUEST_NULL;
    if (!active && c->comm != MPI_COMM_NULL) MPI_Comm_free(&c->comm);
    free(c->req);
    free(c->st);
    free(c->weights);
    free(c);
}

int clt_cluster_rank(const clt_cluster *c) { return c ? c->rank : 0; }
int clt_cluster_size(const clt_cluster *c) { return c ? c->size : 1; }
int clt_cluster_devices(const clt_cluster *c) { return c->devices; }
int clt_cluster_first(const clt_cluster *c) { return c->first; }
const float *clt_cluster_weights(const clt_cluster *c) { return c->weights; }

clt_status clt_cluster_start_sum(clt_cluster *c, int slot, int slots, float *buf, size_t count)
{
    if (slots > c->n_req) {
        MPI_Request *r = realloc(c->req, (size_t)slots * sizeof *r);
        if (!r) return clt_fail(CLT_ERR_NO_MEMORY, "cluster: %d requests", slots);
        c->req = r;
        MPI_Status *st = realloc(c->st, (size_t)slots * sizeof *st);
        if (!st) return clt_fail(CLT_ERR_NO_MEMORY, "cluster: %d statuses", slots);
        c->st = st;
        for (int i = c->n_req; i < slots; i++) r[i] = MPI_REQUEST_NULL;
        c->n_req = slots;
    }
    if (count > INT_MAX) return clt_fail(CLT_ERR_INVALID_ARG, "cluster: a bucket of %zu floats (at most %d)", count, INT_MAX);
    if (slot == 0) c->started = c->done = 0; /* a new step: the last one's sums all completed */
    if (slot != c->started) return clt_fail(CLT_ERR_INTERNAL, "cluster: sum %d started after %d", slot, c->started);
    MPI_TRY(MPI_Iallreduce(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT, MPI_SUM, c->comm, &c->req[slot]),
            "MPI_Iallreduce (gradient bucket)");
    c->started++;
    int done;
    return clt_cluster_progress(c, 0, &done);
}

clt_status clt_cluster_progress(clt_cluster *c, int wait, int *done)
{
    if (wait && c->done < c->started) {
        MPI_TRY(MPI_Wait(&c->req[c->done], &c->st[c->done]), "MPI_Wait (gradient bucket)");
        c->done++;
    }
    /* testing the first incomplete sum progresses all of them */
    for (int flag = 1; flag && c->done < c->started;) {
        MPI_TRY(MPI_Test(&c->req[c->done], &flag, &c->st[c->done]), "MPI_Test (gradient bucket)");
        c->done += flag;
    }
    *done = c->done;
    return CLT_OK;
}

int clt_cluster_pending(const clt_cluster *c) { return c->done < c->started; }

/* MPI counts are int: long buffers go in pieces. */
static clt_status sum_pieces(clt_cluster *c, void *v, size_t n, MPI_Datatype type, size_t elem)
{
    for (size_t at = 0; at < n; at += INT_MAX) {
        size_t len = n - at < INT_MAX ? n - at : INT_MAX;
        MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, (char *)v + at * elem, (int)len, type, MPI_SUM, c->comm),
                "MPI_Allreduce");
    }
    return CLT_OK;
}

clt_status clt_cluster_sum_floats(clt_cluster *c, float *v, size_t n) { return sum_pieces(c, v, n, MPI_FLOAT, sizeof *v); }
clt_status clt_cluster_sum_doubles(clt_cluster *c, double *v, size_t n) { return sum_pieces(c, v, n, MPI_DOUBLE, sizeof *v); }

clt_status clt_cluster_broadcast(clt_cluster *c, float *v, size_t n)
{
    for (size_t at = 0; at < n; at += INT_MAX) {
        size_t len = n - at < INT_MAX ? n - at : INT_MAX;
        MPI_TRY(MPI_Bcast(v + at, (int)len, MPI_FLOAT, 0, c->comm), "MPI_Bcast");
    }
    return CLT_OK;
}

clt_status clt_cluster_same(clt_cluster *c, uint64_t v, int *same)
{
    uint64_t lo = v, hi = v;
    MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UINT64_T, MPI_MIN, c->comm), "MPI_Allreduce (min)");
    MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UINT64_T, MPI_MAX, c->comm), "MPI_Allreduce (max)");
    *same = lo == hi;
    return CLT_OK;
}
