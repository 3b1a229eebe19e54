/* .npz reading: the whole file is read into memory, its zip container is
 * checked and taken apart (zip_read.h), and every entry must be a .npy
 * array that parses strictly (npy.c). An entry's header is checked (and
 * shown to the caller's filter) before its data is inflated, so memory
 * follows what the headers declare and the caller accepts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "io/npy.h"
#include "io/npz.h"
#include "io/zip.h"
#include "io/zip_read.h"

struct npz_item {
    clt_npz_entry e;
    char *name;          /* key, NUL-terminated, without ".npy" */
    char dtype[16];
    uint8_t *buf;        /* the array data (owned) */
};

struct clt_npz {
    char *path;
    int n;
    struct npz_item *items;   /* archive order */
    struct npz_item **sorted; /* by name, for lookups */
};

/* Keys: "<key>.npy", no control bytes; copied NUL-terminated. */
static clt_status take_name(const clt_zip_reader *r, const clt_zip_entry *z, struct npz_item *it)
{
    for (size_t k = 0; k < z->name_len; k++)
        if (z->name[k] < 0x20 || z->name[k] == 0x7f)
            return clt_zip_fail(r, z, CLT_ERR_FORMAT, "the name contains a control character");
    if (z->name_len < 4 || memcmp(z->name + z->name_len - 4, ".npy", 4) != 0)
        return clt_zip_fail(r, z, CLT_ERR_FORMAT, "the name does not end in .npy: not a NumPy array");
    if (z->name_len == 4) return clt_zip_fail(r, z, CLT_ERR_FORMAT, "the key before .npy is empty");
    size_t len = z->name_len - 4;
    it->name = malloc(len + 1);
    if (!it->name) return clt_fail(CLT_ERR_NO_MEMORY, "%s: cannot allocate a name", r->label);
    memcpy(it->name, z->name, len);
    it->name[len] = 0;
    return CLT_OK;
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(struct npz_item *const *)a)->name, (*(struct npz_item *const *)b)->name);
}

/* Reads the n data bytes that follow the header into a new buffer that
 * grows with what really comes out, not with what the header claims: the
 * `have` bytes already read (the rest of the prefix) come first. */
static clt_status read_data(clt_zip_stream *zs, const uint8_t *have, size_t nhave, size_t n, uint8_t **out)
{
    size_t cap = n < ((size_t)1 << 20) ? n : (size_t)1 << 20;
    if (cap < nhave) cap = nhave;
    uint8_t *buf = malloc(cap ? cap : 1);
    if (!buf) return clt_zip_fail(zs->r, zs->it, CLT_ERR_NO_MEMORY, "cannot allocate %zu bytes", cap);
    if (nhave) memcpy(buf, have, nhave);
    for (size_t done = nhave; done < n;) {
        if (done == cap) {
            size_t ncap = cap > n / 2 ? n : cap * 2;
            uint8_t *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                return clt_zip_fail(zs->r, zs->it, CLT_ERR_NO_MEMORY, "cannot allocate %zu bytes", ncap);
            }
            buf = nb;
            cap = ncap;
        }
        size_t k = cap - done;
        clt_status s = clt_zip_stream_read(zs, buf + done, k);
        if (s != CLT_OK) {
            free(buf);
            return s;
        }
        done += k;
    }
    *out = buf;
    return CLT_OK;
}

static void fill_entry(struct npz_item *it, const clt_npy_info *info)
{
    memcpy(it->dtype, info->descr, sizeof it->dtype);
    clt_npz_entry *e = &it->e;
    e->name = it->name;
    e->dtype = it->dtype;
    e->is_bytes = info->is_bytes;
    e->ndim = info->ndim;
    memcpy(e->shape, info->shape, sizeof e->shape);
    e->numel = info->numel;
    e->nbytes = info->nbytes;
}

/* The entry's array: its .npy header is inflated and checked first (and
 * shown to the filter), then exactly the data it declares. */
