/* Nets: spec parsing and errors, parameter names, init, and whole-net
 * forward/backward/SGD against the plain-C reference (ref_net.c), whose own
 * gradients are checked by finite differences; fused relus (after conv,
 * dense and batch norm, and inside residual blocks) train and infer bit
 * for bit as separate ones. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "runtime/device_impl.h"
#include "nn/net_impl.h"
#include "ops/conv.h"
#include "ops/dense.h"
#include "ref_net.h"

static unsigned rng_state = 12345;
static float frand(void)
{
    rng_state = rng_state * 1103515245u + 12345u;
    return (float)((rng_state >> 8) & 0xffff) / 65536.0f;
}

static void spec_errors(void)
{
    static const struct {
        const char *spec, *needle;
        clt_status status;
    } bad[] = {
        {"conv:20", "layer 0", CLT_ERR_SPEC},
        {"conv:20:3,dense:10", "not flat", CLT_ERR_SPEC},
        {"conv:4:3,foo,flatten,dense:2", "layer 1: unknown layer kind \"foo\"", CLT_ERR_SPEC},
        {"conv:4:30,flatten,dense:2", "larger than", CLT_ERR_SPEC},
        {"conv:4:3,,relu,flatten,dense:2", "layer 1: empty", CLT_ERR_SPEC},
        {"conv:a:3,flatten,dense:2", "\"a\" is not an integer", CLT_ERR_SPEC},
        {"conv:4::3,flatten,dense:2", "not an integer", CLT_ERR_SPEC},
        {"conv:4:3", "loss needs flat class scores", CLT_ERR_SPEC},
        {"flatten,dense:1", "at least 2", CLT_ERR_SPEC},
        {"maxpool:50,flatten,dense:2", "layer 0 (maxpool:50)", CLT_ERR_SPEC},
        {"conv:0:3,flatten,dense:2", ">= 1", CLT_ERR_SPEC},
        {"relu:3,flatten,dense:2", "no arguments", CLT_ERR_SPEC},
        {"bn:3,flatten,dense:2", "bn takes no arguments", CLT_ERR_SPEC},
        {"flatten,res:4,dense:2", "image input", CLT_ERR_SPEC},
        {"x=conv:2:3,x=conv:2:3,flatten,dense:2", "already used by layer 0", CLT_ERR_SPEC},
        {"bad name=conv:2:3,flatten,dense:2", "must be 1..", CLT_ERR_SPEC},
        {"", "layer 0: empty", CLT_ERR_SPEC},
        {"flatten,dense:10,avgpool:2", "image input", CLT_ERR_SPEC},
        /* A NAME= prefix that makes another layer's parameter names. */
        {"a=res:4,a.conv1=conv:4:3,flatten,dense:2",
         "layer 0 (a=res) and layer 1 (a.conv1=conv) both have a parameter named \"a.conv1.weight\"", CLT_ERR_SPEC},
        {"a.conv1=conv:4:3,a=res:4,flatten,dense:2", "layer 0 (a.conv1=conv) and layer 1 (a=res)", CLT_ERR_SPEC},
        {"flatten,dense:1000000000", "argument 1000000000 is out of range (-1000000 .. 1000000)", CLT_ERR_SPEC},
        {"flatten,dense:99999999999999999999999", "out of range", CLT_ERR_SPEC},
        /* sizes past what a shape or a buffer holds: refused, not wrapped */
        {"conv:1000:1:1:100000,flatten,dense:10", "(1000, 200028, 200028) holds 4e+13 values per sample", CLT_ERR_SPEC},
        {"conv:65536:1:1:32754,flatten,dense:10", "more than 2147483647", CLT_ERR_SPEC},
        {"flatten,dense:1000000,dense:1000000,dense:10", "layer 2 (dense:1000000): its parameter 2.weight",
         CLT_ERR_SPEC},
        {"conv:1000:1,conv:1000000:1000000:1:500000,gap", "layer 1 (conv:1000000:1000000:1:500000): its parameter "
         "1.weight would hold 9.22e+18 values", CLT_ERR_SPEC},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        clt_status s = clt_spec_check(bad[i].spec, 1, 28, 28, NULL, 0);
        CHECK(s == bad[i].status, "spec \"%s\" gave %s", bad[i].spec, clt_status_name(s));
        CHECK(strstr(clt_last_error(), bad[i].needle) != NULL, "spec \"%s\": message \"%s\" lacks \"%s\"",
              bad[i].spec, clt_last_error(), bad[i].needle);
    }
    /* A huge token is quoted cut, not whole. */
    static char huge[100000];
    for (int k = 0; k < 3; k++) {
        static const char *const form[3] = {"conv:4:3,%s,flatten,dense:2", "%s=relu,flatten,dense:2",
                                            "flatten,dense:%s"};
        char token[90000];
        memset(token, k == 2 ? '1' : 'x', sizeof token - 1);
        token[sizeof token - 1] = 0;
        snprintf(huge, sizeof huge, form[k], token);
        CHECK(clt_spec_check(huge, 1, 28, 28, NULL, 0) == CLT_ERR_SPEC && strlen(clt_last_error()) < 400,
              "huge token %d: %zu-byte message", k, strlen(clt_last_error()));
    }
    char summary[2048];
    CHECK_OK(clt_spec_check("lenet", 1, 28, 28, summary, sizeof summary));
    CHECK(strstr(summary, "(20, 26, 26)") && strstr(summary, "(50, 9, 9)") && strstr(summary, "(800)") &&
              strstr(summary, "(10)"),
          "lenet shapes: %s", summary);
    CHECK(clt_spec_check("lenet", 0, 28, 28, NULL, 0) == CLT_ERR_SHAPE, "zero input shape");
    CHECK_OK(clt_spec_check(" lenet ", 1, 28, 28, NULL, 0)); /* as a layer token, spaces around do not count */
}

