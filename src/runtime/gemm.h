/* Row-major SGEMM on a device through CLBlast: a service of the device, used
 * by the ops. CLBlast compiles its kernels at a device's first GEMM, or in
 * clt_device_warmup on devices other than CPUs. */
#ifndef CLT_RUNTIME_GEMM_H
#define CLT_RUNTIME_GEMM_H

#include <stdbool.h>

#include "runtime/device.h"

/* C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C, row-major; offsets and
 * leading dimensions in floats. */
clt_status clt_gemm(clt_device *dev, bool trans_a, bool trans_b, size_t m, size_t n, size_t k,
                    float alpha, cl_mem a, size_t a_off, size_t lda, cl_mem b, size_t b_off,
                    size_t ldb, float beta, cl_mem c, size_t c_off, size_t ldc);
/* `batches` independent GEMMs of one shape; batch i's A, B and C start
 * i * stride floats after the offsets. */
clt_status clt_gemm_batched(clt_device *dev, bool trans_a, bool trans_b, size_t m, size_t n,
                            size_t k, float alpha, cl_mem a, size_t a_off, size_t lda,
                            size_t a_stride, cl_mem b, size_t b_off, size_t ldb, size_t b_stride,
                            float beta, cl_mem c, size_t c_off, size_t ldc, size_t c_stride,
                            size_t batches);
/* Compiles CLBlast's kernels for this device, under the lock
 * clt_gemm_share_lock gave it (else one thread at a time); nothing when
 * done before. clt_gemm and clt_gemm_batched call it first. */
clt_status clt_gemm_warmup(clt_device *dev);
/* The lock held while CLBlast compiles for dev: one lock shared by the
 * devices of a trainer, whose workers may warm CLBlast up late (CLBlast's
 * compile cache is not thread-safe). Set before the device is used from
 * other threads. */
void clt_gemm_share_lock(clt_device *dev, pthread_mutex_t *lock);

#endif
