/* Max / average pooling and global average pooling against the plain-C
 * reference on odd shapes (overlapping windows s < k, gaps s > k, batch 1,
 * ties) and the models' shapes, finite differences for average pooling and
 * gap, and argument errors. */
#include <string.h>

#include "op_harness.h"
#include "ops/conv.h"
#include "ops/pool.h"
#include "tensor/tensor.h"
#include "ref_misc.h"

static uint64_t rng = 0x5eed0001;

/* Max pooling without an argmax (inference: the layer's forward when it
 * does not train) gives y's bits, NaN and -0 included. */
static void check_values_only(clt_device *dev, const clt_tensor *tx, int k, int s, const clt_tensor *ty)
{
    clt_tensor *t2 = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 4, ty->shape, NULL);
    ref_misc_poison(t2);
    CHECK_OK(clt_pool_forward_raw(dev, CLT_POOL_MAX, (int)tx->shape[0], (int)tx->shape[1], (int)tx->shape[2],
                                  (int)tx->shape[3], k, s, tx->buf, t2->buf, NULL, CLT_POOL_ARGMAX_PLANE));
    float *y = ref_misc_download(ty), *y2 = ref_misc_download(t2);
    size_t ny = (size_t)(ty->shape[0] * ty->shape[1] * ty->shape[2] * ty->shape[3]);
    CHECK(memcmp(y, y2, ny * sizeof *y) == 0, "max pool k%d s%d without argmax: other values than with it", k, s);
    free(y), free(y2);
    clt_tensor_destroy(t2);
}

/* Max pooling with the layer's private argmax (packed where the row
 * kernels run: ops/pool.h, CLT_POOL_ARGMAX_PRIVATE), forward and backward
 * through the raw calls as the layer makes them: y and dx the bits of
 * the public (plane index) calls, y and dx. Under the device's own
 * settings, then with the lanes algorithm forced, so that a GPU runs the
 * packed row kernels too. */
static void check_private_once(clt_device *dev, const clt_tensor *tx, const clt_tensor *tdy, int k, int s,
                               const float *y, const float *dx)
{
    const int64_t *xs = tx->shape, *ys = tdy->shape;
    size_t nx = (size_t)(xs[0] * xs[1] * xs[2] * xs[3]), ny = (size_t)(ys[0] * ys[1] * ys[2] * ys[3]);
    clt_tensor *y2 = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 4, ys, NULL);
    clt_tensor *am = ref_misc_tensor(dev, CLT_DTYPE_INT32, 4, ys, NULL);
    clt_tensor *dx2 = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 4, xs, NULL);
    ref_misc_poison(y2), ref_misc_poison(am), ref_misc_poison(dx2);
    int n = (int)xs[0], c = (int)xs[1], h = (int)xs[2], w = (int)xs[3];
    CHECK_OK(clt_pool_forward_raw(dev, CLT_POOL_MAX, n, c, h, w, k, s, tx->buf, y2->buf, am->buf,
                                  CLT_POOL_ARGMAX_PRIVATE));
    CHECK_OK(clt_pool_backward_raw(dev, CLT_POOL_MAX, n, c, h, w, k, s, tdy->buf, am->buf, CLT_POOL_ARGMAX_PRIVATE,
                                   dx2->buf));
    float *yp = ref_misc_download(y2), *dxp = ref_misc_download(dx2);
    CHECK(memcmp(y, yp, ny * sizeof *y) == 0 && memcmp(dx, dxp, nx * sizeof *dx) == 0,
          "max pool %dx%dx%dx%d k%d s%d with the private argmax: other y or dx bits than with plane indices", n, c,
          h, w, k, s);
    free(yp), free(dxp);
    clt_tensor_destroy(y2), clt_tensor_destroy(am), clt_tensor_destroy(dx2);
}

static void check_private(clt_device *dev, const clt_tensor *tx, const clt_tensor *tdy, int k, int s,
                          const float *y, const float *dx)
{
    check_private_once(dev, tx, tdy, k, s, y, dx);
    clt_device_settings keep = *clt_device_get_settings(dev), lanes = keep;
    lanes.conv_algo = CLT_CONV_ALGO_LANES;
    REQUIRE_OK(clt_device_set_settings(dev, &lanes));
    check_private_once(dev, tx, tdy, k, s, y, dx);
    REQUIRE_OK(clt_device_set_settings(dev, &keep));
}

