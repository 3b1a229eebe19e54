/* Per-channel normalisation of a dataset's samples, and the statistics an
 * "auto" normalisation takes from the training set. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "data/dataset.h"

clt_status clt_norm_make(int channels, const float *mean, const float *std, const char *op, float **out)
{
    *out = NULL;
    if (!mean != !std) return clt_fail(CLT_ERR_INVALID_ARG, "%s: mean and std are both set or both NULL", op);
    for (int c = 0; mean && c < channels; c++)
        if (!isfinite(mean[c]) || !isfinite(std[c]) || !(std[c] > 0))
            return clt_fail(CLT_ERR_INVALID_ARG, "%s: channel %d: mean %g, std %g (finite, std > 0)", op, c,
                            (double)mean[c], (double)std[c]);
    if (!mean) return CLT_OK;
    float *norm = malloc(2 * (size_t)channels * sizeof *norm);
    if (!norm) return clt_fail(CLT_ERR_NO_MEMORY, "%s: normalisation of %d channels", op, channels);
    memcpy(norm, mean, (size_t)channels * sizeof *norm);
    memcpy(norm + channels, std, (size_t)channels * sizeof *norm);
    *out = norm;
    return CLT_OK;
}

clt_status clt_dataset_set_normalization(clt_dataset *ds, const float *mean, const float *std)
{
    if (!ds) return clt_fail(CLT_ERR_INVALID_ARG, "clt_dataset_set_normalization: dataset is NULL");
    float *norm;
    CLT_TRY(clt_norm_make(ds->channels, mean, std, "clt_dataset_set_normalization", &norm));
    free(ds->norm);
    ds->norm = norm;
    return CLT_OK;
}

/* Float data: two passes in double, the mean, then the deviations. */
static void float_stats(const clt_dataset *ds, double *mean, double *std)
{
    size_t plane = (size_t)ds->height * (size_t)ds->width, sample = clt_dataset_sample_size(ds);
    double count = (double)ds->n * (double)plane;
    const float *px = ds->pixels;
    for (int c = 0; c < ds->channels; c++) {
        double sum = 0, dev = 0;
        for (int64_t i = 0; i < ds->n; i++)
            for (size_t p = 0; p < plane; p++) sum += px[(size_t)i * sample + (size_t)c * plane + p];
        mean[c] = sum / count;
        for (int64_t i = 0; i < ds->n; i++)
            for (size_t p = 0; p < plane; p++) {
                double d = px[(size_t)i * sample + (size_t)c * plane + p] - mean[c];
                dev += d * d;
            }
        std[c] = sqrt(dev / count);
    }
}

/* 8-bit data: each channel's count of every byte value, exact, from one
 * pass over the samples (one decode of each file for a lazy dataset);
 * the moments then come from 256 values a channel. */
static clt_status byte_stats(const clt_dataset *ds, double *mean, double *std)
{
    size_t plane = (size_t)ds->height * (size_t)ds->width;
    uint64_t *hist = calloc((size_t)ds->channels * 256, sizeof *hist);
    uint8_t *scratch = ds->files ? malloc(clt_dataset_sample_size(ds)) : NULL;
    if (!hist || (ds->files && !scratch)) {
        free(hist), free(scratch);
        return clt_fail(CLT_ERR_NO_MEMORY, "clt_dataset_channel_stats: %d channels", ds->channels);
    }
    clt_status s = CLT_OK;
    for (int64_t i = 0; i < ds->n && s == CLT_OK; i++) {
        const uint8_t *b;
        s = clt_dataset_sample_bytes(ds, i, scratch, &b);
        for (int c = 0; s == CLT_OK && c < ds->channels; c++)
            for (size_t p = 0; p < plane; p++) hist[(size_t)c * 256 + b[(size_t)c * plane + p]]++;
    }
    float lut[256];
    clt_unit_table(lut);
    double count = (double)ds->n * (double)plane;
    for (int c = 0; s == CLT_OK && c < ds->channels; c++) {
        const uint64_t *h = hist + (size_t)c * 256;
        double sum = 0, dev = 0;
        for (int v = 0; v < 256; v++) sum += (double)h[v] * lut[v];
        mean[c] = sum / count;
        for (int v = 0; v < 256; v++) dev += (double)h[v] * (lut[v] - mean[c]) * (lut[v] - mean[c]);
        std[c] = sqrt(dev / count);
    }
    free(hist), free(scratch);
    return s;
}

clt_status clt_dataset_channel_stats(const clt_dataset *ds, double *mean, double *std)
{
    if (!ds || !mean || !std) return clt_fail(CLT_ERR_INVALID_ARG, "clt_dataset_channel_stats: NULL argument");
    if (ds->u8) return byte_stats(ds, mean, std);
    float_stats(ds, mean, std);
    return CLT_OK;
}

int clt_dataset_normalization(const clt_dataset *ds, float *mean, float *std)
{
    if (!ds || !ds->norm) return 0;
    if (mean) memcpy(mean, ds->norm, (size_t)ds->channels * sizeof *mean);
    if (std) memcpy(std, ds->norm + ds->channels, (size_t)ds->channels * sizeof *std);
    return 1;
}
