/* 2-D convolution: forward and backward against the plain-C reference
 * (ref_conv.c) on random shapes covering stride 1..3, padding 0..2, kernel
 * 1/3/5, batch 1 and > 1, one and several channels, h != w, every register
 * block variant of the lanes and direct kernels (the direct ones at vector
 * widths 8 and 16; the backward-weights blocks
 * forced one by one; every configuration the tuner may pick), the direct kernels' row widths and copies, 1x1
 * layers with stride (subsampled lanes copies), partial rows, chunked sums;
 * both algorithms (device settings lanes, which includes the direct
 * kernels, and gemm) on each case; a work-buffer budget that forces the
 * chunked gemm path; the plan's choice of algorithm per pass and its reuse;
 * finite differences of L = sum(y * r) on the device; NULL outputs skipped,
 * outputs overwritten; determinism; argument errors (shapes, dtype,
 * devices, output size, stride, padding); bad CLTRAIN_CONV_* values
 * refused when a device opens; and every convolution of the builtin models
 * (their op cases) at batch 2; a fused ReLU's forward and backward per
 * algorithm, bit-equal to the separate passes. The geometry and the reference's own
 * adjoint are test_conv_geom.c. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "op_harness.h"
#include "runtime/device_impl.h"
#include "ops/conv.h"
#include "ops/conv_lanes.h"
#include "ops/pool.h"
#include "runtime/device.h"
#include "tensor/tensor.h"
#include "ref_conv.h"

/* Max |ref - got| / max |ref| must stay below this: float against a double
 * reference on sums of at most a few thousand terms is ~1e-6; any indexing
 * error gives O(1). */
#define TOL 1e-4

static uint64_t rng = 0xc0417e57ull;
/* winograd: forced, where it runs the shape (3x3, stride 1; lanes' or
 * implicit's choice elsewhere); test_conv_winograd.c has its variants */
static const char *const algos[] = {"lanes", "gemm", "implicit", "winograd"};
#define N_ALGOS (int)(sizeof algos / sizeof *algos)
#define N_PLAN_ALGOS 3 /* those test_plan names as the plan's choice for every shape */

/* Settings of dev with one field changed (the tests pass settings, not
 * the environment, which is read once when a device opens). */
static void set_algo(clt_device *dev, const char *a)
{
    clt_device_settings s = *clt_device_get_settings(dev);
    s.conv_algo = strcmp(a, "lanes") == 0      ? CLT_CONV_ALGO_LANES
                  : strcmp(a, "gemm") == 0     ? CLT_CONV_ALGO_GEMM
                  : strcmp(a, "winograd") == 0 ? CLT_CONV_ALGO_WINOGRAD
                                               : CLT_CONV_ALGO_IMPLICIT;
    REQUIRE_OK(clt_device_set_settings(dev, &s));
}

static void set_bwdw(clt_device *dev, int a, int b)
{
    clt_device_settings s = *clt_device_get_settings(dev);
    s.conv_bwdw_a = a;
    s.conv_bwdw_b = b;
    REQUIRE_OK(clt_device_set_settings(dev, &s));
}

static clt_tensor *tensor(clt_device *dev, int ndim, const int64_t *shape, const float *data)
{
    clt_tensor *t = NULL;
    REQUIRE_OK(clt_tensor_create(dev, CLT_DTYPE_FLOAT32, ndim, shape, &t));
    if (data) REQUIRE_OK(clt_tensor_upload(t, data, clt_tensor_numel(t)));
    return t;
}

static float *download(const clt_tensor *t)
{
    float *h = ref_conv_alloc((size_t)clt_tensor_numel(t), sizeof *h);
    REQUIRE_OK(clt_tensor_download(t, h, clt_tensor_numel(t)));
    return h;
}

/* Relative error of a device tensor against a reference array. */
static double tensor_err(const clt_tensor *t, const float *ref)
{
    float *h = download(t);
    double e = max_rel_err(ref, h, (size_t)clt_tensor_numel(t));
    free(h);
    return e;
}

typedef struct case_data {
    ref_conv_shape r;
    float *x, *w, *b, *dy;
    float *y, *dx, *dw, *db; /* reference results */
    clt_tensor *tx, *tw, *tb, *tdy, *ty, *tdx, *tdw, *tdb;
} case_data;

static void case_make(clt_device *dev, case_data *d, int n, int c, int h, int w, int co, int k,
                      int s, int p)
{
    memset(d, 0, sizeof *d);
    if (!ref_conv_shape_init(&d->r, n, c, h, w, co, k, s, p)) {
        fprintf(stderr, "bad test case\n");
        exit(1);
    }
    size_t nx = ref_conv_x_size(&d->r), nw = ref_conv_w_size(&d->r), ny = ref_conv_y_size(&d->r);
    d->x = ref_conv_alloc(nx, sizeof(float));
    d->w = ref_conv_alloc(nw, sizeof(float));
    d->b = ref_conv_alloc((size_t)co, sizeof(float));
    d->dy = ref_conv_alloc(ny, sizeof(float));
    ref_conv_fill(d->x, nx, &rng, -1, 1);
    ref_conv_fill(d->w, nw, &rng, -1, 1);
    ref_conv_fill(d->b, (size_t)co, &rng, -1, 1);
    ref_conv_fill(d->dy, ny, &rng, -1, 1);
    d->y = ref_conv_alloc(ny, sizeof(float));
    d->dx = ref_conv_alloc(nx, sizeof(float));
    d->dw = ref_conv_alloc(nw, sizeof(float));
    d->db = ref_conv_alloc((size_t)co, sizeof(float));
    ref_conv_forward(&d->r, d->x, d->w, d->b, d->y);
    ref_conv_backward(&d->r, d->x, d->w, d->dy, d->dx, d->dw, d->db);
    int64_t xs[4] = {n, c, h, w}, ws[4] = {co, c, k, k}, bs[1] = {co},
            ys[4] = {n, co, d->r.oh, d->r.ow};
    d->tx = tensor(dev, 4, xs, d->x);
    d->tw = tensor(dev, 4, ws, d->w);
    d->tb = tensor(dev, 1, bs, d->b);
    d->tdy = tensor(dev, 4, ys, d->dy);
    d->ty = tensor(dev, 4, ys, NULL);
    d->tdx = tensor(dev, 4, xs, NULL);
    d->tdw = tensor(dev, 4, ws, NULL);
    d->tdb = tensor(dev, 1, bs, NULL);
}

static void case_free(case_data *d)
{
    free(d->x), free(d->w), free(d->b), free(d->dy);
    free(d->y), free(d->dx), free(d->dw), free(d->db);
    clt_tensor_destroy(d->tx), clt_tensor_destroy(d->tw), clt_tensor_destroy(d->tb);
    clt_tensor_destroy(d->tdy), clt_tensor_destroy(d->ty), clt_tensor_destroy(d->tdx);
    clt_tensor_destroy(d->tdw), clt_tensor_destroy(d->tdb);
}

#define SHAPE_FMT "n=%d c=%d h=%d w=%d co=%d k=%d s=%d p=%d (%s)"
#define SHAPE_ARGS(d, a) (d)->r.n, (d)->r.c, (d)->r.h, (d)->r.w, (d)->r.co, (d)->r.k, (d)->r.s, (d)->r.p, (a)

/* Forward with and without bias, backward with every output and with each
 * subset, outputs pre-filled with garbage so accumulation would show. */
static void check_case(clt_device *dev, case_data *d, const char *algo)
{
    set_algo(dev, algo);
    const ref_conv_shape *r = &d->r;
    double e;

    CHECK_OK(clt_tensor_fill(d->ty, NAN));
    CHECK_OK(clt_conv2d_forward(d->tx, d->tw, d->tb, r->s, r->p, d->ty));
    e = tensor_err(d->ty, d->y);
    CHECK(e < TOL, "forward " SHAPE_FMT ": rel err %g", SHAPE_ARGS(d, algo), e);

    /* Without bias: the reference minus b. */
    float *ynb = ref_conv_alloc(ref_conv_y_size(r), sizeof *ynb);
    ref_conv_forward(r, d->x, d->w, NULL, ynb);
    CHECK_OK(clt_tensor_fill(d->ty, 1e30f));
    CHECK_OK(clt_conv2d_forward(d->tx, d->tw, NULL, r->s, r->p, d->ty));
    e = tensor_err(d->ty, ynb);
    CHECK(e < TOL, "forward without bias " SHAPE_FMT ": rel err %g", SHAPE_ARGS(d, algo), e);
    free(ynb);

    CHECK_OK(clt_tensor_fill(d->tdx, NAN));
    CHECK_OK(clt_tensor_fill(d->tdw, NAN));
    CHECK_OK(clt_tensor_fill(d->tdb, NAN));
    CHECK_OK(clt_conv2d_backward(d->tx, d->tw, d->tdy, r->s, r->p, d->tdx, d->tdw, d->tdb));
    e = tensor_err(d->tdx, d->dx);
    CHECK(e < TOL, "dx " SHAPE_FMT ": rel err %g", SHAPE_ARGS(d, algo), e);
    e = tensor_err(d->tdw, d->dw);
    CHECK(e < TOL, "dw " SHAPE_FMT ": rel err %g", SHAPE_ARGS(d, algo), e);
    e = tensor_err(d->tdb, d->db);
    CHECK(e < TOL, "db " SHAPE_FMT ": rel err %g", SHAPE_ARGS(d, algo), e);

    /* Each output alone; the others are NULL and skipped. */
    for (int which = 0; which < 3; which++) {
        clt_tensor *out = which == 0 ? d->tdx : which == 1 ? d->tdw : d->tdb;
        const float *ref = which == 0 ? d->dx : which == 1 ? d->dw : d->db;
        CHECK_OK(clt_tensor_fill(out, -7.0f));
        CHECK_OK(clt_conv2d_backward(d->tx, d->tw, d->tdy, r->s, r->p, which == 0 ? out : NULL,
                                     which == 1 ? out : NULL, which == 2 ? out : NULL));
        e = tensor_err(out, ref);
        CHECK(e < TOL, "%s alone " SHAPE_FMT ": rel err %g", which == 0 ? "dx" : which == 1 ? "dw" : "db",
              SHAPE_ARGS(d, algo), e);
    }
}

