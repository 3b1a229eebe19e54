/* The data-parallel trainer: k devices equal one device (equal, uneven and
 * empty-shard splits), replicas stay identical, small buckets, evaluation
 * split across devices, and a failure on one device stops cleanly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pthread.h>

#include "check.h"
#include "tmpdir.h"
#include "trainer_util.h"
#include "runtime/device_impl.h"
#include "parallel/test_hooks.h"
#include "parallel/trainer.h"
#include "runtime/svm.h"

#define SPEC "conv:4:3,relu,maxpool:2,conv:6:3:1:1,tanh,flatten,dense:16,sigmoid,dense:10"
#define C 1
#define H 12
#define W 12
#define MAXB 64

static float images[MAXB * C * H * W];
static int32_t labels[MAXB];

static void make_data(unsigned seed)
{
    for (int i = 0; i < MAXB * C * H * W; i++) {
        seed = seed * 1664525u + 1013904223u;
        images[i] = (float)(seed >> 9) / 8388608.0f;
    }
    for (int i = 0; i < MAXB; i++) labels[i] = (int32_t)((i * 7 + 3) % 10);
}

/* hooks: per device slot, the base alignment it pretends to have and
 * whether it copies gradients it could share (NULL: none). */
static clt_trainer *make_aligned(const char *spec, int sync_bn, const int *devs, int k, clt_split_policy split,
                                 const float *weights, size_t bucket, const clt_trainer_test_hooks *hooks)
{
    clt_trainer_config cfg;
    test_trainer_config(&cfg, spec, sync_bn, C, H, W, devs, k);
    cfg.split = split;
    cfg.weights = weights;
    if (bucket) cfg.bucket_bytes = bucket;
    clt_trainer *t = NULL;
    REQUIRE_OK(clt_trainer_create_with(&cfg, hooks, &t));
    return t;
}

static clt_trainer *make_spec(const char *spec, int sync_bn, const int *devs, int k, clt_split_policy split,
                              const float *weights, size_t bucket)
{
    return make_aligned(spec, sync_bn, devs, k, split, weights, bucket, NULL);
}

/* Three steps of batch b on `devs` against three plain single-device steps
 * (clt_net on device 0 with the mean gradient), which share no code with the
 * trainer's split, reduction and broadcast. */
