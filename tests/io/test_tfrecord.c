/* CRC-32C against published check values and a bit-by-bit reference;
 * TFRecord framing against a record TensorBoard's own reader code framed;
 * every truncation and every single-byte flip of a record refused; a
 * failed write cut back to the last record; and the event writer's run
 * directory: new, continued after a step, a torn tail cut, another run's
 * events refused. Without protobuf-c, opening says why. */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "tmpdir.h"
#include "core/atomic_file.h"
#include "io/crc32c.h"
#include "io/tfevents.h"
#include "io/tfrecord.h"

/* CRC-32C one bit at a time: the definition the table must agree with. */
static uint32_t crc_bitwise(const unsigned char *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
    }
    return ~c;
}

static void crc_values(void)
{
    CHECK(clt_crc32c(0, "123456789", 9) == 0xe3069283u, "check value %08x", clt_crc32c(0, "123456789", 9));
    CHECK(clt_crc32c(0, "", 0) == 0, "empty");
    unsigned char buf[300];
    /* RFC 3720 (iSCSI), appendix B.4 */
    memset(buf, 0, 32);
    CHECK(clt_crc32c(0, buf, 32) == 0x8a9136aau, "32 zeros: %08x", clt_crc32c(0, buf, 32));
    memset(buf, 0xff, 32);
    CHECK(clt_crc32c(0, buf, 32) == 0x62a8ab43u, "32 ones: %08x", clt_crc32c(0, buf, 32));
    for (int i = 0; i < 32; i++) buf[i] = (unsigned char)i;
    CHECK(clt_crc32c(0, buf, 32) == 0x46dd794eu, "32 ascending: %08x", clt_crc32c(0, buf, 32));
    /* every byte value, every length, and a CRC continued over two parts */
    for (int i = 0; i < 300; i++) buf[i] = (unsigned char)(i * 7 + 3);
    for (size_t n = 0; n <= 300; n += 13) {
        CHECK(clt_crc32c(0, buf, n) == crc_bitwise(buf, n), "length %zu", n);
        CHECK(clt_crc32c(clt_crc32c(0, buf, n / 3), buf + n / 3, n - n / 3) == clt_crc32c(0, buf, n), "split %zu", n);
    }
    for (int b = 0; b < 256; b++) {
        unsigned char c = (unsigned char)b;
        CHECK(clt_crc32c(0, &c, 1) == crc_bitwise(&c, 1), "byte %d", b);
    }
    CHECK(clt_crc32c_mask(0) == 0xa282ead8u, "mask of 0");
    CHECK(clt_crc32c_mask(0xe3069283u) == 0xc78ab0e5u, "mask of the check value: %08x", clt_crc32c_mask(0xe3069283u));
}

/* "hello" framed by tensorboard.compat.tensorflow_stub's masked_crc32c. */
static const unsigned char hello_record[] = {0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xea, 0xb2, 0x04,
                                             0x3e, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0xbb, 0x1f, 0x1c, 0x19};

static void framing(void)
{
    unsigned char rec[sizeof hello_record];
    clt_tfrecord_frame("hello", 5, rec);
    CHECK(!memcmp(rec, hello_record, sizeof rec), "\"hello\" framed as TensorBoard frames it");
    /* two records back to back, then the end */
    unsigned char two[2 * sizeof rec];
    memcpy(two, rec, sizeof rec);
    memcpy(two + sizeof rec, rec, sizeof rec);
    size_t pos = 0, n;
    const unsigned char *data;
    for (int i = 0; i < 2; i++) {
        CHECK_OK(clt_tfrecord_next(two, sizeof two, &pos, &data, &n));
        CHECK(n == 5 && !memcmp(data, "hello", 5) && pos == (size_t)(i + 1) * sizeof rec, "record %d", i);
    }
    CHECK(clt_tfrecord_next(two, sizeof two, &pos, &data, &n) == CLT_ERR_NOT_FOUND, "the end");
    /* every cut and every flipped byte is refused, the position kept */
    for (size_t cut = 1; cut < sizeof rec; cut++) {
        pos = 0;
        CHECK_FAIL(clt_tfrecord_next(rec, cut, &pos, &data, &n), CLT_ERR_FORMAT, "offset 0", "cut short");
        CHECK(pos == 0, "cut %zu: position kept", cut);
    }
    for (size_t i = 0; i < sizeof rec; i++) {
        rec[i] ^= 0x10;
        pos = 0;
        CHECK_FAIL(clt_tfrecord_next(rec, sizeof rec, &pos, &data, &n), CLT_ERR_FORMAT, "CRC");
        rec[i] ^= 0x10;
    }
    /* a length beyond the buffer (its CRC made to match) is cut short, not read */
    unsigned char big[sizeof rec];
    memcpy(big, rec, sizeof rec);
    big[5] = 0x80;
    uint32_t m = clt_crc32c_mask(clt_crc32c(0, big, 8));
    for (int i = 0; i < 4; i++) big[8 + i] = (unsigned char)(m >> (8 * i));
    pos = 0;
    CHECK_FAIL(clt_tfrecord_next(big, sizeof big, &pos, &data, &n), CLT_ERR_FORMAT, "cut short");
}

static int64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
}