/* The first n_algos algorithms of algos[] on one shape. */
static void run_case_algos(clt_device *dev, int n_algos, int n, int c, int h, int w, int co, int k, int s, int p)
{
    case_data d;
    case_make(dev, &d, n, c, h, w, co, k, s, p);
    for (int a = 0; a < n_algos; a++) check_case(dev, &d, algos[a]);
    case_free(&d);
}

static void run_case(clt_device *dev, int n, int c, int h, int w, int co, int k, int s, int p)
{
    run_case_algos(dev, N_ALGOS, n, c, h, w, co, k, s, p);
}

/* Every (k, s, p) of {1,3,5} x {1,2,3} x {0,1,2} on a random shape with an
 * odd, non-square input just large enough, plus fixed cases for each
 * register-block variant (channels 1..4 / 8 / 10 blocks; 16 or 32 lanes
 * with batch padding; 128 lanes, whose pixel-major rows have a gap). */
static void test_shapes(clt_device *dev)
{
    static const int ks[] = {1, 3, 5}, ns[] = {1, 2, 3, 5, 17, 33}, cs[] = {1, 2, 3, 5, 9, 12},
                     outs[] = {1, 3, 5, 8, 12, 20};
    for (int ki = 0; ki < 3; ki++)
        for (int s = 1; s <= 3; s++)
            for (int p = 0; p <= 2; p++) {
                int k = ks[ki];
                int lo = k - 2 * p > 1 ? k - 2 * p : 1;
                int h = ref_conv_randint(&rng, lo, lo + 7);
                int w = ref_conv_randint(&rng, lo, lo + 7);
                if (h == w) w++;
                int n = ns[ref_conv_randint(&rng, 0, 5)], c = cs[ref_conv_randint(&rng, 0, 5)];
                int co = outs[ref_conv_randint(&rng, 0, 5)];
                run_case(dev, n, c, h, w, co, k, s, p);
            }
    /* Register-block variants (lanes: forward by co, backward-data by c;
     * 16 lanes for n <= 16, 32 above; direct: forward by co). */
    run_case(dev, 1, 1, 7, 5, 1, 3, 1, 1);     /* direct 4; bwd-data 4x16; batch 1 */
    run_case(dev, 17, 4, 7, 6, 20, 3, 2, 1);   /* fwd 10x32, bwd-data 4x32 */
    run_case(dev, 33, 20, 6, 5, 3, 3, 1, 1);   /* fwd 4x32, bwd-data 10x32 */
    run_case(dev, 5, 8, 6, 7, 12, 3, 1, 0);    /* fwd 8x16, bwd-data 8x16 */
    run_case(dev, 2, 3, 9, 17, 8, 3, 1, 1);    /* direct 8, a row of 17 (overlapping stores) */
    run_case(dev, 16, 4, 6, 9, 4, 3, 1, 0);    /* exactly 16 lanes, 4-blocks */
    run_case(dev, 3, 20, 13, 11, 50, 5, 1, 0); /* LeNet conv2-like: 10-blocks both ways */
    run_case(dev, 37, 8, 5, 6, 16, 3, 2, 1);   /* 32 lanes, batch padded to 64, 8-blocks */
    run_case(dev, 2, 3, 4, 4, 2, 1, 1, 2);     /* padding larger than k - 1 */
    run_case(dev, 2, 2, 3, 8, 3, 3, 3, 0);     /* one output row */
    run_case(dev, 2, 3, 5, 5, 2, 5, 1, 0);     /* 1x1 output, kernel = input */
    run_case(dev, 5, 1, 28, 27, 20, 3, 1, 0);  /* LeNet conv1-like: direct, partial row tail */
    run_case(dev, 3, 1, 64, 65, 2, 1, 1, 0);   /* db summed over image chunks */
    run_case(dev, 100, 2, 3, 300, 3, 1, 1, 0); /* dw chunked over lane vectors */
    /* copies into the lanes layout of 8 MiB (32 x 64 x 64 at 16 lanes): stored
     * past the cache (conv_lanes_copy.c, STREAM_MIN_BYTES) */
    run_case_algos(dev, 1, 16, 32, 64, 64, 4, 1, 1, 0);
    run_case(dev, 17, 3, 6, 6, 5, 3, 1, 0);    /* 16 output pixels: transposes, no tail */
    /* 128 lanes: pixel-major rows with a gap after them (lanes_stride),
     * channel-major ones without */
    run_case(dev, 113, 5, 7, 6, 9, 3, 2, 1);
}

/* 1x1 with stride > 1 and no padding: the lanes kernels run on the
 * subsampled input (conv_layout_to_lanes_sub, _from_lanes_sub), implicit
 * in stride phases: rows of 4, 14 and 35 pixels (dx's rows in blocks of
 * 16, 16 and 3), odd widths, partial blocks of images. Every algorithm as
 * the device is, then lanes (the only one that looks at the width) with
 * the configurations of both native widths (8 as on AVX2, 16 as on
 * AVX-512: forced). */
static void test_strided_1x1(clt_device *dev)
{
    static const int shapes[][8] = {
        {37, 5, 9, 8, 7, 1, 2, 0},   /* 32 lanes, batch padded, odd height */
        {3, 4, 7, 10, 6, 1, 3, 0},   /* stride 3, width not a multiple */
        {2, 2, 3, 70, 3, 1, 2, 0},   /* dx rows over 64 floats (in pieces) */
        {20, 3, 7, 7, 5, 1, 2, 0},   /* odd width (ResNet-18's 7x7 -> 4x4) */
        {17, 2, 28, 28, 3, 1, 2, 0}, /* rows of 14 (ResNet-18's 28x28 -> 14x14) */
        {120, 4, 7, 8, 6, 1, 2, 0},  /* 128 lanes: rows with a gap */
    };
    int keep = dev->native_float_width;
    for (int vw = 0; vw <= 16; vw += 8) {
        if (vw) dev->native_float_width = vw;
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            const int *v = shapes[i];
            run_case_algos(dev, vw ? 1 : N_ALGOS, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
        }
        dev->native_float_width = keep;
    }
}

/* Direct kernels (stride 1, c*k*k <= 9 backward-weights, <= 27 forward)
 * at both vector widths (the device's native width forced: 8 as on AVX2,
 * 16 as on AVX-512): output widths below, at and above VW and 2VW (vectors
 * that slide back to the row end; backward-weights drops the lanes the
 * previous vector covered), no padded copy (pad 0, width >= VW), an
 * exact-width copy (pad > 0) and a wide one (width < VW); backward-weights
 * variants of 1, 2 and 3 channels per item, a partial last block, one
 * chunk of images (db written directly) and several (db summed). */
static void test_direct_widths(clt_device *dev)
{
    /* lanes (with direct) and gemm: implicit does not look at the width */
    int keep = dev->native_float_width;
    static const int widths[] = {8, 16};
    for (int i = 0; i < 2; i++) {
        dev->native_float_width = widths[i];
        run_case_algos(dev, 2, 1, 1, 7, 5, 1, 3, 1, 1);    /* width 3, batch 1 */
        run_case_algos(dev, 2, 2, 1, 6, 9, 2, 3, 1, 0);    /* width 7 */
        run_case_algos(dev, 2, 2, 1, 9, 10, 3, 3, 1, 0);   /* width 8 */
        run_case_algos(dev, 2, 2, 1, 5, 14, 5, 3, 1, 0);   /* width 12 */
        run_case_algos(dev, 2, 4, 1, 18, 18, 2, 3, 1, 0);  /* width 16, no copy; 2 channels */
        run_case_algos(dev, 2, 2, 3, 9, 17, 8, 3, 1, 1);   /* a row of 17, 3 channels (overlapping stores) */
        run_case_algos(dev, 2, 2, 1, 6, 20, 3, 3, 1, 0);   /* width 18 */
        run_case_algos(dev, 2, 2, 1, 9, 34, 3, 3, 1, 0);   /* width 32; 3 channels */
        run_case_algos(dev, 2, 2, 1, 6, 42, 5, 3, 1, 0);   /* width 40: second block slides back */
        run_case_algos(dev, 2, 3, 1, 20, 18, 7, 3, 1, 1);  /* stem-like: pad 1, exact-width copy */
        run_case_algos(dev, 2, 2, 1, 16, 17, 96, 3, 1, 0); /* width 15, one image chunk */
        run_case_algos(dev, 2, 2, 2, 5, 40, 4, 1, 1, 0);   /* 1x1, c = 2: backward-weights direct */
        run_case_algos(dev, 2, 5, 1, 28, 27, 20, 3, 1, 0); /* LeNet conv1-like, partial row tail */
    }
    dev->native_float_width = keep;
}

/* The convolutions of LeNet, lenet-max and ResNet-18 at their real shapes,
 * batch 2. */
static void test_models(clt_device *dev)
{
    clt_op_case *mc;
    int n = op_model_cases(CLT_OP_CONV, 2, &mc);
    for (int i = 0; i < n; i++)
        run_case(dev, mc[i].n, mc[i].c, mc[i].h, mc[i].w, mc[i].co, mc[i].k, mc[i].stride, mc[i].pad);
    CHECK(n == 13, "the models have %d convolution shapes, expected LeNet's 2 and ResNet-18's 11", n);
    free(mc);
}

/* Every register block of the lanes backward-weights kernel (the settings
 * force one; normally the padding picks it), on shapes whose channel
 * counts fit none of them exactly, with and without stride, padding and
 * chunking; an unknown variant is refused. */
