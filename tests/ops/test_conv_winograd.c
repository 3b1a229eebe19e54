/* The winograd convolution's variants, F(2x2,3x3) and F(4x4,3x3), each in
 * chunks of the rule's size and of two tile positions (the weight
 * gradient summed over many chunks), against the float64 reference (ref_conv.c) on the
 * 3x3 stride-1 convolutions of the builtin models (batch 2) and on partial
 * tiles (odd sizes, 7x7, 4x4, outputs smaller than a tile), padding 0, 1
 * and 2, batch 1, channel counts that are no multiple of the kernels'
 * blocks; each pass's error must stay within its variant's bound (the
 * bounds and the measured errors: docs/ARCHITECTURE.md, numerics), and
 * finite differences of L = sum(y * r) through the device's forward agree
 * with its backward. test_conv.c runs winograd forced, F(2x2,3x3), through
 * the tensor API with the other algorithms' cases. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "op_harness.h"
#include "ops/conv_algo.h"
#include "ref_conv.h"
#include "runtime/device_impl.h"
#include "tensor/tensor.h"

static uint64_t rng = 0x3a11f0c1ull;

/* Error bounds, max |got - ref| / max |ref| against float64, per variant
 * (index wm / 4) and pass; the measured worst cases are a quarter to a half of
 * these (docs/ARCHITECTURE.md): F(4x4) loses about half a decimal digit. */
static const double bound[2][CLT_CONV_PASSES] = {{3e-6, 3e-6, 2e-6}, {1e-5, 1e-5, 3e-6}};
static double worst[2][CLT_CONV_PASSES];

typedef struct wcase {
    ref_conv_shape r;
    double *x, *w, *b, *dy, *y, *dx, *dw; /* inputs, float64 results */
    clt_tensor *tx, *tw, *tb, *tdy, *ty, *tdx, *tdw;
} wcase;

static double *filled(size_t n)
{
    double *d = ref_conv_alloc(n, sizeof *d);
    float *f = ref_conv_alloc(n, sizeof *f);
    ref_conv_fill(f, n, &rng, -1, 1);
    for (size_t i = 0; i < n; i++) d[i] = f[i];
    free(f);
    return d;
}

static clt_tensor *tensor_of(clt_device *dev, const int64_t *shape, int ndim, const double *v)
{
    clt_tensor *t = NULL;
    REQUIRE_OK(clt_tensor_create(dev, CLT_DTYPE_FLOAT32, ndim, shape, &t));
    if (v) {
        size_t n = (size_t)clt_tensor_numel(t);
        float *f = ref_conv_alloc(n, sizeof *f);
        for (size_t i = 0; i < n; i++) f[i] = (float)v[i];
        REQUIRE_OK(clt_tensor_upload(t, f, (int64_t)n));
        free(f);
    }
    return t;
}

static void wcase_make(clt_device *dev, wcase *c, int n, int ch, int h, int w, int co, int p)
{
    memset(c, 0, sizeof *c);
    REQUIRE(ref_conv_shape_init(&c->r, n, ch, h, w, co, 3, 1, p), "bad case");
    size_t nx = ref_conv_x_size(&c->r), nw = ref_conv_w_size(&c->r), ny = ref_conv_y_size(&c->r);
    c->x = filled(nx), c->w = filled(nw), c->b = filled((size_t)co), c->dy = filled(ny);
    c->y = ref_conv_alloc(ny, sizeof(double));
    c->dx = ref_conv_alloc(nx, sizeof(double));
    c->dw = ref_conv_alloc(nw, sizeof(double));
    ref_conv_forward_f64(&c->r, c->x, c->w, c->b, c->y);
    ref_conv_backward_f64(&c->r, c->x, c->w, c->dy, c->dx, c->dw, NULL);
    int64_t xs[4] = {n, ch, h, w}, ws[4] = {co, ch, 3, 3}, bs[1] = {co}, ys[4] = {n, co, c->r.oh, c->r.ow};
    c->tx = tensor_of(dev, xs, 4, c->x), c->tw = tensor_of(dev, ws, 4, c->w), c->tb = tensor_of(dev, bs, 1, c->b);
    c->tdy = tensor_of(dev, ys, 4, c->dy), c->ty = tensor_of(dev, ys, 4, NULL);
    c->tdx = tensor_of(dev, xs, 4, NULL), c->tdw = tensor_of(dev, ws, 4, NULL);
}

