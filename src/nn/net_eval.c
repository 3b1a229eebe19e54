/* Evaluation of a net over a whole dataset on one device. */
#include "nn/net.h"

clt_status clt_net_evaluate(clt_net *net, const clt_dataset *ds, int batch_size, double *mean_loss,
                            double *accuracy)
{
    if (!net || !ds) return clt_fail(CLT_ERR_INVALID_ARG, "clt_net_evaluate: NULL argument");
    if (batch_size < 1) return clt_fail(CLT_ERR_INVALID_ARG, "clt_net_evaluate: batch size %d", batch_size);
    int c, h, w;
    clt_dataset_shape(ds, &c, &h, &w);
    const clt_shape *in = &net->model.in;
    if (c != in->d[0] || h != in->d[1] || w != in->d[2])
        return clt_fail(CLT_ERR_SHAPE, "clt_net_evaluate: dataset samples are (%d, %d, %d), the net takes (%d, %d, %d)",
                        c, h, w, in->d[0], in->d[1], in->d[2]);
    int64_t total = clt_dataset_size(ds);
    if (total < 1) return clt_fail(CLT_ERR_INVALID_ARG, "clt_net_evaluate: empty dataset");
    const float *images = clt_dataset_images(ds);
    const int32_t *labels = clt_dataset_labels(ds);
    size_t sample = (size_t)c * (size_t)h * (size_t)w;
    double loss = 0;
    int64_t correct = 0;
    for (int64_t at = 0; at < total; at += batch_size) {
        int n = (int)(total - at < batch_size ? total - at : batch_size);
        double l;
        int64_t k;
        CLT_TRY(clt_net_forward(net, images + (size_t)at * sample, n, 0));
        CLT_TRY(clt_net_loss(net, labels + at, &l, &k));
        loss += l;
        correct += k;
    }
    if (mean_loss) *mean_loss = loss / (double)total;
    if (accuracy) *accuracy = (double)correct / (double)total;
    return CLT_OK;
}