static void test_bwdw_blocks(clt_device *dev)
{
    static const int blocks[][2] = CLT_CONV_BWDW_BLOCKS;
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) {
        set_bwdw(dev, blocks[i][0], blocks[i][1]);
        case_data d;
        case_make(dev, &d, 19, 7, 9, 8, 11, 3, 1, 1);
        check_case(dev, &d, "lanes");
        case_free(&d);
        case_make(dev, &d, 33, 13, 7, 6, 9, 3, 2, 0);
        check_case(dev, &d, "lanes");
        case_free(&d);
    }
    clt_device_settings s = *clt_device_get_settings(dev);
    s.conv_bwdw_a = s.conv_bwdw_b = 3;
    clt_status st = clt_device_set_settings(dev, &s);
    CHECK(st == CLT_ERR_INVALID_ARG && strstr(clt_last_error(), "CLTRAIN_CONV_BWDW") &&
              strstr(clt_last_error(), "3x3"),
          "backward-weights block 3x3: %s (%s)", clt_status_name(st), clt_last_error());
    size_t last = sizeof blocks / sizeof blocks[0] - 1;
    CHECK(clt_device_get_settings(dev)->conv_bwdw_a == blocks[last][0], "a refused block changed the settings");
    set_bwdw(dev, 0, 0);
}

/* L(x, w, b) = sum(y * r). Its gradients are the backward with dy = r:
 * central differences of the device forward (float, L summed in double on
 * the host) check the device backward directly (test_conv_geom.c checks
 * the reference's adjoint the same way). L is linear in each argument, so
 * the step can be large and the float rounding of y is the only error:
 * |fd - grad| ~ 1e-6 here, the bound 2e-3 of the largest gradient still
 * catches any wrong element. */
static double device_loss(case_data *d, const float *rr)
{
    REQUIRE_OK(clt_conv2d_forward(d->tx, d->tw, d->tb, d->r.s, d->r.p, d->ty));
    float *y = download(d->ty);
    double l = 0;
    for (size_t i = 0; i < ref_conv_y_size(&d->r); i++) l += (double)y[i] * rr[i];
    free(y);
    return l;
}

static void test_fd_device(clt_device *dev, const char *algo, int s, int p)
{
    set_algo(dev, algo);
    case_data d;
    case_make(dev, &d, 2, 3, 6, 5, 2, 3, s, p);
    const float *rr = d.dy; /* r doubles as dy */
    CHECK_OK(clt_conv2d_backward(d.tx, d.tw, d.tdy, s, p, d.tdx, d.tdw, d.tdb));
    float *grads[3] = {download(d.tdx), download(d.tdw), download(d.tdb)};
    float *vals[3] = {d.x, d.w, d.b};
    clt_tensor *ts[3] = {d.tx, d.tw, d.tb};
    size_t sizes[3] = {ref_conv_x_size(&d.r), ref_conv_w_size(&d.r), (size_t)d.r.co};
    const char *names[3] = {"dx", "dw", "db"};
    const float step = 0.5f;
    for (int a = 0; a < 3; a++) {
        double gmax = 1e-3, worst = 0;
        for (size_t j = 0; j < sizes[a]; j++)
            if (fabs(grads[a][j]) > gmax) gmax = fabs(grads[a][j]);
        for (size_t j = 0; j < sizes[a]; j++) {
            float keep = vals[a][j];
            vals[a][j] = keep + step;
            REQUIRE_OK(clt_tensor_upload(ts[a], vals[a], (int64_t)sizes[a]));
            double lp = device_loss(&d, rr);
            vals[a][j] = keep - step;
            REQUIRE_OK(clt_tensor_upload(ts[a], vals[a], (int64_t)sizes[a]));
            double lm = device_loss(&d, rr);
            vals[a][j] = keep;
            REQUIRE_OK(clt_tensor_upload(ts[a], vals[a], (int64_t)sizes[a]));
            double e = fabs((lp - lm) / (2.0 * step) - grads[a][j]);
            if (e > worst) worst = e;
        }
        CHECK(worst < 2e-3 * gmax, "device finite differences (%s, s=%d p=%d): %s worst %g of max %g",
              algo, s, p, names[a], worst, gmax);
    }
    for (int a = 0; a < 3; a++) free(grads[a]);
    case_free(&d);
}

/* Two backward runs give bit-identical results (no atomics, fixed order). */
static void test_deterministic(clt_device *dev)
{
    for (int a = 0; a < N_ALGOS; a++) {
        set_algo(dev, algos[a]);
        case_data d;
        case_make(dev, &d, 19, 6, 9, 8, 10, 3, 1, 1);
        float *first[3], *second[3];
        CHECK_OK(clt_conv2d_backward(d.tx, d.tw, d.tdy, 1, 1, d.tdx, d.tdw, d.tdb));
        first[0] = download(d.tdx), first[1] = download(d.tdw), first[2] = download(d.tdb);
        CHECK_OK(clt_conv2d_backward(d.tx, d.tw, d.tdy, 1, 1, d.tdx, d.tdw, d.tdb));
        second[0] = download(d.tdx), second[1] = download(d.tdw), second[2] = download(d.tdb);
        size_t sizes[3] = {ref_conv_x_size(&d.r), ref_conv_w_size(&d.r), (size_t)d.r.co};
        for (int i = 0; i < 3; i++) {
            CHECK(memcmp(first[i], second[i], sizes[i] * sizeof(float)) == 0,
                  "backward output %d differs between two runs (%s)", i, algos[a]);
            free(first[i]), free(second[i]);
        }
        case_free(&d);
    }
}

