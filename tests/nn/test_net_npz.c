/* A net's parameters through .npz on device 0: save, load into a net with
 * other values (identical bit for bit afterwards), the file's names, order
 * and shapes; every load error (missing, extra, wrong shape, wrong dtype,
 * corrupt, missing file) names the parameter and both shapes and leaves the
 * net unchanged; the internal helpers the checkpoints use (prefixed
 * entries, the momentum buffer). */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "paths.h"
#include "runtime/device_impl.h"
#include "core/atomic_file.h"
#include "io/npz.h"
#include "nn/net_impl.h"
#include "nn/net_npz.h"
#include "zipbuild.h"

/* All parameters of a net, concatenated in spec order. */
static float *params_of(const clt_net *net, size_t *total)
{
    size_t n = 0;
    for (int i = 0; i < clt_net_param_count(net); i++) n += (size_t)clt_net_param_at(net, i)->numel;
    float *all = malloc(n * sizeof *all), *at = all;
    for (int i = 0; i < clt_net_param_count(net); i++) {
        const clt_param *p = clt_net_param_at(net, i);
        REQUIRE_OK(clt_net_param_get(net, p->name, at, p->numel));
        at += p->numel;
    }
    *total = n;
    return all;
}

static int same_params(const clt_net *a, const clt_net *b)
{
    size_t na, nb;
    float *pa = params_of(a, &na), *pb = params_of(b, &nb);
    int same = na == nb && memcmp(pa, pb, na * sizeof *pa) == 0;
    free(pa);
    free(pb);
    return same;
}

/* Writes net's parameters, with one of them changed as `how` says:
 * 0 left out, 1 reshaped to `shape`, 2 as bytes, 3 with NaN at element 7,
 * 4 with -inf at element 0; plus an extra entry when extra is set. */
static void write_variant(const clt_net *net, const char *path, const char *victim, int how, int ndim,
                          const int64_t *shape, const char *extra)
{
    clt_npz_writer *w;
    REQUIRE_OK(clt_npz_writer_create(path, 1, &w));
    for (int i = 0; i < clt_net_param_count(net); i++) {
        const clt_param *p = clt_net_param_at(net, i);
        float *v = malloc((size_t)p->numel * sizeof *v);
        REQUIRE_OK(clt_net_param_get(net, p->name, v, p->numel));
        if (victim && strcmp(p->name, victim) == 0) {
            if (how == 1) REQUIRE_OK(clt_npz_writer_add_f32(w, p->name, ndim, shape, v));
            if (how == 2) REQUIRE_OK(clt_npz_writer_add_bytes(w, p->name, v, (size_t)p->numel * 4));
            if (how == 3) v[7] = NAN;
            if (how == 4) v[0] = -INFINITY;
            if (how >= 3) REQUIRE_OK(clt_npz_writer_add_f32(w, p->name, p->ndim, p->shape, v));
        } else {
            REQUIRE_OK(clt_npz_writer_add_f32(w, p->name, p->ndim, p->shape, v));
        }
        free(v);
    }
    if (extra) {
        float x[3] = {1, 2, 3};
        int64_t s[1] = {3};
        REQUIRE_OK(clt_npz_writer_add_f32(w, extra, 1, s, x));
    }
    REQUIRE_OK(clt_npz_writer_commit(w));
    clt_npz_writer_destroy(w);
}

