/* Datasets from NumPy arrays: an .npz archive (numpy.savez) or a pair of
 * .npy files, read with the npz reader's checks (io/, through its public
 * calls), then taken apart here: which arrays are the images and labels,
 * where a 4-D array keeps its channels, and the labels' integer type. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "data/dataset.h"
#include "io/npz.h"

/* A little-endian integer label of dtype d (checked by the reader). */
static int64_t label_at(const clt_npz_entry *e, int64_t i)
{
    size_t size = e->nbytes / (size_t)(e->numel > 0 ? e->numel : 1);
    const uint8_t *p = e->bytes + (size_t)i * size;
    uint64_t v = 0;
    for (size_t b = 0; b < size; b++) v |= (uint64_t)p[b] << (8 * b);
    if (e->dtype[1] == 'i' && size < 8 && (v >> (8 * size - 1)) & 1) v |= ~(uint64_t)0 << (8 * size);
    return e->dtype[1] == 'i' ? (int64_t)v : v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

static int is_integer(const clt_npz_entry *e)
{
    return e->is_bytes && (e->dtype[1] == 'i' || e->dtype[1] == 'u');
}

/* The images' shape and layout: (N, H, W) one channel; 4-D by `layout`. */
static clt_status image_shape(const clt_npz_entry *im, clt_layout layout, const char *what, clt_dataset_desc *d)
{
    if (strcmp(im->dtype, "|u1") != 0 && strcmp(im->dtype, "<f4") != 0)
        return clt_fail(CLT_ERR_FORMAT, "%s: images of dtype '%s': uint8 or float32 only (convert with "
                        "a.astype(numpy.float32))", what, im->dtype);
    if (im->ndim != 3 && im->ndim != 4)
        return clt_fail(CLT_ERR_FORMAT, "%s: images of %d dimensions: (N, H, W), (N, H, W, C) or (N, C, H, W)",
                        what, im->ndim);
    for (int i = 0; i < im->ndim; i++)
        if (im->shape[i] < 1 || im->shape[i] > (i ? 65535 : INT32_MAX))
            return clt_fail(CLT_ERR_FORMAT, "%s: images of shape dimension %d = %lld", what, i,
                            (long long)im->shape[i]);
    d->n = im->shape[0];
    d->type = im->dtype[1] == 'u' ? CLT_PIXELS_U8 : CLT_PIXELS_F32;
    d->images = im->dtype[1] == 'u' ? (const void *)im->bytes : (const void *)im->data;
    if (im->ndim == 3) {
        d->channels = 1, d->height = (int)im->shape[1], d->width = (int)im->shape[2];
        d->layout = CLT_LAYOUT_NCHW;
        return CLT_OK;
    }
    int64_t last = im->shape[3];
    int nhwc = layout == CLT_LAYOUT_NHWC || (layout == CLT_LAYOUT_AUTO && (last == 1 || last == 3 || last == 4));
    d->layout = nhwc ? CLT_LAYOUT_NHWC : CLT_LAYOUT_NCHW;
    d->channels = (int)(nhwc ? im->shape[3] : im->shape[1]);
    d->height = (int)(nhwc ? im->shape[1] : im->shape[2]);
    d->width = (int)(nhwc ? im->shape[2] : im->shape[3]);
    return CLT_OK;
}

/* Images and labels entries into a dataset (labels as int32). */
static clt_status from_entries(const clt_npz_entry *im, const clt_npz_entry *lb, clt_layout layout, int64_t limit,
                               const char *what, clt_dataset **out)
{
    if (layout != CLT_LAYOUT_NCHW && layout != CLT_LAYOUT_NHWC && layout != CLT_LAYOUT_AUTO)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: layout %d", what, (int)layout);
    if (limit < 0) return clt_fail(CLT_ERR_INVALID_ARG, "%s: limit must be >= 0 (got %lld)", what, (long long)limit);
    clt_dataset_desc d;
    clt_dataset_desc_default(&d);
    CLT_TRY(image_shape(im, layout, what, &d));
    if (!is_integer(lb) || lb->ndim != 1)
        return clt_fail(CLT_ERR_FORMAT, "%s: labels must be integers shaped (N,), not dtype '%s' of %d dimensions",
                        what, lb->dtype, lb->ndim);
    if (lb->shape[0] != d.n)
        return clt_fail(CLT_ERR_FORMAT, "%s: %lld images but %lld labels", what, (long long)d.n,
                        (long long)lb->shape[0]);
    if (limit > 0 && limit < d.n) d.n = limit;
    int32_t *labels = malloc((size_t)d.n * sizeof *labels);
    if (!labels) return clt_fail(CLT_ERR_NO_MEMORY, "%s: %lld labels", what, (long long)d.n);
    int64_t most = 0;
    for (int64_t i = 0; i < d.n; i++) {
        int64_t v = label_at(lb, i);
        if (v < 0 || v >= 65536) {
            free(labels);
            return clt_fail(CLT_ERR_FORMAT, "%s: label %lld of sample %lld (labels are class indices 0..65535)", what,
                            (long long)v, (long long)i);
        }
        labels[i] = (int32_t)v;
        if (v > most) most = v;
    }
    d.labels = labels;
    d.classes = (int)most + 1;
    clt_status s = clt_dataset_from_arrays(&d, what, out);
    free(labels);
    return s;
}

/* An entry that must be there. */
static int find(const clt_npz *z, const char *name, clt_npz_entry *e)
{
    return clt_npz_find(z, name, e) == CLT_OK ? 1 : (clt_clear_error(), 0);
}

/* Which two arrays of the archive hold `subset`: 2 found in an archive of
 * both splits, 1 found as its only pair, 0 (with the detail set) not. */
static int pick_pair(const clt_npz *z, const char *path, clt_subset subset, clt_npz_entry *im, clt_npz_entry *lb)
{
    int train = subset == CLT_SUBSET_TRAIN;
    if (find(z, "x_train", im) || find(z, "x_test", im)) { /* Keras' layout: both splits */
        if (find(z, train ? "x_train" : "x_test", im) && find(z, train ? "y_train" : "y_test", lb)) return 2;
        clt_fail(CLT_ERR_FORMAT, "%s: has x_train or x_test but not x_%s and y_%s", path, train ? "train" : "test",
                 train ? "train" : "test");
        return 0;
    }
    static const char *const pairs[][2] = {{"images", "labels"}, {"x", "y"}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        if (find(z, pairs[i][0], im) && find(z, pairs[i][1], lb)) return 1;
    if (clt_npz_count(z) == 2) {
        clt_npz_entry a, b;
        clt_npz_entry_at(z, 0, &a);
        clt_npz_entry_at(z, 1, &b);
        int a_labels = is_integer(&a) && a.ndim == 1, b_labels = is_integer(&b) && b.ndim == 1;
        if (a_labels != b_labels) {
            *im = a_labels ? b : a;
            *lb = a_labels ? a : b;
            return 1;
        }
    }
    clt_fail(CLT_ERR_FORMAT, "%s: cannot tell the images from the labels among its %d arrays: name them "
             "images and labels (or x and y, or x_train, y_train, x_test, y_test)", path, clt_npz_count(z));
    return 0;
}

clt_status clt_npz_dataset(const char *path, clt_subset subset, clt_layout layout, int64_t limit, int any_split,
                           clt_dataset **out)
{
    *out = NULL;
    clt_npz *z;
    CLT_TRY(clt_npz_read(path, &z));
    clt_status s = clt_npz_archive_dataset(z, path, subset, layout, limit, any_split, out);
    clt_npz_destroy(z);
    return s;
}

clt_status clt_npz_archive_dataset(const clt_npz *z, const char *path, clt_subset subset, clt_layout layout,
                                   int64_t limit, int any_split, clt_dataset **out)
{
    *out = NULL;
    clt_npz_entry im, lb;
    int found = pick_pair(z, path, subset, &im, &lb);
    clt_status s = found ? CLT_OK : CLT_ERR_FORMAT;
    if (found == 1 && subset == CLT_SUBSET_TEST && !any_split) found = 0; /* one pair: training data */
    if (found) {
        char what[4200];
        snprintf(what, sizeof what, "%s (arrays %s, %s)", path, im.name, lb.name);
        s = from_entries(&im, &lb, layout, limit, what, out);
    }
    return s;
}

clt_status clt_dataset_from_npz(const char *path, clt_subset subset, clt_layout layout, int64_t limit,
                                clt_dataset **out)
{
    if (!out) return clt_fail(CLT_ERR_INVALID_ARG, "clt_dataset_from_npz: out is NULL");
    *out = NULL;
    if (!path) return clt_fail(CLT_ERR_INVALID_ARG, "clt_dataset_from_npz: path is NULL");
    if (subset != CLT_SUBSET_TRAIN && subset != CLT_SUBSET_TEST)
        return clt_fail(CLT_ERR_INVALID_ARG, "clt_dataset_from_npz: invalid split %d", (int)subset);
    return clt_npz_dataset(path, subset, layout, limit, 1, out);
}

clt_status clt_dataset_from_npy(const char *images_path, const char *labels_path, clt_layout layout,
                                int64_t limit, clt_dataset **out)
{
    if (!out) return clt_fail(CLT_ERR_INVALID_ARG, "clt_dataset_from_npy: out is NULL");
    *out = NULL;
    if (!images_path || !labels_path) return clt_fail(CLT_ERR_INVALID_ARG, "clt_dataset_from_npy: a path is NULL");
    clt_npz *zi = NULL, *zl = NULL;
    clt_status s = clt_npy_read(images_path, "images", &zi);
    if (s == CLT_OK) s = clt_npy_read(labels_path, "labels", &zl);
    if (s == CLT_OK) {
        char what[8300];
        snprintf(what, sizeof what, "%s and %s", images_path, labels_path);
        s = from_entries(clt_npz_get(zi, "images"), clt_npz_get(zl, "labels"), layout, limit, what, out);
    }
    clt_npz_destroy(zi);
    clt_npz_destroy(zl);
    return s;
}
