/* Plain-C reference for 2-D convolution (see ref_conv.h). */
#include "ref_conv.h"

#include <stdio.h>
#include <stdlib.h>

int ref_conv_shape_init(ref_conv_shape *r, int n, int c, int h, int w, int co, int k, int s, int p)
{
    r->n = n, r->c = c, r->h = h, r->w = w, r->co = co, r->k = k, r->s = s, r->p = p;
    r->oh = r->ow = 0;
    if (n < 1 || c < 1 || h < 1 || w < 1 || co < 1 || k < 1 || s < 1 || p < 0) return 0;
    if (h + 2 * p < k || w + 2 * p < k) return 0;
    r->oh = (h + 2 * p - k) / s + 1;
    r->ow = (w + 2 * p - k) / s + 1;
    return 1;
}

size_t ref_conv_x_size(const ref_conv_shape *r) { return (size_t)r->n * r->c * r->h * r->w; }
size_t ref_conv_w_size(const ref_conv_shape *r) { return (size_t)r->co * r->c * r->k * r->k; }
size_t ref_conv_y_size(const ref_conv_shape *r) { return (size_t)r->n * r->co * r->oh * r->ow; }

/* Index helpers. */
#define XI(r, n, c, y, x) ((((size_t)(n) * (r)->c + (c)) * (r)->h + (y)) * (r)->w + (x))
#define WI(r, o, c, i, j) ((((size_t)(o) * (r)->c + (c)) * (r)->k + (i)) * (r)->k + (j))
#define YI(r, n, o, y, x) ((((size_t)(n) * (r)->co + (o)) * (r)->oh + (y)) * (r)->ow + (x))

void ref_conv_forward_f64(const ref_conv_shape *r, const double *x, const double *w,
                          const double *b, double *y)
{
    for (int n = 0; n < r->n; n++)
        for (int o = 0; o < r->co; o++)
            for (int oy = 0; oy < r->oh; oy++)
                for (int ox = 0; ox < r->ow; ox++) {
                    double s = b ? b[o] : 0.0;
                    for (int c = 0; c < r->c; c++)
                        for (int i = 0; i < r->k; i++)
                            for (int j = 0; j < r->k; j++) {
                                int iy = oy * r->s - r->p + i, ix = ox * r->s - r->p + j;
                                if (iy < 0 || iy >= r->h || ix < 0 || ix >= r->w) continue;
                                s += x[XI(r, n, c, iy, ix)] * w[WI(r, o, c, i, j)];
                            }
                    y[YI(r, n, o, oy, ox)] = s;
                }
}

void ref_conv_backward_f64(const ref_conv_shape *r, const double *x, const double *w,
                           const double *dy, double *dx, double *dw, double *db)
{
    if (dx)
        for (size_t i = 0; i < ref_conv_x_size(r); i++) dx[i] = 0;
    if (dw)
        for (size_t i = 0; i < ref_conv_w_size(r); i++) dw[i] = 0;
    if (db)
        for (int o = 0; o < r->co; o++) db[o] = 0;
    for (int n = 0; n < r->n; n++)
        for (int o = 0; o < r->co; o++)
            for (int oy = 0; oy < r->oh; oy++)
                for (int ox = 0; ox < r->ow; ox++) {
                    double g = dy[YI(r, n, o, oy, ox)];
                    if (db) db[o] += g;
                    for (int c = 0; c < r->c; c++)
                        for (int i = 0; i < r->k; i++)
                            for (int j = 0; j < r->k; j++) {
                                int iy = oy * r->s - r->p + i, ix = ox * r->s - r->p + j;
                                if (iy < 0 || iy >= r->h || ix < 0 || ix >= r->w) continue;
                                if (dx) dx[XI(r, n, c, iy, ix)] += g * w[WI(r, o, c, i, j)];
                                if (dw) dw[WI(r, o, c, i, j)] += g * x[XI(r, n, c, iy, ix)];
                            }
                }
}

static double *to_f64(const float *a, size_t n)
{
    if (!a) return NULL;
    double *d = ref_conv_alloc(n, sizeof *d);
    for (size_t i = 0; i < n; i++) d[i] = a[i];
    return d;
}

static void to_f32(float *out, const double *d, size_t n)
{
    if (!out) return;
    for (size_t i = 0; i < n; i++) out[i] = (float)d[i];
}

void ref_conv_forward(const ref_conv_shape *r, const float *x, const float *w, const float *b,
                      float *y)
{
    double *dx = to_f64(x, ref_conv_x_size(r)), *dw = to_f64(w, ref_conv_w_size(r));
    double *db = to_f64(b, (size_t)r->co), *dy = ref_conv_alloc(ref_conv_y_size(r), sizeof *dy);
    ref_conv_forward_f64(r, dx, dw, db, dy);
    to_f32(y, dy, ref_conv_y_size(r));
    free(dx), free(dw), free(db), free(dy);
}

void ref_conv_backward(const ref_conv_shape *r, const float *x, const float *w, const float *dy,
                       float *dx, float *dw, float *db)
{
    size_t nx = ref_conv_x_size(r), nw = ref_conv_w_size(r);
    double *x64 = to_f64(x, nx), *w64 = to_f64(w, nw), *dy64 = to_f64(dy, ref_conv_y_size(r));
    double *dx64 = dx ? ref_conv_alloc(nx, sizeof *dx64) : NULL;
    double *dw64 = dw ? ref_conv_alloc(nw, sizeof *dw64) : NULL;
    double *db64 = db ? ref_conv_alloc((size_t)r->co, sizeof *db64) : NULL;
    ref_conv_backward_f64(r, x64, w64, dy64, dx64, dw64, db64);
    to_f32(dx, dx64, nx);
    to_f32(dw, dw64, nw);
    to_f32(db, db64, (size_t)r->co);
    free(x64), free(w64), free(dy64), free(dx64), free(dw64), free(db64);
}

uint64_t ref_conv_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int ref_conv_randint(uint64_t *state, int lo, int hi)
{
    return lo + (int)(ref_conv_rand(state) % (uint64_t)(hi - lo + 1));
}

void ref_conv_fill(float *x, size_t n, uint64_t *state, float lo, float hi)
{
    for (size_t i = 0; i < n; i++) {
        double u = (double)(ref_conv_rand(state) >> 11) / 9007199254740992.0;
        x[i] = (float)(lo + (hi - lo) * u);
    }
}

void *ref_conv_alloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "ref_conv_alloc: out of memory (%zu x %zu)\n", n, size);
        exit(1);
    }
    return p;
}