static clt_status read_entry(const clt_zip_reader *r, const clt_zip_entry *z, const clt_npz_filter_spec *fs,
                             struct npz_item *it)
{
    uint8_t head[CLT_NPY_PREFIX_MAX];
    size_t k = z->usize < sizeof head ? (size_t)z->usize : sizeof head;
    clt_zip_stream zs;
    clt_status s = clt_zip_stream_open(&zs, r, z);
    if (s == CLT_OK) s = clt_zip_stream_read(&zs, head, k);
    clt_npy_info info;
    if (s == CLT_OK) {
        s = clt_npy_parse_header(head, k, (size_t)z->usize, &info);
        if (s != CLT_OK) {
            char name[300];
            s = clt_fail_context(s, "%s: entry \"%s\"", r->label, clt_zip_printable(z->name, z->name_len, name, sizeof name));
        }
    }
    int skip = 0;
    if (s == CLT_OK) fill_entry(it, &info);
    if (s == CLT_OK && fs && fs->fn) s = fs->fn(fs->ctx, r->label, &it->e, &skip);
    uint8_t *buf = NULL;
    if (s == CLT_OK && !skip) s = read_data(&zs, head + info.data_offset, k - info.data_offset, info.nbytes, &buf);
    if (s == CLT_OK && !skip) s = clt_zip_stream_finish(&zs);
    clt_zip_stream_close(&zs);
    if (s != CLT_OK || skip) {
        free(buf);
        return s;
    }
    if (!info.is_bytes && !zip_host_is_le()) zip_swap32(buf, (size_t)info.numel);
    it->buf = buf;
    it->e.data = info.is_bytes ? NULL : (const float *)(const void *)buf;
    it->e.bytes = buf;
    return CLT_OK;
}

void clt_npz_destroy(clt_npz *npz)
{
    if (!npz) return;
    for (int i = 0; i < npz->n; i++) {
        free(npz->items[i].name);
        free(npz->items[i].buf);
    }
    free(npz->items);
    free(npz->sorted);
    free(npz->path);
    free(npz);
}

/* Checks in a fixed order (directory, names, duplicates, local headers,
 * data), so a file with several faults always gets the same report. */
static clt_status read_entries(const clt_zip_reader *r, const clt_zip_dir *d, clt_npz *z, clt_zip_entry *zips,
                               const clt_npz_filter_spec *fs)
{
    int n = z->n;
    CLT_TRY(clt_zip_read_directory(r, d, zips));
    for (int i = 0; i < n; i++) CLT_TRY(take_name(r, &zips[i], &z->items[i]));
    for (int i = 0; i < n; i++) z->sorted[i] = &z->items[i];
    qsort(z->sorted, (size_t)n, sizeof *z->sorted, by_name);
    for (int i = 1; i < n; i++)
        if (strcmp(z->sorted[i - 1]->name, z->sorted[i]->name) == 0)
            return clt_zip_fail(r, &zips[z->sorted[i] - z->items], CLT_ERR_FORMAT,
                                "the name appears twice in the archive");
    CLT_TRY(clt_zip_read_locals(r, d, zips, n));
    for (int i = 0; i < n; i++) CLT_TRY(read_entry(r, &zips[i], fs, &z->items[i]));
    return CLT_OK;
}

static clt_status read_archive(const clt_zip_reader *r, clt_npz *z, const clt_npz_filter_spec *fs)
{
    clt_zip_dir d = {0, 0, 0, 0};
    CLT_TRY(clt_zip_find_directory(r, &d));
    int n = (int)d.count;
    size_t slots = n ? (size_t)n : 1;
    z->items = calloc(slots, sizeof *z->items);
    z->sorted = calloc(slots, sizeof *z->sorted);
    clt_zip_entry *zips = calloc(slots, sizeof *zips); /* points into r's bytes: not kept */
    clt_status s = CLT_OK;
    if (!z->items || !z->sorted || !zips)
        s = clt_fail(CLT_ERR_NO_MEMORY, "%s: cannot allocate %d entries", r->label, n);
    if (s == CLT_OK) {
        z->n = n;
        s = read_entries(r, &d, z, zips, fs);
    }
    free(zips);
    return s;
}

clt_status clt_npz_read_memory(const uint8_t *data, size_t n, const char *label, clt_npz **out)
{
    return clt_npz_read_memory_filtered(data, n, label, NULL, NULL, out);
}

clt_status clt_npz_read_memory_filtered(const uint8_t *data, size_t n, const char *label, clt_npz_filter fn,
                                        void *ctx, clt_npz **out)
{
    if (!out) return clt_fail(CLT_ERR_INVALID_ARG, "clt_npz_read: out is NULL");
    *out = NULL;
    if (!data && n) return clt_fail(CLT_ERR_INVALID_ARG, "clt_npz_read: data is NULL");
    if (!label) label = "<memory>";
    clt_npz *z = calloc(1, sizeof *z);
    if (!z) return clt_fail(CLT_ERR_NO_MEMORY, "%s: cannot allocate the archive", label);
    clt_status s = clt_strdup(&z->path, label);
    if (s == CLT_OK) {
        clt_zip_reader r = {data ? data : (const uint8_t *)"", n, label};
        clt_npz_filter_spec fs = {fn, ctx};
        s = read_archive(&r, z, &fs);
    }
    if (s != CLT_OK) {
        clt_npz_destroy(z);
        return s;
    }
    *out = z;
    return CLT_OK;
}

