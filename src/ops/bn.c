/* Batch normalisation (PyTorch BatchNorm1d/2d semantics). Kernels in
 * kernels/bn.cl; the composition of the raw launchers, the
 * layout of the statistics and the numerics are described in ops/bn.h.
 *
 * Internally every launcher works on (buffer, offset) pairs so that the
 * tensor-level calls can keep their temporaries (per-plane partials, shift,
 * statistics) in one device scratch buffer; the raw launchers are the same
 * code at offset 0. */
#include "ops/bn.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/launch.h"
#include "tensor/tensor.h"
#include "runtime/queue.h"

/* How the kernels that read x are laid out (see kernels/bn.cl): units of
 * vec floats (4 when hw >= 4: the kernels with suffix 4, which take a
 * plane's last hw % 4 floats one at a time), lx lanes
 * along a plane (a power of two; 1 on CPU devices), ly rows per work-group,
 * S samples per row (about BN_PER_ITEM floats per work-item, at most
 * BN_MAX_SAMPLES: a work-item touching many samples, each a page or more
 * apart, thrashes the TLB of CPU devices), chunks = ceil(n / S) rows per
 * channel; reductions end with one work-group of `group` lanes per (sum,
 * channel). Depends only on the shape and the device's type, work-group
 * limit and compute units (ly, which does not change the sums), so a
 * device gives the same bits for the same shape every time. */
#define BN_PER_ITEM 64
#define BN_MAX_SAMPLES 16

typedef struct bn_plan {
    int n, c, hw;
    int vec, group, lx, ly, S, chunks;
} bn_plan;

static clt_status check_dims(const char *op, int n, int c, int hw, int min_n)
{
    if (n < min_n || c < 1 || hw < 1)
        return clt_fail(CLT_ERR_SHAPE, "%s: shape (n %d, c %d, hw %d) needs n >= %d, c >= 1, hw >= 1", op, n,
                        c, hw, min_n);
    /* Slack: int positions run up to hw + one lane stride in the kernels. */
    if ((int64_t)n * c * hw > INT_MAX - 4096)
        return clt_fail(CLT_ERR_UNSUPPORTED, "%s: (n %d, c %d, hw %d) has more than %d elements", op, n, c, hw,
                        INT_MAX - 4096);
    return CLT_OK;
}

/* NEED(op, NAMED(x), NAMED(y), ...): the first NULL buffer, by its name. */
typedef struct named_mem {
    cl_mem m;
    const char *name;
} named_mem;
#define NAMED(m) {(m), #m}
#define NEED(op, ...) \
    need_mems(op, (int)(sizeof((named_mem[]){__VA_ARGS__}) / sizeof(named_mem)), (named_mem[]){__VA_ARGS__})

static clt_status need_mems(const char *op, int count, const named_mem *m)
{
    for (int i = 0; i < count; i++)
        if (!m[i].m) return clt_fail(CLT_ERR_INVALID_ARG, "%s: %s buffer is NULL", op, m[i].name);
    return CLT_OK;
}

static bn_plan plan_make(const clt_device *dev, int n, int c, int hw)
{
    const clt_device_info *in = clt_device_get_info(dev);
    bn_plan pl;
    pl.n = n, pl.c = c, pl.hw = hw;
    pl.vec = hw >= 4 ? 4 : 1;
    int units = hw / pl.vec;
    int group = 64;
    while (group > 1 && in->max_work_group_size > 0 && group > in->max_work_group_size) group >>= 1;
    int lx = 1;
    /* Lanes along a plane serve GPUs (neighbouring work-items read
     * neighbouring units). A CPU device runs a work-group's lanes one after
     * the other, each reading a unit out of every lx of the plane: one
     * lane walking the plane whole streams it (ResNet-18's batch norms at
     * batch 128 on PoCL measured faster, most at 7x7 and 4x4). */
    if (in->type != CLT_DEVICE_CPU)
        while (lx < units && lx < group) lx <<= 1;
    pl.group = group;
    pl.lx = lx;
    pl.ly = group / lx;
    /* floats per work-item and sample: its units and its part of the tail */
    int per_sample = (units + lx - 1) / lx * pl.vec + (hw % pl.vec + lx - 1) / lx;
    int S = BN_PER_ITEM / per_sample;
    if (S < 1) S = 1;
    if (S > BN_MAX_SAMPLES) S = BN_MAX_SAMPLES;
    if (S > n) S = n > 0 ? n : 1;
    pl.S = S;
    pl.chunks = n > 0 ? (n + S - 1) / S : 0;
    /* One lane leaves up to 64 rows a work-group: keep at least 4 work-groups
     * per compute unit, which is what CPU runtimes share out (a small shard
     * of large planes has few rows). */
    int units_min = 4 * (in->compute_units > 0 ? in->compute_units : 1);
    while (lx == 1 && pl.ly > 1 && (int64_t)c * pl.chunks / pl.ly < units_min) pl.ly >>= 1;
    return pl;
}

