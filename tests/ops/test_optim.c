/* The optimizer table (src/optim/optim.h) against plain-C references over
 * several steps: SGD with Nesterov momentum, Adam and AdamW (PyTorch's
 * formulas), each bit for bit against the same float roundings, within
 * float error of a double-precision PyTorch step, updated in two spans on
 * one device and as a whole on another (the replicas must agree bit for
 * bit), from gradients in NPIECE replicas' buffers that the update sums
 * itself, writing its results into three replicas' buffers (bit for bit
 * the update of the host's sum), and the settings checks. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "optim/optim.h"
#include "tensor/tensor.h"
#include "ref_misc.h"

static uint64_t rng = 0x5eed0017;

/* The kernels' float roundings (kernels/sgd.cl, kernels/adam.cl). */
static void ref_step(float *w, const float *g, float *m, float *v, size_t n, const clt_optim_settings *s, int64_t t)
{
    if (s->kind == CLT_OPTIMIZER_SGD) { /* Nesterov */
        for (size_t i = 0; i < n; i++) {
            float gp = s->weight_decay != 0 ? fmaf(s->weight_decay, w[i], g[i]) : g[i];
            m[i] = s->momentum * m[i];
            m[i] = m[i] + gp;
            w[i] = fmaf(-s->lr, fmaf(s->momentum, m[i], gp), w[i]);
        }
        return;
    }
    int decoupled = s->kind == CLT_OPTIMIZER_ADAMW;
    float step_size = (float)((double)s->lr / (1.0 - pow(s->beta1, (double)t)));
    float bc2 = (float)sqrt(1.0 - pow(s->beta2, (double)t));
    float c1 = (float)(1.0 - s->beta1), c2 = (float)(1.0 - s->beta2);
    float decay = decoupled && s->weight_decay != 0 ? (float)(1.0 - (double)s->lr * s->weight_decay) : 1.0f;
    float wd = decoupled ? 0.0f : s->weight_decay;
    for (size_t i = 0; i < n; i++) {
        float p = decay != 1.0f ? w[i] * decay : w[i];
        float gp = wd != 0 ? fmaf(wd, p, g[i]) : g[i];
        m[i] = fmaf(c1, gp - m[i], m[i]);
        float vi = v[i] * s->beta2;
        v[i] = vi + (c2 * gp) * gp;
        float denom = sqrtf(v[i]) / bc2 + s->eps;
        w[i] = p + (-step_size) * (m[i] / denom);
    }
}

/* PyTorch's step in double precision. */
static void double_step(double *w, const float *g, double *m, double *v, size_t n, const clt_optim_settings *s,
                        int64_t t)
{
    for (size_t i = 0; i < n; i++) {
        double gp = g[i];
        if (s->kind == CLT_OPTIMIZER_SGD) {
            gp += s->weight_decay * w[i];
            m[i] = s->momentum * m[i] + gp;
            w[i] -= s->lr * (gp + s->momentum * m[i]);
            continue;
        }
        if (s->kind == CLT_OPTIMIZER_ADAMW) w[i] *= 1.0 - (double)s->lr * s->weight_decay;
        else gp += s->weight_decay * w[i];
        m[i] = s->beta1 * m[i] + (1.0 - s->beta1) * gp;
        v[i] = s->beta2 * v[i] + (1.0 - s->beta2) * gp * gp;
        double denom = sqrt(v[i]) / sqrt(1.0 - pow(s->beta2, (double)t)) + s->eps;
        w[i] -= s->lr / (1.0 - pow(s->beta1, (double)t)) * m[i] / denom;
    }
}

/* Gradient buffers of the replica that sums them itself. */
enum { NPIECE = 3 };

typedef struct replica {
    clt_tensor *w, *g[NPIECE], *slot[CLT_OPTIM_SLOTS];
} replica;

static void replica_make(replica *r, clt_device *dev, int64_t count, const float *w)
{
    r->w = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, &count, w);
    for (int i = 0; i < NPIECE; i++) r->g[i] = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, &count, NULL);
    for (int i = 0; i < CLT_OPTIM_SLOTS; i++) {
        r->slot[i] = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, &count, NULL);
        CHECK_OK(clt_tensor_fill(r->slot[i], 0.0f));
    }
}

/* Update `step` of out[0] in `parts` spans, from the sum of the ng
 * buffers g[] times scale (ng 1: g[0] as it is), its results written to
 * all n_out replicas out[] (their parameters and slots). */
