/* The winograd tuner (conv_algo.h): it runs after the other tuners, so
 * winograd competes with their measured choices, on CPU devices (lanes) and
 * GPUs (implicit, gemm) alike, and a device runs it only where it measured
 * faster (CLTRAIN_CONV_WINOGRAD=0: never, unless forced). Its candidates:
 * F(2x2,3x3), and F(4x4,3x3) for the backward passes or, where the
 * settings allow it (CLTRAIN_CONV_WINOGRAD=4), the forward too: a ReLU's
 * gate is decided in the forward, where F(4x4)'s rounding (about 4e-6 of
 * the result) can flip one and take ResNet-18 past test_pytorch.py's bar;
 * in the backward passes it only perturbs the gradients (1e-6 to 4e-6),
 * and the test passes with F(4x4) in every one. Each fused (CPU
 * devices, forward and backward-data) and in chunks of 1, 4 and 16 MiB of
 * transformed tensors (near the cache, or fewer and longer products); the
 * weight gradient's 4, 16 and 64 MiB (each chunk also reads and writes the
 * whole transformed gradient dU). The key leaves out the batch, as the
 * lanes tuner's: the last, shorter batch of an epoch and the evaluation
 * batches reuse the training batch's choice. */
#include <stdio.h>
#include <string.h>

#include "ops/conv_algo.h"
#include "runtime/tune_cache.h"

static const int tiles[] = {2, 4};
/* per pass kind (the weight gradient's second): the fused kernel where it
 * fits, then the chunk sizes */
static const int chunk_kibs[2][4] = {{CLT_CONV_WINOGRAD_FUSED, 1024, CLT_CONV_WINOGRAD_RULE_KIB, 16384},
                                     {4096, CLT_CONV_WINOGRAD_RULE_KIB_BWDW, 65536, 0}};
static const int n_chunks[2] = {4, 3};
/* The tile sizes the tuner times for pass: F(2x2), and F(4x4) for the
 * backward passes or where dev's settings allow it. */
static int n_tiles(const clt_device *dev, int pass)
{
    return clt_device_get_settings(dev)->conv_winograd == CLT_WINOGRAD_F4 || pass != CLT_CONV_FWD ? 2 : 1;
}
#define N_CHUNKS (int)(sizeof chunk_kibs[0] / sizeof *chunk_kibs[0])
#define MAX_CANDIDATES (1 + 2 * N_CHUNKS) /* the tuned choice, then winograd's */
_Static_assert(MAX_CANDIDATES <= CLT_CONV_TIMED_MAX, "candidates timed together");

/* "keep" (the plan as the other tuners left it) or winograd's configuration. */
static const char keep[] = "keep";

/* The pass's candidates, applied to copies of plan: t[0] the plan as it is
 * where it may stay (not forced), then each configuration (ok 0 where it
 * does not fit); values[i] as kept, shown[i] as logged. */
static int candidates(const clt_device *dev, const clt_conv_plan *plan, int pass, int forced, clt_conv_plan *t,
                      int *ok, char values[][CLT_TUNE_VALUE_MAX], char shown[][CLT_TUNE_VALUE_MAX])
{
    int wg = pass == CLT_CONV_BWD_WEIGHTS, n = 0;
    const int *chunk_kib = chunk_kibs[wg];
    if (!forced) {
        t[n] = *plan;
        ok[n] = 1;
        snprintf(values[n], CLT_TUNE_VALUE_MAX, "%s", keep);
        snprintf(shown[n++], CLT_TUNE_VALUE_MAX, "%s (not winograd)", plan->algo[pass]->name);
    }
    for (int i = 0; i < n_tiles(dev, pass); i++)
        for (int j = 0; j < n_chunks[wg]; j++) {
            t[n] = *plan;
            ok[n] = clt_conv_winograd_use(dev, &t[n], pass, tiles[i], chunk_kib[j]);
            clt_conv_winograd_format(&(clt_conv_winograd_cfg){.wm = tiles[i], .kib = chunk_kib[j]}, values[n],
                                     CLT_TUNE_VALUE_MAX);
            snprintf(shown[n], CLT_TUNE_VALUE_MAX, "winograd %.40s", values[n]);
            n++;
        }
    return n;
}