/* Kernel `base` of the plan's unit width ("bn_apply" or "bn_apply4"). */
static const char *plan_kernel(const bn_plan *pl, const char *base, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s%s", base, pl->vec == 4 ? "4" : "");
    return buf;
}

/* Launches a kernel of the row layout: its own nargs arguments, then the
 * row arguments. */
static clt_status plan_launch(clt_device *dev, const bn_plan *pl, const char *base, int nargs, const clt_arg *own)
{
    enum { ROW_ARGS = 5, MAX_ARGS = 24 };
    clt_arg args[MAX_ARGS];
    if (nargs < 0 || nargs > MAX_ARGS - ROW_ARGS)
        return clt_fail(CLT_ERR_INTERNAL, "batch norm: %s takes %d arguments, more than %d", base, nargs,
                        MAX_ARGS - ROW_ARGS);
    memcpy(args, own, (size_t)nargs * sizeof *args);
    char name[64];
    args[nargs++] = CLT_ARG(pl->n);
    args[nargs++] = CLT_ARG(pl->c);
    args[nargs++] = CLT_ARG(pl->hw);
    args[nargs++] = CLT_ARG(pl->S);
    args[nargs++] = CLT_ARG(pl->chunks);
    return clt_launch_2d(dev, "bn", plan_kernel(pl, base, name, sizeof name), (size_t)pl->lx,
                         (size_t)pl->c * pl->chunks, (size_t)pl->lx, (size_t)pl->ly, nargs, args);
}

/* Floats of partials a reduction of this plan needs. */
static size_t plan_part_floats(const bn_plan *pl) { return (size_t)2 * pl->c * pl->chunks * pl->lx; }


/* Forward (bwd 0: aux = shift, sums of x - shift and its square; dy unused)
 * or backward (bwd 1: aux = mean_invstd, sums of dy and dy * xhat) channel
 * sums into out[out_off .. + 2c), through plan_part_floats partials at
 * part[part_off ..]. */
static clt_status stats_at(clt_device *dev, const bn_plan *pl, int bwd, cl_mem x, cl_mem dy, const clt_epilogue *epi,
                           cl_mem aux, size_t aux_off, cl_mem part, size_t part_off, cl_mem out, size_t out_off)
{
    int C = pl->c;
    if (pl->n == 0)
        return clt_device_zero(dev, out, out_off * sizeof(float), (size_t)2 * C * sizeof(float),
                               "batch norm statistics: clEnqueueFillBuffer");
    cl_ulong p_off = part_off, a_off = aux_off, o_off = out_off;
    clt_arg args[8];
    int k = 0, relu = clt_epi_relu(epi);
    cl_mem ym = clt_epi_mask(epi, dy);
    args[k++] = CLT_ARG(x);
    if (bwd) {
        args[k++] = CLT_ARG(dy);
        args[k++] = CLT_ARG(relu);
        args[k++] = CLT_ARG(ym);
    }
    args[k++] = CLT_ARG(aux);
    args[k++] = CLT_ARG(a_off);
    args[k++] = CLT_ARG(part);
    args[k++] = CLT_ARG(p_off);
    CLT_TRY(plan_launch(dev, pl, bwd ? "bn_bstats_part" : "bn_stats_part", k, args));
    int len = pl->chunks * pl->lx;
    return clt_launch_2d(dev, "bn", "bn_reduce_parts", (size_t)pl->group, (size_t)2 * C, (size_t)pl->group, 1,
                         CLT_ARGS(CLT_ARG(part), CLT_ARG(p_off), CLT_ARG(len), CLT_ARG(out), CLT_ARG(o_off),
                                  CLT_LOCAL((size_t)pl->group * sizeof(float))));
}