/* The call fails with `want`, and the detail mentions `needle`. */
#define EXPECT_ERR(want, needle, expr)                                                       \
    do {                                                                                     \
        clt_status s_ = (expr);                                                              \
        CHECK(s_ == (want), "%s returned %s, expected %s (%s)", #expr, clt_status_name(s_),  \
              clt_status_name(want), clt_last_error());                                      \
        CHECK(strstr(clt_last_error(), (needle)) != NULL, "%s: detail \"%s\" lacks \"%s\"", \
              #expr, clt_last_error(), (needle));                                            \
    } while (0)

static void test_errors(clt_device *dev, clt_device *dev1)
{
    set_algo(dev, "lanes");
    int64_t xs[4] = {2, 3, 7, 6}, ws[4] = {4, 3, 3, 3}, bs[1] = {4}, ys[4] = {2, 4, 5, 4};
    clt_tensor *x = tensor(dev, 4, xs, NULL), *w = tensor(dev, 4, ws, NULL),
               *b = tensor(dev, 1, bs, NULL), *y = tensor(dev, 4, ys, NULL);
    clt_tensor *dx = tensor(dev, 4, xs, NULL), *dw = tensor(dev, 4, ws, NULL),
               *db = tensor(dev, 1, bs, NULL);
    const char *F = "clt_conv2d_forward", *B = "clt_conv2d_backward";
    CHECK_OK(clt_conv2d_forward(x, w, b, 1, 0, y));
    CHECK_OK(clt_conv2d_backward(x, w, y, 1, 0, dx, dw, db));
    CHECK_OK(clt_conv2d_backward(x, w, y, 1, 0, NULL, NULL, NULL));

    /* NULL inputs and outputs. */
    EXPECT_ERR(CLT_ERR_INVALID_ARG, F, clt_conv2d_forward(NULL, w, b, 1, 0, y));
    EXPECT_ERR(CLT_ERR_INVALID_ARG, "w", clt_conv2d_forward(x, NULL, b, 1, 0, y));
    EXPECT_ERR(CLT_ERR_INVALID_ARG, "y", clt_conv2d_forward(x, w, b, 1, 0, NULL));
    EXPECT_ERR(CLT_ERR_INVALID_ARG, "dy", clt_conv2d_backward(x, w, NULL, 1, 0, dx, dw, db));
    EXPECT_ERR(CLT_ERR_INVALID_ARG, B, clt_conv2d_backward(NULL, w, y, 1, 0, dx, dw, db));

    /* Mismatched shapes: the detail names the argument and both shapes. */
    int64_t ws_bad[4] = {4, 2, 3, 3}, ys_bad[4] = {2, 4, 5, 5}, bs_bad[1] = {5};
    int64_t ws_rect[4] = {4, 3, 3, 2}, x3[3] = {3, 7, 6};
    clt_tensor *w_bad = tensor(dev, 4, ws_bad, NULL), *y_bad = tensor(dev, 4, ys_bad, NULL),
               *b_bad = tensor(dev, 1, bs_bad, NULL), *w_rect = tensor(dev, 4, ws_rect, NULL),
               *x_3d = tensor(dev, 3, x3, NULL);
    EXPECT_ERR(CLT_ERR_SHAPE, "(4, 2, 3, 3)", clt_conv2d_forward(x, w_bad, b, 1, 0, y));
    EXPECT_ERR(CLT_ERR_SHAPE, "(2, 4, 5, 5)", clt_conv2d_forward(x, w, b, 1, 0, y_bad));
    EXPECT_ERR(CLT_ERR_SHAPE, "(2, 4, 5, 4)", clt_conv2d_forward(x, w, b, 1, 0, y_bad));
    EXPECT_ERR(CLT_ERR_SHAPE, "b has shape (5)", clt_conv2d_forward(x, w, b_bad, 1, 0, y));
    EXPECT_ERR(CLT_ERR_SHAPE, "square", clt_conv2d_forward(x, w_rect, b, 1, 0, y));
    EXPECT_ERR(CLT_ERR_SHAPE, "x has shape (3, 7, 6)", clt_conv2d_forward(x_3d, w, b, 1, 0, y));
    EXPECT_ERR(CLT_ERR_SHAPE, "dy", clt_conv2d_backward(x, w, y_bad, 1, 0, dx, dw, db));
    EXPECT_ERR(CLT_ERR_SHAPE, "dx", clt_conv2d_backward(x, w, y, 1, 0, y, dw, db));
    EXPECT_ERR(CLT_ERR_SHAPE, "dw", clt_conv2d_backward(x, w, y, 1, 0, dx, w_bad, db));
    EXPECT_ERR(CLT_ERR_SHAPE, "db", clt_conv2d_backward(x, w, y, 1, 0, dx, dw, b_bad));
    /* The right shape for stride 2 is not the stride-1 shape. */
    EXPECT_ERR(CLT_ERR_SHAPE, "(2, 4, 3, 2)", clt_conv2d_forward(x, w, b, 2, 0, y));

    /* Wrong dtype. */
    clt_tensor *xi = NULL;
    REQUIRE_OK(clt_tensor_create(dev, CLT_DTYPE_INT32, 4, xs, &xi));
    EXPECT_ERR(CLT_ERR_SHAPE, "int32", clt_conv2d_forward(xi, w, b, 1, 0, y));
    EXPECT_ERR(CLT_ERR_SHAPE, "int32", clt_conv2d_backward(x, w, y, 1, 0, xi, dw, db));

    /* Output size < 1, stride < 1, padding < 0. */
    int64_t xs_small[4] = {2, 3, 2, 6};
    clt_tensor *x_small = tensor(dev, 4, xs_small, NULL);
    EXPECT_ERR(CLT_ERR_SHAPE, "2x6", clt_conv2d_forward(x_small, w, b, 1, 0, y));
    EXPECT_ERR(CLT_ERR_SHAPE, "stride 0", clt_conv2d_forward(x, w, b, 0, 0, y));
    EXPECT_ERR(CLT_ERR_SHAPE, "stride -2", clt_conv2d_backward(x, w, y, -2, 0, dx, dw, db));
    EXPECT_ERR(CLT_ERR_SHAPE, "padding -1", clt_conv2d_forward(x, w, b, 1, -1, y));

    /* Aliasing an input. */
    EXPECT_ERR(CLT_ERR_INVALID_ARG, "same tensor", clt_conv2d_backward(x, w, y, 1, 0, x, dw, db));

    /* Tensors on different devices. */
    if (dev1) {
        clt_tensor *w1 = tensor(dev1, 4, ws, NULL), *dx1 = tensor(dev1, 4, xs, NULL);
        EXPECT_ERR(CLT_ERR_INVALID_ARG, "different devices", clt_conv2d_forward(x, w1, b, 1, 0, y));
        EXPECT_ERR(CLT_ERR_INVALID_ARG, "different devices",
                   clt_conv2d_backward(x, w, y, 1, 0, dx1, dw, db));
        clt_tensor_destroy(w1), clt_tensor_destroy(dx1);
    }

    /* An unknown algorithm in the settings. */
    clt_device_settings bad = *clt_device_get_settings(dev);
    bad.conv_algo = 7;
    EXPECT_ERR(CLT_ERR_INVALID_ARG, "CLTRAIN_CONV_ALGO", clt_device_set_settings(dev, &bad));
    EXPECT_ERR(CLT_ERR_INVALID_ARG, "NULL", clt_device_set_settings(dev, NULL));

    clt_tensor_destroy(x), clt_tensor_destroy(w), clt_tensor_destroy(b), clt_tensor_destroy(y);
    clt_tensor_destroy(dx), clt_tensor_destroy(dw), clt_tensor_destroy(db);
    clt_tensor_destroy(w_bad), clt_tensor_destroy(y_bad), clt_tensor_destroy(b_bad);
    clt_tensor_destroy(w_rect), clt_tensor_destroy(x_3d), clt_tensor_destroy(xi);
    clt_tensor_destroy(x_small);
}

/* A work-buffer budget (the settings' CLTRAIN_CONV_BUDGET) smaller than one pass needs:
 * lanes falls back to gemm, gemm processes the batch in chunks of images
 * (dw accumulated over chunks). Results stay exact and the device's work
 * buffer stays within the budget (a fresh handle, so nothing grew it). */
static void test_budget(void)
{
    clt_device *dev = NULL;
    REQUIRE_OK(clt_device_open(0, &dev));
    clt_device_settings s = *clt_device_get_settings(dev);
    s.conv_budget = 6000;
    REQUIRE_OK(clt_device_set_settings(dev, &s));
    run_case(dev, 5, 3, 9, 8, 4, 3, 2, 1);
    CHECK(dev->scratch_bytes <= 6000, "work buffer %zu bytes, budget 6000", dev->scratch_bytes);
    CHECK(dev->scratch_bytes > 0, "the gemm algorithm used no work buffer");
    clt_device_destroy(dev);
}

/* The gemm weight gradient split along K (a tiny co x ckk output over a
 * long images*p): slices with a remainder, alone and over chunks of images
 * whose last chunk is shorter (budget for about four images). */
static void test_split_k(void)
{
    clt_device *dev = NULL;
    REQUIRE_OK(clt_device_open(0, &dev));
    clt_device_settings s = *clt_device_get_settings(dev);
    s.conv_algo = CLT_CONV_ALGO_GEMM;
    REQUIRE_OK(clt_device_set_settings(dev, &s));
    clt_conv_geom g;
    clt_conv_plan *plan = NULL;
    REQUIRE_OK(clt_conv_geom_init(&g, 33, 1, 28, 28, 2, 3, 1, 0));
    REQUIRE_OK(clt_conv_plan_ensure(dev, &g, &plan));
    CHECK(plan->gemm.splits > 1 && (size_t)g.n * 676 % (size_t)plan->gemm.splits != 0,
          "split-K with a remainder: %d slices of %d", plan->gemm.splits, g.n * 676);
    run_case(dev, 33, 1, 28, 28, 2, 3, 1, 0);
    s.conv_budget = 140000;
    REQUIRE_OK(clt_device_set_settings(dev, &s));
    REQUIRE_OK(clt_conv_geom_init(&g, 9, 1, 28, 28, 2, 3, 1, 0));
    REQUIRE_OK(clt_conv_plan_ensure(dev, &g, &plan));
    CHECK(plan->gemm.splits > 1 && plan->gemm.nb < 9 && 9 % plan->gemm.nb != 0,
          "split-K over chunks: %d slices, %d images per chunk", plan->gemm.splits, plan->gemm.nb);
    clt_conv_plan_destroy(plan);
    run_case(dev, 9, 1, 28, 28, 2, 3, 1, 0);
    clt_device_destroy(dev);
}

/* The plan: the algorithm per pass (direct for a first layer's forward and
 * backward-weights on a lanes device, lanes for the rest, gemm or implicit
 * when the settings say so or nothing else fits), results through a kept
 * plan, passes added to a kept plan where first needed, and when a kept
 * plan is made again (batch size, settings). */
static void test_plan(clt_device *dev, clt_device *dev1)
{
    static const char *const want_lanes[3][3] = {
        {"direct", "lanes", "direct"}, /* LeNet conv1: 1->20 k3 */
        {"lanes", "lanes", "lanes"},   /* LeNet conv2: 20->50 k5 */
        {"lanes", "lanes", "lanes"},   /* a strided 1x1 projection */
    };
    static const int shapes[3][8] = {
        {8, 1, 28, 28, 20, 3, 1, 0}, {8, 20, 13, 13, 50, 5, 1, 0}, {8, 16, 14, 14, 32, 1, 2, 0}};
    clt_conv_plan *plan = NULL;
    for (int a = 0; a < N_PLAN_ALGOS; a++) {
        set_algo(dev, algos[a]);
        for (int i = 0; i < 3; i++) {
            const int *v = shapes[i];
            clt_conv_geom g;
            REQUIRE_OK(clt_conv_geom_init(&g, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]));
            REQUIRE_OK(clt_conv_plan_ensure(dev, &g, &plan));
            for (int p = 0; p < CLT_CONV_PASSES; p++) {
                const char *got = clt_conv_plan_algo(plan, p), *want = a == 0 ? want_lanes[i][p] : algos[a];
                CHECK(got && strcmp(got, want) == 0, "shape %d (%s): pass %d runs %s, expected %s", i,
                      algos[a], p, got ? got : "nothing", want);
            }
        }
    }
    CHECK(clt_conv_plan_algo(plan, CLT_CONV_PASSES) == NULL, "an out-of-range pass has an algorithm");

    /* A kept plan stays for the same shape and settings; it is made again
     * for another batch size and after the settings change. */
    set_algo(dev, "lanes");
    case_data d;
    case_make(dev, &d, 19, 6, 9, 8, 10, 3, 1, 1);
    clt_conv_geom g;
    REQUIRE_OK(clt_conv_geom_init(&g, 19, 6, 9, 8, 10, 3, 1, 1));
    REQUIRE_OK(clt_conv_plan_ensure(dev, &g, &plan));
    clt_conv_plan *kept = plan;
    REQUIRE_OK(clt_conv_plan_ensure(dev, &g, &plan));
    CHECK(plan == kept && strcmp(clt_conv_plan_algo(plan, CLT_CONV_FWD), "lanes") == 0,
          "the plan was not kept");
    for (int a = 0; a < N_PLAN_ALGOS; a++) {
        set_algo(dev, algos[a]);
        REQUIRE_OK(clt_conv_plan_ensure(dev, &g, &plan));
        CHECK(strcmp(clt_conv_plan_algo(plan, CLT_CONV_BWD_DATA), algos[a]) == 0,
              "after the settings changed to %s the plan runs %s", algos[a],
              clt_conv_plan_algo(plan, CLT_CONV_BWD_DATA));
        CHECK_OK(clt_conv_plan_forward(dev, plan, d.tx->buf, d.tw->buf, d.tb->buf, NULL, d.ty->buf));
        double e = tensor_err(d.ty, d.y);
        CHECK(e < TOL, "forward through a kept plan (%s): rel err %g", algos[a], e);
        CHECK_OK(clt_conv_plan_backward(dev, plan, d.tx->buf, d.tw->buf, d.tdy->buf, NULL, d.tdx->buf, d.tdw->buf,
                                        d.tdb->buf));
        e = tensor_err(d.tdx, d.dx) + tensor_err(d.tdw, d.dw) + tensor_err(d.tdb, d.db);
        CHECK(e < TOL, "backward through a kept plan (%s): rel err %g", algos[a], e);
    }
    /* Passes are planned where first needed: the forward alone, then
     * backward-weights alone (a first layer's backward), then backward-data
     * into the same plan. */
    for (int a = 0; a < N_PLAN_ALGOS; a++) {
        set_algo(dev, algos[a]);
        clt_conv_plan *lazy = NULL;
        REQUIRE_OK(clt_conv_plan_ensure_passes(dev, &g, CLT_CONV_PASS(CLT_CONV_FWD), &lazy));
        CHECK(clt_conv_plan_algo(lazy, CLT_CONV_FWD) && !clt_conv_plan_algo(lazy, CLT_CONV_BWD_DATA) &&
                  !clt_conv_plan_algo(lazy, CLT_CONV_BWD_WEIGHTS),
              "%s: a forward-only plan planned a backward pass", algos[a]);
        CHECK_OK(clt_conv_plan_forward(dev, lazy, d.tx->buf, d.tw->buf, d.tb->buf, NULL, d.ty->buf));
        CHECK(tensor_err(d.ty, d.y) < TOL, "%s: forward of a forward-only plan", algos[a]);
        clt_conv_plan *first = lazy;
        REQUIRE_OK(clt_conv_plan_ensure_passes(dev, &g, CLT_CONV_PASS(CLT_CONV_BWD_WEIGHTS), &lazy));
        CHECK(lazy == first && clt_conv_plan_algo(lazy, CLT_CONV_BWD_WEIGHTS) &&
                  !clt_conv_plan_algo(lazy, CLT_CONV_BWD_DATA),
              "%s: backward-weights was not added alone to the first plan", algos[a]);
        EXPECT_ERR(CLT_ERR_INVALID_ARG, "backward-data",
                   clt_conv_plan_backward(dev, lazy, d.tx->buf, d.tw->buf, d.tdy->buf, NULL, d.tdx->buf, NULL, NULL));
        CHECK_OK(clt_conv_plan_backward(dev, lazy, d.tx->buf, d.tw->buf, d.tdy->buf, NULL, NULL, d.tdw->buf,
                                        d.tdb->buf));
        CHECK(tensor_err(d.tdw, d.dw) + tensor_err(d.tdb, d.db) < TOL, "%s: backward-weights added later",
              algos[a]);
        REQUIRE_OK(clt_conv_plan_ensure_passes(dev, &g, CLT_CONV_PASS(CLT_CONV_BWD_DATA), &lazy));
        CHECK(lazy == first && clt_conv_plan_algo(lazy, CLT_CONV_BWD_DATA), "%s: backward-data was not added",
              algos[a]);
        CHECK_OK(clt_conv_plan_backward(dev, lazy, d.tx->buf, d.tw->buf, d.tdy->buf, NULL, d.tdx->buf, d.tdw->buf,
                                        d.tdb->buf));
        double e = tensor_err(d.tdx, d.dx) + tensor_err(d.tdw, d.dw) + tensor_err(d.tdb, d.db);
        CHECK(e < TOL, "%s: backward after both passes were added: rel err %g", algos[a], e);
        clt_conv_plan_destroy(lazy);
    }
    clt_conv_geom g2 = g;
    g2.n = 7;
    REQUIRE_OK(clt_conv_plan_ensure(dev, &g2, &plan));
    CHECK(clt_conv_plan_forward(dev, plan, d.tx->buf, d.tw->buf, d.tb->buf, NULL, d.ty->buf) == CLT_OK,
          "forward with a plan for fewer images: %s", clt_last_error());
    if (dev1)
        EXPECT_ERR(CLT_ERR_INVALID_ARG, "device",
                   clt_conv_plan_forward(dev1, plan, d.tx->buf, d.tw->buf, d.tb->buf, NULL, d.ty->buf));
    g2.oh = 1; /* not a geometry clt_conv_geom_init makes */
    EXPECT_ERR(CLT_ERR_INVALID_ARG, "clt_conv_geom_init", clt_conv_plan_ensure(dev, &g2, &plan));
    CHECK(plan == NULL, "a failed plan_ensure left a plan");
    clt_conv_plan_destroy(plan);
    clt_conv_plan_destroy(NULL);
    case_free(&d);
}

