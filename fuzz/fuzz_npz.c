/* libFuzzer target for the .npz and .npy readers: any input, read as an
 * archive (plain, and with a filter that skips every other entry) and as a
 * bare .npy, must give either a result whose sizes agree with its shapes,
 * or an error with a detail and no result; never a crash, leak, hang or
 * allocation beyond what the headers declare. */
#include <stddef.h>
#include <stdint.h>

#include "cltrain.h"
#include "io/npy.h"
#include "io/npz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static clt_status skip_odd(void *ctx, const char *path, const clt_npz_entry *e, int *skip)
{
    (void)path;
    (void)e;
    int *i = ctx;
    *skip = (*i)++ & 1;
    return CLT_OK;
}

static void check_archive(clt_status s, const clt_npz *z, int skipping)
{
    if (s != CLT_OK) {
        if (z || !clt_last_error()[0]) __builtin_trap();
        return;
    }
    for (int i = 0; i < clt_npz_count(z); i++) {
        clt_npz_entry e;
        if (clt_npz_entry_at(z, i, &e) != CLT_OK || !e.name[0]) __builtin_trap();
        if (e.ndim < 0 || e.ndim > CLT_MAX_DIMS) __builtin_trap();
        int64_t numel = 1;
        for (int d = 0; d < e.ndim; d++) numel *= e.shape[d];
        if (numel != e.numel) __builtin_trap();
        if (!e.bytes) {
            if (!(skipping && (i & 1))) __builtin_trap();
            continue;
        }
        if (!e.is_bytes && (e.data == NULL || e.nbytes != (size_t)e.numel * 4)) __builtin_trap();
        /* Touch every byte so the sanitizer checks the buffer's extent. */
        volatile uint8_t sum = 0;
        for (size_t k = 0; k < e.nbytes; k++) sum ^= e.bytes[k];
        (void)sum;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    clt_npz *z = NULL;
    check_archive(clt_npz_read_memory(data, size, "fuzz-input", &z), z, 0);
    clt_npz_destroy(z);
    int counter = 0;
    z = NULL;
    check_archive(clt_npz_read_memory_filtered(data, size, "fuzz-input", skip_odd, &counter, &z), z, 1);
    clt_npz_destroy(z);

    clt_npy_info info;
    if (clt_npy_parse(data, size, &info) == CLT_OK) {
        if (info.data_offset + info.nbytes != size || info.nbytes != (size_t)info.numel * info.itemsize)
            __builtin_trap();
    } else if (!clt_last_error()[0]) {
        __builtin_trap();
    }
    return 0;
}
