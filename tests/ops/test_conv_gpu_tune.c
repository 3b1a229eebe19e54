/* The GPU convolution tuner (src/ops/conv_gpu_tune.c) on the first device,
 * taken for a GPU where it is a CPU (its type set in the handle, as the
 * plan reads it; so implicit builds the geometry in, as on a GPU): a plan
 * times gemm and implicit's tiles for each pass, logs one notice, keeps
 * the choices, and computes what the plain-C reference computes (so does
 * a forced implicit, weight gradient in two slices); another device object
 * reads the choices back without timing; a damaged or unknown value is
 * timed again; a forced implicit never keeps gemm, under its own key; a
 * forced gemm and CLTRAIN_TUNE=0 time nothing. TF32 tiles (in their
 * OpenCL C twin, CLTRAIN_TF32=emulate) are timed only where allowed, each
 * computes the reference within TF32's bound and differs from fp32's,
 * and their choices are kept apart from fp32's. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "ref_conv.h"
#include "tmpdir.h"
#include "runtime/device_impl.h"
#include "ops/conv_algo.h"
#include "runtime/device.h"
#include "runtime/tune_cache.h"

static char dir[256];

/* timed: the GPU tuner's timings; wino: the winograd tuner's, which runs
 * after it on this 3x3 stride-1 shape (its tests: test_conv_winograd.c) */
typedef struct log_count {
    int notices, timed, wino;
} log_count;

static void count_log(void *user, int level, const char *msg)
{
    log_count *c = user;
    if (level == 1 && strstr(msg, "tuning the convolution kernels")) c->notices++;
    if (level == 0 && strstr(msg, "tuning device") && !strstr(msg, "skipped")) {
        if (strstr(msg, "winograd")) c->wino++;
        else c->timed++;
    }
}

static clt_device *open_dev_tf32(int algo, int tune, int tf32, log_count *lc)
{
    setenv("CLTRAIN_CACHE_DIR", dir, 1);
    clt_device *dev;
    REQUIRE_OK(clt_device_open(0, &dev));
    dev->info.type = CLT_DEVICE_GPU;
    clt_device_settings s = *clt_device_get_settings(dev);
    s.conv_algo = algo;
    s.tune = tune;
    s.tf32 = tf32;
    REQUIRE_OK(clt_device_set_settings(dev, &s));
    memset(lc, 0, sizeof *lc);
    clt_device_set_log(dev, count_log, lc);
    return dev;
}

/* fp32 only: on a GPU whose TF32 probe passed, a tuned TF32 tile would
 * miss the fp32 bound these tests hold the tuner's choices to */
static clt_device *open_dev(int algo, int tune, log_count *lc)
{
    return open_dev_tf32(algo, tune, CLT_TF32_OFF, lc);
}

static clt_conv_geom geom(void)
{
    clt_conv_geom g;
    REQUIRE_OK(clt_conv_geom_init(&g, 8, 6, 9, 8, 10, 3, 1, 1)); /* K = 8*72: two weight-gradient slices */
    return g;
}

/* The tiles the tuner times per pass of geom() (every pass has the same). */
static int tiles(clt_device *dev)
{
    clt_conv_implicit_cfg cand[16];
    const clt_conv_geom g = geom();
    return clt_conv_implicit_candidates(dev, &g, CLT_CONV_FWD, cand, 16);
}

static clt_conv_plan *plan_for(clt_device *dev)
{
    clt_conv_geom g = geom();
    clt_conv_plan *plan = NULL;
    REQUIRE_OK(clt_conv_plan_ensure(dev, &g, &plan));
    return plan;
}

static int all_tuned(const clt_conv_plan *p, int want)
{
    for (int i = 0; i < CLT_CONV_PASSES; i++)
        if (p->gpu_tuned[i] != want) return 0;
    return 1;
}

static int same_choices(const clt_conv_plan *a, const clt_conv_plan *b)
{
    for (int i = 0; i < CLT_CONV_PASSES; i++) {
        if (a->algo[i] != b->algo[i]) return 0;
        if (a->algo[i] == &clt_conv_implicit &&
            memcmp(&a->implicit.cfg[i], &b->implicit.cfg[i], sizeof a->implicit.cfg[i]))
            return 0;
    }
    return 1;
}

static cl_mem buffer(clt_device *dev, size_t floats, const float *from)
{
    cl_int err;
    cl_mem m = clCreateBuffer(dev->ctx, CL_MEM_READ_WRITE, floats * sizeof(float), NULL, &err);
    REQUIRE_OK(m ? CLT_OK : CLT_ERR_OPENCL);
    if (from)
        REQUIRE_OK(clEnqueueWriteBuffer(dev->queue, m, CL_TRUE, 0, floats * sizeof(float), from, 0, NULL, NULL)
                       ? CLT_ERR_OPENCL
                       : CLT_OK);
    return m;
}