/* Case d of shape v (n c h w co k s p), its geometry and a plan for it. */
static clt_conv_plan *case_plan(clt_device *dev, const int *v, case_data *d, clt_conv_geom *g)
{
    case_make(dev, d, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
    REQUIRE_OK(clt_conv_geom_init(g, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]));
    clt_conv_plan *plan = NULL;
    REQUIRE_OK(clt_conv_plan_ensure(dev, g, &plan));
    return plan;
}

/* Pass p of plan on case d against the reference (the result poisoned
 * with NaN first). */
/* TF32 tiles (operands of 11 significant bits): an error bound of their own. */
#define TOL_TF32 4e-3

static void check_pass_tol(clt_device *dev, const clt_conv_plan *plan, case_data *d, int p, const char *what,
                           double tol)
{
    double e;
    if (p == CLT_CONV_FWD) {
        CHECK_OK(clt_tensor_fill(d->ty, NAN));
        CHECK_OK(clt_conv_plan_forward(dev, plan, d->tx->buf, d->tw->buf, d->tb->buf, NULL, d->ty->buf));
        e = tensor_err(d->ty, d->y);
    } else if (p == CLT_CONV_BWD_DATA) {
        CHECK_OK(clt_tensor_fill(d->tdx, NAN));
        CHECK_OK(clt_conv_plan_backward(dev, plan, d->tx->buf, d->tw->buf, d->tdy->buf, NULL, d->tdx->buf, NULL, NULL));
        e = tensor_err(d->tdx, d->dx);
    } else {
        CHECK_OK(clt_tensor_fill(d->tdw, NAN));
        CHECK_OK(clt_conv_plan_backward(dev, plan, d->tx->buf, d->tw->buf, d->tdy->buf, NULL, NULL, d->tdw->buf, NULL));
        e = tensor_err(d->tdw, d->dw);
    }
    CHECK(e < tol, SHAPE_FMT ": error %.3g", SHAPE_ARGS(d, what), e);
}

static void check_pass(clt_device *dev, const clt_conv_plan *plan, case_data *d, int p, const char *what)
{
    check_pass_tol(dev, plan, d, p, what, TOL);
}

/* Every configuration the tuner may pick for a pass (its candidates on
 * this device, and vector widths 4, 8 and 16 beyond them; the weight
 * gradient also at the other chunk targets, which split it differently
 * at least once, at stride 2 with x in stride phases, and with rows of
 * taps, in phases too) computes the reference's result: installed in a
 * plan one at a time, on shapes with stride, padding, partial channel
 * blocks, a strided 1x1, a batch of up to 16 lanes and one of 128 (rows
 * with a gap), stride 2 with odd sizes and padding (stride phases of
 * unequal sizes), and an input narrower than a row of taps. */
static void test_lanes_configs(clt_device *dev)
{
    /* n c h w co k s p, and how many candidates: each configuration is a
     * program build, which costs a cold PoCL cache 0.2-0.5 s */
    static const int shapes[][9] = {
        {19, 7, 9, 8, 11, 3, 1, 1, 10}, {33, 13, 7, 6, 9, 3, 2, 0, 2}, {5, 6, 8, 8, 10, 1, 2, 0, 1}, {40, 20, 7, 7, 50, 5, 1, 2, 3},
        {100, 6, 7, 6, 9, 3, 1, 1, 3},  /* 128 lanes: pixel-major rows with a gap */
        {9, 5, 9, 7, 6, 3, 2, 1, 2},    /* stride 2, odd rows and columns, padding: phases of unequal sizes */
        {3, 4, 5, 2, 5, 3, 1, 1, 4}};   /* narrower than a row of taps: no column holds all three */
    static const clt_conv_lanes_cfg extra[][2] = {/* {forward/backward-data, backward-weights} */
                                                  {{4, 2, 4, 0, 0, 0, 0}, {4, 3, 4, 0, 128, 1, 0}},
                                                  {{16, 8, 2, 1, 0, 0, 0}, {16, 5, 5, 0, 256, 0, 0}},
                                                  {{16, 3, 1, 0, 0, 0, 0}, {8, 1, 1, 0, 0, 1, 0}},
                                                  {{8, 12, 1, 1, 0, 0, 0}, {8, 6, 2, 0, 128, 0, 0}},
                                                  {{8, 4, 2, 0, 0, 0, 0}, {4, 2, 3, 0, 128, 0, 3}},
                                                  {{4, 4, 2, 1, 0, 0, 0}, {8, 2, 2, 0, 0, 1, 3}}};
    set_algo(dev, "lanes");
    clt_device_settings s = *clt_device_get_settings(dev);
    int tune = s.tune;
    s.tune = CLT_TUNE_OFF;
    REQUIRE_OK(clt_device_set_settings(dev, &s));
    static const int chunk_kib[] = CLT_CONV_LANES_CHUNK_KIB;
    int tried = 0, rechunked = 0, phased = 0, rowed = 0, rowed_phased = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        case_data d;
        clt_conv_geom g;
        clt_conv_plan *plan = case_plan(dev, shapes[i], &d, &g);
        unsigned mask = 0;
        for (int p = 0; p < CLT_CONV_PASSES; p++)
            if (clt_conv_plan_algo(plan, p) && !strcmp(clt_conv_plan_algo(plan, p), "lanes")) mask |= CLT_CONV_PASS(p);
        const clt_conv_lanes_params rule = plan->lanes;
        for (int p = 0; p < CLT_CONV_PASSES; p++) {
            if (!(mask & CLT_CONV_PASS(p))) continue;
            clt_conv_lanes_cfg cand[24];
            int n = clt_conv_lanes_candidates(dev, &plan->lanes, p, cand, shapes[i][8]);
            CHECK(n >= (shapes[i][8] > 1 ? 2 : 1), "shape %zu pass %d: %d candidates", i, p, n);
            for (size_t x = 0; x < sizeof extra / sizeof extra[0]; x++) cand[n++] = extra[x][p == CLT_CONV_BWD_WEIGHTS];
            if (p == CLT_CONV_BWD_WEIGHTS) /* the rule's block at the tuner's other chunk targets and phased */
                for (int ph = 0; ph <= 1; ph++)
                    for (int x = ph ? -1 : 0; x < (int)(sizeof chunk_kib / sizeof chunk_kib[0]); x++) {
                        cand[n] = rule.cfg[p];
                        cand[n].ck = x < 0 ? 0 : chunk_kib[x];
                        cand[n++].ph = ph;
                    }
            for (int c = 0; c < n; c++) {
                plan->lanes = rule;
                plan->lanes.cfg[p] = cand[c];
                if (!clt_conv_lanes_cfg_ok(&plan->lanes, p, &cand[c]) || !clt_conv_lanes_derive(dev, &plan->lanes, mask))
                    continue;
                tried++;
                rechunked += cand[c].ck && plan->lanes.bw_chunks != rule.bw_chunks;
                phased += cand[c].ph;
                rowed += cand[c].tr > 0;
                rowed_phased += cand[c].tr > 0 && cand[c].ph;
                char what[64];
                snprintf(what, sizeof what, "lanes pass %d vw%d %dx%d%s%s", p, cand[c].vw, cand[c].a, cand[c].b,
                         cand[c].ph ? " ph" : "", cand[c].tr ? " tr" : "");
                check_pass(dev, plan, &d, p, what);
            }
        }
        clt_conv_plan_destroy(plan);
        case_free(&d);
    }
    CHECK(tried >= 50, "only %d configurations ran", tried);
    CHECK(rechunked > 0, "no smaller chunk target changed a weight gradient's chunks");
    CHECK(phased >= 4, "only %d weight gradients read x in stride phases", phased);
    CHECK(rowed >= 6 && rowed_phased >= 2, "only %d weight gradients held rows of taps, %d of them in phases", rowed,
          rowed_phased);
    s.tune = tune;
    REQUIRE_OK(clt_device_set_settings(dev, &s));
}