static void names_and_init(clt_device *dev)
{
    clt_net *net = NULL;
    REQUIRE_OK(clt_net_create(dev, "lenet", 1, 28, 28, &net));
    static const struct {
        const char *name;
        int ndim;
        int64_t shape[4];
    } want[] = {{"0.weight", 4, {20, 1, 3, 3}}, {"0.bias", 1, {20}},      {"3.weight", 4, {50, 20, 5, 5}},
                {"3.bias", 1, {50}},            {"7.weight", 2, {128, 800}}, {"7.bias", 1, {128}},
                {"9.weight", 2, {10, 128}},     {"9.bias", 1, {10}}};
    CHECK(clt_net_param_count(net) == 8, "lenet has %d parameters", clt_net_param_count(net));
    for (int i = 0; i < 8; i++) {
        const char *name;
        int ndim;
        int64_t shape[CLT_MAX_DIMS];
        CHECK_OK(clt_net_param_info(net, i, &name, &ndim, shape));
        CHECK(strcmp(name, want[i].name) == 0 && ndim == want[i].ndim &&
                  memcmp(shape, want[i].shape, sizeof(int64_t) * (size_t)ndim) == 0,
              "parameter %d is %s", i, name);
    }
    CHECK(clt_net_param_info(net, 8, NULL, NULL, NULL) == CLT_ERR_NOT_FOUND, "index past the end");
    CHECK(strcmp(clt_net_spec(net), "conv:20:3,relu,avgpool:2,conv:50:5,relu,avgpool:2,flatten,dense:128,relu,dense:10") == 0,
          "expanded spec");

    static float w[102400], w2[102400], b[128];
    CHECK_OK(clt_net_init(net, 7, CLT_INIT_NORMAL));
    CHECK_OK(clt_net_param_get(net, "7.weight", w, 128 * 800));
    CHECK_OK(clt_net_param_get(net, "7.bias", b, 128));
    double s = 0, s2 = 0;
    for (int i = 0; i < 102400; i++) s += w[i], s2 += (double)w[i] * w[i];
    double mean = s / 102400, sd = sqrt(s2 / 102400 - mean * mean);
    CHECK(fabs(mean) < 2e-4 && fabs(sd - 0.01) < 3e-4, "normal init mean %g sd %g", mean, sd);
    int zero = 1;
    for (int i = 0; i < 128; i++) zero &= b[i] == 0;
    CHECK(zero, "biases start at zero");
    CHECK_OK(clt_net_init(net, 7, CLT_INIT_NORMAL));
    CHECK_OK(clt_net_param_get(net, "7.weight", w2, 128 * 800));
    CHECK(memcmp(w, w2, sizeof(float) * 102400) == 0, "same seed, same values");
    CHECK_OK(clt_net_init(net, 8, CLT_INIT_XAVIER));
    CHECK_OK(clt_net_param_get(net, "7.weight", w2, 128 * 800));
    double a = sqrt(6.0 / (800 + 128)), mx = 0;
    for (int i = 0; i < 102400; i++) mx = fmax(mx, fabs(w2[i]));
    CHECK(mx <= a && mx > 0.95 * a, "xavier bound %g vs %g", mx, a);

    CHECK(clt_net_param_get(net, "7.weight", w, 5) == CLT_ERR_SHAPE, "wrong count");
    CHECK(strstr(clt_last_error(), "7.weight") != NULL, "detail names the parameter: %s", clt_last_error());
    CHECK(clt_net_param_set(net, "nope.weight", w, 5) == CLT_ERR_NOT_FOUND, "unknown name");
    CHECK(clt_net_output(net, w, 10) != CLT_OK, "output before any forward");
    float img[784] = {0};
    CHECK(clt_net_forward(net, img, 0, 1) == CLT_ERR_INVALID_ARG, "empty batch");
    int32_t lab = 10;
    CHECK_OK(clt_net_forward(net, img, 1, 1));
    CHECK(clt_net_backward(net, &lab, 1.0f, NULL, NULL) == CLT_ERR_INVALID_ARG, "label out of range");
    CHECK(strstr(clt_last_error(), "label 10") != NULL, "detail: %s", clt_last_error());
    clt_net_destroy(net);
}