/* Reads floats of m into to and releases m. */
static void take(clt_device *dev, cl_mem m, size_t floats, float *to)
{
    cl_int err = clEnqueueReadBuffer(dev->queue, m, CL_TRUE, 0, floats * sizeof(float), to, 0, NULL, NULL);
    REQUIRE_OK(err ? CLT_ERR_OPENCL : CLT_OK);
    clReleaseMemObject(m);
}

/* y, dx and dw of plan on fixed x, w and dy against the plain-C reference,
 * within tol of the largest; returns the largest error over the largest. */
static double check_ref_tol(clt_device *dev, const clt_conv_plan *plan, const char *what, double tol)
{
    const clt_conv_geom *g = &plan->g;
    size_t nx = (size_t)g->n * g->c * g->h * g->w, nw = (size_t)g->co * g->c * g->k * g->k;
    size_t ny = (size_t)g->n * g->co * g->oh * g->ow, all = nx + nw + ny;
    float *in = malloc(all * sizeof(float)), *got = malloc(all * sizeof(float)), *want = malloc(all * sizeof(float));
    float *zero = calloc((size_t)g->co, sizeof(float));
    REQUIRE_OK(in && got && want && zero ? CLT_OK : CLT_ERR_NO_MEMORY);
    for (size_t i = 0; i < all; i++) in[i] = (float)((i * 7919) % 23) / 11.0f - 1.0f;
    cl_mem x = buffer(dev, nx, in), w = buffer(dev, nw, in + nx), dy = buffer(dev, ny, in + nx + nw);
    cl_mem y = buffer(dev, ny, NULL), dx = buffer(dev, nx, NULL), dw = buffer(dev, nw, NULL);
    REQUIRE_OK(clt_conv_plan_forward(dev, plan, x, w, NULL, NULL, y));
    REQUIRE_OK(clt_conv_plan_backward(dev, plan, x, w, dy, NULL, dx, dw, NULL));
    take(dev, y, ny, got);
    take(dev, dx, nx, got + ny);
    take(dev, dw, nw, got + ny + nx);
    clReleaseMemObject(x), clReleaseMemObject(w), clReleaseMemObject(dy);
    ref_conv_shape r;
    REQUIRE_OK(ref_conv_shape_init(&r, g->n, g->c, g->h, g->w, g->co, g->k, g->stride, g->pad) ? CLT_OK
                                                                                             : CLT_ERR_SHAPE);
    ref_conv_forward(&r, in, in + nx, zero, want);
    ref_conv_backward(&r, in, in + nx, in + nx + nw, want + ny, want + ny + nx, NULL);
    static const char *const names[3] = {"y", "dx", "dw"};
    size_t start[4] = {0, ny, ny + nx, all};
    double rel = 0;
    for (int o = 0; o < 3; o++) {
        double worst = 0, scale = 0;
        for (size_t i = start[o]; i < start[o + 1]; i++) {
            worst = fmax(worst, fabs((double)got[i] - want[i]));
            scale = fmax(scale, fabs((double)want[i]));
        }
        CHECK(worst <= tol * scale, "%s: %s differs from the reference by %g (scale %g)", what, names[o], worst,
              scale);
        rel = fmax(rel, worst / scale);
    }
    free(in), free(got), free(want), free(zero);
    return rel;
}

static void check_ref(clt_device *dev, const clt_conv_plan *plan, const char *what)
{
    check_ref_tol(dev, plan, what, 1e-4);
}

/* TF32 operands carry 11 significant bits (2^-11 relative each): the sums
 * of this shape stay well within 4e-3 of the largest result. */
#define TF32_TOL 4e-3

