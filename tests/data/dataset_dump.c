/* Test helper: a dataset as JSON for tests/data/test_sources_numpy.py.
 * Usage: dataset_dump SOURCE train|test [auto|nchw|nhwc] [fine|coarse] [one|any] [EXTRA...]
 * EXTRA: size=S, channels=N  (image folders; before the others)
 *        holdout=F,SEED,kept|held  (that part of a held-out split)
 *        norm=auto | norm=M0,M1,..:S0,S1,..  (stats and normalisation)
 *        aug=PAD,FLIP,SEED,EPOCH  (one batch of every sample in order
 *        through a batcher with that augmentation, and each draw)
 *        prefetch  (that batcher fills the batch on its own thread)
 *        spoil=PATH, remove=PATH  (after the load: that file cut to its
 *        first 40 bytes, or removed; a lazy folder then fails to read,
 *        and after a failed batch the next call's result is printed)
 * Prints {"n", "shape", "classes", "labels", "bits"} (bits: every float's
 * uint32 pattern, NCHW; plus "mean"/"std" with norm=auto, "draws" with
 * aug=, "names" and "skipped" for an image folder), or {"none": true} for a missing test split; exit 1 with the error
 * on stderr. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cltrain.h"
#include "data/augment.h"

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
    for (int i = 6; i < argc; i++) {
        sscanf(argv[i], "size=%d", &opt.image_size);
        sscanf(argv[i], "channels=%d", &opt.channels);
    }
    clt_dataset *ds = NULL;
    clt_subset split = !strcmp(argv[2], "test") ? CLT_SUBSET_TEST : CLT_SUBSET_TRAIN;
    clt_status st = clt_dataset_load_with(argv[1], split, &opt, &ds);
    if (st != CLT_OK) {
        fprintf(stderr, "%s: %s\n", clt_status_name(st), clt_last_error());
        return 1;
    }
    if (!ds) {
        printf("{\"none\": true}\n");
        return 0;
    }
    int c, h, w;
    clt_dataset_shape(ds, &c, &h, &w);
    clt_augment aug = {0, 0, 0, 0};
    int augment = 0, prefetch = 0;
    double mean[64], std[64];
    int stats = 0;
    for (int i = 6; i < argc; i++) {
        double f;
        unsigned long long seed;
        char part[8];
        if (sscanf(argv[i], "holdout=%lf,%llu,%7s", &f, &seed, part) == 3) {
            clt_dataset *kept, *held;
            if (clt_dataset_holdout(ds, f, seed, &kept, &held) != CLT_OK) {
                fprintf(stderr, "%s\n", clt_last_error());
                return 1;
            }
            clt_dataset_destroy(ds);
            ds = strcmp(part, "held") ? kept : held;
            clt_dataset_destroy(strcmp(part, "held") ? held : kept);
        } else if (!strcmp(argv[i], "norm=auto") && c <= 64) {
            float m[64], sd[64];
            if (clt_dataset_channel_stats(ds, mean, std) != CLT_OK) {
                fprintf(stderr, "%s\n", clt_last_error());
                return 1;
            }
            for (int k = 0; k < c; k++) m[k] = (float)mean[k], sd[k] = (float)std[k];
            if (clt_dataset_set_normalization(ds, m, sd) != CLT_OK) return 1;
            stats = 1;
        } else if (!strncmp(argv[i], "norm=", 5) && c <= 64) {
            float m[64], sd[64];
            const char *p = argv[i] + 5;
            for (int k = 0; k < c; k++) m[k] = strtof(p, (char **)&p), p += *p == ',' || *p == ':';
            for (int k = 0; k < c; k++) sd[k] = strtof(p, (char **)&p), p += *p == ',';
            if (clt_dataset_set_normalization(ds, m, sd) != CLT_OK) {
                fprintf(stderr, "%s\n", clt_last_error());
                return 1;
            }
        } else if (sscanf(argv[i], "aug=%d,%d,%llu,%lld", &aug.pad, &aug.flip, &seed, (long long *)&aug.epoch) == 4) {
            aug.seed = seed;
            augment = 1;
        } else if (!strcmp(argv[i], "prefetch")) {
            prefetch = 1;
        } else if ((!strncmp(argv[i], "spoil=", 6) && truncate(argv[i] + 6, 40) != 0) ||
                   (!strncmp(argv[i], "remove=", 7) && remove(argv[i] + 7) != 0)) {
            perror(argv[i]);
            return 1;
        }
    }
    int64_t n = clt_dataset_size(ds);
    size_t values = (size_t)n * (size_t)c * (size_t)h * (size_t)w;
    float *im = malloc(values * sizeof(float));
    int32_t *lb = malloc((size_t)n * sizeof(int32_t));
    if (!im || !lb) return 1;
    if (augment) { /* through a batcher: the training path */
        clt_batcher_config bc;
        clt_batcher_config_default(&bc);
        bc.batch_size = (int)n, bc.shuffle = 0, bc.prefetch = prefetch, bc.seed = aug.seed;
        bc.augment_pad = aug.pad, bc.augment_flip = aug.flip;
        clt_batcher *b = NULL;
        clt_batch batch;
        if (clt_batcher_create(ds, &bc, &b) != CLT_OK || clt_batcher_seek(b, aug.epoch, 0) != CLT_OK ||
            clt_batcher_next(b, &batch) != CLT_OK || batch.count != n) {
            fprintf(stderr, "%s\n", clt_last_error());
            if (b) { /* a failed batch counts as taken: the end mark comes next */
                clt_status then = clt_batcher_next(b, &batch);
                fprintf(stderr, "then: %s %d\n", clt_status_name(then), batch.count);
            }
            clt_batcher_destroy(b);
            return 1;
        }
        memcpy(im, batch.images, values * sizeof(float));
        memcpy(lb, batch.labels, (size_t)n * sizeof(int32_t));
        clt_batcher_destroy(b);
    } else if (clt_dataset_read(ds, 0, n, im, lb) != CLT_OK) {
        fprintf(stderr, "%s\n", clt_last_error());
        return 1;
    }
    printf("{\"n\": %" PRId64 ", \"shape\": [%d, %d, %d], \"classes\": %d, ", n, c, h, w, clt_dataset_classes(ds));
    if (stats) {
        printf("\"mean\": [");
        for (int k = 0; k < c; k++) printf("%s%.17g", k ? ", " : "", mean[k]);
        printf("], \"std\": [");
        for (int k = 0; k < c; k++) printf("%s%.17g", k ? ", " : "", std[k]);
        printf("], ");
    }
    if (augment) {
        printf("\"draws\": [");
        for (int64_t i = 0; i < n; i++) {
            int dx, dy, flip;
            clt_augment_draw(&aug, i, &dx, &dy, &flip);
            printf("%s[%d, %d, %d]", i ? ", " : "", dx, dy, flip);
        }
        printf("], ");
    }
    if (clt_dataset_class_name(ds, 0)) {
        printf("\"names\": [");
        for (int k = 0; clt_dataset_class_name(ds, k); k++) printf("%s\"%s\"", k ? ", " : "", clt_dataset_class_name(ds, k));
        printf("], \"skipped\": %lld, ", (long long)clt_dataset_skipped_files(ds));
    }
    printf("\"labels\": [");
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
