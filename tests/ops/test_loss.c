/* Fused softmax cross-entropy: loss sum, correct count and gradient against
 * the plain-C reference (odd shapes and the models' at batch 256),
 * first-maximum ties, finite differences, huge logits, the raw per-sample
 * stats, labels out of range and other errors. */
#include <string.h>

#include "op_harness.h"
#include "ops/loss.h"
#include "ref_misc.h"
#include "tensor/tensor.h"

static uint64_t rng = 0x5eed0004;

static void check_xent(clt_device *dev, int n, int classes, float spread, float scale, int ties)
{
    size_t nl = (size_t)n * classes;
    float *x = ref_misc_alloc(nl, 4);
    int32_t *lab = ref_misc_alloc((size_t)n, 4);
    ref_misc_fill(x, nl, &rng, -spread, spread);
    for (int i = 0; i < n; i++) lab[i] = ref_misc_randint(&rng, classes);
    if (ties) /* rows of equal logits: the first maximum (class 0) is the prediction */
        for (int i = 0; i < n; i += 2)
            for (int j = 0; j < classes; j++) x[(size_t)i * classes + j] = 0.25f;
    int *rc = ref_misc_alloc((size_t)n, sizeof *rc);
    float *rd = ref_misc_alloc(nl, 4);
    double rsum = ref_misc_xent(x, lab, n, classes, scale, NULL, rc, rd);
    int64_t rcorrect = 0;
    for (int i = 0; i < n; i++) rcorrect += rc[i];

    int64_t ls[2] = {n, classes}, labs[1] = {n};
    clt_tensor *tx = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, ls, x);
    clt_tensor *tl = ref_misc_tensor(dev, CLT_DTYPE_INT32, 1, labs, lab);
    clt_tensor *td = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, ls, NULL);
    ref_misc_poison(td);
    double sum = -1;
    int64_t correct = -1;
    CHECK_OK(clt_softmax_xent_forward(tx, tl, &sum, &correct));
    CHECK(fabs(sum - rsum) <= 1e-5 * fabs(rsum) + 1e-6 * n, "xent %dx%d: loss sum %.9g, reference %.9g", n,
          classes, sum, rsum);
    CHECK(correct == rcorrect, "xent %dx%d: %lld correct, reference %lld", n, classes, (long long)correct,
          (long long)rcorrect);
    CHECK_OK(clt_softmax_xent_forward(tx, tl, NULL, NULL)); /* outputs optional */
    CHECK_OK(clt_softmax_xent_backward(tx, tl, scale, td));
    float *d = ref_misc_download(td);
    double e = max_rel_err(rd, d, nl);
    CHECK(e < 2e-6, "xent backward %dx%d scale %g: rel err %g", n, classes, scale, e);
    free(x), free(lab), free(rc), free(rd), free(d);
    clt_tensor_destroy(tx), clt_tensor_destroy(tl), clt_tensor_destroy(td);
}

/* The internal launcher's per-sample stats, and dlogits with stats together. */
static void check_raw(const op_env *e)
{
    clt_device *dev = e->dev;
    enum { N = 9, C = 7 };
    float x[N * C], stats[2 * N], d[N * C], rd[N * C];
    int32_t lab[N];
    double rl[N];
    int rc[N];
    ref_misc_fill(x, N * C, &rng, -4, 4);
    for (int i = 0; i < N; i++) lab[i] = ref_misc_randint(&rng, C);
    ref_misc_xent(x, lab, N, C, 0.5f, rl, rc, rd);
    int64_t ls[2] = {N, C}, labs[1] = {N}, ss[1] = {2 * N};
    clt_tensor *tx = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, ls, x);
    clt_tensor *tl = ref_misc_tensor(dev, CLT_DTYPE_INT32, 1, labs, lab);
    clt_tensor *td = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, ls, NULL);
    clt_tensor *ts = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, ss, NULL);
    CHECK_OK(clt_xent_raw(dev, N, C, tx->buf, tl->buf, 0.5f, td->buf, ts->buf));
    CHECK_OK(clt_tensor_download(ts, stats, 2 * N));
    CHECK_OK(clt_tensor_download(td, d, N * C));
    for (int i = 0; i < N; i++) {
        CHECK(fabs(stats[2 * i] - rl[i]) < 1e-5 * (1 + rl[i]), "raw loss %d: %g vs %g", i, stats[2 * i], rl[i]);
        CHECK(stats[2 * i + 1] == (float)rc[i], "raw correct %d: %g vs %d", i, stats[2 * i + 1], rc[i]);
    }
    CHECK(max_rel_err(rd, d, N * C) < 2e-6, "raw dlogits differ");
    /* A bad label: NaN loss and NaN gradients for its row only. */
    lab[4] = C;
    CHECK_OK(clt_tensor_upload(tl, lab, N));
    CHECK_OK(clt_xent_raw(dev, N, C, tx->buf, tl->buf, 1.0f, td->buf, ts->buf));
    CHECK_OK(clt_tensor_download(ts, stats, 2 * N));
    CHECK_OK(clt_tensor_download(td, d, N * C));
    CHECK(isnan(stats[8]) && isnan(d[4 * C]) && !isnan(stats[6]) && !isnan(d[3 * C]),
          "raw bad label: loss %g grad %g", stats[8], d[4 * C]);
    clt_tensor_destroy(tx), clt_tensor_destroy(tl), clt_tensor_destroy(td), clt_tensor_destroy(ts);
}

