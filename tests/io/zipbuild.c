#include "zipbuild.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) cap *= 2;
        b->p = realloc(b->p, cap);
        if (!b->p) {
            fprintf(stderr, "zipbuild: out of memory\n");
            exit(1);
        }
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void u16(buf *b, uint64_t v)
{
    uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    put(b, x, 2);
}

static void u32(buf *b, uint64_t v)
{
    u16(b, v & 0xffff);
    u16(b, (v >> 16) & 0xffff);
}

static void u64(buf *b, uint64_t v)
{
    u32(b, v & 0xffffffffu);
    u32(b, v >> 32);
}

/* Raw deflate of d[0..n) then `zeros` zero bytes, the zeros fed from a
 * small buffer so a bomb never has to be held uncompressed. */
static uint8_t *raw_deflate(const uint8_t *d, size_t n, uint64_t zeros, size_t *out_n)
{
    static const uint8_t zero[1 << 16];
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (deflateInit2(&zs, zeros ? 1 : 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) exit(1);
    buf out = {0};
    uint8_t chunk[1 << 16];
    zs.next_in = (Bytef *)(uintptr_t)d;
    zs.avail_in = (uInt)n;
    int flush = Z_NO_FLUSH;
    for (;;) {
        if (zs.avail_in == 0) {
            size_t k = zeros < sizeof zero ? (size_t)zeros : sizeof zero;
            zeros -= k;
            zs.next_in = (Bytef *)(uintptr_t)zero;
            zs.avail_in = (uInt)k;
            if (!zeros) flush = Z_FINISH;
        }
        zs.next_out = chunk;
        zs.avail_out = sizeof chunk;
        int ret = deflate(&zs, flush);
        put(&out, chunk, sizeof chunk - zs.avail_out);
        if (ret == Z_STREAM_END) break;
        if (ret != Z_OK && ret != Z_BUF_ERROR) exit(1);
    }
    deflateEnd(&zs);
    *out_n = out.n;
    return out.p;
}

/* CRC-32 of d[0..n) then `zeros` zero bytes. */
static uint32_t crc_with_zeros(const uint8_t *d, size_t n, uint64_t zeros)
{
    static const uint8_t zero[1 << 16];
    uLong c = crc32(0L, d, (uInt)n);
    while (zeros) {
        size_t k = zeros < sizeof zero ? (size_t)zeros : sizeof zero;
        c = crc32(c, zero, (uInt)k);
        zeros -= k;
    }
    return (uint32_t)c;
}

uint8_t *zb_build(const zb_entry *entries, int n, const zb_options *opt, size_t *size)
{
    zb_options none;
    memset(&none, 0, sizeof none);
    if (!opt) opt = &none;
    buf b = {0};
    uint64_t *lho = calloc((size_t)n + 1, sizeof *lho), *csz = calloc((size_t)n + 1, sizeof *csz);
    uint32_t *crcs = calloc((size_t)n + 1, sizeof *crcs);
    for (int i = 0; i < n; i++) {
        const zb_entry *e = &entries[i];
        size_t cn = e->n;
        uint8_t *comp = NULL;
        const uint8_t *body = e->data;
        if (e->method == 8) {
            comp = raw_deflate(e->data, e->n, e->zeros, &cn);
            body = comp;
        }
        crcs[i] = crc_with_zeros(e->data, e->n, e->zeros) ^ e->crc_xor;
        csz[i] = cn + e->trailing;
        uint64_t usize = (uint64_t)((int64_t)(e->n + e->zeros) + e->usize_delta);
        const char *lname = e->local_name ? e->local_name : e->name;
        unsigned flags = e->flags | (e->descriptor ? 8u : 0u);
        lho[i] = b.n;
        u32(&b, 0x04034b50u);
        u16(&b, e->zip64_local ? 45 : 20);
        u16(&b, flags);
        u16(&b, (unsigned)e->method);
        u16(&b, 0);
        u16(&b, 0x21);
        u32(&b, e->descriptor ? 0 : crcs[i]);
        u32(&b, e->descriptor ? 0 : csz[i]);
        u32(&b, e->descriptor ? 0 : usize);
        u16(&b, strlen(lname));
        u16(&b, e->zip64_local ? 20 : 0);
        put(&b, lname, strlen(lname));
        if (e->zip64_local) {
            u16(&b, 1);
            u16(&b, 16);
            u64(&b, e->descriptor ? 0 : usize);
            u64(&b, e->descriptor ? 0 : csz[i]);
        }
        put(&b, body, cn);
        for (size_t t = 0; t < e->trailing; t++) {
            uint8_t g = (uint8_t)(0xa5 ^ t);
            put(&b, &g, 1);
        }
        if (e->descriptor) {
            u32(&b, 0x08074b50u);
            u32(&b, crcs[i]);
            if (e->zip64_local) {
                u64(&b, csz[i]);
                u64(&b, usize);
            } else {
                u32(&b, csz[i]);
                u32(&b, usize);
            }
        }
        free(comp);
    }
    uint64_t cd_offset = b.n;
    for (int i = 0; i < n; i++) {
        const zb_entry *e = &entries[i];
        uint64_t usize = (uint64_t)((int64_t)(e->n + e->zeros) + e->usize_delta);
        uint64_t cs = (uint64_t)((int64_t)csz[i] + e->csize_delta_cd);
        uint64_t off = (uint64_t)((int64_t)lho[i] + e->lho_delta);
        unsigned flags = e->flags | (e->descriptor ? 8u : 0u);
        u32(&b, 0x02014b50u);
        u16(&b, 0x0314);
        u16(&b, e->zip64_central ? 45 : 20);
        u16(&b, flags);
        u16(&b, (unsigned)e->method);
        u16(&b, 0);
        u16(&b, 0x21);
        u32(&b, crcs[i]);
        u32(&b, e->zip64_central ? 0xffffffffu : cs);
        u32(&b, e->zip64_central ? 0xffffffffu : usize);
        u16(&b, strlen(e->name));
        u16(&b, e->zip64_central ? 28 : 0);
        u16(&b, 0);
        u16(&b, 0);
        u16(&b, 0);
        u32(&b, 0644u << 16);
        u32(&b, e->zip64_central ? 0xffffffffu : off);
        put(&b, e->name, strlen(e->name));
        if (e->zip64_central) {
            u16(&b, 1);
            u16(&b, 24);
            u64(&b, usize);
            u64(&b, cs);
            u64(&b, off);
        }
    }
    uint64_t cd_size = b.n - cd_offset;
    uint64_t count = (uint64_t)((int64_t)n + opt->count_delta);
    uint64_t cd_off_decl = (uint64_t)((int64_t)cd_offset + opt->cd_offset_delta);
    if (opt->zip64_eocd) {
        uint64_t rec = b.n;
        u32(&b, 0x06064b50u);
        u64(&b, 44);
        u16(&b, 45);
        u16(&b, 45);
        u32(&b, 0);
        u32(&b, 0);
        u64(&b, count);
        u64(&b, count);
        u64(&b, cd_size);
        u64(&b, cd_off_decl);
        u32(&b, 0x07064b50u);
        u32(&b, 0);
        u64(&b, rec);
        u32(&b, 1);
    }
    size_t clen = opt->comment ? strlen(opt->comment) : 0;
    u32(&b, 0x06054b50u);
    u16(&b, opt->disk);
    u16(&b, 0);
    u16(&b, opt->zip64_eocd ? 0xffff : count);
    u16(&b, opt->zip64_eocd ? 0xffff : count);
    u32(&b, opt->zip64_eocd ? 0xffffffffu : cd_size);
    u32(&b, opt->zip64_eocd ? 0xffffffffu : cd_off_decl);
    u16(&b, (uint64_t)((int64_t)clen + opt->comment_len_delta));
    put(&b, opt->comment ? opt->comment : "", clen);
    free(lho);
    free(csz);
    free(crcs);
    *size = b.n;
    return b.p;
}

uint8_t *zb_npy(int version, const char *dict, int raw, const void *data, size_t n, size_t *size)
{
    buf b = {0};
    size_t pre = version == 1 ? 10 : 12;
    size_t dl = strlen(dict);
    size_t hl = raw ? dl : (pre + dl + 1 + 63) / 64 * 64 - pre;
    put(&b, "\x93NUMPY", 6);
    uint8_t v[2] = {(uint8_t)version, 0};
    put(&b, v, 2);
    if (version == 1)
        u16(&b, hl);
    else
        u32(&b, hl);
    put(&b, dict, dl);
    for (size_t i = dl; i + 1 < hl; i++) put(&b, " ", 1);
    if (!raw) put(&b, "\n", 1);
    put(&b, data, n);
    *size = b.n;
    return b.p;
}

uint8_t *zb_npy_f32(int ndim, const int64_t *shape, const float *data, size_t *size)
{
    char dict[512], s[256];
    size_t at = 0;
    int64_t numel = 1;
    at += (size_t)snprintf(s, sizeof s, "(");
    for (int i = 0; i < ndim; i++) {
        at += (size_t)snprintf(s + at, sizeof s - at, "%s%lld", i ? ", " : "", (long long)shape[i]);
        numel *= shape[i];
    }
    snprintf(s + at, sizeof s - at, ndim == 1 ? ",)" : ")");
    snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }", s);
    return zb_npy(1, dict, 0, data, (size_t)numel * 4, size);
}

void zb_write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
}
