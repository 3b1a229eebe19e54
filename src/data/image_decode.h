/* PNG and JPEG files to 8-bit pixels (libpng, libjpeg-turbo). */
#ifndef CLT_DATA_IMAGE_DECODE_H
#define CLT_DATA_IMAGE_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "cltrain.h"

/* A decoded image: height x width pixels of `channels` (1 grey, 3 RGB)
 * interleaved bytes, rows first (malloc'd; free it). */
typedef struct clt_image {
    int width, height, channels;
    uint8_t *pixels;
} clt_image;

/* Whether this build reads PNG and JPEG files (both libraries found). */
int clt_image_supported(void);
/* Decodes a PNG or JPEG held in memory (told apart by their signatures):
 * grey stays grey, palette and RGB become RGB; alpha is dropped; 16-bit
 * samples keep their high byte; CMYK JPEGs and images of more than
 * 256 MiB of pixels are refused. `name` labels
 * errors (CLT_ERR_FORMAT for a corrupt or truncated file). */
clt_status clt_image_decode(const uint8_t *data, size_t size, const char *name, clt_image *out);
/* The image's width, height and channel count (1 or 3, as decoded) from
 * its header alone. */
clt_status clt_image_header(const uint8_t *data, size_t size, const char *name, int *width, int *height,
                            int *channels);

#endif
