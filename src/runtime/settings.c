/* A device's tuning settings: CLTRAIN_CONV_* read and checked once when the
 * device opens (so no op reads the environment while it runs), and replaced
 * only through clt_device_set_settings. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/device.h"

static const int bwdw_blocks[][2] = CLT_CONV_BWDW_BLOCKS;
#define N_BWDW_BLOCKS (sizeof bwdw_blocks / sizeof bwdw_blocks[0])

/* "expected 5x5, 4x6, ... or 4x4", from the table. */
static const char *bwdw_expected(char *buf, size_t cap)
{
    size_t len = (size_t)snprintf(buf, cap, "expected");
    for (size_t i = 0; i < N_BWDW_BLOCKS && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%dx%d", i == 0 ? " " : i + 1 < N_BWDW_BLOCKS ? ", " : " or ",
                                bwdw_blocks[i][0], bwdw_blocks[i][1]);
    return buf;
}

static int bwdw_known(int a, int b)
{
    for (size_t i = 0; i < N_BWDW_BLOCKS; i++)
        if (bwdw_blocks[i][0] == a && bwdw_blocks[i][1] == b) return 1;
    return 0;
}

/* A variable that takes one of two words: *out = v0 or v1; anything else is
 * refused naming the variable, its value and `expected`. */
static clt_status parse_either(const char *name, const char *e, const char *w0, int v0, const char *w1, int v1,
                               const char *expected, int *out)
{
    if (strcmp(e, w0) == 0) *out = v0;
    else if (strcmp(e, w1) == 0) *out = v1;
    else return clt_fail(CLT_ERR_INVALID_ARG, "%s=\"%s\": expected %s", name, e, expected);
    return CLT_OK;
}

static clt_status parse_algo(const char *e, clt_device_settings *s)
{
    if (strcmp(e, "implicit") == 0) {
        s->conv_algo = CLT_CONV_ALGO_IMPLICIT;
        return CLT_OK;
    }
    return parse_either("CLTRAIN_CONV_ALGO", e, "lanes", CLT_CONV_ALGO_LANES, "gemm", CLT_CONV_ALGO_GEMM,
                        "lanes, implicit or gemm", &s->conv_algo);
}

static clt_status parse_budget(const char *e, clt_device_settings *s)
{
    char *end;
    errno = 0;
    unsigned long long v = e[0] >= '0' && e[0] <= '9' ? strtoull(e, &end, 10) : 0;
    if (v == 0 || *end != 0 || errno == ERANGE || v > (unsigned long long)SIZE_MAX)
        return clt_fail(CLT_ERR_INVALID_ARG,
                        "CLTRAIN_CONV_BUDGET=\"%s\": expected a positive number of bytes", e);
    s->conv_budget = (size_t)v;
    return CLT_OK;
}

static clt_status parse_bwdw(const char *e, clt_device_settings *s)
{
    for (size_t i = 0; i < N_BWDW_BLOCKS; i++) {
        char name[8];
        snprintf(name, sizeof name, "%dx%d", bwdw_blocks[i][0], bwdw_blocks[i][1]);
        if (strcmp(e, name) == 0) {
            s->conv_bwdw_a = bwdw_blocks[i][0];
            s->conv_bwdw_b = bwdw_blocks[i][1];
            return CLT_OK;
        }
    }
    char want[160];
    return clt_fail(CLT_ERR_INVALID_ARG, "CLTRAIN_CONV_BWDW=\"%s\": %s", e, bwdw_expected(want, sizeof want));
}

static clt_status parse_tune(const char *e, clt_device_settings *s)
{
    if (strcmp(e, "again") == 0) {
        s->tune = CLT_TUNE_AGAIN;
        return CLT_OK;
    }
    return parse_either("CLTRAIN_TUNE", e, "0", CLT_TUNE_OFF, "1", CLT_TUNE_ON,
                        "0 (rule-based kernels), 1 (tune) or again (tune, replacing kept choices)", &s->tune);
}

static clt_status parse_fuse(const char *e, clt_device_settings *s)
{
    return parse_either("CLTRAIN_FUSE", e, "0", 1, "1", 0,
                        "0 (activations, poolings and residual adds run alone) or 1 (fused)", &s->no_fuse);
}

static clt_status parse_shared(const char *e, clt_device_settings *s)
{
    return parse_either("CLTRAIN_SHARED_GRADS", e, "0", 1, "1", 0,
                        "0 (gradients copied through host staging) or 1 (shared where the device can)",
                        &s->no_shared_grads);
}

clt_status clt_device_settings_from_env(clt_device_settings *s)
{
    static const struct {
        const char *name;
        clt_status (*parse)(const char *value, clt_device_settings *s);
    } vars[] = {
        {"CLTRAIN_CONV_ALGO", parse_algo},
        {"CLTRAIN_CONV_BUDGET", parse_budget},
        {"CLTRAIN_CONV_BWDW", parse_bwdw},
        {"CLTRAIN_TUNE", parse_tune},
        {"CLTRAIN_FUSE", parse_fuse},
        {"CLTRAIN_SHARED_GRADS", parse_shared},
    };
    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *e = getenv(vars[i].name);
        if (e && e[0]) CLT_TRY(vars[i].parse(e, s)); /* unset or empty: the default */
    }
    return CLT_OK;
}

clt_status clt_device_set_settings(clt_device *dev, const clt_device_settings *s)
{
    if (!dev || !s) return clt_fail(CLT_ERR_INVALID_ARG, "clt_device_set_settings: NULL argument");
    if (s->conv_algo < CLT_CONV_ALGO_AUTO || s->conv_algo > CLT_CONV_ALGO_IMPLICIT)
        return clt_fail(CLT_ERR_INVALID_ARG,
                        "clt_device_set_settings: conv_algo %d (CLTRAIN_CONV_ALGO): "
                        "expected auto, lanes, implicit or gemm",
                        s->conv_algo);
    if (s->tune < CLT_TUNE_AUTO || s->tune > CLT_TUNE_AGAIN)
        return clt_fail(CLT_ERR_INVALID_ARG,
                        "clt_device_set_settings: tune %d (CLTRAIN_TUNE): expected auto, off, on or again", s->tune);
    if (s->no_fuse != 0 && s->no_fuse != 1)
        return clt_fail(CLT_ERR_INVALID_ARG, "clt_device_set_settings: no_fuse %d (CLTRAIN_FUSE): expected 0 or 1",
                        s->no_fuse);
    if (s->no_shared_grads != 0 && s->no_shared_grads != 1)
        return clt_fail(CLT_ERR_INVALID_ARG,
                        "clt_device_set_settings: no_shared_grads %d (CLTRAIN_SHARED_GRADS): expected 0 or 1",
                        s->no_shared_grads);
    char want[160];
    if ((s->conv_bwdw_a || s->conv_bwdw_b) && !bwdw_known(s->conv_bwdw_a, s->conv_bwdw_b))
        return clt_fail(CLT_ERR_INVALID_ARG,
                        "clt_device_set_settings: backward-weights block %dx%d (CLTRAIN_CONV_BWDW): %s",
                        s->conv_bwdw_a, s->conv_bwdw_b, bwdw_expected(want, sizeof want));
    dev->settings = *s;
    dev->settings_version++;
    return CLT_OK;
}

const clt_device_settings *clt_device_get_settings(const clt_device *dev)
{
    return dev ? &dev->settings : NULL;
}
