/* The trainer's optimizers (SGD with Nesterov, Adam, AdamW), gradient
 * clipping and learning-rate changes: k devices against a one-device
 * reference (clt_net steps with the mean gradient, clipped here in double),
 * 1 device and 2 devices alike; checkpoints carry Adam's state and step
 * count, resume bit for bit, and refuse another optimizer's state. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../data/idx_write.h"
#include "check.h"
#include "io/npz.h"
#include "parallel/trainer.h"

#define SPEC "conv:4:3,relu,maxpool:2,flatten,dense:16,tanh,dense:10"
#define C 1
#define H 10
#define W 10
#define B 12
#define STEPS 4

static float images[STEPS * B * C * H * W];
static int32_t labels[STEPS * B];

static void make_data(void)
{
    unsigned seed = 17;
    for (size_t i = 0; i < sizeof images / sizeof images[0]; i++) {
        seed = seed * 1664525u + 1013904223u;
        images[i] = (float)(seed >> 9) / 8388608.0f;
    }
    for (int i = 0; i < STEPS * B; i++) labels[i] = (int32_t)((i * 7 + 3) % 10);
}

static void config_for(clt_trainer_config *cfg, clt_optimizer kind, const int *devs, int k)
{
    clt_trainer_config_default(cfg);
    cfg->spec = SPEC;
    cfg->channels = C, cfg->height = H, cfg->width = W;
    cfg->devices = devs, cfg->n_devices = k;
    cfg->seed = 3;
    cfg->init = CLT_INIT_XAVIER;
    cfg->optimizer = kind;
    cfg->lr = kind == CLT_OPTIMIZER_SGD ? 0.1f : 0.01f;
    cfg->momentum = kind == CLT_OPTIMIZER_SGD ? 0.9f : 0.0f;
    cfg->nesterov = kind == CLT_OPTIMIZER_SGD;
    cfg->weight_decay = 1e-2f;
    cfg->bucket_bytes = 512; /* several buckets */
}

static float lr_at(int step) { return 0.01f * (float)(step + 1) / STEPS; } /* a warmup */

static float *params(clt_net *net, size_t *n)
{
    *n = clt_net_floats(net, CLT_NET_PARAMS);
    float *p = malloc(*n * sizeof *p);
    CHECK_OK(clt_net_read(net, CLT_NET_PARAMS, (clt_span){0, *n}, p, NULL));
    return p;
}

/* STEPS plain steps of one net (device 0) with the mean gradient, clipped
 * in double as torch.nn.utils.clip_grad_norm_ does; lr from lr_at when
 * `vary`. */
static float *reference(const clt_trainer_config *cfg, int vary, size_t *n)
{
    clt_device *dev = NULL;
    clt_net *net = NULL;
    REQUIRE_OK(clt_device_open(0, &dev));
    REQUIRE_OK(clt_net_create(dev, SPEC, C, H, W, &net));
    REQUIRE_OK(clt_net_init(net, cfg->seed, cfg->init));
    REQUIRE_OK(clt_net_set_label_smoothing(net, cfg->label_smoothing));
    clt_optim_settings s = {cfg->optimizer, cfg->lr,   cfg->momentum, cfg->weight_decay,
                            cfg->nesterov,  cfg->beta1, cfg->beta2,   cfg->eps};
    size_t flat = clt_net_floats(net, CLT_NET_GRADS);
    float *g = malloc(flat * sizeof *g);
    for (int step = 0; step < STEPS; step++) {
        double loss;
        int64_t correct;
        CHECK_OK(clt_net_forward(net, images + (size_t)step * B * C * H * W, B, 1));
        CHECK_OK(clt_net_backward(net, labels + step * B, 1.0f / B, &loss, &correct));
        if (cfg->clip_grad_norm > 0) {
            CHECK_OK(clt_net_read(net, CLT_NET_GRADS, (clt_span){0, flat}, g, NULL));
            double sq = 0;
            for (size_t i = 0; i < flat; i++) sq += (double)g[i] * g[i];
            double coef = cfg->clip_grad_norm / (sqrt(sq) + 1e-6);
            CHECK(coef < 1, "clipping at %g is active (norm %g)", cfg->clip_grad_norm, sqrt(sq));
            for (size_t i = 0; i < flat; i++) g[i] *= (float)coef;
            CHECK_OK(clt_net_write(net, CLT_NET_GRADS, (clt_span){0, flat}, g, NULL));
        }
        if (vary) s.lr = lr_at(step);
        CHECK_OK(clt_net_optim_update(net, &s, step + 1, (clt_span){0, flat}));
    }
    float *p = params(net, n);
    free(g);
    clt_net_destroy(net);
    clt_device_destroy(dev);
    return p;
}

