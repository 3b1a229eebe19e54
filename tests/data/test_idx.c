/* IDX reader: round trips of files written here (plain and gzip) and every
 * kind of bad input, each failing with a detail naming file and problem. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "data/idx.h"
#include "idx_write.h"

static char dir[4096];

static const char *path_of(const char *name)
{
    static char buf[4096];
    if (snprintf(buf, sizeof buf, "%s/%s", dir, name) >= (int)sizeof buf) exit(1);
    return buf;
}

static uint8_t *pattern(size_t n, unsigned seed)
{
    uint8_t *p = malloc(n + 1);
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)((i * 2654435761u + seed) >> 13);
    return p;
}

static void round_trip(int gz, int ndim, const uint32_t *dims, const char *name)
{
    size_t size = 1;
    for (int i = 0; i < ndim; i++) size *= dims[i];
    uint8_t *data = pattern(size, (unsigned)ndim);
    const char *path = path_of(name);
    tw_write_idx(path, gz, ndim, dims, data);
    clt_idx *idx = NULL;
    CHECK_OK(clt_idx_read(path, &idx));
    if (!idx) {
        free(data);
        return;
    }
    CHECK(idx->ndim == ndim, "%s: ndim %d, want %d", name, idx->ndim, ndim);
    CHECK(RESERVED_ZERO(*idx), "%s: reserved not zero", name);
    for (int i = 0; i < ndim && i < idx->ndim; i++)
        CHECK(idx->dims[i] == dims[i], "%s: dim %d is %lld, want %u", name, i, (long long)idx->dims[i],
              dims[i]);
    CHECK(idx->size == size, "%s: size %zu, want %zu", name, idx->size, size);
    CHECK(idx->data != NULL, "%s: data is NULL", name);
    if (idx->data && idx->size == size && size)
        CHECK(memcmp(idx->data, data, size) == 0, "%s: data differs", name);
    clt_idx_destroy(idx);
    free(data);
}

static void test_round_trips(void)
{
    uint32_t d3[3] = {5, 7, 3}, d1[1] = {1000}, d8[8] = {2, 1, 3, 1, 2, 2, 1, 3}, d0[3] = {0, 28, 28};
    uint32_t big[3] = {100, 64, 64}; /* 400 KiB: several inflate rounds */
    round_trip(0, 3, d3, "a-idx3-ubyte");
    round_trip(1, 3, d3, "a-idx3-ubyte.gz");
    round_trip(0, 1, d1, "b-idx1-ubyte");
    round_trip(1, 1, d1, "b-idx1-ubyte.gz");
    round_trip(0, 8, d8, "c8");
    round_trip(1, 8, d8, "c8.gz");
    round_trip(0, 3, d0, "empty-dims");
    round_trip(1, 3, d0, "empty-dims.gz");
    round_trip(1, 3, big, "big.gz");
    round_trip(0, 3, big, "big");
}

/* gzip is recognised by its magic bytes, not by the name; several gzip
 * members and stored (level 0) blocks are valid gzip. */
static void test_gzip_variants(void)
{
    uint32_t dims[3] = {4, 5, 6};
    uint8_t *data = pattern(120, 9);
    size_t n, zn1, zn2;
    uint8_t *raw = tw_idx(0x08, 3, dims, data, 120, &n);
    clt_idx idx, *read = NULL;

    tw_write_gz(path_of("gzip-without-suffix"), raw, n, 9);
    CHECK_OK(clt_idx_read(path_of("gzip-without-suffix"), &read));
    CHECK(read && read->size == 120 && read->data && memcmp(read->data, data, 120) == 0, "gzip without suffix");
    clt_idx_destroy(read);
    read = NULL;

    tw_write_raw(path_of("plain-with-suffix.gz"), raw, n);
    CHECK_OK(clt_idx_read(path_of("plain-with-suffix.gz"), &read));
    CHECK(read && read->size == 120 && read->data && memcmp(read->data, data, 120) == 0, "plain named .gz");
    clt_idx_destroy(read);
    read = NULL;

    tw_write_gz(path_of("stored.gz"), raw, n, 0);
    CHECK_OK(clt_idx_read(path_of("stored.gz"), &read));
    CHECK(read && read->size == 120 && read->data && memcmp(read->data, data, 120) == 0, "stored gzip");
    clt_idx_destroy(read);
    read = NULL;

    /* Two members: the header in one, the data in the next (as `cat a.gz b.gz`). */
    uint8_t *m1 = tw_gzip(raw, 16, 6, &zn1), *m2 = tw_gzip(raw + 16, n - 16, 6, &zn2);
    uint8_t *both = malloc(zn1 + zn2);
    memcpy(both, m1, zn1);
    memcpy(both + zn1, m2, zn2);
    CHECK_OK(clt_idx_parse_memory(both, zn1 + zn2, "two-members.gz", &idx));
    CHECK(idx.size == 120 && idx.data && memcmp(idx.data, data, 120) == 0, "two gzip members");
    clt_idx_clear(&idx);
    CHECK(idx.data == NULL && idx.size == 0 && idx.ndim == 0, "clt_idx_clear leaves fields set");
    free(both);
    free(m1);
    free(m2);
    free(raw);
    free(data);
}

