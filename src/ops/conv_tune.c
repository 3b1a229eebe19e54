/* The lanes kernels' tuner: for each pass a plan runs with lanes, the
 * configuration kept for this device and shape (runtime/tune_cache.c), or
 * else the fastest of a few candidates (conv_lanes_cfg.c) timed on the real
 * shape, which is then kept. The key leaves out the batch, except whether
 * it fills 32 lanes: the last, shorter batch of an epoch and the
 * evaluation batches reuse the training batch's choice. */
#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "ops/conv_lanes.h"
#include "runtime/launch.h"
#include "runtime/tune_cache.h"

#define MAX_CANDIDATES 10 /* blocks timed per pass */
#define MAX_TIMED 12      /* configurations timed together: 2 blocks x 3 chunk targets x 2 layouts */

static void make_key(const clt_conv_lanes_params *lp, int pass, char *key, size_t cap)
{
    const clt_conv_geom *g = &lp->gk;
    /* np: the lanes' padding, and g where the pass reads rows with a gap
     * after them (a choice timed in one layout is not assumed for the
     * other; the weight gradient's rows have none) */
    int gap = clt_conv_lanes_row_stride(lp, pass != CLT_CONV_BWD_WEIGHTS) > lp->nl;
    snprintf(key, cap, "lanes %s c%d h%d w%d co%d k%d s%d p%d np%s%s", clt_conv_pass_names[pass], g->c, g->h, g->w,
             g->co, g->k, g->stride, g->pad, lp->nl % 32 == 0 ? "32" : "16", gap ? "g" : "");
}

static void format_cfg(int pass, const clt_conv_lanes_cfg *c, char *buf, size_t cap)
{
    if (pass != CLT_CONV_BWD_WEIGHTS) snprintf(buf, cap, "vw%d rm%d nv%d%s", c->vw, c->a, c->b, c->px ? " px" : "");
    else
        snprintf(buf, cap, "vw%d wa%d wb%d ck%d%s%s", c->vw, c->a, c->b, c->ck ? c->ck : CLT_CONV_LANES_CHUNK_KIB_RULE,
                 c->ph ? " ph" : "", c->tr ? " tr" : "");
}

/* A number of 1 to `digits` digits at *p (advanced); -1 when there is none. */
static int small_int(const char **p, int digits)
{
    int v = -1;
    for (int i = 0; i < digits && **p >= '0' && **p <= '9'; i++, (*p)++) v = (v < 0 ? 0 : 10 * v) + (**p - '0');
    return v;
}

/* A kept value back into a configuration; 0 unless it is one the tuner
 * would time for lp on dev now (a damaged, hand-edited or stale line). */
static int parse_cfg(const clt_device *dev, const clt_conv_lanes_params *lp, int pass, const char *v,
                     clt_conv_lanes_cfg *c)
{
    const char *want_a = pass == CLT_CONV_BWD_WEIGHTS ? " wa" : " rm", *want_b = pass == CLT_CONV_BWD_WEIGHTS ? " wb" : " nv";
    if (strncmp(v, "vw", 2)) return 0;
    v += 2;
    c->vw = small_int(&v, 2);
    if (strncmp(v, want_a, 3)) return 0;
    v += 3;
    c->a = small_int(&v, 2);
    if (strncmp(v, want_b, 3)) return 0;
    v += 3;
    c->b = small_int(&v, 2);
    c->px = !strcmp(v, " px");
    c->ck = c->ph = c->tr = 0;
    if (pass == CLT_CONV_BWD_WEIGHTS) {
        /* required: the tuner always writes it */
        if (strncmp(v, " ck", 3)) return 0;
        v += 3;
        c->ck = small_int(&v, 3);
        if (c->ck == CLT_CONV_LANES_CHUNK_KIB_RULE) c->ck = 0;
        else if (c->ck <= 0) return 0;
        if (!strncmp(v, " ph", 3)) {
            c->ph = 1;
            v += 3;
        }
        if (!strcmp(v, " tr")) {
            c->tr = lp->gk.k;
            v += 3;
        }
    }
    if ((*v && !c->px) || c->vw < 0 || c->a < 0 || c->b < 0 || !clt_conv_lanes_cfg_ok(lp, pass, c)) return 0;
    /* the block is a candidate; its chunk target and phases, checked
     * above, are not part of one */
    clt_conv_lanes_cfg block = *c, cand[MAX_CANDIDATES];
    block.ck = block.ph = 0;
    int n = clt_conv_lanes_candidates(dev, lp, pass, cand, MAX_CANDIDATES);
    for (int i = 0; i < n; i++)
        if (!memcmp(&cand[i], &block, sizeof block)) return 1;
    return 0;
}