/* Steps [from, to) of a trainer. */
static void run(clt_trainer *t, int from, int to, int vary)
{
    for (int step = from; step < to; step++) {
        if (vary) CHECK_OK(clt_trainer_set_lr(t, lr_at(step)));
        CHECK_OK(clt_trainer_step(t, images + (size_t)step * B * C * H * W, labels + step * B, B, NULL, NULL));
    }
}

typedef struct trainer_run {
    float *params;
    size_t n;
    double loss, acc;
} trainer_run;

static double max_rel(const float *a, const float *b, size_t n)
{
    double worst = 0, scale = 1e-12;
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)a[i] - b[i])), scale = fmax(scale, fabs(b[i]));
    return worst / scale;
}

static void equals_reference(clt_optimizer kind, float clip, float smooth, int vary, const int *devs, int k,
                             const char *what)
{
    clt_trainer_config cfg;
    config_for(&cfg, kind, devs, k);
    cfg.clip_grad_norm = clip;
    cfg.label_smoothing = smooth;
    size_t nr, nt;
    float *ref = reference(&cfg, vary, &nr);
    clt_trainer *t = NULL;
    REQUIRE_OK(clt_trainer_create(&cfg, &t));
    run(t, 0, STEPS, vary);
    float *got = params(clt_trainer_net(t, 0), &nt);
    CHECK(nr == nt && max_rel(got, ref, nr) < 2e-5, "%s on %d device(s): parameters differ from the reference by %g",
          what, k, max_rel(got, ref, nr));
    CHECK(clt_trainer_optimizer_steps(t) == STEPS, "%s: %lld optimizer steps", what,
          (long long)clt_trainer_optimizer_steps(t));
    CHECK_OK(clt_trainer_check_replicas(t));
    free(ref), free(got);
    clt_trainer_destroy(t);
}

/* Two steps, save, a fresh trainer loads and makes the rest: the same bits
 * as the run without a stop. */