static void equals_one_device_aligned(const char *spec, int sync_bn, const int *devs, int k, const float *weights,
                                      int b, size_t bucket, const clt_trainer_test_hooks *hooks, const char *what)
{
    clt_device *dev = NULL;
    clt_net *ref = NULL;
    REQUIRE_OK(clt_device_open(0, &dev));
    REQUIRE_OK(clt_net_create(dev, spec, C, H, W, &ref));
    REQUIRE_OK(clt_net_init(ref, 11, CLT_INIT_XAVIER));
    clt_trainer *par = make_aligned(spec, sync_bn, devs, k, weights ? CLT_SPLIT_WEIGHTS : CLT_SPLIT_EQUAL, weights,
                                    bucket, hooks);
    /* Gradients shared with the host wherever the device allows, unless
     * CLTRAIN_SHARED_GRADS=0 (the suite runs both) or the hooks say copies. */
    const int *copies = hooks ? hooks->force_copies : NULL;
    int all_shared = 1;
    for (int i = 0; i < k; i++) {
        const clt_net *net = clt_trainer_net(par, i);
        int want = clt_svm_shared(clt_net_device(net)) && !(copies && copies[i]);
        CHECK(clt_net_grads_shared(net) == want, "%s: replica %d gradients %s", what, i,
              clt_net_grads_shared(net) ? "shared, but they should be copied" : "copied, but they should be shared");
        all_shared &= want && clt_net_device(net)->info.type == CLT_DEVICE_CPU;
    }
    /* CPU replicas all sharing their memory update each other (peers.c) */
    int peer = all_shared && !(hooks && hooks->host_sum);
    CHECK(par->peer_sum == peer, "%s: replicas %s each other", what, peer ? "do not update" : "update");
    if (hooks && hooks->force_align) /* the forced alignment reached every replica's layout */
        for (int i = 0; i < k; i++)
            CHECK(clt_net_floats(clt_trainer_net(par, i), CLT_NET_GRADS) > clt_net_floats(ref, CLT_NET_GRADS),
                  "%s: replica %d laid out with the largest alignment", what, i);
    double l1 = 0, lk = 0;
    int64_t c1 = 0, ck = 0;
    for (int s = 0; s < 3; s++) {
        const float *x = images + s * 8 * C * H * W;
        const int32_t *y = labels + s * 8;
        CHECK_OK(clt_net_forward(ref, x, b, 1));
        CHECK_OK(clt_net_backward(ref, y, 1.0f / (float)b, &l1, &c1));
        CHECK_OK(clt_net_sgd_step(ref, 0.1f, 0.9f, 1e-3f));
        CHECK_OK(clt_trainer_step(par, x, y, b, &lk, &ck));
        CHECK(fabs(l1 - lk) <= 1e-5 * fabs(l1), "%s: step %d loss %.8g vs %.8g", what, s, l1, lk);
        CHECK(c1 == ck, "%s: step %d correct %lld vs %lld", what, s, (long long)c1, (long long)ck);
    }
    size_t n1, nk;
    float *p1 = test_net_params(ref, &n1), *pk = test_net_params(clt_trainer_net(par, 0), &nk);
    CHECK(n1 == nk && max_rel_err(p1, pk, n1) < 2e-5, "%s: parameters after 3 steps differ by %g", what,
          max_rel_err(p1, pk, n1));
    CHECK_OK(clt_trainer_check_replicas(par));
    for (int i = 1; i < k; i++) { /* batch-norm running statistics included */
        size_t ni;
        float *pi = test_net_params(clt_trainer_net(par, i), &ni);
        CHECK(ni == nk && max_rel_err(pk, pi, nk) == 0, "%s: replica %d's parameters and statistics differ by %g",
              what, i, max_rel_err(pk, pi, nk));
        free(pi);
    }
    clt_trainer_device_stats st[4];
    RESERVED_DIRTY(st);
    CHECK_OK(clt_trainer_stats(par, st, 4));
    int total = 0;
    for (int i = 0; i < k; i++) {
        total += st[i].shard;
        CHECK(RESERVED_ZERO(st[i]), "%s: clt_trainer_stats zeroes reserved", what);
    }
    CHECK(total == b, "%s: shards sum to %d, batch %d", what, total, b);
    free(p1);
    free(pk);
    clt_trainer_destroy(par);
    clt_net_destroy(ref);
    clt_device_destroy(dev);
}

static void equals_one_device_spec(const char *spec, int sync_bn, const int *devs, int k, const float *weights, int b,
                                   size_t bucket, const char *what)
{
    equals_one_device_aligned(spec, sync_bn, devs, k, weights, b, bucket, NULL, what);
}

static void equals_one_device(const int *devs, int k, const float *weights, int b, size_t bucket, const char *what)
{
    equals_one_device_spec(SPEC, 0, devs, k, weights, b, bucket, what);
}

#define BN_SPEC "conv:4:3:1:1,bn,relu,res:6:2,gap,dense:10"

/* Replicas updating each other's shares (peers.c: each device sums every
 * replica's gradients over its slice of a bucket and writes every
 * replica's parameters and state there) give the bits of the host sum and
 * replicated updates: SGD with momentum and Adam, synchronised batch norm,
 * small buckets (slices of a few floats, some empty), the given split.
 * Only where every replica shares its memory (else there are no peers). */
static void peers_equal_host_sum(const int *devs, int k, const float *weights, const char *what)
{
    for (int i = 0; i < k; i++) {
        clt_device_info info;
        CHECK_OK(clt_device_query(devs[i], &info));
        if (info.type != CLT_DEVICE_CPU || getenv("CLTRAIN_SHARED_GRADS")) return;
    }
    for (int adam = 0; adam < 2; adam++) {
        float *p[2];
        size_t n[2];
        for (int host = 0; host < 2; host++) {
            clt_trainer_config cfg;
            test_trainer_config(&cfg, BN_SPEC, 1, C, H, W, devs, k);
            cfg.split = weights ? CLT_SPLIT_WEIGHTS : CLT_SPLIT_EQUAL;
            cfg.weights = weights;
            cfg.bucket_bytes = 200;
            if (adam) cfg.optimizer = CLT_OPTIMIZER_ADAM, cfg.lr = 1e-3f, cfg.momentum = 0;
            clt_trainer *t = NULL;
            REQUIRE_OK(clt_trainer_create_with(&cfg, &(clt_trainer_test_hooks){.host_sum = host}, &t));
            CHECK(t->peer_sum == !host, "%s: replicas %s each other", what, host ? "update" : "do not update");
            for (int s = 0; s < 3; s++)
                CHECK_OK(clt_trainer_step(t, images + s * 8 * C * H * W, labels + s * 8, 30, NULL, NULL));
            CHECK_OK(clt_trainer_check_replicas(t));
            p[host] = test_net_params(clt_trainer_net(t, k - 1), &n[host]);
            clt_trainer_destroy(t);
        }
        CHECK(n[0] == n[1] && memcmp(p[0], p[1], n[0] * sizeof(float)) == 0,
              "%s, %s: the replicas' updates of each other differ from the host sum's", what, adam ? "Adam" : "SGD");
        free(p[0]);
        free(p[1]);
    }
}