/* Every tile the GPU tuner may pick for a pass computes the reference's
 * result: installed in a forced-implicit plan one at a time, on shapes
 * with stride, padding, partial tiles in M, N and K, a strided 1x1, and a
 * weight gradient in several K slices. Backward-data's stride phases: odd
 * sizes (phases of unequal pixels), stride 2 with padding (ResNet-18's),
 * stride 3 with 5x5 taps (phases of 2 and 1 taps per column), a 1x1 at
 * stride 2 (three phases no tap reaches: zeros) and an input shorter
 * than the stride (phases without pixels). The tile goes into the plan
 * as the GPU tuner installs it, so a strided layer's backward-data runs
 * here although the rule gives it to gemm. */
static void test_implicit_configs(clt_device *dev)
{
    static const int shapes[][8] = {{3, 7, 9, 8, 11, 3, 1, 1},  {5, 13, 7, 6, 70, 3, 2, 0}, {4, 6, 8, 8, 130, 1, 2, 0},
                                    {33, 20, 13, 13, 50, 5, 1, 0}, {64, 4, 12, 12, 8, 3, 1, 1}, {3, 5, 9, 7, 6, 3, 2, 1},
                                    {2, 3, 8, 10, 5, 5, 3, 2},  {2, 3, 1, 7, 4, 3, 2, 1}};
    set_algo(dev, "implicit");
    int tried = 0, sliced = 0, phased = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        case_data d;
        clt_conv_geom g;
        clt_conv_plan *plan = case_plan(dev, shapes[i], &d, &g);
        for (int p = 0; p < CLT_CONV_PASSES; p++) {
            clt_conv_implicit_cfg cand[16];
            int n = clt_conv_implicit_candidates(dev, &g, p, cand, 16);
            CHECK(n >= 5, "shape %zu pass %d: %d tiles", i, p, n);
            for (int c = 0; c < n; c++) {
                if (!clt_conv_implicit_use(dev, plan, p, &cand[c])) continue;
                plan->algo[p] = &clt_conv_implicit;
                tried++;
                sliced += p == CLT_CONV_BWD_WEIGHTS && plan->implicit.slices > 1;
                phased += p == CLT_CONV_BWD_DATA && g.stride > 1 && g.k > 1;
                char what[64], tile[32];
                clt_conv_implicit_format(&cand[c], tile, sizeof tile);
                snprintf(what, sizeof what, "implicit pass %d %s", p, tile);
                check_pass_tol(dev, plan, &d, p, what, cand[c].tc ? TOL_TF32 : TOL); /* TF32: where the probe passed */
            }
        }
        clt_conv_plan_destroy(plan);
        case_free(&d);
    }
    CHECK(tried >= 60 && sliced >= 5 && phased >= 20, "only %d tiles ran (%d in K slices, %d in stride phases)", tried,
          sliced, phased);
}

/* The environment is read when a device opens: good values become its
 * settings, a bad one refuses the device with the variable and the value. */
/* A fused ReLU (ops/epilogue.h), per algorithm: the forward's store must
 * equal relu of the plain forward, and the backward through the epilogue
 * must equal the plain backward of dy masked on the host, bit for bit
 * (the same arithmetic in another place). dy holds NaN and infinities
 * where the mask zeroes it: none may leak. */
static void check_epilogue(clt_device *dev, case_data *d, const char *algo)
{
    set_algo(dev, algo);
    const ref_conv_shape *r = &d->r;
    size_t ny = ref_conv_y_size(r);
    clt_conv_geom g;
    REQUIRE_OK(clt_conv_geom_init(&g, r->n, r->c, r->h, r->w, r->co, r->k, r->s, r->p));
    clt_conv_plan *plan = NULL;
    REQUIRE_OK(clt_conv_plan_ensure(dev, &g, &plan));
    clt_tensor *yf = tensor(dev, 4, (int64_t[]){r->n, r->co, r->oh, r->ow}, NULL);
    clt_epilogue fwd = {.relu = 1};
    CHECK_OK(clt_tensor_fill(yf, NAN));
    CHECK_OK(clt_conv_plan_forward(dev, plan, d->tx->buf, d->tw->buf, d->tb->buf, &fwd, yf->buf));
    CHECK_OK(clt_conv_plan_forward(dev, plan, d->tx->buf, d->tw->buf, d->tb->buf, NULL, d->ty->buf));
    float *fused = download(yf), *plain = download(d->ty);
    size_t bad = 0, zeros = 0;
    for (size_t i = 0; i < ny; i++) {
        float want = plain[i] < 0.0f ? 0.0f : plain[i];
        bad += memcmp(&want, &fused[i], sizeof want) != 0;
        zeros += fused[i] == 0.0f;
    }
    CHECK(bad == 0, "fused forward " SHAPE_FMT ": %zu of %zu values differ from relu(forward)", SHAPE_ARGS(d, algo),
          bad, ny);
    CHECK(zeros > 0 && zeros < ny, "fused forward " SHAPE_FMT ": %zu of %zu zeros (the case tests no mask)",
          SHAPE_ARGS(d, algo), zeros, ny);
    /* dy: poison where the mask will zero it; the host-masked copy */
    float *dy = ref_conv_alloc(ny, sizeof *dy), *dym = ref_conv_alloc(ny, sizeof *dym);
    for (size_t i = 0; i < ny; i++) {
        dy[i] = fused[i] > 0.0f ? d->dy[i] : i % 3 == 0 ? NAN : i % 3 == 1 ? INFINITY : d->dy[i];
        dym[i] = fused[i] > 0.0f ? d->dy[i] : 0.0f;
    }
    int64_t ys[4] = {r->n, r->co, r->oh, r->ow};
    clt_tensor *tdy = tensor(dev, 4, ys, dy), *tdym = tensor(dev, 4, ys, dym);
    clt_tensor *dx2 = tensor(dev, 4, (int64_t[]){r->n, r->c, r->h, r->w}, NULL);
    clt_tensor *dw2 = tensor(dev, 4, (int64_t[]){r->co, r->c, r->k, r->k}, NULL);
    clt_tensor *db2 = tensor(dev, 1, (int64_t[]){r->co}, NULL);
    clt_epilogue bwd = {.relu = 1, .y = yf->buf};
    CHECK_OK(clt_conv_plan_backward(dev, plan, d->tx->buf, d->tw->buf, tdy->buf, &bwd, d->tdx->buf, d->tdw->buf,
                                    d->tdb->buf));
    CHECK_OK(clt_conv_plan_backward(dev, plan, d->tx->buf, d->tw->buf, tdym->buf, NULL, dx2->buf, dw2->buf,
                                    db2->buf));
    const clt_tensor *got[3] = {d->tdx, d->tdw, d->tdb}, *want[3] = {dx2, dw2, db2};
    const char *names[3] = {"dx", "dw", "db"};
    for (int k = 0; k < 3; k++) {
        float *a = download(got[k]), *b = download(want[k]);
        size_t n = (size_t)clt_tensor_numel(got[k]);
        CHECK(memcmp(a, b, n * sizeof *a) == 0, "fused backward %s " SHAPE_FMT ": differs from the masked dy's",
              names[k], SHAPE_ARGS(d, algo));
        free(a), free(b);
    }
    clt_epilogue no_y = {.relu = 1};
    EXPECT_ERR(CLT_ERR_INVALID_ARG, "output",
               clt_conv_plan_backward(dev, plan, d->tx->buf, d->tw->buf, tdy->buf, &no_y, NULL, d->tdw->buf, NULL));
    /* a residual add fuses into batch norm's forward only */
    clt_epilogue add = {.relu = 1, .add = yf->buf};
    EXPECT_ERR(CLT_ERR_INVALID_ARG, "batch norm",
               clt_conv_plan_forward(dev, plan, d->tx->buf, d->tw->buf, d->tb->buf, &add, yf->buf));
    /* A fused pooling only where clt_conv_fuses_pool says, and backward-data
     * only where the lanes copies pool (check_pool_epilogue has the
     * arithmetic). */
    clt_epilogue pooled = {.relu = 1, .y = yf->buf, .pool = CLT_EPI_POOL_AVG, .argmax = tdym->buf};
    if (!clt_conv_fuses_pool(dev, &g, CLT_EPI_POOL_AVG, 1))
        EXPECT_ERR(CLT_ERR_INTERNAL, "pooling",
                   clt_conv_plan_forward(dev, plan, d->tx->buf, d->tw->buf, d->tb->buf, &pooled, yf->buf));
    else if (!clt_conv_fuses_pool(dev, &g, CLT_EPI_POOL_AVG, 0))
        EXPECT_ERR(CLT_ERR_INTERNAL, "backward-data",
                   clt_conv_plan_backward(dev, plan, d->tx->buf, d->tw->buf, tdy->buf, &pooled, d->tdx->buf,
                                          d->tdw->buf, NULL));
    free(fused), free(plain), free(dy), free(dym);
    clt_tensor_destroy(yf), clt_tensor_destroy(tdy), clt_tensor_destroy(tdym);
    clt_tensor_destroy(dx2), clt_tensor_destroy(dw2), clt_tensor_destroy(db2);
    clt_conv_plan_destroy(plan);
}

