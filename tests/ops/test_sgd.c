/* SGD against PyTorch's update formulas over several steps (momentum and
 * weight decay; momentum 0 with and without a velocity buffer), replicas on
 * two devices bit-identical, and argument errors. */
#include <string.h>

#include "check.h"
#include "ref_misc.h"

static uint64_t rng = 0x5eed0005;

typedef struct { float lr, m, wd; int with_v; } config;

/* A double-precision PyTorch step, to bound the float roundings too. */
static void sgd_double(double *w, const float *g, double *v, size_t n, double lr, double m, double wd)
{
    for (size_t i = 0; i < n; i++) {
        double gp = g[i] + wd * w[i];
        v[i] = m != 0 ? m * v[i] + gp : gp;
        w[i] -= lr * v[i];
    }
}

static void check_sgd(clt_device *dev, clt_device *dev1, int64_t count, config c)
{
    size_t n = (size_t)count;
    float *w = ref_misc_alloc(n, 4), *v = ref_misc_alloc(n, 4), *g = ref_misc_alloc(n, 4);
    double *wd = ref_misc_alloc(n, 8), *vd = ref_misc_alloc(n, 8);
    ref_misc_fill(w, n, &rng, -1, 1);
    for (size_t i = 0; i < n; i++) wd[i] = w[i];
    clt_tensor *tw = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, &count, w);
    clt_tensor *tg = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, &count, NULL);
    clt_tensor *tv = c.with_v ? ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, &count, NULL) : NULL; /* zeros */
    clt_tensor *tw1 = NULL, *tg1 = NULL, *tv1 = NULL;
    if (dev1) {
        tw1 = ref_misc_tensor(dev1, CLT_DTYPE_FLOAT32, 1, &count, w);
        tg1 = ref_misc_tensor(dev1, CLT_DTYPE_FLOAT32, 1, &count, NULL);
        tv1 = c.with_v ? ref_misc_tensor(dev1, CLT_DTYPE_FLOAT32, 1, &count, NULL) : NULL;
    }
    if (tv) ref_misc_poison(tv); /* momentum 0 must not read it; momentum > 0 tests start from zeros */
    if (tv && c.m != 0) CHECK_OK(clt_tensor_fill(tv, 0.0f));
    if (tv1) CHECK_OK(clt_tensor_fill(tv1, 0.0f));
    for (int step = 0; step < 5; step++) {
        ref_misc_fill(g, n, &rng, -2, 2);
        CHECK_OK(clt_tensor_upload(tg, g, count));
        CHECK_OK(clt_sgd_step(tw, tg, tv, c.lr, c.m, c.wd));
        if (dev1) {
            CHECK_OK(clt_tensor_upload(tg1, g, count));
            CHECK_OK(clt_sgd_step(tw1, tg1, tv1, c.lr, c.m, c.wd));
        }
        ref_misc_sgd(w, g, c.with_v || c.m != 0 ? v : NULL, n, c.lr, c.m, c.wd);
        sgd_double(wd, g, vd, n, c.lr, c.m, c.wd);
    }
    float *gw = ref_misc_download(tw);
    size_t diff = 0;
    for (size_t i = 0; i < n; i++) diff += memcmp(&gw[i], &w[i], 4) != 0;
    CHECK(diff == 0, "sgd n=%zu lr %g m %g wd %g%s: %zu of %zu weights differ from PyTorch's float roundings", n,
          c.lr, c.m, c.wd, c.with_v ? " +v" : "", diff, n);
    /* Relative to the largest weight: float roundings of 5 steps stay far
     * below an indexing or formula error. */
    double worst = 0, scale = 1e-6;
    for (size_t i = 0; i < n; i++) {
        worst = fmax(worst, fabs(gw[i] - wd[i]));
        scale = fmax(scale, fabs(wd[i]));
    }
    CHECK(worst / scale < 2e-6, "sgd n=%zu lr %g m %g wd %g: rel err against double %g", n, c.lr, c.m, c.wd,
          worst / scale);
    if (tv) {
        float *gv = ref_misc_download(tv);
        CHECK(memcmp(gv, v, n * 4) == 0, "sgd velocity differs (m %g)", c.m);
        free(gv);
    }
    if (dev1) {
        float *gw1 = ref_misc_download(tw1);
        CHECK(memcmp(gw, gw1, n * 4) == 0, "sgd replicas on two devices differ");
        free(gw1);
    }
    free(w), free(v), free(g), free(wd), free(vd), free(gw);
    clt_tensor_destroy(tw), clt_tensor_destroy(tg), clt_tensor_destroy(tv);
    clt_tensor_destroy(tw1), clt_tensor_destroy(tg1), clt_tensor_destroy(tv1);
}