static void wcase_free(wcase *c)
{
    free(c->x), free(c->w), free(c->b), free(c->dy), free(c->y), free(c->dx), free(c->dw);
    clt_tensor *t[] = {c->tx, c->tw, c->tb, c->tdy, c->ty, c->tdx, c->tdw};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) clt_tensor_destroy(t[i]);
}

/* max |got - ref| / max |ref| of a device tensor against float64 values. */
static double err64(const clt_tensor *t, const double *ref)
{
    size_t n = (size_t)clt_tensor_numel(t);
    float *got = ref_conv_alloc(n, sizeof *got);
    REQUIRE_OK(clt_tensor_download(t, got, (int64_t)n));
    double scale = 1e-30, e = 0;
    for (size_t i = 0; i < n; i++) {
        scale = fmax(scale, fabs(ref[i]));
        double d = fabs((double)got[i] - ref[i]);
        e = d == d ? fmax(e, d) : INFINITY;
    }
    free(got);
    return e / scale;
}

static int fused_ran; /* cases the fused kernel took */

/* A plan of the case's geometry with every pass on winograd F(wm x wm)
 * in chunks of kib KiB; fused, the weight gradient in chunks of two
 * tile positions (it has no fused kernel), or NULL where the device's
 * local memory does not hold the fused kernel's. The fused kernel is
 * planned on any device here, taken for a CPU, so that a GPU-type
 * simulator (tools/oclgrind-check) checks its accesses too. */
static clt_conv_plan *variant_plan(clt_device *dev, const wcase *c, int wm, int kib)
{
    clt_device_settings s = *clt_device_get_settings(dev);
    s.conv_algo = CLT_CONV_ALGO_WINOGRAD;
    REQUIRE_OK(clt_device_set_settings(dev, &s));
    clt_conv_geom g;
    REQUIRE_OK(clt_conv_geom_init(&g, c->r.n, c->r.c, c->r.h, c->r.w, c->r.co, 3, 1, c->r.p));
    clt_conv_plan *plan = NULL;
    REQUIRE_OK(clt_conv_plan_ensure(dev, &g, &plan));
    clt_device_type type = dev->info.type;
    dev->info.type = CLT_DEVICE_CPU;
    for (int p = 0; p < CLT_CONV_PASSES; p++) {
        int fused = kib == CLT_CONV_WINOGRAD_FUSED;
        if (fused && p == CLT_CONV_BWD_WEIGHTS) {
            REQUIRE(clt_conv_winograd_use(dev, plan, p, wm, 1), "winograd F(%d) does not take pass %d", wm, p);
        } else if (!clt_conv_winograd_use(dev, plan, p, wm, kib)) {
            REQUIRE(fused, "winograd F(%d) ck%d does not take pass %d", wm, kib, p);
            dev->info.type = type;
            clt_conv_plan_destroy(plan);
            return NULL;
        }
    }
    dev->info.type = type;
    fused_ran += kib == CLT_CONV_WINOGRAD_FUSED;
    return plan;
}

#define CASE_FMT "n=%d c=%d h=%d w=%d co=%d p=%d F(%dx%d,3x3) ck%d"
#define CASE_ARGS(c, wm, kib) (c)->r.n, (c)->r.c, (c)->r.h, (c)->r.w, (c)->r.co, (c)->r.p, wm, wm, kib

