/* What the convolution algorithms share: work-group and block sizes, the
 * work-buffer check, and the two kernels of kernels/conv.cl (the bias
 * gradient and the fixed-order sum of per-chunk partials). */
#include <stdint.h>
#include <string.h>

#include "ops/conv_algo.h"
#include "runtime/launch.h"
#include "runtime/queue.h"

size_t clt_conv_group_x(const clt_device *dev, size_t blocks)
{
    int64_t limit = clt_device_get_info(dev)->max_work_group_size;
    size_t max = limit > 0 ? (size_t)limit : 1;
    return blocks < max ? blocks : max;
}

const char *const clt_conv_pass_names[CLT_CONV_PASSES] = {"fwd", "bwd-data", "bwd-weights"};

size_t clt_conv_units(const clt_device *dev)
{
    int units = clt_device_get_info(dev)->compute_units;
    return (size_t)(units > 0 ? units : 1);
}

size_t clt_conv_items_wanted(const clt_device *dev) { return clt_conv_units(dev) * 16; }

size_t clt_conv_k_slices(const clt_device *dev, size_t tiles, size_t k)
{
    size_t want = (4 * clt_conv_units(dev) + tiles - 1) / tiles, most = k / 256;
    if (want > most) want = most;
    if (want > 256) want = 256;
    return want < 1 ? 1 : want;
}

size_t clt_conv_budget(const clt_device *dev, size_t default_cap)
{
    size_t budget = clt_device_get_settings(dev)->conv_budget;
    int64_t most = clt_device_get_info(dev)->max_alloc_bytes;
    if (budget) return budget;
    if (most > 0 && (size_t)most < default_cap) return (size_t)most;
    return default_cap;
}

int clt_conv_fits(const clt_device *dev, size_t bytes) { return bytes <= clt_conv_budget(dev, SIZE_MAX); }

int clt_conv_pick_rm(int ch)
{
    if (ch <= 4) return 4;
    size_t c8 = clt_conv_round_up((size_t)ch, 8), c10 = clt_conv_round_up((size_t)ch, 10);
    return c10 < c8 ? 10 : 8;
}

clt_status clt_conv_sum_chunks(clt_device *dev, int n, int chunks, cl_mem part, cl_ulong off,
                               cl_mem out)
{
    return clt_launch_1d(dev, "conv", "conv_sum_chunks",
                         ((size_t)n + CLT_CONV_LANES - 1) / CLT_CONV_LANES,
                         CLT_ARGS(CLT_ARG(n), CLT_ARG(chunks), CLT_ARG(part), CLT_ARG(off),
                                  CLT_ARG(out)));
}

/* Partial sums over chunks of images (enough work-items for a GPU), then
 * a fixed-order sum of the chunks. */
clt_status clt_conv_bias_grad(clt_device *dev, const clt_conv_geom *g, cl_mem dy, const clt_epilogue *epi,
                              cl_mem db)
{
    int p = g->oh * g->ow;
    /* about 4096 pixels per work-item, at most 64 chunks */
    int imgs = (int)(((size_t)4096 + (size_t)p - 1) / (size_t)p);
    int chunks = (g->n + imgs - 1) / imgs;
    if (chunks > 64) {
        chunks = 64;
        imgs = (g->n + chunks - 1) / chunks;
        chunks = (g->n + imgs - 1) / imgs;
    }
    cl_mem part = db;
    cl_ulong off = 0;
    if (chunks > 1) CLT_TRY(clt_device_scratch(dev, (size_t)chunks * g->co * sizeof(float), &part));
    int relu = clt_epi_relu(epi), pooled_ow = epi && epi->pool ? g->ow : 0;
    int max = epi && epi->pool == CLT_EPI_POOL_MAX;
    cl_mem ym = clt_epi_mask(epi, dy), cells = clt_epi_cells(epi) ? epi->argmax : dy;
    CLT_TRY(clt_launch_2d(dev, "conv", "conv_bias_grad", (size_t)g->co, (size_t)chunks,
                          clt_conv_group_x(dev, CLT_CONV_COPY_LX), 1,
                          CLT_ARGS(CLT_ARG(g->n), CLT_ARG(g->co), CLT_ARG(p), CLT_ARG(imgs),
                                   CLT_ARG(dy), CLT_ARG(relu), CLT_ARG(ym), CLT_ARG(part), CLT_ARG(off),
                                   CLT_ARG(pooled_ow), CLT_ARG(max), CLT_ARG(cells))));
    if (chunks == 1) return CLT_OK;
    return clt_conv_sum_chunks(dev, g->co, chunks, part, off, db);
}

/* The tuners' tensors and runs (conv_algo.h). */
static clt_status zeroed_buf(clt_device *dev, size_t floats, cl_mem *out)
{
    CLT_TRY(clt_buffer_create(dev, CL_MEM_READ_WRITE, floats * sizeof(float), NULL, "clCreateBuffer (convolution tuning)",
                              out));
    return clt_device_zero(dev, *out, 0, floats * sizeof(float), "clEnqueueFillBuffer (convolution tuning)");
}

void clt_conv_pass_bufs_free(clt_conv_pass_bufs *b)
{
    cl_mem *all[] = {&b->x, &b->w, &b->y, &b->out};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        clt_buffer_release(*all[i]), *all[i] = NULL;
}

clt_status clt_conv_pass_bufs_make(clt_device *dev, const clt_conv_geom *g, int pass, clt_conv_pass_bufs *b)
{
    size_t x = (size_t)g->n * g->c * g->h * g->w, w = (size_t)g->co * g->c * g->k * g->k;
    size_t y = (size_t)g->n * g->co * g->oh * g->ow;
    size_t out = pass == CLT_CONV_FWD ? y : pass == CLT_CONV_BWD_DATA ? x : w;
    memset(b, 0, sizeof *b);
    clt_status s = zeroed_buf(dev, x, &b->x);
    if (s == CLT_OK) s = zeroed_buf(dev, w, &b->w);
    if (s == CLT_OK) s = zeroed_buf(dev, y, &b->y);
    if (s == CLT_OK) s = zeroed_buf(dev, out, &b->out);
    if (s != CLT_OK) clt_conv_pass_bufs_free(b);
    return s;
}

clt_status clt_conv_run_pass(clt_device *dev, const clt_conv_plan *plan, int pass, const clt_conv_pass_bufs *b)
{
    const clt_conv_algo *a = plan->algo[pass];
    if (pass == CLT_CONV_FWD) return a->forward(dev, plan, b->x, b->w, NULL, NULL, b->out);
    if (pass == CLT_CONV_BWD_DATA) return a->backward(dev, plan, NULL, b->w, b->y, NULL, b->out, NULL, NULL);
    return a->backward(dev, plan, b->x, NULL, b->y, NULL, NULL, b->out, NULL);
}
