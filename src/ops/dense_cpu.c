/* Dense layers on CPU devices. The forward is a product of two row-major
 * matrices along their rows (x w^T: dot products, lanes summed at the
 * end); the backward products broadcast one matrix's elements onto the
 * other's row vectors (dy w and dy^T x), so every operand is read where it
 * lies. A 1x1 convolution's lanes kernels, which these layers ran before,
 * need the weights in register blocks, and that copy, every call, was most
 * of a pass for large layers (4096 -> 4096 at 32 samples on PoCL, one
 * thread, forward and backward-data); their weight gradient sums lanes
 * per weight, which measured slower still. */
#include "ops/dense_cpu.h"

#include <stdio.h>

#include "ops/conv_algo.h"
#include "runtime/launch.h"

/* Vector width and register blocks: VW the device's native float vector
 * (clt_device_vector_width); the accumulators within its vector registers
 * (32 with AVX-512, 16 below) less the loads: RA x RB dot products, RM
 * rows x NV vectors. */
typedef struct dense_cfg {
    int vw, ra, rb, rm, nv;
} dense_cfg;

static dense_cfg rule(const clt_device *dev)
{
    int w = clt_device_vector_width(dev);
    if (w == 16) return (dense_cfg){16, 4, 6, 6, 4};
    return (dense_cfg){w, 3, 4, 6, 2};
}

static void program(const dense_cfg *c, char *spec, size_t cap)
{
    snprintf(spec, cap, "dense_cpu -DVW=%d -DRA=%d -DRB=%d -DRM=%d -DNV=%d", c->vw, c->ra, c->rb, c->rm, c->nv);
}

void clt_dense_cpu_describe(const clt_device *dev, int pass, char *buf, size_t cap)
{
    dense_cfg c = rule(dev);
    if (pass == 0) snprintf(buf, cap, "vw%d ra%d rb%d", c.vw, c.ra, c.rb);
    else snprintf(buf, cap, "vw%d rm%d nv%d", c.vw, c.rm, c.nv);
}

static size_t blocks(int v, int b) { return ((size_t)v + (size_t)b - 1) / (size_t)b; }

clt_status clt_dense_cpu_forward(clt_device *dev, int n, int in, int out, cl_mem x, cl_mem w, cl_mem b,
                                 const clt_epilogue *epi, cl_mem y)
{
    dense_cfg c = rule(dev);
    char spec[96];
    program(&c, spec, sizeof spec);
    int has_bias = b != NULL, relu = clt_epi_relu(epi);
    cl_mem bias = b ? b : w; /* any valid buffer when there is none */
    size_t gx = blocks(n, c.ra);
    return clt_launch_2d(dev, spec, "dense_cpu_nt", gx, blocks(out, c.rb), clt_conv_group_x(dev, gx < 64 ? gx : 64), 1,
                         CLT_ARGS(CLT_ARG(n), CLT_ARG(out), CLT_ARG(in), CLT_ARG(x), CLT_ARG(w), CLT_ARG(bias),
                                  CLT_ARG(has_bias), CLT_ARG(relu), CLT_ARG(y)));
}

/* Rows of b per chunk of backward-data's sum (kernels/dense_cpu.cl says
 * why): sums over more than twice this many rows are split, into at most
 * as many chunks as keep the partial sums within PART_BYTES (a 25088 ->
 * 4096 layer at batch 256 would want 16 chunks of 26 MB). */
#define KC 256
#define PART_BYTES ((size_t)32 << 20)

/* The chunks of a sum over k rows whose partial sums are `each` floats,
 * and the rows per chunk in *kc. */
static int k_chunks(int k, size_t each, int *kc)
{
    size_t most = PART_BYTES / (each * sizeof(float));
    int chunks = k > 2 * KC ? (k + KC - 1) / KC : 1;
    if ((size_t)chunks > most) chunks = most > 1 ? (int)most : 1;
    *kc = (k + chunks - 1) / chunks;
    return (k + *kc - 1) / *kc;
}

/* Floats of the partial sums of a product over k rows whose result is
 * `each` floats (0 when it is not split). */
static size_t part_size(int k, size_t each)
{
    int kc, chunks = k_chunks(k, each, &kc);
    return chunks > 1 ? (size_t)chunks * each : 0;
}

/* c (m, cols) = a^T b over k rows: a (k, lda) from a_off floats, b (k,
 * cols), in chunks (k_chunks) into part at part_off when there are
 * several, then summed into out. cols_first: see the kernel. */