/* Device net against the reference on one spec: loss, every gradient, and
 * one SGD step with momentum and weight decay; `fd_probes` finite differences
 * per parameter check the reference itself (0 for nets too big for it). */
static void against_reference(clt_device *dev, const char *spec, int c, int h, int w, int n, int fd_probes)
{
    clt_net *net = NULL;
    REQUIRE_OK(clt_net_create(dev, spec, c, h, w, &net));
    CHECK_OK(clt_net_init(net, 3, CLT_INIT_XAVIER));
    int np = clt_net_param_count(net);
    float **params = calloc((size_t)np, sizeof *params), **grads = calloc((size_t)np, sizeof *grads);
    if (!params || !grads) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (int i = 0; i < np; i++) {
        const clt_param *p = clt_net_param_at(net, i);
        params[i] = malloc(sizeof(float) * (size_t)p->numel);
        grads[i] = malloc(sizeof(float) * (size_t)p->numel);
        CHECK_OK(clt_net_param_get(net, p->name, params[i], p->numel));
        if (p->is_bias || (!p->is_buffer && p->fan_in == 0)) /* non-trivial biases and scales */
            for (int64_t j = 0; j < p->numel; j++) params[i][j] = 0.2f * (frand() - 0.5f);
        CHECK_OK(clt_net_param_set(net, p->name, params[i], p->numel));
    }
    size_t in = (size_t)c * h * w;
    float *img = malloc(sizeof(float) * in * (size_t)n);
    int32_t *lab = malloc(sizeof(int32_t) * (size_t)n);
    for (size_t i = 0; i < in * (size_t)n; i++) img[i] = frand();
    for (int i = 0; i < n; i++) lab[i] = (int32_t)(frand() * clt_net_classes(net)) % clt_net_classes(net);

    ref_net r;
    ref_net_init(&r, &net->model, n, params);
    int ref_ok;
    double ref_loss = ref_net_forward(&r, img, lab, &ref_ok);
    ref_net_backward(&r, lab, 1.0 / n);

    double loss;
    int64_t ok;
    CHECK_OK(clt_net_forward(net, img, n, 1));
    CHECK_OK(clt_net_backward(net, lab, 1.0f / (float)n, &loss, &ok));
    CHECK(fabs(loss - ref_loss) <= 1e-4 * fabs(ref_loss) + 1e-5, "%s: loss %.7g vs reference %.7g", spec, loss, ref_loss);
    CHECK(ok == ref_ok, "%s: correct %lld vs %d", spec, (long long)ok, ref_ok);
    /* Gradients that are zero in exact arithmetic (a bias before batch
     * norm) are float noise on the device: errors are relative to the
     * larger of the parameter's own scale and 1e-3 of the net's largest. */
    double gmax = 0;
    for (int i = 0; i < np; i++)
        for (int64_t j = 0; !clt_net_param_at(net, i)->is_buffer && j < clt_net_param_at(net, i)->numel; j++)
            gmax = fmax(gmax, fabs(r.grads[i][j]));
    for (int i = 0; i < np; i++) {
        const clt_param *p = clt_net_param_at(net, i);
        if (p->is_buffer) continue;
        CHECK_OK(clt_net_grad_get(net, p->name, grads[i], p->numel));
        double scale = 1e-3 * gmax, e = 0;
        for (int64_t j = 0; j < p->numel; j++) scale = fmax(scale, fabs(r.grads[i][j]));
        for (int64_t j = 0; j < p->numel; j++) e = fmax(e, fabs(r.grads[i][j] - grads[i][j]) / scale);
        CHECK(e < 1e-3, "%s: gradient of %s off by %g", spec, p->name, e);
    }

    /* Finite differences of the reference itself on a few coordinates. */
    for (int i = 0; i < np; i++) {
        const clt_param *p = clt_net_param_at(net, i);
        if (p->is_buffer) continue;
        for (int t = 0; t < fd_probes; t++) {
            int64_t j = (int64_t)(frand() * (float)p->numel) % p->numel;
            double keep = r.params[i][j], eps = 1e-5;
            r.params[i][j] = keep + eps;
            double lp = ref_net_forward(&r, img, lab, NULL);
            r.params[i][j] = keep - eps;
            double lm = ref_net_forward(&r, img, lab, NULL);
            r.params[i][j] = keep;
            double fd = (lp - lm) / (2 * eps) / n, an = r.grads[i][j];
            CHECK(fabs(fd - an) <= 1e-4 * fmax(1.0, fabs(fd)) + 1e-6, "%s: d/d%s[%lld] fd %g analytic %g", spec,
                  p->name, (long long)j, fd, an);
        }
    }
    ref_net_forward(&r, img, lab, NULL);

    /* One SGD step with momentum and weight decay (PyTorch formulas). */
    float lr = 0.1f, m = 0.9f, wd = 1e-3f;
    CHECK_OK(clt_net_sgd_step(net, lr, m, wd));
    for (int i = 0; i < np; i++) {
        const clt_param *p = clt_net_param_at(net, i);
        if (p->is_buffer) continue;
        float *after = malloc(sizeof(float) * (size_t)p->numel), *ref = malloc(sizeof(float) * (size_t)p->numel);
        CHECK_OK(clt_net_param_get(net, p->name, after, p->numel));
        for (int64_t j = 0; j < p->numel; j++) {
            double g = r.grads[i][j] + wd * params[i][j];
            ref[j] = (float)(params[i][j] - lr * g); /* first step: v = g */
        }
        double e = max_rel_err(ref, after, (size_t)p->numel);
        CHECK(e < 1e-5, "%s: %s after one SGD step off by %g", spec, p->name, e);
        free(after);
        free(ref);
    }
    ref_net_free(&r);
    for (int i = 0; i < np; i++) free(params[i]), free(grads[i]);
    free(params);
    free(grads);
    free(img);
    free(lab);
    clt_net_destroy(net);
}