typedef struct { int n, c, h, w, k, s; } geom;

/* Forward and backward of one kind on one shape against the reference. */
static void check_pool(clt_device *dev, clt_pool_kind kind, geom g, int ties)
{
    int oh = (g.h - g.k) / g.s + 1, ow = (g.w - g.k) / g.s + 1;
    size_t nx = (size_t)g.n * g.c * g.h * g.w, ny = (size_t)g.n * g.c * oh * ow;
    float *x = ref_misc_alloc(nx, sizeof *x), *dy = ref_misc_alloc(ny, sizeof *dy);
    for (size_t i = 0; i < nx; i++)
        x[i] = ties ? (float)ref_misc_randint(&rng, 3) : ref_misc_uniform(&rng, -2, 2);
    ref_misc_fill(dy, ny, &rng, -1, 1);
    float *ry = ref_misc_alloc(ny, sizeof *ry), *rdx = ref_misc_alloc(nx, sizeof *rdx);
    int32_t *ram = ref_misc_alloc(ny, sizeof *ram);
    ref_misc_pool_forward(kind, x, g.n, g.c, g.h, g.w, g.k, g.s, ry, ram);
    ref_misc_pool_backward(kind, dy, ram, g.n, g.c, g.h, g.w, g.k, g.s, rdx);

    int64_t xs[4] = {g.n, g.c, g.h, g.w}, ys[4] = {g.n, g.c, oh, ow};
    clt_tensor *tx = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 4, xs, x);
    clt_tensor *ty = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 4, ys, NULL);
    clt_tensor *tam = ref_misc_tensor(dev, CLT_DTYPE_INT32, 4, ys, NULL);
    clt_tensor *tdy = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 4, ys, dy);
    clt_tensor *tdx = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 4, xs, NULL);
    ref_misc_poison(ty);
    ref_misc_poison(tdx); /* positions no window reads must come back 0 */
    const char *name = kind == CLT_POOL_MAX ? "max" : "avg";

    CHECK_OK(clt_pool2d_forward(kind, tx, g.k, g.s, ty, kind == CLT_POOL_MAX ? tam : NULL));
    float *y = ref_misc_download(ty);
    if (kind == CLT_POOL_MAX) {
        int32_t *am = ref_misc_download(tam);
        size_t bad = 0;
        for (size_t i = 0; i < ny; i++) bad += y[i] != ry[i] || am[i] != ram[i];
        CHECK(bad == 0, "max pool %dx%dx%dx%d k%d s%d%s: %zu of %zu outputs/argmax differ", g.n, g.c,
              g.h, g.w, g.k, g.s, ties ? " (ties)" : "", bad, ny);
        free(am);
        check_values_only(dev, tx, g.k, g.s, ty);
    } else {
        double e = max_rel_err(ry, y, ny);
        CHECK(e < 1e-5, "avg pool forward %dx%dx%dx%d k%d s%d: rel err %g", g.n, g.c, g.h, g.w, g.k, g.s, e);
    }
    CHECK_OK(clt_pool2d_backward(kind, tdy, kind == CLT_POOL_MAX ? tam : NULL, g.k, g.s, tdx));
    float *dx = ref_misc_download(tdx);
    double e = max_rel_err(rdx, dx, nx);
    CHECK(e < 1e-5, "%s pool backward %dx%dx%dx%d k%d s%d: rel err %g", name, g.n, g.c, g.h, g.w, g.k,
          g.s, e);
    /* Deterministic: a second run gives the same bits. */
    CHECK_OK(clt_pool2d_backward(kind, tdy, kind == CLT_POOL_MAX ? tam : NULL, g.k, g.s, tdx));
    float *dx2 = ref_misc_download(tdx);
    CHECK(memcmp(dx, dx2, nx * sizeof *dx) == 0, "%s pool backward not deterministic", name);
    if (kind == CLT_POOL_MAX) check_private(dev, tx, tdy, g.k, g.s, y, dx);

    free(x), free(dy), free(ry), free(rdx), free(ram), free(y), free(dx), free(dx2);
    clt_tensor_destroy(tx), clt_tensor_destroy(ty), clt_tensor_destroy(tam);
    clt_tensor_destroy(tdy), clt_tensor_destroy(tdx);
}

