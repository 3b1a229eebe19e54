/* .npz reading and writing without OpenCL: round trips through the writer
 * (stored and deflate, every rank, bytes, '/' in keys); archives in the
 * layouts other writers produce (numpy's zip64 extra fields, data
 * descriptors, zip64 end records, comments, .npy 2.0/3.0); every kind of
 * bad archive and bad .npy header, each refused with a detail naming the
 * file, the entry and the problem; every truncation and every single-byte
 * flip of small archives (an error, or the very same contents); atomic
 * replacement when a write fails, is abandoned or the writer is killed. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "paths.h"
#include "core/atomic_file.h"
#include "io/npz.h"
#include "zipbuild.h"


static int files_in_dir(void)
{
    int n = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    if (d) closedir(d);
    return n;
}

static void clean_dir(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            char p[sizeof dir + 300];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            if (unlink(p) != 0) rmdir(p);
        }
    if (d) closedir(d);
}

static float *pattern(size_t n, float base, float step)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    for (size_t i = 0; i < n; i++) p[i] = base + step * (float)(i % 1000) + (float)(i / 1000);
    return p;
}

/* ---- round trips ------------------------------------------------------- */

typedef struct want {
    const char *name;
    int is_bytes, ndim;
    int64_t shape[CLT_MAX_DIMS];
    const void *data;
    size_t nbytes;
} want;

static void check_entry(const clt_npz *z, const want *w)
{
    clt_npz_entry e;
    RESERVED_DIRTY(e);
    clt_status s = clt_npz_find(z, w->name, &e);
    CHECK(s == CLT_OK, "find %s: %s", w->name, clt_last_error());
    if (s != CLT_OK) return;
    CHECK(RESERVED_ZERO(e), "%s: clt_npz_find zeroes reserved", w->name);
    CHECK(strcmp(e.name, w->name) == 0, "name %s vs %s", e.name, w->name);
    CHECK(e.is_bytes == w->is_bytes, "%s: is_bytes %d", w->name, e.is_bytes);
    CHECK(strcmp(e.dtype, w->is_bytes ? "|u1" : "<f4") == 0, "%s: dtype %s", w->name, e.dtype);
    CHECK(e.ndim == w->ndim, "%s: ndim %d want %d", w->name, e.ndim, w->ndim);
    int64_t numel = 1;
    for (int i = 0; i < w->ndim; i++) {
        CHECK(e.shape[i] == w->shape[i], "%s: dim %d is %lld", w->name, i, (long long)e.shape[i]);
        numel *= w->shape[i];
    }
    CHECK(e.numel == numel, "%s: numel %lld want %lld", w->name, (long long)e.numel, (long long)numel);
    CHECK(e.nbytes == w->nbytes, "%s: nbytes %zu want %zu", w->name, e.nbytes, w->nbytes);
    CHECK(e.bytes != NULL, "%s: bytes NULL", w->name);
    CHECK(w->is_bytes ? e.data == NULL : e.data == (const float *)(const void *)e.bytes, "%s: data pointer", w->name);
    if (e.nbytes == w->nbytes && w->nbytes)
        CHECK(memcmp(e.bytes, w->data, w->nbytes) == 0, "%s: data differs", w->name);
}

