/* The tutorials' building blocks on tensors: all-reduce and broadcast over
 * any devices, through host memory, in fixed device order. */
#include <stdio.h>

#include "core/alloc.h"
#include "parallel/trainer.h"
#include "tensor/tensor.h"

static clt_status check_list(const char *op, const clt_tensor *ref, clt_tensor *const *ts, int k)
{
    if (!ref || !ts || k < 1) return clt_fail(CLT_ERR_INVALID_ARG, "%s: empty tensor list", op);
    if (ref->dtype != CLT_DTYPE_FLOAT32) return clt_fail(CLT_ERR_INVALID_ARG, "%s: tensors must be float32", op);
    for (int i = 0; i < k; i++) {
        char what[32];
        snprintf(what, sizeof what, "tensor %d", i);
        CLT_TRY(clt_tensor_expect(ts[i], op, what, CLT_DTYPE_FLOAT32, ref->ndim, ref->shape));
    }
    return CLT_OK;
}

clt_status clt_allreduce_sum(clt_tensor *const *tensors, int k)
{
    const char *op = "clt_allreduce_sum";
    CLT_TRY(check_list(op, tensors && k > 0 ? tensors[0] : NULL, tensors, k));
    size_t n = (size_t)tensors[0]->numel;
    float *buf;
    CLT_TRY(clt_aligned_alloc((void **)&buf, n * ((size_t)k + 1), sizeof(float), op));
    const float *in[CLT_MAX_DEVICES];
    clt_status s = CLT_OK;
    if (k > CLT_MAX_DEVICES) s = clt_fail(CLT_ERR_INVALID_ARG, "%s: %d tensors (at most %d)", op, k, CLT_MAX_DEVICES);
    for (int i = 0; i < k && s == CLT_OK; i++) {
        float *mine = buf + (size_t)(i + 1) * n;
        in[i] = mine;
        s = clt_tensor_download(tensors[i], mine, (int64_t)n);
    }
    if (s == CLT_OK) s = clt_reduce_local_sum(NULL, in, k, buf, n, 1.0f);
    for (int i = 0; i < k && s == CLT_OK; i++) s = clt_tensor_upload(tensors[i], buf, (int64_t)n);
    clt_aligned_free(buf);
    return s;
}

clt_status clt_split_batch(const float *host, int n, int sample_ndim, const int64_t *sample_shape,
                           clt_device *const *devices, int k, const float *weights, clt_tensor **shards)
{
    const char *op = "clt_split_batch";
    if (!host || !devices || !shards || !sample_shape) return clt_fail(CLT_ERR_INVALID_ARG, "%s: NULL argument", op);
    if (k < 1 || k > CLT_MAX_DEVICES) return clt_fail(CLT_ERR_INVALID_ARG, "%s: %d devices (1..%d)", op, k, CLT_MAX_DEVICES);
    if (sample_ndim < 1 || sample_ndim >= CLT_MAX_DIMS)
        return clt_fail(CLT_ERR_SHAPE, "%s: samples of %d dimensions (1..%d)", op, sample_ndim, CLT_MAX_DIMS - 1);
    int sizes[CLT_MAX_DEVICES];
    CLT_TRY(clt_split_sizes(n, k, weights, sizes));
    int64_t shape[CLT_MAX_DIMS], per = 1;
    for (int d = 0; d < sample_ndim; d++) {
        shape[d + 1] = sample_shape[d];
        per *= sample_shape[d] > 0 ? sample_shape[d] : 1;
    }
    for (int i = 0; i < k; i++) shards[i] = NULL;
    clt_status s = CLT_OK;
    for (int i = 0, at = 0; i < k && s == CLT_OK; at += sizes[i], i++) {
        if (sizes[i] == 0) continue;
        shape[0] = sizes[i];
        s = clt_tensor_create(devices[i], CLT_DTYPE_FLOAT32, sample_ndim + 1, shape, &shards[i]);
        if (s == CLT_OK) s = clt_tensor_upload(shards[i], host + (size_t)at * (size_t)per, (int64_t)sizes[i] * per);
    }
    if (s != CLT_OK)
        for (int i = 0; i < k; i++) {
            clt_tensor_destroy(shards[i]);
            shards[i] = NULL;
        }
    return s;
}

clt_status clt_broadcast(const clt_tensor *src, clt_tensor *const *dst, int k)
{
    CLT_TRY(check_list("clt_broadcast", src, dst, k));
    for (int i = 0; i < k; i++) CLT_TRY(clt_tensor_copy(dst[i], src));
    return CLT_OK;
}
