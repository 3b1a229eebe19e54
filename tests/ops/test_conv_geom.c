/* Convolution geometry: clt_conv_geom_init (used by the nets with raw
 * buffers) and the raw launchers' refusal of a geometry it would not make;
 * and the plain-C reference's own adjoint (ref_conv.c), by finite
 * differences, which the device tests (test_conv.c) rely on. */
#include <math.h>

#include "op_harness.h"
#include "ops/conv.h"
#include "ref_conv.h"
#include "ref_misc.h"
#include "tensor/tensor.h"

static uint64_t rng = 0xc0417e58ull;

/* The call fails with `want`, and the detail mentions `needle`. */
#define EXPECT_ERR(want, needle, expr) op_expect_err((expr), (want), #expr, (needle), NULL)

/* L(x, w, b) = sum(y * r): its gradients are the backward with dy = r.
 * Central differences on the double reference check the reference's
 * adjoint loops (L is linear in each argument: the differences are exact
 * up to double rounding). */
static double loss64(const ref_conv_shape *r, const double *x, const double *w, const double *b,
                     const double *rr)
{
    size_t ny = ref_conv_y_size(r);
    double *y = ref_conv_alloc(ny, sizeof *y), l = 0;
    ref_conv_forward_f64(r, x, w, b, y);
    for (size_t i = 0; i < ny; i++) l += y[i] * rr[i];
    free(y);
    return l;
}

static void test_fd_reference(const op_env *env)
{
    (void)env;
    ref_conv_shape r;
    ref_conv_shape_init(&r, 2, 2, 5, 4, 3, 3, 2, 1);
    size_t nx = ref_conv_x_size(&r), nw = ref_conv_w_size(&r), ny = ref_conv_y_size(&r);
    size_t nb = (size_t)r.co;
    double *v[4], *g[3];
    size_t sizes[4] = {nx, nw, nb, ny};
    for (int i = 0; i < 4; i++) {
        v[i] = ref_conv_alloc(sizes[i], sizeof(double));
        for (size_t j = 0; j < sizes[i]; j++) v[i][j] = ref_conv_rand(&rng) % 2001 / 1000.0 - 1.0;
    }
    for (int i = 0; i < 3; i++) g[i] = ref_conv_alloc(sizes[i], sizeof(double));
    ref_conv_backward_f64(&r, v[0], v[1], v[3], g[0], g[1], g[2]);
    const double step = 1e-3;
    double worst = 0;
    for (int a = 0; a < 3; a++)
        for (size_t j = 0; j < sizes[a]; j++) {
            double keep = v[a][j];
            v[a][j] = keep + step;
            double lp = loss64(&r, v[0], v[1], v[2], v[3]);
            v[a][j] = keep - step;
            double lm = loss64(&r, v[0], v[1], v[2], v[3]);
            v[a][j] = keep;
            double fd = (lp - lm) / (2 * step), e = fabs(fd - g[a][j]);
            if (e > worst) worst = e;
            CHECK(e < 1e-8, "reference adjoint: argument %d element %zu: fd %.12g vs %.12g", a, j, fd,
                  g[a][j]);
        }
    CHECK(worst < 1e-8, "reference finite differences: worst %g", worst);
    for (int i = 0; i < 4; i++) free(v[i]);
    for (int i = 0; i < 3; i++) free(g[i]);
}

/* clt_conv_geom_init, used by the nets with raw buffers. */
static void test_geom(const op_env *e)
{
    (void)e;
    clt_conv_geom g;
    CHECK_OK(clt_conv_geom_init(&g, 4, 3, 28, 26, 8, 5, 2, 1));
    CHECK(g.oh == 13 && g.ow == 12, "geometry: output %dx%d, expected 13x12", g.oh, g.ow);
    CHECK_OK(clt_conv_geom_init(&g, 1, 1, 1, 1, 1, 1, 1, 0));
    CHECK(g.oh == 1 && g.ow == 1, "geometry: output %dx%d, expected 1x1", g.oh, g.ow);
    CHECK_OK(clt_conv_geom_init(&g, 1, 1, 3, 3, 1, 5, 7, 1));
    CHECK(g.oh == 1 && g.ow == 1, "geometry: output %dx%d, expected 1x1", g.oh, g.ow);
    EXPECT_ERR(CLT_ERR_SHAPE, "kernel size 0", clt_conv_geom_init(&g, 1, 1, 5, 5, 1, 0, 1, 0));
    EXPECT_ERR(CLT_ERR_SHAPE, "stride 0", clt_conv_geom_init(&g, 1, 1, 5, 5, 1, 3, 0, 0));
    EXPECT_ERR(CLT_ERR_SHAPE, "padding -1", clt_conv_geom_init(&g, 1, 1, 5, 5, 1, 3, 1, -1));
    EXPECT_ERR(CLT_ERR_SHAPE, "5x5 input", clt_conv_geom_init(&g, 1, 1, 5, 5, 1, 7, 1, 0));
    EXPECT_ERR(CLT_ERR_SHAPE, "5x2 input", clt_conv_geom_init(&g, 1, 1, 5, 2, 1, 3, 1, 0));
    EXPECT_ERR(CLT_ERR_SHAPE, "(0, 1, 5, 5)", clt_conv_geom_init(&g, 0, 1, 5, 5, 1, 3, 1, 0));
}

/* The raw launchers refuse a geometry clt_conv_geom_init would not make. */
static void test_raw_geom(const op_env *e)
{
    clt_device *dev = e->dev;
    clt_conv_geom g;
    REQUIRE_OK(clt_conv_geom_init(&g, 1, 1, 5, 5, 1, 3, 1, 0));
    int64_t xs[4] = {1, 1, 5, 5}, ws[4] = {1, 1, 3, 3}, ys[4] = {1, 1, 3, 3};
    clt_tensor *x = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 4, xs, NULL), *w = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 4, ws, NULL);
    clt_tensor *y = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 4, ys, NULL);
    CHECK_OK(clt_conv_forward_raw(dev, &g, x->buf, w->buf, NULL, NULL, y->buf));
    g.oh = 4; /* inconsistent */
    EXPECT_ERR(CLT_ERR_INVALID_ARG, "output 4x3", clt_conv_forward_raw(dev, &g, x->buf, w->buf, NULL, NULL, y->buf));
    EXPECT_ERR(CLT_ERR_INVALID_ARG, "clt_conv_geom_init",
               clt_conv_backward_raw(dev, &g, x->buf, w->buf, y->buf, NULL, x->buf, NULL, NULL));
    g.oh = 3;
    g.stride = 0;
    EXPECT_ERR(CLT_ERR_INVALID_ARG, "stride 0", clt_conv_forward_raw(dev, &g, x->buf, w->buf, NULL, NULL, y->buf));
    EXPECT_ERR(CLT_ERR_INVALID_ARG, "geometry", clt_conv_forward_raw(dev, NULL, x->buf, w->buf, NULL, NULL, y->buf));
    clt_tensor_destroy(x), clt_tensor_destroy(w), clt_tensor_destroy(y);
}

static const op_test tests[] = {
    {"geometry", test_geom},
    {"raw-geometry", test_raw_geom},
    {"reference-adjoint", test_fd_reference},
};
OP_HARNESS_MAIN(tests)
