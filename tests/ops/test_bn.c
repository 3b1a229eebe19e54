/* Batch normalisation and the residual add: the tensor calls against a
 * plain-C double reference in training and inference mode on odd shapes
 * (batch 1, one channel, (n, c) features, planes larger and smaller than a
 * work-group, several chunks per channel), running statistics over several
 * calls, finite differences of dx, dgamma and dbeta in both modes, inputs
 * with a large mean, the split path of synchronised batch norm (shards on two
 * devices, statistics summed on the host, an empty shard) against the whole
 * batch, determinism, and argument errors. */
#include <string.h>

#include "check.h"
#include "ops/bn.h"
#include "ref_misc.h"
#include "tensor/tensor.h"

static uint64_t rng = 0x5eed00b7;

#define EPS 1e-5
#define MOM 0.1

typedef struct {
    int n, c, h, w; /* h == 0: a 2-D (n, c) input */
} shape;

static int sh_hw(shape s) { return s.h ? s.h * s.w : 1; }
static size_t sh_numel(shape s) { return (size_t)s.n * s.c * sh_hw(s); }
static int sh_ndim(shape s) { return s.h ? 4 : 2; }
static void sh_dims(shape s, int64_t *d)
{
    d[0] = s.n, d[1] = s.c, d[2] = s.h, d[3] = s.w;
}

/* ---- reference (double) ---- */

/* Forward; training: batch statistics (two-pass) and the running update
 * (rm/rv may be NULL), else the running statistics. mean/invstd get the
 * statistics used. */
static void ref_forward(const float *x, shape s, const float *gamma, const float *beta, float *rm,
                        float *rv, int training, float *y, double *mean, double *invstd)
{
    int hw = sh_hw(s);
    double m = (double)s.n * hw;
    for (int c = 0; c < s.c; c++) {
        double mu, var;
        if (training) {
            double sum = 0, sq = 0;
            for (int n = 0; n < s.n; n++)
                for (int p = 0; p < hw; p++) sum += x[((size_t)n * s.c + c) * hw + p];
            mu = sum / m;
            for (int n = 0; n < s.n; n++)
                for (int p = 0; p < hw; p++) {
                    double d = x[((size_t)n * s.c + c) * hw + p] - mu;
                    sq += d * d;
                }
            var = sq / m;
            if (rm) {
                rm[c] = (float)((1 - MOM) * rm[c] + MOM * mu);
                rv[c] = (float)((1 - MOM) * rv[c] + MOM * var * m / (m - 1));
            }
        } else {
            mu = rm[c];
            var = rv[c];
        }
        double is = 1.0 / sqrt(var + EPS);
        mean[c] = mu, invstd[c] = is;
        double g = gamma ? gamma[c] : 1.0, b = beta ? beta[c] : 0.0;
        for (int n = 0; n < s.n; n++)
            for (int p = 0; p < hw; p++) {
                size_t i = ((size_t)n * s.c + c) * hw + p;
                y[i] = (float)(g * (x[i] - mu) * is + b);
            }
    }
}

static void ref_backward(const float *x, const float *dy, shape s, const float *gamma, const double *mean,
                         const double *invstd, int training, float *dx, float *dgamma, float *dbeta)
{
    int hw = sh_hw(s);
    double m = (double)s.n * hw;
    for (int c = 0; c < s.c; c++) {
        double b1 = 0, b2 = 0;
        for (int n = 0; n < s.n; n++)
            for (int p = 0; p < hw; p++) {
                size_t i = ((size_t)n * s.c + c) * hw + p;
                b1 += dy[i];
                b2 += dy[i] * (x[i] - mean[c]) * invstd[c];
            }
        dbeta[c] = (float)b1, dgamma[c] = (float)b2;
        double k = (gamma ? gamma[c] : 1.0) * invstd[c];
        for (int n = 0; n < s.n; n++)
            for (int p = 0; p < hw; p++) {
                size_t i = ((size_t)n * s.c + c) * hw + p;
                double xh = (x[i] - mean[c]) * invstd[c];
                dx[i] = (float)(training ? k * (dy[i] - b1 / m - xh * b2 / m) : k * dy[i]);
            }
    }
}

/* Normal-ish data: mu + sigma * (sum of 4 uniforms, variance 1). */
static void fill_normal(float *x, size_t n, float mu, float sigma)
{
    for (size_t i = 0; i < n; i++) {
        float u = 0;
        for (int k = 0; k < 4; k++) u += ref_misc_uniform(&rng, -1.5f, 1.5f);
        x[i] = mu + sigma * u;
    }
}

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

