/* Plain-C reference for batch normalisation (double accumulation) and the
 * tensors of one batch-norm call, shared by test_bn.c and test_bn_split.c. */
#ifndef CLT_TESTS_REF_BN_H
#define CLT_TESTS_REF_BN_H

#include <stddef.h>
#include <stdint.h>

#include "cltrain.h"

#define REF_BN_EPS 1e-5
#define REF_BN_MOM 0.1

typedef struct ref_bn_shape {
    int n, c, h, w; /* h == 0: a 2-D (n, c) input */
} ref_bn_shape;

int ref_bn_hw(ref_bn_shape s);
size_t ref_bn_numel(ref_bn_shape s);
int ref_bn_ndim(ref_bn_shape s);
/* d[0..3] = n, c, h, w (the first ref_bn_ndim of them are the shape). */
void ref_bn_dims(ref_bn_shape s, int64_t *d);

/* Forward; training: batch statistics (two-pass) and the running update
 * (rm/rv may be NULL), else the running statistics. mean/invstd get the
 * statistics used. gamma, beta may be NULL (1 and 0). */
void ref_bn_forward(const float *x, ref_bn_shape s, const float *gamma, const float *beta, float *rm, float *rv,
                    int training, float *y, double *mean, double *invstd);
/* dx, dgamma, dbeta with the statistics mean/invstd of the forward. */
void ref_bn_backward(const float *x, const float *dy, ref_bn_shape s, const float *gamma, const double *mean,
                     const double *invstd, int training, float *dx, float *dgamma, float *dbeta);

/* Normal-ish data: mu + sigma * (sum of 4 uniforms, variance 1). */
void ref_bn_fill_normal(uint64_t *rng, float *x, size_t n, float mu, float sigma);

/* The host data of one call, filled in this order by ref_bn_fill: x ~ mu +
 * sigma * normal-ish, dy in [-1, 1), gamma in [0.5, 1.5), beta in [-0.5,
 * 0.5), running mean in [rm[0], rm[1]), running var in [rv[0], rv[1]). */
typedef struct ref_bn_data {
    float *x, *dy, *gamma, *beta, *rm, *rv;
} ref_bn_data;

void ref_bn_fill(uint64_t *rng, ref_bn_shape s, float mu, float sigma, const float rm[2], const float rv[2],
                 const ref_bn_data *d);

/* The tensors of one call on a device: x, dy, gamma, beta, running mean
 * and var hold the given data (gamma and beta are NULL tensors when their
 * data is NULL); y, dx, save (2c), dgamma and dbeta are zeros. */
typedef struct ref_bn_tensors {
    clt_tensor *x, *dy, *y, *dx, *gamma, *beta, *rm, *rv, *save, *dgamma, *dbeta;
} ref_bn_tensors;

void ref_bn_tensors_make(clt_device *dev, ref_bn_shape s, const float *x, const float *dy, const float *gamma,
                         const float *beta, const float *rm, const float *rv, ref_bn_tensors *t);
void ref_bn_tensors_free(ref_bn_tensors *t);

#endif