static clt_status shift_at(clt_device *dev, int c, int hw, cl_mem x, cl_mem shift, size_t shift_off)
{
    cl_ulong off = shift_off;
    return clt_launch_1d(dev, "bn", "bn_shift", (size_t)c,
                         CLT_ARGS(CLT_ARG(x), CLT_ARG(shift), CLT_ARG(off), CLT_ARG(c), CLT_ARG(hw)));
}

static clt_status check_count(const char *op, double count)
{
    if (!(count >= 2.0) || !isfinite(count))
        return clt_fail(CLT_ERR_INVALID_ARG,
                        "%s: batch norm in training needs more than 1 value per channel (count %g); "
                        "use a larger batch or inference mode",
                        op, count);
    return CLT_OK;
}

static clt_status finalize_at(clt_device *dev, int c, double count, cl_mem stats, size_t stats_off,
                              cl_mem shift, size_t shift_off, float momentum, float eps, cl_mem rm, cl_mem rv,
                              cl_mem mi, size_t mi_off)
{
    cl_ulong s_off = stats_off, sh_off = shift_off, m_off = mi_off;
    int update = rm != NULL;
    cl_mem rm_arg = update ? rm : mi, rv_arg = update ? rv : mi; /* not read without update */
    float inv_count = (float)(1.0 / count), unbias = (float)(count / (count - 1.0));
    return clt_launch_1d(dev, "bn", "bn_finalize", (size_t)c,
                         CLT_ARGS(CLT_ARG(stats), CLT_ARG(s_off), CLT_ARG(shift), CLT_ARG(sh_off),
                                  CLT_ARG(rm_arg), CLT_ARG(rv_arg), CLT_ARG(update), CLT_ARG(mi), CLT_ARG(m_off),
                                  CLT_ARG(c), CLT_ARG(inv_count), CLT_ARG(unbias), CLT_ARG(momentum),
                                  CLT_ARG(eps)));
}

static clt_status infer_stats_at(clt_device *dev, int c, cl_mem rm, cl_mem rv, float eps, cl_mem mi,
                                 size_t mi_off)
{
    cl_ulong m_off = mi_off;
    return clt_launch_1d(dev, "bn", "bn_infer_stats", (size_t)c,
                         CLT_ARGS(CLT_ARG(rm), CLT_ARG(rv), CLT_ARG(mi), CLT_ARG(m_off), CLT_ARG(c),
                                  CLT_ARG(eps)));
}

static clt_status apply_at(clt_device *dev, int n, int c, int hw, cl_mem x, cl_mem mi, size_t mi_off,
                           cl_mem gamma, cl_mem beta, const clt_epilogue *epi, cl_mem y)
{
    if (n == 0) return CLT_OK;
    bn_plan pl = plan_make(dev, n, c, hw);
    int has_g = gamma != NULL, has_b = beta != NULL, has_add = epi && epi->add, relu = clt_epi_relu(epi);
    cl_mem g = has_g ? gamma : mi, b = has_b ? beta : mi, add = has_add ? epi->add : x; /* not read when absent */
    cl_ulong m_off = mi_off;
    const clt_arg args[] = {CLT_ARG(x), CLT_ARG(mi),    CLT_ARG(m_off),   CLT_ARG(g),    CLT_ARG(has_g), CLT_ARG(b),
                            CLT_ARG(has_b), CLT_ARG(add), CLT_ARG(has_add), CLT_ARG(relu), CLT_ARG(y)};
    return plan_launch(dev, &pl, "bn_apply", (int)(sizeof args / sizeof *args), args);
}