static void save_and_load(clt_device *dev)
{
    clt_net *a, *b;
    REQUIRE_OK(clt_net_create(dev, "lenet", 1, 28, 28, &a));
    REQUIRE_OK(clt_net_create(dev, "lenet", 1, 28, 28, &b));
    REQUIRE_OK(clt_net_init(a, 1, CLT_INIT_XAVIER));
    REQUIRE_OK(clt_net_init(b, 2, CLT_INIT_NORMAL));
    CHECK(!same_params(a, b), "two seeds gave the same parameters");
    const char *path = path_of("lenet.npz");
    CHECK_OK(clt_net_save_npz(a, path));

    /* The file: state_dict names in spec order, shapes, values. */
    static const struct {
        const char *name;
        int ndim;
        int64_t shape[4];
    } want[] = {
        {"0.weight", 4, {20, 1, 3, 3}}, {"0.bias", 1, {20}},    {"3.weight", 4, {50, 20, 5, 5}},
        {"3.bias", 1, {50}},            {"7.weight", 2, {128, 800}}, {"7.bias", 1, {128}},
        {"9.weight", 2, {10, 128}},     {"9.bias", 1, {10}},
    };
    clt_npz *z = NULL;
    CHECK_OK(clt_npz_read(path, &z));
    /* the parameters, then the file's own keys (clt_net_open) */
    CHECK(clt_npz_count(z) == 11, "lenet file has %d entries", clt_npz_count(z));
    CHECK(clt_npz_get(z, "__cltrain__/spec") && clt_npz_get(z, "__cltrain__/input") &&
          clt_npz_get(z, "__cltrain__/version") && !clt_npz_get(z, "__cltrain__/normalize"),
          "the net's own keys");
    for (int i = 0; i < 8 && i < clt_npz_count(z); i++) {
        clt_npz_entry e;
        CHECK_OK(clt_npz_entry_at(z, i, &e));
        CHECK(strcmp(e.name, want[i].name) == 0, "entry %d is %s, want %s", i, e.name, want[i].name);
        CHECK(!e.is_bytes && e.ndim == want[i].ndim && memcmp(e.shape, want[i].shape, (size_t)e.ndim * 8) == 0,
              "%s: shape", e.name);
        float *v = malloc((size_t)e.numel * sizeof *v);
        CHECK_OK(clt_net_param_get(a, e.name, v, e.numel));
        CHECK(memcmp(v, e.data, (size_t)e.numel * 4) == 0, "%s: file values differ from the net's", e.name);
        free(v);
    }
    clt_npz_destroy(z);

    CHECK_OK(clt_net_load_npz(b, path));
    CHECK(same_params(a, b), "after loading, the parameters differ from the saved net's");

    /* Errors leave b as it is; each bad file carries a's values for every
     * other parameter, so a partial load would show. */
    REQUIRE_OK(clt_net_init(b, 3, CLT_INIT_NORMAL));
    size_t nb;
    float *before = params_of(b, &nb);
    const char *bad = path_of("bad.npz");
    int64_t s3[3] = {50, 20, 25}, s4[4] = {50, 20, 3, 3};

    write_variant(a, bad, "9.bias", 0, 0, NULL, NULL);
    CHECK_FAIL(clt_net_load_npz(b, bad), CLT_ERR_FORMAT, bad, "\"9.bias\"", "(10,)", "missing", "0.weight (20, 1, 3, 3)");
    write_variant(a, bad, NULL, 0, 0, NULL, "10.weight");
    CHECK_FAIL(clt_net_load_npz(b, bad), CLT_ERR_FORMAT, bad, "\"10.weight\"", "(3,)", "not a parameter",
               "9.bias (10,)");
    write_variant(a, bad, "3.weight", 1, 3, s3, NULL);
    CHECK_FAIL(clt_net_load_npz(b, bad), CLT_ERR_FORMAT, bad, "\"3.weight\"", "(50, 20, 5, 5) in the net",
               "(50, 20, 25) in the file");
    write_variant(a, bad, "3.weight", 1, 4, s4, NULL);
    CHECK_FAIL(clt_net_load_npz(b, bad), CLT_ERR_FORMAT, "(50, 20, 5, 5)", "(50, 20, 3, 3)");
    write_variant(a, bad, "0.bias", 2, 0, NULL, NULL);
    CHECK_FAIL(clt_net_load_npz(b, bad), CLT_ERR_FORMAT, "\"0.bias\"", "byte array", "(20,)");
    write_variant(a, bad, "0.bias", 2, 0, NULL, "momentum/0.bias");
    CHECK_FAIL(clt_net_load_npz(b, bad), CLT_ERR_FORMAT, "\"0.bias\"");
    /* Non-finite values: the entry and the first bad index. */
    write_variant(a, bad, "3.weight", 3, 0, NULL, NULL);
    CHECK_FAIL(clt_net_load_npz(b, bad), CLT_ERR_FORMAT, bad, "\"3.weight\"", "NaN at index (0, 0, 1, 2)",
               "element 7 of 25000", "finite");
    write_variant(a, bad, "7.bias", 4, 0, NULL, NULL);
    CHECK_FAIL(clt_net_load_npz(b, bad), CLT_ERR_FORMAT, "\"7.bias\"", "-inf at index (0,)");

    /* A corrupt copy of a good file: one data byte flipped. */
    unsigned char *data;
    size_t size;
    REQUIRE_OK(clt_read_file(path, 0, &data, &size));
    data[size / 2] ^= 0x40;
    REQUIRE_OK(clt_write_file_atomic(bad, data, size));
    CHECK_FAIL(clt_net_load_npz(b, bad), CLT_ERR_FORMAT, bad, "CRC-32");
    free(data);
    CHECK_FAIL(clt_net_load_npz(b, path_of("none.npz")), CLT_ERR_NOT_FOUND, "none.npz");

    size_t nafter;
    float *after = params_of(b, &nafter);
    CHECK(nb == nafter && memcmp(before, after, nb * sizeof *before) == 0, "a failed load changed the net");
    free(before);
    free(after);

    CHECK_FAIL(clt_net_load_npz(NULL, path), CLT_ERR_INVALID_ARG, "NULL");
    CHECK_FAIL(clt_net_load_npz(b, NULL), CLT_ERR_INVALID_ARG, "NULL");
    CHECK_FAIL(clt_net_save_npz(NULL, path), CLT_ERR_INVALID_ARG, "NULL");
    CHECK_FAIL(clt_net_save_npz(a, path_of("no/dir/x.npz")), CLT_ERR_IO, "no/dir/x.npz");
    /* A failed save leaves an existing file: the target is a directory. */
    CHECK(clt_net_save_npz(a, dir) != CLT_OK, "saving over a directory succeeded");

    /* Checkpoint helpers: parameters plus prefixed arrays into the
     * momentum buffer and back. */
    const char *ck = path_of("ck.npz");
    clt_npz_writer *w;
    /* a's momentum: a copy of its parameters, so values are recognisable */
    clt_net *am = NULL;
    REQUIRE_OK(clt_net_create(clt_net_device(a), "lenet", 1, 28, 28, &am));
    REQUIRE_OK(clt_net_load_npz(am, path));
    REQUIRE_OK(clt_net_ensure_slots(am, 1));
    CHECK(clEnqueueCopyBuffer(am->dev->queue, am->params, am->slot[0], 0, 0, am->flat * sizeof(float), 0, NULL, NULL) ==
              CL_SUCCESS && clFinish(am->dev->queue) == CL_SUCCESS, "copy parameters into momentum");
    REQUIRE_OK(clt_npz_writer_create(ck, 0, &w));
    CHECK_FAIL(clt_net_npz_add(w, a, 1, "momentum/"), CLT_ERR_INVALID_ARG, "no optimizer state slot 0");
    clt_npz_writer_destroy(w);
    REQUIRE_OK(clt_npz_writer_create(ck, 0, &w));
    CHECK_OK(clt_net_npz_add(w, a, 0, ""));
    CHECK_OK(clt_net_npz_add(w, am, 1, "momentum/"));
    CHECK_OK(clt_npz_writer_add_bytes(w, "__cltrain__", "{}", 2));
    CHECK_OK(clt_npz_writer_commit(w));
    clt_npz_writer_destroy(w);
    REQUIRE_OK(clt_npz_read(ck, &z));
    CHECK(clt_npz_count(z) == 17, "checkpoint entries %d", clt_npz_count(z));
    CHECK_OK(clt_net_npz_check(z, b, 0, ""));
    CHECK_OK(clt_net_npz_check(z, b, 1, "momentum/"));
    CHECK_FAIL(clt_net_npz_check(z, b, 0, "other/"), CLT_ERR_FORMAT, "\"other/0.weight\"", "missing",
               "momentum/0.weight");
    CHECK(clt_net_npz_is_param(b, 1, "momentum/", "momentum/7.bias"), "momentum/7.bias is a parameter name");
    CHECK(!clt_net_npz_is_param(b, 1, "momentum/", "7.bias"), "7.bias lacks the prefix");
    CHECK(!clt_net_npz_is_param(b, 0, "", "__cltrain__"), "__cltrain__ is no parameter");
    CHECK(clt_npz_get(z, "__cltrain__") && clt_npz_get(z, "__cltrain__")->is_bytes, "metadata entry");
    CHECK_FAIL(clt_net_npz_upload(z, b, 1, "momentum/"), CLT_ERR_INVALID_ARG, "no optimizer state slot 0");
    REQUIRE_OK(clt_net_ensure_slots(b, 1));
    CHECK_OK(clt_net_npz_upload(z, b, 1, "momentum/"));
    clt_npz_destroy(z);
    CHECK_FAIL(clt_net_load_npz(b, ck), CLT_ERR_FORMAT, "momentum/", "not a parameter");

    const char *ck2 = path_of("ck2.npz");
    REQUIRE_OK(clt_npz_writer_create(ck2, 1, &w));
    CHECK_OK(clt_net_npz_add(w, b, 1, "m/"));
    CHECK_OK(clt_npz_writer_commit(w));
    clt_npz_writer_destroy(w);
    REQUIRE_OK(clt_npz_read(ck2, &z));
    size_t na;
    float *pa = params_of(a, &na), *at = pa;
    for (int i = 0; i < clt_net_param_count(a); i++) {
        const clt_param *p = clt_net_param_at(a, i);
        char key[sizeof p->name + 8];
        snprintf(key, sizeof key, "m/%s", p->name);
        const clt_npz_entry *e = clt_npz_get(z, key);
        CHECK(e && e->numel == p->numel && memcmp(e->data, at, (size_t)p->numel * 4) == 0,
              "%s: momentum round trip differs", key);
        at += p->numel;
    }
    free(pa);
    clt_npz_destroy(z);
    REQUIRE_OK(clt_npz_writer_create(ck2, 0, &w));
    CHECK_FAIL(clt_net_npz_add(w, a, 1, "m/"), CLT_ERR_INVALID_ARG, "no optimizer state slot 0");
    CHECK_FAIL(clt_npz_writer_commit(w), CLT_ERR_INVALID_ARG, "earlier call");
    clt_npz_writer_destroy(w);
    clt_net_destroy(am);

    clt_net_destroy(a);
    clt_net_destroy(b);
    unlink(path);
    unlink(bad);
    unlink(ck);
    unlink(ck2);
}