static void test_tune_and_reuse(void)
{
    log_count lc;
    clt_device *dev = open_dev(CLT_CONV_ALGO_AUTO, CLT_TUNE_ON, &lc);
    clt_conv_plan *tuned = plan_for(dev);
    CHECK(all_tuned(tuned, 1), "a pass was not tuned");
    /* every pass: gemm and the tiles */
    int nt = tiles(dev);
    CHECK(nt >= 5 && lc.notices == 1 && lc.timed == 3 * (1 + nt), "notices %d, timed %d (want 1, %d)", lc.notices,
          lc.timed, 3 * (1 + nt));
    /* winograd's tuner, offering F(2x2) by default, times it against the tuned choice */
    CHECK(lc.wino > 0, "winograd's tuner timed nothing");
    char desc[128];
    clt_conv_plan_describe(tuned, CLT_CONV_BWD_WEIGHTS, desc, sizeof desc);
    CHECK(strstr(desc, " tuned") != NULL, "describe: %s", desc);

    check_ref(dev, tuned, "the tuned plan");
    clt_device_destroy(dev);

    /* Another device object: the choices from the file, nothing timed. */
    dev = open_dev(CLT_CONV_ALGO_AUTO, CLT_TUNE_AUTO, &lc);
    clt_conv_plan *again = plan_for(dev);
    CHECK(all_tuned(again, 1) && same_choices(tuned, again) && lc.timed == 0 && lc.wino == 0 && lc.notices == 0,
          "the kept choices were timed again (%d, %d)", lc.timed, lc.wino);
    clt_conv_plan_destroy(again);

    /* A damaged value: timed again, and a valid one kept. */
    char key[CLT_TUNE_KEY_MAX], value[CLT_TUNE_VALUE_MAX] = "";
    const clt_conv_geom g = geom();
    snprintf(key, sizeof key, "gpu fwd n%d c%d h%d w%d co%d k%d s%d p%d", g.n, g.c, g.h, g.w, g.co, g.k, g.stride,
             g.pad);
    static const char *const bad[2] = {"implicit 64x64x16 r4x9", "implicit 64x64x16 r4x4 "}; /* no tile; no parse */
    for (int i = 0; i < 2; i++) {
        REQUIRE_OK(clt_tune_store(dev, key, bad[i]));
        again = plan_for(dev);
        CHECK(lc.timed == (1 + nt) * (i + 1) && clt_tune_lookup(dev, key, value, sizeof value) && strcmp(value, bad[i]),
              "the value \"%s\": timed %d, kept \"%s\"", bad[i], lc.timed, value);
        clt_conv_plan_destroy(again);
    }
    clt_device_destroy(dev);
    clt_conv_plan_destroy(tuned);
}

static void test_modes(void)
{
    log_count lc;
    /* A forced implicit: its own key, tiles only. */
    clt_device *dev = open_dev(CLT_CONV_ALGO_IMPLICIT, CLT_TUNE_ON, &lc);
    clt_conv_plan *plan = plan_for(dev);
    int nt = tiles(dev);
    CHECK(lc.timed == 3 * nt, "forced implicit timed %d choices (want %d)", lc.timed, 3 * nt);
    for (int p = 0; p < CLT_CONV_PASSES; p++)
        CHECK(plan->algo[p] == &clt_conv_implicit, "pass %d runs %s under a forced implicit", p, plan->algo[p]->name);
    CHECK(plan->implicit.slices == 2, "backward-weights in %d slices, expected 2", plan->implicit.slices);
    check_ref(dev, plan, "a forced implicit");
    /* gemm kept under implicit's key is refused and timed again */
    const clt_conv_geom g = geom();
    char key[CLT_TUNE_KEY_MAX];
    snprintf(key, sizeof key, "gpu fwd n%d c%d h%d w%d co%d k%d s%d p%d implicit", g.n, g.c, g.h, g.w, g.co, g.k,
             g.stride, g.pad);
    REQUIRE_OK(clt_tune_store(dev, key, "gemm"));
    clt_conv_plan_destroy(plan);
    plan = plan_for(dev);
    CHECK(lc.timed == 4 * nt && plan->algo[CLT_CONV_FWD] == &clt_conv_implicit, "gemm under implicit's key: timed %d",
          lc.timed);
    clt_conv_plan_destroy(plan);
    clt_device_destroy(dev);
    /* A forced gemm and CLTRAIN_TUNE=0: nothing to time. */
    int modes[2][2] = {{CLT_CONV_ALGO_GEMM, CLT_TUNE_ON}, {CLT_CONV_ALGO_AUTO, CLT_TUNE_OFF}};
    for (int i = 0; i < 2; i++) {
        dev = open_dev(modes[i][0], modes[i][1], &lc);
        plan = plan_for(dev);
        CHECK(lc.timed == 0 && all_tuned(plan, 0), "mode %d timed %d choices", i, lc.timed);
        clt_conv_plan_destroy(plan);
        clt_device_destroy(dev);
    }
}

/* Each TF32 tile of dev's candidates that `pick` selects, on every pass
 * with the geometry built in (as on a GPU), against the reference within
 * TF32's bound, and further from it than fp32 gets (1e-6 here). */
static void check_tf32_tiles(clt_device *dev, int (*pick)(const clt_conv_implicit_cfg *c), const char *how)
{
    clt_conv_plan *plan = plan_for(dev);
    clt_conv_implicit_cfg cand[16];
    const clt_conv_geom g = geom();
    int n = clt_conv_implicit_candidates(dev, &g, CLT_CONV_FWD, cand, 16);
    for (int c = 0; c < n; c++) {
        if (!cand[c].tc || !pick(&cand[c])) continue;
        char tile[48], what[96];
        clt_conv_implicit_format(&cand[c], tile, sizeof tile);
        snprintf(what, sizeof what, "%s %s", how, tile);
        clt_conv_implicit_cfg back;
        CHECK(clt_conv_implicit_parse(tile, &back) && !memcmp(&back, &cand[c], sizeof back), "%s: no round trip", tile);
        int ok = 1;
        for (int p = 0; p < CLT_CONV_PASSES; p++) {
            ok &= clt_conv_implicit_use(dev, plan, p, &cand[c]);
            plan->algo[p] = &clt_conv_implicit;
        }
        CHECK(ok, "%s does not fit", what);
        if (!ok) continue;
        double e = check_ref_tol(dev, plan, what, TF32_TOL);
        CHECK(e > 1e-5, "%s: error %g, as fp32's: were the operands rounded?", what, e);
    }
    clt_conv_plan_destroy(plan);
}