static void round_trip(int compress)
{
    const char *path = path_of(compress ? "rt-deflate.npz" : "rt-stored.npz");
    float scalar = 3.5f, one = -2.25f;
    float *vec = pattern(7, -1.25f, 0.5f), *mat = pattern(12, 1, 0.25f), *t4 = pattern(120, -8, 1),
          *t6 = pattern(12, 0.125f, 3), *mom = pattern(4, 9, -1);
    float *big = calloc(64000, sizeof *big); /* zeros: deflate shrinks it */
    float special[8];
    uint32_t bits[8] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u,
                        0x7fc00001u, 0x00000001u, 0x7f7fffffu, 0x3f800001u};
    memcpy(special, bits, sizeof bits);
    const char *json = "{\"format\": \"cltrain-checkpoint\", \"epoch\": 3}";
    uint8_t raw[256];
    for (int i = 0; i < 256; i++) raw[i] = (uint8_t)i;
    want w[] = {
        {"scalar", 0, 0, {0}, &scalar, 4},
        {"one", 0, 1, {1}, &one, 4},
        {"vec", 0, 1, {7}, vec, 28},
        {"mat", 0, 2, {3, 4}, mat, 48},
        {"t4", 0, 4, {2, 3, 4, 5}, t4, 480},
        {"t6", 0, 6, {1, 2, 1, 3, 1, 2}, t6, 48},
        {"empty", 0, 2, {0, 3}, NULL, 0},
        {"special", 0, 1, {8}, special, 32},
        {"momentum/0.weight", 0, 2, {2, 2}, mom, 16},
        {"big", 0, 2, {64, 1000}, big, 256000},
        {"__cltrain__", 1, 1, {(int64_t)strlen(json)}, json, strlen(json)},
        {"raw", 1, 1, {256}, raw, 256},
        {"nothing", 1, 1, {0}, NULL, 0},
    };
    int n = (int)(sizeof w / sizeof w[0]);
    clt_npz_writer *wr;
    REQUIRE_OK(clt_npz_writer_create(path, compress, &wr));
    for (int i = 0; i < n; i++) {
        if (w[i].is_bytes)
            CHECK_OK(clt_npz_writer_add_bytes(wr, w[i].name, w[i].data, w[i].nbytes));
        else
            CHECK_OK(clt_npz_writer_add_f32(wr, w[i].name, w[i].ndim, w[i].ndim ? w[i].shape : NULL, w[i].data));
    }
    CHECK_OK(clt_npz_writer_commit(wr));
    clt_npz_writer_destroy(wr);

    clt_npz *z = NULL;
    CHECK_OK(clt_npz_read(path, &z));
    if (z) {
        CHECK(clt_npz_count(z) == n, "count %d want %d", clt_npz_count(z), n);
        for (int i = 0; i < n; i++) check_entry(z, &w[i]);
        for (int i = 0; i < n && i < clt_npz_count(z); i++) {
            clt_npz_entry e;
            CHECK_OK(clt_npz_entry_at(z, i, &e));
            CHECK(strcmp(e.name, w[i].name) == 0, "entry %d is %s, want %s (archive order)", i, e.name, w[i].name);
        }
        clt_npz_entry e;
        CHECK_FAIL(clt_npz_entry_at(z, -1, &e), CLT_ERR_INVALID_ARG, "-1");
        CHECK_FAIL(clt_npz_entry_at(z, n, &e), CLT_ERR_INVALID_ARG, "does not exist");
        CHECK_FAIL(clt_npz_find(z, "missing", &e), CLT_ERR_NOT_FOUND, path, "\"missing\"");
        CHECK_FAIL(clt_npz_find(z, "momentum", &e), CLT_ERR_NOT_FOUND, "momentum");
        CHECK_FAIL(clt_npz_find(z, "0.weight", &e), CLT_ERR_NOT_FOUND, "0.weight");
        CHECK(clt_npz_get(z, "vec.npy") == NULL, "keys are found without .npy only");
        CHECK(clt_npz_get(z, "vec") != NULL, "clt_npz_get finds vec");
        CHECK(strcmp(clt_npz_path(z), path) == 0, "path %s", clt_npz_path(z));
    }
    clt_npz_destroy(z);

    /* The same bytes through memory, and the output is deterministic. */
    unsigned char *data;
    size_t size;
    REQUIRE_OK(clt_read_file(path, 0, &data, &size));
    CHECK_OK(clt_npz_read_memory(data, size, "mem", &z));
    CHECK(clt_npz_count(z) == n, "memory read: count %d", clt_npz_count(z));
    clt_npz_destroy(z);
    const char *again = path_of("again.npz");
    REQUIRE_OK(clt_npz_writer_create(again, compress, &wr));
    for (int i = 0; i < n; i++) {
        if (w[i].is_bytes)
            CHECK_OK(clt_npz_writer_add_bytes(wr, w[i].name, w[i].data, w[i].nbytes));
        else
            CHECK_OK(clt_npz_writer_add_f32(wr, w[i].name, w[i].ndim, w[i].shape, w[i].data));
    }
    CHECK_OK(clt_npz_writer_commit(wr));
    clt_npz_writer_destroy(wr);
    unsigned char *data2;
    size_t size2;
    REQUIRE_OK(clt_read_file(again, 0, &data2, &size2));
    CHECK(size == size2 && memcmp(data, data2, size) == 0, "two writes of the same arrays differ");
    if (compress) {
        struct stat st;
        CHECK(stat(path_of("rt-stored.npz"), &st) == 0 && (size_t)st.st_size > size + 200000,
              "deflate did not shrink the zeros (%zu bytes)", size);
    }
    free(data);
    free(data2);
    free(vec);
    free(mat);
    free(t4);
    free(t6);
    free(mom);
    free(big);
}

/* ---- the writer's argument checks ---------------------------------------- */