static int fused_layers(const clt_net *net)
{
    int k = 0;
    for (int i = 0; i < net->model.n_layers; i++) k += net->model.layers[i].fused;
    return k;
}

/* A net whose relus run in the layer before (src/nn/fuse.c) trains bit for
 * bit as one made with CLTRAIN_FUSE=0: same losses, same parameters after
 * three SGD steps. `want` relus must fuse. */
static void fused_equals_separate(clt_device *dev, const char *spec, int c, int h, int w, int n, int want)
{
    clt_device_settings keep = *clt_device_get_settings(dev), off = keep;
    off.no_fuse = 1;
    clt_net *a = NULL, *b = NULL;
    REQUIRE_OK(clt_net_create(dev, spec, c, h, w, &a));
    REQUIRE_OK(clt_device_set_settings(dev, &off));
    clt_status s = clt_net_create(dev, spec, c, h, w, &b);
    REQUIRE_OK(clt_device_set_settings(dev, &keep));
    REQUIRE_OK(s);
    CHECK(fused_layers(a) == want && fused_layers(b) == 0, "%s: %d relus fused (want %d), %d with CLTRAIN_FUSE=0",
          spec, fused_layers(a), want, fused_layers(b));
    CHECK_OK(clt_net_init(a, 5, CLT_INIT_XAVIER));
    int np = clt_net_param_count(a);
    for (int i = 0; i < np; i++) {
        const clt_param *p = clt_net_param_at(a, i);
        float *v = malloc(sizeof(float) * (size_t)p->numel);
        CHECK_OK(clt_net_param_get(a, p->name, v, p->numel));
        CHECK_OK(clt_net_param_set(b, p->name, v, p->numel));
        free(v);
    }
    size_t in = (size_t)c * h * w;
    float *img = malloc(sizeof(float) * in * (size_t)n);
    int32_t *lab = malloc(sizeof(int32_t) * (size_t)n);
    for (int step = 0; step < 3; step++) {
        int m = step == 2 && n > 1 ? n - 1 : n; /* a smaller last batch: plans made again */
        for (size_t i = 0; i < in * (size_t)n; i++) img[i] = frand() - 0.3f;
        for (int i = 0; i < n; i++) lab[i] = (int32_t)(frand() * clt_net_classes(a)) % clt_net_classes(a);
        double la, lb;
        CHECK_OK(clt_net_forward(a, img, m, 1));
        CHECK_OK(clt_net_backward(a, lab, 1.0f / (float)m, &la, NULL));
        CHECK_OK(clt_net_sgd_step(a, 0.1f, 0.9f, 1e-3f));
        CHECK_OK(clt_net_forward(b, img, m, 1));
        CHECK_OK(clt_net_backward(b, lab, 1.0f / (float)m, &lb, NULL));
        CHECK_OK(clt_net_sgd_step(b, 0.1f, 0.9f, 1e-3f));
        CHECK(la == lb, "%s: step %d loss %.9g fused, %.9g separate", spec, step, la, lb);
    }
    /* Inference: the forward (batch norm on running statistics) and a
     * backward after it (batch norm's statistics held fixed). */
    double la, lb;
    CHECK_OK(clt_net_forward(a, img, n, 0));
    CHECK_OK(clt_net_backward(a, lab, 1.0f / (float)n, &la, NULL));
    CHECK_OK(clt_net_forward(b, img, n, 0));
    CHECK_OK(clt_net_backward(b, lab, 1.0f / (float)n, &lb, NULL));
    CHECK(la == lb, "%s: inference loss %.9g fused, %.9g separate", spec, la, lb);
    for (int i = 0; i < np; i++) {
        const clt_param *p = clt_net_param_at(a, i);
        float *va = malloc(sizeof(float) * (size_t)p->numel), *vb = malloc(sizeof(float) * (size_t)p->numel);
        CHECK_OK(clt_net_param_get(a, p->name, va, p->numel));
        CHECK_OK(clt_net_param_get(b, p->name, vb, p->numel));
        CHECK(memcmp(va, vb, sizeof(float) * (size_t)p->numel) == 0, "%s: %s differs after 3 steps fused vs separate",
              spec, p->name);
        if (!p->is_buffer) {
            CHECK_OK(clt_net_grad_get(a, p->name, va, p->numel));
            CHECK_OK(clt_net_grad_get(b, p->name, vb, p->numel));
            CHECK(memcmp(va, vb, sizeof(float) * (size_t)p->numel) == 0,
                  "%s: gradient of %s after an inference forward differs fused vs separate", spec, p->name);
        }
        free(va), free(vb);
    }
    free(img), free(lab);
    clt_net_destroy(a);
    clt_net_destroy(b);
}

