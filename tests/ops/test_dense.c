/* Dense (y = x w^T + b) forward and backward against the plain-C reference
 * on odd shapes and the models' (batch 256), NULL gradient outputs,
 * overwritten outputs, finite differences, and argument errors. */
#include <string.h>

#include "op_harness.h"
#include "ref_misc.h"

static uint64_t rng = 0x5eed0003;

static void check_dense(clt_device *dev, int n, int in, int out, int bias)
{
    size_t nx = (size_t)n * in, nw = (size_t)out * in, ny = (size_t)n * out;
    float *x = ref_misc_alloc(nx, 4), *w = ref_misc_alloc(nw, 4), *b = ref_misc_alloc((size_t)out, 4);
    float *dy = ref_misc_alloc(ny, 4);
    ref_misc_fill(x, nx, &rng, -1, 1);
    ref_misc_fill(w, nw, &rng, -0.5f, 0.5f);
    ref_misc_fill(b, (size_t)out, &rng, -1, 1);
    ref_misc_fill(dy, ny, &rng, -1, 1);
    float *ry = ref_misc_alloc(ny, 4), *rdx = ref_misc_alloc(nx, 4), *rdw = ref_misc_alloc(nw, 4);
    float *rdb = ref_misc_alloc((size_t)out, 4);
    ref_misc_dense_forward(x, w, bias ? b : NULL, n, in, out, ry);
    ref_misc_dense_backward(x, w, dy, n, in, out, rdx, rdw, rdb);

    int64_t xs[2] = {n, in}, ws[2] = {out, in}, ys[2] = {n, out}, bs[1] = {out};
    clt_tensor *tx = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, xs, x);
    clt_tensor *tw = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, ws, w);
    clt_tensor *tb = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, bs, b);
    clt_tensor *ty = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, ys, NULL);
    clt_tensor *tdy = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, ys, dy);
    clt_tensor *tdx = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, xs, NULL);
    clt_tensor *tdw = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, ws, NULL);
    clt_tensor *tdb = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, bs, NULL);
    /* NaN in every output: a GEMM with beta = 0 or a bias sum that read
     * its output would leave NaN behind. */
    ref_misc_poison(ty), ref_misc_poison(tdx), ref_misc_poison(tdw), ref_misc_poison(tdb);

    CHECK_OK(clt_dense_forward(tx, tw, bias ? tb : NULL, ty));
    float *y = ref_misc_download(ty);
    double e = max_rel_err(ry, y, ny);
    CHECK(e < 1e-5, "dense forward %dx%d->%d%s: rel err %g", n, in, out, bias ? " +b" : "", e);
    CHECK_OK(clt_dense_backward(tx, tw, tdy, tdx, tdw, tdb));
    float *dx = ref_misc_download(tdx), *dw = ref_misc_download(tdw), *db = ref_misc_download(tdb);
    double ex = max_rel_err(rdx, dx, nx), ew = max_rel_err(rdw, dw, nw), eb = max_rel_err(rdb, db, (size_t)out);
    CHECK(ex < 1e-5 && ew < 1e-5 && eb < 1e-5, "dense backward %dx%d->%d: rel err dx %g dw %g db %g", n, in,
          out, ex, ew, eb);

    /* NULL outputs are skipped and the others still right. */
    ref_misc_poison(tdx), ref_misc_poison(tdw), ref_misc_poison(tdb);
    CHECK_OK(clt_dense_backward(tx, tw, tdy, NULL, tdw, NULL));
    float *dw2 = ref_misc_download(tdw), *dx2 = ref_misc_download(tdx), *db2 = ref_misc_download(tdb);
    CHECK(memcmp(dw, dw2, nw * 4) == 0, "dw alone differs");
    CHECK(isnan(dx2[0]) && isnan(db2[0]), "NULL dx/db outputs were written");
    CHECK_OK(clt_dense_backward(tx, tw, tdy, NULL, NULL, tdb));
    free(db2);
    db2 = ref_misc_download(tdb);
    CHECK(memcmp(db, db2, (size_t)out * 4) == 0, "db alone differs");

    free(x), free(w), free(b), free(dy), free(ry), free(rdx), free(rdw), free(rdb);
    free(y), free(dx), free(dw), free(db), free(dw2), free(dx2), free(db2);
    clt_tensor *all[] = {tx, tw, tb, ty, tdy, tdx, tdw, tdb};
    for (size_t i = 0; i < 8; i++) clt_tensor_destroy(all[i]);
}

