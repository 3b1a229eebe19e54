#include "ref_net.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int64_t numel(const clt_shape *s) { return clt_shape_numel(s); }

void ref_net_init(ref_net *r, const clt_model *m, int n, float *const *params)
{
    memset(r, 0, sizeof *r);
    r->model = m;
    r->n = n;
    int np = 0;
    for (int i = 0; i < m->n_layers; i++) np += m->layers[i].n_params;
    r->n_params = np;
    r->params = calloc((size_t)np, sizeof *r->params);
    r->grads = calloc((size_t)np, sizeof *r->grads);
    int k = 0;
    for (int i = 0; i < m->n_layers; i++)
        for (int p = 0; p < m->layers[i].n_params; p++, k++) {
            int64_t c = m->layers[i].params[p].numel;
            r->params[k] = calloc((size_t)c, sizeof(double));
            r->grads[k] = calloc((size_t)c, sizeof(double));
            for (int64_t j = 0; j < c; j++) r->params[k][j] = params[k][j];
        }
    r->act = calloc((size_t)m->n_layers + 1, sizeof *r->act);
    r->dact = calloc((size_t)m->n_layers + 1, sizeof *r->dact);
    r->act[0] = calloc((size_t)(n * numel(&m->in)), sizeof(double));
    r->dact[0] = calloc((size_t)(n * numel(&m->in)), sizeof(double));
    for (int i = 0; i < m->n_layers; i++) {
        r->act[i + 1] = calloc((size_t)(n * numel(&m->layers[i].out)), sizeof(double));
        r->dact[i + 1] = calloc((size_t)(n * numel(&m->layers[i].out)), sizeof(double));
    }
}

void ref_net_free(ref_net *r)
{
    for (int k = 0; k < r->n_params; k++) {
        free(r->params[k]);
        free(r->grads[k]);
    }
    for (int i = 0; i <= r->model->n_layers; i++) {
        free(r->act[i]);
        free(r->dact[i]);
    }
    free(r->params);
    free(r->grads);
    free(r->act);
    free(r->dact);
}

static int first_param(const ref_net *r, int layer)
{
    int k = 0;
    for (int i = 0; i < layer; i++) k += r->model->layers[i].n_params;
    return k;
}

static void conv_fwd(const clt_layer *l, int n, const double *x, const double *w, const double *b, double *y)
{
    int C = l->in.d[0], H = l->in.d[1], W = l->in.d[2], CO = l->out.d[0], OH = l->out.d[1], OW = l->out.d[2];
    int K = l->args[1], S = l->nargs > 2 ? l->args[2] : 1, P = l->nargs > 3 ? l->args[3] : 0;
    for (int s = 0; s < n; s++)
        for (int o = 0; o < CO; o++)
            for (int i = 0; i < OH; i++)
                for (int j = 0; j < OW; j++) {
                    double acc = b[o];
                    for (int c = 0; c < C; c++)
                        for (int u = 0; u < K; u++)
                            for (int v = 0; v < K; v++) {
                                int h = i * S - P + u, ww = j * S - P + v;
                                if (h < 0 || h >= H || ww < 0 || ww >= W) continue;
                                acc += x[((s * C + c) * H + h) * W + ww] * w[((o * C + c) * K + u) * K + v];
                            }
                    y[((s * CO + o) * OH + i) * OW + j] = acc;
                }
}

static void conv_bwd(const clt_layer *l, int n, const double *x, const double *w, const double *dy, double *dx,
                     double *dw, double *db)
{
    int C = l->in.d[0], H = l->in.d[1], W = l->in.d[2], CO = l->out.d[0], OH = l->out.d[1], OW = l->out.d[2];
    int K = l->args[1], S = l->nargs > 2 ? l->args[2] : 1, P = l->nargs > 3 ? l->args[3] : 0;
    memset(dx, 0, sizeof(double) * (size_t)(n * C * H * W));
    memset(dw, 0, sizeof(double) * (size_t)(CO * C * K * K));
    memset(db, 0, sizeof(double) * (size_t)CO);
    for (int s = 0; s < n; s++)
        for (int o = 0; o < CO; o++)
            for (int i = 0; i < OH; i++)
                for (int j = 0; j < OW; j++) {
                    double g = dy[((s * CO + o) * OH + i) * OW + j];
                    db[o] += g;
                    for (int c = 0; c < C; c++)
                        for (int u = 0; u < K; u++)
                            for (int v = 0; v < K; v++) {
                                int h = i * S - P + u, ww = j * S - P + v;
                                if (h < 0 || h >= H || ww < 0 || ww >= W) continue;
                                dw[((o * C + c) * K + u) * K + v] += g * x[((s * C + c) * H + h) * W + ww];
                                dx[((s * C + c) * H + h) * W + ww] += g * w[((o * C + c) * K + u) * K + v];
                            }
                }
}