static void check_errors(clt_device *dev, clt_device *dev1)
{
    int64_t a[2] = {3, 4}, b[2] = {4, 3};
    clt_tensor *w = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, a, NULL);
    clt_tensor *g = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, a, NULL);
    clt_tensor *gb = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, b, NULL);
    clt_tensor *wi = ref_misc_tensor(dev, CLT_DTYPE_INT32, 2, a, NULL);
    clt_status s = clt_sgd_step(w, g, NULL, 0.1f, 0.9f, 0.0f);
    CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("velocity", "momentum", NULL), "no velocity: %s %s",
          clt_status_name(s), clt_last_error());
    s = clt_sgd_step(w, gb, NULL, 0.1f, 0.0f, 0.0f);
    CHECK(s == CLT_ERR_SHAPE && ref_misc_error_has("grad", "(4, 3)", "(3, 4)"), "grad shape: %s %s",
          clt_status_name(s), clt_last_error());
    s = clt_sgd_step(w, g, gb, 0.1f, 0.9f, 0.0f);
    CHECK(s == CLT_ERR_SHAPE && ref_misc_error_has("velocity", "(4, 3)", NULL), "velocity shape: %s %s",
          clt_status_name(s), clt_last_error());
    s = clt_sgd_step(wi, g, NULL, 0.1f, 0.0f, 0.0f);
    CHECK(s == CLT_ERR_SHAPE && ref_misc_error_has("param", "int32", NULL), "int32 param: %s %s",
          clt_status_name(s), clt_last_error());
    s = clt_sgd_step(w, g, NULL, -0.1f, 0.0f, 0.0f);
    CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("learning rate", NULL, NULL), "negative lr: %s",
          clt_last_error());
    s = clt_sgd_step(w, g, NULL, NAN, 0.0f, 0.0f);
    CHECK(s == CLT_ERR_INVALID_ARG, "NaN lr: %s", clt_status_name(s));
    s = clt_sgd_step(w, g, g, 0.1f, -0.5f, 0.0f);
    CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("momentum", NULL, NULL), "negative momentum: %s",
          clt_last_error());
    s = clt_sgd_step(w, g, NULL, 0.1f, 0.0f, INFINITY);
    CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("weight decay", NULL, NULL), "inf wd: %s",
          clt_last_error());
    s = clt_sgd_step(NULL, g, NULL, 0.1f, 0.0f, 0.0f);
    CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("param is NULL", NULL, NULL), "NULL param: %s",
          clt_last_error());
    s = clt_sgd_step(w, NULL, NULL, 0.1f, 0.0f, 0.0f);
    CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("grad is NULL", NULL, NULL), "NULL grad: %s",
          clt_last_error());
    if (dev1) {
        clt_tensor *v1 = ref_misc_tensor(dev1, CLT_DTYPE_FLOAT32, 2, a, NULL);
        s = clt_sgd_step(w, g, v1, 0.1f, 0.9f, 0.0f);
        CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("different devices", NULL, NULL),
              "other device: %s %s", clt_status_name(s), clt_last_error());
        clt_tensor_destroy(v1);
    }
    clt_tensor_destroy(w), clt_tensor_destroy(g), clt_tensor_destroy(gb), clt_tensor_destroy(wi);
}

int main(void)
{
    int count = test_need_devices(1);
    clt_device *dev = NULL, *dev1 = NULL;
    REQUIRE_OK(clt_device_open(0, &dev));
    if (count > 1) REQUIRE_OK(clt_device_open(1, &dev1));
    const config configs[] = {
        {0.1f, 0.9f, 5e-4f, 1},  /* momentum and weight decay */
        {0.01f, 0.5f, 0.0f, 1},  /* momentum only */
        {0.2f, 0.0f, 0.0f, 0},   /* plain, velocity NULL */
        {0.05f, 0.0f, 1e-2f, 0}, /* weight decay, velocity NULL */
        {0.05f, 0.0f, 1e-2f, 1}, /* momentum 0 with a buffer: v = g', never read */
    };
    const int64_t sizes[] = {1, 1000, 100003};
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) check_sgd(dev, dev1, sizes[i], configs[c]);
    check_errors(dev, dev1);
    clt_device_destroy(dev1);
    clt_device_destroy(dev);
    return test_result();
}
