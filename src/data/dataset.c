/* The dataset model (data/dataset.h) and its IDX source: images kept as
 * bytes and read as x/255, labels int32, both validated once here so the
 * rest of the library can trust them. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "data/dataset.h"
#include "data/image_files.h"

/* A dataset of n samples, with room for their pixels unless files. */
static clt_status alloc(int64_t n, int channels, int height, int width, int classes, int u8, clt_image_files *files,
                        clt_dataset **out)
{
    *out = NULL;
    clt_dataset *ds;
    clt_status cs = clt_calloc((void **)&ds, 1, sizeof *ds, "dataset");
    if (cs != CLT_OK) {
        clt_image_files_destroy(files);
        return cs;
    }
    ds->files = files;
    ds->n = n;
    ds->channels = channels;
    ds->height = height;
    ds->width = width;
    ds->classes = classes;
    ds->u8 = u8;
    size_t values;
    clt_status s = files ? CLT_OK
                   : clt_mul_size((size_t)n, clt_dataset_sample_size(ds), &values)
                       ? clt_aligned_alloc(&ds->pixels, values, u8 ? 1 : sizeof(float), "dataset images")
                       : clt_fail(CLT_ERR_NO_MEMORY, "dataset images: %lld samples of %dx%dx%d overflow", (long long)n,
                                  channels, height, width);
    if (s == CLT_OK)
        s = clt_aligned_alloc((void **)&ds->labels, n > 0 ? (size_t)n : 1, sizeof(int32_t), "dataset labels");
    if (s != CLT_OK) {
        clt_dataset_destroy(ds);
        return s;
    }
    *out = ds;
    return CLT_OK;
}

clt_status clt_dataset_alloc(int64_t n, int channels, int height, int width, int classes, int u8,
                             clt_dataset **out)
{
    return alloc(n, channels, height, width, classes, u8, NULL, out);
}

clt_status clt_dataset_alloc_files(int64_t n, int channels, int height, int width, int classes,
                                   clt_image_files *files, clt_dataset **out)
{
    return alloc(n, channels, height, width, classes, 1, files, out);
}

clt_status clt_dataset_sample_bytes(const clt_dataset *ds, int64_t i, uint8_t *scratch, const uint8_t **out)
{
    if (ds->files) {
        CLT_TRY(clt_image_files_read(ds->files, i, scratch));
        *out = scratch;
    } else {
        *out = (const uint8_t *)ds->pixels + (size_t)i * clt_dataset_sample_size(ds);
    }
    return CLT_OK;
}

size_t clt_dataset_sample_size(const clt_dataset *ds)
{
    return (size_t)ds->channels * (size_t)ds->height * (size_t)ds->width;
}

void clt_unit_table(float lut[256])
{
    for (int v = 0; v < 256; v++) lut[v] = (float)v / 255.0f;
}

/* Sample src's values as floats into to (x/255 for bytes; a lazy
 * dataset's decoded into bytes first). */
static clt_status convert(const clt_dataset *ds, const float *lut, int64_t src, size_t sample, uint8_t *bytes, float *to)
{
    if (!ds->u8) {
        memcpy(to, (const float *)ds->pixels + (size_t)src * sample, sample * sizeof(float));
        return CLT_OK;
    }
    const uint8_t *from;
    CLT_TRY(clt_dataset_sample_bytes(ds, src, bytes, &from));
    for (size_t i = 0; i < sample; i++) to[i] = lut[from[i]];
    return CLT_OK;
}