/* Without synchronised batch norm the replicas still agree (running
 * statistics averaged after each step) and the loss falls. */
static void bn_replicas(const int *devs, int k)
{
    clt_trainer *t = make_spec(BN_SPEC, 0, devs, k, CLT_SPLIT_EQUAL, NULL, 0);
    double first = 0, last = 0;
    for (int s = 0; s < 15; s++) {
        CHECK_OK(clt_trainer_step(t, images, labels, 32, &last, NULL));
        if (s == 0) first = last;
        CHECK_OK(clt_trainer_check_replicas(t));
    }
    CHECK(last < first, "batch-norm net: loss %g -> %g", first, last);
    float a[6], b[6];
    CHECK_OK(clt_net_param_get(clt_trainer_net(t, 0), "3.bn1.running_var", a, 6));
    for (int i = 1; i < k; i++) {
        CHECK_OK(clt_net_param_get(clt_trainer_net(t, i), "3.bn1.running_var", b, 6));
        CHECK(memcmp(a, b, sizeof a) == 0, "running statistics of replica %d equal replica 0's", i);
    }
    CHECK(a[0] != 1.0f, "running statistics moved");
    clt_trainer_destroy(t);

    /* Batch norm over features needs two samples per device: a batch that
     * would leave one device a single sample is split around that. */
    t = make_spec("conv:4:3,relu,flatten,bn,dense:10", 0, devs, k, CLT_SPLIT_EQUAL, NULL, 0);
    CHECK_OK(clt_trainer_step(t, images, labels, k + 1, NULL, NULL));
    CHECK_OK(clt_trainer_step(t, images, labels, 2 * k - 1, NULL, NULL));
    CHECK_OK(clt_trainer_check_replicas(t));
    clt_trainer_destroy(t);
}

static void split_sizes(void)
{
    int s[4];
    CHECK_OK(clt_split_sizes(10, 3, NULL, s));
    CHECK(s[0] == 4 && s[1] == 3 && s[2] == 3, "equal split of 10: %d %d %d", s[0], s[1], s[2]);
    CHECK_OK(clt_split_sizes(1, 3, NULL, s));
    CHECK(s[0] == 1 && s[1] == 0 && s[2] == 0, "batch smaller than k: %d %d %d", s[0], s[1], s[2]);
    CHECK_OK(clt_split_sizes(256, 2, (float[]){1, 3}, s));
    CHECK(s[0] == 64 && s[1] == 192, "weights 1:3 of 256: %d %d", s[0], s[1]);
    CHECK(clt_split_sizes(5, 2, (float[]){0, 0}, s) == CLT_ERR_INVALID_ARG, "zero weights refused");
    CHECK(clt_split_sizes(5, 2, (float[]){1, NAN}, s) == CLT_ERR_INVALID_ARG, "NaN weight refused");

    /* The auto split's units of 32 (clt_split_units). */
    CHECK(clt_split_units(255, 2, (float[]){1, 1}, NULL, s) == 0, "255 samples are under 4 units a device");
    CHECK(clt_split_units(256, 2, (float[]){1, 1}, NULL, s) && s[0] == 128 && s[1] == 128, "equal rates: %d %d", s[0],
          s[1]);
    CHECK(clt_split_units(300, 2, (float[]){1, 3}, NULL, s) && s[0] == 64 && s[1] == 236,
          "rates 1:3 of 300: %d %d (units of 32, the rest to the faster)", s[0], s[1]);
    /* proportional rounding of 9 units at 1:1.2 gives 4/5 (predicted 128 vs
     * 133 time units); the search keeps it, as moving a unit makes it worse */
    CHECK(clt_split_units(288, 2, (float[]){1.0f, 1.2f}, NULL, s) && s[0] == 128 && s[1] == 160,
          "rates 1:1.2 of 288: %d %d", s[0], s[1]);
    /* at 1:1.1, 256/256 predicts 256; the split in use stays while it
     * predicts at most 5% more (224/288: 261.8), not beyond (192/320: 290.9) */
    CHECK(clt_split_units(512, 2, (float[]){1.0f, 1.1f}, NULL, s) && s[0] == 256 && s[1] == 256,
          "rates 1:1.1 of 512: %d %d", s[0], s[1]);
    CHECK(clt_split_units(512, 2, (float[]){1.0f, 1.1f}, (int[]){224, 288}, s) && s[0] == 224 && s[1] == 288,
          "a split 2%% slower than the best stays: %d %d", s[0], s[1]);
    CHECK(clt_split_units(512, 2, (float[]){1.0f, 1.1f}, (int[]){192, 320}, s) && s[0] == 256 && s[1] == 256,
          "a split 14%% slower is replaced: %d %d", s[0], s[1]);
    CHECK(clt_split_units(512, 2, (float[]){1.0f, 1.1f}, (int[]){200, 200}, s) && s[0] == 256 && s[1] == 256,
          "a previous split of another batch is ignored: %d %d", s[0], s[1]);
    CHECK(clt_split_units(512, 3, (float[]){1, 1, 0}, NULL, s) == 0, "a device without a rate: no units");
    int sum = 0;
    CHECK(clt_split_units(1000, 3, (float[]){5, 1, 2}, NULL, s), "3 devices");
    for (int i = 0; i < 3; i++) sum += s[i];
    CHECK(sum == 1000 && s[1] % 32 == 0 && s[2] % 32 == 0, "3 devices 5:1:2 of 1000: %d %d %d", s[0], s[1], s[2]);
}

