/* Per-channel normalisation of a dataset's samples, and the statistics an
 * "auto" normalisation takes from the training set. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "data/dataset.h"

clt_status clt_dataset_set_normalization(clt_dataset *ds, const float *mean, const float *std)
{
    if (!ds) return clt_fail(CLT_ERR_INVALID_ARG, "clt_dataset_set_normalization: dataset is NULL");
    if (!mean != !std)
        return clt_fail(CLT_ERR_INVALID_ARG, "clt_dataset_set_normalization: mean and std are both set or both NULL");
    for (int c = 0; mean && c < ds->channels; c++)
        if (!isfinite(mean[c]) || !isfinite(std[c]) || !(std[c] > 0))
            return clt_fail(CLT_ERR_INVALID_ARG, "clt_dataset_set_normalization: channel %d: mean %g, std %g (finite, "
                            "std > 0)", c, (double)mean[c], (double)std[c]);
    float *norm = NULL;
    if (mean) {
        norm = malloc(2 * (size_t)ds->channels * sizeof *norm);
        if (!norm) return clt_fail(CLT_ERR_NO_MEMORY, "normalisation of %d channels", ds->channels);
        memcpy(norm, mean, (size_t)ds->channels * sizeof *norm);
        memcpy(norm + ds->channels, std, (size_t)ds->channels * sizeof *norm);
    }
    free(ds->norm);
    ds->norm = norm;
    return CLT_OK;
}

/* Value p of channel c of sample i as read (x/255 for bytes). */
static double value_at(const clt_dataset *ds, const float *lut, int64_t i, int c, size_t p)
{
    size_t plane = (size_t)ds->height * (size_t)ds->width;
    size_t at = (size_t)i * clt_dataset_sample_size(ds) + (size_t)c * plane + p;
    return ds->u8 ? lut[((const uint8_t *)ds->pixels)[at]] : ((const float *)ds->pixels)[at];
}

clt_status clt_dataset_channel_stats(const clt_dataset *ds, double *mean, double *std)
{
    if (!ds || !mean || !std) return clt_fail(CLT_ERR_INVALID_ARG, "clt_dataset_channel_stats: NULL argument");
    size_t plane = (size_t)ds->height * (size_t)ds->width;
    double count = (double)ds->n * (double)plane;
    float lut[256];
    clt_unit_table(lut);
    for (int c = 0; c < ds->channels; c++) { /* two passes in double: the mean, then the deviations */
        double sum = 0, dev = 0;
        for (int64_t i = 0; i < ds->n; i++)
            for (size_t p = 0; p < plane; p++) sum += value_at(ds, lut, i, c, p);
        mean[c] = sum / count;
        for (int64_t i = 0; i < ds->n; i++)
            for (size_t p = 0; p < plane; p++) {
                double d = value_at(ds, lut, i, c, p) - mean[c];
                dev += d * d;
            }
        std[c] = sqrt(dev / count);
    }
    return CLT_OK;
}

int clt_dataset_normalization(const clt_dataset *ds, float *mean, float *std)
{
    if (!ds || !ds->norm) return 0;
    if (mean) memcpy(mean, ds->norm, (size_t)ds->channels * sizeof *mean);
    if (std) memcpy(std, ds->norm + ds->channels, (size_t)ds->channels * sizeof *std);
    return 1;
}