clt_status clt_dataset_gather(const clt_dataset *ds, const int64_t *idx, int64_t first, int64_t n,
                              const clt_augment *aug, float *spare, float *images, int32_t *labels)
{
    float lut[256];
    if (ds->u8) clt_unit_table(lut);
    size_t sample = clt_dataset_sample_size(ds), plane = (size_t)ds->height * (size_t)ds->width;
    uint8_t *bytes = NULL;
    if (ds->files && !(bytes = malloc(sample))) return clt_fail(CLT_ERR_NO_MEMORY, "a sample's %zu bytes", sample);
    int augment = aug && (aug->pad > 0 || aug->flip);
    clt_status s = CLT_OK;
    for (int64_t k = 0; k < n && s == CLT_OK; k++) {
        int64_t src = idx ? idx[k] : first + k;
        float *to = images + (size_t)k * sample;
        s = convert(ds, lut, src, sample, bytes, augment ? spare : to);
        if (s != CLT_OK) break;
        if (augment) clt_augment_sample(aug, src, ds->channels, ds->height, ds->width, spare, to);
        for (int c = 0; ds->norm && c < ds->channels; c++) {
            float mean = ds->norm[c], std = ds->norm[ds->channels + c], *p = to + (size_t)c * plane;
            for (size_t i = 0; i < plane; i++) p[i] = (p[i] - mean) / std;
        }
        if (labels) labels[k] = ds->labels[src];
    }
    free(bytes);
    return s;
}

static clt_status check_images(const clt_idx *im, const char *path)
{
    if (im->ndim != 3 && im->ndim != 4)
        return clt_fail(CLT_ERR_FORMAT, "%s: images must be an idx3 file (N x rows x cols) or idx4 (N x rows x cols "
                        "x channels), this one has %d dimension(s)", path, im->ndim);
    if (im->dims[0] == 0) return clt_fail(CLT_ERR_FORMAT, "%s: holds no images", path);
    for (int d = 1; d < im->ndim; d++)
        if (im->dims[d] == 0 || im->dims[d] > 65535) {
            char size[96];
            int at = snprintf(size, sizeof size, "%lld x %lld", (long long)im->dims[1], (long long)im->dims[2]);
            if (im->ndim == 4) snprintf(size + at, sizeof size - (size_t)at, " x %lld", (long long)im->dims[3]);
            return clt_fail(CLT_ERR_FORMAT, "%s: unusable image size %s", path, size);
        }
    return CLT_OK;
}

static clt_status check_labels(const clt_idx *lb, const char *path, int classes)
{
    if (lb->ndim != 1)
        return clt_fail(CLT_ERR_FORMAT, "%s: labels must be an idx1 file (N), this one has %d "
                        "dimension(s)", path, lb->ndim);
    for (size_t i = 0; i < lb->size; i++)
        if (lb->data[i] >= classes)
            return clt_fail(CLT_ERR_FORMAT, "%s: label %u of sample %zu is out of range for %d "
                            "classes (must be 0..%d)", path, lb->data[i], i, classes, classes - 1);
    return CLT_OK;
}

/* Takes the first n samples of the validated files. */
static clt_status build(const clt_idx *im, const clt_idx *lb, int classes, int64_t n, const char *path,
                        clt_dataset **out)
{
    if (im->ndim == 4) { /* N x rows x cols x channels: each pixel's channels together */
        int32_t *labels = malloc((size_t)n * sizeof *labels);
        if (!labels) return clt_fail(CLT_ERR_NO_MEMORY, "%s: %lld labels", path, (long long)n);
        for (int64_t i = 0; i < n; i++) labels[i] = lb->data[i];
        clt_dataset_desc d;
        clt_dataset_desc_default(&d);
        d.n = n, d.height = (int)im->dims[1], d.width = (int)im->dims[2], d.channels = (int)im->dims[3];
        d.layout = CLT_LAYOUT_NHWC, d.images = im->data, d.labels = labels, d.classes = classes;
        clt_status s = clt_dataset_from_arrays(&d, path, out);
        free(labels);
        return s;
    }
    clt_dataset *ds;
    CLT_TRY(clt_dataset_alloc(n, 1, (int)im->dims[1], (int)im->dims[2], classes, 1, &ds));
    memcpy(ds->pixels, im->data, (size_t)n * clt_dataset_sample_size(ds)); /* <= im->size */
    for (int64_t i = 0; i < n; i++) ds->labels[i] = lb->data[i];
    *out = ds;
    return CLT_OK;
}