/* Writes `n` bytes as file `name` and expects clt_idx_read to fail with
 * `want` and a detail holding the path and `word`. */
static void expect_bad(const char *name, const void *bytes, size_t n, clt_status want,
                       const char *word)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s", path_of(name)) >= (int)sizeof path) exit(1);
    tw_write_raw(path, bytes, n);
    clt_idx idx, *read = &idx;
    CHECK_FAIL(clt_idx_read(path, &read), want, path, word);
    CHECK(read == NULL, "%s: *out not reset on failure", name);
    memset(&idx, 0x5a, sizeof idx);
    /* The same bytes must fail the same way from memory. */
    CHECK_FAIL(clt_idx_parse_memory(bytes, n, "label-for-memory", &idx), want, "label-for-memory",
               word);
    CHECK(idx.data == NULL && idx.ndim == 0 && idx.size == 0, "%s: *out not zeroed on failure", name);
}

/* The same bad IDX bytes, plain and gzip-compressed. */
static void expect_bad_both(const char *name, const uint8_t *bytes, size_t n, const char *word)
{
    char gzname[256];
    size_t zn;
    uint8_t *z = tw_gzip(bytes, n, 6, &zn);
    expect_bad(name, bytes, n, CLT_ERR_FORMAT, word);
    if (snprintf(gzname, sizeof gzname, "%s.gz", name) >= (int)sizeof gzname) exit(1);
    expect_bad(gzname, z, zn, CLT_ERR_FORMAT, word);
    free(z);
}

static void test_bad_headers(void)
{
    uint32_t dims[3] = {2, 3, 4};
    uint8_t data[24] = {0};
    size_t n;
    uint8_t *good = tw_idx(0x08, 3, dims, data, 24, &n);
    uint8_t buf[64];

    memcpy(buf, good, n);
    buf[0] = 1;
    expect_bad_both("magic0", buf, n, "bad magic number 01 00 08 03");
    memcpy(buf, good, n);
    buf[1] = 0x80;
    expect_bad_both("magic1", buf, n, "first two bytes must be zero");
    memcpy(buf, good, n);
    buf[2] = 0x0D;
    expect_bad_both("float-type", buf, n, "unsupported IDX data type code 0x0d (float32)");
    buf[2] = 0x09;
    expect_bad_both("signed-type", buf, n, "data type code 0x09 (signed byte)");
    buf[2] = 0x42;
    expect_bad_both("bogus-type", buf, n, "invalid IDX data type code 0x42");
    memcpy(buf, good, n);
    buf[3] = 0;
    expect_bad_both("ndim0", buf, n, "declares 0 dimensions");
    buf[3] = 9;
    expect_bad_both("ndim9", buf, n, "declares 9 dimensions, at most 8");
    buf[3] = 200;
    expect_bad_both("ndim200", buf, n, "declares 200 dimensions");

    /* Shorter than the 4-byte magic, and headers cut inside the dims. */
    expect_bad_both("three-bytes", good, 3, "truncated IDX header");
    expect_bad_both("cut-header", good, 9, "truncated IDX header");
    expect_bad_both("magic-only", good, 4, "truncated IDX header");
    free(good);
}