static void check_variant(clt_device *dev, wcase *c, int wm, int kib)
{
    clt_conv_plan *plan = variant_plan(dev, c, wm, kib);
    if (!plan) return;
    CHECK_OK(clt_tensor_fill(c->ty, NAN));
    CHECK_OK(clt_tensor_fill(c->tdx, NAN));
    CHECK_OK(clt_tensor_fill(c->tdw, NAN));
    CHECK_OK(clt_conv_plan_forward(dev, plan, c->tx->buf, c->tw->buf, c->tb->buf, NULL, c->ty->buf));
    CHECK_OK(clt_conv_plan_backward(dev, plan, c->tx->buf, c->tw->buf, c->tdy->buf, NULL, c->tdx->buf, c->tdw->buf,
                                    NULL));
    const clt_tensor *got[CLT_CONV_PASSES] = {c->ty, c->tdx, c->tdw};
    const double *ref[CLT_CONV_PASSES] = {c->y, c->dx, c->dw};
    for (int p = 0; p < CLT_CONV_PASSES; p++) {
        double e = err64(got[p], ref[p]);
        worst[wm / 4][p] = fmax(worst[wm / 4][p], e);
        CHECK(e < bound[wm / 4][p], "%s " CASE_FMT ": rel err %g over the bound %g", clt_conv_pass_names[p],
              CASE_ARGS(c, wm, kib), e, bound[wm / 4][p]);
    }
    clt_conv_plan_destroy(plan);
}

static void run_variants(clt_device *dev, int n, int ch, int h, int w, int co, int p)
{
    wcase c;
    wcase_make(dev, &c, n, ch, h, w, co, p);
    for (int wm = 2; wm <= 4; wm += 2) {
        check_variant(dev, &c, wm, CLT_CONV_WINOGRAD_RULE_KIB);
        check_variant(dev, &c, wm, 1); /* two tile positions per chunk */
        check_variant(dev, &c, wm, CLT_CONV_WINOGRAD_FUSED);
    }
    wcase_free(&c);
}

static void report(void)
{
    for (int v = 0; v < 2; v++)
        printf("F(%dx%d,3x3) worst rel err: fwd %.2g, bwd-data %.2g, bwd-weights %.2g\n", 2 + 2 * v, 2 + 2 * v,
               worst[v][0], worst[v][1], worst[v][2]);
}

/* The weight gradient in chunks of several image groups, 40 images: each
 * one F(4x4) tile (4x4), in one chunk at the rule's size (ni 40) and in 32
 * and 8 at 300 KiB; 16 F(2x2) tiles each (8x8), in 32 and 8 at 1600 KiB
 * (the forward passes in 16s). */
static void test_image_groups(clt_device *dev)
{
    static const struct {
        int hw, wm, kib, ni;
    } v[] = {{4, 4, CLT_CONV_WINOGRAD_RULE_KIB_BWDW, 40}, {4, 4, 300, 32}, {8, 2, 1600, 32}};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        wcase c;
        wcase_make(dev, &c, 40, 4, v[i].hw, v[i].hw, 6, 1);
        clt_conv_plan *plan = variant_plan(dev, &c, v[i].wm, v[i].kib);
        int ni = plan->winograd.cfg[CLT_CONV_BWD_WEIGHTS].ni;
        CHECK(ni == v[i].ni, "F(%d) ck%d: the weight gradient takes %d images a chunk, expected %d", v[i].wm, v[i].kib,
              ni, v[i].ni);
        clt_conv_plan_destroy(plan);
        check_variant(dev, &c, v[i].wm, v[i].kib);
        wcase_free(&c);
    }
}