/* A backward after an inference forward gives a training forward's
 * gradients where no layer behaves differently (no batch norm, no dropout):
 * max pooling keeps no argmax in inference and finds it again from x for
 * the backward (row kernels 2x2 s2, the one-window ones 3x3 s2). A training
 * forward on other images in between leaves a stale argmax behind. */
static void inference_backward(clt_device *dev, const char *spec, int n)
{
    clt_net *net = NULL;
    REQUIRE_OK(clt_net_create(dev, spec, 1, 18, 20, &net));
    CHECK_OK(clt_net_init(net, 7, CLT_INIT_XAVIER));
    size_t in = (size_t)18 * 20 * (size_t)n;
    float *img = malloc(sizeof(float) * in), *other = malloc(sizeof(float) * in);
    int32_t *lab = malloc(sizeof(int32_t) * (size_t)n);
    for (size_t i = 0; i < in; i++) img[i] = frand() - 0.3f, other[i] = frand() - 0.5f;
    for (int i = 0; i < n; i++) lab[i] = (int32_t)(frand() * clt_net_classes(net)) % clt_net_classes(net);
    int np = clt_net_param_count(net);
    float **g = calloc((size_t)np, sizeof *g);
    double lt, li;
    CHECK_OK(clt_net_forward(net, img, n, 1));
    CHECK_OK(clt_net_backward(net, lab, 1.0f / (float)n, &lt, NULL));
    for (int i = 0; i < np; i++) {
        const clt_param *p = clt_net_param_at(net, i);
        g[i] = malloc(sizeof(float) * (size_t)p->numel);
        CHECK_OK(clt_net_grad_get(net, p->name, g[i], p->numel));
    }
    CHECK_OK(clt_net_forward(net, other, n, 1));
    CHECK_OK(clt_net_forward(net, img, n, 0));
    CHECK_OK(clt_net_backward(net, lab, 1.0f / (float)n, &li, NULL));
    CHECK(li == lt, "%s: loss %.9g after an inference forward, %.9g after a training one", spec, li, lt);
    for (int i = 0; i < np; i++) {
        const clt_param *p = clt_net_param_at(net, i);
        float *v = malloc(sizeof(float) * (size_t)p->numel);
        CHECK_OK(clt_net_grad_get(net, p->name, v, p->numel));
        CHECK(memcmp(v, g[i], sizeof(float) * (size_t)p->numel) == 0,
              "%s: gradient of %s after an inference forward differs from a training one", spec, p->name);
        free(v), free(g[i]);
    }
    free(g), free(img), free(other), free(lab);
    clt_net_destroy(net);
}