static clt_status rank1(clt_device *dev, const dense_cfg *c, const char *spec, int m, int cols, int k, int cols_first,
                        cl_mem a, cl_ulong a_off, int lda, cl_mem b, cl_mem out, cl_mem part, cl_ulong part_off)
{
    int kc, chunks = k_chunks(k, (size_t)m * (size_t)cols, &kc);
    cl_mem dst = chunks > 1 ? part : out;
    cl_ulong dst_off = chunks > 1 ? part_off : 0;
    size_t rows = blocks(m, c->rm), cq = blocks(cols, c->vw * c->nv) * (size_t)chunks;
    size_t g0 = cols_first ? cq : rows, g1 = cols_first ? rows : cq;
    CLT_TRY(clt_launch_2d(dev, spec, "dense_cpu_rank1", g0, g1, clt_conv_group_x(dev, g0 < 64 ? g0 : 64), 1,
                          CLT_ARGS(CLT_ARG(m), CLT_ARG(cols), CLT_ARG(k), CLT_ARG(kc), CLT_ARG(cols_first), CLT_ARG(a),
                                   CLT_ARG(a_off), CLT_ARG(lda), CLT_ARG(b), CLT_ARG(cols), CLT_ARG(dst),
                                   CLT_ARG(dst_off))));
    if (chunks == 1) return CLT_OK;
    return clt_conv_sum_chunks(dev, m * cols, chunks, part, part_off, out);
}

/* dy (n, out) through the epilogue's ReLU derivative (the separate ReLU
 * layer's backward, bit for bit) into work at off, transposed or not. */
static clt_status dy_into(clt_device *dev, const char *spec, int n, int out, cl_mem dy, const clt_epilogue *epi,
                          int transpose, cl_mem work, cl_ulong off)
{
    int relu = clt_epi_relu(epi);
    cl_mem ym = clt_epi_mask(epi, dy);
    return clt_launch_2d(dev, spec, "dense_cpu_dy", (size_t)out, blocks(n, 16), clt_conv_group_x(dev, 64), 1,
                         CLT_ARGS(CLT_ARG(n), CLT_ARG(out), CLT_ARG(dy), CLT_ARG(relu), CLT_ARG(ym),
                                  CLT_ARG(transpose), CLT_ARG(work), CLT_ARG(off)));
}

clt_status clt_dense_cpu_backward(clt_device *dev, int n, int in, int out, cl_mem x, cl_mem w, cl_mem dy,
                                  const clt_epilogue *epi, cl_mem dx, cl_mem dw, cl_mem db)
{
    CLT_TRY(clt_epi_check(epi, 1, "dense backward"));
    int relu = clt_epi_relu(epi);
    if (db) {
        clt_conv_geom g;
        CLT_TRY(clt_conv_geom_init(&g, n, in, 1, 1, out, 1, 1, 0));
        CLT_TRY(clt_conv_bias_grad(dev, &g, dy, epi, db));
    }
    if (!dx && !dw) return CLT_OK;
    dense_cfg c = rule(dev);
    char spec[96];
    program(&c, spec, sizeof spec);
    /* work buffer: dy transposed for dx, the partial sums of whichever
     * product is split (one after the other on the queue, so they share
     * the region), dy times the ReLU's derivative for dw */
    size_t elems = (size_t)n * (size_t)out, t_floats = dx ? elems : 0;
    size_t part_dx = dx ? part_size(out, (size_t)n * (size_t)in) : 0, part_dw = dw ? part_size(n, (size_t)out * (size_t)in) : 0;
    size_t part_floats = part_dx > part_dw ? part_dx : part_dw;
    size_t relu_off = t_floats + part_floats, total = relu_off + (dw && relu ? elems : 0);
    cl_mem scratch = NULL;
    if (total) CLT_TRY(clt_device_scratch(dev, total * sizeof(float), &scratch));
    if (dx) {
        CLT_TRY(dy_into(dev, spec, n, out, dy, epi, 1, scratch, 0));
        CLT_TRY(rank1(dev, &c, spec, n, in, out, 0, scratch, 0, n, w, dx, scratch, t_floats));
    }
    if (!dw) return CLT_OK;
    if (!relu) return rank1(dev, &c, spec, out, in, n, 1, dy, 0, out, x, dw, scratch, t_floats);
    CLT_TRY(dy_into(dev, spec, n, out, dy, epi, 0, scratch, relu_off));
    return rank1(dev, &c, spec, out, in, n, 1, scratch, relu_off, out, x, dw, scratch, t_floats);
}