static void writer_errors(void)
{
    clt_npz_writer *w = (clt_npz_writer *)1;
    CHECK_FAIL(clt_npz_writer_create(NULL, 0, &w), CLT_ERR_INVALID_ARG, "NULL");
    CHECK(w == NULL, "*out is NULL after a failure");
    CHECK_FAIL(clt_npz_writer_create(path_of("no/such/dir/x.npz"), 0, &w), CLT_ERR_IO, "no/such/dir/x.npz");
    clt_npz_writer_destroy(NULL);

    const char *target = path_of("keep.npz");
    zb_write_file(target, "old contents", 12);
    float v[4] = {1, 2, 3, 4};
    int64_t shape[7] = {2, 2, 1, 1, 1, 1, 1}, neg[1] = {-1};
    static const struct {
        const char *what;
        int ndim;
        const char *name;
        const char *needle;
    } bad[] = {
        {"ndim 7", 7, "a", "ndim 7"},
        {"ndim -1", -1, "a", "ndim -1"},
        {"empty key", 1, "", "empty key"},
        {"control char", 1, "a\nb", "control character"},
        {"NULL key", 1, NULL, "empty key"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        REQUIRE_OK(clt_npz_writer_create(target, 0, &w));
        CHECK_OK(clt_npz_writer_add_f32(w, "fine", 1, shape, v));
        clt_status s = clt_npz_writer_add_f32(w, bad[i].name, bad[i].ndim, shape, v);
        CHECK(s == CLT_ERR_INVALID_ARG, "%s: %s", bad[i].what, clt_status_name(s));
        CHECK(strstr(clt_last_error(), bad[i].needle) != NULL, "%s: detail %s", bad[i].what, clt_last_error());
        CHECK_FAIL(clt_npz_writer_add_f32(w, "later", 1, shape, v), CLT_ERR_INVALID_ARG, "earlier call");
        CHECK_FAIL(clt_npz_writer_commit(w), CLT_ERR_INVALID_ARG, "earlier call", "left as it was");
        clt_npz_writer_destroy(w);
    }
    REQUIRE_OK(clt_npz_writer_create(target, 0, &w));
    CHECK_FAIL(clt_npz_writer_add_f32(w, "n", 1, neg, v), CLT_ERR_INVALID_ARG, "negative");
    clt_npz_writer_destroy(w);
    REQUIRE_OK(clt_npz_writer_create(target, 0, &w));
    CHECK_FAIL(clt_npz_writer_add_f32(w, "n", 1, shape, NULL), CLT_ERR_INVALID_ARG, "data is NULL");
    clt_npz_writer_destroy(w);
    REQUIRE_OK(clt_npz_writer_create(target, 0, &w));
    CHECK_FAIL(clt_npz_writer_add_bytes(w, "n", NULL, 3), CLT_ERR_INVALID_ARG, "data is NULL");
    clt_npz_writer_destroy(w);
    char longkey[1100];
    memset(longkey, 'k', sizeof longkey - 1);
    longkey[sizeof longkey - 1] = 0;
    REQUIRE_OK(clt_npz_writer_create(target, 0, &w));
    CHECK_FAIL(clt_npz_writer_add_bytes(w, longkey, "x", 1), CLT_ERR_INVALID_ARG, "1099 bytes");
    clt_npz_writer_destroy(w);
    /* Duplicate keys, '/' keys are distinct from their parts. */
    REQUIRE_OK(clt_npz_writer_create(target, 1, &w));
    CHECK_OK(clt_npz_writer_add_f32(w, "a", 1, shape, v));
    CHECK_OK(clt_npz_writer_add_f32(w, "m/a", 1, shape, v));
    CHECK_OK(clt_npz_writer_add_bytes(w, "m", "x", 1));
    CHECK_FAIL(clt_npz_writer_add_bytes(w, "m/a", "x", 1), CLT_ERR_INVALID_ARG, "\"m/a\" is already");
    CHECK_FAIL(clt_npz_writer_commit(w), CLT_ERR_INVALID_ARG, "earlier call");
    clt_npz_writer_destroy(w);

    unsigned char *data;
    size_t size;
    REQUIRE_OK(clt_read_file(target, 0, &data, &size));
    CHECK(size == 12 && memcmp(data, "old contents", 12) == 0, "a failed writer changed the target");
    free(data);
    CHECK(files_in_dir() == 1, "temporary files left behind: %d files", files_in_dir());

    /* Commit twice; calls after commit are refused. */
    REQUIRE_OK(clt_npz_writer_create(target, 0, &w));
    CHECK_OK(clt_npz_writer_commit(w));
    CHECK_FAIL(clt_npz_writer_commit(w), CLT_ERR_INVALID_ARG, "already committed");
    CHECK_FAIL(clt_npz_writer_add_bytes(w, "x", "x", 1), CLT_ERR_INVALID_ARG, "already committed");
    clt_npz_writer_destroy(w);
    clt_npz *z;
    CHECK_OK(clt_npz_read(target, &z));
    CHECK(clt_npz_count(z) == 0, "an empty archive has no entries");
    clt_npz_destroy(z);
    CHECK(clt_npz_count(NULL) == 0, "count of NULL");
    clt_npz_destroy(NULL);
    unlink(target);
}

/* ---- archives as other writers make them -------------------------------- */

static const float fa[6] = {1.5f, -2, 0.25f, 1e-20f, 3e30f, -0.0f};
static const int64_t fa_shape[2] = {2, 3};

static void expect_fa(const clt_npz *z, const char *name, const char *what)
{
    clt_npz_entry e;
    clt_status s = clt_npz_find(z, name, &e);
    CHECK(s == CLT_OK, "%s: %s", what, clt_last_error());
    if (s != CLT_OK) return;
    CHECK(!e.is_bytes && e.ndim == 2 && e.shape[0] == 2 && e.shape[1] == 3 && e.numel == 6, "%s: shape", what);
    CHECK(e.data && memcmp(e.data, fa, sizeof fa) == 0, "%s: values differ", what);
}

static clt_npz *read_built(const zb_entry *e, int n, const zb_options *opt)
{
    size_t size;
    uint8_t *zip = zb_build(e, n, opt, &size);
    clt_npz *z = NULL;
    clt_status s = clt_npz_read_memory(zip, size, "built.npz", &z);
    free(zip);
    CHECK(s == CLT_OK, "built archive: %s", clt_last_error());
    return z;
}

static void other_writers(void)
{
    size_t an;
    uint8_t *a = zb_npy_f32(2, fa_shape, fa, &an);
    struct {
        const char *what;
        zb_entry e;
        zb_options o;
    } ok[] = {
        {"stored", {.name = "w.npy", .data = a, .n = an}, {0}},
        {"deflate", {.name = "w.npy", .data = a, .n = an, .method = 8}, {0}},
        {"numpy zip64 local extra", {.name = "w.npy", .data = a, .n = an, .zip64_local = 1}, {0}},
        {"numpy deflate zip64", {.name = "w.npy", .data = a, .n = an, .method = 8, .zip64_local = 1}, {0}},
        {"zip64 central extra", {.name = "w.npy", .data = a, .n = an, .zip64_central = 1}, {0}},
        {"zip64 end record", {.name = "w.npy", .data = a, .n = an, .method = 8}, {.zip64_eocd = 1}},
        {"data descriptor", {.name = "w.npy", .data = a, .n = an, .descriptor = 1}, {0}},
        {"descriptor deflate zip64", {.name = "w.npy", .data = a, .n = an, .method = 8, .descriptor = 1, .zip64_local = 1},
         {0}},
        {"archive comment", {.name = "w.npy", .data = a, .n = an}, {.comment = "made by hand PK\x05\x06"}},
        {"utf-8 flag", {.name = "w.npy", .data = a, .n = an, .flags = 0x0800}, {0}},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        clt_npz *z = read_built(&ok[i].e, 1, &ok[i].o);
        if (z) expect_fa(z, "w", ok[i].what);
        clt_npz_destroy(z);
    }

    /* Headers NumPy (or Python's literal syntax) allows. */
    static const struct {
        int version;
        const char *dict;
    } hdr[] = {
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"},
        {2, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"},
        {3, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"},
        {1, "{\"shape\":(2,3),\"descr\":\"<f4\",\"fortran_order\":False}"},
        {1, "{ 'fortran_order' : False , 'shape' : ( 2 , 3 , ) , 'descr' : '<f4' }"},
        {1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }"},
    };
    for (size_t i = 0; i < sizeof hdr / sizeof hdr[0]; i++) {
        size_t nn;
        uint8_t *npy = zb_npy(hdr[i].version, hdr[i].dict, 0, fa, sizeof fa, &nn);
        zb_entry e = {.name = "h.npy", .data = npy, .n = nn, .method = 8};
        clt_npz *z = read_built(&e, 1, NULL);
        if (z) expect_fa(z, "h", hdr[i].dict);
        clt_npz_destroy(z);
        free(npy);
    }

    /* Byte arrays: '|u1' of any shape, '|S<n>' (numpy.bytes_). Keys with
     * '/', and a scalar. */
    size_t n1, n2, n3;
    uint8_t *u1 = zb_npy(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 2), }", 0, "abcd", 4, &n1);
    uint8_t *s5 = zb_npy(1, "{'descr': '|S5', 'fortran_order': False, 'shape': (), }", 0, "hello", 5, &n2);
    float pi = 3.14159f;
    uint8_t *sc = zb_npy_f32(0, NULL, &pi, &n3);
    zb_entry es[4] = {
        {.name = "meta/u1.npy", .data = u1, .n = n1},
        {.name = "meta/s5.npy", .data = s5, .n = n2, .method = 8},
        {.name = "momentum/0.weight.npy", .data = a, .n = an},
        {.name = "pi.npy", .data = sc, .n = n3},
    };
    clt_npz *z = read_built(es, 4, NULL);
    if (z) {
        clt_npz_entry e;
        CHECK_OK(clt_npz_find(z, "meta/u1", &e));
        CHECK(e.is_bytes && e.ndim == 2 && e.nbytes == 4 && memcmp(e.bytes, "abcd", 4) == 0 && !e.data,
              "u1 entry");
        CHECK_OK(clt_npz_find(z, "meta/s5", &e));
        CHECK(e.is_bytes && e.ndim == 0 && e.numel == 1 && e.nbytes == 5 && memcmp(e.bytes, "hello", 5) == 0 &&
                  strcmp(e.dtype, "|S5") == 0,
              "S5 entry (dtype %s)", e.dtype);
        expect_fa(z, "momentum/0.weight", "slash key");
        CHECK_OK(clt_npz_find(z, "pi", &e));
        CHECK(e.ndim == 0 && e.numel == 1 && e.data && e.data[0] == pi, "scalar entry");
        CHECK_OK(clt_npz_entry_at(z, 2, &e));
        CHECK(strcmp(e.name, "momentum/0.weight") == 0, "archive order kept: %s", e.name);
    }
    clt_npz_destroy(z);
    free(u1);
    free(s5);
    free(sc);
    free(a);
}

/* ---- bad archives ------------------------------------------------------- */

static void expect_bad(const zb_entry *e, int n, const zb_options *o, const char *what, const char *needle)
{
    size_t size;
    uint8_t *zip = zb_build(e, n, o, &size);
    clt_npz *z = (clt_npz *)1;
    clt_status s = clt_npz_read_memory(zip, size, "bad.npz", &z);
    CHECK(s == CLT_ERR_FORMAT, "%s: %s (%s)", what, clt_status_name(s), clt_last_error());
    CHECK(z == NULL, "%s: *out set on failure", what);
    CHECK(strstr(clt_last_error(), "bad.npz") != NULL, "%s: detail lacks the file: %s", what, clt_last_error());
    CHECK(strstr(clt_last_error(), needle) != NULL, "%s: detail lacks \"%s\": %s", what, needle, clt_last_error());
    if (s == CLT_OK) clt_npz_destroy(z);
    free(zip);
}

static void bad_archives(void)
{
    size_t an;
    uint8_t *a = zb_npy_f32(2, fa_shape, fa, &an);
    const zb_entry ok = {.name = "w.npy", .data = a, .n = an};
    const zb_entry okd = {.name = "w.npy", .data = a, .n = an, .method = 8};
    /* One byte more than the header declares: with the directory saying
     * what the header says, the stream itself runs over. */
    uint8_t *a1 = calloc(an + 1, 1);
    memcpy(a1, a, an);
    const zb_entry okd1 = {.name = "w.npy", .data = a1, .n = an + 1, .method = 8};
    struct {
        const char *what, *needle;
        zb_entry e;
    } one[] = {
        {"bzip2", "compression method 12 (bzip2)", ok},
        {"encrypted", "encrypted", ok},
        {"crc", "CRC-32 mismatch", ok},
        {"stored size", "stored entry has", ok},
        {"deflate size +1", "inflates to", okd},
        {"deflate size -1", "more than the declared", okd1},
        {"bomb", "deflate bytes can hold", okd},
        {"trailing deflate bytes", "follow the end of the deflate stream", okd},
        {"deflate cut short", "ends early", okd},
        {"stored data past directory", "run past", ok},
        {"local name", "names another file", ok},
        {"offset", "outside the entry area", ok},
        {"not .npy", "does not end in .npy", ok},
        {"empty key", "key before .npy is empty", ok},
        {"control char", "control character", ok},
        {"local sizes", "disagrees with the central directory", ok},
        {"strong encryption", "encrypted", ok},
        {"directory short of the header", "needs 24 bytes of data, the entry holds 23", okd},
    };
    one[0].e.method = 12;
    one[1].e.flags = 1;
    one[2].e.crc_xor = 0x10;
    one[3].e.usize_delta = 1;
    one[4].e.usize_delta = 1;
    one[5].e.usize_delta = -1;
    one[6].e.usize_delta = 1000000000;
    one[7].e.trailing = 3;
    one[8].e.descriptor = 1;
    one[8].e.csize_delta_cd = -5;
    one[9].e.descriptor = 1;
    one[9].e.csize_delta_cd = 5000;
    one[10].e.local_name = "v.npy";
    one[11].e.lho_delta = 100000;
    one[12].e.name = "w.npz";
    one[12].e.local_name = "w.npz";
    one[13].e.name = ".npy";
    one[13].e.local_name = ".npy";
    one[14].e.name = "w\x01.npy";
    one[14].e.local_name = "w\x01.npy";
    one[15].e.csize_delta_cd = 1;
    one[16].e.flags = 0x40;
    one[17].e.usize_delta = -1;
    for (size_t i = 0; i < sizeof one / sizeof one[0]; i++) expect_bad(&one[i].e, 1, NULL, one[i].what, one[i].needle);

    /* Two entries. */
    zb_entry two[2] = {ok, ok};
    two[1].name = two[1].local_name = "v.npy";
    clt_npz *pair = read_built(two, 2, NULL);
    CHECK(clt_npz_count(pair) == 2, "two good entries");
    clt_npz_destroy(pair);
    two[0].name = two[0].local_name = "w.npy";
    two[1].name = two[1].local_name = "w.npy";
    expect_bad(two, 2, NULL, "duplicate names", "appears twice");
    two[1].name = two[1].local_name = "v.npy";
    two[0].descriptor = 1;
    two[0].csize_delta_cd = 40;
    expect_bad(two, 2, NULL, "overlap", "overlaps entry \"v.npy\"");
    two[0].descriptor = 0;
    two[0].csize_delta_cd = 0;
    two[1].lho_delta = -(int64_t)(30 + 5 + an); /* v points at w's local header */
    expect_bad(two, 2, NULL, "shared header", "overlaps entry \"v.npy\"");

    /* End records. */
    zb_options o;
    memset(&o, 0, sizeof o);
    o.comment = "abc";
    o.comment_len_delta = 1;
    expect_bad(&ok, 1, &o, "comment length", "end of central directory record not found");
    memset(&o, 0, sizeof o);
    o.count_delta = 1;
    expect_bad(&ok, 1, &o, "count too big", "cannot fit");
    o.count_delta = -1;
    expect_bad(&ok, 1, &o, "count too small", "stray bytes");
    memset(&o, 0, sizeof o);
    o.cd_offset_delta = -1;
    expect_bad(&ok, 1, &o, "directory offset", "does not end at the end record");
    o.cd_offset_delta = 1000000;
    expect_bad(&ok, 1, &o, "directory offset far", "does not end at the end record");
    memset(&o, 0, sizeof o);
    o.disk = 1;
    expect_bad(&ok, 1, &o, "multi-disk", "multi-disk");
    memset(&o, 0, sizeof o);
    o.zip64_eocd = 1;
    o.count_delta = 1;
    expect_bad(&ok, 1, &o, "zip64 count", "cannot fit");

    /* A saturated end record whose zip64 locator is damaged. */
    size_t size;
    memset(&o, 0, sizeof o);
    o.zip64_eocd = 1;
    uint8_t *zip = zb_build(&ok, 1, &o, &size);
    zip[size - 22 - 20] ^= 0xff; /* locator signature */
    clt_npz *z;
    CHECK_FAIL(clt_npz_read_memory(zip, size, "loc.npz", &z), CLT_ERR_FORMAT, "loc.npz", "no zip64 locator");
    zip[size - 22 - 20] ^= 0xff;
    zip[size - 22 - 20 + 8] ^= 0x01; /* zip64 end record offset */
    CHECK_FAIL(clt_npz_read_memory(zip, size, "loc.npz", &z), CLT_ERR_FORMAT, "loc.npz", "zip64 end record");
    free(zip);
    /* A zip64 extra field that runs past its extra data. */
    zb_entry z64 = ok;
    z64.zip64_central = 1;
    zip = zb_build(&z64, 1, NULL, &size);
    size_t cd = size - 22 - (46 + 5 + 28);
    zip[cd + 46 + 5 + 2] = 200; /* the extra record's size */
    CHECK_FAIL(clt_npz_read_memory(zip, size, "x.npz", &z), CLT_ERR_FORMAT, "x.npz", "runs past the extra data");
    zip[cd + 46 + 5 + 2] = 8; /* only the uncompressed size present */
    CHECK_FAIL(clt_npz_read_memory(zip, size, "x.npz", &z), CLT_ERR_FORMAT, "x.npz", "zip64 extra field is too short");
    zip[cd + 46 + 5] = 9; /* no zip64 extra at all */
    zip[cd + 46 + 5 + 2] = 24;
    CHECK_FAIL(clt_npz_read_memory(zip, size, "x.npz", &z), CLT_ERR_FORMAT, "x.npz", "no zip64 extra field");
    free(zip);
    free(a);
    free(a1);
}

/* ---- bad .npy headers ---------------------------------------------------- */

static void bad_npy(void)
{
    static const struct {
        const char *dict;
        size_t nbytes;
        const char *needle;
    } bad[] = {
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", 24, "'<f8'"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", 24, "float64"},
        {"{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }", 12, "big-endian"},
        {"{'descr': '>i4', 'fortran_order': False, 'shape': (3,), }", 12, "'>i4' is not supported"},
        {"{'descr': '<i3', 'fortran_order': False, 'shape': (3,), }", 9, "'<i3' is not supported"},
        {"{'descr': '|O', 'fortran_order': False, 'shape': (3,), }", 24, "never unpickles"},
        {"{'descr': '|S0', 'fortran_order': False, 'shape': (3,), }", 0, "'|S0'"},
        {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }", 12, "structured"},
        {"{'descr': '<f4', 'fortran_order': True, 'shape': (3, 1), }", 12, "fortran_order is True"},
        {"{'descr': '<f4', 'fortran_order': 0, 'shape': (3,), }", 12, "True or False"},
        {"{'descr': '<f4', 'fortran_order': Falsey, 'shape': (3,), }", 12, "True or False"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 16, "needs 12 bytes of data, the entry holds 16"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 8, "needs 12 bytes"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 4, "shape (2, 3)"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (), }", 0, "shape ()"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (0,), }", 4, "needs 0 bytes"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3), }", 12, "not a tuple"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }", 12, "non-negative integer"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3.0,), }", 12, "plain integer"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (03,), }", 12, "leading zero"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,3), }", 12, "more than 6 dimensions"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 12, "overflows 64 bits"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }", 12,
         "overflows 64 bits"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,), }", 12, "too large for this host's memory"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': [3], }", 12, "must be a tuple"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,) }  x", 12, "unexpected text after the dict"},
        {"{'descr': '<f4', 'fortran_order': False, }", 12, "lacks the key 'shape'"},
        {"{'descr': '<f4', 'shape': (3,), }", 12, "lacks the key 'fortran_order'"},
        {"{'fortran_order': False, 'shape': (3,), }", 12, "lacks the key 'descr'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'extra': 1, }", 12, "unexpected key 'extra'"},
        {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 12, "appears twice"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'shape': (3,), }", 12, "appears twice"},
        {"{'descr': '<f4' 'fortran_order': False, 'shape': (3,), }", 12, "expected ',' or '}'"},
        {"{'descr': '<f4\\x', 'fortran_order': False, 'shape': (3,), }", 12, "unsupported character"},
        {"{'descr: '<f4', 'fortran_order': False, 'shape': (3,), }", 12, "expected ':'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,)", 12, "expected ',' or '}'"},
        {"['descr', '<f4']", 12, "expected a dict"},
        {"", 12, "expected a dict"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }\n\n\x01", 12, "\\x01"},
        {"{'descr': 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', 'fortran_order': False, 'shape': (3,), }", 12,
         "string too long"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'unterminated}", 12, "unterminated string"},
    };
    uint8_t zeros[32] = {0};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t nn;
        uint8_t *npy = zb_npy(1, bad[i].dict, 0, zeros, bad[i].nbytes, &nn);
        zb_entry e = {.name = "arr.npy", .data = npy, .n = nn};
        char what[300];
        snprintf(what, sizeof what, "npy header %s + %zu bytes", bad[i].dict, bad[i].nbytes);
        expect_bad(&e, 1, NULL, what, bad[i].needle);
        expect_bad(&e, 1, NULL, what, "entry \"arr.npy\": ");
        free(npy);
    }
    /* The preamble. */
    size_t nn;
    uint8_t *npy = zb_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 0, zeros, 4, &nn);
    struct {
        size_t at;
        uint8_t value;
        size_t cut;
        const char *needle;
    } pre[] = {
        {0, 0x94, 0, "magic bytes"},
        {6, 4, 0, "unsupported .npy version 4.0"},
        {7, 1, 0, "unsupported .npy version 1.1"},
        {8, 0xff, 0, "runs past the end"},
        {9, 0xff, 0, "runs past the end"},
        {0, 0x93, 9, "shorter than the 10-byte preamble"},
        {0, 0x93, 0, "shape (1,)"}, /* data cut below */
    };
    for (size_t i = 0; i < sizeof pre / sizeof pre[0]; i++) {
        uint8_t *copy = malloc(nn);
        memcpy(copy, npy, nn);
        copy[pre[i].at] = pre[i].value;
        size_t len = pre[i].cut ? pre[i].cut : nn;
        if (i == 6) len = nn - 1;
        zb_entry e = {.name = "p.npy", .data = copy, .n = len};
        expect_bad(&e, 1, NULL, pre[i].needle, pre[i].needle);
        free(copy);
    }
    free(npy);
    /* Version 2.0 with a 4-byte header length that runs past the end. */
    npy = zb_npy(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 0, zeros, 4, &nn);
    npy[11] = 0x7f;
    zb_entry e2 = {.name = "p.npy", .data = npy, .n = nn};
    expect_bad(&e2, 1, NULL, "v2 header length", "runs past the end");
    free(npy);
}