/* One tile whose warps hold 4 x 2 products (the kept choice below holds 2 x 2): on
 * PoCL every TF32 tile is a slow compile, and tools/ptx/check builds them all. */
static int pick_tall(const clt_conv_implicit_cfg *c) { return c->rm == 8 && c->rn == 4; }
static int pick_all(const clt_conv_implicit_cfg *c) { return c != NULL; }

static void test_tf32(void)
{
    log_count lc;
    const clt_conv_geom g = geom();
    clt_device *dev = open_dev_tf32(CLT_CONV_ALGO_IMPLICIT, CLT_TUNE_ON, CLT_TF32_OFF, &lc);
    int nt = tiles(dev);
    clt_device_destroy(dev);
    dev = open_dev_tf32(CLT_CONV_ALGO_IMPLICIT, CLT_TUNE_ON, CLT_TF32_EMULATE, &lc);
    CHECK(tiles(dev) - nt >= 4, "%d TF32 tiles offered (want at least 4)", tiles(dev) - nt);
    /* kept TF32 choices, under the key of TF32 allowed: taken without timing */
    for (int p = 0; p < CLT_CONV_PASSES; p++) {
        char key[CLT_TUNE_KEY_MAX];
        snprintf(key, sizeof key, "gpu %s n%d c%d h%d w%d co%d k%d s%d p%d implicit tf32", clt_conv_pass_names[p], g.n,
                 g.c, g.h, g.w, g.co, g.k, g.stride, g.pad);
        REQUIRE_OK(clt_tune_store(dev, key, "implicit 64x64x16 r4x4 tf32"));
    }
    clt_conv_plan *plan = plan_for(dev);
    CHECK(lc.timed == 0 && all_tuned(plan, 1), "kept TF32 choices: timed %d", lc.timed);
    for (int p = 0; p < CLT_CONV_PASSES; p++) CHECK(plan->implicit.cfg[p].tc, "pass %d took no TF32 tile", p);
    CHECK(check_ref_tol(dev, plan, "the kept TF32 choices", TF32_TOL) > 1e-5, "the TF32 choices did not round");
    clt_conv_plan_destroy(plan);
    check_tf32_tiles(dev, pick_tall, "emulated");
    clt_device_destroy(dev);
    /* fp32 (CLTRAIN_TF32=0): a TF32 tile kept under fp32's key is refused and
     * the pass timed again (the other passes keep test_modes' choices) */
    dev = open_dev_tf32(CLT_CONV_ALGO_IMPLICIT, CLT_TUNE_ON, CLT_TF32_OFF, &lc);
    char key[CLT_TUNE_KEY_MAX];
    snprintf(key, sizeof key, "gpu fwd n%d c%d h%d w%d co%d k%d s%d p%d implicit", g.n, g.c, g.h, g.w, g.co, g.k,
             g.stride, g.pad);
    REQUIRE_OK(clt_tune_store(dev, key, "implicit 64x64x16 r4x4 tf32"));
    plan = plan_for(dev);
    CHECK(lc.timed == nt && !plan->implicit.cfg[CLT_CONV_FWD].tc, "fp32 after a kept TF32 choice: timed %d (want %d)",
          lc.timed, nt);
    check_ref(dev, plan, "fp32 again");
    clt_conv_plan_destroy(plan);
    clt_device_destroy(dev);
    /* a device whose probe passed (NVIDIA, sm_80 and later): every tile with PTX mma */
    dev = open_dev_tf32(CLT_CONV_ALGO_IMPLICIT, CLT_TUNE_OFF, CLT_TF32_AUTO, &lc);
    if (clt_device_tf32(dev)) check_tf32_tiles(dev, pick_all, "mma");
    else printf("device 0 offers no TF32: its PTX tiles not run\n");
    clt_device_destroy(dev);
}

int main(void)
{
    test_need_devices(1);
    if (!tmpdir_make(dir, sizeof dir, "clt-gpu-tune")) return 1;
    test_tune_and_reuse();
    test_modes();
    test_tf32();
    CHECK(tmpdir_remove(dir), "could not remove %s", dir);
    return test_result();
}
