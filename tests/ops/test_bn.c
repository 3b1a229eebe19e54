/* Batch normalisation: the tensor calls against a plain-C double reference
 * (ref_bn.c) in training and inference mode on odd shapes (batch 1, one
 * channel, (n, c) features, planes larger and smaller than a work-group,
 * several chunks per channel) and the models' shapes, running statistics
 * over several calls, finite differences of dx, dgamma and dbeta in both
 * modes, inputs with a large mean, determinism, and argument errors. The
 * split path of synchronised batch norm is test_bn_split.c. */
#include <string.h>

#include "op_harness.h"
#include "runtime/device_impl.h"
#include "ops/bn.h"
#include "ref_bn.h"
#include "ref_misc.h"
#include "runtime/device.h"
#include "tensor/tensor.h"

static uint64_t rng = 0x5eed00b7;

static double rel_err_d(const double *ref, const float *got, int n)
{
    float *r = ref_misc_alloc((size_t)n, sizeof *r);
    for (int i = 0; i < n; i++) r[i] = (float)ref[i];
    double e = max_rel_err(r, got, (size_t)n);
    free(r);
    return e;
}

/* ---- forward and backward against the reference ---- */

typedef struct {
    int affine;       /* gamma and beta given */
    float mu, sigma;  /* input distribution */
    double tol_y, tol_dx, tol_g;
} variant;