static void test_shapes(clt_device *dev)
{
    static const int cases[][6] = {
        {1, 3, 7, 7, 5, 1},    /* 7x7: partial tiles of both sizes; batch 1 */
        {2, 5, 4, 4, 3, 0},    /* 2x2 output: one F(2) tile, half an F(4) */
        {2, 17, 9, 11, 19, 1}, /* odd sizes and channel counts */
        {3, 1, 3, 3, 1, 0},    /* 1x1 output, one channel */
        {2, 3, 5, 6, 4, 2},    /* padding 2: backward-data without padding */
        {1, 9, 4, 4, 33, 1},   /* 4x4, 33 outputs: a partial block of 8 */
        {5, 2, 13, 6, 7, 1},   /* several images per chunk */
        {17, 3, 6, 7, 4, 1},   /* two image groups, the second of one image */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const int *v = cases[i];
        run_variants(dev, v[0], v[1], v[2], v[3], v[4], v[5]);
    }
    test_image_groups(dev);
    report();
    CHECK(fused_ran > 0, "the fused kernel took none of the small cases");
}

/* The 3x3 stride-1 convolutions of the builtin models at batch 2. */
static void test_models(clt_device *dev)
{
    clt_op_case *mc;
    int n = op_model_cases(CLT_OP_CONV, 2, &mc), ran = 0;
    for (int i = 0; i < n; i++)
        if (mc[i].k == 3 && mc[i].stride == 1)
            run_variants(dev, mc[i].n, mc[i].c, mc[i].h, mc[i].w, mc[i].co, mc[i].pad), ran++;
    CHECK(ran >= 4, "%d 3x3 stride-1 model convolutions, expected ResNet-18's 4 at least", ran);
    free(mc);
    report();
}

/* L(x, w) = sum(y * r) through the device's forward. */
static double loss(clt_device *dev, const clt_conv_plan *plan, wcase *c)
{
    REQUIRE_OK(clt_conv_plan_forward(dev, plan, c->tx->buf, c->tw->buf, c->tb->buf, NULL, c->ty->buf));
    size_t n = ref_conv_y_size(&c->r);
    float *y = ref_conv_alloc(n, sizeof *y);
    REQUIRE_OK(clt_tensor_download(c->ty, y, (int64_t)n));
    double l = 0;
    for (size_t i = 0; i < n; i++) l += y[i] * c->dy[i];
    free(y);
    return l;
}

/* Central differences of L in each element of x and w (L is linear in
 * each: exact but for rounding) against the device's dx and dw. */
static void fd_case(clt_device *dev, int wm, int n, int ch, int h, int w, int co, int p)
{
    wcase c;
    wcase_make(dev, &c, n, ch, h, w, co, p);
    clt_conv_plan *plan = variant_plan(dev, &c, wm, 1);
    CHECK_OK(clt_conv_plan_backward(dev, plan, c.tx->buf, c.tw->buf, c.tdy->buf, NULL, c.tdx->buf, c.tdw->buf, NULL));
    double *vals[2] = {c.x, c.w};
    clt_tensor *ts[2] = {c.tx, c.tw}, *gs[2] = {c.tdx, c.tdw};
    size_t sizes[2] = {ref_conv_x_size(&c.r), ref_conv_w_size(&c.r)};
    for (int a = 0; a < 2; a++) {
        float *grad = ref_conv_alloc(sizes[a], sizeof *grad), *f = ref_conv_alloc(sizes[a], sizeof *f);
        REQUIRE_OK(clt_tensor_download(gs[a], grad, (int64_t)sizes[a]));
        double gmax = 1e-3, bad = 0;
        for (size_t j = 0; j < sizes[a]; j++) gmax = fmax(gmax, fabs(grad[j])), f[j] = (float)vals[a][j];
        for (size_t j = 0; j < sizes[a]; j++) {
            float keep = f[j];
            f[j] = keep + 0.5f;
            REQUIRE_OK(clt_tensor_upload(ts[a], f, (int64_t)sizes[a]));
            double lp = loss(dev, plan, &c);
            f[j] = keep - 0.5f;
            REQUIRE_OK(clt_tensor_upload(ts[a], f, (int64_t)sizes[a]));
            double lm = loss(dev, plan, &c);
            f[j] = keep;
            REQUIRE_OK(clt_tensor_upload(ts[a], f, (int64_t)sizes[a]));
            bad = fmax(bad, fabs(lp - lm - grad[j]));
        }
        CHECK(bad < 2e-3 * gmax, "finite differences F(%d) n=%d c=%d %dx%d co=%d p=%d: %s worst %g of max %g", wm, n,
              ch, h, w, co, p, a ? "dw" : "dx", bad, gmax);
        free(grad), free(f);
    }
    clt_conv_plan_destroy(plan);
    wcase_free(&c);
}

