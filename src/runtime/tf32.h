/* The host's TF32 arithmetic: what a tensor core's TF32 product computes,
 * for the device probe (tf32_probe.c) and the tests. */
#ifndef CLT_RUNTIME_TF32_H
#define CLT_RUNTIME_TF32_H

/* x rounded to TF32 as PTX's cvt.rna.tf32.f32 does: to nearest with ties
 * away from zero, keeping 10 of the 23 mantissa bits (the low 13 zero);
 * the exponent range stays fp32's, so a value past the largest TF32 goes
 * to infinity; infinities and NaNs are returned as they are. */
float clt_tf32_round(float x);

/* c (m x n, row-major) = a (m x k) times b (k x n), both row-major, every
 * operand rounded by clt_tf32_round, the products summed in double: the
 * exact TF32 product, which a device's fp32 accumulation approaches. */
void clt_tf32_product(int m, int n, int k, const float *a, const float *b, double *c);

/* Whether got (m x n) matches the exact TF32 product ref within fp32
 * accumulation: |got - ref| <= 1e-5 * sum |a||b| over the row and column
 * (rounded operands) plus 1e-30, element by element. The operands' rounding
 * moves a product by up to 2^-11 of a term, far more than that bound, so
 * a device that does not round as cvt.rna does fails where the inputs
 * have such terms. */
int clt_tf32_matches(int m, int n, int k, const float *a, const float *b, const double *ref, const float *got);

#endif
