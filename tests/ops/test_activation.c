/* ReLU, sigmoid, tanh: forward and backward against the plain-C reference
 * (odd sizes, the models' activations, in place), finite differences,
 * saturation without NaN, errors. */
#include <string.h>

#include "op_harness.h"
#include "ref_misc.h"

static uint64_t rng = 0x5eed0002;
static const char *const names[] = {"relu", "sigmoid", "tanh"};

static void check_act(clt_device *dev, clt_activation f, int64_t count)
{
    size_t n = (size_t)count;
    float *x = ref_misc_alloc(n, sizeof *x), *dy = ref_misc_alloc(n, sizeof *dy);
    ref_misc_fill(x, n, &rng, -6, 6);
    ref_misc_fill(dy, n, &rng, -1, 1);
    for (size_t i = 0; i < n; i += 7) x[i] = 0.0f; /* relu's kink: gradient 0 there */
    float *ry = ref_misc_alloc(n, sizeof *ry), *rdx = ref_misc_alloc(n, sizeof *rdx);
    ref_misc_act_forward(f, x, n, ry);

    clt_tensor *tx = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, &count, x);
    clt_tensor *ty = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, &count, NULL);
    clt_tensor *tdy = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, &count, dy);
    clt_tensor *tdx = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, &count, NULL);
    ref_misc_poison(ty);
    ref_misc_poison(tdx);
    CHECK_OK(clt_activation_forward(f, tx, ty));
    float *y = ref_misc_download(ty);
    double e = max_rel_err(ry, y, n);
    CHECK(e < (f == CLT_ACT_RELU ? 0 : 2e-6) + 1e-12, "%s forward (%lld): rel err %g", names[f], (long long)count, e);
    /* The backward is a function of the device's y. */
    ref_misc_act_backward(f, y, dy, n, rdx);
    CHECK_OK(clt_activation_backward(f, ty, tdy, tdx));
    float *dx = ref_misc_download(tdx);
    e = max_rel_err(rdx, dx, n);
    CHECK(e < 1e-6, "%s backward (%lld): rel err %g", names[f], (long long)count, e);

    /* In place: y = x, dx = dy. */
    CHECK_OK(clt_activation_forward(f, tx, tx));
    float *y2 = ref_misc_download(tx);
    CHECK(memcmp(y, y2, n * sizeof *y) == 0, "%s forward in place differs", names[f]);
    CHECK_OK(clt_activation_backward(f, tx, tdy, tdy));
    float *dx2 = ref_misc_download(tdy);
    CHECK(memcmp(dx, dx2, n * sizeof *dx) == 0, "%s backward in place differs", names[f]);

    free(x), free(dy), free(ry), free(rdx), free(y), free(dx), free(y2), free(dx2);
    clt_tensor_destroy(tx), clt_tensor_destroy(ty), clt_tensor_destroy(tdy), clt_tensor_destroy(tdx);
}

/* L = sum r * f(x): backward(y, r) against central differences of the
 * device forward, on a 3-D tensor. */
static void fd_act(clt_device *dev, clt_activation f)
{
    int64_t shape[3] = {2, 3, 5};
    size_t n = 30;
    float x[30], r[30], xp[30];
    ref_misc_fill(x, n, &rng, -2, 2);
    ref_misc_fill(r, n, &rng, -1, 1);
    for (size_t i = 0; i < n; i++)
        if (fabsf(x[i]) < 0.1f) x[i] += 0.2f; /* away from relu's kink */
    clt_tensor *tx = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 3, shape, x);
    clt_tensor *ty = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 3, shape, NULL);
    clt_tensor *tr = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 3, shape, r);
    clt_tensor *tdx = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 3, shape, NULL);
    CHECK_OK(clt_activation_forward(f, tx, ty));
    CHECK_OK(clt_activation_backward(f, ty, tr, tdx));
    float *dx = ref_misc_download(tdx);
    const float eps = 1e-2f;
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double l[2];
        for (int side = 0; side < 2; side++) {
            memcpy(xp, x, sizeof xp);
            xp[i] += side ? -eps : eps;
            CHECK_OK(clt_tensor_upload(tx, xp, (int64_t)n));
            CHECK_OK(clt_activation_forward(f, tx, ty));
            float *y = ref_misc_download(ty);
            l[side] = 0;
            for (size_t j = 0; j < n; j++) l[side] += (double)r[j] * y[j];
            free(y);
        }
        double fd = (l[0] - l[1]) / (2.0 * eps);
        double err = fabs(fd - dx[i]) / (fabs(fd) + 1e-2);
        if (err > worst) worst = err;
    }
    /* Central differences are O(eps^2) accurate: 1e-4 relative here. */
    CHECK(worst < 2e-3, "%s finite differences: worst rel err %g", names[f], worst);
    free(dx);
    clt_tensor_destroy(tx), clt_tensor_destroy(ty), clt_tensor_destroy(tr), clt_tensor_destroy(tdx);
}