static clt_status backward_apply_at(clt_device *dev, int n, int c, int hw, cl_mem x, cl_mem dy,
                                    const clt_epilogue *epi, cl_mem mi, size_t mi_off, cl_mem gamma, cl_mem bstats,
                                    size_t bs_off, double count, cl_mem dx)
{
    if (n == 0) return CLT_OK;
    bn_plan pl = plan_make(dev, n, c, hw);
    int has_g = gamma != NULL, relu = clt_epi_relu(epi);
    cl_mem g = has_g ? gamma : mi, ym = clt_epi_mask(epi, dy);
    cl_ulong m_off = mi_off, b_off = bs_off;
    float inv_count = (float)(1.0 / count);
    const clt_arg args[] = {CLT_ARG(x),     CLT_ARG(dy),    CLT_ARG(relu),   CLT_ARG(ym),    CLT_ARG(mi),
                            CLT_ARG(m_off), CLT_ARG(g),     CLT_ARG(has_g),  CLT_ARG(bstats), CLT_ARG(b_off),
                            CLT_ARG(inv_count), CLT_ARG(dx)};
    return plan_launch(dev, &pl, "bn_backward_apply", (int)(sizeof args / sizeof *args), args);
}

static clt_status backward_infer_at(clt_device *dev, int n, int c, int hw, cl_mem dy, const clt_epilogue *epi,
                                    cl_mem mi, size_t mi_off, cl_mem gamma, cl_mem dx)
{
    if (n == 0) return CLT_OK;
    bn_plan pl = plan_make(dev, n, c, hw);
    int has_g = gamma != NULL, relu = clt_epi_relu(epi);
    cl_mem g = has_g ? gamma : mi, ym = clt_epi_mask(epi, dy);
    cl_ulong m_off = mi_off;
    const clt_arg args[] = {CLT_ARG(dy),    CLT_ARG(relu), CLT_ARG(ym),    CLT_ARG(mi),
                            CLT_ARG(m_off), CLT_ARG(g),    CLT_ARG(has_g), CLT_ARG(dx)};
    return plan_launch(dev, &pl, "bn_backward_infer", (int)(sizeof args / sizeof *args), args);
}

/* ---- raw launchers ---- */

clt_status clt_bn_shift_raw(clt_device *dev, int n, int c, int hw, cl_mem x, cl_mem shift)
{
    const char *op = "clt_bn_shift_raw";
    CLT_TRY(check_dims(op, n, c, hw, 1));
    CLT_TRY(NEED(op, NAMED(x), NAMED(shift)));
    return shift_at(dev, c, hw, x, shift, 0);
}

/* The raw statistics launchers (see stats_at), partials in the scratch buffer. */
static clt_status stats_raw(clt_device *dev, int n, int c, int hw, int bwd, cl_mem x, cl_mem dy,
                            const clt_epilogue *epi, cl_mem aux, cl_mem out)
{
    bn_plan pl = plan_make(dev, n, c, hw);
    cl_mem part = NULL;
    if (n > 0) CLT_TRY(clt_device_scratch(dev, plan_part_floats(&pl) * sizeof(float), &part));
    return stats_at(dev, &pl, bwd, x, dy, epi, aux, 0, part, 0, out, 0);
}

clt_status clt_bn_stats_raw(clt_device *dev, int n, int c, int hw, cl_mem x, cl_mem shift, cl_mem stats)
{
    const char *op = "clt_bn_stats_raw";
    CLT_TRY(check_dims(op, n, c, hw, 0));
    CLT_TRY(NEED(op, NAMED(stats)));
    if (n > 0) CLT_TRY(NEED(op, NAMED(x), NAMED(shift)));
    return stats_raw(dev, n, c, hw, 0, x, NULL, NULL, shift, stats);
}

clt_status clt_bn_finalize_raw(clt_device *dev, int c, double count, cl_mem stats, cl_mem shift,
                               float momentum, float eps, cl_mem running_mean, cl_mem running_var,
                               cl_mem mean_invstd)
{
    const char *op = "clt_bn_finalize_raw";
    CLT_TRY(check_dims(op, 1, c, 1, 1));
    CLT_TRY(check_count(op, count));
    CLT_TRY(NEED(op, NAMED(stats), NAMED(shift), NAMED(mean_invstd)));
    if (!running_mean != !running_var)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: running_mean and running_var must both be given or both NULL", op);
    if (!(eps > 0.0f) || !(momentum >= 0.0f && momentum <= 1.0f))
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: eps %g must be > 0 and momentum %g in [0, 1]", op, (double)eps,
                        (double)momentum);
    return finalize_at(dev, c, count, stats, 0, shift, 0, momentum, eps, running_mean, running_var, mean_invstd, 0);
}