/* Seconds of one run of pass with lp's configuration; the first call for
 * a configuration also compiles it (first = 1: a run first, untimed).
 * CLT_ERR_NOT_FOUND when its timing buffer would not fit the device. */
static clt_status time_cfg(clt_device *dev, const clt_conv_lanes_params *lp, int pass, int first, double *seconds)
{
    size_t bytes;
    CLT_TRY(clt_conv_lanes_time_pass(dev, lp, pass, NULL, &bytes));
    if (!clt_conv_fits(dev, bytes)) return clt_fail(CLT_ERR_NOT_FOUND, "tuning buffer of %zu bytes", bytes);
    cl_mem scratch;
    CLT_TRY(clt_device_scratch(dev, bytes, &scratch));
    if (first) {
        /* Zeros: no denormals or NaNs to slow the arithmetic. */
        CLT_TRY(clt_device_zero(dev, scratch, 0, bytes, "clEnqueueFillBuffer (tuning)"));
        CLT_TRY(clt_conv_lanes_time_pass(dev, lp, pass, scratch, &bytes));
    }
    CLT_TRY(clt_device_finish(dev));
    double t0 = clt_now();
    CLT_TRY(clt_conv_lanes_time_pass(dev, lp, pass, scratch, &bytes));
    CLT_TRY(clt_device_finish(dev));
    *seconds = clt_now() - t0;
    return CLT_OK;
}

/* The fastest of the n configurations cand for pass that fit, into
 * best[0], and the next fastest into best[1] (-1 when none): the best of
 * three runs each, taken in rounds over the candidates, so that a burst of
 * other load on the machine slows one run of each rather than every run of
 * one. A candidate that fails to build or run is logged and dropped: the
 * others still count; a lost device ends the tuning. */
#define ROUNDS 3
static clt_status fastest(clt_device *dev, const clt_conv_lanes_params *lp, int pass, unsigned mask,
                          const clt_conv_lanes_cfg *cand, int n, int best[2])
{
    clt_conv_lanes_params t[MAX_TIMED]; /* lp with each candidate, padding and chunks derived */
    double best_s[MAX_TIMED];
    int ok[MAX_TIMED];
    for (int i = 0; i < n; i++) {
        t[i] = *lp;
        t[i].cfg[pass] = cand[i];
        ok[i] = clt_conv_lanes_derive(dev, &t[i], mask);
    }
    clt_tune_hold_begin(dev); /* only the winner's binary goes to the on-disk cache */
    for (int r = 0; r < ROUNDS && !clt_device_interrupted(dev); r++) {
        for (int i = 0; i < n && !clt_device_interrupted(dev); i++) {
            if (!ok[i]) continue;
            double secs = 0;
            clt_status s = time_cfg(dev, &t[i], pass, r == 0, &secs);
            if (s == CLT_ERR_DEVICE_LOST) {
                clt_tune_hold_end(dev);
                return s;
            }
            if (s == CLT_OK && (r == 0 || secs < best_s[i])) best_s[i] = secs;
            if (s == CLT_OK && r < ROUNDS - 1) continue;
            char name[CLT_TUNE_VALUE_MAX], key[CLT_TUNE_KEY_MAX]; /* the shape too: passes interleave */
            format_cfg(pass, &cand[i], name, sizeof name);
            make_key(lp, pass, key, sizeof key);
            if (s != CLT_OK) {
                clt_device_log(dev, 0, "tuning device %d: %s: %s skipped: %s", clt_device_get_info(dev)->index, key,
                               name, clt_last_error());
                clt_clear_error();
                ok[i] = 0;
            } else {
                clt_device_log(dev, 0, "tuning device %d: %s: %s: %.3f ms", clt_device_get_info(dev)->index, key, name,
                               best_s[i] * 1e3);
            }
        }
    }
    clt_tune_hold_end(dev);
    best[0] = best[1] = -1;
    if (clt_device_interrupted(dev)) return CLT_OK; /* cut short: no choice */
    for (int i = 0; i < n; i++) {
        if (!ok[i]) continue;
        if (best[0] < 0 || best_s[i] < best_s[best[0]]) {
            best[1] = best[0];
            best[0] = i;
        } else if (best[1] < 0 || best_s[i] < best_s[best[1]]) {
            best[1] = i;
        }
    }
    return CLT_OK;
}

/* The fastest candidate for pass into lp->cfg[pass] (the rule's stays when
 * none could be timed); for the weight gradient, then the two fastest
 * blocks at the other chunk targets (cfg.ck) and, at stride 2, with x in
 * phases (cfg.ph) too, timed again together: the block that wins at the
 * rule's chunks is not always the one that wins at others (Intel's
 * runtime, ResNet-18's 64->128 k3 s2: wa2 wb5 at 512 KiB, wa3 wb4
 * faster at 128 KiB in phases). */