static void check_bn(clt_device *dev, ref_bn_shape s, int training, variant v)
{
    size_t nx = ref_bn_numel(s);
    int c = s.c;
    float *x = ref_misc_alloc(nx, sizeof *x), *dy = ref_misc_alloc(nx, sizeof *dy);
    float *gamma = ref_misc_alloc((size_t)c, sizeof *gamma), *beta = ref_misc_alloc((size_t)c, sizeof *beta);
    float *rm = ref_misc_alloc((size_t)c, sizeof *rm), *rv = ref_misc_alloc((size_t)c, sizeof *rv);
    ref_bn_fill(&rng, s, v.mu, v.sigma, (float[]){v.mu - 0.5f * v.sigma, v.mu + 0.5f * v.sigma},
                (float[]){0.5f * v.sigma * v.sigma, 2.0f * v.sigma * v.sigma},
                &(ref_bn_data){x, dy, gamma, beta, rm, rv});

    ref_bn_tensors t;
    ref_bn_tensors_make(dev, s, x, dy, v.affine ? gamma : NULL, v.affine ? beta : NULL, rm, rv, &t);
    ref_misc_poison(t.y), ref_misc_poison(t.dx), ref_misc_poison(t.save);
    ref_misc_poison(t.dgamma), ref_misc_poison(t.dbeta);

    float *ry = ref_misc_alloc(nx, sizeof *ry), *rdx = ref_misc_alloc(nx, sizeof *rdx);
    float *rdg = ref_misc_alloc((size_t)c, sizeof *rdg), *rdb = ref_misc_alloc((size_t)c, sizeof *rdb);
    double *mean = ref_misc_alloc((size_t)c, sizeof *mean), *invstd = ref_misc_alloc((size_t)c, sizeof *invstd);
    ref_bn_forward(x, s, v.affine ? gamma : NULL, v.affine ? beta : NULL, rm, rv, training, ry, mean, invstd);
    ref_bn_backward(x, dy, s, v.affine ? gamma : NULL, mean, invstd, training, rdx, rdg, rdb);

    char what[96];
    snprintf(what, sizeof what, "%s (%d, %d, %d, %d)%s mean %g", training ? "training" : "inference", s.n, s.c,
             s.h, s.w, v.affine ? "" : " no affine", (double)v.mu);
    CHECK_OK(clt_batchnorm_forward(t.x, t.gamma, t.beta, t.rm, t.rv, training, t.save, t.y));
    float *y = ref_misc_download(t.y), *save = ref_misc_download(t.save);
    float *grm = ref_misc_download(t.rm), *grv = ref_misc_download(t.rv);
    double ey = max_rel_err(ry, y, nx), em = rel_err_d(mean, save, c), ei = rel_err_d(invstd, save + c, c);
    double erm = max_rel_err(rm, grm, (size_t)c), erv = max_rel_err(rv, grv, (size_t)c);
    CHECK(ey < v.tol_y, "%s: y rel err %g", what, ey);
    CHECK(em < 5e-6 && ei < 2e-5, "%s: saved mean rel err %g, invstd %g", what, em, ei);
    CHECK(erm < 1e-6 && erv < 2e-5, "%s: running mean rel err %g, var %g", what, erm, erv);

    CHECK_OK(clt_batchnorm_backward(t.x, t.dy, t.gamma, t.save, training, t.dx, t.dgamma, t.dbeta));
    float *dx = ref_misc_download(t.dx), *dg = ref_misc_download(t.dgamma), *db = ref_misc_download(t.dbeta);
    /* dx cancels (for n*hw = 2 it is ~0): errors relative to the size of the
     * terms, gamma * invstd * dy. */
    double dscale = 1e-30, edx = 0;
    for (size_t i = 0; i < nx; i++) {
        int ch = (int)(i / (size_t)ref_bn_hw(s) % (size_t)c);
        dscale = fmax(dscale, fabs((v.affine ? gamma[ch] : 1.0) * invstd[ch] * dy[i]));
        double e = fabs((double)dx[i] - rdx[i]);
        edx = fmax(edx, e == e ? e : INFINITY); /* NaN fails */
    }
    edx /= dscale;
    double edg = max_rel_err(rdg, dg, (size_t)c), edb = max_rel_err(rdb, db, (size_t)c);
    CHECK(edx < v.tol_dx, "%s: dx err %g relative to max |gamma invstd dy|", what, edx);
    CHECK(edg < v.tol_g && edb < v.tol_g, "%s: dgamma rel err %g, dbeta %g", what, edg, edb);

    /* Deterministic, and gradients with NULL outputs skipped: dx alone gives
     * the same bits. */
    CHECK_OK(clt_batchnorm_forward(t.x, t.gamma, t.beta, training ? NULL : t.rm, training ? NULL : t.rv, training,
                                   t.save, t.y));
    float *y2 = ref_misc_download(t.y);
    CHECK(memcmp(y, y2, nx * sizeof *y) == 0, "%s: forward not deterministic", what);
    CHECK_OK(clt_batchnorm_backward(t.x, t.dy, t.gamma, t.save, training, t.dx, NULL, NULL));
    float *dx2 = ref_misc_download(t.dx);
    CHECK(memcmp(dx, dx2, nx * sizeof *dx) == 0, "%s: backward not deterministic", what);

    free(x), free(dy), free(ry), free(rdx), free(y), free(save), free(grm), free(grv);
    free(dx), free(dg), free(db), free(y2), free(dx2);
    free(gamma), free(beta), free(rm), free(rv), free(rdg), free(rdb), free(mean), free(invstd);
    ref_bn_tensors_free(&t);
}

/* Running statistics over several training calls on changing batches,
 * then an inference call with them; in place (y == x) for the latter. */