static void resume_bit_exact(clt_optimizer kind, const int *devs, int k)
{
    /* a directory of its own: the suite runs this test twice at once
     * (trainer-optim and trainer-optim-copies) */
    char dir[256], path[300];
    tw_mkdtemp(dir, sizeof dir, "resume");
    snprintf(path, sizeof path, "%s/optim_resume.ck", dir);
    clt_trainer_config cfg;
    config_for(&cfg, kind, devs, k);
    clt_trainer *whole = NULL, *first = NULL, *second = NULL;
    REQUIRE_OK(clt_trainer_create(&cfg, &whole));
    run(whole, 0, STEPS, 1);
    REQUIRE_OK(clt_trainer_create(&cfg, &first));
    run(first, 0, 2, 1);
    CHECK_OK(clt_trainer_save_checkpoint(first, path, NULL));
    cfg.seed = 99; /* the checkpoint replaces the start */
    REQUIRE_OK(clt_trainer_create(&cfg, &second));
    CHECK_OK(clt_trainer_load_checkpoint(second, path, NULL));
    CHECK(clt_trainer_optimizer_steps(second) == 2, "loaded step count %lld",
          (long long)clt_trainer_optimizer_steps(second));
    run(second, 2, STEPS, 1);
    size_t na, nb;
    float *a = params(clt_trainer_net(whole, 0), &na), *b = params(clt_trainer_net(second, 0), &nb);
    CHECK(na == nb && memcmp(a, b, na * sizeof *a) == 0, "%s on %d device(s): resumed run differs (%g)",
          clt_optim_find(kind)->name, k, max_rel(a, b, na));
    if (kind != CLT_OPTIMIZER_SGD) {
        clt_npz *z = NULL;
        REQUIRE_OK(clt_npz_read(path, &z));
        CHECK(clt_npz_get(z, "adam/m/0.weight") && clt_npz_get(z, "adam/v/4.bias") &&
                  !clt_npz_get(z, "momentum/0.weight"),
              "Adam checkpoint entries");
        clt_npz_destroy(z);
        /* another optimizer's state is refused, naming both */
        clt_trainer_config sgd;
        config_for(&sgd, CLT_OPTIMIZER_SGD, devs, k);
        clt_trainer *other = NULL;
        REQUIRE_OK(clt_trainer_create(&sgd, &other));
        CHECK_FAIL(clt_trainer_load_checkpoint(other, path, NULL), CLT_ERR_FORMAT, "holds adam state",
                   "optimizer is sgd");
        clt_trainer_destroy(other);
        /* SGD without momentum keeps no state: Adam loads its parameters
         * and starts its bias correction afresh */
        sgd.momentum = 0, sgd.nesterov = 0;
        REQUIRE_OK(clt_trainer_create(&sgd, &other));
        run(other, 0, 2, 0);
        CHECK_OK(clt_trainer_save_checkpoint(other, path, NULL));
        clt_trainer_destroy(other);
        REQUIRE_OK(clt_trainer_create(&cfg, &other));
        CHECK_OK(clt_trainer_load_checkpoint(other, path, NULL));
        CHECK(clt_trainer_optimizer_steps(other) == 0, "Adam from a stateless checkpoint at step %lld",
              (long long)clt_trainer_optimizer_steps(other));
        clt_trainer_destroy(other);
    }
    free(a), free(b);
    clt_trainer_destroy(whole), clt_trainer_destroy(first), clt_trainer_destroy(second);
    tw_rmtree(dir);
}

/* Dropout whose mask follows the sample, not the device: 3 steps at p 0.5
 * on 2 devices (equal and 1:3 splits) equal them on one device; the masks
 * matter (p 0 gives other parameters); evaluation is the identity, the same
 * twice and on any number of devices. */
static trainer_run dropout_run(const char *spec, const int *devs, int k, const float *weights)
{
    clt_trainer_config cfg;
    config_for(&cfg, CLT_OPTIMIZER_SGD, devs, k);
    cfg.spec = spec;
    cfg.split = weights ? CLT_SPLIT_WEIGHTS : CLT_SPLIT_EQUAL;
    cfg.weights = weights;
    clt_trainer *t = NULL;
    REQUIRE_OK(clt_trainer_create(&cfg, &t));
    run(t, 0, 3, 0);
    trainer_run r = {NULL, 0, 0, 0};
    r.params = params(clt_trainer_net(t, 0), &r.n);
    char dir[256];
    tw_mkdtemp(dir, sizeof dir, "dropout");
    tw_write_dataset(dir, 0, 8, 40, H, W);
    clt_dataset *ds = NULL;
    REQUIRE_OK(clt_dataset_load(dir, CLT_SUBSET_TEST, 0, &ds));
    double loss2, acc2;
    CHECK_OK(clt_trainer_evaluate(t, ds, 7, &r.loss, &r.acc));
    CHECK_OK(clt_trainer_evaluate(t, ds, 5, &loss2, &acc2));
    CHECK(fabs(loss2 - r.loss) < 1e-6 * fabs(r.loss) && acc2 == r.acc, "%s: evaluation not deterministic (%g, %g)",
          spec, r.loss, loss2);
    clt_dataset_destroy(ds);
    tw_rmtree(dir);
    clt_trainer_destroy(t);
    return r;
}

