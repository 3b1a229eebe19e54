/* libFuzzer target for the CIFAR-10/100 record reader: the first byte
 * picks CIFAR-10, CIFAR-100 with fine or with coarse labels, the rest is a
 * file's bytes. Any input must give either a dataset whose samples and
 * labels are in range, or an error with a detail and no dataset; never a
 * crash, leak, hang or huge allocation. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "cltrain.h"
#include "data/cifar.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    int kind = data[0] % 3 == 0 ? 10 : 100, fine = data[0] % 3 == 1;
    int64_t limit = data[0] >> 4; /* 0: all */
    clt_dataset *ds = NULL;
    clt_status s = clt_cifar_parse(data + 1, size - 1, "fuzz-input", kind, fine, limit, &ds);
    if (s != CLT_OK) {
        if (ds || !clt_last_error()[0]) __builtin_trap();
        return 0;
    }
    int c, h, w;
    clt_dataset_shape(ds, &c, &h, &w);
    int64_t n = clt_dataset_size(ds);
    int classes = clt_dataset_classes(ds);
    if (c != 3 || h != 32 || w != 32 || n < 1 || (limit && n > limit) || classes != (kind == 10 ? 10 : fine ? 100 : 20))
        __builtin_trap();
    float *im = malloc((size_t)n * 3072 * sizeof(float));
    int32_t *lb = malloc((size_t)n * sizeof(int32_t));
    if (im && lb && clt_dataset_read(ds, 0, n, im, lb) == CLT_OK)
        for (int64_t i = 0; i < n; i++) {
            if (lb[i] < 0 || lb[i] >= classes) __builtin_trap();
            for (size_t p = 0; p < 3072; p++)
                if (!(im[(size_t)i * 3072 + p] >= 0.0f && im[(size_t)i * 3072 + p] <= 1.0f)) __builtin_trap();
        }
    free(im);
    free(lb);
    clt_dataset_destroy(ds);
    return 0;
}
