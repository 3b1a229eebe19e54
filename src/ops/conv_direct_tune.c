/* The direct forward's tuner: whether its program has the kernel size as
 * a build constant (-DKW, kernels/conv_direct.cl), timed once per device
 * and shape on the real shape and kept like the lanes kernels' choices
 * (runtime/tune_cache.c; the key leaves out the batch). On the 2-core EPYC
 * (AVX2), LeNet's conv1: Intel's CPU runtime 0.68-0.69 ms with it against
 * 0.95-0.96 without, PoCL 5% slower with it (bench/README.md). Both
 * compute the same sums in the same order. As with the lanes kernels,
 * only the winner's program binary is kept. */
#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "ops/conv.h"
#include "ops/conv_algo.h"
#include "runtime/launch.h"
#include "runtime/tune_cache.h"

static void make_key(const clt_conv_geom *g, char *key, size_t cap)
{
    snprintf(key, cap, "direct forward c%d h%d w%d co%d k%d s%d p%d", g->c, g->h, g->w, g->co, g->k, g->stride,
             g->pad);
}

/* The best of three runs of the forward with kc 0 and 1, alternated (a
 * burst of other load slows one run of each), into secs[]; a first,
 * untimed run of each builds its program. */
static clt_status time_both(clt_device *dev, const clt_conv_plan *plan, double secs[2])
{
    clt_conv_pass_bufs b;
    clt_status s = clt_conv_pass_bufs_make(dev, &plan->g, CLT_CONV_FWD, &b);
    clt_conv_plan t[2] = {*plan, *plan};
    for (int r = 0; r < 4 && s == CLT_OK; r++)
        for (int kc = 0; kc < 2 && s == CLT_OK; kc++) {
            t[kc].direct.kc = kc;
            s = clt_device_finish(dev);
            double t0 = clt_now();
            if (s == CLT_OK) s = clt_conv_run_pass(dev, &t[kc], CLT_CONV_FWD, &b);
            if (s == CLT_OK) s = clt_device_finish(dev);
            double d = clt_now() - t0;
            if (r == 1 || (r > 1 && d < secs[kc])) secs[kc] = d;
        }
    clt_conv_pass_bufs_free(&b);
    return s;
}

clt_status clt_conv_direct_tune(clt_device *dev, clt_conv_plan *plan)
{
    int mode = dev->settings.tune;
    clt_conv_direct_params *d = &plan->direct;
    /* as the lanes tuner: AUTO tunes CPU devices with a cache to keep the result */
    if (mode == CLT_TUNE_OFF || (mode == CLT_TUNE_AUTO && (!dev->cache_enabled || dev->info.type != CLT_DEVICE_CPU)))
        return CLT_OK;
    if (plan->algo[CLT_CONV_FWD] != &clt_conv_direct || d->fwd_tuned) return CLT_OK;
    char key[CLT_TUNE_KEY_MAX], value[CLT_TUNE_VALUE_MAX];
    make_key(&plan->g, key, sizeof key);
    if (clt_tune_lookup(dev, key, value, sizeof value) && (!strcmp(value, "kc0") || !strcmp(value, "kc1"))) {
        d->kc = value[2] == '1';
        d->fwd_tuned = 1;
        return CLT_OK;
    }
    clt_conv_tune_announce(dev);
    double secs[2] = {0, 0};
    dev->cache_hold++; /* only the winner's binary goes to the on-disk cache */
    clt_status s = time_both(dev, plan, secs);
    dev->cache_hold--;
    if (s == CLT_ERR_DEVICE_LOST) return s;
    if (s != CLT_OK) { /* the rule's stays; the next run measures again */
        clt_device_log(dev, 0, "tuning device %d: direct forward skipped: %s", dev->info.index, clt_last_error());
        clt_clear_error();
        d->kc = 0;
        return CLT_OK;
    }
    d->kc = secs[1] < secs[0];
    d->fwd_tuned = 1;
    clt_device_log(dev, 0, "tuning device %d: direct forward kc0: %.3f ms, kc1: %.3f ms", dev->info.index,
                   secs[0] * 1e3, secs[1] * 1e3);
    snprintf(value, sizeof value, "kc%d", d->kc);
    CLT_TRY(clt_tune_store(dev, key, value));
    /* time_both ran it without an epilogue: kept, it serves layers without
     * a fused pooling (ResNet-18's first); LeNet's, pooled, builds another */
    char spec[64];
    clt_conv_direct_program(&plan->g, d, 1, NULL, spec, sizeof spec);
    return clt_device_keep_program(dev, spec);
}