/* Huge inputs saturate (0/1, -1/1) and their gradients vanish, no NaN. */
static void check_saturation(const op_env *e)
{
    clt_device *dev = e->dev;
    float x[6] = {-1e4f, -100.0f, -88.8f, 88.8f, 100.0f, 1e30f};
    int64_t n = 6;
    clt_tensor *tx = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, &n, x);
    clt_tensor *ty = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, &n, NULL);
    clt_tensor *tdx = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, &n, NULL);
    clt_tensor *ones = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, &n, NULL);
    CHECK_OK(clt_tensor_fill(ones, 1.0f));
    for (int f = 1; f <= 2; f++) {
        float y[6], dx[6];
        CHECK_OK(clt_activation_forward((clt_activation)f, tx, ty));
        CHECK_OK(clt_activation_backward((clt_activation)f, ty, ones, tdx));
        CHECK_OK(clt_tensor_download(ty, y, n));
        CHECK_OK(clt_tensor_download(tdx, dx, n));
        float lo = f == CLT_ACT_SIGMOID ? 0.0f : -1.0f;
        for (int i = 0; i < 6; i++) {
            float want = x[i] < 0 ? lo : 1.0f;
            CHECK(isfinite(y[i]) && fabsf(y[i] - want) < 1e-6f, "%s(%g) = %g", names[f], x[i], y[i]);
            CHECK(isfinite(dx[i]) && fabsf(dx[i]) < 1e-6f, "%s'(%g) = %g", names[f], x[i], dx[i]);
        }
    }
    /* NaN propagates through every forward (as PyTorch), and ReLU's
     * gradient is 0 where y <= 0 even for a NaN dy. */
    float nanx[6] = {NAN, -1.0f, 2.0f, NAN, NAN, 0.0f}, nany[6], nand[6];
    CHECK_OK(clt_tensor_upload(tx, nanx, n));
    for (int f = 0; f < 3; f++) {
        CHECK_OK(clt_activation_forward((clt_activation)f, tx, ty));
        CHECK_OK(clt_tensor_download(ty, nany, n));
        CHECK(isnan(nany[0]) && !isnan(nany[1]), "%s(NaN) = %g", names[f], nany[0]);
    }
    CHECK_OK(clt_activation_forward(CLT_ACT_RELU, tx, ty));
    CHECK_OK(clt_activation_backward(CLT_ACT_RELU, ty, tx, tdx)); /* dy = x: NaN at 0, 3, 4 */
    CHECK_OK(clt_tensor_download(tdx, nand, n));
    CHECK(nand[1] == 0.0f && nand[2] == 2.0f && nand[5] == 0.0f, "relu backward %g %g %g", nand[1], nand[2],
          nand[5]);
    clt_tensor_destroy(tx), clt_tensor_destroy(ty), clt_tensor_destroy(tdx), clt_tensor_destroy(ones);
}

static void check_errors(const op_env *e)
{
    clt_device *dev = e->dev, *dev1 = e->dev1;
    int64_t a[2] = {3, 4}, b[2] = {4, 3};
    clt_tensor *x = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, a, NULL);
    clt_tensor *y = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, b, NULL);
    clt_tensor *xi = ref_misc_tensor(dev, CLT_DTYPE_INT32, 2, a, NULL);
    clt_status s = clt_activation_forward(CLT_ACT_RELU, x, y);
    CHECK(s == CLT_ERR_SHAPE && ref_misc_error_has("clt_activation_forward", "(4, 3)", "(3, 4)"),
          "shape mismatch: %s %s", clt_status_name(s), clt_last_error());
    s = clt_activation_forward(CLT_ACT_RELU, xi, x);
    CHECK(s == CLT_ERR_SHAPE && ref_misc_error_has("x", "int32", NULL), "int32 x: %s %s", clt_status_name(s),
          clt_last_error());
    s = clt_activation_forward((clt_activation)9, x, x);
    CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("activation 9", NULL, NULL), "bad f: %s %s",
          clt_status_name(s), clt_last_error());
    s = clt_activation_forward(CLT_ACT_TANH, NULL, x);
    CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("x is NULL", NULL, NULL), "NULL x: %s", clt_last_error());
    s = clt_activation_forward(CLT_ACT_TANH, x, NULL);
    CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("y is NULL", NULL, NULL), "NULL y: %s", clt_last_error());
    s = clt_activation_backward(CLT_ACT_SIGMOID, x, y, x);
    CHECK(s == CLT_ERR_SHAPE && ref_misc_error_has("dy", "(4, 3)", NULL), "backward dy shape: %s %s",
          clt_status_name(s), clt_last_error());
    s = clt_activation_backward(CLT_ACT_SIGMOID, x, x, NULL);
    CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("dx is NULL", NULL, NULL), "NULL dx: %s", clt_last_error());
    if (dev1) {
        clt_tensor *x1 = ref_misc_tensor(dev1, CLT_DTYPE_FLOAT32, 2, a, NULL);
        s = clt_activation_forward(CLT_ACT_RELU, x, x1);
        CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("different devices", NULL, NULL),
              "other device: %s %s", clt_status_name(s), clt_last_error());
        s = clt_activation_backward(CLT_ACT_RELU, x, x1, x);
        CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("different devices", NULL, NULL),
              "backward other device: %s %s", clt_status_name(s), clt_last_error());
        clt_tensor_destroy(x1);
    }
    clt_tensor_destroy(x), clt_tensor_destroy(y), clt_tensor_destroy(xi);
}

static void check_sizes(const op_env *e)
{
    const int64_t sizes[] = {1, 63, 65, 4097, 100003};
    for (int f = 0; f < 3; f++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) check_act(e->dev, (clt_activation)f, sizes[i]);
}

/* Every activation of the builtin models, at batch 2. */
static void check_models(const op_env *e)
{
    clt_op_case *mc;
    int n = op_model_cases(CLT_OP_ACT, 2, &mc);
    for (int i = 0; i < n; i++) check_act(e->dev, mc[i].act, (int64_t)mc[i].n * mc[i].c * mc[i].h * mc[i].w);
    CHECK(n >= 3, "the models have %d activation shapes", n);
    free(mc);
}

static void check_fd(const op_env *e)
{
    for (int f = 0; f < 3; f++) fd_act(e->dev, (clt_activation)f);
}

static const op_test tests[] = {
    {"sizes", check_sizes},           {"models", check_models}, {"finite-differences", check_fd},
    {"saturation", check_saturation}, {"errors", check_errors},
};
OP_HARNESS_MAIN(tests)