static void test_fd(clt_device *dev)
{
    for (int wm = 2; wm <= 4; wm += 2) {
        fd_case(dev, wm, 2, 3, 6, 5, 2, 1);
        fd_case(dev, wm, 1, 2, 7, 7, 3, 0);
    }
}

/* A fused ReLU (chunked and fused kernels): the forward stores relu(y) and the backward reads dy
 * through its derivative, both bit for bit the separate passes'. */
static void test_epilogue(clt_device *dev)
{
    wcase c;
    wcase_make(dev, &c, 2, 5, 7, 9, 6, 1);
    for (int v = 0; v < 4; v++) {
        int wm = 2 + v / 2 * 2, kib = v % 2 ? CLT_CONV_WINOGRAD_FUSED : 1;
        clt_conv_plan *plan = variant_plan(dev, &c, wm, kib);
        if (!plan) continue;
        size_t ny = ref_conv_y_size(&c.r), nx = ref_conv_x_size(&c.r), nw = ref_conv_w_size(&c.r);
        int64_t ys[4] = {c.r.n, c.r.co, c.r.oh, c.r.ow};
        clt_tensor *yr = tensor_of(dev, ys, 4, NULL), *dym = tensor_of(dev, ys, 4, NULL);
        clt_tensor *dx2 = tensor_of(dev, (int64_t[]){c.r.n, c.r.c, c.r.h, c.r.w}, 4, NULL);
        clt_tensor *dw2 = tensor_of(dev, (int64_t[]){c.r.co, c.r.c, 3, 3}, 4, NULL);
        clt_epilogue fwd = {.relu = 1}, bwd = {.relu = 1, .y = yr->buf};
        CHECK_OK(clt_conv_plan_forward(dev, plan, c.tx->buf, c.tw->buf, c.tb->buf, &fwd, yr->buf));
        CHECK_OK(clt_conv_plan_forward(dev, plan, c.tx->buf, c.tw->buf, c.tb->buf, NULL, c.ty->buf));
        float *y = ref_conv_alloc(ny, sizeof *y), *yf = ref_conv_alloc(ny, sizeof *yf);
        float *dy = ref_conv_alloc(ny, sizeof *dy);
        REQUIRE_OK(clt_tensor_download(c.ty, y, (int64_t)ny));
        REQUIRE_OK(clt_tensor_download(yr, yf, (int64_t)ny));
        size_t bad = 0;
        for (size_t i = 0; i < ny; i++) {
            float want = y[i] < 0.0f ? 0.0f : y[i];
            bad += memcmp(&want, &yf[i], sizeof want) != 0;
            dy[i] = yf[i] > 0.0f ? (float)c.dy[i] : 0.0f;
        }
        CHECK(bad == 0, "F(%d) fused forward: %zu values differ from relu(forward)", wm, bad);
        REQUIRE_OK(clt_tensor_upload(dym, dy, (int64_t)ny));
        CHECK_OK(clt_conv_plan_backward(dev, plan, c.tx->buf, c.tw->buf, c.tdy->buf, &bwd, c.tdx->buf, c.tdw->buf,
                                        NULL));
        CHECK_OK(clt_conv_plan_backward(dev, plan, c.tx->buf, c.tw->buf, dym->buf, NULL, dx2->buf, dw2->buf, NULL));
        const clt_tensor *a[2] = {c.tdx, c.tdw}, *b[2] = {dx2, dw2};
        size_t sz[2] = {nx, nw};
        for (int k = 0; k < 2; k++) {
            float *fa = ref_conv_alloc(sz[k], sizeof *fa), *fb = ref_conv_alloc(sz[k], sizeof *fb);
            REQUIRE_OK(clt_tensor_download(a[k], fa, (int64_t)sz[k]));
            REQUIRE_OK(clt_tensor_download(b[k], fb, (int64_t)sz[k]));
            CHECK(memcmp(fa, fb, sz[k] * sizeof *fa) == 0, "F(%d) fused backward %s differs from the masked dy's",
                  wm, k ? "dw" : "dx");
            free(fa), free(fb);
        }
        free(y), free(yf), free(dy);
        clt_tensor_destroy(yr), clt_tensor_destroy(dym), clt_tensor_destroy(dx2), clt_tensor_destroy(dw2);
        clt_conv_plan_destroy(plan);
    }
    wcase_free(&c);
}