/* L = sum r * dense(x, w, b): every gradient element against central
 * differences of the device forward. */
static void fd_dense(clt_device *dev)
{
    enum { N = 3, IN = 4, OUT = 5 };
    float x[N * IN], w[OUT * IN], b[OUT], r[N * OUT];
    ref_misc_fill(x, N * IN, &rng, -1, 1);
    ref_misc_fill(w, OUT * IN, &rng, -1, 1);
    ref_misc_fill(b, OUT, &rng, -1, 1);
    ref_misc_fill(r, N * OUT, &rng, -1, 1);
    int64_t xs[2] = {N, IN}, ws[2] = {OUT, IN}, ys[2] = {N, OUT}, bs[1] = {OUT};
    clt_tensor *tx = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, xs, x);
    clt_tensor *tw = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, ws, w);
    clt_tensor *tb = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, bs, b);
    clt_tensor *ty = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, ys, NULL);
    clt_tensor *tr = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, ys, r);
    clt_tensor *tdx = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, xs, NULL);
    clt_tensor *tdw = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, ws, NULL);
    clt_tensor *tdb = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, bs, NULL);
    CHECK_OK(clt_dense_backward(tx, tw, tr, tdx, tdw, tdb));
    float gx[N * IN], gw[OUT * IN], gb[OUT];
    CHECK_OK(clt_tensor_download(tdx, gx, N * IN));
    CHECK_OK(clt_tensor_download(tdw, gw, OUT * IN));
    CHECK_OK(clt_tensor_download(tdb, gb, OUT));
    struct { float *v, *g; int count; clt_tensor *t; const char *name; } params[] = {
        {x, gx, N * IN, tx, "x"}, {w, gw, OUT * IN, tw, "w"}, {b, gb, OUT, tb, "b"}};
    const float eps = 1e-2f;
    for (int p = 0; p < 3; p++) {
        double worst = 0;
        for (int i = 0; i < params[p].count; i++) {
            double l[2];
            for (int side = 0; side < 2; side++) {
                float keep = params[p].v[i];
                params[p].v[i] = keep + (side ? -eps : eps);
                CHECK_OK(clt_tensor_upload(params[p].t, params[p].v, params[p].count));
                params[p].v[i] = keep;
                CHECK_OK(clt_dense_forward(tx, tw, tb, ty));
                float y[N * OUT];
                CHECK_OK(clt_tensor_download(ty, y, N * OUT));
                l[side] = 0;
                for (int j = 0; j < N * OUT; j++) l[side] += (double)r[j] * y[j];
            }
            CHECK_OK(clt_tensor_upload(params[p].t, params[p].v, params[p].count));
            double err = fabs((l[0] - l[1]) / (2.0 * eps) - params[p].g[i]);
            if (err > worst) worst = err;
        }
        CHECK(worst < 1e-4, "dense finite differences d%s: worst abs err %g", params[p].name, worst);
    }
    clt_tensor *all[] = {tx, tw, tb, ty, tr, tdx, tdw, tdb};
    for (size_t i = 0; i < 8; i++) clt_tensor_destroy(all[i]);
}