static clt_status measure(clt_device *dev, clt_conv_lanes_params *lp, int pass, unsigned mask)
{
    clt_conv_lanes_cfg cand[MAX_TIMED];
    int n = clt_conv_lanes_candidates(dev, lp, pass, cand, MAX_CANDIDATES), best[2];
    CLT_TRY(fastest(dev, lp, pass, mask, cand, n, best));
    if (best[0] < 0) return CLT_OK;
    lp->cfg[pass] = cand[best[0]];
    if (pass == CLT_CONV_BWD_WEIGHTS) {
        static const int kib[] = CLT_CONV_LANES_CHUNK_KIB;
        _Static_assert(2 * 2 * (1 + sizeof kib / sizeof kib[0]) <= MAX_TIMED, "blocks x layouts x chunk targets");
        clt_conv_lanes_cfg blocks[2] = {cand[best[0]], best[1] >= 0 ? cand[best[1]] : cand[best[0]]};
        n = 0;
        for (int b = 0; b < (best[1] >= 0 ? 2 : 1); b++)
            for (int ph = 0; ph <= clt_conv_lanes_can_phase(lp); ph++)
                for (int i = -1; i < (int)(sizeof kib / sizeof kib[0]); i++) { /* -1: the rule's */
                    cand[n] = blocks[b];
                    cand[n].ck = i < 0 ? 0 : kib[i];
                    cand[n++].ph = ph;
                }
        CLT_TRY(fastest(dev, lp, pass, mask, cand, n, best));
        if (best[0] >= 0) lp->cfg[pass] = cand[best[0]];
    }
    char spec[64];
    clt_conv_lanes_program(pass, &lp->cfg[pass], spec, sizeof spec);
    return clt_device_keep_program(dev, spec);
}

clt_status clt_conv_lanes_tune(clt_device *dev, clt_conv_plan *plan)
{
    /* AUTO: CPU devices (where lanes is the default; a simulator or a GPU
     * forced onto lanes keeps the rule) with a cache to keep the result */
    if (!clt_tune_wanted(dev, 1)) return CLT_OK;
    clt_conv_lanes_params *lp = &plan->lanes;
    unsigned mask = 0;
    for (int p = 0; p < CLT_CONV_PASSES; p++)
        if (plan->algo[p] == &clt_conv_lanes || plan->pool_algo[p] == &clt_conv_lanes) mask |= CLT_CONV_PASS(p);
    for (int p = 0; p < CLT_CONV_PASSES; p++) {
        if (!(mask & CLT_CONV_PASS(p)) || lp->tuned[p]) continue;
        /* CLTRAIN_CONV_BWDW forces the backward-weights block: nothing to measure. */
        if (p == CLT_CONV_BWD_WEIGHTS && clt_device_get_settings(dev)->conv_bwdw_a > 0) continue;
        char key[CLT_TUNE_KEY_MAX], value[CLT_TUNE_VALUE_MAX];
        make_key(lp, p, key, sizeof key);
        clt_conv_lanes_cfg c;
        if (clt_tune_lookup(dev, key, value, sizeof value) && parse_cfg(dev, lp, p, value, &c)) {
            clt_conv_lanes_params t = *lp;
            t.cfg[p] = c;
            if (clt_conv_lanes_derive(dev, &t, mask)) {
                lp->cfg[p] = c;
                lp->tuned[p] = 1;
                continue;
            }
        }
        /* an interrupt: the rule's choice for this pass and the rest, unkept */
        if (clt_device_interrupted(dev)) {
            clt_tune_cut(dev);
            break;
        }
        clt_tune_announce(dev);
        clt_conv_lanes_cfg rule = lp->cfg[p];
        CLT_TRY(measure(dev, lp, p, mask));
        if (clt_device_interrupted(dev)) { /* cut short: not a measurement */
            lp->cfg[p] = rule;
            clt_tune_cut(dev);
            break;
        }
        lp->tuned[p] = 1;
        format_cfg(p, &lp->cfg[p], value, sizeof value);
        CLT_TRY(clt_tune_store(dev, key, value));
    }
    if (!clt_conv_lanes_derive(dev, lp, mask))
        return clt_fail(CLT_ERR_INTERNAL, "conv2d plan: the tuned configuration no longer fits");
    return CLT_OK;
}

void clt_conv_lanes_describe(const clt_conv_plan *plan, int pass, char *buf, size_t cap)
{
    if (!plan || pass < 0 || pass >= CLT_CONV_PASSES || plan->algo[pass] != &clt_conv_lanes) {
        if (cap) buf[0] = 0;
        return;
    }
    char c[CLT_TUNE_VALUE_MAX];
    format_cfg(pass, &plan->lanes.cfg[pass], c, sizeof c);
    snprintf(buf, cap, "%s%s", c, plan->lanes.tuned[pass] ? " tuned" : "");
}
