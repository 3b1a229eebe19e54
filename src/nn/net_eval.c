/* Evaluation of a net over a dataset (or a range of it) on one device; the
 * trainer runs the same range loop on every device. */
#include <stdlib.h>

#include "core/alloc.h"
#include "nn/net_impl.h"

clt_status clt_labels_check(const int32_t *labels, int64_t n, int classes, const char *op)
{
    for (int64_t i = 0; i < n; i++)
        if (labels[i] < 0 || labels[i] >= classes)
            return clt_fail(CLT_ERR_INVALID_ARG, "%s: label %d of sample %lld is outside 0..%d", op, labels[i],
                            (long long)i, classes - 1);
    return CLT_OK;
}

clt_status clt_net_check_dataset(const clt_net *net, const clt_dataset *ds, const char *op)
{
    int c, h, w;
    clt_dataset_shape(ds, &c, &h, &w);
    const clt_shape *in = &net->model.in;
    if (c != in->d[0] || h != in->d[1] || w != in->d[2])
        return clt_fail(CLT_ERR_SHAPE, "%s: dataset samples are (%d, %d, %d), the net takes (%d, %d, %d)", op, c, h,
                        w, in->d[0], in->d[1], in->d[2]);
    int64_t total = clt_dataset_size(ds);
    if (total < 1 || total > INT32_MAX)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: dataset of %lld samples", op, (long long)total);
    return clt_labels_check(clt_dataset_labels(ds), total, net->model.classes, op);
}

/* Each sample's class of the last forward (b samples) into predicted. */
static clt_status argmax_rows(clt_net *net, int b, float *scores, int32_t *predicted)
{
    int k = clt_net_classes(net);
    CLT_TRY(clt_net_output(net, scores, (int64_t)b * k));
    for (int i = 0; i < b; i++) {
        int top;
        CLT_TRY(clt_top_k(scores + (size_t)i * (size_t)k, k, 1, &top));
        predicted[i] = top;
    }
    return CLT_OK;
}

clt_status clt_net_evaluate_range(clt_net *net, const clt_dataset *ds, int64_t off, int64_t n, int batch_size,
                                  double *loss_sum, int64_t *correct, int32_t *predicted)
{
    int c, h, w;
    clt_dataset_shape(ds, &c, &h, &w);
    int64_t most = n < batch_size ? n : batch_size;
    float *images;
    int32_t *labels;
    CLT_TRY(clt_aligned_alloc((void **)&images, (size_t)(most > 0 ? most : 1) * (size_t)c * (size_t)h * (size_t)w,
                              sizeof(float), "evaluation batch"));
    clt_status s = clt_aligned_alloc((void **)&labels, (size_t)(most > 0 ? most : 1), sizeof(int32_t),
                                     "evaluation batch");
    float *scores = NULL;
    if (s == CLT_OK && predicted)
        s = clt_calloc((void **)&scores, (size_t)(most > 0 ? most : 1) * (size_t)clt_net_classes(net), sizeof *scores,
                       "evaluation scores");
    double loss = 0;
    int64_t ok = 0;
    for (int64_t at = off; s == CLT_OK && at < off + n; at += batch_size) {
        int b = (int)(off + n - at < batch_size ? off + n - at : batch_size);
        double l;
        int64_t k;
        s = clt_dataset_read(ds, at, b, images, labels);
        if (s == CLT_OK) s = clt_net_forward(net, images, b, 0);
        if (s == CLT_OK) s = clt_net_loss(net, labels, &l, &k);
        if (s == CLT_OK && predicted) s = argmax_rows(net, b, scores, predicted + (at - off));
        if (s != CLT_OK) break;
        loss += l;
        ok += k;
    }
    clt_aligned_free(images);
    clt_aligned_free(labels);
    free(scores);
    *loss_sum = loss;
    *correct = ok;
    return s;
}

clt_status clt_net_evaluate(clt_net *net, const clt_dataset *ds, int batch_size, double *mean_loss,
                            double *accuracy)
{
    const char *op = "clt_net_evaluate";
    if (!net || !ds) return clt_fail(CLT_ERR_INVALID_ARG, "%s: NULL argument", op);
    if (batch_size < 1) return clt_fail(CLT_ERR_INVALID_ARG, "%s: batch size %d", op, batch_size);
    CLT_TRY(clt_net_check_dataset(net, ds, op));
    int64_t total = clt_dataset_size(ds), correct;
    double loss;
    CLT_TRY(clt_net_evaluate_range(net, ds, 0, total, batch_size, &loss, &correct, NULL));
    if (mean_loss) *mean_loss = loss / (double)total;
    if (accuracy) *accuracy = (double)correct / (double)total;
    return CLT_OK;
}