clt_status clt_bn_apply_raw(clt_device *dev, int n, int c, int hw, cl_mem x, cl_mem mean_invstd,
                            cl_mem gamma, cl_mem beta, const clt_epilogue *epi, cl_mem y)
{
    const char *op = "clt_bn_apply_raw";
    CLT_TRY(check_dims(op, n, c, hw, 0));
    if (n == 0) return CLT_OK;
    CLT_TRY(NEED(op, NAMED(x), NAMED(mean_invstd), NAMED(y)));
    return apply_at(dev, n, c, hw, x, mean_invstd, 0, gamma, beta, epi, y);
}

clt_status clt_bn_infer_stats_raw(clt_device *dev, int c, cl_mem running_mean, cl_mem running_var,
                                  float eps, cl_mem mean_invstd)
{
    const char *op = "clt_bn_infer_stats_raw";
    CLT_TRY(check_dims(op, 1, c, 1, 1));
    CLT_TRY(NEED(op, NAMED(running_mean), NAMED(running_var), NAMED(mean_invstd)));
    if (!(eps > 0.0f)) return clt_fail(CLT_ERR_INVALID_ARG, "%s: eps %g must be > 0", op, (double)eps);
    return infer_stats_at(dev, c, running_mean, running_var, eps, mean_invstd, 0);
}

clt_status clt_bn_infer_raw(clt_device *dev, int n, int c, int hw, cl_mem x, cl_mem running_mean,
                            cl_mem running_var, float eps, cl_mem gamma, cl_mem beta, cl_mem mean_invstd,
                            const clt_epilogue *epi, cl_mem y)
{
    CLT_TRY(check_dims("clt_bn_infer_raw", n, c, hw, 0));
    CLT_TRY(clt_bn_infer_stats_raw(dev, c, running_mean, running_var, eps, mean_invstd));
    return clt_bn_apply_raw(dev, n, c, hw, x, mean_invstd, gamma, beta, epi, y);
}

clt_status clt_bn_backward_stats_raw(clt_device *dev, int n, int c, int hw, cl_mem x, cl_mem dy,
                                     const clt_epilogue *epi, cl_mem mean_invstd, cl_mem bstats)
{
    const char *op = "clt_bn_backward_stats_raw";
    CLT_TRY(check_dims(op, n, c, hw, 0));
    CLT_TRY(NEED(op, NAMED(bstats)));
    if (n > 0) CLT_TRY(NEED(op, NAMED(x), NAMED(dy), NAMED(mean_invstd)));
    CLT_TRY(clt_epi_check(epi, 1, op));
    return stats_raw(dev, n, c, hw, 1, x, dy, epi, mean_invstd, bstats);
}

clt_status clt_bn_backward_apply_raw(clt_device *dev, int n, int c, int hw, cl_mem x, cl_mem dy,
                                     const clt_epilogue *epi, cl_mem mean_invstd, cl_mem gamma, cl_mem bstats,
                                     double count, cl_mem dx)
{
    const char *op = "clt_bn_backward_apply_raw";
    CLT_TRY(check_dims(op, n, c, hw, 0));
    CLT_TRY(check_count(op, count));
    if (n == 0) return CLT_OK;
    CLT_TRY(NEED(op, NAMED(x), NAMED(dy), NAMED(mean_invstd), NAMED(bstats), NAMED(dx)));
    CLT_TRY(clt_epi_check(epi, 1, op));
    return backward_apply_at(dev, n, c, hw, x, dy, epi, mean_invstd, 0, gamma, bstats, 0, count, dx);
}

clt_status clt_bn_backward_infer_raw(clt_device *dev, int n, int c, int hw, cl_mem dy, const clt_epilogue *epi,
                                     cl_mem mean_invstd, cl_mem gamma, cl_mem dx)
{
    const char *op = "clt_bn_backward_infer_raw";
    CLT_TRY(check_dims(op, n, c, hw, 0));
    if (n == 0) return CLT_OK;
    CLT_TRY(NEED(op, NAMED(dy), NAMED(mean_invstd), NAMED(dx)));
    CLT_TRY(clt_epi_check(epi, 1, op));
    return backward_infer_at(dev, n, c, hw, dy, epi, mean_invstd, 0, gamma, dx);
}

/* ---- public tensor API ---- */

