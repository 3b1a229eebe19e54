/* A device's tuning settings: read from the environment and checked once
 * when the device opens (so no op reads the environment while it runs),
 * and replaced only through clt_device_set_settings. The ops read and check
 * their own (clt_op_settings_from_env, clt_op_settings_check); these are
 * runtime's, and the calls that bring both together. */
#include <stdlib.h>
#include <string.h>

#include "runtime/device.h"
#include "runtime/device_impl.h"

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

static clt_status parse_tf32(const char *e, clt_device_settings *s)
{
    if (strcmp(e, "emulate") == 0) {
        s->tf32 = CLT_TF32_EMULATE;
        return CLT_OK;
    }
    return parse_either("CLTRAIN_TF32", e, "0", CLT_TF32_OFF, "1", CLT_TF32_AUTO,
                        "0 (fp32 convolutions), 1 (TF32 where the device passed its probe) or emulate (tests)",
                        &s->tf32);
}

clt_status clt_settings_parse_env(const clt_setting_var *vars, size_t n, clt_device_settings *s)
{
    for (size_t i = 0; i < n; i++) {
        const char *e = getenv(vars[i].name);
        if (e && e[0]) CLT_TRY(vars[i].parse(e, s)); /* unset or empty: the default */
    }
    return CLT_OK;
}

clt_status clt_device_settings_from_env(clt_device_settings *s)
{
    static const clt_setting_var vars[] = {
        {"CLTRAIN_TUNE", parse_tune},
        {"CLTRAIN_FUSE", parse_fuse},
        {"CLTRAIN_SHARED_GRADS", parse_shared},
        {"CLTRAIN_TF32", parse_tf32},
    };
    memset(s, 0, sizeof *s);
    CLT_TRY(clt_op_settings_from_env(s));
    return clt_settings_parse_env(vars, sizeof vars / sizeof vars[0], s);
}

clt_status clt_device_set_settings(clt_device *dev, const clt_device_settings *s)
{
    if (!dev || !s) return clt_fail(CLT_ERR_INVALID_ARG, "clt_device_set_settings: NULL argument");
    CLT_TRY(clt_op_settings_check(s, "clt_device_set_settings"));
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
    if (s->tf32 < CLT_TF32_AUTO || s->tf32 > CLT_TF32_EMULATE)
        return clt_fail(CLT_ERR_INVALID_ARG,
                        "clt_device_set_settings: tf32 %d (CLTRAIN_TF32): expected auto, off or emulate", s->tf32);
    dev->settings = *s;
    dev->settings_version++;
    return CLT_OK;
}

const clt_device_settings *clt_device_get_settings(const clt_device *dev)
{
    return dev ? &dev->settings : NULL;
}

unsigned clt_device_settings_version(const clt_device *dev) { return dev->settings_version; }