static void pool(const clt_layer *l, int n, const double *x, double *y, const double *dy, double *dx)
{
    int C = l->in.d[0], H = l->in.d[1], W = l->in.d[2], OH = l->out.d[1], OW = l->out.d[2];
    int K = l->args[0], S = l->nargs > 1 ? l->args[1] : K;
    if (dx) memset(dx, 0, sizeof(double) * (size_t)(n * C * H * W));
    for (int s = 0; s < n; s++)
        for (int c = 0; c < C; c++)
            for (int i = 0; i < OH; i++)
                for (int j = 0; j < OW; j++) {
                    const double *plane = x + (size_t)(s * C + c) * H * W;
                    int oi = ((s * C + c) * OH + i) * OW + j;
                    double best = -INFINITY, sum = 0;
                    int arg = 0;
                    for (int u = 0; u < K; u++)
                        for (int v = 0; v < K; v++) {
                            int at = (i * S + u) * W + j * S + v;
                            sum += plane[at];
                            if (plane[at] > best) best = plane[at], arg = at;
                        }
                    if (y) y[oi] = l->variant == CLT_POOL_MAX ? best : sum / (K * K);
                    if (!dx) continue;
                    double *dplane = dx + (size_t)(s * C + c) * H * W;
                    if (l->variant == CLT_POOL_MAX)
                        dplane[arg] += dy[oi];
                    else
                        for (int u = 0; u < K; u++)
                            for (int v = 0; v < K; v++) dplane[(i * S + u) * W + j * S + v] += dy[oi] / (K * K);
                }
}

/* Batch norm, training mode (batch statistics), over (n, c, hw). */
/* Mean and 1/sqrt(biased variance + eps) of channel ch over (n, hw). */
static void bn_moments(int n, int c, int hw, const double *x, int ch, double *mean, double *inv)
{
    double m = 0, v = 0, M = (double)n * hw;
    for (int s = 0; s < n; s++)
        for (int i = 0; i < hw; i++) m += x[((size_t)s * c + ch) * hw + i];
    m /= M;
    for (int s = 0; s < n; s++)
        for (int i = 0; i < hw; i++) {
            double d = x[((size_t)s * c + ch) * hw + i] - m;
            v += d * d;
        }
    *mean = m;
    *inv = 1 / sqrt(v / M + 1e-5);
}

static void bn_fwd(int n, int c, int hw, const double *x, const double *g, const double *b, double *y)
{
    for (int ch = 0; ch < c; ch++) {
        double m, inv;
        bn_moments(n, c, hw, x, ch, &m, &inv);
        for (int s = 0; s < n; s++)
            for (int i = 0; i < hw; i++) {
                size_t at = ((size_t)s * c + ch) * hw + i;
                y[at] = g[ch] * (x[at] - m) * inv + b[ch];
            }
    }
}

static void bn_bwd(int n, int c, int hw, const double *x, const double *g, const double *dy, double *dx, double *dg,
                   double *db)
{
    for (int ch = 0; ch < c; ch++) {
        double m, inv, M = (double)n * hw, sdy = 0, sdyx = 0;
        bn_moments(n, c, hw, x, ch, &m, &inv);
        for (int s = 0; s < n; s++)
            for (int i = 0; i < hw; i++) {
                size_t at = ((size_t)s * c + ch) * hw + i;
                sdy += dy[at];
                sdyx += dy[at] * (x[at] - m) * inv;
            }
        dg[ch] = sdyx;
        db[ch] = sdy;
        for (int s = 0; s < n; s++)
            for (int i = 0; i < hw; i++) {
                size_t at = ((size_t)s * c + ch) * hw + i;
                double xh = (x[at] - m) * inv;
                dx[at] = g[ch] * inv * (dy[at] - sdy / M - xh * sdyx / M);
            }
    }
}

