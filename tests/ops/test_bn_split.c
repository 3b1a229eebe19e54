/* The split path of synchronised batch norm: the raw launchers on shards of
 * the batch on two devices (statistics summed on the host, a common shift,
 * an empty shard) against the whole batch through the tensor calls. */
#include <string.h>

#include "op_harness.h"
#include "ops/bn.h"
#include "ref_bn.h"
#include "ref_misc.h"
#include "tensor/tensor.h"

static uint64_t rng = 0x5eed00b8;

/* ---- the split path of synchronised batch norm ---- */

static float *dl(clt_tensor *t) { return ref_misc_download(t); }

/* The batch in up to three shards: n0 on devs[0], n1 on devs[1], and an
 * empty shard on devs[0]. common_shift 0: the running mean is the shift;
 * 1: shard 0's first elements, sent to the other devices. */
static void check_split(clt_device *dev0, clt_device *dev1, ref_bn_shape s, int n0, int common_shift)
{
    clt_device *devs[3] = {dev0, dev1 ? dev1 : dev0, dev0};
    int ns[3] = {n0, s.n - n0, 0}, hw = ref_bn_hw(s), c = s.c, nd = ref_bn_ndim(s);
    size_t nx = ref_bn_numel(s), plane = (size_t)c * hw;
    int64_t xs[4], cs[1] = {c}, ss[1] = {2 * c};
    ref_bn_dims(s, xs);
    float *x = ref_misc_alloc(nx, sizeof *x), *dy = ref_misc_alloc(nx, sizeof *dy);
    float gamma[32], beta[32], rm[32], rv[32];
    ref_bn_fill(&rng, s, 3.0f, 2.0f, (float[]){2.0f, 4.0f}, (float[]){1.0f, 5.0f},
                &(ref_bn_data){x, dy, gamma, beta, rm, rv});

    /* The whole batch on one device through the tensor calls. */
    ref_bn_tensors t;
    ref_bn_tensors_make(dev0, s, x, dy, gamma, beta, rm, rv, &t);
    CHECK_OK(clt_batchnorm_forward(t.x, t.gamma, t.beta, t.rm, t.rv, 1, t.save, t.y));
    CHECK_OK(clt_batchnorm_backward(t.x, t.dy, t.gamma, t.save, 1, t.dx, t.dgamma, t.dbeta));
    float *wy = dl(t.y), *wsave = dl(t.save), *wrm = dl(t.rm), *wrv = dl(t.rv), *wdx = dl(t.dx);
    float *wdg = dl(t.dgamma), *wdb = dl(t.dbeta);

    /* Per shard: x, dy, y, dx, gamma, beta, running stats, shift, stats,
     * mean_invstd, bstats. */
    clt_tensor *sx[3] = {0}, *sdy[3] = {0}, *sy[3] = {0}, *sdx[3] = {0}, *sg[3], *sb[3], *srm[3], *srv[3];
    clt_tensor *sshift[3], *sst[3], *smi[3], *sbs[3];
    double count = (double)s.n * hw;
    for (int k = 0; k < 3; k++) {
        int64_t shs[4] = {ns[k], xs[1], xs[2], xs[3]};
        if (ns[k]) {
            sx[k] = ref_misc_tensor(devs[k], CLT_DTYPE_FLOAT32, nd, shs, x + (k ? (size_t)n0 * plane : 0));
            sdy[k] = ref_misc_tensor(devs[k], CLT_DTYPE_FLOAT32, nd, shs, dy + (k ? (size_t)n0 * plane : 0));
            sy[k] = ref_misc_tensor(devs[k], CLT_DTYPE_FLOAT32, nd, shs, NULL);
            sdx[k] = ref_misc_tensor(devs[k], CLT_DTYPE_FLOAT32, nd, shs, NULL);
        }
        sg[k] = ref_misc_tensor(devs[k], CLT_DTYPE_FLOAT32, 1, cs, gamma);
        sb[k] = ref_misc_tensor(devs[k], CLT_DTYPE_FLOAT32, 1, cs, beta);
        srm[k] = ref_misc_tensor(devs[k], CLT_DTYPE_FLOAT32, 1, cs, rm);
        srv[k] = ref_misc_tensor(devs[k], CLT_DTYPE_FLOAT32, 1, cs, rv);
        sshift[k] = ref_misc_tensor(devs[k], CLT_DTYPE_FLOAT32, 1, cs, NULL);
        sst[k] = ref_misc_tensor(devs[k], CLT_DTYPE_FLOAT32, 1, ss, NULL);
        smi[k] = ref_misc_tensor(devs[k], CLT_DTYPE_FLOAT32, 1, ss, NULL);
        sbs[k] = ref_misc_tensor(devs[k], CLT_DTYPE_FLOAT32, 1, ss, NULL);
        ref_misc_poison(sst[k]), ref_misc_poison(sbs[k]); /* the empty shard must write zeros */
    }
    /* 1. a common shift. */
    float *shift = NULL;
    if (common_shift) {
        CHECK_OK(clt_bn_shift_raw(devs[0], ns[0], c, hw, sx[0]->buf, sshift[0]->buf));
        shift = dl(sshift[0]);
        for (int k = 1; k < 3; k++) CHECK_OK(clt_tensor_upload(sshift[k], shift, c));
    }
    /* 2. partial sums; 3. host sum in shard order, written back; 4. finalize; 5. apply. */
    float sum[64] = {0};
    for (int k = 0; k < 3; k++) {
        cl_mem sh = common_shift ? sshift[k]->buf : srm[k]->buf;
        CHECK_OK(clt_bn_stats_raw(devs[k], ns[k], c, hw, sx[k] ? sx[k]->buf : NULL, sh, sst[k]->buf));
        float *part = dl(sst[k]);
        for (int i = 0; i < 2 * c; i++) sum[i] += part[i];
        if (k == 2) {
            int zeros = 1;
            for (int i = 0; i < 2 * c; i++) zeros &= part[i] == 0.0f;
            CHECK(zeros, "empty shard: statistics are not zero");
        }
        free(part);
    }
    for (int k = 0; k < 3; k++) {
        cl_mem sh = common_shift ? sshift[k]->buf : srm[k]->buf;
        CHECK_OK(clt_tensor_upload(sst[k], sum, 2 * c));
        CHECK_OK(clt_bn_finalize_raw(devs[k], c, count, sst[k]->buf, sh, 0.1f, 1e-5f, srm[k]->buf, srv[k]->buf,
                                     smi[k]->buf));
        if (ns[k]) CHECK_OK(clt_bn_apply_raw(devs[k], ns[k], c, hw, sx[k]->buf, smi[k]->buf, sg[k]->buf, sb[k]->buf,
                                             NULL, sy[k]->buf));
    }
    /* Backward: bstats per shard, host sum, then dx. */
    float bsum[64] = {0};
    for (int k = 0; k < 3; k++) {
        CHECK_OK(clt_bn_backward_stats_raw(devs[k], ns[k], c, hw, sx[k] ? sx[k]->buf : NULL,
                                           sdy[k] ? sdy[k]->buf : NULL, NULL, smi[k]->buf, sbs[k]->buf));
        float *part = dl(sbs[k]);
        for (int i = 0; i < 2 * c; i++) bsum[i] += part[i];
        free(part);
    }
    for (int k = 0; k < 2; k++) {
        CHECK_OK(clt_tensor_upload(sbs[k], bsum, 2 * c));
        CHECK_OK(clt_bn_backward_apply_raw(devs[k], ns[k], c, hw, sx[k]->buf, sdy[k]->buf, NULL, smi[k]->buf, sg[k]->buf,
                                           sbs[k]->buf, count, sdx[k]->buf));
    }

    char what[96];
    snprintf(what, sizeof what, "split (%d, %d, %d, %d) at %d, %s shift%s", s.n, s.c, s.h, s.w, n0,
             common_shift ? "shard-0" : "running-mean", dev1 ? ", two devices" : "");
    float *m0 = dl(smi[0]), *rm0 = dl(srm[0]), *rv0 = dl(srv[0]);
    double emi = max_rel_err(wsave, m0, (size_t)2 * c), erm = max_rel_err(wrm, rm0, (size_t)c),
           erv = max_rel_err(wrv, rv0, (size_t)c);
    CHECK(emi < 1e-5 && erm < 1e-5 && erv < 1e-5, "%s: mean_invstd rel err %g, running mean %g, var %g", what, emi,
          erm, erv);
    for (int k = 1; k < 3; k++) {
        float *mk = dl(smi[k]), *rmk = dl(srm[k]), *rvk = dl(srv[k]);
        CHECK(memcmp(mk, m0, (size_t)2 * c * sizeof *mk) == 0 && memcmp(rmk, rm0, (size_t)c * sizeof *rmk) == 0 &&
                  memcmp(rvk, rv0, (size_t)c * sizeof *rvk) == 0,
              "%s: shard %d's statistics differ from shard 0's", what, k);
        free(mk), free(rmk), free(rvk);
    }
    double ey = 0, edx = 0;
    for (int k = 0; k < 2; k++) {
        size_t off = k ? (size_t)n0 * plane : 0, cnt = (size_t)ns[k] * plane;
        float *yk = dl(sy[k]), *dxk = dl(sdx[k]);
        ey = fmax(ey, max_rel_err(wy + off, yk, cnt));
        edx = fmax(edx, max_rel_err(wdx + off, dxk, cnt));
        free(yk), free(dxk);
    }
    double edb = max_rel_err(wdb, bsum, (size_t)c), edg = max_rel_err(wdg, bsum + c, (size_t)c);
    CHECK(ey < 2e-5 && edx < 1e-4, "%s: y rel err %g, dx %g against the whole batch", what, ey, edx);
    CHECK(edb < 2e-5 && edg < 2e-5, "%s: summed bstats against dbeta %g, dgamma %g", what, edb, edg);

    free(x), free(dy), free(wy), free(wsave), free(wrm), free(wrv), free(wdx), free(wdg), free(wdb);
    free(shift), free(m0), free(rm0), free(rv0);
    for (int k = 0; k < 3; k++) {
        clt_tensor_destroy(sx[k]), clt_tensor_destroy(sdy[k]), clt_tensor_destroy(sy[k]), clt_tensor_destroy(sdx[k]);
        clt_tensor_destroy(sg[k]), clt_tensor_destroy(sb[k]), clt_tensor_destroy(srm[k]), clt_tensor_destroy(srv[k]);
        clt_tensor_destroy(sshift[k]), clt_tensor_destroy(sst[k]), clt_tensor_destroy(smi[k]);
        clt_tensor_destroy(sbs[k]);
    }
    ref_bn_tensors_free(&t);
}

static void check_splits(const op_env *e)
{
    check_split(e->dev, e->dev1, (ref_bn_shape){6, 5, 9, 11}, 2, 0);
    check_split(e->dev, e->dev1, (ref_bn_shape){6, 5, 9, 11}, 5, 1);
    check_split(e->dev, e->dev1, (ref_bn_shape){40, 3, 14, 14}, 17, 1);
    check_split(e->dev, e->dev1, (ref_bn_shape){20, 12, 0, 0}, 9, 0);
}

/* Every shard on one device. */
static void check_one_device(const op_env *e) { check_split(e->dev, NULL, (ref_bn_shape){7, 4, 5, 5}, 3, 1); }

static const op_test tests[] = {
    {"two-devices", check_splits},
    {"one-device", check_one_device},
};
OP_HARNESS_MAIN(tests)