/* Fused and chunked kernels do the same arithmetic in the same order:
 * forward and backward-data bit for bit, with a ReLU on either side. */
static void test_fused_bits(clt_device *dev)
{
    static const int cases[][6] = {{17, 3, 6, 7, 4, 1}, {2, 17, 9, 11, 19, 1}, {3, 9, 5, 6, 10, 2}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const int *v = cases[i];
        wcase c;
        wcase_make(dev, &c, v[0], v[1], v[2], v[3], v[4], v[5]);
        for (int wm = 2; wm <= 4; wm += 2) {
            clt_conv_plan *chunked = variant_plan(dev, &c, wm, 1);
            clt_conv_plan *fused = variant_plan(dev, &c, wm, CLT_CONV_WINOGRAD_FUSED);
            if (!fused) {
                clt_conv_plan_destroy(chunked);
                continue;
            }
            clt_epilogue relu = {.relu = 1}, masked = {.relu = 1, .y = c.tdy->buf};
            clt_tensor *out[2][2] = {{c.ty, c.tdx}, {0}};
            int64_t ys[4] = {c.r.n, c.r.co, c.r.oh, c.r.ow}, xs[4] = {c.r.n, c.r.c, c.r.h, c.r.w};
            out[1][0] = tensor_of(dev, ys, 4, NULL);
            out[1][1] = tensor_of(dev, xs, 4, NULL);
            const clt_conv_plan *plans[2] = {chunked, fused};
            for (int k = 0; k < 2; k++) {
                CHECK_OK(clt_conv_plan_forward(dev, plans[k], c.tx->buf, c.tw->buf, c.tb->buf, &relu, out[k][0]->buf));
                CHECK_OK(clt_conv_plan_backward(dev, plans[k], c.tx->buf, c.tw->buf, c.tdy->buf, &masked,
                                                out[k][1]->buf, NULL, NULL));
            }
            size_t sz[2] = {ref_conv_y_size(&c.r), ref_conv_x_size(&c.r)};
            for (int t = 0; t < 2; t++) {
                float *a = ref_conv_alloc(sz[t], sizeof *a), *b = ref_conv_alloc(sz[t], sizeof *b);
                REQUIRE_OK(clt_tensor_download(out[0][t], a, (int64_t)sz[t]));
                REQUIRE_OK(clt_tensor_download(out[1][t], b, (int64_t)sz[t]));
                CHECK(memcmp(a, b, sz[t] * sizeof *a) == 0, "F(%d) n=%d c=%d %dx%d co=%d p=%d: fused %s differs", wm,
                      v[0], v[1], v[2], v[3], v[4], v[5], t ? "backward-data" : "forward");
                free(a), free(b);
            }
            clt_tensor_destroy(out[1][0]), clt_tensor_destroy(out[1][1]);
            clt_conv_plan_destroy(chunked), clt_conv_plan_destroy(fused);
        }
        wcase_free(&c);
    }
}