/* ---- files that are not archives ---------------------------------------- */

static void not_archives(void)
{
    clt_npz *z = (clt_npz *)1;
    const char *missing = path_of("missing.npz");
    CHECK_FAIL(clt_npz_read(missing, &z), CLT_ERR_NOT_FOUND, missing);
    CHECK(z == NULL, "*out is NULL after a failure");
    CHECK_FAIL(clt_npz_read(dir, &z), CLT_ERR_IO, dir);
    CHECK_FAIL(clt_npz_read(NULL, &z), CLT_ERR_INVALID_ARG, "NULL");
    const char *empty = path_of("empty.npz");
    zb_write_file(empty, "", 0);
    CHECK_FAIL(clt_npz_read(empty, &z), CLT_ERR_FORMAT, empty, "empty");
    const char *text = path_of("text.npz");
    const char *words = "these are not the bytes of a zip archive, only some words of text, long enough.";
    zb_write_file(text, words, strlen(words));
    CHECK_FAIL(clt_npz_read(text, &z), CLT_ERR_FORMAT, text, "not an .npz file");
    zb_write_file(text, "PK", 2);
    CHECK_FAIL(clt_npz_read(text, &z), CLT_ERR_FORMAT, text, "too short");
    size_t nn;
    uint8_t *npy = zb_npy_f32(2, fa_shape, fa, &nn);
    const char *single = path_of("single.npz");
    zb_write_file(single, npy, nn);
    CHECK_FAIL(clt_npz_read(single, &z), CLT_ERR_FORMAT, single, "single .npy array");
    free(npy);
    /* A gzip file. */
    uint8_t gz[40] = {0x1f, 0x8b, 8, 0};
    CHECK_FAIL(clt_npz_read_memory(gz, sizeof gz, "g.npz", &z), CLT_ERR_FORMAT, "g.npz", "not an .npz file");
    unlink(empty);
    unlink(text);
    unlink(single);
}