static void test_bad_sizes(void)
{
    size_t n;
    /* Product of dimensions overflows 64 bits. */
    uint32_t huge[3] = {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu};
    uint8_t *b = tw_idx(0x08, 3, huge, NULL, 0, &n);
    expect_bad_both("overflow", b, n, "overflow");
    free(b);
    /* 8 GiB: fits in 64 bits, above the 4 GiB limit. */
    uint32_t big[3] = {65536, 65536, 2};
    b = tw_idx(0x08, 3, big, NULL, 0, &n);
    expect_bad_both("too-big", b, n, "more than the 4 GiB limit");
    free(b);
    /* A zero dimension makes the product 0, even after huge ones. */
    uint32_t zero[4] = {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0};
    b = tw_idx(0x08, 4, zero, NULL, 0, &n);
    clt_idx idx;
    CHECK_OK(clt_idx_parse_memory(b, n, "zero-dim", &idx));
    CHECK(idx.size == 0, "zero dimension gives size %zu", idx.size);
    clt_idx_clear(&idx);
    free(b);

    /* Header counts against the real data size. */
    uint32_t dims[3] = {10, 28, 28};
    uint8_t *data = pattern(7840 + 5, 3);
    b = tw_idx(0x08, 3, dims, data, 7840 + 5, &n);
    expect_bad_both("truncated-data", b, n - 6, "truncated: the IDX header declares 10 x 28 x 28 = 7840");
    expect_bad_both("one-byte-short", b, n - 6, "only 7839");
    expect_bad_both("no-data", b, 16, "only 0");
    expect_bad_both("extra-data", b, n, "extra bytes");
    expect_bad_both("one-extra-byte", b, n - 4, "extra bytes");
    free(b);
    free(data);
}

static void test_bad_files(void)
{
    clt_idx idx, *read = &idx; /* not NULL: a failed read must reset it */
    const char *missing = path_of("no-such-file");
    CHECK_FAIL(clt_idx_read(missing, &read), CLT_ERR_NOT_FOUND, missing, "No such file");
    CHECK(read == NULL, "a failed clt_idx_read leaves *out set");
    CHECK_FAIL(clt_idx_read(dir, &read), CLT_ERR_IO, dir, "not a regular file");
    /* a FIFO is refused at once, not read (which waits for a writer); the
     * alarm fails the test instead of hanging it */
    char fifo[4096];
    snprintf(fifo, sizeof fifo, "%s", path_of("fifo"));
    CHECK(mkfifo(fifo, 0600) == 0, "mkfifo %s", fifo);
    alarm(30);
    CHECK_FAIL(clt_idx_read(fifo, &read), CLT_ERR_IO, fifo, "a FIFO, not a regular file");
    alarm(0);
    unlink(fifo);
    expect_bad("empty", "", 0, CLT_ERR_FORMAT, "empty file");
    CHECK_FAIL(clt_idx_read(NULL, &read), CLT_ERR_INVALID_ARG, "path is NULL");
    CHECK_FAIL(clt_idx_read(missing, NULL), CLT_ERR_INVALID_ARG, "out is NULL");
    CHECK_FAIL(clt_idx_parse_memory(NULL, 5, "x", &idx), CLT_ERR_INVALID_ARG, "x");
    clt_idx_destroy(NULL);
    clt_idx_clear(NULL);
}