clt_status clt_npz_read(const char *path, clt_npz **out) { return clt_npz_read_filtered(path, NULL, NULL, out); }

clt_status clt_npz_read_filtered(const char *path, clt_npz_filter fn, void *ctx, clt_npz **out)
{
    if (out) *out = NULL;
    if (!path || !out) return clt_fail(CLT_ERR_INVALID_ARG, "clt_npz_read: NULL argument");
    unsigned char *data;
    size_t n;
    CLT_TRY(clt_read_file(path, 0, &data, &n));
    clt_status s = clt_npz_read_memory_filtered(data, n, path, fn, ctx, out);
    free(data);
    return s;
}

int clt_npz_count(const clt_npz *npz) { return npz ? npz->n : 0; }

const char *clt_npz_path(const clt_npz *npz) { return npz ? npz->path : ""; }

const clt_npz_entry *clt_npz_get(const clt_npz *npz, const char *name)
{
    if (!npz || !name) return NULL;
    int lo = 0, hi = npz->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(npz->sorted[mid]->name, name);
        if (c == 0) return &npz->sorted[mid]->e;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

clt_status clt_npz_entry_at(const clt_npz *npz, int i, clt_npz_entry *entry)
{
    if (!npz || !entry) return clt_fail(CLT_ERR_INVALID_ARG, "clt_npz_entry_at: NULL argument");
    if (i < 0 || i >= npz->n)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: entry %d does not exist (the archive has %d)", npz->path, i, npz->n);
    *entry = npz->items[i].e;
    return CLT_OK;
}

clt_status clt_npz_find(const clt_npz *npz, const char *name, clt_npz_entry *entry)
{
    if (!npz || !name || !entry) return clt_fail(CLT_ERR_INVALID_ARG, "clt_npz_find: NULL argument");
    const clt_npz_entry *e = clt_npz_get(npz, name);
    if (!e) return clt_fail(CLT_ERR_NOT_FOUND, "%s: no entry \"%s\"", npz->path, name);
    *entry = *e;
    return CLT_OK;
}

const char *clt_npz_shape_str(int ndim, const int64_t *shape, char *buf, size_t cap)
{
    return clt_npy_shape_str(ndim, shape, buf, cap);
}

clt_status clt_npy_read(const char *path, const char *name, clt_npz **out)
{
    if (out) *out = NULL;
    if (!path || !name || !out) return clt_fail(CLT_ERR_INVALID_ARG, "clt_npy_read: NULL argument");
    unsigned char *data;
    size_t n;
    CLT_TRY(clt_read_file(path, 0, &data, &n));
    clt_npy_info info;
    clt_status s = clt_npy_parse(data, n, &info);
    if (s != CLT_OK) {
        free(data);
        return clt_fail_context(s, "%s", path);
    }
    clt_npz *z = calloc(1, sizeof *z);
    if (z) z->items = calloc(1, sizeof *z->items);
    if (z && z->items) z->sorted = calloc(1, sizeof *z->sorted);
    if (z && z->sorted) z->path = strdup(path);
    if (z && z->path) z->items[0].name = strdup(name);
    if (!z || !z->items || !z->sorted || !z->path || !z->items[0].name) {
        free(data);
        clt_npz_destroy(z);
        return clt_fail(CLT_ERR_NO_MEMORY, "%s: .npy entry", path);
    }
    z->n = 1;
    z->sorted[0] = &z->items[0];
    struct npz_item *it = &z->items[0];
    fill_entry(it, &info);
    /* the array data moves to the start of the buffer the entry owns */
    memmove(data, data + info.data_offset, info.nbytes);
    if (!info.is_bytes && !zip_host_is_le()) zip_swap32(data, (size_t)info.numel);
    it->buf = data;
    it->e.data = info.is_bytes ? NULL : (const float *)(const void *)data;
    it->e.bytes = data;
    *out = z;
    return CLT_OK;
}
