/* Plain-C references for the non-convolution ops (see ref_misc.h). */
#include "ref_misc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t ref_misc_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

float ref_misc_uniform(uint64_t *state, float lo, float hi)
{
    double u = (double)(ref_misc_rand(state) >> 11) / 9007199254740992.0;
    return (float)(lo + (hi - lo) * u);
}

int ref_misc_randint(uint64_t *state, int n) { return (int)(ref_misc_rand(state) % (uint64_t)n); }

void ref_misc_fill(float *x, size_t n, uint64_t *state, float lo, float hi)
{
    for (size_t i = 0; i < n; i++) x[i] = ref_misc_uniform(state, lo, hi);
}

void *ref_misc_alloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "out of memory (%zu x %zu)\n", n, size);
        exit(1);
    }
    return p;
}

clt_tensor *ref_misc_tensor(clt_device *dev, clt_dtype dtype, int ndim, const int64_t *shape,
                            const void *data)
{
    clt_tensor *t = NULL;
    clt_status s = clt_tensor_create(dev, dtype, ndim, shape, &t);
    if (s == CLT_OK && data) s = clt_tensor_upload(t, data, clt_tensor_numel(t));
    if (s != CLT_OK) {
        fprintf(stderr, "tensor set-up failed: %s: %s\n", clt_status_name(s), clt_last_error());
        exit(1);
    }
    return t;
}

void *ref_misc_download(const clt_tensor *t)
{
    void *p = ref_misc_alloc((size_t)clt_tensor_numel(t), 4);
    clt_status s = clt_tensor_download(t, p, clt_tensor_numel(t));
    if (s != CLT_OK) {
        fprintf(stderr, "download failed: %s: %s\n", clt_status_name(s), clt_last_error());
        exit(1);
    }
    return p;
}

void ref_misc_poison(clt_tensor *t)
{
    clt_status s = clt_tensor_fill(t, NAN);
    if (s != CLT_OK) {
        fprintf(stderr, "fill failed: %s\n", clt_last_error());
        exit(1);
    }
}

int ref_misc_error_has(const char *a, const char *b, const char *c)
{
    const char *e = clt_last_error();
    return (!a || strstr(e, a)) && (!b || strstr(e, b)) && (!c || strstr(e, c));
}

/* ---- pooling ---- */

void ref_misc_pool_forward(clt_pool_kind kind, const float *x, int n, int c, int h, int w, int k,
                           int s, float *y, int32_t *argmax)
{
    int oh = (h - k) / s + 1, ow = (w - k) / s + 1;
    for (int p = 0; p < n * c; p++) {
        const float *xp = x + (size_t)p * h * w;
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++) {
                size_t o = ((size_t)p * oh + oy) * ow + ox;
                double sum = 0;
                float best = -INFINITY;
                int besti = -1;
                for (int i = 0; i < k; i++)
                    for (int j = 0; j < k; j++) {
                        int idx = (oy * s + i) * w + ox * s + j;
                        sum += xp[idx];
                        if (besti < 0 || xp[idx] > best) {
                            best = xp[idx];
                            besti = idx;
                        }
                    }
                if (kind == CLT_POOL_MAX) {
                    y[o] = best;
                    if (argmax) argmax[o] = besti;
                } else {
                    y[o] = (float)(sum / (k * k));
                }
            }
    }
}

void ref_misc_pool_backward(clt_pool_kind kind, const float *dy, const int32_t *argmax, int n, int c,
                            int h, int w, int k, int s, float *dx)
{
    int oh = (h - k) / s + 1, ow = (w - k) / s + 1;
    size_t plane = (size_t)h * w;
    double *acc = ref_misc_alloc(plane, sizeof *acc);
    for (int p = 0; p < n * c; p++) {
        memset(acc, 0, plane * sizeof *acc);
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++) {
                size_t o = ((size_t)p * oh + oy) * ow + ox;
                if (kind == CLT_POOL_MAX) {
                    acc[argmax[o]] += dy[o];
                } else {
                    for (int i = 0; i < k; i++)
                        for (int j = 0; j < k; j++) acc[(oy * s + i) * w + ox * s + j] += dy[o] / (double)(k * k);
                }
            }
        for (size_t i = 0; i < plane; i++) dx[(size_t)p * plane + i] = (float)acc[i];
    }
    free(acc);
}

