/* An image folder's images as the dataset takes them: the geometry rule
 * (channel count, resize and crop) applied to a decoded image, and the
 * list of files a lazy folder dataset decodes batch by batch instead of
 * holding every image. */
#ifndef CLT_DATA_IMAGE_FILES_H
#define CLT_DATA_IMAGE_FILES_H

#include <stdint.h>

#include "cltrain.h"
#include "data/image_decode.h"

/* Largest image file read (a sanity cap: no training image is this big). */
#define CLT_MAX_IMAGE_FILE ((size_t)1 << 30)

/* im as `channels` x height x width bytes (CHW) into to: grey copied into
 * R, G and B, RGB made grey by Pillow's luma; size 0 takes the image as it
 * is (its size must be width x height), size > 0 resizes its shorter side
 * to size (bilinear) and takes the centre size x size (= width x height). */
void clt_image_to_chw(const clt_image *im, int size, int channels, int height, int width, uint8_t *to);

/* Reads the file at path and decodes it (errors name the file). */
clt_status clt_image_decode_file(const char *path, clt_image *im);

/* The files of a lazy dataset and the rule that makes each one a sample
 * (channels x height x width bytes). Read-only once made: any number of
 * threads may read samples at once. */
typedef struct clt_image_files {
    char **paths;
    int64_t n;
    int channels, height, width, size;
} clt_image_files;

/* Sample i into to (channels x height x width bytes), decoded from its file
 * now: a file that went missing, corrupt or changed size since the dataset
 * was made is an error naming it. */
clt_status clt_image_files_read(const clt_image_files *f, int64_t i, uint8_t *to);
/* The files i with keep[i] == want, in order, as a new list. */
clt_status clt_image_files_subset(const clt_image_files *f, const uint8_t *keep, int want, int64_t n,
                                  clt_image_files **out);
void clt_image_files_destroy(clt_image_files *f);

enum { CLT_DECODE_EAGER, CLT_DECODE_LAZY, CLT_DECODE_AUTO };
/* How folders are decoded: CLTRAIN_DATA_DECODE=eager|lazy|auto (unset or
 * empty: auto) into *mode; a bad value is CLT_ERR_INVALID_ARG naming it. */
clt_status clt_image_decode_mode(int *mode);
/* Whether a folder of decoded_bytes goes lazy in that mode: auto does when
 * they would take more than half of the memory available now
 * (MemAvailable of /proc/meminfo, else the free pages). */
int clt_image_lazy(int mode, uint64_t decoded_bytes);

#endif