static void collectives(int k)
{
    clt_device *dev[3] = {0};
    clt_tensor *t[3] = {0};
    int64_t shape[2] = {37, 3}; /* 111: not a multiple of anything */
    float host[111], got[111];
    for (int i = 0; i < k; i++) {
        REQUIRE_OK(clt_device_open(i, &dev[i]));
        REQUIRE_OK(clt_tensor_create(dev[i], CLT_DTYPE_FLOAT32, 2, shape, &t[i]));
        for (int j = 0; j < 111; j++) host[j] = (float)(j * (i + 1)) - 0.5f * (float)i;
        CHECK_OK(clt_tensor_upload(t[i], host, 111));
    }
    CHECK_OK(clt_allreduce_sum(t, k));
    for (int i = 0; i < k; i++) {
        CHECK_OK(clt_tensor_download(t[i], got, 111));
        int ok = 1;
        for (int j = 0; j < 111; j++) {
            float want = 0;
            for (int d = 0; d < k; d++) want += (float)(j * (d + 1)) - 0.5f * (float)d;
            ok &= fabsf(got[j] - want) <= 1e-5f * fabsf(want) + 1e-6f;
        }
        CHECK(ok, "all-reduce result on device %d", i);
    }
    for (int j = 0; j < 111; j++) host[j] = (float)j * 0.25f;
    CHECK_OK(clt_tensor_upload(t[0], host, 111));
    CHECK_OK(clt_broadcast(t[0], t + 1, k - 1));
    for (int i = 1; i < k; i++) {
        CHECK_OK(clt_tensor_download(t[i], got, 111));
        CHECK(memcmp(got, host, sizeof got) == 0, "broadcast to device %d", i);
    }
    /* A host batch of 7 samples of (2, 3) split 1:2:... over the devices. */
    float batch[7 * 6], back[7 * 6];
    for (int j = 0; j < 42; j++) batch[j] = (float)j;
    clt_tensor *shards[3];
    CHECK_OK(clt_split_batch(batch, 7, 2, (int64_t[]){2, 3}, dev, k, (float[]){1, 2, 0}, shards));
    int sizes[3], at = 0;
    CHECK_OK(clt_split_sizes(7, k, (float[]){1, 2, 0}, sizes));
    for (int i = 0; i < k; i++) {
        CHECK((shards[i] == NULL) == (sizes[i] == 0), "shard %d exists iff non-empty", i);
        if (!shards[i]) continue;
        CHECK(clt_tensor_dim(shards[i], 0) == sizes[i] && clt_tensor_dim(shards[i], 2) == 3 &&
                  clt_tensor_device(shards[i]) == dev[i],
              "shard %d shape and device", i);
        CHECK_OK(clt_tensor_download(shards[i], back + at * 6, sizes[i] * 6));
        at += sizes[i];
        clt_tensor_destroy(shards[i]);
    }
    CHECK(at == 7 && memcmp(batch, back, sizeof batch) == 0, "shards hold the batch in order");
    clt_tensor *odd = NULL;
    REQUIRE_OK(clt_tensor_create(dev[1], CLT_DTYPE_FLOAT32, 1, (int64_t[]){5}, &odd));
    clt_tensor *pair[2] = {t[0], odd};
    CHECK(clt_allreduce_sum(pair, 2) == CLT_ERR_SHAPE, "mismatched shapes refused");
    clt_tensor_destroy(odd);
    for (int i = 0; i < k; i++) {
        clt_tensor_destroy(t[i]);
        clt_device_destroy(dev[i]);
    }
}