/* A fused 2x2 pooling (ops/epilogue.h) against the separate passes
 * (convolution with its ReLU, pooling, pooling's backward, the
 * convolution's backward), bit for bit: the pooled output, dw, db and
 * (c > 1: not a first layer, where the lanes copies pool) dx. One input
 * channel gives shapes the direct kernels run, more the lanes kernels.
 * Output channel 0 has zero weights, so its windows are ties (the first
 * maximum takes the gradient); with `nans`, x holds NaN and only the
 * pooled outputs are compared (a NaN takes the window). n images: 19
 * gives two blocks of lanes, one partial. */
static void check_pool_epilogue(clt_device *dev, int n, int c, int h, int w, int kind, int relu, int nans)
{
    set_algo(dev, "lanes");
    case_data d;
    case_make(dev, &d, n, c, h, w, 5, 3, 1, 0);
    const ref_conv_shape *r = &d.r;
    clt_conv_geom g;
    REQUIRE_OK(clt_conv_geom_init(&g, r->n, r->c, r->h, r->w, r->co, r->k, r->s, r->p));
    int first = c == 1;
    if (!clt_conv_fuses_pool(dev, &g, kind, first)) {
        /* first layers' direct kernels fuse only some row lengths; the
         * lanes copies every shape these cases give them */
        CHECK(first, "n %d c %d %dx%d pool %d: the lanes copies do not fuse it, the case tests nothing", r->n, c, h,
              w, kind);
        case_free(&d);
        return;
    }
    for (int i = 0; i < r->c * r->k * r->k; i++) d.w[i] = 0.0f;
    if (nans)
        for (size_t i = 7; i < ref_conv_x_size(r); i += 41) d.x[i] = NAN;
    REQUIRE_OK(clt_tensor_upload(d.tw, d.w, (int64_t)ref_conv_w_size(r)));
    REQUIRE_OK(clt_tensor_upload(d.tx, d.x, (int64_t)ref_conv_x_size(r)));
    int ph = r->oh / 2, pw = r->ow / 2;
    int64_t np = (int64_t)r->n * r->co * ph * pw, ps[1] = {np};
    clt_pool_kind pk = kind == CLT_EPI_POOL_MAX ? CLT_POOL_MAX : CLT_POOL_AVG;
    clt_tensor *yp = tensor(dev, 1, ps, NULL), *yp2 = tensor(dev, 1, ps, NULL), *idx = tensor(dev, 1, ps, NULL);
    clt_tensor *code = tensor(dev, 1, ps, NULL);
    clt_tensor *dyp = tensor(dev, 1, ps, d.dy), *dw2 = tensor(dev, 4, (int64_t[]){r->co, r->c, r->k, r->k}, NULL);
    clt_tensor *db2 = tensor(dev, 1, (int64_t[]){r->co}, NULL);
    clt_tensor *dx2 = tensor(dev, 4, (int64_t[]){r->n, r->c, r->h, r->w}, NULL);
    cl_mem dx_sep = first ? NULL : d.tdx->buf, dx_fus = first ? NULL : dx2->buf;
    /* separate */
    clt_epilogue e = {.relu = relu, .y = d.ty->buf};
    CHECK_OK(clt_conv_forward_raw(dev, &g, d.tx->buf, d.tw->buf, d.tb->buf, &e, d.ty->buf));
    CHECK_OK(clt_pool_forward_raw(dev, pk, r->n, r->co, r->oh, r->ow, 2, 2, d.ty->buf, yp->buf, idx->buf,
                                  CLT_POOL_ARGMAX_PRIVATE)); /* as the layer */
    CHECK_OK(clt_pool_backward_raw(dev, pk, r->n, r->co, r->oh, r->ow, 2, 2, dyp->buf, idx->buf,
                                   CLT_POOL_ARGMAX_PRIVATE, d.tdy->buf));
    CHECK_OK(clt_conv_backward_raw(dev, &g, d.tx->buf, d.tw->buf, d.tdy->buf, &e, dx_sep, d.tdw->buf, d.tdb->buf));
    /* fused */
    clt_epilogue f = {.relu = relu, .y = kind == CLT_EPI_POOL_AVG ? NULL : yp2->buf, .pool = kind,
                      .argmax = code->buf};
    if (clt_epi_cells(&f)) { /* its window bytes are required */
        clt_epilogue none = f;
        none.argmax = NULL;
        EXPECT_ERR(CLT_ERR_INVALID_ARG, "window bytes",
                   clt_conv_forward_raw(dev, &g, d.tx->buf, d.tw->buf, d.tb->buf, &none, yp2->buf));
        EXPECT_ERR(CLT_ERR_INVALID_ARG, "window bytes",
                   clt_conv_backward_raw(dev, &g, d.tx->buf, d.tw->buf, dyp->buf, &none, NULL, dw2->buf, db2->buf));
    }
    CHECK_OK(clt_conv_forward_raw(dev, &g, d.tx->buf, d.tw->buf, d.tb->buf, &f, yp2->buf));
    CHECK_OK(clt_conv_backward_raw(dev, &g, d.tx->buf, d.tw->buf, dyp->buf, &f, dx_fus, dw2->buf, db2->buf));
    float *a = download(yp), *b = download(yp2);
    int bad = 0;
    for (int64_t i = 0; i < np; i++) bad += !(a[i] == b[i] || (isnan(a[i]) && isnan(b[i])));
    CHECK(bad == 0, "n %d c %d %dx%d pool %d relu %d nans %d width %d: %d of %lld pooled outputs differ fused vs separate",
          r->n, c, h, w, kind, relu, nans, dev->native_float_width, bad, (long long)np);
    free(a), free(b);
    const clt_tensor *sep[3] = {d.tdw, d.tdb, d.tdx}, *fus[3] = {dw2, db2, dx2};
    const char *names[3] = {"dw", "db", "dx"};
    for (int t = 0; t < (first ? 2 : 3) && !nans; t++) {
        a = download(sep[t]), b = download(fus[t]);
        CHECK(memcmp(a, b, sizeof(float) * (size_t)clt_tensor_numel(sep[t])) == 0,
              "n %d c %d %dx%d pool %d relu %d width %d: %s differs fused vs separate", r->n, c, h, w, kind, relu,
              dev->native_float_width, names[t]);
        free(a), free(b);
    }
    /* db alone (conv_bias_grad, from dy and the pooling's and ReLU's
     * state, the fused one bit for bit as the separate one) against db
     * beside dw (summed from the lanes copy of dy, in another order) */
    if (!first && !nans) {
        const clt_epilogue *eps[2] = {&e, &f};
        const clt_tensor *dys[2] = {d.tdy, dyp};
        float *alone[2];
        for (int t = 0; t < 2; t++) {
            CHECK_OK(clt_conv_backward_raw(dev, &g, d.tx->buf, d.tw->buf, dys[t]->buf, eps[t], NULL, NULL, dx2->buf));
            alone[t] = download(dx2);
        }
        a = download(db2);
        CHECK(memcmp(alone[0], alone[1], sizeof(float) * (size_t)r->co) == 0,
              "c %d %dx%d pool %d relu %d: db alone differs fused vs separate", c, h, w, kind, relu);
        /* the two orders' rounding, against the channel's sum of |dy|
         * (the separate pass's dy, before its ReLU): it grows with the
         * batch, where a wrong sum is off by about that sum */
        float *dyc = download(d.tdy);
        double worst = 0;
        size_t plane = (size_t)r->oh * r->ow;
        for (int o = 0; o < r->co; o++) {
            double mag = 0;
            for (int i = 0; i < r->n; i++)
                for (size_t q = 0; q < plane; q++) mag += fabs((double)dyc[((size_t)i * r->co + o) * plane + q]);
            worst = fmax(worst, fabs((double)alone[1][o] - a[o]) / (mag + 1e-30));
        }
        CHECK(worst < 1e-6, "n %d c %d %dx%d pool %d relu %d: db alone off by %g of its sum of |dy| from db beside dw",
              r->n, c, h, w, kind, relu, worst);
        free(a), free(dyc), free(alone[0]), free(alone[1]);
    }
    clt_tensor_destroy(yp), clt_tensor_destroy(yp2), clt_tensor_destroy(idx), clt_tensor_destroy(code);
    clt_tensor_destroy(dyp), clt_tensor_destroy(dw2), clt_tensor_destroy(db2), clt_tensor_destroy(dx2);
    case_free(&d);
}

static void test_epilogue(clt_device *dev)
{
    /* both vector widths (as test_direct_widths); rows of 18 (the last
     * vector slides back) and 34 */
    int keep = dev->native_float_width;
    for (int vw = 8; vw <= 16; vw += 8) {
        dev->native_float_width = vw;
        for (int relu = 0; relu < 2; relu++)
            for (int nans = 0; nans < 2; nans++)
                for (int kind = CLT_EPI_POOL_AVG; kind <= CLT_EPI_POOL_MAX; kind++) {
                    check_pool_epilogue(dev, 3, 1, 18, 20, kind, relu, nans);
                    check_pool_epilogue(dev, 3, 1, 12, 36, kind, relu, nans);
                    /* the lanes copies': odd and even sizes, a partial block
                     * of windows and one of several */
                    check_pool_epilogue(dev, 19, 4, 11, 11, kind, relu, nans);
                    check_pool_epilogue(dev, 19, 4, 14, 12, kind, relu, nans);
                    check_pool_epilogue(dev, 19, 4, 12, 21, kind, relu, nans);
                    /* 128 lanes, 28 of them padding: pixel-major rows
                     * with the gap after them, channel-major ones
                     * without (conv_lanes.c, lanes_stride) */
                    if (!nans) check_pool_epilogue(dev, 100, 4, 11, 11, kind, relu, nans);
                }
    }
    dev->native_float_width = keep;
    static const int cases[][8] = {
        {5, 1, 28, 27, 20, 3, 1, 0}, /* direct forward and backward-weights (LeNet conv1-like) */
        {2, 1, 18, 18, 5, 3, 1, 0},  /* the same where a pooling would fuse */
        {3, 20, 13, 11, 50, 5, 1, 0}, /* lanes (LeNet conv2-like) */
        {37, 5, 9, 8, 7, 1, 2, 0},   /* strided 1x1: subsampled lanes, 32 lanes */
        {9, 3, 5, 5, 6, 5, 1, 0},    /* 1x1 output: the flat copies */
        {17, 3, 6, 6, 5, 3, 1, 0},   /* 16 output pixels */
        {3, 1, 20, 18, 7, 3, 1, 1},  /* direct with a padded copy */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int *c = cases[i];
        case_data d;
        case_make(dev, &d, c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]);
        for (int a = 0; a < N_ALGOS; a++) check_epilogue(dev, &d, algos[a]);
        case_free(&d);
    }
}

