#define _XOPEN_SOURCE 700
#include "idx_write.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static void die(const char *what, const char *path)
{
    fprintf(stderr, "test setup failed: %s %s\n", what, path);
    exit(1);
}

void tw_mkdtemp(char *out, size_t cap, const char *tag)
{
    const char *tmp = getenv("TMPDIR");
    if (snprintf(out, cap, "%s/cltrain-%s-XXXXXX", tmp && tmp[0] ? tmp : "/tmp", tag) >= (int)cap)
        die("path too long", tag);
    if (!mkdtemp(out)) die("mkdtemp", out);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

void tw_rmtree(const char *dir) { nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

const char *tw_path(const char *dir, const char *name)
{
    static char buf[4096];
    if (snprintf(buf, sizeof buf, "%s/%s", dir, name) >= (int)sizeof buf) die("path too long", name);
    return buf;
}

void tw_write_raw(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) die("open", path);
    if (n && fwrite(data, 1, n, f) != n) die("write", path);
    if (fclose(f) != 0) die("close", path);
}

uint8_t *tw_gzip(const void *data, size_t n, int level, size_t *out_n)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        die("deflateInit2", "");
    size_t cap = deflateBound(&z, (uLong)n) + 64;
    uint8_t *out = malloc(cap);
    if (!out) die("malloc", "");
    z.next_in = (Bytef *)(uintptr_t)data;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END) die("deflate", "");
    *out_n = cap - z.avail_out;
    deflateEnd(&z);
    return out;
}

void tw_write_gz(const char *path, const void *data, size_t n, int level)
{
    size_t zn;
    uint8_t *z = tw_gzip(data, n, level, &zn);
    tw_write_raw(path, z, zn);
    free(z);
}

uint8_t *tw_idx(int type, int ndim, const uint32_t *dims, const uint8_t *data, size_t data_n,
                size_t *out_n)
{
    size_t hdr = 4 + 4 * (size_t)ndim;
    uint8_t *buf = malloc(hdr + data_n + 1);
    if (!buf) die("malloc", "");
    buf[0] = 0;
    buf[1] = 0;
    buf[2] = (uint8_t)type;
    buf[3] = (uint8_t)ndim;
    for (int i = 0; i < ndim; i++) {
        buf[4 + 4 * i] = (uint8_t)(dims[i] >> 24);
        buf[5 + 4 * i] = (uint8_t)(dims[i] >> 16);
        buf[6 + 4 * i] = (uint8_t)(dims[i] >> 8);
        buf[7 + 4 * i] = (uint8_t)dims[i];
    }
    if (data_n) memcpy(buf + hdr, data, data_n);
    *out_n = hdr + data_n;
    return buf;
}

void tw_write_idx(const char *path, int gz, int ndim, const uint32_t *dims, const uint8_t *data)
{
    size_t size = 1, n;
    for (int i = 0; i < ndim; i++) size *= dims[i];
    uint8_t *buf = tw_idx(0x08, ndim, dims, data, size, &n);
    if (gz) tw_write_gz(path, buf, n, 6);
    else tw_write_raw(path, buf, n);
    free(buf);
}

static void write_split(const char *dir, int gz, const char *images, const char *labels, int n,
                        int rows, int cols, int label_shift)
{
    size_t pixels = (size_t)rows * (size_t)cols;
    uint8_t *im = malloc(pixels * (size_t)n + 1), *lb = malloc((size_t)n + 1);
    if (!im || !lb) die("malloc", "");
    for (int i = 0; i < n; i++) {
        for (size_t p = 0; p < pixels; p++) im[(size_t)i * pixels + p] = tw_pixel(i, (long)p);
        lb[i] = (uint8_t)((i + label_shift) % 10);
    }
    char path[4096];
    uint32_t dims3[3] = {(uint32_t)n, (uint32_t)rows, (uint32_t)cols}, dims1[1] = {(uint32_t)n};
    if (snprintf(path, sizeof path, "%s/%s%s", dir, images, gz ? ".gz" : "") >= (int)sizeof path)
        die("path too long", dir);
    tw_write_idx(path, gz, 3, dims3, im);
    if (snprintf(path, sizeof path, "%s/%s%s", dir, labels, gz ? ".gz" : "") >= (int)sizeof path)
        die("path too long", dir);
    tw_write_idx(path, gz, 1, dims1, lb);
    free(im);
    free(lb);
}

void tw_write_dataset(const char *dir, int gz, int n_train, int n_test, int rows, int cols)
{
    write_split(dir, gz, "train-images-idx3-ubyte", "train-labels-idx1-ubyte", n_train, rows, cols, 0);
    write_split(dir, gz, "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte", n_test, rows, cols, 3);
}