static void replica_step(replica *const *out, int n_out, const clt_optim_settings *s, int64_t step, float *const *g,
                         int ng, float scale, int parts)
{
    replica *r = out[0];
    size_t n = (size_t)r->w->numel;
    cl_mem bufs[NPIECE], w[NPIECE], slots[CLT_OPTIM_SLOTS][NPIECE];
    for (int i = 0; i < ng; i++) {
        CHECK_OK(clt_tensor_upload(r->g[i], g[i], r->w->numel));
        bufs[i] = r->g[i]->buf;
    }
    clt_optim_io io = {w, {NULL}, n_out, {bufs, ng, scale}};
    for (int o = 0; o < n_out; o++) {
        w[o] = out[o]->w->buf;
        for (int i = 0; i < CLT_OPTIM_SLOTS; i++) slots[i][o] = out[o]->slot[i]->buf;
    }
    for (int i = 0; i < CLT_OPTIM_SLOTS; i++) io.slot[i] = slots[i];
    const clt_optim_ops *ops = clt_optim_find(s->kind);
    for (int p = 0; p < parts; p++) {
        size_t lo = n * (size_t)p / (size_t)parts, hi = n * (size_t)(p + 1) / (size_t)parts;
        if (hi > lo) CHECK_OK(ops->update(r->w->dev, s, step, lo, hi - lo, &io));
    }
}

static void replica_free(replica *r)
{
    clt_tensor_destroy(r->w);
    for (int i = 0; i < NPIECE; i++) clt_tensor_destroy(r->g[i]);
    for (int i = 0; i < CLT_OPTIM_SLOTS; i++) clt_tensor_destroy(r->slot[i]);
}

static void check_optim(clt_device *dev, clt_device *dev1, int64_t count, const clt_optim_settings *s)
{
    size_t n = (size_t)count;
    const char *name = clt_optim_find(s->kind)->name;
    CHECK_OK(clt_optim_check(s, "test"));
    float *w = ref_misc_alloc(n, 4), *m = ref_misc_alloc(n, 4), *v = ref_misc_alloc(n, 4), *g = ref_misc_alloc(n, 4);
    double *wd = ref_misc_alloc(n, 8), *md = ref_misc_alloc(n, 8), *vd = ref_misc_alloc(n, 8);
    ref_misc_fill(w, n, &rng, -1, 1);
    for (size_t i = 0; i < n; i++) wd[i] = w[i], m[i] = v[i] = 0, md[i] = vd[i] = 0;
    float *piece[NPIECE];
    for (int i = 0; i < NPIECE; i++) piece[i] = ref_misc_alloc(n, 4);
    const float third = 1.0f / 3.0f; /* inexact: its rounding shows */
    /* c sums the pieces and writes d and e too, which it never reads */
    replica a, b, c, d, e, *pa = &a, *pb = &b, *cde[3] = {&c, &d, &e};
    replica_make(&a, dev, count, w);
    replica_make(&c, dev, count, w);
    replica_make(&d, dev, count, NULL);
    replica_make(&e, dev, count, NULL);
    if (dev1) replica_make(&b, dev1, count, w);
    for (int64_t step = 1; step <= 6; step++) {
        for (int i = 0; i < NPIECE; i++) ref_misc_fill(piece[i], n, &rng, -2, 2);
        for (size_t i = 0; i < n; i++) g[i] = (piece[0][i] + piece[1][i] + piece[2][i]) * third; /* the host sum */
        replica_step(&pa, 1, s, step, &g, 1, 1.0f, 2);
        replica_step(cde, 3, s, step, piece, NPIECE, third, 1);
        if (dev1) replica_step(&pb, 1, s, step, &g, 1, 1.0f, 1);
        ref_step(w, g, m, v, n, s, step);
        double_step(wd, g, md, vd, n, s, step);
    }
    float *gw = ref_misc_download(a.w), *gm = ref_misc_download(a.slot[0]);
    size_t diff = 0;
    for (size_t i = 0; i < n; i++) diff += memcmp(&gw[i], &w[i], 4) != 0;
    CHECK(diff == 0, "%s n=%zu: %zu of %zu weights differ from the float reference", name, n, diff, n);
    CHECK(memcmp(gm, m, n * 4) == 0, "%s n=%zu: state slot 0 differs from the reference", name, n);
    if (s->kind != CLT_OPTIMIZER_SGD) {
        float *gv = ref_misc_download(a.slot[1]);
        CHECK(memcmp(gv, v, n * 4) == 0, "%s n=%zu: state slot 1 differs from the reference", name, n);
        free(gv);
    }
    /* the distance the weights moved bounds the error of 6 float steps */
    double worst = 0, moved = 1e-12;
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs(gw[i] - wd[i]));
    for (size_t i = 0; i < n; i++) moved = fmax(moved, fabs(wd[i] - (double)gw[i]) + fabs(gw[i]));
    CHECK(worst / moved < 2e-6, "%s n=%zu: error against double %g (scale %g)", name, n, worst, moved);
    if (dev1) {
        float *gw1 = ref_misc_download(b.w);
        CHECK(memcmp(gw, gw1, n * 4) == 0, "%s n=%zu: replicas (two spans, one span) differ", name, n);
        free(gw1);
        replica_free(&b);
    }
    for (int o = 0; o < 3; o++) { /* every buffer but the unused slot 1 of SGD */
        for (int i = -1; i < (s->kind == CLT_OPTIMIZER_SGD ? 1 : CLT_OPTIM_SLOTS); i++) {
            float *want = ref_misc_download(i < 0 ? a.w : a.slot[i]), *got = ref_misc_download(i < 0 ? cde[o]->w : cde[o]->slot[i]);
            CHECK(memcmp(want, got, n * 4) == 0,
                  "%s n=%zu: replica %d's %s from the update summing %d gradient buffers differs from the one of their "
                  "host sum", name, n, o, i < 0 ? "parameters" : "state", NPIECE);
            free(want), free(got);
        }
        replica_free(cde[o]);
    }
    for (int i = 0; i < NPIECE; i++) free(piece[i]);
    replica_free(&a);
    free(w), free(m), free(v), free(g), free(wd), free(md), free(vd), free(gw), free(gm);
}