static void check_bn(clt_device *dev, shape s, int training, variant v)
{
    size_t nx = sh_numel(s);
    int c = s.c;
    float *x = ref_misc_alloc(nx, sizeof *x), *dy = ref_misc_alloc(nx, sizeof *dy);
    float *gamma = ref_misc_alloc((size_t)c, sizeof *gamma), *beta = ref_misc_alloc((size_t)c, sizeof *beta);
    float *rm = ref_misc_alloc((size_t)c, sizeof *rm), *rv = ref_misc_alloc((size_t)c, sizeof *rv);
    fill_normal(x, nx, v.mu, v.sigma);
    ref_misc_fill(dy, nx, &rng, -1, 1);
    ref_misc_fill(gamma, (size_t)c, &rng, 0.5f, 1.5f);
    ref_misc_fill(beta, (size_t)c, &rng, -0.5f, 0.5f);
    ref_misc_fill(rm, (size_t)c, &rng, v.mu - 0.5f * v.sigma, v.mu + 0.5f * v.sigma);
    ref_misc_fill(rv, (size_t)c, &rng, 0.5f * v.sigma * v.sigma, 2.0f * v.sigma * v.sigma);

    int64_t xs[4], cs[1] = {c}, ss[1] = {2 * c};
    sh_dims(s, xs);
    int nd = sh_ndim(s);
    clt_tensor *tx = ref_misc_tensor(dev, CLT_FLOAT32, nd, xs, x);
    clt_tensor *tdy = ref_misc_tensor(dev, CLT_FLOAT32, nd, xs, dy);
    clt_tensor *ty = ref_misc_tensor(dev, CLT_FLOAT32, nd, xs, NULL);
    clt_tensor *tdx = ref_misc_tensor(dev, CLT_FLOAT32, nd, xs, NULL);
    clt_tensor *tg = v.affine ? ref_misc_tensor(dev, CLT_FLOAT32, 1, cs, gamma) : NULL;
    clt_tensor *tb = v.affine ? ref_misc_tensor(dev, CLT_FLOAT32, 1, cs, beta) : NULL;
    clt_tensor *trm = ref_misc_tensor(dev, CLT_FLOAT32, 1, cs, rm);
    clt_tensor *trv = ref_misc_tensor(dev, CLT_FLOAT32, 1, cs, rv);
    clt_tensor *tsave = ref_misc_tensor(dev, CLT_FLOAT32, 1, ss, NULL);
    clt_tensor *tdg = ref_misc_tensor(dev, CLT_FLOAT32, 1, cs, NULL);
    clt_tensor *tdb = ref_misc_tensor(dev, CLT_FLOAT32, 1, cs, NULL);
    ref_misc_poison(ty), ref_misc_poison(tdx), ref_misc_poison(tsave);
    ref_misc_poison(tdg), ref_misc_poison(tdb);

    float *ry = ref_misc_alloc(nx, sizeof *ry), *rdx = ref_misc_alloc(nx, sizeof *rdx);
    float *rdg = ref_misc_alloc((size_t)c, sizeof *rdg), *rdb = ref_misc_alloc((size_t)c, sizeof *rdb);
    double *mean = ref_misc_alloc((size_t)c, sizeof *mean), *invstd = ref_misc_alloc((size_t)c, sizeof *invstd);
    ref_forward(x, s, v.affine ? gamma : NULL, v.affine ? beta : NULL, rm, rv, training, ry, mean, invstd);
    ref_backward(x, dy, s, v.affine ? gamma : NULL, mean, invstd, training, rdx, rdg, rdb);

    char what[96];
    snprintf(what, sizeof what, "%s (%d, %d, %d, %d)%s mean %g", training ? "training" : "inference", s.n, s.c,
             s.h, s.w, v.affine ? "" : " no affine", (double)v.mu);
    CHECK_OK(clt_batchnorm_forward(tx, tg, tb, trm, trv, training, tsave, ty));
    float *y = ref_misc_download(ty), *save = ref_misc_download(tsave);
    float *grm = ref_misc_download(trm), *grv = ref_misc_download(trv);
    double ey = max_rel_err(ry, y, nx), em = rel_err_d(mean, save, c), ei = rel_err_d(invstd, save + c, c);
    double erm = max_rel_err(rm, grm, (size_t)c), erv = max_rel_err(rv, grv, (size_t)c);
    CHECK(ey < v.tol_y, "%s: y rel err %g", what, ey);
    CHECK(em < 5e-6 && ei < 2e-5, "%s: saved mean rel err %g, invstd %g", what, em, ei);
    CHECK(erm < 1e-6 && erv < 2e-5, "%s: running mean rel err %g, var %g", what, erm, erv);

    CHECK_OK(clt_batchnorm_backward(tx, tdy, tg, tsave, training, tdx, tdg, tdb));
    float *dx = ref_misc_download(tdx), *dg = ref_misc_download(tdg), *db = ref_misc_download(tdb);
    /* dx cancels (for n*hw = 2 it is ~0): errors relative to the size of the
     * terms, gamma * invstd * dy. */
    double dscale = 1e-30, edx = 0;
    for (size_t i = 0; i < nx; i++) {
        int ch = (int)(i / (size_t)sh_hw(s) % (size_t)c);
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
    CHECK_OK(clt_batchnorm_forward(tx, tg, tb, training ? NULL : trm, training ? NULL : trv, training, tsave, ty));
    float *y2 = ref_misc_download(ty);
    CHECK(memcmp(y, y2, nx * sizeof *y) == 0, "%s: forward not deterministic", what);
    CHECK_OK(clt_batchnorm_backward(tx, tdy, tg, tsave, training, tdx, NULL, NULL));
    float *dx2 = ref_misc_download(tdx);
    CHECK(memcmp(dx, dx2, nx * sizeof *dx) == 0, "%s: backward not deterministic", what);

    free(x), free(dy), free(ry), free(rdx), free(y), free(save), free(grm), free(grv);
    free(dx), free(dg), free(db), free(y2), free(dx2);
    free(gamma), free(beta), free(rm), free(rv), free(rdg), free(rdb), free(mean), free(invstd);
    clt_tensor_destroy(tx), clt_tensor_destroy(tdy), clt_tensor_destroy(ty), clt_tensor_destroy(tdx);
    clt_tensor_destroy(tg), clt_tensor_destroy(tb), clt_tensor_destroy(trm), clt_tensor_destroy(trv);
    clt_tensor_destroy(tsave), clt_tensor_destroy(tdg), clt_tensor_destroy(tdb);
}

/* Running statistics over several training calls on changing batches,
 * then an inference call with them; in place (y == x) for the latter. */
static void check_running(clt_device *dev)
{
    shape s = {6, 5, 3, 4};
    size_t nx = sh_numel(s);
    int64_t xs[4], cs[1] = {s.c};
    sh_dims(s, xs);
    float rm[5] = {0, 0, 0, 0, 0}, rv[5] = {1, 1, 1, 1, 1}, gamma[5], beta[5];
    ref_misc_fill(gamma, 5, &rng, 0.5f, 1.5f);
    ref_misc_fill(beta, 5, &rng, -1, 1);
    clt_tensor *tx = ref_misc_tensor(dev, CLT_FLOAT32, 4, xs, NULL);
    clt_tensor *ty = ref_misc_tensor(dev, CLT_FLOAT32, 4, xs, NULL);
    clt_tensor *tg = ref_misc_tensor(dev, CLT_FLOAT32, 1, cs, gamma);
    clt_tensor *tb = ref_misc_tensor(dev, CLT_FLOAT32, 1, cs, beta);
    clt_tensor *trm = ref_misc_tensor(dev, CLT_FLOAT32, 1, cs, rm);
    clt_tensor *trv = ref_misc_tensor(dev, CLT_FLOAT32, 1, cs, rv);
    float *x = ref_misc_alloc(nx, sizeof *x), *ry = ref_misc_alloc(nx, sizeof *ry);
    double mean[5], invstd[5];
    for (int step = 0; step < 5; step++) {
        fill_normal(x, nx, 2.0f + step, 0.5f + 0.3f * step);
        CHECK_OK(clt_tensor_upload(tx, x, (int64_t)nx));
        CHECK_OK(clt_batchnorm_forward(tx, tg, tb, trm, trv, 1, NULL, ty)); /* save NULL */
        ref_forward(x, s, gamma, beta, rm, rv, 1, ry, mean, invstd);
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
    fill_normal(x, nx, 4.0f, 1.0f);
    CHECK_OK(clt_tensor_upload(tx, x, (int64_t)nx));
    CHECK_OK(clt_batchnorm_forward(tx, tg, tb, trm, trv, 0, NULL, tx));
    ref_forward(x, s, gamma, beta, rm, rv, 0, ry, mean, invstd);
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
static void check_fd(clt_device *dev, shape s, int training)
{
    size_t nx = sh_numel(s);
    int c = s.c, nd = sh_ndim(s);
    int64_t xs[4], cs[1] = {c}, ss[1] = {2 * c};
    sh_dims(s, xs);
    float *x = ref_misc_alloc(nx, sizeof *x), *r = ref_misc_alloc(nx, sizeof *r);
    float gamma[16], beta[16], rm[16], rv[16];
    fill_normal(x, nx, 0.5f, 1.0f);
    ref_misc_fill(r, nx, &rng, -1, 1);
    ref_misc_fill(gamma, (size_t)c, &rng, 0.5f, 1.5f);
    ref_misc_fill(beta, (size_t)c, &rng, -0.5f, 0.5f);
    ref_misc_fill(rm, (size_t)c, &rng, -0.5f, 0.5f);
    ref_misc_fill(rv, (size_t)c, &rng, 0.5f, 2.0f);
    clt_tensor *tx = ref_misc_tensor(dev, CLT_FLOAT32, nd, xs, x);
    clt_tensor *tr = ref_misc_tensor(dev, CLT_FLOAT32, nd, xs, r);
    clt_tensor *ty = ref_misc_tensor(dev, CLT_FLOAT32, nd, xs, NULL);
    clt_tensor *tdx = ref_misc_tensor(dev, CLT_FLOAT32, nd, xs, NULL);
    clt_tensor *tg = ref_misc_tensor(dev, CLT_FLOAT32, 1, cs, gamma);
    clt_tensor *tb = ref_misc_tensor(dev, CLT_FLOAT32, 1, cs, beta);
    clt_tensor *trm = ref_misc_tensor(dev, CLT_FLOAT32, 1, cs, rm);
    clt_tensor *trv = ref_misc_tensor(dev, CLT_FLOAT32, 1, cs, rv);
    clt_tensor *tsave = ref_misc_tensor(dev, CLT_FLOAT32, 1, ss, NULL);
    clt_tensor *tdg = ref_misc_tensor(dev, CLT_FLOAT32, 1, cs, NULL);
    clt_tensor *tdb = ref_misc_tensor(dev, CLT_FLOAT32, 1, cs, NULL);
    CHECK_OK(clt_batchnorm_forward(tx, tg, tb, training ? NULL : trm, training ? NULL : trv, training, tsave, ty));
    CHECK_OK(clt_batchnorm_backward(tx, tr, tg, tsave, training, tdx, tdg, tdb));
    float *dx = ref_misc_download(tdx), *dg = ref_misc_download(tdg), *db = ref_misc_download(tdb);

    double worst_x = 0, worst_g = 0, worst_b = 0, scale = 1e-3;
    for (size_t i = 0; i < nx; i++) scale = fmax(scale, fabs(dx[i]));
    for (size_t i = 0; i < nx; i++) {
        double fd = fd_grad(x, (int64_t)nx, (int64_t)i, tx, tx, tg, tb, trm, trv, training, ty, r, nx);
        double e = fabs(fd - dx[i]);
        worst_x = fmax(worst_x, e == e ? e : INFINITY);
    }
    for (int j = 0; j < c; j++) {
        double fg = fd_grad(gamma, c, j, tg, tx, tg, tb, trm, trv, training, ty, r, nx);
        double fb = fd_grad(beta, c, j, tb, tx, tg, tb, trm, trv, training, ty, r, nx);
        double eg = fabs(fg - dg[j]), eb = fabs(fb - db[j]);
        worst_g = fmax(worst_g, eg == eg ? eg : INFINITY);
        worst_b = fmax(worst_b, eb == eb ? eb : INFINITY);
    }
    CHECK(worst_x / scale < 5e-4, "%s (%d, %d, %d, %d) finite differences: dx worst abs err %g (scale %g)",
          training ? "training" : "inference", s.n, s.c, s.h, s.w, worst_x, scale);
    CHECK(worst_g < 5e-4 && worst_b < 5e-4, "%s (%d, %d, %d, %d) finite differences: dgamma %g, dbeta %g",
          training ? "training" : "inference", s.n, s.c, s.h, s.w, worst_g, worst_b);
    free(x), free(r), free(dx), free(dg), free(db);
    clt_tensor_destroy(tx), clt_tensor_destroy(tr), clt_tensor_destroy(ty), clt_tensor_destroy(tdx);
    clt_tensor_destroy(tg), clt_tensor_destroy(tb), clt_tensor_destroy(trm), clt_tensor_destroy(trv);
    clt_tensor_destroy(tsave), clt_tensor_destroy(tdg), clt_tensor_destroy(tdb);
}

/* ---- the split path of synchronised batch norm ---- */

static float *dl(clt_tensor *t) { return ref_misc_download(t); }

/* The batch in up to three shards: n0 on devs[0], n1 on devs[1], and an
 * empty shard on devs[0]. common_shift 0: the running mean is the shift;
 * 1: shard 0's first elements, sent to the other devices. */
static void check_split(clt_device *dev0, clt_device *dev1, shape s, int n0, int common_shift)
{
    clt_device *devs[3] = {dev0, dev1 ? dev1 : dev0, dev0};
    int ns[3] = {n0, s.n - n0, 0}, hw = sh_hw(s), c = s.c, nd = sh_ndim(s);
    size_t nx = sh_numel(s), plane = (size_t)c * hw;
    int64_t xs[4], cs[1] = {c}, ss[1] = {2 * c};
    sh_dims(s, xs);
    float *x = ref_misc_alloc(nx, sizeof *x), *dy = ref_misc_alloc(nx, sizeof *dy);
    float gamma[32], beta[32], rm[32], rv[32];
    fill_normal(x, nx, 3.0f, 2.0f);
    ref_misc_fill(dy, nx, &rng, -1, 1);
    ref_misc_fill(gamma, (size_t)c, &rng, 0.5f, 1.5f);
    ref_misc_fill(beta, (size_t)c, &rng, -0.5f, 0.5f);
    ref_misc_fill(rm, (size_t)c, &rng, 2.0f, 4.0f);
    ref_misc_fill(rv, (size_t)c, &rng, 1.0f, 5.0f);

    /* The whole batch on one device through the tensor calls. */
    clt_tensor *tx = ref_misc_tensor(dev0, CLT_FLOAT32, nd, xs, x);
    clt_tensor *tdy = ref_misc_tensor(dev0, CLT_FLOAT32, nd, xs, dy);
    clt_tensor *ty = ref_misc_tensor(dev0, CLT_FLOAT32, nd, xs, NULL);
    clt_tensor *tdx = ref_misc_tensor(dev0, CLT_FLOAT32, nd, xs, NULL);
    clt_tensor *tg = ref_misc_tensor(dev0, CLT_FLOAT32, 1, cs, gamma);
    clt_tensor *tb = ref_misc_tensor(dev0, CLT_FLOAT32, 1, cs, beta);
    clt_tensor *trm = ref_misc_tensor(dev0, CLT_FLOAT32, 1, cs, rm);
    clt_tensor *trv = ref_misc_tensor(dev0, CLT_FLOAT32, 1, cs, rv);
    clt_tensor *tsave = ref_misc_tensor(dev0, CLT_FLOAT32, 1, ss, NULL);
    clt_tensor *tdg = ref_misc_tensor(dev0, CLT_FLOAT32, 1, cs, NULL);
    clt_tensor *tdb = ref_misc_tensor(dev0, CLT_FLOAT32, 1, cs, NULL);
    CHECK_OK(clt_batchnorm_forward(tx, tg, tb, trm, trv, 1, tsave, ty));
    CHECK_OK(clt_batchnorm_backward(tx, tdy, tg, tsave, 1, tdx, tdg, tdb));
    float *wy = dl(ty), *wsave = dl(tsave), *wrm = dl(trm), *wrv = dl(trv), *wdx = dl(tdx);
    float *wdg = dl(tdg), *wdb = dl(tdb);

    /* Per shard: x, dy, y, dx, gamma, beta, running stats, shift, stats,
     * mean_invstd, bstats. */
    clt_tensor *sx[3] = {0}, *sdy[3] = {0}, *sy[3] = {0}, *sdx[3] = {0}, *sg[3], *sb[3], *srm[3], *srv[3];
    clt_tensor *sshift[3], *sst[3], *smi[3], *sbs[3];
    double count = (double)s.n * hw;
    for (int k = 0; k < 3; k++) {
        int64_t shs[4] = {ns[k], xs[1], xs[2], xs[3]};
        if (ns[k]) {
            sx[k] = ref_misc_tensor(devs[k], CLT_FLOAT32, nd, shs, x + (k ? (size_t)n0 * plane : 0));
            sdy[k] = ref_misc_tensor(devs[k], CLT_FLOAT32, nd, shs, dy + (k ? (size_t)n0 * plane : 0));
            sy[k] = ref_misc_tensor(devs[k], CLT_FLOAT32, nd, shs, NULL);
            sdx[k] = ref_misc_tensor(devs[k], CLT_FLOAT32, nd, shs, NULL);
        }
        sg[k] = ref_misc_tensor(devs[k], CLT_FLOAT32, 1, cs, gamma);
        sb[k] = ref_misc_tensor(devs[k], CLT_FLOAT32, 1, cs, beta);
        srm[k] = ref_misc_tensor(devs[k], CLT_FLOAT32, 1, cs, rm);
        srv[k] = ref_misc_tensor(devs[k], CLT_FLOAT32, 1, cs, rv);
        sshift[k] = ref_misc_tensor(devs[k], CLT_FLOAT32, 1, cs, NULL);
        sst[k] = ref_misc_tensor(devs[k], CLT_FLOAT32, 1, ss, NULL);
        smi[k] = ref_misc_tensor(devs[k], CLT_FLOAT32, 1, ss, NULL);
        sbs[k] = ref_misc_tensor(devs[k], CLT_FLOAT32, 1, ss, NULL);
        ref_misc_poison(sst[k]), ref_misc_poison(sbs[k]); /* the empty shard must write zeros */
    }
    /* 1. a common shift. */
    float *shift = NULL;
    if (common_shift) {
        CHECK_OK(clt_bn_shift_raw(devs[0], ns[0], c, hw, sx[0]->buf, sshift[0]->buf));
        shift = dl(sshift[0]);
        for (int k = 1; k < 3; k++) CHECK_OK(clt_tensor_upload(sshift[k], shift, c));
    }
    /* 2. partial sums; 3. host sum in shard order, written back; 4. finalize; 5. apply. */
    float sum[64] = {0};
    for (int k = 0; k < 3; k++) {
        cl_mem sh = common_shift ? sshift[k]->buf : srm[k]->buf;
        CHECK_OK(clt_bn_stats_raw(devs[k], ns[k], c, hw, sx[k] ? sx[k]->buf : NULL, sh, sst[k]->buf));
        float *part = dl(sst[k]);
        for (int i = 0; i < 2 * c; i++) sum[i] += part[i];
        if (k == 2) {
            int zeros = 1;
            for (int i = 0; i < 2 * c; i++) zeros &= part[i] == 0.0f;
            CHECK(zeros, "empty shard: statistics are not zero");
        }
        free(part);
    }
    for (int k = 0; k < 3; k++) {
        cl_mem sh = common_shift ? sshift[k]->buf : srm[k]->buf;
        CHECK_OK(clt_tensor_upload(sst[k], sum, 2 * c));
        CHECK_OK(clt_bn_finalize_raw(devs[k], c, count, sst[k]->buf, sh, 0.1f, 1e-5f, srm[k]->buf, srv[k]->buf,
                                     smi[k]->buf));
        if (ns[k]) CHECK_OK(clt_bn_apply_raw(devs[k], ns[k], c, hw, sx[k]->buf, smi[k]->buf, sg[k]->buf, sb[k]->buf,
                                             sy[k]->buf));
    }
    /* Backward: bstats per shard, host sum, then dx. */
    float bsum[64] = {0};
    for (int k = 0; k < 3; k++) {
        CHECK_OK(clt_bn_backward_stats_raw(devs[k], ns[k], c, hw, sx[k] ? sx[k]->buf : NULL,
                                           sdy[k] ? sdy[k]->buf : NULL, smi[k]->buf, sbs[k]->buf));
        float *part = dl(sbs[k]);
        for (int i = 0; i < 2 * c; i++) bsum[i] += part[i];
        free(part);
    }
    for (int k = 0; k < 2; k++) {
        CHECK_OK(clt_tensor_upload(sbs[k], bsum, 2 * c));
        CHECK_OK(clt_bn_backward_apply_raw(devs[k], ns[k], c, hw, sx[k]->buf, sdy[k]->buf, smi[k]->buf, sg[k]->buf,
                                           sbs[k]->buf, count, sdx[k]->buf));
    }

    char what[96];
    snprintf(what, sizeof what, "split (%d, %d, %d, %d) at %d, %s shift%s", s.n, s.c, s.h, s.w, n0,
             common_shift ? "shard-0" : "running-mean", dev1 ? ", two devices" : "");
    float *m0 = dl(smi[0]), *rm0 = dl(srm[0]), *rv0 = dl(srv[0]);
    double emi = max_rel_err(wsave, m0, (size_t)2 * c), erm = max_rel_err(wrm, rm0, (size_t)c),
           erv = max_rel_err(wrv, rv0, (size_t)c);
    CHECK(emi < 1e-5 && erm < 1e-5 && erv < 1e-5, "%s: mean_invstd rel err %g, running mean %g, var %g", what, emi,
          erm, erv);
    for (int k = 1; k < 3; k++) {
        float *mk = dl(smi[k]), *rmk = dl(srm[k]), *rvk = dl(srv[k]);
        CHECK(memcmp(mk, m0, (size_t)2 * c * sizeof *mk) == 0 && memcmp(rmk, rm0, (size_t)c * sizeof *rmk) == 0 &&
                  memcmp(rvk, rv0, (size_t)c * sizeof *rvk) == 0,
              "%s: shard %d's statistics differ from shard 0's", what, k);
        free(mk), free(rmk), free(rvk);
    }
    double ey = 0, edx = 0;
    for (int k = 0; k < 2; k++) {
        size_t off = k ? (size_t)n0 * plane : 0, cnt = (size_t)ns[k] * plane;
        float *yk = dl(sy[k]), *dxk = dl(sdx[k]);
        ey = fmax(ey, max_rel_err(wy + off, yk, cnt));
        edx = fmax(edx, max_rel_err(wdx + off, dxk, cnt));
        free(yk), free(dxk);
    }
    double edb = max_rel_err(wdb, bsum, (size_t)c), edg = max_rel_err(wdg, bsum + c, (size_t)c);
    CHECK(ey < 2e-5 && edx < 1e-4, "%s: y rel err %g, dx %g against the whole batch", what, ey, edx);
    CHECK(edb < 2e-5 && edg < 2e-5, "%s: summed bstats against dbeta %g, dgamma %g", what, edb, edg);

    free(x), free(dy), free(wy), free(wsave), free(wrm), free(wrv), free(wdx), free(wdg), free(wdb);
    free(shift), free(m0), free(rm0), free(rv0);
    for (int k = 0; k < 3; k++) {
        clt_tensor_destroy(sx[k]), clt_tensor_destroy(sdy[k]), clt_tensor_destroy(sy[k]), clt_tensor_destroy(sdx[k]);
        clt_tensor_destroy(sg[k]), clt_tensor_destroy(sb[k]), clt_tensor_destroy(srm[k]), clt_tensor_destroy(srv[k]);
        clt_tensor_destroy(sshift[k]), clt_tensor_destroy(sst[k]), clt_tensor_destroy(smi[k]);
        clt_tensor_destroy(sbs[k]);
    }
    clt_tensor_destroy(tx), clt_tensor_destroy(tdy), clt_tensor_destroy(ty), clt_tensor_destroy(tdx);
    clt_tensor_destroy(tg), clt_tensor_destroy(tb), clt_tensor_destroy(trm), clt_tensor_destroy(trv);
    clt_tensor_destroy(tsave), clt_tensor_destroy(tdg), clt_tensor_destroy(tdb);
}

/* ---- residual add ---- */

static void check_add(clt_device *dev)
{
    int64_t xs[4] = {3, 5, 7, 9};
    size_t n = 3 * 5 * 7 * 9;
    float *a = ref_misc_alloc(n, sizeof *a), *b = ref_misc_alloc(n, sizeof *b);
    ref_misc_fill(a, n, &rng, -3, 3);
    ref_misc_fill(b, n, &rng, -3, 3);
    clt_tensor *ta = ref_misc_tensor(dev, CLT_FLOAT32, 4, xs, a);
    clt_tensor *tb = ref_misc_tensor(dev, CLT_FLOAT32, 4, xs, b);
    clt_tensor *ty = ref_misc_tensor(dev, CLT_FLOAT32, 4, xs, NULL);
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

/* ---- errors ---- */

#define EXPECT_ERR(call, code, a, b)                                                                    \
    do {                                                                                                \
        clt_status s_ = (call);                                                                         \
        CHECK(s_ == (code) && ref_misc_error_has((a), (b), NULL), "%s: %s \"%s\"", #call, clt_status_name(s_), \
              clt_last_error());                                                                        \
    } while (0)

static void check_errors(clt_device *dev, clt_device *dev1)
{
    int64_t xs[4] = {2, 3, 4, 4}, x3[3] = {2, 3, 4}, cs[1] = {3}, c4[1] = {4}, ss[1] = {6}, one[2] = {1, 3},
            one4[4] = {1, 3, 1, 1}, bad[4] = {2, 3, 4, 5};
    clt_tensor *x = ref_misc_tensor(dev, CLT_FLOAT32, 4, xs, NULL);
    clt_tensor *y = ref_misc_tensor(dev, CLT_FLOAT32, 4, xs, NULL);
    clt_tensor *xi = ref_misc_tensor(dev, CLT_INT32, 4, xs, NULL);
    clt_tensor *x3d = ref_misc_tensor(dev, CLT_FLOAT32, 3, x3, NULL);
    clt_tensor *ybad = ref_misc_tensor(dev, CLT_FLOAT32, 4, bad, NULL);
    clt_tensor *g = ref_misc_tensor(dev, CLT_FLOAT32, 1, cs, NULL);
    clt_tensor *g4 = ref_misc_tensor(dev, CLT_FLOAT32, 1, c4, NULL);
    clt_tensor *rm = ref_misc_tensor(dev, CLT_FLOAT32, 1, cs, NULL);
    clt_tensor *rv = ref_misc_tensor(dev, CLT_FLOAT32, 1, cs, NULL);
    clt_tensor *save = ref_misc_tensor(dev, CLT_FLOAT32, 1, ss, NULL);
    clt_tensor *x1 = ref_misc_tensor(dev, CLT_FLOAT32, 2, one, NULL);
    clt_tensor *x14 = ref_misc_tensor(dev, CLT_FLOAT32, 4, one4, NULL);
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
    /* Add. */
    EXPECT_ERR(clt_add(x, ybad, y), CLT_ERR_SHAPE, "clt_add: b", "(2, 3, 4, 5)");
    EXPECT_ERR(clt_add(x, y, NULL), CLT_ERR_INVALID_ARG, "y is NULL", NULL);
    EXPECT_ERR(clt_add(xi, xi, xi), CLT_ERR_SHAPE, "int32", NULL);
    /* Raw launchers. */
    EXPECT_ERR(clt_bn_finalize_raw(dev, 3, 1.0, save->buf, rm->buf, 0.1f, 1e-5f, rm->buf, rv->buf, save->buf),
               CLT_ERR_INVALID_ARG, "more than 1 value per channel", NULL);
    EXPECT_ERR(clt_bn_finalize_raw(dev, 3, 8.0, save->buf, rm->buf, 0.1f, 1e-5f, rm->buf, NULL, save->buf),
               CLT_ERR_INVALID_ARG, "both", NULL);
    EXPECT_ERR(clt_bn_stats_raw(dev, -1, 3, 16, x->buf, rm->buf, save->buf), CLT_ERR_SHAPE, "clt_bn_stats_raw",
               NULL);
    EXPECT_ERR(clt_bn_stats_raw(dev, 2, 3, 16, x->buf, NULL, save->buf), CLT_ERR_INVALID_ARG, "shift", NULL);
    EXPECT_ERR(clt_bn_shift_raw(dev, 0, 3, 16, x->buf, rm->buf), CLT_ERR_SHAPE, "n >= 1", NULL);
    EXPECT_ERR(clt_bn_backward_apply_raw(dev, 2, 3, 16, x->buf, y->buf, save->buf, NULL, save->buf, 32.0, NULL),
               CLT_ERR_INVALID_ARG, "dx", NULL);
    /* Tensors of another device. */
    if (dev1) {
        clt_tensor *g1 = ref_misc_tensor(dev1, CLT_FLOAT32, 1, cs, NULL);
        clt_tensor *y1 = ref_misc_tensor(dev1, CLT_FLOAT32, 4, xs, NULL);
        EXPECT_ERR(clt_batchnorm_forward(x, g1, g, rm, rv, 1, save, y), CLT_ERR_INVALID_ARG, "different devices",
                   NULL);
        EXPECT_ERR(clt_batchnorm_forward(x, g, g, rm, rv, 1, save, y1), CLT_ERR_INVALID_ARG, "different devices",
                   NULL);
        EXPECT_ERR(clt_batchnorm_backward(x, y, g, save, 1, y, g1, NULL), CLT_ERR_INVALID_ARG, "different devices",
                   NULL);
        EXPECT_ERR(clt_add(x, y1, y), CLT_ERR_INVALID_ARG, "different devices", NULL);
        clt_tensor_destroy(g1), clt_tensor_destroy(y1);
    }
    clt_tensor_destroy(x), clt_tensor_destroy(y), clt_tensor_destroy(xi), clt_tensor_destroy(x3d);
    clt_tensor_destroy(ybad), clt_tensor_destroy(g), clt_tensor_destroy(g4), clt_tensor_destroy(rm);
    clt_tensor_destroy(rv), clt_tensor_destroy(save), clt_tensor_destroy(x1), clt_tensor_destroy(x14);
}

int main(void)
{
    int count = test_need_devices(1);
    clt_device *dev = NULL, *dev1 = NULL;
    REQUIRE_OK(clt_device_open(0, &dev));
    if (count > 1) REQUIRE_OK(clt_device_open(1, &dev1));

    const variant plain = {1, 0.3f, 1.5f, 2e-5, 2e-5, 2e-5};
    const shape shapes[] = {
        {1, 3, 5, 7},    /* batch 1, h*w > 1 */
        {4, 1, 6, 6},    /* one channel */
        {3, 5, 7, 9},    /* odd sizes */
        {16, 10, 0, 0},  /* (n, c) features */
        {2, 7, 0, 0},    /* two samples of features */
        {5, 4, 1, 1},    /* 1x1 planes */
        {4, 3, 8, 8},    /* plane = one work-group of lanes */
        {8, 3, 28, 28},  /* planes larger than a work-group, several chunks */
        {64, 2, 4, 4},   /* many small planes, several chunks */
        {300, 6, 0, 0},  /* features, several chunks */
        {8, 512, 4, 4},  /* ResNet-18 stage 4 on a shard of 8 */
        {8, 256, 7, 7},  /* ResNet-18 stage 3 on a shard of 8 */
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int training = 0; training < 2; training++) check_bn(dev, shapes[i], training, plain);
    for (int t = 0; t < 8; t++) {
        shape s;
        s.n = 1 + ref_misc_randint(&rng, 9);
        s.c = 1 + ref_misc_randint(&rng, 12);
        s.h = t & 1 ? 0 : 1 + ref_misc_randint(&rng, 13);
        s.w = s.h ? 1 + ref_misc_randint(&rng, 13) : 0;
        if (s.n * sh_hw(s) < 2) s.n = 2;
        check_bn(dev, s, t & 2 ? 1 : 0, plain);
        check_bn(dev, s, 1, (variant){0, -1.0f, 0.5f, 2e-5, 2e-5, 2e-5}); /* no gamma/beta */
    }
    /* Large means against small spreads: the shifted sums keep the variance. */
    check_bn(dev, (shape){16, 4, 28, 28}, 1, (variant){1, 100.0f, 1.0f, 5e-5, 5e-5, 5e-5});
    check_bn(dev, (shape){256, 8, 0, 0}, 1, (variant){1, -300.0f, 0.5f, 2e-4, 2e-4, 2e-4});
    check_bn(dev, (shape){32, 3, 7, 7}, 1, (variant){1, 5.0f, 1e-3f, 5e-5, 5e-4, 5e-4});

    check_running(dev);

    check_fd(dev, (shape){3, 2, 2, 3}, 1);
    check_fd(dev, (shape){3, 2, 2, 3}, 0);
    check_fd(dev, (shape){5, 3, 0, 0}, 1);
    check_fd(dev, (shape){1, 2, 3, 3}, 1); /* batch 1 */
    check_fd(dev, (shape){4, 3, 0, 0}, 0);

    check_split(dev, dev1, (shape){6, 5, 9, 11}, 2, 0);
    check_split(dev, dev1, (shape){6, 5, 9, 11}, 5, 1);
    check_split(dev, dev1, (shape){40, 3, 14, 14}, 17, 1);
    check_split(dev, dev1, (shape){20, 12, 0, 0}, 9, 0);
    check_split(dev, NULL, (shape){7, 4, 5, 5}, 3, 1);

    check_add(dev);
    check_errors(dev, dev1);
    clt_device_destroy(dev1);
    clt_device_destroy(dev);
    return test_result();
}