static void dropout_split(const int *devs, int n)
{
    const char *spec = "conv:4:3,relu,maxpool:2,flatten,dropout:0.5,dense:16,tanh,dense:10";
    trainer_run one = dropout_run(spec, devs, 1, NULL);
    trainer_run none = dropout_run("conv:4:3,relu,maxpool:2,flatten,dropout:0,dense:16,tanh,dense:10", devs, 1, NULL);
    CHECK(max_rel(one.params, none.params, one.n) > 1e-3, "dropout 0.5 changed nothing (%g)",
          max_rel(one.params, none.params, one.n));
    for (int w = 0; n >= 2 && w < 2; w++) {
        trainer_run two = dropout_run(spec, devs, 2, w ? (const float[]){1, 3} : NULL);
        CHECK(two.n == one.n && max_rel(two.params, one.params, one.n) < 2e-5,
              "dropout: 2 devices (%s) differ from 1 by %g", w ? "1:3" : "equal", max_rel(two.params, one.params, one.n));
        CHECK(fabs(two.loss - one.loss) < 1e-5 * fabs(one.loss) && two.acc == one.acc,
              "dropout: evaluation on 2 devices %g/%g, on 1 %g/%g", two.loss, two.acc, one.loss, one.acc);
        free(two.params);
    }
    free(one.params), free(none.params);
}

static void config_errors(void)
{
    clt_trainer_config cfg;
    clt_trainer *t = NULL;
    config_for(&cfg, CLT_OPTIMIZER_ADAM, NULL, 0);
    cfg.beta1 = 1.5f;
    CHECK_FAIL(clt_trainer_create(&cfg, &t), CLT_ERR_INVALID_ARG, "betas 1.5");
    config_for(&cfg, CLT_OPTIMIZER_SGD, NULL, 0);
    cfg.clip_grad_norm = -1;
    CHECK_FAIL(clt_trainer_create(&cfg, &t), CLT_ERR_INVALID_ARG, "clip_grad_norm -1");
    config_for(&cfg, CLT_OPTIMIZER_SGD, NULL, 0);
    cfg.label_smoothing = 1;
    CHECK_FAIL(clt_trainer_create(&cfg, &t), CLT_ERR_INVALID_ARG, "label_smoothing 1");
    CHECK_FAIL(clt_trainer_set_lr(NULL, 0.1f), CLT_ERR_INVALID_ARG, "NULL");
}

int main(void)
{
    alarm(280);
    config_errors();
    int n = test_need_devices(1);
    make_data();
    int two[2] = {0, 1};
    for (int k = 1; k <= (n >= 2 ? 2 : 1); k++) {
        equals_reference(CLT_OPTIMIZER_SGD, 0, 0, 0, two, k, "SGD Nesterov");
        equals_reference(CLT_OPTIMIZER_ADAM, 0, 0, 1, two, k, "Adam, lr warmup");
        equals_reference(CLT_OPTIMIZER_ADAMW, 0, 0, 0, two, k, "AdamW");
        equals_reference(CLT_OPTIMIZER_ADAM, 0.05f, 0, 0, two, k, "Adam, clipped");
        equals_reference(CLT_OPTIMIZER_SGD, 0.05f, 0, 1, two, k, "SGD Nesterov, clipped, lr warmup");
        equals_reference(CLT_OPTIMIZER_SGD, 0, 0.2f, 0, two, k, "SGD Nesterov, label smoothing 0.2");
        resume_bit_exact(CLT_OPTIMIZER_ADAM, two, k);
        resume_bit_exact(CLT_OPTIMIZER_SGD, two, k);
    }
    dropout_split(two, n);
    return test_result();
}