static void check_errors(const op_env *e)
{
    clt_device *dev = e->dev, *dev1 = e->dev1;
    int64_t xs[2] = {4, 5}, ws[2] = {3, 5}, wbad[2] = {3, 6}, ys[2] = {4, 3}, bs[1] = {3}, bbad[1] = {4};
    int64_t x3[3] = {4, 5, 1};
    clt_tensor *x = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, xs, NULL);
    clt_tensor *xi = ref_misc_tensor(dev, CLT_DTYPE_INT32, 2, xs, NULL);
    clt_tensor *x3d = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 3, x3, NULL);
    clt_tensor *w = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, ws, NULL);
    clt_tensor *wb = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, wbad, NULL);
    clt_tensor *y = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 2, ys, NULL);
    clt_tensor *b = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, bs, NULL);
    clt_tensor *bb = ref_misc_tensor(dev, CLT_DTYPE_FLOAT32, 1, bbad, NULL);
    clt_status s = clt_dense_forward(x, wb, b, y);
    CHECK(s == CLT_ERR_SHAPE && ref_misc_error_has("clt_dense_forward", "w", "(3, 6)"), "w in mismatch: %s %s",
          clt_status_name(s), clt_last_error());
    s = clt_dense_forward(x, w, bb, y);
    CHECK(s == CLT_ERR_SHAPE && ref_misc_error_has("b", "(4)", "(3)"), "b length: %s %s", clt_status_name(s),
          clt_last_error());
    s = clt_dense_forward(x, w, b, x);
    CHECK(s == CLT_ERR_SHAPE && ref_misc_error_has("y", "(4, 5)", "(4, 3)"), "y shape: %s %s",
          clt_status_name(s), clt_last_error());
    s = clt_dense_forward(xi, w, b, y);
    CHECK(s == CLT_ERR_SHAPE && ref_misc_error_has("x", "int32", NULL), "int32 x: %s %s", clt_status_name(s),
          clt_last_error());
    s = clt_dense_forward(x3d, w, b, y);
    CHECK(s == CLT_ERR_SHAPE && ref_misc_error_has("(4, 5, 1)", NULL, NULL), "3-D x: %s %s", clt_status_name(s),
          clt_last_error());
    s = clt_dense_forward(NULL, w, b, y);
    CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("x is NULL", NULL, NULL), "NULL x: %s", clt_last_error());
    s = clt_dense_forward(x, NULL, b, y);
    CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("w is NULL", NULL, NULL), "NULL w: %s", clt_last_error());
    s = clt_dense_forward(x, w, b, NULL);
    CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("y is NULL", NULL, NULL), "NULL y: %s", clt_last_error());
    s = clt_dense_backward(x, w, y, y, NULL, NULL);
    CHECK(s == CLT_ERR_SHAPE && ref_misc_error_has("dx", "(4, 3)", "(4, 5)"), "dx shape: %s %s",
          clt_status_name(s), clt_last_error());
    s = clt_dense_backward(x, w, y, NULL, NULL, bb);
    CHECK(s == CLT_ERR_SHAPE && ref_misc_error_has("db", NULL, NULL), "db shape: %s %s", clt_status_name(s),
          clt_last_error());
    s = clt_dense_backward(x, w, NULL, NULL, w, NULL);
    CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("dy is NULL", NULL, NULL), "NULL dy: %s",
          clt_last_error());
    if (dev1) {
        clt_tensor *w1 = ref_misc_tensor(dev1, CLT_DTYPE_FLOAT32, 2, ws, NULL);
        s = clt_dense_forward(x, w1, b, y);
        CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("different devices", NULL, NULL),
              "other device: %s %s", clt_status_name(s), clt_last_error());
        s = clt_dense_backward(x, w, y, NULL, w1, NULL);
        CHECK(s == CLT_ERR_INVALID_ARG && ref_misc_error_has("different devices", NULL, NULL),
              "backward other device: %s %s", clt_status_name(s), clt_last_error());
        clt_tensor_destroy(w1);
    }
    clt_tensor *all[] = {x, xi, x3d, w, wb, y, b, bb};
    for (size_t i = 0; i < 8; i++) clt_tensor_destroy(all[i]);
}

static void check_shapes(const op_env *e)
{
    const int shapes[][3] = {{1, 1, 1}, {3, 5, 7}, {1, 33, 9}, {17, 33, 9}, {5, 127, 65}, {6, 16, 12}, {13, 37, 50}, {40, 500, 10}, {5, 33, 1100},
                             /* batches over 512: the weight gradient's sum is split */
                             {513, 7, 5}, {1030, 33, 10}, {600, 20, 1100}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int bias = 0; bias < 2; bias++) check_dense(e->dev, shapes[i][0], shapes[i][1], shapes[i][2], bias);
}

/* Every dense layer of the builtin models at batch 256. */
static void check_models(const op_env *e)
{
    clt_op_case *mc;
    int n = op_model_cases(CLT_OP_DENSE, 256, &mc);
    for (int i = 0; i < n; i++)
        for (int bias = 0; bias < 2; bias++) check_dense(e->dev, mc[i].n, mc[i].c, mc[i].co, bias);
    CHECK(n == 3, "the models have %d dense shapes, expected LeNet's 2 and ResNet-18's", n);
    free(mc);
}

static void check_fd(const op_env *e) { fd_dense(e->dev); }

static const op_test tests[] = {
    {"shapes", check_shapes}, {"models", check_models}, {"finite-differences", check_fd}, {"errors", check_errors},
};
OP_HARNESS_MAIN(tests)