/* x as (n, c, hw): (n, c, h, w) or (n, c). */
static clt_status bn_view(const char *op, const char *what, const clt_tensor *x, int *n, int *c, int *hw)
{
    CLT_TRY(clt_tensor_need(x, op, what));
    if (x->dtype != CLT_DTYPE_FLOAT32 || (x->ndim != 2 && x->ndim != 4)) {
        char a[160];
        return clt_fail(CLT_ERR_SHAPE, "%s: %s has shape %s%s, expected float32 (n, c, h, w) or (n, c)", op, what,
                        clt_shape_str(x->ndim, x->shape, a, sizeof a), x->dtype == CLT_DTYPE_INT32 ? " int32" : "");
    }
    if (x->numel > INT_MAX - 4096) {
        char a[160];
        return clt_fail(CLT_ERR_UNSUPPORTED, "%s: %s %s has more than %d elements", op, what,
                        clt_shape_str(x->ndim, x->shape, a, sizeof a), INT_MAX - 4096);
    }
    *n = (int)x->shape[0];
    *c = (int)x->shape[1];
    *hw = x->ndim == 4 ? (int)(x->shape[2] * x->shape[3]) : 1;
    return CLT_OK;
}

/* An optional per-channel vector of `len` floats. */
static clt_status opt_vec(const clt_tensor *t, const char *op, const char *what, int64_t len)
{
    if (!t) return CLT_OK;
    const int64_t shape[1] = {len};
    return clt_tensor_expect(t, op, what, CLT_DTYPE_FLOAT32, 1, shape);
}

static clt_status single_value(const char *op, const clt_tensor *x)
{
    char a[160];
    return clt_fail(CLT_ERR_INVALID_ARG,
                    "%s: expected more than 1 value per channel when training, got input of shape %s "
                    "(use a batch of at least 2 or inference mode)",
                    op, clt_shape_str(x->ndim, x->shape, a, sizeof a));
}

static clt_status copy_floats(clt_device *dev, cl_mem src, size_t src_off, cl_mem dst, size_t count)
{
    return clt_queue_copy(clt_device_queue(dev), src, src_off * sizeof(float), dst, 0, count * sizeof(float),
                          "batch norm backward: clEnqueueCopyBuffer");
}

clt_status clt_batchnorm_forward(const clt_tensor *x, const clt_tensor *gamma, const clt_tensor *beta,
                                 clt_tensor *running_mean, clt_tensor *running_var, int training,
                                 clt_tensor *save, clt_tensor *y)
{
    const char *op = "clt_batchnorm_forward";
    int n = 0, c = 0, hw = 0;
    CLT_TRY(bn_view(op, "x", x, &n, &c, &hw));
    CLT_TRY(opt_vec(gamma, op, "gamma", c));
    CLT_TRY(opt_vec(beta, op, "beta", c));
    if (!training) {
        CLT_TRY(clt_tensor_need(running_mean, op, "running_mean (needed in inference mode)"));
        CLT_TRY(clt_tensor_need(running_var, op, "running_var (needed in inference mode)"));
    } else if (!running_mean != !running_var) {
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: running_mean and running_var must both be given or both NULL", op);
    }
    CLT_TRY(opt_vec(running_mean, op, "running_mean", c));
    CLT_TRY(opt_vec(running_var, op, "running_var", c));
    CLT_TRY(opt_vec(save, op, "save", 2 * (int64_t)c));
    CLT_TRY(clt_tensor_expect(y, op, "y", CLT_DTYPE_FLOAT32, x->ndim, x->shape));
    const clt_tensor *others[] = {gamma, beta, running_mean, running_var, save, y};
    CLT_TRY(clt_tensor_same_device(op, x, 6, others));
    if (running_mean && (running_mean == running_var || running_mean == save || running_var == save))
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: running_mean, running_var and save must be distinct tensors", op);

    clt_device *dev = x->dev;
    cl_mem g = gamma ? gamma->buf : NULL, b = beta ? beta->buf : NULL;
    if (!training) {
        cl_mem mi;
        if (save) mi = save->buf;
        else CLT_TRY(clt_device_scratch(dev, (size_t)2 * c * sizeof(float), &mi));
        CLT_TRY(infer_stats_at(dev, c, running_mean->buf, running_var->buf, CLT_BN_EPS, mi, 0));
        return apply_at(dev, n, c, hw, x->buf, mi, 0, g, b, NULL, y->buf);
    }
    if ((int64_t)n * hw < 2) return single_value(op, x);
    /* Scratch: [per-plane partials | shift (c) | stats (2c) | mean_invstd (2c) without save]. */
    bn_plan pl = plan_make(dev, n, c, hw);
    size_t p_part = 0, p_shift = plan_part_floats(&pl), p_stats = p_shift + c, p_mi = p_stats + 2 * (size_t)c;
    size_t total = p_mi + (save ? 0 : 2 * (size_t)c);
    cl_mem s;
    CLT_TRY(clt_device_scratch(dev, total * sizeof(float), &s));
    cl_mem mi = save ? save->buf : s;
    size_t mi_off = save ? 0 : p_mi;
    CLT_TRY(shift_at(dev, c, hw, x->buf, s, p_shift));
    CLT_TRY(stats_at(dev, &pl, 0, x->buf, NULL, NULL, s, p_shift, s, p_part, s, p_stats));
    CLT_TRY(finalize_at(dev, c, (double)n * hw, s, p_stats, s, p_shift, CLT_BN_MOMENTUM, CLT_BN_EPS,
                        running_mean ? running_mean->buf : NULL, running_var ? running_var->buf : NULL, mi,
                        mi_off));
    return apply_at(dev, n, c, hw, x->buf, mi, mi_off, g, b, NULL, y->buf);
}