/* Gives pass of plan the named candidate; 0 when it is none or no longer fits. */
static int apply(const clt_device *dev, clt_conv_plan *plan, int pass, int forced, const char *value)
{
    if (!strcmp(value, keep)) return !forced;
    int wg = pass == CLT_CONV_BWD_WEIGHTS;
    const int *chunk_kib = chunk_kibs[wg];
    clt_conv_winograd_cfg c;
    if (!clt_conv_winograd_parse(value, &c)) return 0;
    for (int i = 0; i < n_tiles(dev, pass); i++)
        for (int j = 0; j < n_chunks[wg]; j++)
            if (tiles[i] == c.wm && chunk_kib[j] == c.kib) {
                const clt_conv_algo *was = plan->algo[pass];
                clt_conv_plan t = *plan;
                if (!clt_conv_winograd_use(dev, &t, pass, c.wm, c.kib)) return 0;
                if (was != &clt_conv_winograd && was->pools &&
                    (was->pools(&t.g, CLT_EPI_POOL_MAX) || was->pools(&t.g, CLT_EPI_POOL_AVG)))
                    t.pool_algo[pass] = was;
                *plan = t;
                return 1;
            }
    return 0;
}

/* Whether the tuner decides pass: winograd runs the shape, and the pass is
 * forced onto it or runs an algorithm it may replace (direct's first
 * layers are too small a reduction to gain). */
static int eligible(const clt_conv_plan *plan, int pass, int forced)
{
    const clt_conv_algo *a = plan->algo[pass];
    if (!a || plan->winograd.tuned[pass] || !clt_conv_winograd.supports(&plan->g, CLT_CONV_PASS(pass))) return 0;
    if (forced) return a == &clt_conv_winograd;
    return a == &clt_conv_lanes || a == &clt_conv_implicit || a == &clt_conv_gemm;
}

clt_status clt_conv_winograd_tune(clt_device *dev, clt_conv_plan *plan)
{
    const clt_device_settings *set = clt_device_get_settings(dev);
    int algo = set->conv_algo, forced = algo == CLT_CONV_ALGO_WINOGRAD;
    int offered = forced || (algo == CLT_CONV_ALGO_AUTO && set->conv_winograd != CLT_WINOGRAD_NONE);
    if (!offered || !clt_tune_wanted(dev, 0)) return CLT_OK;
    const clt_conv_geom *g = &plan->g;
    for (int p = 0; p < CLT_CONV_PASSES; p++) {
        if (!eligible(plan, p, forced)) continue;
        char key[CLT_TUNE_KEY_MAX], value[CLT_TUNE_VALUE_MAX];
        /* forced and F(4x4) choose among other candidates: keys of their own */
        snprintf(key, sizeof key, "winograd %s c%d h%d w%d co%d p%d%s%s", clt_conv_pass_names[p], g->c, g->h, g->w,
                 g->co, g->pad, forced ? " forced" : "", n_tiles(dev, p) > 1 ? " f4" : "");
        if (clt_tune_lookup(dev, key, value, sizeof value) && apply(dev, plan, p, forced, value)) {
            plan->winograd.tuned[p] = 1;
            continue;
        }
        if (clt_device_interrupted(dev)) { /* the rule's choices for the rest, unkept */
            clt_tune_cut(dev);
            break;
        }
        clt_tune_announce(dev);
        clt_conv_plan t[MAX_CANDIDATES];
        char names[MAX_CANDIDATES][CLT_TUNE_VALUE_MAX], shown[MAX_CANDIDATES][CLT_TUNE_VALUE_MAX];
        const char *name[MAX_CANDIDATES];
        int ok[MAX_CANDIDATES], best = -1, n = candidates(dev, plan, p, forced, t, ok, names, shown);
        for (int i = 0; i < n; i++) name[i] = shown[i];
        CLT_TRY(clt_conv_time_plans(dev, p, t, ok, name, n, &best));
        if (clt_device_interrupted(dev)) { /* cut short: not a measurement */
            clt_tune_cut(dev);
            break;
        }
        if (best < 0) continue; /* nothing ran: the plan stays, unkept */
        if (!apply(dev, plan, p, forced, names[best]))
            return clt_fail(CLT_ERR_INTERNAL, "conv2d plan: the tuned %s choice no longer fits", clt_conv_pass_names[p]);
        plan->winograd.tuned[p] = 1;
        CLT_TRY(clt_tune_store(dev, key, names[best]));
    }
    return CLT_OK;
}
