/* The dataset's inside, for the data room and the rooms that read samples
 * (the batcher, evaluation): samples kept as their source has them (8-bit
 * or float32, C x H x W), converted to the net's floats as they are read. */
#ifndef CLT_DATA_DATASET_H
#define CLT_DATA_DATASET_H

#include "cltrain.h"
#include "data/augment.h"

struct clt_dataset {
    int64_t n;
    int channels, height, width, classes;
    int u8;          /* 1: pixels are uint8_t (read as x/255); 0: float */
    void *pixels;    /* n x channels x height x width, NCHW; NULL when files */
    struct clt_image_files *files; /* NULL, or the image files each sample is decoded from when read (u8) */
    int32_t *labels; /* n, each in 0 .. classes-1 */
    float *norm;     /* NULL, or per channel: mean[channels] then std[channels] (clt_dataset_set_normalization) */
    char **class_names; /* NULL, or n_class_names names (image folders) */
    int n_class_names;
    int64_t skipped_files; /* files of other types a folder held */
};

/* An empty dataset of n samples (pixels and labels allocated, not set);
 * the shape and class count must be valid (> 0, checked by the callers). */
clt_status clt_dataset_alloc(int64_t n, int channels, int height, int width, int classes, int u8,
                             clt_dataset **out);
/* The same with no pixels: a lazy image folder's, whose samples `files`
 * gives (taken over, destroyed here on failure). */
clt_status clt_dataset_alloc_files(int64_t n, int channels, int height, int width, int classes,
                                   struct clt_image_files *files, clt_dataset **out);
/* Sample i's bytes of an 8-bit dataset: a pointer into its pixels, or the
 * sample decoded from its file into scratch (room for one sample). */
clt_status clt_dataset_sample_bytes(const clt_dataset *ds, int64_t i, uint8_t *scratch, const uint8_t **out);
/* x/255 for every byte value, as float32: a table keeps the division
 * exact (as PyTorch's ToTensor has it) at the cost of a lookup. */
void clt_unit_table(float lut[256]);
/* A normalisation as datasets and nets keep it: `channels` means, then
 * `channels` stds, each finite, std > 0 (CLT_ERR_INVALID_ARG naming op and
 * the channel otherwise); both NULL: *out NULL, none. */
clt_status clt_norm_make(int channels, const float *mean, const float *std, const char *op, float **out);
/* Floats per sample. */
size_t clt_dataset_sample_size(const clt_dataset *ds);
/* Samples idx[0..n) (idx NULL: first, first+1, ...) as floats, NCHW, into
 * images (n x sample floats): x/255 for bytes, then augmented where aug is
 * not NULL (training batches; spare: room for one sample), then normalised
 * where the dataset says; labels into labels where not NULL. Fails only
 * for a lazy dataset whose file cannot be decoded (the detail names it). */
clt_status clt_dataset_gather(const clt_dataset *ds, const int64_t *idx, int64_t first, int64_t n, const clt_augment *aug,
                        float *spare, float *images, int32_t *labels);

/* clt_dataset_from_memory with `op` leading every error's detail (a file
 * and its arrays, for the sources that read arrays from files). */
clt_status clt_dataset_from_arrays(const clt_dataset_desc *desc, const char *op, clt_dataset **out);

/* clt_dataset_from_npz; with any_split 0 an archive of one pair gives
 * CLT_OK and *out NULL for CLT_SUBSET_TEST (it is training data). */
clt_status clt_npz_dataset(const char *path, clt_subset subset, clt_layout layout, int64_t limit, int any_split,
                           clt_dataset **out);

/* The same from an archive already read (the fuzzer's way in). */
clt_status clt_npz_archive_dataset(const clt_npz *z, const char *path, clt_subset subset, clt_layout layout,
                                   int64_t limit, int any_split, clt_dataset **out);

/* Whether a file name ends in .png, .jpg or .jpeg (any case). */
int clt_image_named(const char *name);
/* An image folder (image_folder.c): ROOT/<class>/... PNG and JPEG files;
 * channels 0 (the most any image has), 1 or 3; size 0 (all the same
 * size) or the side images are resized and cropped to. */
clt_status clt_image_folder_dataset(const char *root, int channels, int size, int64_t limit, clt_dataset **out);

#endif