static void replicas_and_failure(const int *devs, int k)
{
    clt_trainer_config cfg;
    clt_trainer_config_default(&cfg);
    cfg.spec = SPEC;
    cfg.channels = C, cfg.height = H, cfg.width = W;
    cfg.devices = devs;
    cfg.n_devices = k;
    cfg.momentum = 0.5f;
    cfg.lr = 0.05f;
    cfg.check_every = 1; /* compares checksums after every step */
    cfg.bucket_bytes = 256; /* many buckets, sizes not multiples of params */
    cfg.split = CLT_SPLIT_AUTO;
    clt_trainer *t = NULL;
    REQUIRE_OK(clt_trainer_create(&cfg, &t));
    double first = 0, last = 0;
    for (int s = 0; s < 40; s++) {
        double loss;
        CHECK_OK(clt_trainer_step(t, images, labels, 32, &loss, NULL));
        if (s == 0) first = loss;
        last = loss;
    }
    CHECK(last < first, "loss falls on a repeated batch: %g -> %g", first, last);
    double ml, acc;
    clt_trainer_destroy(t);

    /* Auto split of a large batch: whole units of 32 samples (what the CPU
     * kernels pad a shard to), the rest to one device, summing to the batch. */
    enum { BIG = 4 * 32 * 4 + 5 }; /* at least 4 units per device, for up to 4 */
    static float big_images[BIG * C * H * W];
    static int32_t big_labels[BIG];
    for (int i = 0; i < BIG; i++) {
        memcpy(big_images + (size_t)i * C * H * W, images + (size_t)(i % MAXB) * C * H * W, sizeof(float) * C * H * W);
        big_labels[i] = labels[i % MAXB];
    }
    cfg.check_every = 0;
    REQUIRE_OK(clt_trainer_create(&cfg, &t));
    int bad = 0;
    for (int step = 0; step < 25; step++) {
        CHECK_OK(clt_trainer_step(t, big_images, big_labels, BIG, NULL, NULL));
        clt_trainer_device_stats st[8];
        CHECK_OK(clt_trainer_stats(t, st, k));
        int sum = 0, off_unit = 0;
        for (int i = 0; i < k; i++) {
            sum += st[i].shard;
            off_unit += st[i].shard % 32 != 0;
        }
        bad += sum != BIG || off_unit > 1;
    }
    CHECK(bad == 0, "auto split of %d samples: %d steps with shards off whole units of 32", BIG, bad);
    clt_trainer_destroy(t);

    /* A device that fails mid-step: a clean error naming it, no hang. */
    cfg.check_every = 0;
    REQUIRE_OK(clt_trainer_create(&cfg, &t));
    clt_trainer_inject_failure(t, k - 1, 2);
    CHECK_OK(clt_trainer_step(t, images, labels, 32, NULL, NULL));
    clt_status s = clt_trainer_step(t, images, labels, 32, NULL, NULL);
    CHECK(s == CLT_ERR_DEVICE_LOST, "injected failure gave %s", clt_status_name(s));
    char want[32];
    snprintf(want, sizeof want, "device %d", devs[k - 1]);
    CHECK(strstr(clt_last_error(), want) != NULL, "error names the device: %s", clt_last_error());
    s = clt_trainer_step(t, images, labels, 32, NULL, NULL);
    CHECK(s == CLT_ERR_DEVICE_LOST && strstr(clt_last_error(), "earlier failure"), "later steps refused: %s",
          clt_last_error());
    /* a step that failed half way may have updated part of a replica: no checkpoint of it */
    char dir[256], path[300];
    if (tmpdir_make(dir, sizeof dir, "cltrain-failed")) {
        snprintf(path, sizeof path, "%s/after-failure.ck", dir);
        s = clt_trainer_save_checkpoint(t, path, NULL);
        CHECK(s == CLT_ERR_DEVICE_LOST && strstr(clt_last_error(), "earlier failure") && access(path, F_OK) != 0,
              "checkpoint after a failed step refused: %s (%s)", clt_status_name(s), clt_last_error());
        tmpdir_remove(dir);
    }
    (void)ml;
    (void)acc;
    clt_trainer_destroy(t);
}