static void test_settings_env(void)
{
    static const struct {
        const char *name, *value;
        int ok;
        clt_device_settings want; /* algo, budget, bwdw a x b, tune, no_fuse, no_shared_grads, tf32, winograd */
    } cases[] = {
        {"CLTRAIN_CONV_ALGO", "fast", 0, {0}},
        {"CLTRAIN_CONV_ALGO", "GEMM", 0, {0}},
        {"CLTRAIN_CONV_BUDGET", "0", 0, {0}},
        {"CLTRAIN_CONV_BUDGET", "12k", 0, {0}},
        {"CLTRAIN_CONV_BUDGET", "-5", 0, {0}},
        {"CLTRAIN_CONV_BWDW", "3x3", 0, {0}},
        {"CLTRAIN_TUNE", "2", 0, {0}},
        {"CLTRAIN_TUNE", "yes", 0, {0}},
        {"CLTRAIN_FUSE", "2", 0, {0}},
        {"CLTRAIN_CONV_ALGO", "gemm", 1, {CLT_CONV_ALGO_GEMM, 0, 0, 0, CLT_TUNE_AUTO, 0, 0, CLT_TF32_AUTO, 0}},
        {"CLTRAIN_CONV_ALGO", "implicit", 1, {CLT_CONV_ALGO_IMPLICIT, 0, 0, 0, CLT_TUNE_AUTO, 0, 0, CLT_TF32_AUTO, 0}},
        {"CLTRAIN_CONV_BUDGET", "6000", 1, {CLT_CONV_ALGO_AUTO, 6000, 0, 0, CLT_TUNE_AUTO, 0, 0, CLT_TF32_AUTO, 0}},
        {"CLTRAIN_CONV_BWDW", "4x6", 1, {CLT_CONV_ALGO_AUTO, 0, 4, 6, CLT_TUNE_AUTO, 0, 0, CLT_TF32_AUTO, 0}},
        {"CLTRAIN_CONV_ALGO", "", 1, {CLT_CONV_ALGO_AUTO, 0, 0, 0, CLT_TUNE_AUTO, 0, 0, CLT_TF32_AUTO, 0}},
        {"CLTRAIN_TUNE", "0", 1, {CLT_CONV_ALGO_AUTO, 0, 0, 0, CLT_TUNE_OFF, 0, 0, CLT_TF32_AUTO, 0}},
        {"CLTRAIN_TUNE", "1", 1, {CLT_CONV_ALGO_AUTO, 0, 0, 0, CLT_TUNE_ON, 0, 0, CLT_TF32_AUTO, 0}},
        {"CLTRAIN_TUNE", "again", 1, {CLT_CONV_ALGO_AUTO, 0, 0, 0, CLT_TUNE_AGAIN, 0, 0, CLT_TF32_AUTO, 0}},
        {"CLTRAIN_FUSE", "0", 1, {CLT_CONV_ALGO_AUTO, 0, 0, 0, CLT_TUNE_AUTO, 1, 0, CLT_TF32_AUTO, 0}},
        {"CLTRAIN_FUSE", "1", 1, {CLT_CONV_ALGO_AUTO, 0, 0, 0, CLT_TUNE_AUTO, 0, 0, CLT_TF32_AUTO, 0}},
        {"CLTRAIN_SHARED_GRADS", "0", 1, {CLT_CONV_ALGO_AUTO, 0, 0, 0, CLT_TUNE_AUTO, 0, 1, CLT_TF32_AUTO, 0}},
        {"CLTRAIN_SHARED_GRADS", "1", 1, {CLT_CONV_ALGO_AUTO, 0, 0, 0, CLT_TUNE_AUTO, 0, 0, CLT_TF32_AUTO, 0}},
        {"CLTRAIN_SHARED_GRADS", "no", 0, {0}},
        {"CLTRAIN_TF32", "0", 1, {CLT_CONV_ALGO_AUTO, 0, 0, 0, CLT_TUNE_AUTO, 0, 0, CLT_TF32_OFF, 0}},
        {"CLTRAIN_TF32", "1", 1, {CLT_CONV_ALGO_AUTO, 0, 0, 0, CLT_TUNE_AUTO, 0, 0, CLT_TF32_AUTO, 0}},
        {"CLTRAIN_TF32", "emulate", 1, {CLT_CONV_ALGO_AUTO, 0, 0, 0, CLT_TUNE_AUTO, 0, 0, CLT_TF32_EMULATE, 0}},
        {"CLTRAIN_TF32", "tf32", 0, {0}},
        {"CLTRAIN_CONV_ALGO", "winograd", 1, {CLT_CONV_ALGO_WINOGRAD, 0, 0, 0, CLT_TUNE_AUTO, 0, 0, CLT_TF32_AUTO, 0}},
        {"CLTRAIN_CONV_WINOGRAD", "4", 1,
         {CLT_CONV_ALGO_AUTO, 0, 0, 0, CLT_TUNE_AUTO, 0, 0, CLT_TF32_AUTO, CLT_WINOGRAD_F4}},
        {"CLTRAIN_CONV_WINOGRAD", "0", 1,
         {CLT_CONV_ALGO_AUTO, 0, 0, 0, CLT_TUNE_AUTO, 0, 0, CLT_TF32_AUTO, CLT_WINOGRAD_NONE}},
        {"CLTRAIN_CONV_WINOGRAD", "2", 1,
         {CLT_CONV_ALGO_AUTO, 0, 0, 0, CLT_TUNE_AUTO, 0, 0, CLT_TF32_AUTO, CLT_WINOGRAD_F2}},
        {"CLTRAIN_CONV_WINOGRAD", "1", 0, {0}},
    };
    /* each case sets one variable over the defaults: none from outside
     * (tools/gpu/check runs the suite under CLTRAIN_TF32=0) */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) unsetenv(cases[i].name);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *name = cases[i].name, *value = cases[i].value;
        setenv(name, value, 1);
        clt_device *dev = NULL;
        clt_status st = clt_device_open(0, &dev);
        unsetenv(name);
        if (!cases[i].ok) {
            CHECK(st == CLT_ERR_INVALID_ARG && dev == NULL, "%s=%s: device opened (%s)", name, value,
                  clt_status_name(st));
            CHECK(strstr(clt_last_error(), name) && strstr(clt_last_error(), value),
                  "%s=%s: detail \"%s\" names neither", name, value, clt_last_error());
            clt_device_destroy(dev);
            continue;
        }
        CHECK(st == CLT_OK, "%s=%s: %s (%s)", name, value, clt_status_name(st), clt_last_error());
        if (st != CLT_OK) continue;
        const clt_device_settings *s = clt_device_get_settings(dev), *w = &cases[i].want;
        CHECK(s->conv_algo == w->conv_algo && s->conv_budget == w->conv_budget &&
                  s->conv_bwdw_a == w->conv_bwdw_a && s->conv_bwdw_b == w->conv_bwdw_b && s->tune == w->tune &&
                  s->no_fuse == w->no_fuse && s->no_shared_grads == w->no_shared_grads && s->tf32 == w->tf32,
              "%s=%s did not become the device's setting", name, value);
        clt_device_destroy(dev);
    }
}

static void run_shapes(const op_env *e) { test_shapes(e->dev); }
static void run_models(const op_env *e) { test_models(e->dev); }
static void run_bwdw_blocks(const op_env *e) { test_bwdw_blocks(e->dev); }
static void run_lanes_configs(const op_env *e) { test_lanes_configs(e->dev); }
static void run_implicit_configs(const op_env *e) { test_implicit_configs(e->dev); }
static void run_epilogue(const op_env *e) { test_epilogue(e->dev); }
static void run_direct_widths(const op_env *e) { test_direct_widths(e->dev); }
static void run_strided_1x1(const op_env *e) { test_strided_1x1(e->dev); }

static void run_fd(const op_env *e)
{
    for (int a = 0; a < 2; a++) {
        test_fd_device(e->dev, algos[a], 1, 0);
        test_fd_device(e->dev, algos[a], 2, 1);
    }
    test_fd_device(e->dev, "winograd", 1, 0);
    test_fd_device(e->dev, "winograd", 1, 1);
}

static void run_deterministic(const op_env *e) { test_deterministic(e->dev); }
static void run_budget(const op_env *e)
{
    (void)e;
    test_budget();
}
static void run_split_k(const op_env *e)
{
    (void)e;
    test_split_k();
}
static void run_errors(const op_env *e) { test_errors(e->dev, e->dev1); }
static void run_plan(const op_env *e) { test_plan(e->dev, e->dev1); }
static void run_settings_env(const op_env *e)
{
    (void)e;
    test_settings_env();
}

static const op_test tests[] = {
    {"shapes", run_shapes},           {"models", run_models},               {"bwdw-blocks", run_bwdw_blocks},
    {"finite-differences", run_fd},   {"deterministic", run_deterministic}, {"budget", run_budget},
    {"split-k", run_split_k},         {"lanes-configs", run_lanes_configs}, {"epilogue", run_epilogue},
    {"direct-widths", run_direct_widths}, {"strided-1x1", run_strided_1x1},
    {"implicit-configs", run_implicit_configs},
    {"plan", run_plan},               {"errors", run_errors},               {"settings-env", run_settings_env},
};
OP_HARNESS_MAIN(tests)
