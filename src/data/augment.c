/* Random crop and flip per sample (augment.h). The draws come from the
 * library's own PRNG seeded by (seed, a stream made of the epoch and the
 * sample's index), so they are the same on every machine and do not
 * depend on which thread, batch or device handles the sample. */
#include "data/augment.h"

#include <stddef.h>

#include "data/shuffle.h"

void clt_augment_draw(const clt_augment *a, int64_t index, int *dx, int *dy, int *flip)
{
    clt_rng r;
    /* the stream differs from the shuffle's (seed, epoch) ones by its high bits */
    clt_rng_init(&r, a->seed, 0xA0A0000000000000ull ^ ((uint64_t)a->epoch << 40) ^ (uint64_t)index);
    uint64_t span = 2 * (uint64_t)a->pad + 1;
    *dy = (int)clt_rng_below(&r, span);
    *dx = (int)clt_rng_below(&r, span);
    *flip = a->flip ? (int)clt_rng_below(&r, 2) : 0;
}

void clt_augment_sample(const clt_augment *a, int64_t index, int c, int h, int w, const float *in, float *out)
{
    int dx, dy, flip;
    clt_augment_draw(a, index, &dx, &dy, &flip);
    for (int ch = 0; ch < c; ch++)
        for (int y = 0; y < h; y++) {
            int sy = y + dy - a->pad;
            float *row = out + ((size_t)ch * (size_t)h + (size_t)y) * (size_t)w;
            const float *src = in + ((size_t)ch * (size_t)h + (size_t)(sy < 0 ? 0 : sy)) * (size_t)w;
            for (int x = 0; x < w; x++) {
                int sx = (flip ? w - 1 - x : x) + dx - a->pad;
                row[x] = sy >= 0 && sy < h && sx >= 0 && sx < w ? src[sx] : 0.0f;
            }
        }
}
