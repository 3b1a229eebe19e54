/* cltrain tune: the convolution kernels' tuning ahead of time. Each device
 * in turn (so one's timing does not disturb another's) runs one training
 * step of the model on synthetic data at its share of the batch, which
 * makes every plan and so measures every pass not yet in the cache (lanes
 * configurations on CPUs, algorithms and tiles on GPUs);
 * a later train, eval or bench on that device and driver spends no time
 * tuning. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cltrain_diag.h"
#include "core/clock.h"
#include "log.h"
#include "options.h"
#include "runtime/device.h"
#include "runtime/tune_cache.h"
#include "stop.h"

static const cli_accept tune_options[] = {
    {O_MODEL, NULL},
    {O_DEVICES, "device indices as cltrain-smi numbers them, tuned one after the other\n"
                "(default: all GPUs, else all CPUs)"},
    {O_BATCH, "the training batch over all devices; each tunes for its equal share (default 256)"},
    {O_INIT, NULL},
    {O_AGAIN, NULL},
    {O_PRECISION, "the choices of tf32 runs (default; TF32 tiles timed where the device passed its\n"
                  "probe) or of fp32 runs: kept apart, tune each precision you train with"},
    {O_END, NULL},
};

typedef struct tune_log {
    void *cli_user;
    int measured; /* the library's "tuning" notices */
} tune_log;

static void count_and_print(void *user, int level, const char *msg)
{
    tune_log *t = user;
    if (level == 1 && strstr(msg, "tuning the convolution kernels")) t->measured++;
    else cli_log(t->cli_user, level, msg);
}

static int tune_device(const cli_options *o, int d, int share, const float *images, const int32_t *labels)
{
    tune_log tl = {cli_log_user(), 0};
    clt_trainer_config cfg;
    clt_trainer_config_default(&cfg);
    cfg.spec = o->model;
    cfg.devices = &d;
    cfg.n_devices = 1;
    cfg.init = cli_init_for(o, o->model);
    cfg.precision = (clt_precision)o->precision;
    cfg.log = count_and_print;
    cfg.log_user = &tl;
    double t0 = clt_now();
    clt_trainer *t = NULL;
    if (clt_trainer_create(&cfg, &t) != CLT_OK) {
        fprintf(stderr, "cltrain: tune: device %d: %s\n", d, clt_last_error());
        return 1;
    }
    const clt_device *dev = clt_net_device(clt_trainer_net(t, 0));
    clt_tune_report r;
    clt_tune_outcome(dev, &r);
    if (!r.cache_enabled) { /* checked before any step: nothing measured for nothing */
        fprintf(stderr, "cltrain: tune: the cache is off (CLTRAIN_CACHE=0, or no CLTRAIN_CACHE_DIR, XDG_CACHE_HOME "
                        "or HOME): tuned choices would not be kept\n");
        clt_trainer_destroy(t);
        return 1;
    }
    if (clt_cache_check(dev) != CLT_OK) {
        fprintf(stderr, "cltrain: tune: device %d: %s: tuned choices would not be kept; set CLTRAIN_CACHE_DIR to a "
                        "writable directory\n", d, clt_last_error());
        clt_trainer_destroy(t);
        return 1;
    }
    stop_forward_to(t); /* Ctrl-C: the measuring ends, what was measured is kept */
    if (clt_trainer_step(t, images, labels, share, NULL, NULL) != CLT_OK) {
        stop_forward_to(NULL);
        fprintf(stderr, "cltrain: tune: device %d: %s\n", d, clt_last_error());
        clt_trainer_destroy(t);
        return 1;
    }
    int rc = 0;
    clt_tune_outcome(dev, &r); /* what the step measured, and kept */
    if (r.cut) {
        fprintf(stderr, "cltrain: tune: %s: device %d's tuning is incomplete (what was measured is kept); run cltrain "
                "tune again to finish it\n", stop_words(stop_requested()), d);
        rc = 128 + stop_requested();
    } else if (r.unkept) {
        fprintf(stderr, "cltrain: tune: device %d: %d tuned choice%s could not be kept in %s (%s): the next run "
                "measures %s again\n", d, r.unkept, r.unkept == 1 ? "" : "s", r.cache_dir, r.unkept_why,
                r.unkept == 1 ? "it" : "them");
        rc = 1;
    } else {
        printf("device %d (%s): %s in %.1f s, kept in %s\n", d, clt_device_get_info(dev)->name,
               tl.measured ? "tuned" : "already tuned (or nothing to tune)", clt_now() - t0, r.cache_dir);
    }
    stop_forward_to(NULL);
    clt_trainer_destroy(t);
    return rc;
}

int cli_tune(int argc, char **argv)
{
    cli_options o;
    cli_options_default(&o);
    int rc = cli_parse(&o, "tune", tune_options, argc, argv);
    if (rc < 0)
        printf("\nMeasures the convolution kernels' configurations for the model's shapes on each device, one\n"
               "device after the other, and keeps them in cltrain's cache directory (CLTRAIN_CACHE_DIR), so that\n"
               "training spends no time on it; without it, the first run on a device tunes at first use.\n"
               "A choice measured while other load slowed the machine can be slower than the best: --again\n"
               "(or CLTRAIN_TUNE=again) measures the model's shapes again in a quiet minute.\n"
               "CLTRAIN_TUNE=0 uses rule-based configurations instead.\n");
    if (rc) return rc < 0 ? 0 : rc;
    clt_device_settings env; /* the library's reading of CLTRAIN_TUNE (and the other settings) */
    if (clt_device_settings_from_env(&env) != CLT_OK) {
        fprintf(stderr, "cltrain: %s\n", clt_last_error());
        return 2;
    }
    if (env.tune == CLT_TUNE_OFF) {
        fprintf(stderr, "cltrain: tune: CLTRAIN_TUNE=0 turns tuning off; unset it to tune\n");
        return 2;
    }
    /* devices open after this: measure (the cache is checked below), again
     * where the cache keeps a choice with --again */
    setenv("CLTRAIN_TUNE", o.again || env.tune == CLT_TUNE_AGAIN ? "again" : "1", 1);
    int devs[CLT_MAX_DEVICES], n = 0;
    if ((rc = cli_resolve_devices(&o, devs, &n))) return rc;
    if (clt_spec_check(o.model, 1, 28, 28, NULL, 0) != CLT_OK) {
        fprintf(stderr, "cltrain: --model %.200s%s: %s\n", o.model, strlen(o.model) > 200 ? "..." : "",
                clt_last_error());
        return 2;
    }
    int share = (int)((o.batch_size + n - 1) / n);
    float *images;
    int32_t *labels;
    if ((rc = cli_synthetic_batch(o.model, (size_t)share, &images, &labels))) return rc;
    stop_arm();
    for (int i = 0; i < n && !rc; i++) {
        rc = tune_device(&o, devs[i], share, images, labels);
        if (!rc && stop_requested()) { /* asked after a device was done: the next is not begun */
            if (i + 1 < n)
                fprintf(stderr, "cltrain: tune: %s after device %d; the devices after it are not tuned\n",
                        stop_words(stop_requested()), devs[i]);
            rc = 128 + stop_requested();
        }
    }
    free(images);
    free(labels);
    return rc;
}
