/* Training-time augmentation (clt_batcher_config's augment_pad and
 * augment_flip): a random crop after zero padding and a horizontal flip,
 * drawn per sample from (seed, epoch, the sample's index in the dataset),
 * so any device count and a resumed run see the same images. */
#ifndef CLT_DATA_AUGMENT_H
#define CLT_DATA_AUGMENT_H

#include <stdint.h>

typedef struct clt_augment {
    int pad;       /* crop after zero padding of pad pixels per side; 0: none */
    int flip;      /* 1: flip horizontally with probability 1/2 */
    uint64_t seed;
    int64_t epoch;
} clt_augment;

/* The draw for dataset sample `index`: the crop's offsets into the padded
 * image (0 .. 2 pad) and whether it flips. */
void clt_augment_draw(const clt_augment *a, int64_t index, int *dx, int *dy, int *flip);
/* out = sample `index` (c x h x w floats in `in`) cropped from its zero
 * padding at the draw's offsets, then flipped where drawn:
 * out[y][x] = in[y + dy - pad][x' + dx - pad] (0 outside), x' = w-1-x when
 * flipped, else x. in and out do not overlap. */
void clt_augment_sample(const clt_augment *a, int64_t index, int c, int h, int w, const float *in, float *out);

#endif