void ref_misc_gap_forward(const float *x, int nc, int hw, float *y)
{
    for (int r = 0; r < nc; r++) {
        double sum = 0;
        for (int i = 0; i < hw; i++) sum += x[(size_t)r * hw + i];
        y[r] = (float)(sum / hw);
    }
}

void ref_misc_gap_backward(const float *dy, int nc, int hw, float *dx)
{
    for (int r = 0; r < nc; r++)
        for (int i = 0; i < hw; i++) dx[(size_t)r * hw + i] = (float)((double)dy[r] / hw);
}

/* ---- activations ---- */

void ref_misc_act_forward(clt_activation f, const float *x, size_t n, float *y)
{
    for (size_t i = 0; i < n; i++) {
        double v = x[i];
        y[i] = (float)(f == CLT_ACT_RELU ? (v > 0 ? v : 0) : f == CLT_ACT_SIGMOID ? 1.0 / (1.0 + exp(-v)) : tanh(v));
    }
}

void ref_misc_act_backward(clt_activation f, const float *y, const float *dy, size_t n, float *dx)
{
    for (size_t i = 0; i < n; i++) {
        double v = y[i], g = dy[i];
        dx[i] = (float)(f == CLT_ACT_RELU ? (v > 0 ? g : 0) : f == CLT_ACT_SIGMOID ? g * v * (1 - v) : g * (1 - v * v));
    }
}

/* ---- dense ---- */

void ref_misc_dense_forward(const float *x, const float *w, const float *b, int n, int in, int out,
                            float *y)
{
    for (int i = 0; i < n; i++)
        for (int o = 0; o < out; o++) {
            double sum = b ? b[o] : 0;
            for (int j = 0; j < in; j++) sum += (double)x[(size_t)i * in + j] * w[(size_t)o * in + j];
            y[(size_t)i * out + o] = (float)sum;
        }
}

void ref_misc_dense_backward(const float *x, const float *w, const float *dy, int n, int in, int out,
                             float *dx, float *dw, float *db)
{
    if (dx)
        for (int i = 0; i < n; i++)
            for (int j = 0; j < in; j++) {
                double sum = 0;
                for (int o = 0; o < out; o++) sum += (double)dy[(size_t)i * out + o] * w[(size_t)o * in + j];
                dx[(size_t)i * in + j] = (float)sum;
            }
    if (dw)
        for (int o = 0; o < out; o++)
            for (int j = 0; j < in; j++) {
                double sum = 0;
                for (int i = 0; i < n; i++) sum += (double)dy[(size_t)i * out + o] * x[(size_t)i * in + j];
                dw[(size_t)o * in + j] = (float)sum;
            }
    if (db)
        for (int o = 0; o < out; o++) {
            double sum = 0;
            for (int i = 0; i < n; i++) sum += dy[(size_t)i * out + o];
            db[o] = (float)sum;
        }
}

/* ---- softmax cross-entropy ---- */

double ref_misc_xent(const float *logits, const int32_t *labels, int n, int classes, float scale,
                     double *loss, int *correct, float *dlogits)
{
    double total = 0;
    for (int r = 0; r < n; r++) {
        const float *x = logits + (size_t)r * classes;
        double m = x[0];
        int am = 0;
        for (int j = 1; j < classes; j++)
            if (x[j] > m) {
                m = x[j];
                am = j;
            }
        double sum = 0;
        for (int j = 0; j < classes; j++) sum += exp((double)x[j] - m);
        double l = m + log(sum) - x[labels[r]];
        total += l;
        if (loss) loss[r] = l;
        if (correct) correct[r] = am == labels[r];
        if (dlogits)
            for (int j = 0; j < classes; j++)
                dlogits[(size_t)r * classes + j] =
                    (float)(scale * (exp((double)x[j] - m) / sum - (j == labels[r] ? 1.0 : 0.0)));
    }
    return total;
}

/* ---- SGD ---- */

void ref_misc_sgd(float *w, const float *g, float *v, size_t n, float lr, float m, float wd)
{
    for (size_t i = 0; i < n; i++) {
        float gp = wd != 0.0f ? fmaf(wd, w[i], g[i]) : g[i];
        float step = gp;
        if (m != 0.0f) {
            volatile float mv = m * v[i]; /* two roundings, as mul_ then add_ */
            step = mv + gp;
            v[i] = step;
        } else if (v) {
            v[i] = gp;
        }
        w[i] = fmaf(-lr, step, w[i]);
    }
}