static void check_running(const op_env *env)
{
    clt_device *dev = env->dev;
    ref_bn_shape s = {6, 5, 3, 4};
    size_t nx = ref_bn_numel(s);
    int64_t xs[4], cs[1] = {s.c};
    ref_bn_dims(s, xs);
    float rm[5] = {0, 0, 0, 0, 0}, rv[5] = {1, 1, 1, 1, 1}, gamma[5], beta[5];
    ref_misc_fill(gamma, 5, &rng, 0.5f, 1.5f);
    ref_misc_fill(beta, 5, &rng, -1, 1);
    clt_tensor *tx = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 4, xs, NULL);
    clt_tensor *ty = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 4, xs, NULL);
    clt_tensor *tg = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, cs, gamma);
    clt_tensor *tb = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, cs, beta);
    clt_tensor *trm = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, cs, rm);
    clt_tensor *trv = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, cs, rv);
    float *x = ref_misc_alloc(nx, sizeof *x), *ry = ref_misc_alloc(nx, sizeof *ry);
    double mean[5], invstd[5];
    for (int step = 0; step < 5; step++) {
        ref_bn_fill_normal(&rng, x, nx, 2.0f + step, 0.5f + 0.3f * step);
        CHECK_OK(clt_tensor_upload(tx, x, (int64_t)nx));
        CHECK_OK(clt_batchnorm_forward(tx, tg, tb, trm, trv, 1, NULL, ty)); /* save NULL */
        ref_bn_forward(x, s, gamma, beta, rm, rv, 1, ry, mean, invstd);
        float *y = ref_misc_download(ty);
        double e = max_rel_err(ry, y, nx);
        CHECK(e < 2e-5, "running step %d: y rel err %g", step, e);
        free(y);
    }
    float *grm = ref_misc_download(trm), *grv = ref_misc_download(trv);
    double erm = max_rel_err(rm, grm, 5), erv = max_rel_err(rv, grv, 5);
    CHECK(erm < 1e-5 && erv < 1e-5, "running stats after 5 steps: mean rel err %g, var %g", erm, erv);
    /* PyTorch's values after one step from (0, 1) are easy to state: check
     * the update really moved them (mean ~ 0.41 * data mean, not 0). */
    CHECK(grm[0] > 1.0f && grv[0] > 0.5f, "running stats did not move: %g %g", (double)grm[0], (double)grv[0]);
    /* Inference with them, in place. */
    ref_bn_fill_normal(&rng, x, nx, 4.0f, 1.0f);
    CHECK_OK(clt_tensor_upload(tx, x, (int64_t)nx));
    CHECK_OK(clt_batchnorm_forward(tx, tg, tb, trm, trv, 0, NULL, tx));
    ref_bn_forward(x, s, gamma, beta, rm, rv, 0, ry, mean, invstd);
    float *y = ref_misc_download(tx);
    double e = max_rel_err(ry, y, nx);
    CHECK(e < 2e-5, "inference in place with running stats: rel err %g", e);
    float *grm2 = ref_misc_download(trm);
    CHECK(memcmp(grm, grm2, sizeof rm) == 0, "inference changed the running mean");
    free(x), free(ry), free(grm), free(grv), free(grm2), free(y);
    clt_tensor_destroy(tx), clt_tensor_destroy(ty), clt_tensor_destroy(tg), clt_tensor_destroy(tb);
    clt_tensor_destroy(trm), clt_tensor_destroy(trv);
}

/* ---- finite differences: L = sum r * y ---- */

static double fd_loss(clt_tensor *tx, clt_tensor *tg, clt_tensor *tb, clt_tensor *trm, clt_tensor *trv,
                      int training, clt_tensor *ty, const float *r, size_t ny)
{
    CHECK_OK(clt_batchnorm_forward(tx, tg, tb, training ? NULL : trm, training ? NULL : trv, training, NULL, ty));
    float *y = ref_misc_download(ty);
    double l = 0;
    for (size_t i = 0; i < ny; i++) l += (double)r[i] * y[i];
    free(y);
    return l;
}

/* dL/dp for p = host[j] of tensor t (count floats): central differences
 * of the device forward at h and h/2, Richardson-extrapolated (O(h^4)). */
static double fd_grad(float *host, int64_t count, int64_t j, clt_tensor *t, clt_tensor *tx, clt_tensor *tg,
                      clt_tensor *tb, clt_tensor *trm, clt_tensor *trv, int training, clt_tensor *ty,
                      const float *r, size_t ny)
{
    double d[2];
    for (int k = 0; k < 2; k++) {
        float h = k ? 5e-3f : 1e-2f, keep = host[j];
        double l[2];
        for (int side = 0; side < 2; side++) {
            host[j] = keep + (side ? -h : h);
            CHECK_OK(clt_tensor_upload(t, host, count));
            l[side] = fd_loss(tx, tg, tb, trm, trv, training, ty, r, ny);
        }
        host[j] = keep;
        d[k] = (l[0] - l[1]) / (2.0 * h);
    }
    CHECK_OK(clt_tensor_upload(t, host, count));
    return (4.0 * d[1] - d[0]) / 3.0;
}

/* Finite differences for every element of x, gamma and beta against the
 * device backward. */