/* A replaced host sum (cltrain_diag.h) is the one the steps use: this one
 * counts its calls and sums in device order like the default, so the step
 * still equals one device's. */
typedef struct counted_sum {
    int calls; /* updated from several worker threads */
    pthread_mutex_t mu;
} counted_sum;

static clt_status counting_sum(void *user, const float *const *in, int k, float *out, size_t count, float scale)
{
    counted_sum *c = user;
    pthread_mutex_lock(&c->mu);
    c->calls++;
    pthread_mutex_unlock(&c->mu);
    for (size_t i = 0; i < count; i++) {
        float v = 0;
        for (int d = 0; d < k; d++) v += in[d][i];
        out[i] = v * scale;
    }
    return CLT_OK;
}

static void replaced_reduce(const int *devs, int k)
{
    clt_trainer *ref = make_spec(SPEC, 0, devs, k, CLT_SPLIT_EQUAL, NULL, 0);
    clt_trainer *t = make_spec(SPEC, 0, devs, k, CLT_SPLIT_EQUAL, NULL, 0);
    counted_sum c = {0, PTHREAD_MUTEX_INITIALIZER};
    CHECK_OK(clt_trainer_set_reduce(t, counting_sum, &c));
    double lr, lt;
    CHECK_OK(clt_trainer_step(ref, images, labels, 24, &lr, NULL));
    CHECK_OK(clt_trainer_step(t, images, labels, 24, &lt, NULL));
    CHECK(c.calls > 0, "the replaced reduce was never called");
    size_t nr, nt;
    float *pr = test_net_params(clt_trainer_net(ref, 0), &nr), *pt = test_net_params(clt_trainer_net(t, 0), &nt);
    CHECK(nr == nt && max_rel_err(pr, pt, nr) == 0, "replaced reduce: parameters differ by %g", max_rel_err(pr, pt, nr));
    int before = c.calls;
    CHECK_OK(clt_trainer_set_reduce(t, NULL, NULL)); /* back to the default */
    CHECK_OK(clt_trainer_step(t, images, labels, 24, NULL, NULL));
    CHECK(c.calls == before, "the default reduce still calls the replaced one");
    CHECK(clt_trainer_set_reduce(NULL, counting_sum, &c) == CLT_ERR_INVALID_ARG, "NULL trainer accepted");
    free(pr);
    free(pt);
    clt_trainer_destroy(t);
    clt_trainer_destroy(ref);
}

/* The pipeline overlaps: with a bucket per parameter, the host sums the last
 * layers' buckets while the devices still run the convolutions' backward
 * (the host sum: replicas reading each other's gradients sum nothing here),
 * with the transfers on the compute queue (bit 0 of `required`) and on a
 * queue of their own (bit 1), and both give the same bits. Intel's CPU
 * runtime runs a second queue's reads only once its compute queue is idle
 * (measured: no read ends before its backward does), so across vendors
 * overlap is required on the compute queue only. */