/* L = sum r * avgpool(x): dL/dx from the backward against central
 * differences of the device forward. */
static void fd_avgpool(clt_device *dev, geom g)
{
    int oh = (g.h - g.k) / g.s + 1, ow = (g.w - g.k) / g.s + 1;
    size_t nx = (size_t)g.n * g.c * g.h * g.w, ny = (size_t)g.n * g.c * oh * ow;
    float *x = ref_misc_alloc(nx, sizeof *x), *r = ref_misc_alloc(ny, sizeof *r);
    ref_misc_fill(x, nx, &rng, -1, 1);
    ref_misc_fill(r, ny, &rng, -1, 1);
    int64_t xs[4] = {g.n, g.c, g.h, g.w}, ys[4] = {g.n, g.c, oh, ow};
    clt_tensor *tx = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 4, xs, x);
    clt_tensor *ty = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 4, ys, NULL);
    clt_tensor *tr = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 4, ys, r);
    clt_tensor *tdx = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 4, xs, NULL);
    CHECK_OK(clt_pool2d_backward(CLT_POOL_AVG, tr, NULL, g.k, g.s, tdx));
    float *dx = ref_misc_download(tdx);
    const float eps = 1e-2f;
    double worst = 0;
    for (size_t i = 0; i < nx; i++) {
        double l[2];
        for (int side = 0; side < 2; side++) {
            float keep = x[i];
            x[i] = keep + (side ? -eps : eps);
            CHECK_OK(clt_tensor_upload(tx, x, (int64_t)nx));
            x[i] = keep;
            CHECK_OK(clt_pool2d_forward(CLT_POOL_AVG, tx, g.k, g.s, ty, NULL));
            float *y = ref_misc_download(ty);
            l[side] = 0;
            for (size_t o = 0; o < ny; o++) l[side] += (double)r[o] * y[o];
            free(y);
        }
        double fd = (l[0] - l[1]) / (2.0 * eps);
        double err = fabs(fd - dx[i]);
        if (err > worst) worst = err;
    }
    CHECK(worst < 1e-4, "avg pool finite differences k%d s%d: worst abs err %g", g.k, g.s, worst);
    free(x), free(r), free(dx);
    clt_tensor_destroy(tx), clt_tensor_destroy(ty), clt_tensor_destroy(tr), clt_tensor_destroy(tdx);
}

static void check_gap(clt_device *dev, int n, int c, int h, int w)
{
    int nc = n * c, hw = h * w;
    float *x = ref_misc_alloc((size_t)nc * hw, sizeof *x), *dy = ref_misc_alloc((size_t)nc, sizeof *dy);
    ref_misc_fill(x, (size_t)nc * hw, &rng, -3, 3);
    ref_misc_fill(dy, (size_t)nc, &rng, -1, 1);
    float *ry = ref_misc_alloc((size_t)nc, sizeof *ry), *rdx = ref_misc_alloc((size_t)nc * hw, sizeof *rdx);
    ref_misc_gap_forward(x, nc, hw, ry);
    ref_misc_gap_backward(dy, nc, hw, rdx);
    int64_t xs[4] = {n, c, h, w}, ys[2] = {n, c};
    clt_tensor *tx = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 4, xs, x);
    clt_tensor *ty = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, ys, NULL);
    clt_tensor *tdy = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, ys, dy);
    clt_tensor *tdx = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 4, xs, NULL);
    ref_misc_poison(tdx);
    CHECK_OK(clt_gap_forward(tx, ty));
    CHECK_OK(clt_gap_backward(tdy, tdx));
    float *y = ref_misc_download(ty), *dx = ref_misc_download(tdx);
    double e1 = max_rel_err(ry, y, (size_t)nc), e2 = max_rel_err(rdx, dx, (size_t)nc * hw);
    CHECK(e1 < 1e-5 && e2 < 1e-6, "gap %dx%dx%dx%d: forward rel err %g, backward %g", n, c, h, w, e1, e2);

    /* Finite differences on a few elements: L = sum dy * gap(x). */
    double worst = 0;
    const float eps = 1e-2f;
    for (int t = 0; t < 6; t++) {
        size_t i = (size_t)ref_misc_randint(&rng, nc * hw);
        double l[2];
        for (int side = 0; side < 2; side++) {
            float keep = x[i];
            x[i] = keep + (side ? -eps : eps);
            CHECK_OK(clt_tensor_upload(tx, x, (int64_t)nc * hw));
            x[i] = keep;
            CHECK_OK(clt_gap_forward(tx, ty));
            float *yy = ref_misc_download(ty);
            l[side] = 0;
            for (int o = 0; o < nc; o++) l[side] += (double)dy[o] * yy[o];
            free(yy);
        }
        double err = fabs((l[0] - l[1]) / (2.0 * eps) - dx[i]);
        if (err > worst) worst = err;
    }
    CHECK(worst < 1e-4, "gap finite differences: worst abs err %g", worst);
    free(x), free(dy), free(ry), free(rdx), free(y), free(dx);
    clt_tensor_destroy(tx), clt_tensor_destroy(ty), clt_tensor_destroy(tdy), clt_tensor_destroy(tdx);
}