static void check_fd(clt_device *dev, ref_bn_shape s, int training)
{
    size_t nx = ref_bn_numel(s);
    int c = s.c;
    float *x = ref_misc_alloc(nx, sizeof *x), *r = ref_misc_alloc(nx, sizeof *r);
    float gamma[16], beta[16], rm[16], rv[16];
    ref_bn_fill(&rng, s, 0.5f, 1.0f, (float[]){-0.5f, 0.5f}, (float[]){0.5f, 2.0f},
                &(ref_bn_data){x, r, gamma, beta, rm, rv});
    ref_bn_tensors t;
    ref_bn_tensors_make(dev, s, x, r, gamma, beta, rm, rv, &t);
    CHECK_OK(clt_batchnorm_forward(t.x, t.gamma, t.beta, training ? NULL : t.rm, training ? NULL : t.rv, training,
                                   t.save, t.y));
    CHECK_OK(clt_batchnorm_backward(t.x, t.dy, t.gamma, t.save, training, t.dx, t.dgamma, t.dbeta));
    float *dx = ref_misc_download(t.dx), *dg = ref_misc_download(t.dgamma), *db = ref_misc_download(t.dbeta);

    double worst_x = 0, worst_g = 0, worst_b = 0, scale = 1e-3;
    for (size_t i = 0; i < nx; i++) scale = fmax(scale, fabs(dx[i]));
    for (size_t i = 0; i < nx; i++) {
        double fd = fd_grad(x, (int64_t)nx, (int64_t)i, t.x, t.x, t.gamma, t.beta, t.rm, t.rv, training, t.y, r, nx);
        double e = fabs(fd - dx[i]);
        worst_x = fmax(worst_x, e == e ? e : INFINITY);
    }
    for (int j = 0; j < c; j++) {
        double fg = fd_grad(gamma, c, j, t.gamma, t.x, t.gamma, t.beta, t.rm, t.rv, training, t.y, r, nx);
        double fb = fd_grad(beta, c, j, t.beta, t.x, t.gamma, t.beta, t.rm, t.rv, training, t.y, r, nx);
        double eg = fabs(fg - dg[j]), eb = fabs(fb - db[j]);
        worst_g = fmax(worst_g, eg == eg ? eg : INFINITY);
        worst_b = fmax(worst_b, eb == eb ? eb : INFINITY);
    }
    CHECK(worst_x / scale < 5e-4, "%s (%d, %d, %d, %d) finite differences: dx worst abs err %g (scale %g)",
          training ? "training" : "inference", s.n, s.c, s.h, s.w, worst_x, scale);
    CHECK(worst_g < 5e-4 && worst_b < 5e-4, "%s (%d, %d, %d, %d) finite differences: dgamma %g, dbeta %g",
          training ? "training" : "inference", s.n, s.c, s.h, s.w, worst_g, worst_b);
    free(x), free(r), free(dx), free(dg), free(db);
    ref_bn_tensors_free(&t);
}

/* ---- errors ---- */

#define EXPECT_ERR(call, code, a, b) op_expect_err((call), (code), #call, (a), (b))

