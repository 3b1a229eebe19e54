/* The convolution's algorithms as a list, and the settings that choose
 * among them: CLTRAIN_CONV_ALGO (the algorithm a device runs; winograd
 * for the shapes it runs, the device's own choice for the rest),
 * CLTRAIN_CONV_BUDGET (its work buffer's limit), CLTRAIN_CONV_BWDW (a
 * forced lanes backward-weights block) and CLTRAIN_CONV_WINOGRAD (what
 * winograd's tuner may offer where it is not forced). conv.c plans and dispatches through
 * the list and its entries (conv_algo.h) without naming an algorithm.
 * runtime/ keeps the settings' values in clt_device_settings without
 * knowing what they mean, and calls clt_op_settings_from_env and
 * clt_op_settings_check (runtime/device.h) where it reads and replaces a
 * device's settings, so a bad value is refused when the device opens and by
 * clt_device_set_settings. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/conv_lanes.h"

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

/* The values of CLTRAIN_CONV_ALGO (unset or empty: auto). */
static const struct {
    const char *name;
    int algo;
} algo_names[] = {{"lanes", CLT_CONV_ALGO_LANES}, {"implicit", CLT_CONV_ALGO_IMPLICIT}, {"gemm", CLT_CONV_ALGO_GEMM},
                  {"winograd", CLT_CONV_ALGO_WINOGRAD}};

static clt_status parse_algo(const char *e, clt_device_settings *s)
{
    for (size_t i = 0; i < sizeof algo_names / sizeof algo_names[0]; i++)
        if (strcmp(e, algo_names[i].name) == 0) {
            s->conv_algo = algo_names[i].algo;
            return CLT_OK;
        }
    return clt_fail(CLT_ERR_INVALID_ARG, "CLTRAIN_CONV_ALGO=\"%s\": expected lanes, implicit, gemm or winograd", e);
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

static clt_status parse_winograd(const char *e, clt_device_settings *s)
{
    if (strcmp(e, "0") && strcmp(e, "2") && strcmp(e, "4"))
        return clt_fail(CLT_ERR_INVALID_ARG, "CLTRAIN_CONV_WINOGRAD=\"%s\": expected 0, 2 or 4", e);
    s->conv_winograd = e[0] == '0' ? CLT_WINOGRAD_NONE : e[0] == '2' ? CLT_WINOGRAD_F2 : CLT_WINOGRAD_F4;
    return CLT_OK;
}

clt_status clt_op_settings_from_env(clt_device_settings *s)
{
    static const clt_setting_var vars[] = {
        {"CLTRAIN_CONV_ALGO", parse_algo},
        {"CLTRAIN_CONV_BUDGET", parse_budget},
        {"CLTRAIN_CONV_BWDW", parse_bwdw},
        {"CLTRAIN_CONV_WINOGRAD", parse_winograd},
    };
    return clt_settings_parse_env(vars, sizeof vars / sizeof vars[0], s);
}

clt_status clt_op_settings_check(const clt_device_settings *s, const char *op)
{
    if (s->conv_algo < CLT_CONV_ALGO_AUTO || s->conv_algo > CLT_CONV_ALGO_WINOGRAD)
        return clt_fail(CLT_ERR_INVALID_ARG,
                        "%s: conv_algo %d (CLTRAIN_CONV_ALGO): expected auto, lanes, implicit, gemm or winograd",
                        op, s->conv_algo);
    if (s->conv_winograd < CLT_WINOGRAD_F2 || s->conv_winograd > CLT_WINOGRAD_F4)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: conv_winograd %d (CLTRAIN_CONV_WINOGRAD): expected CLT_WINOGRAD_*",
                        op, s->conv_winograd);
    char want[160];
    if ((s->conv_bwdw_a || s->conv_bwdw_b) && !bwdw_known(s->conv_bwdw_a, s->conv_bwdw_b))
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: backward-weights block %dx%d (CLTRAIN_CONV_BWDW): %s", op,
                        s->conv_bwdw_a, s->conv_bwdw_b, bwdw_expected(want, sizeof want));
    return CLT_OK;
}

clt_status clt_conv_uses_lanes(const clt_device *dev, int *yes)
{
    if (!dev || !yes) return clt_fail(CLT_ERR_INVALID_ARG, "clt_conv_uses_lanes: NULL argument");
    int algo = clt_device_get_settings(dev)->conv_algo;
    if (algo == CLT_CONV_ALGO_AUTO || algo == CLT_CONV_ALGO_WINOGRAD) /* winograd: AUTO's for other shapes */
        algo = clt_device_get_info(dev)->type == CLT_DEVICE_CPU ? CLT_CONV_ALGO_LANES : CLT_CONV_ALGO_IMPLICIT;
    *yes = algo == CLT_CONV_ALGO_LANES;
    return CLT_OK;
}

/* winograd's tuner last: it times the others' tuned choices */
const clt_conv_algo *const clt_conv_algos[CLT_CONV_ALGOS] = {&clt_conv_lanes, &clt_conv_direct, &clt_conv_implicit,
                                                            &clt_conv_gemm, &clt_conv_winograd};

size_t clt_conv_offered(const clt_device *dev, const clt_conv_algo *const **order)
{
    /* forced winograd: first, then the device's own order (skipping it) */
    static const clt_conv_algo *const lanes_order[] = {&clt_conv_winograd, &clt_conv_direct, &clt_conv_lanes,
                                                       &clt_conv_gemm};
    static const clt_conv_algo *const gpu_order[] = {&clt_conv_winograd, &clt_conv_implicit, &clt_conv_gemm};
    static const clt_conv_algo *const gemm_order[] = {&clt_conv_gemm};
    int lanes = 0, algo = clt_device_get_settings(dev)->conv_algo, skip = algo != CLT_CONV_ALGO_WINOGRAD;
    clt_conv_uses_lanes(dev, &lanes);
    *order = gpu_order + skip;
    size_t n = sizeof gpu_order / sizeof *gpu_order - (size_t)skip;
    if (lanes) *order = lanes_order + skip, n = sizeof lanes_order / sizeof *lanes_order - (size_t)skip;
    else if (algo == CLT_CONV_ALGO_GEMM) *order = gemm_order, n = 1;
    return n;
}
