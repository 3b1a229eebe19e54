/* Which reduction strategy a trainer runs (reduction.h): the first that
 * applies, from the most specific. */
#include "parallel/reduction.h"

const clt_reduction *clt_reduction_choose(const clt_trainer *t)
{
    int default_sum = t->reduce == clt_reduce_local_sum;
    if (t->cl) return &clt_reduction_mpi;
    if (t->cfg.clip_grad_norm > 0) return &clt_reduction_clip;
    if (t->k == 1 && default_sum) return &clt_reduction_device;
    if (t->peer_sum && default_sum) return &clt_reduction_peers;
    return default_sum ? &clt_reduction_host : &clt_reduction_hook;
}