clt_status clt_batchnorm_backward(const clt_tensor *x, const clt_tensor *dy, const clt_tensor *gamma,
                                  const clt_tensor *save, int training, clt_tensor *dx, clt_tensor *dgamma,
                                  clt_tensor *dbeta)
{
    const char *op = "clt_batchnorm_backward";
    int n = 0, c = 0, hw = 0;
    CLT_TRY(bn_view(op, "x", x, &n, &c, &hw));
    CLT_TRY(clt_tensor_expect(dy, op, "dy", CLT_DTYPE_FLOAT32, x->ndim, x->shape));
    CLT_TRY(opt_vec(gamma, op, "gamma", c));
    CLT_TRY(clt_tensor_need(save, op, "save (the forward's mean and 1/std)"));
    CLT_TRY(opt_vec(save, op, "save", 2 * (int64_t)c));
    if (dx) CLT_TRY(clt_tensor_expect(dx, op, "dx", CLT_DTYPE_FLOAT32, x->ndim, x->shape));
    CLT_TRY(opt_vec(dgamma, op, "dgamma", c));
    CLT_TRY(opt_vec(dbeta, op, "dbeta", c));
    const clt_tensor *others[] = {dy, gamma, save, dx, dgamma, dbeta};
    CLT_TRY(clt_tensor_same_device(op, x, 6, others));
    if (dgamma && dgamma == dbeta)
        return clt_fail(CLT_ERR_INVALID_ARG, "%s: dgamma and dbeta must be distinct tensors", op);
    if (training && (int64_t)n * hw < 2) return single_value(op, x);

    clt_device *dev = x->dev;
    cl_mem g = gamma ? gamma->buf : NULL;
    int need_stats = dgamma || dbeta || (training && dx);
    size_t p_bs = 0;
    cl_mem s = NULL;
    if (need_stats) {
        /* Scratch: [per-plane partials | bstats (2c)]. */
        bn_plan pl = plan_make(dev, n, c, hw);
        p_bs = plan_part_floats(&pl);
        CLT_TRY(clt_device_scratch(dev, (p_bs + 2 * (size_t)c) * sizeof(float), &s));
        CLT_TRY(stats_at(dev, &pl, 1, x->buf, dy->buf, NULL, save->buf, 0, s, 0, s, p_bs));
        if (dbeta) CLT_TRY(copy_floats(dev, s, p_bs, dbeta->buf, (size_t)c));
        if (dgamma) CLT_TRY(copy_floats(dev, s, p_bs + c, dgamma->buf, (size_t)c));
    }
    if (!dx) return CLT_OK;
    if (training)
        return backward_apply_at(dev, n, c, hw, x->buf, dy->buf, NULL, save->buf, 0, g, s, p_bs, (double)n * hw,
                                 dx->buf);
    return backward_infer_at(dev, n, c, hw, dy->buf, NULL, save->buf, 0, g, dx->buf);
}