static void check_errors(const op_env *e)
{
    clt_device *dev = e->dev, *dev1 = e->dev1;
    int64_t xs[4] = {2, 3, 5, 5}, ys[4] = {2, 3, 2, 2}, bad[4] = {2, 3, 3, 2};
    clt_tensor *x = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 4, xs, NULL);
    clt_tensor *y = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 4, ys, NULL);
    clt_tensor *am = ref_misc_tensor(dev, CLT_DTYPE_INT32, 4, ys, NULL);
    clt_tensor *yf = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 4, ys, NULL);
    clt_tensor *ybad = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 4, bad, NULL);
    clt_status s;

    /* an argmax format the raw calls do not know (ops/pool.h) */
    s = clt_pool_forward_raw(dev, CLT_POOL_MAX, 2, 3, 5, 5, 2, 2, x->buf, y->buf, am->buf, (clt_pool_argmax)2);
    CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("argmax format 2", NULL, NULL),
          "an unknown argmax format: %s %s", clt_status_name(s), clt_last_error());
    s = clt_pool_backward_raw(dev, CLT_POOL_MAX, 2, 3, 5, 5, 2, 2, y->buf, am->buf, (clt_pool_argmax)-1, x->buf);
    CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("argmax format -1", NULL, NULL),
          "an unknown argmax format in the backward: %s %s", clt_status_name(s), clt_last_error());
    s = clt_pool2d_forward(CLT_POOL_MAX, x, 2, 2, ybad, am);
    CHECK(s == CLT_ERR_SHAPE && ref_misc_error_has("clt_pool2d_forward", "(2, 3, 3, 2)", "(2, 3, 2, 2)"),
          "wrong y shape: %s %s", clt_status_name(s), clt_last_error());
    s = clt_pool2d_forward(CLT_POOL_MAX, x, 2, 2, y, NULL);
    CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("argmax", NULL, NULL), "no argmax: %s %s",
          clt_status_name(s), clt_last_error());
    s = clt_pool2d_forward(CLT_POOL_MAX, x, 2, 2, y, yf);
    CHECK(s == CLT_ERR_SHAPE && ref_misc_error_has("argmax", "int32", NULL), "float argmax: %s %s",
          clt_status_name(s), clt_last_error());
    s = clt_pool2d_forward(CLT_POOL_AVG, x, 6, 1, y, NULL);
    CHECK(s == CLT_ERR_SHAPE && ref_misc_error_has("window 6", "5x5", NULL), "window too large: %s %s",
          clt_status_name(s), clt_last_error());
    s = clt_pool2d_forward(CLT_POOL_AVG, x, 0, 1, y, NULL);
    CHECK(s == CLT_ERR_INVALID_ARG, "k = 0: %s", clt_status_name(s));
    s = clt_pool2d_forward(CLT_POOL_AVG, x, 2, -1, y, NULL);
    CHECK(s == CLT_ERR_INVALID_ARG, "stride -1: %s", clt_status_name(s));
    s = clt_pool2d_forward((clt_pool_kind)7, x, 2, 2, y, am);
    CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("kind 7", NULL, NULL), "bad kind: %s %s",
          clt_status_name(s), clt_last_error());
    s = clt_pool2d_forward(CLT_POOL_AVG, NULL, 2, 2, y, NULL);
    CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("x is NULL", NULL, NULL), "NULL x: %s %s",
          clt_status_name(s), clt_last_error());
    s = clt_pool2d_forward(CLT_POOL_AVG, x, 2, 2, NULL, NULL);
    CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("y is NULL", NULL, NULL), "NULL y: %s %s",
          clt_status_name(s), clt_last_error());
    s = clt_pool2d_backward(CLT_POOL_MAX, y, NULL, 2, 2, x);
    CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("argmax", NULL, NULL), "backward no argmax: %s",
          clt_status_name(s));
    s = clt_pool2d_backward(CLT_POOL_AVG, ybad, NULL, 2, 2, x);
    CHECK(s == CLT_ERR_SHAPE && ref_misc_error_has("dy", "(2, 3, 3, 2)", NULL), "backward wrong dy: %s %s",
          clt_status_name(s), clt_last_error());
    s = clt_pool2d_backward(CLT_POOL_AVG, y, NULL, 2, 2, NULL);
    CHECK(s == CLT_ERR_INVALID_ARG, "backward NULL dx: %s", clt_status_name(s));
    /* gap */
    s = clt_gap_forward(x, y);
    CHECK(s == CLT_ERR_SHAPE && ref_misc_error_has("clt_gap_forward", "y", "(2, 3)"), "gap 4-D y: %s %s",
          clt_status_name(s), clt_last_error());
    s = clt_gap_backward(NULL, x);
    CHECK(s == CLT_ERR_INVALID_ARG, "gap NULL dy: %s", clt_status_name(s));
    /* A tensor of another device. */
    if (dev1) {
        clt_tensor *y1 = ref_misc_tensor(dev1, CLT_DTYPE_FLOAT32, 4, ys, NULL);
        s = clt_pool2d_forward(CLT_POOL_AVG, x, 2, 2, y1, NULL);
        CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("different devices", NULL, NULL),
              "other device: %s %s", clt_status_name(s), clt_last_error());
        s = clt_pool2d_backward(CLT_POOL_AVG, y1, NULL, 2, 2, x);
        CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("different devices", NULL, NULL),
              "backward other device: %s %s", clt_status_name(s), clt_last_error());
        clt_tensor_destroy(y1);
    }
    clt_tensor_destroy(x), clt_tensor_destroy(y), clt_tensor_destroy(am);
    clt_tensor_destroy(yf), clt_tensor_destroy(ybad);
}