/* Forced, winograd takes 3x3 stride-1 passes only; the rest go where the
 * device's own order puts them. */
static void test_forced(clt_device *dev)
{
    clt_device_settings s = *clt_device_get_settings(dev);
    s.conv_algo = CLT_CONV_ALGO_WINOGRAD;
    REQUIRE_OK(clt_device_set_settings(dev, &s));
    static const int shapes[][4] = {{3, 1, 1, 1}, {3, 1, 0, 1}, {3, 2, 1, 0}, {5, 1, 2, 0}, {1, 1, 0, 0}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        const int *v = shapes[i];
        clt_conv_geom g;
        REQUIRE_OK(clt_conv_geom_init(&g, 2, 4, 9, 9, 4, v[0], v[1], v[2]));
        clt_conv_plan *plan = NULL;
        REQUIRE_OK(clt_conv_plan_ensure(dev, &g, &plan));
        for (int p = 0; p < CLT_CONV_PASSES; p++) {
            int is = strcmp(clt_conv_plan_algo(plan, p), "winograd") == 0;
            CHECK(is == v[3], "k%d s%d p%d %s: runs %s", v[0], v[1], v[2], clt_conv_pass_names[p],
                  clt_conv_plan_algo(plan, p));
        }
        clt_conv_plan_destroy(plan);
    }
    s.conv_algo = CLT_CONV_ALGO_AUTO;
    REQUIRE_OK(clt_device_set_settings(dev, &s));
}

/* The tuner (CLTRAIN_TUNE on): offering F(2x2) (the default), a 3x3
 * stride-1 pass runs winograd or the algorithm it was planned with, as
 * measured, and is right either way; a second plan takes the kept choice;
 * tuning off keeps the rule, and so does a tuner told to offer nothing
 * (CLTRAIN_CONV_WINOGRAD=0: never winograd); forced, it chooses among winograd's configurations,
 * F(4x4) for the backward passes, for the forward only where the settings
 * allow it (CLTRAIN_CONV_WINOGRAD=4). */
