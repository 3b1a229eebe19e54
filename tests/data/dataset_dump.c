/* Test helper: a dataset as JSON for tests/data/test_sources_numpy.py.
 * Usage: dataset_dump SOURCE train|test [auto|nchw|nhwc] [fine|coarse] [one|any]
 * Prints {"n", "shape", "classes", "labels", "bits"} (bits: every float's
 * uint32 pattern, NCHW), or {"none": true} for a missing test split;
 * exit 1 with the error on stderr. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cltrain.h"

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: dataset_dump SOURCE train|test [auto|nchw|nhwc] [fine|coarse] [one|any]\n");
        return 2;
    }
    clt_load_options opt;
    clt_load_options_default(&opt);
    if (argc > 3) opt.layout = !strcmp(argv[3], "nchw") ? CLT_LAYOUT_NCHW : !strcmp(argv[3], "nhwc") ? CLT_LAYOUT_NHWC
                                                                                                     : CLT_LAYOUT_AUTO;
    if (argc > 4) opt.coarse = !strcmp(argv[4], "coarse");
    if (argc > 5) opt.any_split = !strcmp(argv[5], "any");
    clt_dataset *ds = NULL;
    clt_subset split = !strcmp(argv[2], "test") ? CLT_SUBSET_TEST : CLT_SUBSET_TRAIN;
    if (clt_dataset_load_with(argv[1], split, &opt, &ds) != CLT_OK) {
        fprintf(stderr, "%s: %s\n", clt_status_name(clt_dataset_load_with(argv[1], split, &opt, &ds)), clt_last_error());
        return 1;
    }
    if (!ds) {
        printf("{\"none\": true}\n");
        return 0;
    }
    int c, h, w;
    clt_dataset_shape(ds, &c, &h, &w);
    int64_t n = clt_dataset_size(ds);
    size_t values = (size_t)n * (size_t)c * (size_t)h * (size_t)w;
    float *im = malloc(values * sizeof(float));
    int32_t *lb = malloc((size_t)n * sizeof(int32_t));
    if (!im || !lb || clt_dataset_read(ds, 0, n, im, lb) != CLT_OK) return 1;
    printf("{\"n\": %" PRId64 ", \"shape\": [%d, %d, %d], \"classes\": %d, \"labels\": [", n, c, h, w,
           clt_dataset_classes(ds));
    for (int64_t i = 0; i < n; i++) printf("%s%d", i ? ", " : "", lb[i]);
    printf("], \"bits\": [");
    for (size_t i = 0; i < values; i++) {
        uint32_t u;
        memcpy(&u, &im[i], sizeof u);
        printf("%s%" PRIu32, i ? ", " : "", u);
    }
    printf("]}\n");
    free(im);
    free(lb);
    clt_dataset_destroy(ds);
    return 0;
}
