/* libFuzzer target for the IDX reader: any input must give either a valid
 * clt_idx whose size matches its dimensions, or an error with a detail and
 * a zeroed result; never a crash, leak, hang or huge allocation. */
#include <stddef.h>
#include <stdint.h>

#include "cltrain.h"
#include "data/idx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    clt_idx idx;
    clt_status s = clt_idx_parse_memory(data, size, "fuzz-input", &idx);
    if (s == CLT_OK) {
        uint64_t product = 1;
        if (idx.ndim < 1 || idx.ndim > CLT_IDX_MAX_DIMS || !idx.data) __builtin_trap();
        for (int i = 0; i < idx.ndim; i++) product *= (uint64_t)idx.dims[i];
        if (product != idx.size) __builtin_trap();
        /* Touch every byte so the sanitizer checks the buffer's extent. */
        volatile uint8_t sum = 0;
        for (size_t i = 0; i < idx.size; i++) sum ^= idx.data[i];
        (void)sum;
    } else {
        if (idx.data || idx.size || idx.ndim) __builtin_trap();
        const char *detail = clt_last_error();
        if (!detail[0]) __builtin_trap();
    }
    clt_idx_clear(&idx);
    return 0;
}