static void check_errors(const op_env *e)
{
    clt_device *dev = e->dev, *dev1 = e->dev1;
    int64_t xs[4] = {2, 3, 4, 4}, x3[3] = {2, 3, 4}, cs[1] = {3}, c4[1] = {4}, ss[1] = {6}, one[2] = {1, 3},
            one4[4] = {1, 3, 1, 1}, bad[4] = {2, 3, 4, 5};
    clt_tensor *x = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 4, xs, NULL);
    clt_tensor *y = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 4, xs, NULL);
    clt_tensor *xi = ref_misc_tensor(dev, CLT_DTYPE_INT32, 4, xs, NULL);
    clt_tensor *x3d = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 3, x3, NULL);
    clt_tensor *ybad = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 4, bad, NULL);
    clt_tensor *g = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, cs, NULL);
    clt_tensor *g4 = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, c4, NULL);
    clt_tensor *rm = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, cs, NULL);
    clt_tensor *rv = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, cs, NULL);
    clt_tensor *save = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, ss, NULL);
    clt_tensor *x1 = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, one, NULL);
    clt_tensor *x14 = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 4, one4, NULL);
    CHECK_OK(clt_tensor_fill(rv, 1.0f));

    EXPECT_ERR(clt_batchnorm_forward(x3d, g, g, rm, rv, 1, save, x3d), CLT_ERR_SHAPE, "(n, c, h, w) or (n, c)",
               "(2, 3, 4)");
    EXPECT_ERR(clt_batchnorm_forward(xi, g, g, rm, rv, 1, save, y), CLT_ERR_SHAPE, "x", "int32");
    EXPECT_ERR(clt_batchnorm_forward(NULL, g, g, rm, rv, 1, save, y), CLT_ERR_INVALID_ARG, "x is NULL", NULL);
    EXPECT_ERR(clt_batchnorm_forward(x, g4, g, rm, rv, 1, save, y), CLT_ERR_SHAPE, "gamma", "(4)");
    EXPECT_ERR(clt_batchnorm_forward(x, g, g4, rm, rv, 1, save, y), CLT_ERR_SHAPE, "beta", "(3)");
    EXPECT_ERR(clt_batchnorm_forward(x, g, g, rm, rv, 1, save, ybad), CLT_ERR_SHAPE, "y", "(2, 3, 4, 5)");
    EXPECT_ERR(clt_batchnorm_forward(x, g, g, rm, rv, 1, g, y), CLT_ERR_SHAPE, "save", "(6)");
    EXPECT_ERR(clt_batchnorm_forward(x, g, g, g4, rv, 1, save, y), CLT_ERR_SHAPE, "running_mean", NULL);
    EXPECT_ERR(clt_batchnorm_forward(x, g, g, NULL, NULL, 0, save, y), CLT_ERR_INVALID_ARG, "running_mean",
               "inference");
    EXPECT_ERR(clt_batchnorm_forward(x, g, g, rm, NULL, 1, save, y), CLT_ERR_INVALID_ARG, "both", NULL);
    EXPECT_ERR(clt_batchnorm_forward(x, g, g, rm, rm, 1, save, y), CLT_ERR_INVALID_ARG, "distinct", NULL);
    /* One value per channel: an error in training (as PyTorch), fine in inference. */
    EXPECT_ERR(clt_batchnorm_forward(x1, g, g, rm, rv, 1, save, x1), CLT_ERR_INVALID_ARG,
               "more than 1 value per channel", "(1, 3)");
    EXPECT_ERR(clt_batchnorm_forward(x14, g, g, rm, rv, 1, save, x14), CLT_ERR_INVALID_ARG,
               "more than 1 value per channel", "(1, 3, 1, 1)");
    CHECK_OK(clt_batchnorm_forward(x1, g, g, rm, rv, 0, save, x1));
    EXPECT_ERR(clt_batchnorm_backward(x1, x1, g, save, 1, x1, NULL, NULL), CLT_ERR_INVALID_ARG,
               "more than 1 value per channel", NULL);
    CHECK_OK(clt_batchnorm_backward(x1, x1, g, save, 0, x1, g, rm));
    /* Backward. */
    EXPECT_ERR(clt_batchnorm_backward(x, y, g, NULL, 1, y, NULL, NULL), CLT_ERR_INVALID_ARG, "save", NULL);
    EXPECT_ERR(clt_batchnorm_backward(x, ybad, g, save, 1, y, NULL, NULL), CLT_ERR_SHAPE, "dy", "(2, 3, 4, 5)");
    EXPECT_ERR(clt_batchnorm_backward(x, y, g, save, 1, ybad, NULL, NULL), CLT_ERR_SHAPE, "dx", NULL);
    EXPECT_ERR(clt_batchnorm_backward(x, y, g, save, 1, y, g4, NULL), CLT_ERR_SHAPE, "dgamma", "(4)");
    EXPECT_ERR(clt_batchnorm_backward(x, y, g, rm, 1, y, NULL, NULL), CLT_ERR_SHAPE, "save", "(6)");
    EXPECT_ERR(clt_batchnorm_backward(x, y, g, save, 1, y, rm, rm), CLT_ERR_INVALID_ARG, "distinct", NULL);
    CHECK_OK(clt_batchnorm_backward(x, y, g, save, 1, NULL, NULL, NULL)); /* nothing asked */
    /* Raw launchers. */
    EXPECT_ERR(clt_bn_finalize_raw(dev, 3, 1.0, save->buf, rm->buf, 0.1f, 1e-5f, rm->buf, rv->buf, save->buf),
               CLT_ERR_INVALID_ARG, "more than 1 value per channel", NULL);
    EXPECT_ERR(clt_bn_finalize_raw(dev, 3, 8.0, save->buf, rm->buf, 0.1f, 1e-5f, rm->buf, NULL, save->buf),
               CLT_ERR_INVALID_ARG, "both", NULL);
    EXPECT_ERR(clt_bn_stats_raw(dev, -1, 3, 16, x->buf, rm->buf, save->buf), CLT_ERR_SHAPE, "clt_bn_stats_raw",
               NULL);
    EXPECT_ERR(clt_bn_stats_raw(dev, 2, 3, 16, x->buf, NULL, save->buf), CLT_ERR_INVALID_ARG, "shift", NULL);
    EXPECT_ERR(clt_bn_shift_raw(dev, 0, 3, 16, x->buf, rm->buf), CLT_ERR_SHAPE, "n >= 1", NULL);
    EXPECT_ERR(clt_bn_backward_apply_raw(dev, 2, 3, 16, x->buf, y->buf, NULL, save->buf, NULL, save->buf, 32.0, NULL),
               CLT_ERR_INVALID_ARG, "dx", NULL);
    /* Tensors of another device. */
    if (dev1) {
        clt_tensor *g1 = ref_misc_tensor(dev1, CLT_DTYPE_FLOAT32, 1, cs, NULL);
        clt_tensor *y1 = ref_misc_tensor(dev1, CLT_DTYPE_FLOAT32, 4, xs, NULL);
        EXPECT_ERR(clt_batchnorm_forward(x, g1, g, rm, rv, 1, save, y), CLT_ERR_INVALID_ARG, "different devices",
                   NULL);
        EXPECT_ERR(clt_batchnorm_forward(x, g, g, rm, rv, 1, save, y1), CLT_ERR_INVALID_ARG, "different devices",
                   NULL);
        EXPECT_ERR(clt_batchnorm_backward(x, y, g, save, 1, y, g1, NULL), CLT_ERR_INVALID_ARG, "different devices",
                   NULL);
        clt_tensor_destroy(g1), clt_tensor_destroy(y1);
    }
    clt_tensor_destroy(x), clt_tensor_destroy(y), clt_tensor_destroy(xi), clt_tensor_destroy(x3d);
    clt_tensor_destroy(ybad), clt_tensor_destroy(g), clt_tensor_destroy(g4), clt_tensor_destroy(rm);
    clt_tensor_destroy(rv), clt_tensor_destroy(save), clt_tensor_destroy(x1), clt_tensor_destroy(x14);
}