static void overlap(const int *devs, int k, int required)
{
    clt_trainer *t[2];
    float *p[2];
    size_t n[2];
    for (int m = 0; m < 2; m++) { /* transfers on the compute queue (CPU default), on a queue of their own */
        const char *how = m ? "separate transfer queues" : "transfers on the compute queue";
        t[m] = make_aligned("conv:32:3:1:1,relu,conv:32:3:1:1,relu,conv:32:3:1:1,relu,flatten,dense:32,relu,dense:10",
                            0, devs, k, CLT_SPLIT_EQUAL, NULL, 64, &(clt_trainer_test_hooks){.host_sum = 1});
        for (int i = 0; i < k; i++) CHECK_OK(clt_pipeline_use_queue(&t[m]->workers[i], m));
        int early = 0;
        double hidden = 0;
        for (int s = 0; s < 5; s++) {
            CHECK_OK(clt_trainer_step(t[m], images, labels, MAXB, NULL, NULL));
            clt_trainer_device_stats st[CLT_MAX_DEVICES];
            CHECK_OK(clt_trainer_stats(t[m], st, CLT_MAX_DEVICES));
            for (int i = 0; i < k; i++) {
                early += t[m]->workers[i].early_sums;
                hidden += st[i].hidden_s;
                CHECK(st[i].compute_s <= st[i].step_s && st[i].exposed_s >= 0, "%s, device %d: compute %g, step %g",
                      how, i, st[i].compute_s, st[i].step_s);
            }
        }
        CHECK(!(required >> m & 1) || (early > 0 && hidden > 0), "%s: %d buckets summed during backward (%g s hidden)", how,
              early, hidden);
        CHECK_OK(clt_trainer_check_replicas(t[m]));
        p[m] = test_net_params(clt_trainer_net(t[m], 0), &n[m]);
    }
    CHECK(n[0] == n[1] && memcmp(p[0], p[1], n[0] * sizeof(float)) == 0,
          "the same bits whichever queue carries the transfers");
    for (int m = 0; m < 2; m++) {
        free(p[m]);
        clt_trainer_destroy(t[m]);
    }
}

/* Config errors are refused at create, before any device work. */
static void config_errors(const int *devs, int k)
{
    clt_trainer_config cfg;
    clt_trainer *t = NULL;
    clt_trainer_config_default(&cfg);
    cfg.devices = devs;
    cfg.n_devices = k;
    cfg.split = CLT_SPLIT_WEIGHTS;
    float zero[2] = {0, 0};
    cfg.weights = zero;
    CHECK_FAIL(clt_trainer_create(&cfg, &t), CLT_ERR_INVALID_ARG, "sum to 0");
    CHECK(t == NULL, "a refused config left a trainer");
    clt_trainer_config_default(&cfg);
    cfg.reserved[sizeof cfg.precision + 3] = 1; /* past the fields laid over it */
    char want[32];
    snprintf(want, sizeof want, "reserved[%zu]", sizeof cfg.precision + 3);
    CHECK_FAIL(clt_trainer_create(&cfg, &t), CLT_ERR_INVALID_ARG, want);
    clt_trainer_config_default(&cfg);
    cfg.precision = (clt_precision)7;
    CHECK_FAIL(clt_trainer_create(&cfg, &t), CLT_ERR_INVALID_ARG, "precision 7");
}

/* The suite `vendors`: PoCL beside Intel's CPU runtime (two platforms, two
 * compilers) in one trainer, against the single PoCL device. */
static int vendors(void)
{
    int n = 0, intel = -1, pocl[2] = {-1, -1}, np = 0;
    CHECK_OK(clt_device_count(&n));
    for (int i = 0; i < n; i++) {
        clt_device_info info;
        CHECK_OK(clt_device_query(i, &info));
        if (strstr(info.platform, "Intel") && intel < 0) intel = i;
        else if (strstr(info.platform, "Portable") && np < 2) pocl[np++] = i;
    }
    if (intel < 0 || np < 1 || pocl[0] != 0) {
        fprintf(stderr, "vendors: needs PoCL as device 0 and Intel's OpenCL CPU runtime (tools/setup --intel-cpu)\n");
        return 77;
    }
    int mix[2] = {0, intel}, flipped[2] = {intel, 0};
    equals_one_device(mix, 2, NULL, 24, 0, "PoCL + Intel, equal");
    equals_one_device(flipped, 2, (float[]){3, 1}, 23, 300, "Intel + PoCL, 3:1, small buckets");
    equals_one_device_spec(BN_SPEC, 1, mix, 2, NULL, 24, 0, "PoCL + Intel, synchronised batch norm");
    equals_one_device_spec(BN_SPEC, 1, mix, 2, (float[]){2, 1}, 21, 0, "PoCL + Intel, sync batch norm, 2:1");
    bn_replicas(mix, 2);
    replaced_reduce(mix, 2);
    overlap(mix, 2, 1); /* Intel: no overlap with a separate transfer queue */
    peers_equal_host_sum(flipped, 2, (float[]){3, 1}, "Intel + PoCL, 3:1");
    if (np == 2) {
        int three[3] = {0, intel, pocl[1]};
        equals_one_device(three, 3, (float[]){2, 1, 1}, 21, 100, "PoCL + Intel + PoCL, 2:1:1, small buckets");
        equals_one_device_spec(BN_SPEC, 1, three, 3, NULL, 30, 0, "PoCL + Intel + PoCL, sync batch norm");
        peers_equal_host_sum(three, 3, (float[]){1, 2, 1}, "PoCL + Intel + PoCL, 1:2:1");
        bn_replicas(three, 3);
    }
    return test_result();
}