/* ---- truncations and flipped bytes --------------------------------------- */

static int same_contents(const clt_npz *a, const clt_npz *b)
{
    if (clt_npz_count(a) != clt_npz_count(b)) return 0;
    for (int i = 0; i < clt_npz_count(a); i++) {
        clt_npz_entry x, y;
        if (clt_npz_entry_at(a, i, &x) != CLT_OK || clt_npz_entry_at(b, i, &y) != CLT_OK) return 0;
        if (strcmp(x.name, y.name) || strcmp(x.dtype, y.dtype) || x.ndim != y.ndim || x.nbytes != y.nbytes ||
            memcmp(x.shape, y.shape, sizeof x.shape) || memcmp(x.bytes, y.bytes, x.nbytes))
            return 0;
    }
    return 1;
}

static void damage(const char *what, const uint8_t *zip, size_t size)
{
    clt_npz *good = NULL;
    REQUIRE_OK(clt_npz_read_memory(zip, size, what, &good));
    /* Every strict prefix is an error, never a crash. The copy has exactly
     * the prefix's size, so a read past it shows under a sanitizer. */
    int bad_status = 0, lax = 0;
    for (size_t len = 0; len < size; len++) {
        uint8_t *cut = malloc(len ? len : 1);
        memcpy(cut, zip, len);
        clt_npz *z = NULL;
        clt_status s = clt_npz_read_memory(cut, len, "cut.npz", &z);
        if (s == CLT_OK) lax++;
        if (s != CLT_OK && s != CLT_ERR_FORMAT) bad_status++;
        if (s != CLT_OK && !strstr(clt_last_error(), "cut.npz")) bad_status++;
        clt_npz_destroy(z);
        free(cut);
    }
    CHECK(lax == 0, "%s: %d truncated copies were accepted", what, lax);
    CHECK(bad_status == 0, "%s: %d truncations gave another status or a detail without the file", what, bad_status);
    /* Every single-byte flip: an error, or (for fields nothing depends on,
     * such as timestamps) exactly the same contents. */
    int silent = 0, flips_ok = 0;
    bad_status = 0;
    uint8_t *copy = malloc(size);
    for (size_t at = 0; at < size; at++) {
        for (int v = 0; v < 2; v++) {
            memcpy(copy, zip, size);
            copy[at] ^= v ? 0xff : 0x01;
            clt_npz *z = NULL;
            clt_status s = clt_npz_read_memory(copy, size, "flip.npz", &z);
            if (s == CLT_OK) {
                flips_ok++;
                if (!same_contents(z, good)) {
                    silent++;
                    fprintf(stderr, "%s: flipping byte %zu (^%02x) changed the contents silently\n", what, at,
                            v ? 0xff : 1);
                }
            } else if (s != CLT_ERR_FORMAT) {
                bad_status++;
            }
            clt_npz_destroy(z);
        }
    }
    free(copy);
    CHECK(silent == 0, "%s: %d flips changed the contents silently", what, silent);
    CHECK(bad_status == 0, "%s: %d flips gave a status other than CLT_ERR_FORMAT", what, bad_status);
    CHECK(flips_ok < (int)size, "%s: %d of %zu flips were accepted", what, flips_ok, 2 * size);
    clt_npz_destroy(good);
}

