/* Pieces the trainer tests share: a net's parameters and batch-norm
 * statistics as one host array (public calls only: the net is opaque
 * there), and the settings their equality checks start from. */
#ifndef CLT_TESTS_TRAINER_UTIL_H
#define CLT_TESTS_TRAINER_UTIL_H

#include <stdlib.h>

#include "check.h"
#include "cltrain.h"

/* Elements of parameter i, its name in *name. */
static inline int64_t test_param_numel(const clt_net *net, int i, const char **name)
{
    int ndim;
    int64_t shape[CLT_MAX_DIMS], n = 1;
    CHECK_OK(clt_net_param_info(net, i, name, &ndim, shape));
    for (int d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

/* Every named tensor of the net (parameters and running statistics), in
 * order; malloc'd, *count floats. */
static inline float *test_net_params(clt_net *net, size_t *count)
{
    size_t total = 0;
    const char *name;
    for (int i = 0; i < clt_net_param_count(net); i++) total += (size_t)test_param_numel(net, i, &name);
    float *all = malloc(sizeof(float) * total), *at = all;
    for (int i = 0; i < clt_net_param_count(net); i++) {
        int64_t n = test_param_numel(net, i, &name);
        CHECK_OK(clt_net_param_get(net, name, at, n));
        at += n;
    }
    *count = total;
    return all;
}

/* Defaults plus the model, its input shape, the devices and the SGD the
 * equality checks replay on a plain net: lr 0.1, momentum 0.9, weight
 * decay 1e-3, seed 11, Xavier. */
static inline void test_trainer_config(clt_trainer_config *cfg, const char *spec, int sync_bn, int c, int h, int w,
                                       const int *devs, int k)
{
    clt_trainer_config_default(cfg);
    cfg->spec = spec;
    cfg->sync_bn = sync_bn;
    cfg->channels = c;
    cfg->height = h;
    cfg->width = w;
    cfg->devices = devs;
    cfg->n_devices = k;
    cfg->lr = 0.1f;
    cfg->momentum = 0.9f;
    cfg->weight_decay = 1e-3f;
    cfg->seed = 11;
    cfg->init = CLT_INIT_XAVIER;
}

#endif