/* A max pooling's argmax follows the device's settings (packed where the
 * CPU row kernels run: ops/pool.h): a training forward under the lanes
 * algorithm, the settings switched to gemm, then the backward gives the
 * gradients a whole step under gemm gives (the layer finds the argmax
 * again in the new format; reading the packed one as plane indices would
 * send dy to the wrong cells). */
static void settings_between(clt_device *dev)
{
    clt_device_settings keep = *clt_device_get_settings(dev), s = keep;
    s.conv_algo = CLT_CONV_ALGO_LANES;
    REQUIRE_OK(clt_device_set_settings(dev, &s));
    const int n = 3;
    clt_net *net = NULL;
    REQUIRE_OK(clt_net_create(dev, "conv:3:3:1:1,maxpool:2,flatten,dense:3", 1, 18, 20, &net));
    CHECK_OK(clt_net_init(net, 11, CLT_INIT_XAVIER));
    size_t in = (size_t)18 * 20 * (size_t)n;
    float *img = malloc(sizeof(float) * in);
    int32_t lab[3] = {0, 2, 1};
    for (size_t i = 0; i < in; i++) img[i] = frand() - 0.5f;
    const clt_param *p = clt_net_param_at(net, 0); /* the convolution's weights: through the pooling's dx */
    float *a = malloc(sizeof(float) * (size_t)p->numel), *b = malloc(sizeof(float) * (size_t)p->numel);
    double loss;
    CHECK_OK(clt_net_forward(net, img, n, 1));
    s.conv_algo = CLT_CONV_ALGO_GEMM;
    REQUIRE_OK(clt_device_set_settings(dev, &s));
    CHECK_OK(clt_net_backward(net, lab, 1.0f / (float)n, &loss, NULL));
    CHECK_OK(clt_net_grad_get(net, p->name, a, p->numel));
    CHECK_OK(clt_net_forward(net, img, n, 1));
    CHECK_OK(clt_net_backward(net, lab, 1.0f / (float)n, &loss, NULL));
    CHECK_OK(clt_net_grad_get(net, p->name, b, p->numel));
    double worst = 0, top = 0;
    for (int i = 0; i < p->numel; i++) {
        worst = fmax(worst, fabs((double)a[i] - b[i]));
        top = fmax(top, fabs((double)b[i]));
    }
    CHECK(top > 0 && worst <= 1e-5 * top, "%s after the settings changed between forward and backward: "
          "max |diff| %g of max |grad| %g", p->name, worst, top);
    free(img), free(a), free(b);
    clt_net_destroy(net);
    REQUIRE_OK(clt_device_set_settings(dev, &keep));
}

/* Counts a sync hook's rounds; with one device the sums are the values. */
typedef struct sync_count {
    int calls, most;
} sync_count;

static clt_status count_round(void *user, float *values, int count, double *total)
{
    sync_count *c = user;
    c->calls++;
    if (count > c->most) c->most = count;
    (void)values;
    (void)total;
    return CLT_OK;
}

/* A training step makes exactly the synchronisation rounds the net
 * declares (a device with an empty shard replays that many: a difference
 * would hang the trainer), and on one device syncing changes no bit. */
