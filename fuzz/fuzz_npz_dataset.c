/* libFuzzer target for the NumPy dataset reader: an .npz archive from the
 * input (after a first byte that picks the split and layout) taken apart
 * into images and labels. Any input must give a dataset whose labels lie
 * below its class count and whose floats are finite, no dataset, or an
 * error with a detail; never a crash, leak, hang or huge allocation. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "cltrain.h"
#include "data/dataset.h"
#include "io/npz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    clt_subset subset = data[0] & 1 ? CLT_SUBSET_TEST : CLT_SUBSET_TRAIN;
    clt_layout layout = (clt_layout)((data[0] >> 1) % 3);
    int any = (data[0] >> 3) & 1;
    clt_npz *z = NULL;
    if (clt_npz_read_memory(data + 1, size - 1, "fuzz-input", &z) != CLT_OK) return 0;
    clt_dataset *ds = NULL;
    clt_status s = clt_npz_archive_dataset(z, "fuzz-input", subset, layout, data[0] >> 4, any, &ds);
    clt_npz_destroy(z);
    if (s != CLT_OK) {
        if (ds || !clt_last_error()[0]) __builtin_trap();
        return 0;
    }
    if (!ds) return 0; /* one pair, test split asked */
    int c, h, w;
    clt_dataset_shape(ds, &c, &h, &w);
    int64_t n = clt_dataset_size(ds);
    size_t sample = (size_t)c * (size_t)h * (size_t)w;
    float *im = malloc((size_t)n * sample * sizeof(float));
    int32_t *lb = malloc((size_t)n * sizeof(int32_t));
    if (im && lb && clt_dataset_read(ds, 0, n, im, lb) == CLT_OK) {
        for (int64_t i = 0; i < n; i++)
            if (lb[i] < 0 || lb[i] >= clt_dataset_classes(ds)) __builtin_trap();
        for (size_t i = 0; i < (size_t)n * sample; i++)
            if (!isfinite(im[i])) __builtin_trap();
    }
    free(im);
    free(lb);
    clt_dataset_destroy(ds);
    return 0;
}
