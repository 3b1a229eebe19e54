/* CIFAR-10 and CIFAR-100 in their binary version: records of one (CIFAR-10)
 * or two (CIFAR-100: coarse, fine) label bytes and 3072 pixel bytes, the
 * red, green and blue planes of a 32 x 32 image, rows first: NCHW as the
 * dataset keeps it. Every file's size must be a whole number of records
 * and every label in range; nothing is trusted before it is checked. */
#include "data/cifar.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/atomic_file.h"
#include "core/error.h"
#include "data/dataset.h"

#define SIDE 32
#define PIXELS (3 * SIDE * SIDE)
#define MAX_FILES 5
#define MAX_FILE_BYTES ((size_t)1 << 31) /* a published file is 30-150 MB */

static const char *const CIFAR10_TRAIN[] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                            "data_batch_4.bin", "data_batch_5.bin"};
static const char *const CIFAR10_TEST[] = {"test_batch.bin"};
static const char *const CIFAR100_TRAIN[] = {"train.bin"};
static const char *const CIFAR100_TEST[] = {"test.bin"};

static int has_file(const char *dir, const char *name)
{
    char path[4096];
    struct stat st;
    return snprintf(path, sizeof path, "%s/%s", dir, name) < (int)sizeof path && stat(path, &st) == 0;
}

int clt_cifar_kind(const char *dir)
{
    if (!dir) return 0;
    if (has_file(dir, CIFAR10_TRAIN[0])) return 10;
    if (has_file(dir, CIFAR100_TRAIN[0])) return 100;
    return 0;
}

static size_t record_bytes(int kind) { return (size_t)(kind == 100 ? 2 : 1) + PIXELS; }

static int classes_of(int kind, int fine) { return kind == 10 ? 10 : fine ? 100 : 20; }

/* Checks a file's size and labels: its record count, or a failure. */
static clt_status check_records(const uint8_t *data, size_t size, const char *name, int kind, int fine,
                                int64_t *records)
{
    size_t rec = record_bytes(kind);
    if (size == 0 || size % rec != 0)
        return clt_fail(CLT_ERR_FORMAT, "%s: %zu bytes is not a whole number of CIFAR-%d records of %zu bytes "
                        "(%zu left over)", name, size, kind, rec, size % rec);
    int classes = classes_of(kind, fine);
    for (size_t r = 0; r < size / rec; r++) {
        const uint8_t *at = data + r * rec;
        int label = kind == 100 && fine ? at[1] : at[0];
        if (label >= classes)
            return clt_fail(CLT_ERR_FORMAT, "%s: record %zu has %slabel %d, out of range for %d classes", name, r,
                            kind == 100 ? (fine ? "fine " : "coarse ") : "", label, classes);
        if (kind == 100 && at[fine ? 0 : 1] >= (fine ? 20 : 100))
            return clt_fail(CLT_ERR_FORMAT, "%s: record %zu has %s label %d, out of range for %d classes", name, r,
                            fine ? "coarse" : "fine", at[fine ? 0 : 1], fine ? 20 : 100);
    }
    *records = (int64_t)(size / rec);
    return CLT_OK;
}

/* Copies the first n checked records into ds from sample `at` on. */
static void take_records(const uint8_t *data, int kind, int fine, int64_t n, clt_dataset *ds, int64_t at)
{
    size_t rec = record_bytes(kind), skip = rec - PIXELS;
    for (int64_t r = 0; r < n; r++) {
        const uint8_t *from = data + (size_t)r * rec;
        ds->labels[at + r] = kind == 100 && fine ? from[1] : from[0];
        memcpy((uint8_t *)ds->pixels + (size_t)(at + r) * PIXELS, from + skip, PIXELS);
    }
}

clt_status clt_cifar_parse(const uint8_t *data, size_t size, const char *name, int kind, int fine, int64_t limit,
                           clt_dataset **out)
{
    *out = NULL;
    int64_t n;
    CLT_TRY(check_records(data, size, name, kind, fine, &n));
    if (limit > 0 && limit < n) n = limit;
    clt_dataset *ds;
    CLT_TRY(clt_dataset_alloc(n, 3, SIDE, SIDE, classes_of(kind, fine), 1, &ds));
    take_records(data, kind, fine, n, ds, 0);
    *out = ds;
    return CLT_OK;
}

clt_status clt_dataset_from_cifar(const char *dir, clt_subset subset, int fine, int64_t limit, clt_dataset **out)
{
    const char *op = "clt_dataset_from_cifar";
    if (!out) return clt_fail(CLT_ERR_INVALID_ARG, "%s: out is NULL", op);
    *out = NULL;
    if (!dir) return clt_fail(CLT_ERR_INVALID_ARG, "%s: dir is NULL", op);
    if (subset != CLT_SUBSET_TRAIN && subset != CLT_SUBSET_TEST)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: invalid split %d", op, (int)subset);
    if (limit < 0) return clt_fail(CLT_ERR_INVALID_ARG, "%s: limit must be >= 0 (got %lld)", op, (long long)limit);
    int kind = clt_cifar_kind(dir);
    if (!kind)
        return clt_fail(CLT_ERR_NOT_FOUND, "%s: neither CIFAR-10's data_batch_1.bin nor CIFAR-100's train.bin is "
                        "there (the directories cifar-10-batches-bin and cifar-100-binary of the binary archives "
                        "hold them)", dir);
    int train = subset == CLT_SUBSET_TRAIN;
    const char *const *names = kind == 10 ? (train ? CIFAR10_TRAIN : CIFAR10_TEST)
                                          : (train ? CIFAR100_TRAIN : CIFAR100_TEST);
    int files = kind == 10 && train ? MAX_FILES : 1;
    uint8_t *data[MAX_FILES] = {NULL};
    size_t size[MAX_FILES] = {0};
    int64_t records[MAX_FILES] = {0}, total = 0;
    char path[MAX_FILES][4096];
    clt_status s = CLT_OK;
    /* every file whole and checked before anything is kept */
    for (int f = 0; f < files && s == CLT_OK && (limit == 0 || total < limit); f++) {
        if (snprintf(path[f], sizeof path[f], "%s/%s", dir, names[f]) >= (int)sizeof path[f])
            s = clt_fail(CLT_ERR_INVALID_ARG, "%s: path too long", dir);
        if (s == CLT_OK) s = clt_read_file(path[f], MAX_FILE_BYTES, &data[f], &size[f]);
        if (s == CLT_ERR_NOT_FOUND) s = clt_fail_context(s, "CIFAR-%d's %s split needs %s", kind,
                                                         train ? "train" : "test", names[f]);
        if (s == CLT_OK) s = check_records(data[f], size[f], path[f], kind, fine, &records[f]);
        total += records[f];
    }
    int64_t n = limit > 0 && limit < total ? limit : total;
    clt_dataset *ds = NULL;
    if (s == CLT_OK) s = clt_dataset_alloc(n, 3, SIDE, SIDE, classes_of(kind, fine), 1, &ds);
    int64_t at = 0;
    for (int f = 0; s == CLT_OK && f < files && at < n; at += records[f], f++)
        take_records(data[f], kind, fine, n - at < records[f] ? n - at : records[f], ds, at);
    for (int f = 0; f < files; f++) free(data[f]);
    if (s != CLT_OK) {
        clt_dataset_destroy(ds);
        return s;
    }
    *out = ds;
    return CLT_OK;
}
