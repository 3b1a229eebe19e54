/* A dataset from the caller's arrays (clt_dataset_from_memory): copied into
 * the dataset model, NHWC transposed to NCHW, every label and float
 * checked first. */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "core/config.h"
#include "core/error.h"
#include "data/dataset.h"

void clt_dataset_desc_default(clt_dataset_desc *desc)
{
    if (!desc) return;
    memset(desc, 0, sizeof *desc);
    desc->layout = CLT_LAYOUT_NCHW;
    desc->type = CLT_PIXELS_U8;
}

static clt_status check_desc(const clt_dataset_desc *d, const char *op)
{
    CLT_TRY(clt_config_check_reserved(d->reserved, sizeof d->reserved, op));
    if (d->n < 1) return clt_fail(CLT_ERR_INVALID_ARG, "%s: n is %lld (at least 1 sample)", op, (long long)d->n);
    if (d->channels < 1 || d->height < 1 || d->width < 1)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: samples of %d x %d x %d (channels x height x width, each >= 1)",
                        op, d->channels, d->height, d->width);
    if ((int64_t)d->channels * d->height * d->width > INT32_MAX)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: samples of %d x %d x %d values: more than %d", op, d->channels,
                        d->height, d->width, INT32_MAX);
    if (d->type != CLT_PIXELS_U8 && d->type != CLT_PIXELS_F32)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: unknown pixel type %d", op, (int)d->type);
    if (d->layout != CLT_LAYOUT_NCHW && d->layout != CLT_LAYOUT_NHWC)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: layout %d (CLT_LAYOUT_NCHW or CLT_LAYOUT_NHWC)", op, (int)d->layout);
    if (!d->images || !d->labels) return clt_fail(CLT_ERR_INVALID_ARG, "%s: images or labels is NULL", op);
    if (d->classes < 1) return clt_fail(CLT_ERR_INVALID_ARG, "%s: classes is %d (at least 1)", op, d->classes);
    for (int64_t i = 0; i < d->n; i++)
        if (d->labels[i] < 0 || d->labels[i] >= d->classes)
            return clt_fail(CLT_ERR_INVALID_ARG, "%s: label %d of sample %lld is out of range for %d classes "
                            "(0..%d)", op, d->labels[i], (long long)i, d->classes, d->classes - 1);
    return CLT_OK;
}

/* Sample i's values in NCHW order from the caller's layout. */
static void copy_sample(const clt_dataset_desc *d, size_t size, int64_t i, void *to)
{
    size_t hw = (size_t)d->height * (size_t)d->width, sample = hw * (size_t)d->channels;
    const unsigned char *from = (const unsigned char *)d->images + (size_t)i * sample * size;
    if (d->layout == CLT_LAYOUT_NCHW) {
        memcpy(to, from, sample * size);
        return;
    }
    for (size_t p = 0; p < hw; p++)
        for (size_t c = 0; c < (size_t)d->channels; c++)
            memcpy((unsigned char *)to + (c * hw + p) * size, from + (p * (size_t)d->channels + c) * size, size);
}

clt_status clt_dataset_from_memory(const clt_dataset_desc *desc, clt_dataset **out)
{
    const char *op = "clt_dataset_from_memory";
    if (!out) return clt_fail(CLT_ERR_INVALID_ARG, "%s: out is NULL", op);
    *out = NULL;
    if (!desc) return clt_fail(CLT_ERR_INVALID_ARG, "%s: desc is NULL", op);
    return clt_dataset_from_arrays(desc, op, out);
}

clt_status clt_dataset_from_arrays(const clt_dataset_desc *desc, const char *op, clt_dataset **out)
{
    CLT_TRY(check_desc(desc, op));
    int u8 = desc->type == CLT_PIXELS_U8;
    clt_dataset *ds;
    CLT_TRY(clt_dataset_alloc(desc->n, desc->channels, desc->height, desc->width, desc->classes, u8, &ds));
    size_t sample = clt_dataset_sample_size(ds), size = u8 ? 1 : sizeof(float);
    for (int64_t i = 0; i < desc->n; i++) {
        void *to = (unsigned char *)ds->pixels + (size_t)i * sample * size;
        copy_sample(desc, size, i, to);
        for (size_t k = 0; !u8 && k < sample; k++) {
            double v = ((const float *)to)[k];
            if (!isfinite(v)) {
                clt_dataset_destroy(ds);
                return clt_fail(CLT_ERR_INVALID_ARG, "%s: sample %lld holds %g (images must be finite)", op,
                                (long long)i, v);
            }
        }
        ds->labels[i] = desc->labels[i];
    }
    *out = ds;
    return CLT_OK;
}
