/* libFuzzer target for the PNG and JPEG decoding behind image folders:
 * any input must give an image whose pixel buffer matches its size and
 * channels, or an error with a detail; never a crash, leak, hang or huge
 * allocation (sides above 65535 are refused); and the folders' rule that
 * makes a decoded image a sample (image_files.c) on what decoded. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "cltrain.h"
#include "data/image_decode.h"
#include "data/image_files.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    clt_image im;
    int w, h, c;
    clt_status head = clt_image_header(data, size, "fuzz-input", &w, &h, &c);
    clt_status s = clt_image_decode(data, size, "fuzz-input", &im);
    if (s != CLT_OK) {
        if (im.pixels || !clt_last_error()[0]) __builtin_trap();
        return 0;
    }
    if (head != CLT_OK || im.width != w || im.height != h || im.channels != c) __builtin_trap();
    if (im.width < 1 || im.height < 1 || (im.channels != 1 && im.channels != 3)) __builtin_trap();
    volatile uint8_t sum = 0;
    for (size_t i = 0; i < (size_t)im.width * (size_t)im.height * (size_t)im.channels; i++) sum ^= im.pixels[i];
    (void)sum;
    /* the folder's geometry rule on whatever decoded: resized both ways, and as it is */
    size_t plane = (size_t)im.width * (size_t)im.height;
    uint8_t small[3 * 5 * 5], *as_is = plane <= (1u << 20) ? malloc(plane) : NULL; /* a larger one: time, no coverage */
    clt_image_to_chw(&im, 5, 3, 5, 5, small);
    clt_image_to_chw(&im, 5, 1, 5, 5, small);
    if (as_is) clt_image_to_chw(&im, 0, 1, im.height, im.width, as_is);
    free(as_is);
    free(im.pixels);
    return 0;
}