static void test_bad_gzip(void)
{
    uint32_t dims[3] = {50, 28, 28};
    uint8_t *data = pattern(50 * 784, 5);
    size_t n, zn;
    uint8_t *raw = tw_idx(0x08, 3, dims, data, 50 * 784, &n);
    uint8_t *z = tw_gzip(raw, n, 6, &zn);
    uint8_t *bad = malloc(zn + 16);

    /* A gzip file that decompresses to nothing. */
    size_t en;
    uint8_t *empty = tw_gzip("", 0, 6, &en);
    expect_bad("empty.gz", empty, en, CLT_ERR_FORMAT, "decompresses to nothing");
    free(empty);
    /* Only the gzip magic. */
    expect_bad("magic-only.gz", z, 2, CLT_ERR_FORMAT, "truncated gzip stream");
    /* Cut inside the compressed data, and inside the 8-byte trailer. */
    expect_bad("cut-middle.gz", z, zn / 2, CLT_ERR_FORMAT, "truncated gzip stream");
    expect_bad("cut-trailer.gz", z, zn - 3, CLT_ERR_FORMAT, "truncated gzip stream");
    expect_bad("cut-header.gz", z, 12, CLT_ERR_FORMAT, "truncated gzip stream");
    /* A wrong CRC-32 in the trailer. */
    memcpy(bad, z, zn);
    bad[zn - 8] ^= 0x55;
    expect_bad("bad-crc.gz", bad, zn, CLT_ERR_FORMAT, "corrupt gzip stream");
    /* A wrong length in the trailer. */
    memcpy(bad, z, zn);
    bad[zn - 1] ^= 0x01;
    expect_bad("bad-length.gz", bad, zn, CLT_ERR_FORMAT, "corrupt gzip stream");
    /* Reserved block type 3 in the first deflate block header. */
    memcpy(bad, z, zn);
    bad[10] |= 0x06;
    expect_bad("bad-block.gz", bad, zn, CLT_ERR_FORMAT, "corrupt gzip stream");
    /* Unknown compression method in the gzip header. */
    memcpy(bad, z, zn);
    bad[2] = 7;
    expect_bad("bad-method.gz", bad, zn, CLT_ERR_FORMAT, "corrupt gzip stream");
    /* Garbage after the end of the stream. */
    memcpy(bad, z, zn);
    memcpy(bad + zn, "garbage!", 8);
    expect_bad("trailing.gz", bad, zn + 8, CLT_ERR_FORMAT, "trailing garbage");
    expect_bad("trailing1.gz", bad, zn + 1, CLT_ERR_FORMAT, "trailing garbage");
    free(bad);
    free(z);
    free(raw);
    free(data);
}

/* Tiny files (plain and gzip) whose header claims 4 GiB - 1 must fail as
 * truncated without the reader allocating what the header claims: run them
 * with the address space capped far below that. A file above the limit is
 * refused before it is read. */
static void test_no_giant_allocation(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    fprintf(stderr, "note: allocation cap check skipped under a sanitizer\n");
#else
    uint32_t dims[1] = {0xFFFFFFFFu};
    uint8_t data[100] = {0};
    size_t n, zn;
    uint8_t *raw = tw_idx(0x08, 1, dims, data, sizeof data, &n);
    uint8_t *z = tw_gzip(raw, n, 9, &zn);
    tw_write_raw(path_of("claims-4g.gz"), z, zn);
    tw_write_raw(path_of("claims-4g"), raw, n);
    /* 5 GiB, sparse: costs no disk. */
    char sparse[4096];
    snprintf(sparse, sizeof sparse, "%s", path_of("sparse-5g"));
    FILE *f = fopen(sparse, "wb");
    int have_sparse = f && ftruncate(fileno(f), (off_t)5 << 30) == 0;
    if (f) fclose(f);
    pid_t pid = fork();
    if (pid == 0) {
        struct rlimit lim = {(rlim_t)1 << 30, (rlim_t)1 << 30};
        setrlimit(RLIMIT_AS, &lim);
        clt_idx *idx = NULL;
        int ok = 1;
        const char *files[2] = {"claims-4g.gz", "claims-4g"};
        for (int i = 0; i < 2; i++) {
            clt_status s = clt_idx_read(path_of(files[i]), &idx);
            if (s != CLT_ERR_FORMAT || !strstr(clt_last_error(), "truncated")) {
                fprintf(stderr, "child: %s: %s\n", clt_status_name(s), clt_last_error());
                ok = 0;
            }
        }
        if (have_sparse) {
            clt_status s = clt_idx_read(sparse, &idx);
            if (s != CLT_ERR_FORMAT || !strstr(clt_last_error(), "file too large")) {
                fprintf(stderr, "child: %s: %s\n", clt_status_name(s), clt_last_error());
                ok = 0;
            }
        }
        _exit(ok ? 0 : 1);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "4 GiB claim under a 1 GiB address-space cap");
    free(z);
    free(raw);
#endif
}

int main(void)
{
    tw_mkdtemp(dir, sizeof dir, "idx");
    test_round_trips();
    test_gzip_variants();
    test_bad_headers();
    test_bad_sizes();
    test_bad_files();
    test_bad_gzip();
    test_no_giant_allocation();
    if (!test_failures) tw_rmtree(dir);
    return test_result();
}