/* A write cut short (a file size limit) leaves no partial record. */
static void failed_write(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/records", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    REQUIRE(fd >= 0, "open %s", path);
    int64_t size = 0;
    CHECK_OK(clt_tfrecord_write(fd, path, &size, "hello", 5));
    CHECK(size == 21 && file_size(path) == 21, "one record: %lld", (long long)size);
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 60;
    signal(SIGXFSZ, SIG_IGN);
    REQUIRE(setrlimit(RLIMIT_FSIZE, &lim) == 0, "setrlimit");
    char data[100] = {0};
    CHECK_FAIL(clt_tfrecord_write(fd, path, &size, data, sizeof data), CLT_ERR_IO, path, "write failed");
    setrlimit(RLIMIT_FSIZE, &old);
    CHECK(size == 21 && file_size(path) == 21, "cut back to the record: %lld", (long long)file_size(path));
    CHECK_OK(clt_tfrecord_write(fd, path, &size, "hello", 5));
    close(fd);
    unsigned char *buf;
    size_t len, pos = 0, n;
    const unsigned char *d;
    REQUIRE_OK(clt_read_file(path, 0, &buf, &len));
    int records = 0;
    while (clt_tfrecord_next(buf, len, &pos, &d, &n) == CLT_OK) records++;
    CHECK(records == 2 && pos == len, "two whole records after the failure: %d", records);
    free(buf);
    unlink(path);
}

/* The event file of dir (one expected). */
static int event_file(const char *dir, char *path, size_t cap)
{
    DIR *d = opendir(dir);
    int found = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (!strncmp(e->d_name, "events.out.tfevents.", 20))
            found += snprintf(path, cap, "%s/%s", dir, e->d_name) < (int)cap ? 1 : 100;
    if (d) closedir(d);
    return found;
}

static int count_records(const char *path)
{
    unsigned char *buf;
    size_t len, pos = 0, n;
    const unsigned char *d;
    if (clt_read_file(path, 0, &buf, &len) != CLT_OK) return -1;
    int records = 0;
    while (clt_tfrecord_next(buf, len, &pos, &d, &n) == CLT_OK) records++;
    free(buf);
    return pos == len ? records : -1;
}

static void add_steps(clt_tfevents *w, int64_t from, int64_t to)
{
    const char *tag = "loss";
    for (int64_t s = from; s <= to; s++) {
        float v = (float)s;
        CHECK_OK(clt_tfevents_add(w, s, 1, &tag, &v));
    }
}

static void run_directory(const char *tmp)
{
    char dir[4200], path[4400];
    snprintf(dir, sizeof dir, "%s/run/a", tmp);
    clt_tfevents *w;
    if (!CLTRAIN_HAVE_PROTOBUF) {
        CHECK_FAIL(clt_tfevents_open(dir, -1, &w), CLT_ERR_UNSUPPORTED, "protobuf-c");
        CHECK(w == NULL, "no writer");
        return;
    }
    REQUIRE_OK(clt_tfevents_open(dir, -1, &w));
    CHECK(event_file(dir, path, sizeof path) == 1 && !strcmp(path, clt_tfevents_path(w)), "one new file");
    add_steps(w, 1, 6);
    CHECK_OK(clt_tfevents_sync(w));
    /* one writer at a time */
    clt_tfevents *other;
    CHECK_FAIL(clt_tfevents_open(dir, 6, &other), CLT_ERR_IO, "another run");
    clt_tfevents_close(w);
    CHECK(count_records(path) == 7, "the version and six steps: %d", count_records(path));
    /* a new run refuses the directory, naming the file and the last step */
    CHECK_FAIL(clt_tfevents_open(dir, -1, &w), CLT_ERR_INVALID_ARG, "already holds", "up to step 6");
    /* resumed after step 4 with a torn record at the end: both cut */
    FILE *f = fopen(path, "ab");
    REQUIRE(f, "append");
    fwrite(hello_record, 1, 10, f);
    fclose(f);
    REQUIRE_OK(clt_tfevents_open(dir, 4, &w));
    int64_t events, torn;
    clt_tfevents_cut(w, &events, &torn);
    CHECK(events == 2 && torn == 10, "cut %lld events, %lld torn bytes", (long long)events, (long long)torn);
    CHECK(!strcmp(clt_tfevents_path(w), path), "the same file continues");
    add_steps(w, 5, 8);
    clt_tfevents_close(w);
    CHECK(count_records(path) == 9, "version, steps 1..8: %d", count_records(path));
    /* nothing past the step: nothing cut */
    REQUIRE_OK(clt_tfevents_open(dir, 8, &w));
    clt_tfevents_cut(w, &events, &torn);
    CHECK(events == 0 && torn == 0, "nothing cut: %lld, %lld", (long long)events, (long long)torn);
    clt_tfevents_close(w);
    /* a file of another kind is not cut */
    unlink(path);
    f = fopen(path, "wb");
    REQUIRE(f, "create");
    fwrite(hello_record, 1, sizeof hello_record, f);
    fclose(f);
    CHECK_FAIL(clt_tfevents_open(dir, 3, &w), CLT_ERR_FORMAT, "not a TensorBoard event file");
    CHECK(file_size(path) == (int64_t)sizeof hello_record, "left alone");
    unlink(path);
    /* a directory that cannot be one */
    snprintf(path, sizeof path, "%s/file", tmp);
    f = fopen(path, "wb");
    REQUIRE(f, "create");
    fclose(f);
    CHECK_FAIL(clt_tfevents_open(path, -1, &w), CLT_ERR_IO, "not a directory");
    strcat(path, "/sub");
    CHECK_FAIL(clt_tfevents_open(path, -1, &w), CLT_ERR_IO, "cannot create directory");
    snprintf(path, sizeof path, "%s/file", tmp);
    unlink(path);
    rmdir(dir);
    snprintf(dir, sizeof dir, "%s/run", tmp);
    rmdir(dir);
}

int main(void)
{
    crc_values();
    framing();
    char tmp[4096];
    REQUIRE(tmpdir_make(tmp, sizeof tmp, "clt-tfrecord"), "temporary directory");
    failed_write(tmp);
    run_directory(tmp);
    CHECK(tmpdir_remove(tmp), "%s left clean", tmp);
    return test_result();
}
