/* clt_cluster in a build without MPI (cluster.h): a communicator is refused;
 * nothing else is ever called, since no cluster exists. */
#include "parallel/cluster.h"

clt_status clt_cluster_open(void *comm, int n_local, const float *weights, clt_cluster **out)
{
    (void)comm;
    (void)n_local;
    (void)weights;
    *out = NULL;
    return clt_fail(CLT_ERR_INVALID_ARG,
                    "trainer: an MPI communicator, but cltrain was built without MPI "
                    "(install libopenmpi-dev and reconfigure: meson setup --reconfigure -Dmpi=enabled)");
}

void clt_cluster_close(clt_cluster *c) { (void)c; }
int clt_cluster_rank(const clt_cluster *c) { (void)c; return 0; }
int clt_cluster_size(const clt_cluster *c) { (void)c; return 1; }
int clt_cluster_devices(const clt_cluster *c) { (void)c; return 0; }
int clt_cluster_first(const clt_cluster *c) { (void)c; return 0; }
const float *clt_cluster_weights(const clt_cluster *c) { (void)c; return 0; }
clt_status clt_cluster_start_sum(clt_cluster *c, int slot, int slots, float *buf, size_t count)
{
    (void)c; (void)slot; (void)slots; (void)buf; (void)count;
    return clt_fail(CLT_ERR_INTERNAL, "cluster: built without MPI");
}
clt_status clt_cluster_progress(clt_cluster *c, int wait, int *done)
{
    (void)c; (void)wait;
    *done = 0;
    return CLT_OK;
}
int clt_cluster_pending(const clt_cluster *c) { (void)c; return 0; }
clt_status clt_cluster_sum_floats(clt_cluster *c, float *v, size_t n) { (void)c; (void)v; (void)n; return CLT_OK; }
clt_status clt_cluster_sum_doubles(clt_cluster *c, double *v, size_t n) { (void)c; (void)v; (void)n; return CLT_OK; }
clt_status clt_cluster_broadcast(clt_cluster *c, float *v, size_t n) { (void)c; (void)v; (void)n; return CLT_OK; }
clt_status clt_cluster_same(clt_cluster *c, uint64_t v, int *same) { (void)c; (void)v; *same = 1; return CLT_OK; }
