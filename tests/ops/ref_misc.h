/* Plain-C references (double accumulation) for pooling, activations, dense,
 * softmax cross-entropy and SGD, plus small helpers the op tests share. */
#ifndef CLT_TESTS_REF_MISC_H
#define CLT_TESTS_REF_MISC_H

#include <stddef.h>
#include <stdint.h>

#include "cltrain.h"

/* ---- deterministic test data ---- */

/* splitmix64 step. */
uint64_t ref_misc_rand(uint64_t *state);
/* Uniform in [lo, hi). */
float ref_misc_uniform(uint64_t *state, float lo, float hi);
/* Uniform integer in [0, n). */
int ref_misc_randint(uint64_t *state, int n);
void ref_misc_fill(float *x, size_t n, uint64_t *state, float lo, float hi);
/* Allocation that exits on failure (tests only). */
void *ref_misc_alloc(size_t n, size_t size);

/* ---- tensor helpers ---- */

/* A tensor of the given shape holding `data` (NULL: zeros); exits on failure. */
clt_tensor *ref_misc_tensor(clt_device *dev, clt_dtype dtype, int ndim, const int64_t *shape,
                            const void *data);
/* Downloads a whole tensor into a new host buffer (exits on failure). */
void *ref_misc_download(const clt_tensor *t);
/* Fills a float tensor with NaN (to prove an output is overwritten). */
void ref_misc_poison(clt_tensor *t);
/* 1 when clt_last_error() contains every non-NULL string given. */
int ref_misc_error_has(const char *a, const char *b, const char *c);

/* ---- references ---- */

/* Floor-mode pooling, no padding. argmax: index ih*w+iw within the plane,
 * first maximum wins (may be NULL for average). */
void ref_misc_pool_forward(clt_pool_kind kind, const float *x, int n, int c, int h, int w, int k,
                           int s, float *y, int32_t *argmax);
void ref_misc_pool_backward(clt_pool_kind kind, const float *dy, const int32_t *argmax, int n, int c,
                            int h, int w, int k, int s, float *dx);
void ref_misc_gap_forward(const float *x, int nc, int hw, float *y);
void ref_misc_gap_backward(const float *dy, int nc, int hw, float *dx);

void ref_misc_act_forward(clt_activation f, const float *x, size_t n, float *y);
void ref_misc_act_backward(clt_activation f, const float *y, const float *dy, size_t n, float *dx);

/* y (n, out) = x (n, in) w^T (out, in) + b (b may be NULL). */
void ref_misc_dense_forward(const float *x, const float *w, const float *b, int n, int in, int out,
                            float *y);
/* dx = dy w, dw = dy^T x, db = column sums of dy; each output may be NULL. */
void ref_misc_dense_backward(const float *x, const float *w, const float *dy, int n, int in, int out,
                             float *dx, float *dw, float *db);

/* Per-sample losses (double), correct flags, and scale*(softmax-onehot);
 * loss, correct, dlogits may be NULL. Returns the summed loss. */
double ref_misc_xent(const float *logits, const int32_t *labels, int n, int classes, float scale,
                     double *loss, int *correct, float *dlogits);

/* One PyTorch SGD step in float with PyTorch's roundings: g' = fma(wd, w, g)
 * (g when wd == 0), v = m*v + g' (v = g' when m == 0), w = fma(-lr, v, w).
 * v may be NULL when m == 0. */
void ref_misc_sgd(float *w, const float *g, float *v, size_t n, float lr, float m, float wd);

#endif