/* A loss of the logits in tx (labels and settings in ctx). */
typedef double (*loss_of)(clt_tensor *tx, void *ctx);

/* The worst |d(factor * loss)/dx_i by central differences (step h) - g_i|
 * over the n logits x (uploaded to tx as they are perturbed). */
static double fd_worst(clt_tensor *tx, float *x, int n, const float *g, double factor, loss_of loss, void *ctx)
{
    const float h = 1e-2f;
    double worst = 0;
    for (int i = 0; i < n; i++) {
        double l[2];
        for (int side = 0; side < 2; side++) {
            float keep = x[i];
            x[i] = keep + (side ? -h : h);
            CHECK_OK(clt_tensor_upload(tx, x, n));
            x[i] = keep;
            l[side] = loss(tx, ctx);
        }
        worst = fmax(worst, fabs(factor * (l[0] - l[1]) / (2.0 * h) - g[i]));
    }
    return worst;
}

static double forward_sum(clt_tensor *tx, void *labels)
{
    double sum = 0;
    CHECK_OK(clt_softmax_xent_forward(tx, labels, &sum, NULL));
    return sum;
}

/* d(loss sum)/dlogits from the backward (scale 1) against central
 * differences of the device forward's double sum. */
static void fd_xent(clt_device *dev)
{
    enum { N = 4, C = 6 };
    float x[N * C], g[N * C];
    int32_t lab[N];
    ref_misc_fill(x, N * C, &rng, -3, 3);
    for (int i = 0; i < N; i++) lab[i] = ref_misc_randint(&rng, C);
    int64_t ls[2] = {N, C}, labs[1] = {N};
    clt_tensor *tx = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, ls, x);
    clt_tensor *tl = ref_misc_tensor(dev, CLT_DTYPE_INT32, 1, labs, lab);
    clt_tensor *td = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, ls, NULL);
    CHECK_OK(clt_softmax_xent_backward(tx, tl, 1.0f, td));
    CHECK_OK(clt_tensor_download(td, g, N * C));
    double worst = fd_worst(tx, x, N * C, g, 1.0, forward_sum, tl);
    CHECK(worst < 1e-3, "xent finite differences: worst abs err %g", worst);
    clt_tensor_destroy(tx), clt_tensor_destroy(tl), clt_tensor_destroy(td);
}

/* Logits far beyond exp's range give finite, exact losses and gradients. */
static void check_stability(const op_env *e)
{
    clt_device *dev = e->dev;
    enum { N = 4, C = 3 };
    const float x[N * C] = {1e4f, -1e4f, 0.0f,  /* label 0: loss 0 */
                            1e4f, -1e4f, 0.0f,  /* label 1: loss 2e4 */
                            -1e4f, -1e4f, -1e4f, /* equal: log 3 */
                            100.0f, 99.0f, -100.0f};
    const int32_t lab[N] = {0, 1, 2, 1};
    int64_t ls[2] = {N, C}, labs[1] = {N};
    clt_tensor *tx = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, ls, x);
    clt_tensor *tl = ref_misc_tensor(dev, CLT_DTYPE_INT32, 1, labs, lab);
    clt_tensor *td = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, ls, NULL);
    double sum = 0;
    int64_t correct = 0;
    CHECK_OK(clt_softmax_xent_forward(tx, tl, &sum, &correct));
    double want = 0 + 2e4 + log(3.0) + (1.0 + log(1.0 + exp(-1.0) + exp(-200.0)));
    CHECK(isfinite(sum) && fabs(sum - want) < 1e-3, "huge logits: loss %.9g, want %.9g", sum, want);
    CHECK(correct == 1, "huge logits: %lld correct, want 1 (row 0)", (long long)correct);
    float d[N * C], rd[N * C];
    CHECK_OK(clt_softmax_xent_backward(tx, tl, 1.0f, td));
    CHECK_OK(clt_tensor_download(td, d, N * C));
    ref_misc_xent(x, lab, N, C, 1.0f, NULL, NULL, rd);
    int finite = 1;
    for (int i = 0; i < N * C; i++) finite &= isfinite(d[i]);
    CHECK(finite && max_rel_err(rd, d, N * C) < 1e-6, "huge logits: gradient wrong or not finite");
    CHECK(d[0] == 0.0f && d[3] == 1.0f && d[4] == -1.0f, "huge logits: d = %g %g %g", d[0], d[3], d[4]);
    clt_tensor_destroy(tx), clt_tensor_destroy(tl), clt_tensor_destroy(td);
}