static void sync_rounds(clt_device *dev)
{
    static const struct {
        const char *spec;
        int rounds, floats;
    } cases[] = {
        {"conv:4:3,relu,flatten,dense:10", 0, 0},
        {"conv:4:3:1:1,bn,relu,res:6:2,gap,bn,dense:10", 3 + 6 + 3, 12},
        {"conv:4:3:1:1,bn,relu,res:4,res:6:2,gap,bn,dense:3", 3 + 6 + 6 + 3, 12},
    };
    enum { N = 4, HW = 8 };
    float img[N * HW * HW];
    int32_t lab[N] = {0, 1, 2, 1};
    /* a stream of its own: the reference tests' data stays as it was */
    for (int i = 0; i < N * HW * HW; i++) img[i] = (float)((i * 37 + 11) % 64) / 64.0f;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const char *spec = cases[k].spec;
        clt_net *net = NULL;
        REQUIRE_OK(clt_net_create(dev, spec, 1, HW, HW, &net));
        CHECK_OK(clt_net_init(net, 5, CLT_INIT_XAVIER));
        int rounds = -1, floats = -1;
        clt_net_sync_plan(net, &rounds, &floats);
        CHECK(rounds == cases[k].rounds && floats == cases[k].floats, "%s: plan %d rounds of %d floats", spec,
              rounds, floats);
        double plain = 0, synced = 0;
        CHECK_OK(clt_net_forward(net, img, N, 1));
        CHECK_OK(clt_net_backward(net, lab, 0.25f, &plain, NULL));
        sync_count c = {0, 0};
        clt_sync hook = {count_round, &c};
        CHECK_OK(clt_net_set_input(net, img, N, NULL));
        CHECK_OK(clt_net_set_labels(net, lab, N));
        CHECK_OK(clt_net_forward_device(net, 1, &hook, N));
        CHECK_OK(clt_net_backward_device(net, &hook, 0.25f, NULL, NULL));
        CHECK_OK(clt_net_read_stats(net, &synced, NULL));
        CHECK(c.calls == rounds && c.most == floats, "%s: %d rounds of at most %d floats made, %d of %d declared",
              spec, c.calls, c.most, rounds, floats);
        CHECK(plain == synced, "%s: loss %.9g synced on one device, %.9g not", spec, synced, plain);
        clt_net_destroy(net);
    }
}

