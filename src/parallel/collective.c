/* The tutorials' building blocks on tensors: all-reduce and broadcast over
 * any devices, through host memory, in fixed device order. */
#include <stdio.h>

#include "core/alloc.h"
#include "parallel/trainer.h"
#include "tensor/tensor.h"

static clt_status check_list(const char *op, const clt_tensor *ref, clt_tensor *const *ts, int k)
{
    if (!ref || !ts || k < 1) return clt_fail(CLT_ERR_INVALID_ARG, "%s: empty tensor list", op);
    if (ref->dtype != CLT_FLOAT32) return clt_fail(CLT_ERR_INVALID_ARG, "%s: tensors must be float32", op);
    for (int i = 0; i < k; i++) {
        char what[32];
        snprintf(what, sizeof what, "tensor %d", i);
        CLT_TRY(clt_tensor_expect(ts[i], op, what, CLT_FLOAT32, ref->ndim, ref->shape));
    }
    return CLT_OK;
}

clt_status clt_allreduce_sum(clt_tensor *const *tensors, int k)
{
    const char *op = "clt_allreduce_sum";
    CLT_TRY(check_list(op, tensors && k > 0 ? tensors[0] : NULL, tensors, k));
    size_t n = (size_t)tensors[0]->numel, bytes = n * sizeof(float);
    float *buf;
    CLT_TRY(clt_aligned_alloc((void **)&buf, n * ((size_t)k + 1), sizeof(float), op));
    const float *in[64];
    clt_status s = CLT_OK;
    if (k > 64) s = clt_fail(CLT_ERR_INVALID_ARG, "%s: %d tensors (at most 64)", op, k);
    /* Start every read, then wait: the devices transfer concurrently. */
    for (int i = 0; i < k && s == CLT_OK; i++) {
        in[i] = buf + (size_t)(i + 1) * n;
        cl_int err = clEnqueueReadBuffer(tensors[i]->dev->queue, tensors[i]->buf, CL_FALSE, 0, bytes,
                                         (void *)in[i], 0, NULL, NULL);
        if (err != CL_SUCCESS) s = clt_cl_fail(err, "clt_allreduce_sum: read");
    }
    for (int i = 0; i < k; i++) clFinish(tensors[i]->dev->queue);
    if (s == CLT_OK) s = clt_reduce_local_sum(NULL, in, k, buf, n, 1.0f);
    for (int i = 0; i < k && s == CLT_OK; i++) {
        cl_int err = clEnqueueWriteBuffer(tensors[i]->dev->queue, tensors[i]->buf, CL_FALSE, 0, bytes, buf, 0,
                                          NULL, NULL);
        if (err != CL_SUCCESS) s = clt_cl_fail(err, "clt_allreduce_sum: write");
    }
    for (int i = 0; i < k; i++) clFinish(tensors[i]->dev->queue);
    clt_aligned_free(buf);
    return s;
}

clt_status clt_broadcast(const clt_tensor *src, clt_tensor *const *dst, int k)
{
    CLT_TRY(check_list("clt_broadcast", src, dst, k));
    for (int i = 0; i < k; i++) CLT_TRY(clt_tensor_copy(dst[i], src));
    return CLT_OK;
}
