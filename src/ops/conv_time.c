/* Timing whole plans of one pass against each other on the real shape,
 * for the tuners that choose between algorithms (conv_gpu_tune.c: implicit's
 * tiles and gemm; conv_winograd_tune.c: winograd against the tuned choice). */
#include "core/clock.h"
#include "ops/conv_algo.h"
#include "runtime/launch.h"
#include "runtime/tune_cache.h"

#define ROUNDS 3
#define RUNS 3 /* back to back per timing: GPU passes are short */

/* Seconds of RUNS runs of pass with t (first: one untimed run before, which builds its programs). */
static clt_status time_plan(clt_device *dev, const clt_conv_plan *t, int pass, const clt_conv_pass_bufs *b, int first,
                            double *seconds)
{
    if (first) CLT_TRY(clt_conv_run_pass(dev, t, pass, b));
    CLT_TRY(clt_device_finish(dev));
    double t0 = clt_now();
    for (int i = 0; i < RUNS; i++) CLT_TRY(clt_conv_run_pass(dev, t, pass, b));
    CLT_TRY(clt_device_finish(dev));
    *seconds = (clt_now() - t0) / RUNS;
    return CLT_OK;
}

/* The best of ROUNDS timings each, in rounds over the candidates, so that
 * a burst of other work slows one timing of each rather than every timing
 * of one. */
clt_status clt_conv_time_plans(clt_device *dev, int pass, const clt_conv_plan *t, int *ok, const char *const *names,
                               int n, int *best)
{
    double best_s[CLT_CONV_TIMED_MAX];
    *best = -1;
    if (n > CLT_CONV_TIMED_MAX) return clt_fail(CLT_ERR_INTERNAL, "conv2d tuning: %d candidates", n);
    clt_conv_pass_bufs b;
    size_t scratch_before = clt_device_scratch_size(dev);
    clt_status s = clt_conv_pass_bufs_make(dev, &t[0].g, pass, &b);
    if (s != CLT_OK) {
        /* no room for a second set of tensors: the rule's choice stays */
        clt_device_log(dev, 0, "tuning device %d: %s not timed: %s", clt_device_get_info(dev)->index,
                       clt_conv_pass_names[pass], clt_last_error());
        clt_clear_error();
        return CLT_OK;
    }
    for (int r = 0; r < ROUNDS && s != CLT_ERR_DEVICE_LOST && !clt_device_interrupted(dev); r++) {
        for (int i = 0; i < n && !clt_device_interrupted(dev); i++) {
            if (!ok[i]) continue;
            double secs = 0;
            s = time_plan(dev, &t[i], pass, &b, r == 0, &secs);
            if (s == CLT_ERR_DEVICE_LOST) break;
            if (s == CLT_OK && (r == 0 || secs < best_s[i])) best_s[i] = secs;
            if (s == CLT_OK && r < ROUNDS - 1) continue;
            if (s != CLT_OK) {
                clt_device_log(dev, 0, "tuning device %d: %s %s skipped: %s", clt_device_get_info(dev)->index,
                               clt_conv_pass_names[pass], names[i], clt_last_error());
                clt_clear_error();
                ok[i] = 0;
                s = CLT_OK;
            } else {
                clt_device_log(dev, 0, "tuning device %d: %s %s: %.3f ms", clt_device_get_info(dev)->index,
                               clt_conv_pass_names[pass], names[i], best_s[i] * 1e3);
            }
        }
    }
    clt_conv_pass_bufs_free(&b);
    if (s == CLT_ERR_DEVICE_LOST) return s;
    /* a candidate's timing grew the scratch buffer (gemm's im2col matrix,
     * winograd's transforms): give the memory back; the algorithm that runs
     * grows it again if it needs it */
    if (clt_device_scratch_size(dev) > scratch_before) clt_device_scratch_release(dev);
    if (clt_device_interrupted(dev)) return CLT_OK; /* cut short: no choice */
    for (int i = 0; i < n; i++)
        if (ok[i] && (*best < 0 || best_s[i] < best_s[*best])) *best = i;
    return CLT_OK;
}
