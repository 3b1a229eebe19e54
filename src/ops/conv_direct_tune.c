/* The direct kernels' tuner, per device and shape, timed on the real
 * shape and kept like the lanes kernels' choices (runtime/tune_cache.c;
 * the key leaves out the batch):
 * - the forward: whether its program has the kernel size as a build
 *   constant (-DKW, kernels/conv_direct.cl). On the 2-core EPYC (AVX2),
 *   LeNet's conv1 measured faster with it on Intel's CPU runtime and
 *   slower on PoCL (bench/README.md);
 * - the weight gradient: its block of output channels, cb 1 to 3 (vw 16:
 *   on a 2-core AVX-512 Zen 5, PoCL, blocks smaller than the rule's 3
 *   measured faster, cb 1 on the ResNet stem at batch 128, cb 2 on LeNet's
 *   conv1 at 256; vw 8 keeps cb 1, as the AVX2 registers hold no more).
 * Both forward choices compute the same sums in the same order; the
 * weight gradient's blocks the same sums, but cb 1 takes rows in pairs
 * (conv_direct.cl), so dw's last bits may differ, as between the lanes
 * kernels' blocks. Both are timed without a fused pooling, which the
 * choice then serves too (LeNet's conv1). As with the lanes kernels, only
 * the winner's program binary is kept. */
#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "ops/conv.h"
#include "ops/conv_algo.h"
#include "runtime/launch.h"
#include "runtime/tune_cache.h"

#define MAX_CHOICES CLT_CONV_DIRECT_MAX_CB /* and 2 for the forward */

static void make_key(const clt_conv_geom *g, int pass, char *key, size_t cap)
{
    snprintf(key, cap, "direct %s c%d h%d w%d co%d k%d s%d p%d",
             pass == CLT_CONV_FWD ? "forward" : "backward-weights", g->c, g->h, g->w, g->co, g->k, g->stride,
             g->pad);
}

/* The choices of pass for plan: kc 0 and 1, or the blocks cb 1 to the
 * largest worth running (clt_conv_direct_max_cb). Choice i's value in the
 * tuning file is "kc<i>" or "cb<i+1>". Returns the count. */
static int choices(const clt_conv_plan *plan, int pass)
{
    return pass == CLT_CONV_FWD ? 2 : clt_conv_direct_max_cb(plan);
}

/* Plan *p with choice i of pass; 0 when it does not fit. */
static int apply(const clt_device *dev, clt_conv_plan *p, int pass, int i)
{
    if (pass == CLT_CONV_FWD) {
        p->direct.kc = i;
        return 1;
    }
    return clt_conv_direct_use_cb(dev, p, i + 1);
}

static void value_of(int pass, int i, char *out, size_t cap)
{
    snprintf(out, cap, pass == CLT_CONV_FWD ? "kc%d" : "cb%d", pass == CLT_CONV_FWD ? i : i + 1);
}

/* The best of three runs of each choice, alternated (a burst of other load
 * slows one run of each), into secs[]; a first, untimed run of each builds
 * its program. Every choice fits where the plan's rule did (a block's work
 * buffer does not depend on its width). */
static clt_status time_choices(clt_device *dev, const clt_conv_plan *plan, int pass, int n, double *secs)
{
    clt_conv_plan t[MAX_CHOICES];
    for (int i = 0; i < n; i++) {
        t[i] = *plan;
        if (!apply(dev, &t[i], pass, i)) return clt_fail(CLT_ERR_INTERNAL, "direct tuner: choice %d does not fit", i);
    }
    clt_conv_pass_bufs b;
    clt_status s = clt_conv_pass_bufs_make(dev, &plan->g, pass, &b);
    for (int r = 0; r < 4 && s == CLT_OK && !clt_device_interrupted(dev); r++)
        for (int i = 0; i < n && s == CLT_OK && !clt_device_interrupted(dev); i++) {
            s = clt_device_finish(dev);
            double t0 = clt_now();
            if (s == CLT_OK) s = clt_conv_run_pass(dev, &t[i], pass, &b);
            if (s == CLT_OK) s = clt_device_finish(dev);
            double d = clt_now() - t0;
            if (r == 1 || (r > 1 && d < secs[i])) secs[i] = d;
        }
    clt_conv_pass_bufs_free(&b);
    return s;
}

