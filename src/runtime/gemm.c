#include "runtime/gemm.h"
#include "runtime/device_impl.h"

#include <clblast_c.h>

#include "core/error.h"

static clt_status clblast_fail(clt_device *dev, CLBlastStatusCode st, const char *what)
{
    if (st == CLBlastOpenCLOutOfResources || (int)st == CL_MEM_OBJECT_ALLOCATION_FAILURE)
        return clt_fail(CLT_ERR_DEVICE_MEMORY, "%s on device %d (%s): CLBlast status %d (out of device memory)",
                        what, dev->info.index, dev->info.name, (int)st);
    return clt_fail(CLT_ERR_OPENCL, "%s on device %d (%s): CLBlast status %d", what,
                    dev->info.index, dev->info.name, (int)st);
}

void clt_release_shared_caches(void) { CLBlastClearCache(); }

/* The CLBlast calls themselves; the public ones warm CLBlast up first. */
static clt_status sgemm(clt_device *dev, bool trans_a, bool trans_b, size_t m, size_t n, size_t k, float alpha,
                        cl_mem a, size_t a_off, size_t lda, cl_mem b, size_t b_off, size_t ldb, float beta,
                        cl_mem c, size_t c_off, size_t ldc)
{
    if (m == 0 || n == 0) return CLT_OK;
    CLBlastStatusCode st = CLBlastSgemm(CLBlastLayoutRowMajor,
                                        trans_a ? CLBlastTransposeYes : CLBlastTransposeNo,
                                        trans_b ? CLBlastTransposeYes : CLBlastTransposeNo, m, n, k,
                                        alpha, a, a_off, lda, b, b_off, ldb, beta, c, c_off, ldc,
                                        &dev->queue, NULL);
    if (st != CLBlastSuccess) return clblast_fail(dev, st, "SGEMM");
    return CLT_OK;
}

static clt_status sgemm_batched(clt_device *dev, bool trans_a, bool trans_b, size_t m, size_t n, size_t k,
                                float alpha, cl_mem a, size_t a_off, size_t lda, size_t a_stride, cl_mem b,
                                size_t b_off, size_t ldb, size_t b_stride, float beta, cl_mem c, size_t c_off,
                                size_t ldc, size_t c_stride, size_t batches)
{
    if (m == 0 || n == 0 || batches == 0) return CLT_OK;
    if (batches == 1)
        return sgemm(dev, trans_a, trans_b, m, n, k, alpha, a, a_off, lda, b, b_off, ldb, beta, c, c_off, ldc);
    CLBlastStatusCode st = CLBlastSgemmStridedBatched(
        CLBlastLayoutRowMajor, trans_a ? CLBlastTransposeYes : CLBlastTransposeNo,
        trans_b ? CLBlastTransposeYes : CLBlastTransposeNo, m, n, k, alpha, a, a_off, lda, a_stride,
        b, b_off, ldb, b_stride, beta, c, c_off, ldc, c_stride, batches, &dev->queue, NULL);
    if (st != CLBlastSuccess) return clblast_fail(dev, st, "batched SGEMM");
    return CLT_OK;
}

clt_status clt_gemm(clt_device *dev, bool trans_a, bool trans_b, size_t m, size_t n, size_t k,
                    float alpha, cl_mem a, size_t a_off, size_t lda, cl_mem b, size_t b_off,
                    size_t ldb, float beta, cl_mem c, size_t c_off, size_t ldc)
{
    CLT_TRY(clt_gemm_warmup(dev));
    return sgemm(dev, trans_a, trans_b, m, n, k, alpha, a, a_off, lda, b, b_off, ldb, beta, c, c_off, ldc);
}

clt_status clt_gemm_batched(clt_device *dev, bool trans_a, bool trans_b, size_t m, size_t n,
                            size_t k, float alpha, cl_mem a, size_t a_off, size_t lda,
                            size_t a_stride, cl_mem b, size_t b_off, size_t ldb, size_t b_stride,
                            float beta, cl_mem c, size_t c_off, size_t ldc, size_t c_stride,
                            size_t batches)
{
    CLT_TRY(clt_gemm_warmup(dev));
    return sgemm_batched(dev, trans_a, trans_b, m, n, k, alpha, a, a_off, lda, a_stride, b, b_off, ldb, b_stride,
                         beta, c, c_off, ldc, c_stride, batches);
}

static clt_status warm_up(clt_device *dev)
{
    /* Touch every transpose combination the layers use, and the batched
     * routine (a program of its own), so CLBlast compiles its kernels now,
     * with no other thread compiling. */
    cl_int err;
    enum { n = 4 };
    cl_mem buf = clCreateBuffer(dev->ctx, CL_MEM_READ_WRITE, sizeof(float[3 * n * n]), NULL, &err);
    if (!buf) return clt_cl_fail(err, "clCreateBuffer (GEMM warm-up)");
    float zeros[3 * n * n] = {0};
    err = clEnqueueWriteBuffer(dev->queue, buf, CL_TRUE, 0, sizeof zeros, zeros, 0, NULL, NULL);
    clt_status s = err == CL_SUCCESS ? CLT_OK : clt_cl_fail(err, "clEnqueueWriteBuffer (GEMM warm-up)");
    for (int t = 0; t < 4 && s == CLT_OK; t++)
        s = sgemm(dev, t & 1, t >> 1, n, n, n, 1.0f, buf, 0, n, buf, n * n, n, 0.0f, buf, 2 * n * n, n);
    /* two 2x2 products in the first rows of each n x n block */
    if (s == CLT_OK)
        s = sgemm_batched(dev, false, true, 2, 2, 2, 1.0f, buf, 0, 2, 4, buf, n * n, 2, 4, 0.0f, buf, 2 * n * n, 2,
                          4, 2);
    if (s == CLT_OK) s = clt_device_finish(dev);
    clReleaseMemObject(buf);
    if (s == CLT_OK) dev->gemm_ready = 1;
    return s;
}

void clt_gemm_share_lock(clt_device *dev, pthread_mutex_t *lock) { dev->gemm_lock = lock; }

clt_status clt_gemm_warmup(clt_device *dev)
{
    if (dev->gemm_lock) pthread_mutex_lock(dev->gemm_lock);
    clt_status s = dev->gemm_ready ? CLT_OK : warm_up(dev);
    if (dev->gemm_lock) pthread_mutex_unlock(dev->gemm_lock);
    return s;
}