/* A non-finite loss: training blames the learning rate, evaluation (which
 * has none) the values. */
static void nonfinite_loss(clt_device *dev)
{
    clt_net *net;
    REQUIRE_OK(clt_net_create(dev, "flatten,dense:2", 1, 2, 2, &net));
    float w[8] = {NAN, 0, 0, 0, 0, 0, 0, 0}, x[4] = {1, 1, 1, 1};
    REQUIRE_OK(clt_net_param_set(net, "1.weight", w, 8));
    int32_t label = 0;
    REQUIRE_OK(clt_net_forward(net, x, 1, 0));
    CHECK_FAIL(clt_net_loss(net, &label, NULL, NULL), CLT_ERR_NUMERIC, "evaluation loss is NaN");
    CHECK(!strstr(clt_last_error(), "learning rate"), "evaluation blames the learning rate: %s", clt_last_error());
    REQUIRE_OK(clt_net_forward(net, x, 1, 1));
    CHECK_FAIL(clt_net_loss(net, &label, NULL, NULL), CLT_ERR_NUMERIC, "training diverged");
    clt_net_destroy(net);
}

/* A diverged net's parameters are not written: the file already there
 * (a run's last good checkpoint) stays as it was. */
static void nonfinite_save(clt_device *dev)
{
    clt_net *net;
    REQUIRE_OK(clt_net_create(dev, "flatten,dense:2", 1, 2, 2, &net));
    char path[4200];
    snprintf(path, sizeof path, "%s/good.npz", dir);
    REQUIRE_OK(clt_net_save_npz(net, path));
    struct stat before, after;
    CHECK(stat(path, &before) == 0, "%s not written", path);
    float w[8] = {0, 0, 0, 0, 0, INFINITY, 0, 0};
    REQUIRE_OK(clt_net_param_set(net, "1.weight", w, 8));
    CHECK_FAIL(clt_net_save_npz(net, path), CLT_ERR_NUMERIC, "1.weight", "+inf at index (1, 1)", "diverged");
    CHECK(stat(path, &after) == 0 && after.st_ino == before.st_ino && after.st_size == before.st_size,
          "the good file was replaced");
    unlink(path);
    clt_net_destroy(net);
}