static void check_errors(const op_env *e)
{
    clt_device *dev = e->dev, *dev1 = e->dev1;
    int64_t ls[2] = {5, 4}, labs[1] = {5}, short_labs[1] = {4}, flat[1] = {20};
    int32_t lab[5] = {0, 3, 1, 4, 2};
    clt_tensor *x = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, ls, NULL);
    clt_tensor *x1d = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, flat, NULL);
    clt_tensor *l = ref_misc_tensor(dev, CLT_DTYPE_INT32, 1, labs, lab); /* sample 3 has label 4 */
    clt_tensor *lf = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, labs, NULL);
    clt_tensor *ls4 = ref_misc_tensor(dev, CLT_DTYPE_INT32, 1, short_labs, NULL);
    clt_tensor *d = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, ls, NULL);
    double sum = 123;
    int64_t correct = 456;
    clt_status s = clt_softmax_xent_forward(x, l, &sum, &correct);
    CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("label 4", "sample 3", "[0, 4)"),
          "label out of range: %s %s", clt_status_name(s), clt_last_error());
    CHECK(sum == 123 && correct == 456, "outputs written on error");
    s = clt_softmax_xent_backward(x, l, 1.0f, d);
    CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("label 4", "sample 3", NULL),
          "backward label out of range: %s %s", clt_status_name(s), clt_last_error());
    lab[3] = -1;
    CHECK_OK(clt_tensor_upload(l, lab, 5));
    s = clt_softmax_xent_forward(x, l, &sum, NULL);
    CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("label -1", "sample 3", NULL), "negative label: %s %s",
          clt_status_name(s), clt_last_error());
    s = clt_softmax_xent_forward(x, lf, &sum, NULL);
    CHECK(s == CLT_ERR_SHAPE && ref_misc_error_has("labels", "int32", NULL), "float labels: %s %s",
          clt_status_name(s), clt_last_error());
    s = clt_softmax_xent_forward(x, ls4, &sum, NULL);
    CHECK(s == CLT_ERR_SHAPE && ref_misc_error_has("labels", "(4)", "(5)"), "short labels: %s %s",
          clt_status_name(s), clt_last_error());
    s = clt_softmax_xent_forward(x1d, ls4, &sum, NULL);
    CHECK(s == CLT_ERR_SHAPE && ref_misc_error_has("logits", "(20)", NULL), "1-D logits: %s %s",
          clt_status_name(s), clt_last_error());
    s = clt_softmax_xent_forward(NULL, l, &sum, NULL);
    CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("logits is NULL", NULL, NULL), "NULL logits: %s",
          clt_last_error());
    s = clt_softmax_xent_forward(x, NULL, &sum, NULL);
    CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("labels is NULL", NULL, NULL), "NULL labels: %s",
          clt_last_error());
    lab[3] = 2;
    CHECK_OK(clt_tensor_upload(l, lab, 5));
    s = clt_softmax_xent_backward(x, l, 1.0f, x1d);
    CHECK(s == CLT_ERR_SHAPE && ref_misc_error_has("dlogits", "(20)", "(5, 4)"), "dlogits shape: %s %s",
          clt_status_name(s), clt_last_error());
    s = clt_softmax_xent_backward(x, l, 1.0f, NULL);
    CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("dlogits is NULL", NULL, NULL), "NULL dlogits: %s",
          clt_last_error());
    if (dev1) {
        clt_tensor *l1 = ref_misc_tensor(dev1, CLT_DTYPE_INT32, 1, labs, lab);
        s = clt_softmax_xent_forward(x, l1, &sum, NULL);
        CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("different devices", NULL, NULL),
              "other device: %s %s", clt_status_name(s), clt_last_error());
        clt_tensor_destroy(l1);
    }
    clt_tensor *all[] = {x, x1d, l, lf, ls4, d};
    for (size_t i = 0; i < 6; i++) clt_tensor_destroy(all[i]);
}

static void check_shapes(const op_env *e)
{
    check_xent(e->dev, 1, 1, 3, 1.0f, 0);
    check_xent(e->dev, 1, 10, 3, 1.0f, 0);
    check_xent(e->dev, 7, 3, 5, -2.0f, 1);
    check_xent(e->dev, 255, 10, 2, 1.0f, 1);
    check_xent(e->dev, 33, 1000, 20, 0.5f, 0);
}