static void check_settings(void)
{
    clt_optim_settings s = {.kind = CLT_OPTIMIZER_SGD, .lr = 0.1f, .nesterov = 1};
    CHECK_FAIL(clt_optim_check(&s, "t"), CLT_ERR_INVALID_ARG, "Nesterov", "momentum > 0");
    s = (clt_optim_settings){.kind = CLT_OPTIMIZER_ADAM, .lr = 0.1f, .beta1 = 0.9f, .beta2 = 1.0f, .eps = 1e-8f};
    CHECK_FAIL(clt_optim_check(&s, "t"), CLT_ERR_INVALID_ARG, "Adam betas", "[0, 1)");
    s.beta2 = 0.999f, s.eps = -1;
    CHECK_FAIL(clt_optim_check(&s, "t"), CLT_ERR_INVALID_ARG, "eps -1");
    s.eps = 1e-8f, s.momentum = 0.9f;
    CHECK_FAIL(clt_optim_check(&s, "t"), CLT_ERR_INVALID_ARG, "momentum 0.9 applies to SGD only");
    s.momentum = 0, s.kind = CLT_OPTIMIZER_ADAMW, s.weight_decay = NAN;
    CHECK_FAIL(clt_optim_check(&s, "t"), CLT_ERR_INVALID_ARG, "AdamW weight decay");
    s.kind = (clt_optimizer)7;
    CHECK_FAIL(clt_optim_check(&s, "t"), CLT_ERR_INVALID_ARG, "unknown optimizer 7");
    CHECK(clt_optim_named("adamw") == CLT_OPTIMIZER_ADAMW && clt_optim_named("rmsprop") == -1,
          "optimizer names");
}

int main(void)
{
    check_settings();
    int count = test_need_devices(1);
    clt_device *dev = NULL, *dev1 = NULL;
    REQUIRE_OK(clt_device_open(0, &dev));
    if (count > 1) REQUIRE_OK(clt_device_open(1, &dev1));
    const clt_optim_settings configs[] = {
        {.kind = CLT_OPTIMIZER_SGD, .lr = 0.1f, .momentum = 0.9f, .weight_decay = 5e-4f, .nesterov = 1},
        {.kind = CLT_OPTIMIZER_SGD, .lr = 0.02f, .momentum = 0.5f, .nesterov = 1},
        {.kind = CLT_OPTIMIZER_ADAM, .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f},
        {.kind = CLT_OPTIMIZER_ADAM, .lr = 1e-2f, .weight_decay = 1e-2f, .beta1 = 0.8f, .beta2 = 0.99f, .eps = 1e-6f},
        {.kind = CLT_OPTIMIZER_ADAMW, .lr = 1e-3f, .weight_decay = 1e-2f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f},
    };
    const int64_t sizes[] = {1, 1000, 100003};
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++)
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) check_optim(dev, dev1, sizes[i], &configs[c]);
    clt_device_destroy(dev1);
    clt_device_destroy(dev);
    return test_result();
}