int main(void)
{
    spec_errors();
    test_need_devices(1);
    clt_device *dev = NULL;
    REQUIRE_OK(clt_device_open(0, &dev));
    names_and_init(dev);
    sync_rounds(dev);
    against_reference(dev, "lenet", 1, 28, 28, 3, 3);
    against_reference(dev, "lenet-max", 1, 28, 28, 1, 3);
    against_reference(dev, "conv:3:3:1:1,sigmoid,maxpool:3:2,conv:4:3:2:1,tanh,avgpool:2:1,flatten,dense:5,relu,dense:3",
                      2, 13, 11, 4, 3);
    against_reference(dev, "conv:6:1,relu,conv:5:3:3:2,gap,dense:4", 3, 9, 10, 2, 3);
    against_reference(dev, "flatten,dense:7,tanh,dense:3", 1, 5, 5, 5, 3);
    against_reference(dev, "conv:4:3:1:1,bn,relu,res:4,res:6:2,gap,bn,dense:3", 2, 7, 6, 3, 3);
    against_reference(dev, "a.b=conv:3:3,bn,relu,blk=res:5:1,flatten,dense:4", 1, 6, 6, 2, 3);
    /* A first layer's 2x2 pooling, after its relu or alone, fused
     * where the direct kernels run (CPU devices): odd channel blocks, rows
     * whose last vector slides back, a pooling after it. */
    against_reference(dev, "conv:6:3,relu,avgpool:2,conv:3:3,relu,avgpool:2,flatten,dense:3", 1, 18, 20, 3, 3);
    against_reference(dev, "conv:5:3,avgpool:2,flatten,dense:4", 1, 20, 18, 2, 3);
    against_reference(dev, "conv:6:3,relu,maxpool:2,conv:3:3,relu,maxpool:2,flatten,dense:3", 1, 18, 20, 3, 3);
    against_reference(dev, "conv:5:3,maxpool:2,flatten,dense:4", 1, 20, 18, 2, 3);
    /* dense layers fuse where they run the lanes kernels (CPU devices) */
    int dense_fuse = clt_dense_fuses(dev), lanes = 0;
    REQUIRE_OK(clt_conv_uses_lanes(dev, &lanes));
    /* conv2's relu and pooling fuse into its lanes copies */
    fused_equals_separate(dev, "lenet", 1, 28, 28, 5, 1 + 1 + dense_fuse + 2 * lanes);
    fused_equals_separate(dev, "conv:6:3,relu,avgpool:2,conv:3:3,relu,avgpool:2,flatten,dense:3", 1, 18, 20, 7,
                          2 + 2 * lanes);
    fused_equals_separate(dev, "conv:5:3,avgpool:2,flatten,dense:4", 1, 20, 18, 3, lanes);
    fused_equals_separate(dev, "lenet-max", 1, 28, 28, 5, 1 + 1 + dense_fuse + 2 * lanes);
    inference_backward(dev, "conv:4:3,relu,conv:3:3,maxpool:2,flatten,dense:3", 3);
    inference_backward(dev, "conv:4:3,relu,conv:3:3,maxpool:3:2,flatten,dense:3", 3);
    settings_between(dev);
    fused_equals_separate(dev, "conv:6:3,relu,maxpool:2,conv:3:3,relu,maxpool:2,flatten,dense:3", 1, 18, 20, 7,
                          2 + 2 * lanes);
    fused_equals_separate(dev, "conv:5:3,maxpool:2,flatten,dense:4", 1, 20, 18, 3, lanes);
    /* not fused: odd rows, c*k*k > 9, a 3x3 window, not the first layer */
    fused_equals_separate(dev, "conv:4:3,relu,avgpool:2,flatten,dense:3", 1, 19, 18, 3, 1);
    fused_equals_separate(dev, "conv:4:3,relu,avgpool:2,flatten,dense:3", 2, 18, 18, 3, 1);
    fused_equals_separate(dev, "conv:4:3,relu,avgpool:3:2,flatten,dense:3", 1, 18, 18, 3, 1);
    fused_equals_separate(dev, "conv:4:3,relu,maxpool:2:1,flatten,dense:3", 1, 18, 18, 3, 1);
    fused_equals_separate(dev, "conv:1:1,conv:4:3,relu,avgpool:2,flatten,dense:3", 1, 18, 18, 3, 1);
    /* the first layer with parameters after one without */
    fused_equals_separate(dev, "maxpool:1,conv:4:3,relu,avgpool:2,flatten,dense:3", 1, 18, 18, 3, 1 + lanes);
    /* the AVX-512 width's kernels, and a work-buffer budget too small for
     * the weight gradient's partial sums (one chunk then) */
    clt_device_settings keep = *clt_device_get_settings(dev), tiny = keep;
    int width = dev->native_float_width;
    dev->native_float_width = 16;
    fused_equals_separate(dev, "lenet-max", 1, 28, 28, 5, 1 + 1 + dense_fuse + 2 * lanes);
    inference_backward(dev, "conv:4:3,relu,conv:3:3,maxpool:2,flatten,dense:3", 3);
    inference_backward(dev, "conv:4:3,relu,conv:3:3,maxpool:3:2,flatten,dense:3", 3);
    dev->native_float_width = width;
    tiny.conv_budget = 64;
    REQUIRE_OK(clt_device_set_settings(dev, &tiny));
    fused_equals_separate(dev, "lenet-max", 1, 28, 28, 9, 1 + 1 + dense_fuse + lanes);
    fused_equals_separate(dev, "lenet", 1, 28, 28, 9, 1 + 1 + dense_fuse + lanes);
    REQUIRE_OK(clt_device_set_settings(dev, &keep));
    fused_equals_separate(dev, "conv:4:3:2:1,relu,relu,conv:3:1,relu,flatten,dense:6,relu,dense:3,relu", 2, 9, 8, 4,
                          2 + 2 * dense_fuse);
    /* batch norm: after a conv, inside residual blocks (bn1's relu), and on features */
    fused_equals_separate(dev, "conv:4:3:1:1,bn,relu,res:4,res:6:2,gap,bn,relu,dense:3", 2, 7, 6, 3, 2);
    /* batches over 512 samples: dense layers split their weight
     * gradient's sum over the batch (a ReLU fused in or not) */
    against_reference(dev, "flatten,dense:9,relu,dense:3", 1, 4, 4, 600, 0);
    against_reference(dev, "flatten,dense:9,relu,dense:3", 1, 4, 4, 1030, 0);
    /* The whole builtin at its real size on a tiny batch (the blocks above
     * carry the finite differences). */
    against_reference(dev, "resnet18", 1, 28, 28, 2, 0);
    clt_device_destroy(dev);
    return test_result();
}