static const variant plain = {1, 0.3f, 1.5f, 2e-5, 2e-5, 2e-5};

static void check_shapes(const op_env *e)
{
    const ref_bn_shape shapes[] = {
        {1, 3, 5, 7},    /* batch 1, h*w > 1 */
        {4, 1, 6, 6},    /* one channel */
        {3, 5, 7, 9},    /* odd sizes */
        {16, 10, 0, 0},  /* (n, c) features */
        {2, 7, 0, 0},    /* two samples of features */
        {5, 4, 1, 1},    /* 1x1 planes */
        {4, 3, 8, 8},    /* plane = one work-group of lanes (on GPUs) */
        {8, 3, 28, 28},  /* planes larger than a work-group (on GPUs), several chunks */
        {64, 2, 4, 4},   /* many small planes, several chunks */
        {300, 6, 0, 0},  /* features, several chunks */
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int training = 0; training < 2; training++) check_bn(e->dev, shapes[i], training, plain);
}

/* The layout GPU-type devices run (lanes across a plane; CPU devices take
 * one lane per row): the device's type set to GPU, which only the plan
 * reads. */
static void check_gpu_layout(const op_env *e)
{
    const ref_bn_shape shapes[] = {
        {3, 5, 7, 9},   /* float4 units and a tail of 3 floats per plane */
        {5, 3, 7, 7},   /* 16 lanes, a tail of 1 (ResNet-18's 7x7) */
        {3, 2, 1, 6},   /* one lane, a tail of 2 */
        {3, 2, 1, 11},  /* two lanes, the first taking two of the tail's 3 floats */
        {3, 2, 1, 259}, /* 64 lanes (the most), a tail of 3 */
        {6, 4, 1, 3},   /* planes under 4 floats: one-float units */
        {4, 3, 8, 8},   /* plane = one work-group of lanes */
        {8, 3, 28, 28}, /* planes larger than a work-group, several chunks */
        {64, 2, 4, 4},  /* many small planes, several chunks */
    };
    clt_device_type type = e->dev->info.type;
    e->dev->info.type = CLT_DEVICE_GPU;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int training = 0; training < 2; training++) check_bn(e->dev, shapes[i], training, plain);
    e->dev->info.type = type;
}

