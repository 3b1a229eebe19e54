/* Plain-C reference for 2-D convolution (tests/ops/test_conv.c): the
 * definition written as loops, accumulated in double. Names start with
 * ref_conv_ (test executables link every ref_*.c of tests/ops). */
#ifndef CLT_TESTS_REF_CONV_H
#define CLT_TESTS_REF_CONV_H

#include <stddef.h>
#include <stdint.h>

typedef struct ref_conv_shape {
    int n, c, h, w; /* input */
    int co, k;      /* output channels, square kernel */
    int s, p;       /* stride, zero padding */
    int oh, ow;     /* (h + 2p - k) / s + 1, floor */
} ref_conv_shape;

/* Fills oh, ow; returns 0 when the output would be empty or an argument is
 * out of range (k, s < 1, p < 0), 1 otherwise. */
int ref_conv_shape_init(ref_conv_shape *r, int n, int c, int h, int w, int co, int k, int s, int p);
size_t ref_conv_x_size(const ref_conv_shape *r);
size_t ref_conv_w_size(const ref_conv_shape *r);
size_t ref_conv_y_size(const ref_conv_shape *r);

/* y[n][o][oy][ox] = b[o] + sum_{c,i,j} x[n][c][oy*s-p+i][ox*s-p+j] w[o][c][i][j]
 * (zero outside x); b may be NULL. */
void ref_conv_forward_f64(const ref_conv_shape *r, const double *x, const double *w,
                          const double *b, double *y);
/* The adjoint loops of the same sum: dx, dw, db (each may be NULL) are
 * overwritten with the gradients summed over the batch. */
void ref_conv_backward_f64(const ref_conv_shape *r, const double *x, const double *w,
                           const double *dy, double *dx, double *dw, double *db);

/* Float in, float out, double inside. */
void ref_conv_forward(const ref_conv_shape *r, const float *x, const float *w, const float *b,
                      float *y);
void ref_conv_backward(const ref_conv_shape *r, const float *x, const float *w, const float *dy,
                       float *dx, float *dw, float *db);

/* Deterministic test data: splitmix64 and a uniform float in [lo, hi). */
uint64_t ref_conv_rand(uint64_t *state);
int ref_conv_randint(uint64_t *state, int lo, int hi); /* lo..hi inclusive */
void ref_conv_fill(float *x, size_t n, uint64_t *state, float lo, float hi);
/* calloc that exits on failure (tests only). */
void *ref_conv_alloc(size_t n, size_t size);

#endif
