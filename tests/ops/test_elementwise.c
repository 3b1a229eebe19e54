/* The residual add: y = a + b against the exact sums (in place too) on an
 * odd shape and the models' shapes, and argument errors. */
#include <string.h>

#include "op_harness.h"
#include "ref_misc.h"

static uint64_t rng = 0x5eed00b9;

/* y = a + b exactly, and in place (y = a). */
static void check_add(clt_device *dev, int nd, const int64_t *xs)
{
    size_t n = 1;
    for (int i = 0; i < nd; i++) n *= (size_t)xs[i];
    float *a = ref_misc_alloc(n, sizeof *a), *b = ref_misc_alloc(n, sizeof *b);
    ref_misc_fill(a, n, &rng, -3, 3);
    ref_misc_fill(b, n, &rng, -3, 3);
    clt_tensor *ta = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, nd, xs, a);
    clt_tensor *tb = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, nd, xs, b);
    clt_tensor *ty = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, nd, xs, NULL);
    ref_misc_poison(ty);
    CHECK_OK(clt_add(ta, tb, ty));
    float *y = ref_misc_download(ty);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += y[i] != a[i] + b[i];
    CHECK(bad == 0, "add: %zu of %zu wrong", bad, n);
    CHECK_OK(clt_add(ta, tb, ta)); /* in place */
    float *y2 = ref_misc_download(ta);
    CHECK(memcmp(y, y2, n * sizeof *y) == 0, "add in place differs");
    free(a), free(b), free(y), free(y2);
    clt_tensor_destroy(ta), clt_tensor_destroy(tb), clt_tensor_destroy(ty);
}

static void check_odd(const op_env *e)
{
    const int64_t xs[4] = {3, 5, 7, 9};
    check_add(e->dev, 4, xs);
}

/* Every residual add of the builtin models (ResNet-18's four stages) at
 * batch 2. */
static void check_models(const op_env *e)
{
    clt_op_case *mc;
    int n = op_model_cases(CLT_OP_ADD, 2, &mc);
    for (int i = 0; i < n; i++) check_add(e->dev, 4, (const int64_t[]){mc[i].n, mc[i].c, mc[i].h, mc[i].w});
    CHECK(n == 4, "the models have %d residual-add shapes, expected ResNet-18's 4", n);
    free(mc);
}

#define EXPECT_ERR(call, code, a, b) op_expect_err((call), (code), #call, (a), (b))

static void check_errors(const op_env *e)
{
    int64_t xs[4] = {2, 3, 4, 4}, bad[4] = {2, 3, 4, 5};
    clt_tensor *x = ref_misc_tensor(e->dev, CLT_DTYPE_FLOAT32, 4, xs, NULL);
    clt_tensor *y = ref_misc_tensor(e->dev, CLT_DTYPE_FLOAT32, 4, xs, NULL);
    clt_tensor *xi = ref_misc_tensor(e->dev, CLT_DTYPE_INT32, 4, xs, NULL);
    clt_tensor *ybad = ref_misc_tensor(e->dev, CLT_DTYPE_FLOAT32, 4, bad, NULL);
    EXPECT_ERR(clt_add(x, ybad, y), CLT_ERR_SHAPE, "clt_add: b", "(2, 3, 4, 5)");
    EXPECT_ERR(clt_add(x, y, NULL), CLT_ERR_INVALID_ARG, "y is NULL", NULL);
    EXPECT_ERR(clt_add(xi, xi, xi), CLT_ERR_SHAPE, "int32", NULL);
    if (e->dev1) {
        clt_tensor *y1 = ref_misc_tensor(e->dev1, CLT_DTYPE_FLOAT32, 4, xs, NULL);
        EXPECT_ERR(clt_add(x, y1, y), CLT_ERR_INVALID_ARG, "different devices", NULL);
        clt_tensor_destroy(y1);
    }
    clt_tensor_destroy(x), clt_tensor_destroy(y), clt_tensor_destroy(xi), clt_tensor_destroy(ybad);
}

static const op_test tests[] = {
    {"odd", check_odd},
    {"models", check_models},
    {"errors", check_errors},
};
OP_HARNESS_MAIN(tests)