static void check_shapes(const op_env *e)
{
    const geom shapes[] = {
        {1, 1, 5, 5, 2, 2},    /* batch 1, odd size: last row/column dropped */
        {2, 3, 7, 9, 3, 2},    /* overlapping windows */
        {1, 4, 11, 6, 3, 1},   /* heavy overlap */
        {2, 3, 10, 13, 2, 3},  /* gaps: some inputs in no window */
        {3, 2, 8, 8, 2, 2},
        {1, 2, 4, 4, 4, 4},    /* one window covers the plane */
        {2, 5, 9, 7, 1, 1},    /* identity */
        /* 2x2 at stride 2 with 8 outputs or more: CPU devices' row kernels */
        {2, 3, 16, 16, 2, 2},  /* 8 outputs a row */
        {1, 2, 6, 17, 2, 2},   /* 8, the last column dropped */
        {2, 2, 5, 26, 2, 2},   /* 13: the second step slides back; last row dropped */
        {1, 3, 4, 34, 2, 2},   /* 17: three steps */
        {2, 3, 9, 9, 2, 2},    /* 4 outputs a row: 4-wide steps (LeNet's second pooling) */
        {1, 2, 6, 13, 2, 2},   /* 6: the 4-wide step slides back */
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int kind = 0; kind < 2; kind++)
            for (int ties = 0; ties < 2; ties++) check_pool(e->dev, (clt_pool_kind)kind, shapes[i], ties);
}