static void truncations_and_flips(void)
{
    for (int compress = 0; compress < 2; compress++) {
        const char *path = path_of("small.npz");
        clt_npz_writer *w;
        REQUIRE_OK(clt_npz_writer_create(path, compress, &w));
        float v[40];
        for (int i = 0; i < 40; i++) v[i] = (float)(i % 5);
        int64_t s2[2] = {4, 10}, s1[1] = {3};
        CHECK_OK(clt_npz_writer_add_f32(w, "0.weight", 2, s2, v));
        CHECK_OK(clt_npz_writer_add_f32(w, "momentum/0.bias", 1, s1, v));
        CHECK_OK(clt_npz_writer_add_bytes(w, "__cltrain__", "{\"a\": 1}", 8));
        REQUIRE_OK(clt_npz_writer_commit(w));
        clt_npz_writer_destroy(w);
        unsigned char *data;
        size_t size;
        REQUIRE_OK(clt_read_file(path, 0, &data, &size));
        damage(compress ? "writer, deflate" : "writer, stored", data, size);
        free(data);
        unlink(path);
    }
    /* numpy's layout: zip64 local extras; a data descriptor; zip64 end. */
    size_t an;
    uint8_t *a = zb_npy_f32(2, fa_shape, fa, &an);
    zb_entry e[2] = {{.name = "a.npy", .data = a, .n = an, .method = 8, .zip64_local = 1},
                     {.name = "b/c.npy", .data = a, .n = an, .zip64_central = 1, .descriptor = 1}};
    zb_options o = {.zip64_eocd = 1, .comment = "c"};
    size_t size;
    uint8_t *zip = zb_build(e, 2, &o, &size);
    damage("zip64 and descriptors", zip, size);
    free(zip);
    free(a);
}