static int bn_plane(const clt_layer *l) { return l->in.ndim == 3 ? l->in.d[1] * l->in.d[2] : 1; }

/* The residual block from its parts (conv1, bn1, conv2, bn2[, shortcut]);
 * P: the block's parameters in that order; G: their gradients. With dy
 * given, runs the backward too (recomputing the forward). */
static void res_block(const clt_layer *l, int n, const double *x, double **P, double **G, double *y,
                      const double *dy, double *dx)
{
    const clt_layer *c1 = &l->subs[0], *c2 = &l->subs[2];
    int proj = l->n_subs > 4;
    size_t O = (size_t)n * (size_t)numel(&l->out), I = (size_t)n * (size_t)numel(&l->in);
    int C = l->out.d[0], HW = l->out.d[1] * l->out.d[2];
    double *t1 = calloc(O, 8), *t2 = calloc(O, 8), *t4 = calloc(O, 8), *t5 = calloc(O, 8), *t6 = calloc(O, 8);
    conv_fwd(c1, n, x, P[0], P[1], t1);
    bn_fwd(n, C, HW, t1, P[2], P[3], t2);
    for (size_t i = 0; i < O; i++) t2[i] = t2[i] > 0 ? t2[i] : 0;
    conv_fwd(c2, n, t2, P[6], P[7], t4);
    bn_fwd(n, C, HW, t4, P[8], P[9], t5);
    if (proj) conv_fwd(&l->subs[4], n, x, P[12], P[13], t6);
    for (size_t i = 0; i < O; i++) {
        double v = t5[i] + (proj ? t6[i] : x[i]);
        y[i] = v > 0 ? v : 0;
    }
    if (dy) {
        double *ds = calloc(O, 8), *a = calloc(O, 8), *b2 = calloc(O, 8), *dxm = calloc(I, 8);
        for (size_t i = 0; i < O; i++) ds[i] = y[i] > 0 ? dy[i] : 0;
        bn_bwd(n, C, HW, t4, P[8], ds, a, G[8], G[9]);
        conv_bwd(c2, n, t2, P[6], a, b2, G[6], G[7]);
        for (size_t i = 0; i < O; i++) b2[i] = t2[i] > 0 ? b2[i] : 0;
        bn_bwd(n, C, HW, t1, P[2], b2, a, G[2], G[3]);
        conv_bwd(c1, n, x, P[0], a, dxm, G[0], G[1]);
        if (proj) {
            double *dsc = calloc(I, 8);
            conv_bwd(&l->subs[4], n, x, P[12], ds, dsc, G[12], G[13]);
            for (size_t i = 0; i < I; i++) dx[i] = dxm[i] + dsc[i];
            free(dsc);
        } else {
            for (size_t i = 0; i < I; i++) dx[i] = dxm[i] + ds[i];
        }
        free(ds), free(a), free(b2), free(dxm);
    }
    free(t1), free(t2), free(t4), free(t5), free(t6);
}

static double act(int f, double x) { return f == CLT_ACT_RELU ? (x > 0 ? x : 0) : f == CLT_ACT_SIGMOID ? 1 / (1 + exp(-x)) : tanh(x); }
static double dact_from_y(int f, double y) { return f == CLT_ACT_RELU ? (y > 0) : f == CLT_ACT_SIGMOID ? y * (1 - y) : 1 - y * y; }