static void test_tuner(clt_device *dev)
{
    wcase c;
    wcase_make(dev, &c, 4, 16, 12, 12, 16, 1);
    clt_conv_geom g;
    REQUIRE_OK(clt_conv_geom_init(&g, c.r.n, c.r.c, c.r.h, c.r.w, c.r.co, 3, 1, c.r.p));
    static const int modes[][3] = {{CLT_CONV_ALGO_AUTO, CLT_TUNE_ON, CLT_WINOGRAD_F2},
                                   {CLT_CONV_ALGO_AUTO, CLT_TUNE_ON, CLT_WINOGRAD_F2},
                                   {CLT_CONV_ALGO_AUTO, CLT_TUNE_OFF, CLT_WINOGRAD_F2},
                                   {CLT_CONV_ALGO_WINOGRAD, CLT_TUNE_ON, CLT_WINOGRAD_NONE},
                                   {CLT_CONV_ALGO_WINOGRAD, CLT_TUNE_ON, CLT_WINOGRAD_F4},
                                   {CLT_CONV_ALGO_AUTO, CLT_TUNE_ON, CLT_WINOGRAD_NONE}};
    const char *first[CLT_CONV_PASSES] = {0};
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
        clt_device_settings s = *clt_device_get_settings(dev);
        s.conv_algo = modes[m][0];
        s.tune = modes[m][1];
        s.conv_winograd = modes[m][2];
        REQUIRE_OK(clt_device_set_settings(dev, &s));
        clt_conv_plan *plan = NULL;
        REQUIRE_OK(clt_conv_plan_ensure(dev, &g, &plan));
        for (int p = 0; p < CLT_CONV_PASSES; p++) {
            char how[96];
            clt_conv_plan_describe(plan, p, how, sizeof how);
            const char *a = clt_conv_plan_algo(plan, p);
            int wino = strcmp(a, "winograd") == 0;
            printf("mode %zu %s: %s\n", m, clt_conv_pass_names[p], how);
            if (m == 0) first[p] = a;
            if (m == 1) CHECK(!strcmp(a, first[p]), "%s: the kept choice %s, then %s", clt_conv_pass_names[p], first[p], a);
            if (m == 2 || m == 5) CHECK(!wino, "%s: winograd in mode %zu", clt_conv_pass_names[p], m);
            if (m == 3 || m == 4) CHECK(wino && strstr(how, "tuned"), "%s forced: %s", clt_conv_pass_names[p], how);
            if (m == 3 && p == CLT_CONV_FWD)
                CHECK(strstr(how, "f2 ") != NULL, "%s: F(4x4) without the setting: %s", clt_conv_pass_names[p], how);
            if (modes[m][1] == CLT_TUNE_ON && wino) CHECK(strstr(how, "tuned") != NULL, "%s: %s", clt_conv_pass_names[p], how);
        }
        CHECK_OK(clt_conv_plan_forward(dev, plan, c.tx->buf, c.tw->buf, c.tb->buf, NULL, c.ty->buf));
        CHECK_OK(clt_conv_plan_backward(dev, plan, c.tx->buf, c.tw->buf, c.tdy->buf, NULL, c.tdx->buf, c.tdw->buf, NULL));
        const clt_tensor *got[CLT_CONV_PASSES] = {c.ty, c.tdx, c.tdw};
        const double *ref[CLT_CONV_PASSES] = {c.y, c.dx, c.dw};
        for (int p = 0; p < CLT_CONV_PASSES; p++) {
            double e = err64(got[p], ref[p]);
            CHECK(e < bound[1][p], "mode %zu %s: rel err %g", m, clt_conv_pass_names[p], e);
        }
        clt_conv_plan_destroy(plan);
    }
    clt_device_settings s = *clt_device_get_settings(dev);
    s.conv_algo = CLT_CONV_ALGO_AUTO;
    s.tune = CLT_TUNE_AUTO;
    s.conv_winograd = CLT_WINOGRAD_F2;
    REQUIRE_OK(clt_device_set_settings(dev, &s));
    wcase_free(&c);
}

/* Every other visible device (the suite vendors: Intel's CPU runtime
 * beside PoCL, whose local memory and work-groups of one item differ):
 * the variants against the reference, fused and chunked bit for bit. */
static void test_every_device(void)
{
    int n = 0;
    REQUIRE_OK(clt_device_count(&n));
    for (int i = 1; i < n; i++) {
        clt_device *dev;
        REQUIRE_OK(clt_device_open(i, &dev));
        printf("device %d: %s\n", i, clt_device_get_info(dev)->name);
        test_shapes(dev);
        test_fused_bits(dev);
        clt_device_destroy(dev);
    }
}

static void run_shapes(const op_env *e) { test_shapes(e->dev); }
static void run_models(const op_env *e) { test_models(e->dev); }
static void run_fd(const op_env *e) { test_fd(e->dev); }
static void run_epilogue(const op_env *e) { test_epilogue(e->dev); }
static void run_fused_bits(const op_env *e) { test_fused_bits(e->dev); }
static void run_forced(const op_env *e) { test_forced(e->dev); }
static void run_tuner(const op_env *e) { test_tuner(e->dev); }
static void run_every_device(const op_env *e)
{
    (void)e;
    test_every_device();
}

static const op_test tests[] = {
    {"shapes", run_shapes},   {"models", run_models}, {"finite-differences", run_fd},
    {"epilogue", run_epilogue}, {"fused-bits", run_fused_bits}, {"forced", run_forced}, {"tuner", run_tuner},
    {"every-device", run_every_device},
};
OP_HARNESS_MAIN(tests)
