/* Fused softmax cross-entropy (kernels/loss.cl). The public forward reads
 * the per-sample losses back and sums them on the host in double, in sample
 * order, so the result is deterministic for a given batch. */
#include "ops/loss.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "runtime/launch.h"
#include "tensor/tensor.h"

clt_status clt_xent_raw(clt_device *dev, int n, int classes, cl_mem logits, cl_mem labels,
                        float scale, cl_mem dlogits, cl_mem stats)
{
    return clt_xent_smooth_raw(dev, n, classes, logits, labels, 0.0f, scale, dlogits, stats);
}

clt_status clt_xent_smooth_raw(clt_device *dev, int n, int classes, cl_mem logits, cl_mem labels, float smooth,
                               float scale, cl_mem dlogits, cl_mem stats)
{
    if (!(smooth >= 0.0f && smooth < 1.0f))
        return clt_fail(CLT_ERR_INVALID_ARG, "softmax cross-entropy: label smoothing %g outside [0, 1)", smooth);
    if (n < 1 || classes < 1 || (int64_t)n * classes > INT_MAX)
        return clt_fail(CLT_ERR_SHAPE, "softmax cross-entropy: %d rows of %d classes", n, classes);
    if (!dlogits && !stats) return CLT_OK;
    int want_grad = dlogits != NULL, want_stats = stats != NULL;
    return clt_launch_1d(dev, "loss", "loss_xent", (size_t)n,
                         CLT_ARGS(CLT_ARG(logits), CLT_ARG(labels), CLT_ARG(dlogits), CLT_ARG(stats),
                                  CLT_ARG(scale), CLT_ARG(n), CLT_ARG(classes), CLT_ARG(want_grad),
                                  CLT_ARG(want_stats), CLT_ARG(smooth)));
}

/* logits (n, classes) float32, labels (n) int32 on one device. */
static clt_status check_args(const char *op, const clt_tensor *logits, const clt_tensor *labels)
{
    const int64_t any2[2] = {-1, -1};
    CLT_TRY(clt_tensor_expect(logits, op, "logits", CLT_DTYPE_FLOAT32, 2, any2));
    const int64_t lshape[1] = {logits->shape[0]};
    CLT_TRY(clt_tensor_expect(labels, op, "labels", CLT_DTYPE_INT32, 1, lshape));
    if (logits->numel > INT_MAX)
        return clt_fail(CLT_ERR_UNSUPPORTED, "%s: logits have more than %d elements", op, INT_MAX);
    const clt_tensor *others[] = {labels};
    return clt_tensor_same_device(op, logits, 1, others);
}

/* Reads the labels back and reports the first one outside [0, classes). */
static clt_status check_labels(const char *op, const clt_tensor *labels, int64_t classes)
{
    int32_t *host;
    CLT_TRY(clt_aligned_alloc((void **)&host, (size_t)labels->numel, sizeof *host, op));
    clt_status s = clt_tensor_download(labels, host, labels->numel);
    for (int64_t i = 0; s == CLT_OK && i < labels->numel; i++)
        if (host[i] < 0 || host[i] >= classes)
            s = clt_fail(CLT_ERR_INVALID_ARG, "%s: label %d of sample %lld is outside [0, %lld)", op,
                         (int)host[i], (long long)i, (long long)classes);
    clt_aligned_free(host);
    return s;
}

clt_status clt_softmax_xent_forward(const clt_tensor *logits, const clt_tensor *labels,
                                    double *loss_sum, int64_t *correct)
{
    const char *op = "clt_softmax_xent_forward";
    CLT_TRY(check_args(op, logits, labels));
    int n = (int)logits->shape[0], classes = (int)logits->shape[1];
    clt_device *dev = logits->dev;
    cl_mem stats;
    CLT_TRY(clt_device_scratch(dev, (size_t)n * 2 * sizeof(float), &stats));
    CLT_TRY(clt_xent_raw(dev, n, classes, logits->buf, labels->buf, 1.0f, NULL, stats));
    float *host;
    CLT_TRY(clt_aligned_alloc((void **)&host, (size_t)n * 2, sizeof *host, op));
    clt_status rs = clt_device_read(dev, stats, 0, (size_t)n * 2 * sizeof(float), host,
                                    "clt_softmax_xent_forward: clEnqueueReadBuffer");
    if (rs != CLT_OK) {
        clt_aligned_free(host);
        return rs;
    }
    double sum = 0;
    int64_t hits = 0;
    int bad = 0;
    for (int i = 0; i < n; i++) {
        sum += (double)host[2 * i];
        hits += host[2 * i + 1] != 0.0f;
        bad |= isnan(host[2 * i]);
    }
    clt_aligned_free(host);
    /* A NaN loss is a bad label or NaN logits: tell them apart. */
    if (bad) CLT_TRY(check_labels(op, labels, classes));
    if (loss_sum) *loss_sum = sum;
    if (correct) *correct = hits;
    return CLT_OK;
}

clt_status clt_softmax_xent_backward(const clt_tensor *logits, const clt_tensor *labels, float scale,
                                     clt_tensor *dlogits)
{
    const char *op = "clt_softmax_xent_backward";
    CLT_TRY(check_args(op, logits, labels));
    CLT_TRY(clt_tensor_expect(dlogits, op, "dlogits", CLT_DTYPE_FLOAT32, 2, logits->shape));
    const clt_tensor *others[] = {dlogits};
    CLT_TRY(clt_tensor_same_device(op, logits, 1, others));
    /* Labels are checked on the host (one small blocking read) so a bad one
     * is an error, not a row of NaN gradients. */
    CLT_TRY(check_labels(op, labels, logits->shape[1]));
    return clt_xent_raw(logits->dev, (int)logits->shape[0], (int)logits->shape[1], logits->buf,
                        labels->buf, scale, dlogits->buf, NULL);
}