double ref_net_forward(ref_net *r, const float *images, const int32_t *labels, int *correct)
{
    const clt_model *m = r->model;
    int n = r->n;
    for (int64_t i = 0; i < n * numel(&m->in); i++) r->act[0][i] = images[i];
    for (int li = 0; li < m->n_layers; li++) {
        const clt_layer *l = &m->layers[li];
        double *x = r->act[li], *y = r->act[li + 1];
        int64_t in = numel(&l->in), out = numel(&l->out);
        int k = first_param(r, li);
        if (l->kind == &clt_layer_conv) conv_fwd(l, n, x, r->params[k], r->params[k + 1], y);
        else if (l->kind == &clt_layer_pool) pool(l, n, x, y, NULL, NULL);
        else if (l->kind == &clt_layer_activation)
            for (int64_t i = 0; i < n * in; i++) y[i] = act(l->variant, x[i]);
        else if (l->kind == &clt_layer_flatten) memcpy(y, x, sizeof(double) * (size_t)(n * in));
        else if (l->kind == &clt_layer_bn) bn_fwd(n, l->in.d[0], bn_plane(l), x, r->params[k], r->params[k + 1], y);
        else if (l->kind == &clt_layer_res) res_block(l, n, x, r->params + k, r->grads + k, y, NULL, NULL);
        else if (l->kind == &clt_layer_gap) {
            int hw = l->in.d[1] * l->in.d[2];
            for (int64_t i = 0; i < n * out; i++) {
                double s = 0;
                for (int j = 0; j < hw; j++) s += x[i * hw + j];
                y[i] = s / hw;
            }
        } else if (l->kind == &clt_layer_dense) {
            for (int s = 0; s < n; s++)
                for (int64_t o = 0; o < out; o++) {
                    double acc = r->params[k + 1][o];
                    for (int64_t i = 0; i < in; i++) acc += x[s * in + i] * r->params[k][o * in + i];
                    y[s * out + o] = acc;
                }
        }
    }
    double loss = 0;
    int ok = 0, K = m->classes;
    const double *z = r->act[m->n_layers];
    for (int s = 0; s < n; s++) {
        double mx = z[s * K];
        int arg = 0;
        for (int c = 1; c < K; c++)
            if (z[s * K + c] > mx) mx = z[s * K + c], arg = c;
        double se = 0;
        for (int c = 0; c < K; c++) se += exp(z[s * K + c] - mx);
        loss += log(se) + mx - z[s * K + labels[s]];
        ok += arg == labels[s];
    }
    if (correct) *correct = ok;
    return loss;
}

void ref_net_backward(ref_net *r, const int32_t *labels, double scale)
{
    const clt_model *m = r->model;
    int n = r->n, K = m->classes, L = m->n_layers;
    const double *z = r->act[L];
    double *dz = r->dact[L];
    for (int s = 0; s < n; s++) {
        double mx = z[s * K];
        for (int c = 1; c < K; c++) mx = fmax(mx, z[s * K + c]);
        double se = 0;
        for (int c = 0; c < K; c++) se += exp(z[s * K + c] - mx);
        for (int c = 0; c < K; c++) dz[s * K + c] = scale * (exp(z[s * K + c] - mx) / se - (c == labels[s]));
    }
    for (int li = L - 1; li >= 0; li--) {
        const clt_layer *l = &m->layers[li];
        double *x = r->act[li], *y = r->act[li + 1], *dy = r->dact[li + 1], *dx = r->dact[li];
        int64_t in = numel(&l->in), out = numel(&l->out);
        int k = first_param(r, li);
        if (l->kind == &clt_layer_conv) conv_bwd(l, n, x, r->params[k], dy, dx, r->grads[k], r->grads[k + 1]);
        else if (l->kind == &clt_layer_pool) pool(l, n, x, NULL, dy, dx);
        else if (l->kind == &clt_layer_activation)
            for (int64_t i = 0; i < n * in; i++) dx[i] = dy[i] * dact_from_y(l->variant, y[i]);
        else if (l->kind == &clt_layer_flatten) memcpy(dx, dy, sizeof(double) * (size_t)(n * in));
        else if (l->kind == &clt_layer_bn)
            bn_bwd(n, l->in.d[0], bn_plane(l), x, r->params[k], dy, dx, r->grads[k], r->grads[k + 1]);
        else if (l->kind == &clt_layer_res) res_block(l, n, x, r->params + k, r->grads + k, y, dy, dx);
        else if (l->kind == &clt_layer_gap) {
            int hw = l->in.d[1] * l->in.d[2];
            for (int64_t i = 0; i < n * out; i++)
                for (int j = 0; j < hw; j++) dx[i * hw + j] = dy[i] / hw;
        } else if (l->kind == &clt_layer_dense) {
            double *dw = r->grads[k], *db = r->grads[k + 1];
            memset(dw, 0, sizeof(double) * (size_t)(in * out));
            memset(db, 0, sizeof(double) * (size_t)out);
            memset(dx, 0, sizeof(double) * (size_t)(n * in));
            for (int s = 0; s < n; s++)
                for (int64_t o = 0; o < out; o++) {
                    double g = dy[s * out + o];
                    db[o] += g;
                    for (int64_t i = 0; i < in; i++) {
                        dw[o * in + i] += g * x[s * in + i];
                        dx[s * in + i] += g * r->params[k][o * in + i];
                    }
                }
        }
    }
}