/* pass's choice for plan: from the tuning file, or measured and stored,
 * and then *tuned set; the rule's stays where there is nothing to choose
 * or the timing failed. */
static clt_status tune_pass(clt_device *dev, clt_conv_plan *plan, int pass, int *tuned)
{
    int n = choices(plan, pass);
    if (n < 2) return CLT_OK;
    char key[CLT_TUNE_KEY_MAX], value[CLT_TUNE_VALUE_MAX], v[16];
    make_key(&plan->g, pass, key, sizeof key);
    if (clt_tune_lookup(dev, key, value, sizeof value))
        for (int i = 0; i < n; i++) {
            value_of(pass, i, v, sizeof v);
            if (!strcmp(value, v) && apply(dev, plan, pass, i)) {
                *tuned = 1;
                return CLT_OK;
            }
        }
    if (clt_device_interrupted(dev)) { /* the rule's stays, unkept */
        clt_tune_cut(dev);
        return CLT_OK;
    }
    clt_tune_announce(dev);
    double secs[MAX_CHOICES];
    const char *name = pass == CLT_CONV_FWD ? "forward" : "backward-weights";
    clt_tune_hold_begin(dev); /* only the winner's binary goes to the on-disk cache */
    clt_status s = time_choices(dev, plan, pass, n, secs);
    clt_tune_hold_end(dev);
    if (s == CLT_ERR_DEVICE_LOST) return s;
    if (s == CLT_OK && clt_device_interrupted(dev)) { /* cut short: the rule's stays, unkept */
        clt_tune_cut(dev);
        return CLT_OK;
    }
    if (s != CLT_OK) { /* the rule's stays; the next run measures again */
        clt_device_log(dev, 0, "tuning device %d: direct %s skipped: %s", clt_device_get_info(dev)->index, name,
                       clt_last_error());
        clt_clear_error();
        return CLT_OK;
    }
    int best = 0;
    char line[160];
    int len = snprintf(line, sizeof line, "tuning device %d: direct %s", clt_device_get_info(dev)->index, name);
    for (int i = 0; i < n; i++) {
        value_of(pass, i, v, sizeof v);
        if (len > 0 && (size_t)len < sizeof line)
            len += snprintf(line + len, sizeof line - (size_t)len, "%s %s: %.3f ms", i ? "," : "", v, secs[i] * 1e3);
        if (secs[i] < secs[best]) best = i;
    }
    clt_device_log(dev, 0, "%s", line);
    if (!apply(dev, plan, pass, best)) return CLT_OK; /* it fit in time_choices: not reached */
    *tuned = 1;
    value_of(pass, best, value, sizeof value);
    CLT_TRY(clt_tune_store(dev, key, value));
    /* timed without an epilogue: kept, it serves layers without a fused
     * pooling (ResNet-18's first); LeNet's, pooled, builds another */
    char spec[64];
    clt_conv_direct_program(&plan->g, &plan->direct, pass == CLT_CONV_FWD, NULL, spec, sizeof spec);
    return clt_device_keep_program(dev, spec);
}

clt_status clt_conv_direct_tune(clt_device *dev, clt_conv_plan *plan)
{
    clt_conv_direct_params *d = &plan->direct;
    /* as the lanes tuner: AUTO tunes CPU devices with a cache to keep the result */
    if (!clt_tune_wanted(dev, 1)) return CLT_OK;
    if (plan->algo[CLT_CONV_FWD] == &clt_conv_direct && !d->fwd_tuned)
        CLT_TRY(tune_pass(dev, plan, CLT_CONV_FWD, &d->fwd_tuned));
    if (plan->algo[CLT_CONV_BWD_WEIGHTS] == &clt_conv_direct && !d->bwdw_tuned)
        CLT_TRY(tune_pass(dev, plan, CLT_CONV_BWD_WEIGHTS, &d->bwdw_tuned));
    return CLT_OK;
}