/* ---- atomic replacement ---------------------------------------------------- */

static void write_small(const char *path, float value, int entries)
{
    clt_npz_writer *w;
    REQUIRE_OK(clt_npz_writer_create(path, 0, &w));
    float v[16];
    for (int i = 0; i < 16; i++) v[i] = value;
    int64_t s[1] = {16};
    char key[32];
    for (int i = 0; i < entries; i++) {
        snprintf(key, sizeof key, "p%d", i);
        REQUIRE_OK(clt_npz_writer_add_f32(w, key, 1, s, v));
    }
    REQUIRE_OK(clt_npz_writer_commit(w));
    clt_npz_writer_destroy(w);
}

/* The file at path is the small archive of `value`. */
static void expect_small(const char *path, float value, const char *what)
{
    clt_npz *z;
    clt_status s = clt_npz_read(path, &z);
    CHECK(s == CLT_OK, "%s: the old file is gone or torn: %s", what, clt_last_error());
    if (s != CLT_OK) return;
    clt_npz_entry e;
    CHECK(clt_npz_count(z) == 1 && clt_npz_entry_at(z, 0, &e) == CLT_OK && e.numel == 16 && e.data[15] == value,
          "%s: the old contents changed", what);
    clt_npz_destroy(z);
}

static void atomic_writes(void)
{
    const char *target = path_of("atomic.npz");
    write_small(target, 1, 1);
    expect_small(target, 1, "first write");
    write_small(target, 2, 1);
    expect_small(target, 2, "replacement");
    CHECK(files_in_dir() == 1, "%d files after two commits", files_in_dir());

    /* Abandoned writer. */
    clt_npz_writer *w;
    REQUIRE_OK(clt_npz_writer_create(target, 0, &w));
    float v[16] = {0};
    int64_t s16[1] = {16};
    CHECK_OK(clt_npz_writer_add_f32(w, "p0", 1, s16, v));
    CHECK(files_in_dir() == 2, "the temporary file is beside the target");
    clt_npz_writer_destroy(w);
    expect_small(target, 2, "destroy without commit");
    CHECK(files_in_dir() == 1, "destroy left the temporary file");

    /* The disk fills up (a file size limit makes every write past 8 KiB
     * fail with EFBIG, even for root): commit or an add fails with
     * CLT_ERR_IO and the old file stays. */
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl;
        getrlimit(RLIMIT_FSIZE, &rl);
        rl.rlim_cur = 8192;
        setrlimit(RLIMIT_FSIZE, &rl);
        clt_npz_writer *cw;
        if (clt_npz_writer_create(target, 0, &cw) != CLT_OK) _exit(3);
        float big[4096] = {0};
        int64_t s[1] = {4096};
        clt_status s1 = clt_npz_writer_add_f32(cw, "p0", 1, s, big);
        clt_status s2 = s1 == CLT_OK ? clt_npz_writer_commit(cw) : s1;
        clt_npz_writer_destroy(cw);
        if (s2 == CLT_ERR_IO && strstr(clt_last_error(), "atomic.npz")) _exit(0);
        fprintf(stderr, "child: %s %s\n", clt_status_name(s2), clt_last_error());
        _exit(1);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a write past the file size limit did not fail with CLT_ERR_IO (%d)",
          st);
    expect_small(target, 2, "failed write");
    CHECK(files_in_dir() == 1, "a failed write left %d files", files_in_dir());

    /* Killed in the middle of writing: the target is untouched (only the
     * temporary file remains, as after any crash). */
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        clt_npz_writer *cw;
        if (clt_npz_writer_create(target, 0, &cw) != CLT_OK) _exit(3);
        float big[4096] = {0};
        int64_t s[1] = {4096};
        for (int i = 0; i < 20; i++) {
            char key[16];
            snprintf(key, sizeof key, "k%d", i);
            clt_npz_writer_add_f32(cw, key, 1, s, big);
        }
        raise(SIGKILL);
        _exit(2);
    }
    waitpid(pid, &st, 0);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "child not killed");
    expect_small(target, 2, "killed writer");
    CHECK(files_in_dir() == 2, "expected the target and one temporary file, found %d", files_in_dir());
    clean_dir();
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/clt-npz-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    round_trip(0);
    round_trip(1);
    clean_dir();
    writer_errors();
    other_writers();
    bad_archives();
    bad_npy();
    not_archives();
    truncations_and_flips();
    clean_dir();
    atomic_writes();
    clean_dir();
    CHECK(rmdir(dir) == 0, "files left in %s", dir);
    free_paths();
    return test_result();
}