/* Every batch norm of the builtin models (ResNet-18's four stages) on a
 * shard of 8. */
static void check_models(const op_env *e)
{
    clt_op_case *mc;
    int n = op_model_cases(CLT_OP_BN, 8, &mc);
    for (int i = 0; i < n; i++)
        for (int training = 0; training < 2; training++)
            check_bn(e->dev, (ref_bn_shape){mc[i].n, mc[i].c, mc[i].h, mc[i].w}, training, plain);
    CHECK(n == 4, "the models have %d batch-norm shapes, expected ResNet-18's 4", n);
    free(mc);
}

static void check_random(const op_env *e)
{
    for (int t = 0; t < 8; t++) {
        ref_bn_shape s;
        s.n = 1 + ref_misc_randint(&rng, 9);
        s.c = 1 + ref_misc_randint(&rng, 12);
        s.h = t & 1 ? 0 : 1 + ref_misc_randint(&rng, 13);
        s.w = s.h ? 1 + ref_misc_randint(&rng, 13) : 0;
        if (s.n * ref_bn_hw(s) < 2) s.n = 2;
        check_bn(e->dev, s, t & 2 ? 1 : 0, plain);
        check_bn(e->dev, s, 1, (variant){0, -1.0f, 0.5f, 2e-5, 2e-5, 2e-5}); /* no gamma/beta */
    }
}

/* Large means against small spreads: the shifted sums keep the variance. */
static void check_large_mean(const op_env *e)
{
    check_bn(e->dev, (ref_bn_shape){16, 4, 28, 28}, 1, (variant){1, 100.0f, 1.0f, 5e-5, 5e-5, 5e-5});
    check_bn(e->dev, (ref_bn_shape){256, 8, 0, 0}, 1, (variant){1, -300.0f, 0.5f, 2e-4, 2e-4, 2e-4});
    check_bn(e->dev, (ref_bn_shape){32, 3, 7, 7}, 1, (variant){1, 5.0f, 1e-3f, 5e-5, 5e-4, 5e-4});
}

static void check_fds(const op_env *e)
{
    check_fd(e->dev, (ref_bn_shape){3, 2, 2, 3}, 1);
    check_fd(e->dev, (ref_bn_shape){3, 2, 2, 3}, 0);
    check_fd(e->dev, (ref_bn_shape){5, 3, 0, 0}, 1);
    check_fd(e->dev, (ref_bn_shape){1, 2, 3, 3}, 1); /* batch 1 */
    check_fd(e->dev, (ref_bn_shape){4, 3, 0, 0}, 0);
}

static const op_test tests[] = {
    {"shapes", check_shapes},         {"models", check_models},    {"random", check_random},
    {"large-mean", check_large_mean}, {"running", check_running}, {"finite-differences", check_fds},
    {"errors", check_errors},         {"gpu-layout", check_gpu_layout},
};
OP_HARNESS_MAIN(tests)