clt_status clt_dataset_from_idx(const char *images_path, const char *labels_path, int classes,
                                int64_t limit, clt_dataset **out)
{
    if (!out) return clt_fail(CLT_ERR_INVALID_ARG, "clt_dataset_from_idx: out is NULL");
    *out = NULL;
    if (!images_path || !labels_path)
        return clt_fail(CLT_ERR_INVALID_ARG, "clt_dataset_from_idx: a path is NULL");
    if (classes <= 0)
        return clt_fail(CLT_ERR_INVALID_ARG, "clt_dataset_from_idx: classes must be > 0 (got %d)",
                        classes);
    if (limit < 0)
        return clt_fail(CLT_ERR_INVALID_ARG, "clt_dataset_from_idx: limit must be >= 0 (got %lld)",
                        (long long)limit);
    clt_idx *im = NULL, *lb = NULL;
    clt_status s = clt_idx_read(images_path, &im);
    if (s == CLT_OK) s = check_images(im, images_path);
    if (s == CLT_OK) s = clt_idx_read(labels_path, &lb);
    if (s == CLT_OK) s = check_labels(lb, labels_path, classes);
    if (s == CLT_OK && lb->dims[0] != im->dims[0])
        s = clt_fail(CLT_ERR_FORMAT, "image/label count mismatch: %s holds %lld images but %s holds "
                     "%lld labels", images_path, (long long)im->dims[0], labels_path,
                     (long long)lb->dims[0]);
    if (s == CLT_OK) {
        int64_t n = limit > 0 && limit < im->dims[0] ? limit : im->dims[0];
        s = build(im, lb, classes, n, images_path, out);
    }
    clt_idx_destroy(im);
    clt_idx_destroy(lb);
    return s;
}

void clt_dataset_destroy(clt_dataset *ds)
{
    if (!ds) return;
    clt_aligned_free(ds->pixels);
    clt_image_files_destroy(ds->files);
    free(ds->norm);
    for (int i = 0; i < ds->n_class_names; i++) free(ds->class_names[i]);
    free(ds->class_names);
    clt_aligned_free(ds->labels);
    free(ds);
}

int64_t clt_dataset_size(const clt_dataset *ds) { return ds ? ds->n : 0; }

void clt_dataset_shape(const clt_dataset *ds, int *channels, int *height, int *width)
{
    if (channels) *channels = ds ? ds->channels : 0;
    if (height) *height = ds ? ds->height : 0;
    if (width) *width = ds ? ds->width : 0;
}

int clt_dataset_classes(const clt_dataset *ds) { return ds ? ds->classes : 0; }

clt_status clt_dataset_read(const clt_dataset *ds, int64_t first, int64_t n, float *images, int32_t *labels)
{
    if (!ds || (!images && !labels)) return clt_fail(CLT_ERR_INVALID_ARG, "clt_dataset_read: NULL argument");
    if (first < 0 || n < 0 || first > ds->n || n > ds->n - first)
        return clt_fail(CLT_ERR_INVALID_ARG, "clt_dataset_read: samples %lld..%lld of a dataset of %lld",
                        (long long)first, (long long)first + (long long)n - 1, (long long)ds->n);
    if (images) return clt_dataset_gather(ds, NULL, first, n, NULL, NULL, images, labels);
    memcpy(labels, ds->labels + first, (size_t)n * sizeof(int32_t));
    return CLT_OK;
}

const char *clt_dataset_class_name(const clt_dataset *ds, int label)
{
    return ds && label >= 0 && label < ds->n_class_names ? ds->class_names[label] : NULL;
}

int64_t clt_dataset_skipped_files(const clt_dataset *ds) { return ds ? ds->skipped_files : 0; }

int clt_dataset_decodes_files(const clt_dataset *ds) { return ds && ds->files; }

const int32_t *clt_dataset_labels(const clt_dataset *ds) { return ds ? ds->labels : NULL; }