static long max_rss_kb(void)
{
    struct rusage u;
    return getrusage(RUSAGE_SELF, &u) == 0 ? u.ru_maxrss : 0;
}

/* A 256 MiB zip bomb (about 250 KB) under a parameter's name is refused
 * from its header, before it is inflated: the peak memory barely moves. */
static void bomb(clt_device *dev)
{
    clt_net *net;
    REQUIRE_OK(clt_net_create(dev, "lenet", 1, 28, 28, &net));
    size_t hn;
    uint8_t *hdr = zb_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (65536, 1024), }", 0, NULL, 0, &hn);
    zb_entry e = {.name = "0.weight.npy", .data = hdr, .n = hn, .method = 8, .zeros = (uint64_t)256 << 20};
    size_t zn;
    uint8_t *zip = zb_build(&e, 1, NULL, &zn);
    const char *path = path_of("bomb.npz");
    zb_write_file(path, zip, zn);
    long before = max_rss_kb();
    CHECK_FAIL(clt_net_load_npz(net, path), CLT_ERR_FORMAT, "\"0.weight\"", "(65536, 1024) in the file");
    long grew = max_rss_kb() - before;
    CHECK(grew < 64 * 1024, "refusing a %zu-byte bomb raised the peak memory by %ld KiB", zn, grew);
    unlink(path);
    free(zip);
    free(hdr);
    clt_net_destroy(net);
}

int main(void)
{
    test_need_devices(1);
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/clt-npz-net-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    clt_device *dev;
    REQUIRE_OK(clt_device_open(0, &dev));
    save_and_load(dev);
    bomb(dev);
    nonfinite_loss(dev);
    nonfinite_save(dev);
    clt_device_destroy(dev);
    CHECK(rmdir(dir) == 0, "files left in %s", dir);
    free_paths();
    return test_result();
}
