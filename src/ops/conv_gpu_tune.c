/* The GPU convolution tuner: on a device that does not run lanes, each pass
 * a plan gives to implicit or gemm takes the choice kept for this device and
 * shape (runtime/tune_cache.c), else the fastest of implicit's tiles and,
 * when the algorithm is auto, gemm, timed on the real shape with zeros, then
 * kept. implicit's rule (conv_implicit.c) was fitted to one GPU; this is
 * what makes another GPU, or another driver, pick its own. The key holds
 * the batch: a tile's fill of the compute units depends on it. */
#include <stdio.h>
#include <string.h>

#include "ops/conv_algo.h"
#include "runtime/launch.h"
#include "runtime/tune_cache.h"

#define MAX_CANDIDATES (1 + CLT_CONV_IMPLICIT_TILES) /* gemm and every tile */

/* A candidate: gemm, or implicit with a tile. */
typedef struct choice {
    int gemm;
    clt_conv_implicit_cfg cfg;
} choice;

static void format_choice(const choice *c, char *buf, size_t cap)
{
    if (c->gemm) snprintf(buf, cap, "gemm");
    else {
        char t[40]; /* "128x128x8 r8x8" */
        clt_conv_implicit_format(&c->cfg, t, sizeof t);
        snprintf(buf, cap, "implicit %s", t);
    }
}

/* pass of plan runs c; 0 when it cannot. */
static int apply(const clt_device *dev, clt_conv_plan *plan, int pass, const choice *c)
{
    if (c->gemm) {
        if (!clt_conv_gemm.plan(dev, plan, CLT_CONV_PASS(pass))) return 0;
        plan->algo[pass] = &clt_conv_gemm;
        return 1;
    }
    if (!clt_conv_implicit_use(dev, plan, pass, &c->cfg)) return 0;
    plan->algo[pass] = &clt_conv_implicit;
    return 1;
}

/* A kept value back into a choice; 0 unless it is one the tuner would time now. */
static int parse_choice(const char *v, int with_gemm, choice *c)
{
    memset(c, 0, sizeof *c);
    if (!strcmp(v, "gemm")) {
        c->gemm = 1;
        return with_gemm;
    }
    return !strncmp(v, "implicit ", 9) && clt_conv_implicit_parse(v + 9, &c->cfg);
}

/* The candidates for pass: gemm first (when with_gemm), then implicit's tiles. */
static int candidates(const clt_device *dev, const clt_conv_geom *g, int pass, int with_gemm, choice *out)
{
    clt_conv_implicit_cfg t[MAX_CANDIDATES];
    int n = 0, k = clt_conv_implicit_candidates(dev, g, pass, t, MAX_CANDIDATES - 1);
    if (with_gemm) out[n++] = (choice){.gemm = 1};
    for (int i = 0; i < k; i++) out[n++] = (choice){0, t[i]};
    return n;
}

/* The fastest candidate that runs, into *best (*found 0 when none did). */
static clt_status measure(clt_device *dev, const clt_conv_plan *plan, int pass, int with_gemm, choice *best,
                          int *found)
{
    choice cand[MAX_CANDIDATES];
    clt_conv_plan t[MAX_CANDIDATES];
    char names[MAX_CANDIDATES][CLT_TUNE_VALUE_MAX];
    const char *name[MAX_CANDIDATES];
    int ok[MAX_CANDIDATES], n = candidates(dev, &plan->g, pass, with_gemm, cand), at = -1;
    for (int i = 0; i < n; i++) {
        t[i] = *plan;
        ok[i] = apply(dev, &t[i], pass, &cand[i]);
        format_choice(&cand[i], names[i], sizeof names[i]);
        name[i] = names[i];
    }
    CLT_TRY(clt_conv_time_plans(dev, pass, t, ok, name, n, &at));
    *found = at >= 0;
    if (at >= 0) *best = cand[at];
    return CLT_OK;
}

clt_status clt_conv_gpu_tune(clt_device *dev, clt_conv_plan *plan)
{
    int algo = clt_device_get_settings(dev)->conv_algo, lanes = 0;
    CLT_TRY(clt_conv_uses_lanes(dev, &lanes));
    /* AUTO: with a cache to keep the result; a forced gemm has nothing to choose */
    if (lanes || algo == CLT_CONV_ALGO_GEMM || !clt_tune_wanted(dev, 0)) return CLT_OK;
    int with_gemm = algo == CLT_CONV_ALGO_AUTO || algo == CLT_CONV_ALGO_WINOGRAD; /* winograd: AUTO elsewhere */
    const clt_conv_geom *g = &plan->g;
    for (int p = 0; p < CLT_CONV_PASSES; p++) {
        if ((plan->algo[p] != &clt_conv_implicit && plan->algo[p] != &clt_conv_gemm) || plan->gpu_tuned[p]) continue;
        if (!clt_conv_implicit_candidates(dev, g, p, &(clt_conv_implicit_cfg){0}, 1)) continue;
        char key[CLT_TUNE_KEY_MAX], value[CLT_TUNE_VALUE_MAX];
        /* TF32 tiles offered (clt_device_tf32_kernels) or not are two
         * choices kept apart: --precision fp32 never takes a TF32 one */
        snprintf(key, sizeof key, "gpu %s n%d c%d h%d w%d co%d k%d s%d p%d%s%s", clt_conv_pass_names[p], g->n, g->c,
                 g->h, g->w, g->co, g->k, g->stride, g->pad, with_gemm ? "" : " implicit",
                 clt_device_tf32_kernels(dev) ? " tf32" : "");
        choice c;
        clt_conv_plan t = *plan;
        if (clt_tune_lookup(dev, key, value, sizeof value) && parse_choice(value, with_gemm, &c) &&
            apply(dev, &t, p, &c)) {
            *plan = t;
            plan->gpu_tuned[p] = 1;
            continue;
        }
        if (clt_device_interrupted(dev)) { /* the rule's choices for the rest, unkept */
            clt_tune_cut(dev);
            break;
        }
        clt_tune_announce(dev);
        int found = 0;
        CLT_TRY(measure(dev, plan, p, with_gemm, &c, &found));
        if (clt_device_interrupted(dev)) { /* cut short: not a measurement */
            clt_tune_cut(dev);
            break;
        }
        if (!found) continue; /* nothing ran: the rule's choice stays, unkept */
        t = *plan;
        if (!apply(dev, &t, p, &c))
            return clt_fail(CLT_ERR_INTERNAL, "conv2d plan: the tuned %s choice no longer fits",
                            clt_conv_pass_names[p]);
        *plan = t;
        plan->gpu_tuned[p] = 1;
        format_choice(&c, value, sizeof value);
        CLT_TRY(clt_tune_store(dev, key, value));
    }
    return CLT_OK;
}