/* The loss of the builtin models at batch 256, scaled to the mean. */
static void check_models(const op_env *e)
{
    clt_op_case *mc;
    int n = op_model_cases(CLT_OP_XENT, 256, &mc);
    for (int i = 0; i < n; i++) check_xent(e->dev, mc[i].n, mc[i].c, 8, 1.0f / (float)mc[i].n, 0);
    CHECK(n == 1, "the models have %d loss shapes, expected one of 10 classes", n);
    free(mc);
}

static void check_fd(const op_env *e) { fd_xent(e->dev); }

typedef struct smooth_case {
    clt_tensor *tl, *ts;
    int n, c;
    float smooth;
    float stats[64];
} smooth_case;

/* The loss sum of the smoothed launcher (per-row losses in k->stats). */
static double smooth_sum(clt_tensor *tx, void *ctx)
{
    smooth_case *k = ctx;
    CHECK_OK(clt_xent_smooth_raw(tx->dev, k->n, k->c, tx->buf, k->tl->buf, k->smooth, 0.5f, NULL, k->ts->buf));
    CHECK_OK(clt_tensor_download(k->ts, k->stats, 2 * k->n));
    double sum = 0;
    for (int i = 0; i < k->n; i++) sum += k->stats[2 * i];
    return sum;
}

/* Label smoothing (PyTorch's definition) against a double reference, and
 * its gradient against central differences of the loss sum. */
static void check_smoothing(const op_env *e)
{
    clt_device *dev = e->dev;
    enum { N = 5, C = 7 };
    const float smooth = 0.1f;
    float x[N * C], d[N * C];
    int32_t lab[N];
    ref_misc_fill(x, N * C, &rng, -4, 4);
    for (int i = 0; i < N; i++) lab[i] = ref_misc_randint(&rng, C);
    int64_t ls[2] = {N, C}, labs[1] = {N}, ss[1] = {2 * N};
    clt_tensor *tx = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, ls, x);
    clt_tensor *tl = ref_misc_tensor(dev, CLT_DTYPE_INT32, 1, labs, lab);
    clt_tensor *td = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, ls, NULL);
    clt_tensor *ts = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, ss, NULL);
    smooth_case k = {tl, ts, N, C, smooth, {0}};
    const float *stats = k.stats;
    smooth_sum(tx, &k);
    CHECK_OK(clt_xent_smooth_raw(dev, N, C, tx->buf, tl->buf, smooth, 0.5f, td->buf, ts->buf));
    CHECK_OK(clt_tensor_download(td, d, N * C));
    double worst_l = 0, worst_g = 0;
    for (int i = 0; i < N; i++) {
        const float *r = x + i * C;
        double sum = 0, logp_mean = 0;
        for (int j = 0; j < C; j++) sum += exp((double)r[j]);
        for (int j = 0; j < C; j++) logp_mean += (r[j] - log(sum)) / C;
        double nll = -(r[lab[i]] - log(sum));
        double want = (1 - (double)smooth) * nll + smooth * -logp_mean;
        worst_l = fmax(worst_l, fabs(stats[2 * i] - want) / (1 + want));
        for (int j = 0; j < C; j++) {
            double g = 0.5 * (exp(r[j]) / sum - (j == lab[i] ? 1 - (double)smooth : 0) - smooth / (double)C);
            worst_g = fmax(worst_g, fabs(d[i * C + j] - g));
        }
    }
    CHECK(worst_l < 1e-5, "smoothed loss: rel err %g", worst_l);
    CHECK(worst_g < 1e-6, "smoothed gradient: abs err %g", worst_g);
    /* d(0.5 * loss sum)/dx by central differences */
    double worst = fd_worst(tx, x, N * C, d, 0.5, smooth_sum, &k);
    CHECK(worst < 1e-3, "smoothed loss finite differences: worst abs err %g", worst);
    CHECK_FAIL(clt_xent_smooth_raw(dev, N, C, tx->buf, tl->buf, 1.0f, 1.0f, NULL, ts->buf), CLT_ERR_INVALID_ARG,
               "label smoothing 1");
    clt_tensor_destroy(tx), clt_tensor_destroy(tl), clt_tensor_destroy(td), clt_tensor_destroy(ts);
}

static const op_test tests[] = {
    {"shapes", check_shapes},         {"models", check_models}, {"raw", check_raw}, {"finite-differences", check_fd},
    {"stability", check_stability}, {"errors", check_errors}, {"label-smoothing", check_smoothing},
};
OP_HARNESS_MAIN(tests)
