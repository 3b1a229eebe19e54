#include "ranges.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../common/args.h"
#include "optim/schedule.h"

#define INT_RANGE(o, k, a, b, z) {o, k, OPT_INT, a, b, 0, 0, 0, 0, z}
#define NUM_RANGE(o, k, t, a, lo_open, b, hi_open, z) {o, k, t, 0, 0, a, b, lo_open, hi_open, z}

const opt_range opt_ranges[] = {
    INT_RANGE(O_BATCH, "batch_size", 1, 1 << 20, 0),
    INT_RANGE(O_EPOCHS, "target_epochs", 1, 1000000, 1),
    INT_RANGE(O_STEPS, "target_steps", 1, INT64_MAX / 2, 1),
    INT_RANGE(O_SEED, "seed", 0, INT64_MAX, 0),
    INT_RANGE(O_LTRAIN, "limit_train", 1, INT32_MAX, 1),
    INT_RANGE(O_LTEST, NULL, 1, INT32_MAX, 0),
    NUM_RANGE(O_LR, "lr", OPT_FLOAT32, 0, 0, 1e6, 0, 0),
    NUM_RANGE(O_MOM, "momentum", OPT_FLOAT32, 0, 0, 1, 1, 0),
    NUM_RANGE(O_WD, "weight_decay", OPT_FLOAT32, 0, 0, 1e6, 0, 0),
    NUM_RANGE(O_BETAS, "beta1", OPT_FLOAT32, 0, 0, 1, 1, 0),
    NUM_RANGE(O_BETAS, "beta2", OPT_FLOAT32, 0, 0, 1, 1, 0),
    /* Adam divides by sqrt(v) + eps: with 0, a gradient of 0 makes NaN,
     * and so does a denormal on a device that flushes it to 0 */
    NUM_RANGE(O_EPS, "eps", OPT_FLOAT32, FLT_MIN, 0, 1, 0, 0),
    NUM_RANGE(O_CLIP, "clip_grad_norm", OPT_FLOAT32, 0, 1, 1e30, 0, 1),
    NUM_RANGE(O_SMOOTH, "label_smoothing", OPT_FLOAT32, 0, 0, 1, 1, 0),
    INT_RANGE(O_LR_STEP, "lr_step", 1, 1000000, 1),
    INT_RANGE(O_MILESTONES, NULL, 1, 1000000, 0),
    NUM_RANGE(O_GAMMA, "lr_gamma", OPT_DOUBLE, 0, 1, 1e6, 0, 0),
    NUM_RANGE(O_LR_MIN, "lr_min", OPT_DOUBLE, 0, 0, 1e6, 0, 0),
    INT_RANGE(O_WARM_STEPS, "warmup_steps", 1, INT64_MAX / 2, 1),
    INT_RANGE(O_WARM_EPOCHS, "warmup_epochs", 1, 1000000, 1),
    NUM_RANGE(O_VAL_SPLIT, "val_split", OPT_DOUBLE, 0.0001, 0, 0.9999, 0, 1),
    INT_RANGE(O_IMAGE_SIZE, "image_size", 1, 65535, 1),
    INT_RANGE(O_CHANNELS, "channels", 1, 3, 1),
    INT_RANGE(O_TOP, NULL, 1, 1000000, 0),
};
const int n_opt_ranges = (int)(sizeof opt_ranges / sizeof opt_ranges[0]);

const opt_range *opt_range_of(enum cli_opt opt)
{
    for (int i = 0; i < n_opt_ranges; i++)
        if (opt_ranges[i].opt == opt) return &opt_ranges[i];
    return NULL;
}

const char *opt_range_text(const opt_range *r, char *buf, size_t cap)
{
    if (r->kind == OPT_INT) snprintf(buf, cap, "%lld..%lld", (long long)r->ilo, (long long)r->ihi);
    else snprintf(buf, cap, "%c%.9g, %.9g%c", r->lo_open ? '(' : '[', r->lo, r->hi, r->hi_open ? ')' : ']');
    return buf;
}

int opt_range_holds(const opt_range *r, double v)
{
    double lo = r->lo, hi = r->hi;
    if (r->kind == OPT_FLOAT32) /* the value as the library gets it, against the ends as float32 holds them */
        v = (float)v, lo = (float)lo, hi = (float)hi;
    if (!isfinite(v)) return 0;
    if (r->kind == OPT_INT) return v >= (double)r->ilo && v <= (double)r->ihi;
    return (r->lo_open ? v > lo : v >= lo) && (r->hi_open ? v < hi : v <= hi);
}

static const char *name_of(enum cli_opt opt, char *buf, size_t cap)
{
    snprintf(buf, cap, "--%s", cli_option_name(opt));
    return buf;
}

int opt_parse_int(enum cli_opt opt, const char *text, int64_t *out)
{
    const opt_range *r = opt_range_of(opt);
    char range[64], name[48];
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (end == text || *end || errno || v < r->ilo || v > r->ihi)
        return usage_error("cltrain", "%s: \"%s\" is not an integer in %s", name_of(opt, name, sizeof name), text,
                           opt_range_text(r, range, sizeof range));
    *out = v;
    return 0;
}

int opt_parse_number(enum cli_opt opt, const char *text, double *out)
{
    const opt_range *r = opt_range_of(opt);
    char range[64], name[48];
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end || errno || !isfinite(v))
        return usage_error("cltrain", "%s: \"%s\" is not a number", name_of(opt, name, sizeof name), text);
    if (!opt_range_holds(r, v)) {
        if (r->kind == OPT_FLOAT32 && (double)(float)v != v && opt_range_holds(&(opt_range){.kind = OPT_DOUBLE,
                                                                       .lo = r->lo, .hi = r->hi, .lo_open = r->lo_open,
                                                                       .hi_open = r->hi_open}, v))
            return usage_error("cltrain", "%s: %s is %.9g in float32, outside %s", name_of(opt, name, sizeof name), text, (double)(float)v,
                               opt_range_text(r, range, sizeof range));
        return usage_error("cltrain", "%s: %s is outside %s", name_of(opt, name, sizeof name), text, opt_range_text(r, range, sizeof range));
    }
    *out = v;
    return 0;
}
