/* Predictions: inputs as a user has them (bytes or floats, NCHW or NHWC)
 * to class scores, through the same conversion and normalisation as the
 * training batches (a dataset of the chunk reads them), then an inference
 * pass. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "nn/net_impl.h"

#define CHUNK 256 /* samples per pass: bounds the device memory a prediction takes */

/* Softmax of each row of n x k scores in place, in double. */
static void softmax_rows(float *s, int64_t n, int k)
{
    for (int64_t i = 0; i < n; i++, s += k) {
        float top = s[0];
        for (int j = 1; j < k; j++) top = s[j] > top ? s[j] : top;
        double sum = 0;
        for (int j = 0; j < k; j++) sum += exp((double)s[j] - top);
        for (int j = 0; j < k; j++) s[j] = (float)(exp((double)s[j] - top) / sum);
    }
}

/* Samples first .. first+n-1 of the inputs as the net's floats. */
static clt_status convert(const clt_net *net, const void *inputs, clt_pixel_type type, clt_layout layout,
                          int64_t first, int n, int32_t *labels, float *x)
{
    const clt_shape *in = &net->model.in;
    size_t sample = (size_t)in->d[0] * (size_t)in->d[1] * (size_t)in->d[2] * (type == CLT_PIXELS_U8 ? 1 : sizeof(float));
    clt_dataset_desc d;
    clt_dataset_desc_default(&d);
    d.n = n;
    d.channels = in->d[0], d.height = in->d[1], d.width = in->d[2];
    d.type = type;
    d.layout = layout == CLT_LAYOUT_AUTO ? CLT_LAYOUT_NCHW : layout;
    d.images = (const char *)inputs + (size_t)first * sample;
    d.labels = labels; /* zeros: the dataset wants labels, a prediction has none */
    d.classes = net->model.classes;
    clt_dataset *ds;
    clt_status s = clt_dataset_from_memory(&d, &ds);
    if (s != CLT_OK) return clt_fail_context(s, "clt_net_predict: samples %lld to %lld", (long long)first,
                                             (long long)(first + n - 1));
    float *norm = net->norm;
    s = clt_dataset_set_normalization(ds, norm, norm ? norm + in->d[0] : NULL);
    if (s == CLT_OK) s = clt_dataset_read(ds, 0, n, x, NULL);
    clt_dataset_destroy(ds);
    return s;
}

clt_status clt_net_predict(clt_net *net, const void *inputs, clt_pixel_type type, clt_layout layout, int64_t n,
                           int probabilities, float *out)
{
    if (!net || !inputs || !out) return clt_fail(CLT_ERR_INVALID_ARG, "clt_net_predict: NULL argument");
    if (n < 1) return clt_fail(CLT_ERR_INVALID_ARG, "clt_net_predict: %lld samples (at least 1)", (long long)n);
    if (type != CLT_PIXELS_U8 && type != CLT_PIXELS_F32)
        return clt_fail(CLT_ERR_INVALID_ARG, "clt_net_predict: pixel type %d (CLT_PIXELS_U8 or CLT_PIXELS_F32)", type);
    if (layout != CLT_LAYOUT_AUTO && layout != CLT_LAYOUT_NCHW && layout != CLT_LAYOUT_NHWC)
        return clt_fail(CLT_ERR_INVALID_ARG, "clt_net_predict: layout %d (NCHW or NHWC)", layout);
    int chunk = n < CHUNK ? (int)n : CHUNK, k = net->model.classes;
    float *x;
    int32_t *labels;
    CLT_TRY(clt_calloc((void **)&labels, (size_t)chunk, sizeof *labels, "prediction labels"));
    clt_status s = clt_calloc((void **)&x, (size_t)chunk * clt_shape_numel(&net->model.in), sizeof *x,
                              "prediction inputs");
    for (int64_t first = 0; s == CLT_OK && first < n; first += chunk) {
        int m = n - first < chunk ? (int)(n - first) : chunk;
        s = convert(net, inputs, type, layout, first, m, labels, x);
        if (s == CLT_OK) s = clt_net_forward(net, x, m, 0);
        if (s == CLT_OK) s = clt_net_output(net, out + first * k, (int64_t)m * k);
    }
    if (s == CLT_OK && probabilities) softmax_rows(out, n, k);
    free(x);
    free(labels);
    return s;
}

clt_status clt_top_k(const float *scores, int classes, int k, int *top)
{
    if (!scores || !top) return clt_fail(CLT_ERR_INVALID_ARG, "clt_top_k: NULL argument");
    if (classes < 1 || k < 1 || k > classes)
        return clt_fail(CLT_ERR_INVALID_ARG, "clt_top_k: k %d of %d classes (1 <= k <= classes)", k, classes);
    /* insertion into the k kept so far: k is small where it matters */
    int kept = 0;
    for (int c = 0; c < classes; c++) {
        int at = kept < k ? kept : k;
        while (at > 0 && scores[c] > scores[top[at - 1]]) at--; /* strictly greater: ties keep the lower index */
        if (at >= k) continue;
        int last = kept < k ? kept : k - 1;
        memmove(top + at + 1, top + at, (size_t)(last - at) * sizeof *top);
        top[at] = c;
        if (kept < k) kept++;
    }
    return CLT_OK;
}