/* Random shapes, and ties (first maximum wins). */
static void check_random(const op_env *e)
{
    for (int t = 0; t < 8; t++) {
        geom g;
        g.k = 1 + ref_misc_randint(&rng, 4);
        g.s = 1 + ref_misc_randint(&rng, 4);
        g.n = 1 + ref_misc_randint(&rng, 3);
        g.c = 1 + ref_misc_randint(&rng, 4);
        g.h = g.k + ref_misc_randint(&rng, 12);
        g.w = g.k + ref_misc_randint(&rng, 12);
        for (int kind = 0; kind < 2; kind++) check_pool(e->dev, (clt_pool_kind)kind, g, t & 1);
    }
}

/* Max pooling's special values, by hand: NaN propagates with the last
 * NaN's index, -0 before +0 stays the first maximum; backward sends dy to
 * argmax only, and an argmax outside its window (not one the forward
 * gives) writes nothing. */
static void check_nan(const op_env *e)
{
    const float nan = NAN;
    float x[12] = {1, nan, nan, 2, -0.0f, 0.0f, 3, nan, 5, 0, -1, 0.0f};
    int64_t xs[4] = {1, 1, 2, 6}, ys[4] = {1, 1, 1, 3};
    clt_tensor *tx = ref_misc_tensor(e->dev, CLT_DTYPE_FLOAT32, 4, xs, x);
    clt_tensor *ty = ref_misc_tensor(e->dev, CLT_DTYPE_FLOAT32, 4, ys, NULL);
    clt_tensor *tam = ref_misc_tensor(e->dev, CLT_DTYPE_INT32, 4, ys, NULL);
    float dy[3] = {1, 2, 3};
    clt_tensor *tdy = ref_misc_tensor(e->dev, CLT_DTYPE_FLOAT32, 4, ys, dy);
    clt_tensor *tdx = ref_misc_tensor(e->dev, CLT_DTYPE_FLOAT32, 4, xs, NULL);
    CHECK_OK(clt_pool2d_forward(CLT_POOL_MAX, tx, 2, 2, ty, tam));
    float *y = ref_misc_download(ty);
    int32_t *am = ref_misc_download(tam);
    CHECK(isnan(y[0]) && am[0] == 7 && isnan(y[1]) && am[1] == 2 && y[2] == 0 && signbit(y[2]) && am[2] == 4,
          "max pool NaN/-0: y %g %g %g argmax %d %d %d", y[0], y[1], y[2], am[0], am[1], am[2]);
    check_values_only(e->dev, tx, 2, 2, ty);
    CHECK_OK(clt_pool2d_backward(CLT_POOL_MAX, tdy, tam, 2, 2, tdx));
    float *dx = ref_misc_download(tdx);
    const float want[12] = {0, 0, 2, 0, 3, 0, 0, 1, 0, 0, 0, 0};
    CHECK(memcmp(dx, want, sizeof want) == 0, "max pool backward to argmax: dx[2] %g dx[4] %g dx[7] %g", dx[2], dx[4],
          dx[7]);
    int32_t stray[3] = {7, 0, 1000000};
    REQUIRE_OK(clt_tensor_upload(tam, stray, 3));
    CHECK_OK(clt_pool2d_backward(CLT_POOL_MAX, tdy, tam, 2, 2, tdx));
    float *dx2 = ref_misc_download(tdx);
    const float want2[12] = {0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0};
    CHECK(memcmp(dx2, want2, sizeof want2) == 0, "an argmax outside its window wrote: dx[0] %g dx[2] %g", dx2[0],
          dx2[2]);
    free(y), free(am), free(dx), free(dx2);
    clt_tensor_destroy(tx), clt_tensor_destroy(ty), clt_tensor_destroy(tam);
    clt_tensor_destroy(tdy), clt_tensor_destroy(tdx);
}

/* The same special values through the row kernels (2x2, stride 2, 9
 * outputs a row, so the second step slides back): the 2x6 pattern of
 * check_nan three times along a 2x18 plane. */
