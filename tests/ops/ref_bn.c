/* Plain-C reference for batch normalisation (see ref_bn.h). */
#include "ref_bn.h"

#include <math.h>
#include <string.h>

#include "ref_misc.h"

int ref_bn_hw(ref_bn_shape s) { return s.h ? s.h * s.w : 1; }
size_t ref_bn_numel(ref_bn_shape s) { return (size_t)s.n * s.c * ref_bn_hw(s); }
int ref_bn_ndim(ref_bn_shape s) { return s.h ? 4 : 2; }
void ref_bn_dims(ref_bn_shape s, int64_t *d)
{
    d[0] = s.n, d[1] = s.c, d[2] = s.h, d[3] = s.w;
}

void ref_bn_forward(const float *x, ref_bn_shape s, const float *gamma, const float *beta, float *rm, float *rv,
                    int training, float *y, double *mean, double *invstd)
{
    int hw = ref_bn_hw(s);
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
                rm[c] = (float)((1 - REF_BN_MOM) * rm[c] + REF_BN_MOM * mu);
                rv[c] = (float)((1 - REF_BN_MOM) * rv[c] + REF_BN_MOM * var * m / (m - 1));
            }
        } else {
            mu = rm[c];
            var = rv[c];
        }
        double is = 1.0 / sqrt(var + REF_BN_EPS);
        mean[c] = mu, invstd[c] = is;
        double g = gamma ? gamma[c] : 1.0, b = beta ? beta[c] : 0.0;
        for (int n = 0; n < s.n; n++)
            for (int p = 0; p < hw; p++) {
                size_t i = ((size_t)n * s.c + c) * hw + p;
                y[i] = (float)(g * (x[i] - mu) * is + b);
            }
    }
}

void ref_bn_backward(const float *x, const float *dy, ref_bn_shape s, const float *gamma, const double *mean,
                     const double *invstd, int training, float *dx, float *dgamma, float *dbeta)
{
    int hw = ref_bn_hw(s);
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

void ref_bn_fill_normal(uint64_t *rng, float *x, size_t n, float mu, float sigma)
{
    for (size_t i = 0; i < n; i++) {
        float u = 0;
        for (int k = 0; k < 4; k++) u += ref_misc_uniform(rng, -1.5f, 1.5f);
        x[i] = mu + sigma * u;
    }
}

void ref_bn_fill(uint64_t *rng, ref_bn_shape s, float mu, float sigma, const float rm[2], const float rv[2],
                 const ref_bn_data *d)
{
    size_t nx = ref_bn_numel(s), c = (size_t)s.c;
    ref_bn_fill_normal(rng, d->x, nx, mu, sigma);
    ref_misc_fill(d->dy, nx, rng, -1, 1);
    ref_misc_fill(d->gamma, c, rng, 0.5f, 1.5f);
    ref_misc_fill(d->beta, c, rng, -0.5f, 0.5f);
    ref_misc_fill(d->rm, c, rng, rm[0], rm[1]);
    ref_misc_fill(d->rv, c, rng, rv[0], rv[1]);
}

void ref_bn_tensors_make(clt_device *dev, ref_bn_shape s, const float *x, const float *dy, const float *gamma,
                         const float *beta, const float *rm, const float *rv, ref_bn_tensors *t)
{
    int64_t xs[4], cs[1] = {s.c}, ss[1] = {2 * (int64_t)s.c};
    ref_bn_dims(s, xs);
    int nd = ref_bn_ndim(s);
    t->x = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, nd, xs, x);
    t->dy = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, nd, xs, dy);
    t->y = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, nd, xs, NULL);
    t->dx = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, nd, xs, NULL);
    t->gamma = gamma ? ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, cs, gamma) : NULL;
    t->beta = beta ? ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, cs, beta) : NULL;
    t->rm = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, cs, rm);
    t->rv = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, cs, rv);
    t->save = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, ss, NULL);
    t->dgamma = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, cs, NULL);
    t->dbeta = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, cs, NULL);
}

void ref_bn_tensors_free(ref_bn_tensors *t)
{
    clt_tensor *all[] = {t->x, t->dy, t->y, t->dx, t->gamma, t->beta, t->rm, t->rv, t->save, t->dgamma, t->dbeta};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) clt_tensor_destroy(all[i]);
    memset(t, 0, sizeof *t);
}