int main(int argc, char **argv)
{
    alarm(280); /* a hang fails the test instead of blocking the suite */
    make_data(5);
    if (argc > 1 && strcmp(argv[1], "--vendors") == 0) return vendors();
    split_sizes();
    int n = test_need_devices(2);
    int two[2] = {0, 1}, three[3] = {0, 1, 2};
    equals_one_device(two, 2, NULL, 24, 0, "2 devices, equal");
    equals_one_device(two, 2, (float[]){1, 3}, 23, 0, "2 devices, 1:3");
    equals_one_device(two, 2, NULL, 1, 0, "2 devices, batch 1 (empty shard)");
    equals_one_device(two, 2, (float[]){0, 1}, 9, 300, "2 devices, all on one, small buckets");
    equals_one_device_spec(BN_SPEC, 1, two, 2, NULL, 24, 0, "2 devices, synchronised batch norm");
    /* Devices of different base alignments (as NVIDIA's 4096 bits beside
     * PoCL's 1024) share the largest one's layout. */
    equals_one_device_aligned(SPEC, 0, two, 2, NULL, 24, 300, &(clt_trainer_test_hooks){.force_align = (size_t[]){0, 2048}},
                              "2 devices, alignments differ");
    equals_one_device_aligned(BN_SPEC, 1, two, 2, (float[]){1, 2}, 24, 0,
                              &(clt_trainer_test_hooks){.force_align = (size_t[]){4096, 0}},
                              "2 devices, alignments differ, sync batch norm");
    /* One replica copying its gradients beside one sharing them (a GPU
     * beside a CPU), with small buckets, both ways round. */
    equals_one_device_aligned(SPEC, 0, two, 2, (float[]){1, 3}, 23, 300, &(clt_trainer_test_hooks){.force_copies = (int[]){1, 0}},
                              "2 devices, the first copies its gradients");
    equals_one_device_aligned(BN_SPEC, 1, two, 2, NULL, 24, 0, &(clt_trainer_test_hooks){.force_copies = (int[]){0, 1}},
                              "2 devices, the second copies its gradients, sync batch norm");
    equals_one_device_spec(BN_SPEC, 1, two, 2, (float[]){1, 0}, 12, 0, "2 devices, sync batch norm, empty shard");
    /* the running statistics of a device that ran nothing: taken from one
     * that ran (sync), left out of the average (not sync) */
    equals_one_device_spec(BN_SPEC, 1, two, 2, (float[]){0, 1}, 12, 0, "2 devices, sync batch norm, first shard empty");
    equals_one_device_spec(BN_SPEC, 0, two, 2, (float[]){0, 1}, 12, 0, "2 devices, batch norm, first shard empty");
    equals_one_device_spec(BN_SPEC, 0, two, 2, (float[]){1, 0}, 12, 0, "2 devices, batch norm, second shard empty");
    bn_replicas(two, 2);
    collectives(2);
    replicas_and_failure(two, 2);
    replaced_reduce(two, 2);
    overlap(two, 2, 3);
    peers_equal_host_sum(two, 2, NULL, "2 devices");
    peers_equal_host_sum(two, 2, (float[]){0, 1}, "2 devices, an empty shard");
    config_errors(two, 2);
    if (n >= 3) {
        equals_one_device(three, 3, NULL, 2, 0, "3 devices, batch 2");
        equals_one_device(three, 3, (float[]){2, 1, 1}, 21, 100, "3 devices, 2:1:1, small buckets");
        equals_one_device_spec(BN_SPEC, 1, three, 3, (float[]){1, 2, 3}, 30, 0, "3 devices, sync batch norm");
        bn_replicas(three, 3);
        collectives(3);
        replicas_and_failure(three, 3);
        peers_equal_host_sum(three, 3, (float[]){1, 2, 3}, "3 devices, 1:2:3");
    }
    return test_result();
}