static void check_nan_rows(const op_env *e)
{
    const float nan = NAN;
    const float tile[2][6] = {{1, nan, nan, 2, -0.0f, 0.0f}, {3, nan, 5, 0, -1, 0.0f}};
    float x[2][18], dy[9];
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 18; c++) x[r][c] = tile[r][c % 6];
    for (int i = 0; i < 9; i++) dy[i] = (float)(i + 1);
    int64_t xs[4] = {1, 1, 2, 18}, ys[4] = {1, 1, 1, 9};
    clt_tensor *tx = ref_misc_tensor(e->dev, CLT_DTYPE_FLOAT32, 4, xs, &x[0][0]);
    clt_tensor *ty = ref_misc_tensor(e->dev, CLT_DTYPE_FLOAT32, 4, ys, NULL);
    clt_tensor *tam = ref_misc_tensor(e->dev, CLT_DTYPE_INT32, 4, ys, NULL);
    clt_tensor *tdy = ref_misc_tensor(e->dev, CLT_DTYPE_FLOAT32, 4, ys, dy);
    clt_tensor *tdx = ref_misc_tensor(e->dev, CLT_DTYPE_FLOAT32, 4, xs, NULL);
    CHECK_OK(clt_pool2d_forward(CLT_POOL_MAX, tx, 2, 2, ty, tam));
    float *y = ref_misc_download(ty);
    int32_t *am = ref_misc_download(tam);
    for (int t = 0; t < 3; t++) {
        const float *yt = y + 3 * t;
        const int32_t *at = am + 3 * t;
        int o = 6 * t;
        CHECK(isnan(yt[0]) && at[0] == 19 + o && isnan(yt[1]) && at[1] == 2 + o && yt[2] == 0 && signbit(yt[2]) &&
                  at[2] == 4 + o,
              "row kernel NaN/-0, tile %d: y %g %g %g argmax %d %d %d", t, yt[0], yt[1], yt[2], at[0], at[1], at[2]);
    }
    check_values_only(e->dev, tx, 2, 2, ty);
    CHECK_OK(clt_pool2d_backward(CLT_POOL_MAX, tdy, tam, 2, 2, tdx));
    float *dx = ref_misc_download(tdx);
    size_t bad = 0;
    for (int i = 0; i < 36; i++) {
        float want = 0.0f;
        for (int o = 0; o < 9; o++)
            if (am[o] == i) want = dy[o];
        bad += dx[i] != want;
    }
    CHECK(bad == 0, "row kernel backward: %zu of 36 cells differ from dy at argmax", bad);
    check_private(e->dev, tx, tdy, 2, 2, y, dx);
    free(y), free(am), free(dx);
    clt_tensor_destroy(tx), clt_tensor_destroy(ty), clt_tensor_destroy(tam);
    clt_tensor_destroy(tdy), clt_tensor_destroy(tdx);
}

/* Every pooling of the builtin models (LeNet's average and lenet-max's max
 * pooling) and ResNet-18's gap, at batch 2. */
static void check_models(const op_env *e)
{
    clt_op_case *mc;
    int n = op_model_cases(CLT_OP_POOL, 2, &mc);
    for (int i = 0; i < n; i++)
        check_pool(e->dev, mc[i].pool, (geom){mc[i].n, mc[i].c, mc[i].h, mc[i].w, mc[i].k, mc[i].stride}, 0);
    CHECK(n == 4, "the models have %d pooling shapes, expected LeNet's 2 average and 2 max", n);
    free(mc);
    n = op_model_cases(CLT_OP_GAP, 2, &mc);
    for (int i = 0; i < n; i++) check_gap(e->dev, mc[i].n, mc[i].c, mc[i].h, mc[i].w);
    CHECK(n == 1, "the models have %d gap shapes, expected ResNet-18's", n);
    free(mc);
}

static void check_fd(const op_env *e)
{
    fd_avgpool(e->dev, (geom){1, 2, 5, 6, 3, 2});
    fd_avgpool(e->dev, (geom){2, 1, 6, 5, 2, 2});
}

static void check_gaps(const op_env *e)
{
    check_gap(e->dev, 1, 1, 1, 1);
    check_gap(e->dev, 3, 5, 7, 9);
    check_gap(e->dev, 2, 64, 4, 4);
}

static const op_test tests[] = {
    {"shapes", check_shapes}, {"random", check_random}, {"nan", check_nan}, {"nan-rows", check_nan_rows},
    {"models", check_models},
    {"finite-differences", check_fd}, {"gap", check_gaps}, {"errors", check_errors},
};
OP_HARNESS_MAIN(tests)
