/* The convolution algorithms behind one table, and the plan that holds the
 * choice (internal to src/ops/conv*.c). One file per algorithm:
 *
 *  direct  (conv_direct.c) CPU devices, stride 1 and a tiny reduction
 *          (first layers): NCHW rows as vectors, no layout copies.
 *  lanes   (conv_lanes.c) CPU devices: the batch is the SIMD lane.
 *  implicit (conv_implicit.c) GPUs: tiled products gathering their
 *          operands from the NCHW tensors (no im2col).
 *  gemm    (conv_gemm.c) GPUs and accelerators: im2col + CLBlast SGEMM.
 *  winograd (conv_winograd.c) 3x3 stride-1 layers by minimal filtering,
 *          on any device: forced (CLTRAIN_CONV_ALGO=winograd; then
 *          offered first), or where its tuner, asked to
 *          (CLTRAIN_CONV_WINOGRAD), measured it faster.
 *
 * conv.c plans through the table alone, naming no algorithm: for the
 * forward, then for the two backward passes, it offers the passes still
 * open to each algorithm in turn (clt_conv_offered, conv_algos.c: direct,
 * lanes, gemm on a lanes device; implicit, gemm otherwise); an algorithm
 * takes every open pass it supports for the shape when its work buffer
 * fits, or none. gemm takes anything (it chunks the batch to fit). Then
 * the tuners run, and dispatch, descriptions and fused poolings go through
 * the entries too. conv_common.c has what they share. Measurements behind
 * the choices: bench/README.md. */
#ifndef CLT_OPS_CONV_ALGO_H
#define CLT_OPS_CONV_ALGO_H

#include "ops/conv.h"

#define CLT_CONV_LANES 16 /* floats per vector in the copy kernels; the lanes layout's unit */
/* Work-group width of the copy and reduction kernels: fixed, so PoCL (which
 * compiles a kernel once per work-group size) builds each of them once. */
#define CLT_CONV_COPY_LX 8
/* Regions of the scratch buffer start on 256-byte boundaries. */
#define CLT_CONV_ALIGN_FLOATS 64

/* One pass's kernel configuration (the -D parameters of
 * kernels/conv_lanes.cl): vw lanes per vector (4, 8, 16); forward and
 * backward-data: a = RM channels x b = NV vectors per work-item, and px 1
 * for work-groups along the pixels (one channel block each: its weights
 * stay in cache), 0 along the channel blocks (one pixel each: its input
 * window stays in cache); backward-weights: a = WA output x b = WB input
 * channels (px 0), ck the KiB a chunk of its rows may stream (0: the
 * rule's 512; the tuner also times 256 and 128, conv_lanes.c says why),
 * ph 1 to read x in stride phases (stride 2 and k > 1 only:
 * kernels/prelude.h's lanes_phase; the tuner times both), and tr k for
 * work-items holding a whole row of k taps, 0 for one tap (k > 1 only;
 * kernels/conv_lanes.cl says why). */
typedef struct clt_conv_lanes_cfg {
    int vw, a, b, px, ck, ph, tr;
} clt_conv_lanes_cfg;

typedef struct clt_conv_lanes_params {
    clt_conv_geom gk; /* the kernels' geometry: g, or the subsampled one of a strided 1x1 */
    int subsampled;   /* gk is a strided 1x1 layer's subsampled geometry */
    int nl;           /* lanes the kernels compute: the batch padded to 16 up to 16 images, else to 32 */
    int np;           /* floats from one row of the lanes layouts to the next: nl, plus 16 where
                       * nl is a multiple of 128 (pixel-major layouts; conv_lanes.c, lanes_stride) */
    clt_conv_lanes_cfg cfg[CLT_CONV_PASSES]; /* per pass; vw 0 for passes not planned */
    int tuned[CLT_CONV_PASSES]; /* cfg came from the tuner (measured or cached) */
    int cop, cip;     /* output / input channels padded to the forward / backward-data RM */
    int bw_rows, bw_vecs, bw_vchunks, bw_chunks; /* backward-weights chunks of rows x vectors */
} clt_conv_lanes_params;

typedef struct clt_conv_direct_params {
    int vw;           /* lanes per vector (-DVW of kernels/conv_direct.cl): 16, or 8 below AVX-512 */
    int hp, wpp;      /* rows and row length of the kernels' input */
    int copy;         /* whether that input is a padded copy (else x itself) */
    size_t xp_elems;  /* floats of the copy (0 without one) */
    int rm, rows;     /* forward: output channels and rows per work-item */
    int kc;           /* forward: the kernel size a build constant (-DKW; conv_direct_tune.c) */
    int fwd_tuned;    /* kc came from the tuner (measured or cached) */
    size_t items;     /* forward work-items along dimension 1 */
    int cb, groups, chunks, imgs; /* backward weights: channels per block, groups of blocks, image chunks */
    int bwdw_tuned;   /* cb came from the tuner (measured or cached) */
    size_t part_elems; /* floats of its partial sums (0 with one chunk) */
} clt_conv_direct_params;

typedef struct clt_conv_gemm_params {
    int nb;           /* images per chunk */
    size_t col_elems; /* floats of the im2col matrix of one chunk */
    int splits;       /* slices of K = images*p in the weight-gradient GEMM */
} clt_conv_gemm_params;

/* One pass's tile (the -D parameters of kernels/conv_implicit.cl): tm x tn
 * results per work-group over tk of K per step, rm x rn per work-item; tc
 * 1 for TF32 tensor-core products (-DTC: the device's
 * clt_device_tf32_kernels), 0 for fp32 FMAs. */
typedef struct clt_conv_implicit_cfg {
    int tm, tn, rm, rn, tk, tc;
} clt_conv_implicit_cfg;

typedef struct clt_conv_implicit_params {
    clt_conv_implicit_cfg cfg[CLT_CONV_PASSES]; /* per pass; tm 0 for passes not planned */
    int slices, kslice; /* backward-weights: slices of K, K per slice */
    size_t part_elems;  /* floats of the slices' partial matrices (0 with one slice) */
} clt_conv_implicit_params;

/* One pass's Winograd configuration: wm outputs per tile side (2:
 * F(2x2,3x3), 4: F(4x4,3x3)), and chunks of ni images (16, the lanes; the
 * weight gradient's a multiple, or the batch) at cp tile positions, as
 * many as keep a chunk's transformed tensors within kib KiB (at least
 * one), or fused (kib CLT_CONV_WINOGRAD_FUSED, cp 0). */
typedef struct clt_conv_winograd_cfg {
    int wm, cp, kib;
    int ni;
} clt_conv_winograd_cfg;

typedef struct clt_conv_winograd_params {
    clt_conv_winograd_cfg cfg[CLT_CONV_PASSES]; /* per pass; wm 0 for passes not planned */
    int tuned[CLT_CONV_PASSES];                 /* cfg came from its tuner (measured or cached) */
} clt_conv_winograd_params;

typedef struct clt_conv_algo clt_conv_algo;

struct clt_conv_plan {
    clt_conv_geom g;
    const clt_device *dev;
    unsigned settings_version;            /* the device settings it was made with */
    unsigned planned;                     /* pass bits planned so far */
    const clt_conv_algo *algo[CLT_CONV_PASSES];
    clt_conv_lanes_params lanes;
    clt_conv_direct_params direct;
    clt_conv_gemm_params gemm;
    clt_conv_implicit_params implicit;
    clt_conv_winograd_params winograd;
    int gpu_tuned[CLT_CONV_PASSES]; /* the pass's algorithm and tile came from the GPU tuner */
    /* Where a tuner gave the pass to an algorithm that does not pool, the
     * one it replaced where that one pools g: it runs the pass when a
     * pooling is fused (a net decides that at creation, by the rule). */
    const clt_conv_algo *pool_algo[CLT_CONV_PASSES];
};

struct clt_conv_algo {
    const char *name;
    /* The passes among `open` (CLT_CONV_PASS bits) it can run for g. */
    unsigned (*supports)(const clt_conv_geom *g, unsigned open);
    /* Fills its parameters for `passes` into plan (plan->g set); 0 when its
     * work buffer would not fit the device. */
    int (*plan)(const clt_device *dev, clt_conv_plan *plan, unsigned passes);
    /* epi: NULL or a ReLU to fuse into the store. */
    clt_status (*forward)(clt_device *dev, const clt_conv_plan *plan, cl_mem x, cl_mem w,
                          cl_mem b, const clt_epilogue *epi, cl_mem y);
    /* Backward data and/or weights in one call (dx or dw NULL: skipped), so
     * that both share the work on dy (lanes copies it into its layout once,
     * gemm transposes it once per chunk); db too unless NULL. Where epi
     * has a ReLU, every read of dy goes through its derivative. */
    clt_status (*backward)(clt_device *dev, const clt_conv_plan *plan, cl_mem x, cl_mem w,
                           cl_mem dy, const clt_epilogue *epi, cl_mem dx, cl_mem dw, cl_mem db);
    /* How it runs a pass the plan gives it, for logs ("vw8 rm6 nv2
     * tuned"; clt_conv_plan_describe puts its name before): its
     * configuration, and "tuned" where a tuner chose it; "" for nothing
     * to tell. */
    void (*describe)(const clt_conv_plan *plan, int pass, char *buf, size_t cap);
    /* Takes, for each pass the plan gives it and it has not tuned yet, the
     * configuration the device's tuning cache keeps, else measures one
     * (the settings' CLTRAIN_TUNE permitting); NULL: nothing to tune. conv.c
     * runs the tuners in the order of clt_conv_algos after each planning. */
    clt_status (*tune)(clt_device *dev, clt_conv_plan *plan);
    /* Whether its kernels fuse a 2x2 stride-2 pooling of kind
     * CLT_EPI_POOL_* after g's convolution (ops/epilogue.h) into the
     * passes they run; NULL: never. */
    int (*pools)(const clt_conv_geom *g, int kind);
    /* 1 where a work-buffer budget in the settings may give its pooling
     * passes to the next algorithm, which pools nothing: a net deciding
     * at creation (clt_conv_fuses_pool) does not count on it then. */
    int pool_needs_room;
};

/* Every algorithm, in the order their tuners run. */
#define CLT_CONV_ALGOS 5
extern const clt_conv_algo *const clt_conv_algos[CLT_CONV_ALGOS];
/* The algorithms dev offers passes to, in turn (conv_algos.c): direct,
 * lanes, gemm on a device that runs lanes (clt_conv_uses_lanes);
 * implicit, gemm elsewhere; gemm alone where the settings force it;
 * winograd before the device's own where they force it.
 * Returns the count. */
size_t clt_conv_offered(const clt_device *dev, const clt_conv_algo *const **order);

extern const clt_conv_algo clt_conv_direct, clt_conv_lanes, clt_conv_implicit, clt_conv_gemm, clt_conv_winograd;

/* Winograd's configuration where CLTRAIN_CONV_ALGO=winograd forces it
 * untuned: F(2x2,3x3) (the tighter error bound), chunks of 4 MiB, the
 * weight gradient's of 16 (each of its chunks also reads and writes dU). */
#define CLT_CONV_WINOGRAD_RULE_WM 2
#define CLT_CONV_WINOGRAD_RULE_KIB 4096
#define CLT_CONV_WINOGRAD_RULE_KIB_BWDW 16384
/* kib of the fused kernel: no chunks, each work-group's tiles transformed,
 * multiplied and transformed back in local memory (CPU devices; forward
 * and backward-data). */
#define CLT_CONV_WINOGRAD_FUSED 0
/* Gives pass of plan to winograd with tiles wm and chunks of kib KiB (or
 * fused); 0, the plan unchanged, where it cannot run the shape or its
 * work buffer (local memory, fused) does not fit. */
int clt_conv_winograd_use(const clt_device *dev, clt_conv_plan *plan, int pass, int wm, int kib);
/* A configuration as text ("f2 ck4096", "f2 fused"); its inverse, 0 for
 * text that is none. */
void clt_conv_winograd_format(const clt_conv_winograd_cfg *c, char *buf, size_t cap);
int clt_conv_winograd_parse(const char *text, clt_conv_winograd_cfg *c);
/* Its tuner (conv_winograd_tune.c), which runs after the others: each
 * pass that winograd could run, planned with lanes, implicit or gemm
 * (algorithm auto, where CLTRAIN_CONV_WINOGRAD asks) or with winograd
 * (forced), takes the choice kept for
 * the device and shape, else the fastest of that plan as tuned and
 * winograd's configurations, timed and kept (CLTRAIN_TUNE as for the
 * others: off, the rule's choice, never winograd unless forced). */
clt_status clt_conv_winograd_tune(clt_device *dev, clt_conv_plan *plan);

/* The direct kernels' tuner (conv_direct_tune.c): whether the forward's
 * program knows the kernel size, and the weight gradient's block of output
 * channels, each timed once per device and shape. */
clt_status clt_conv_direct_tune(clt_device *dev, clt_conv_plan *plan);
/* The program spec (clt_device_kernel's) of the direct forward (fwd = 1)
 * or backward-weights kernel of d, with epi's fused pooling if any. */
void clt_conv_direct_program(const clt_conv_geom *g, const clt_conv_direct_params *d, int fwd,
                             const clt_epilogue *epi, char *spec, size_t cap);
/* Backward-weights blocks of cb output channels, 1 to CLT_CONV_DIRECT_MAX_CB
 * (kernels/conv_direct.cl's MAX_CB) and at most co: the plan's split
 * redone for cb; 0, the plan unchanged, when cb is not one of them or the
 * work buffer does not fit. */
#define CLT_CONV_DIRECT_MAX_CB 3
int clt_conv_direct_use_cb(const clt_device *dev, clt_conv_plan *plan, int cb);
/* The largest block worth running for the plan's vector width (the rule's
 * block; the tuner times 1 to it): min(co, 3) at vw 16, 1 at vw 8. */
int clt_conv_direct_max_cb(const clt_conv_plan *plan);
/* The tiles the tuner times for pass of g on dev (at most max, and never
 * more than CLT_CONV_IMPLICIT_TILES; 0 when implicit cannot run g): the
 * fp32 tiles, then the TF32 ones where the device's settings and probe
 * allow them (clt_device_tf32_kernels). The rule never picks a TF32 tile:
 * only the tuner, by timing. */
#define CLT_CONV_IMPLICIT_TILES 10
int clt_conv_implicit_candidates(const clt_device *dev, const clt_conv_geom *g, int pass,
                                 clt_conv_implicit_cfg *out, int max);
/* Runs pass of plan with c (one of the candidates); 0 when c is not one or
 * its work buffer does not fit. */
int clt_conv_implicit_use(const clt_device *dev, clt_conv_plan *plan, int pass, const clt_conv_implicit_cfg *c);
/* A tile as text ("64x128x16 r4x8", "... tf32" for tc) and back (1: parsed; the caller checks
 * it is a candidate). */
void clt_conv_implicit_format(const clt_conv_implicit_cfg *c, char *buf, size_t cap);
int clt_conv_implicit_parse(const char *text, clt_conv_implicit_cfg *c);
/* The GPU tuner (conv_gpu_tune.c): on a device that does not run lanes,
 * each pass planned with implicit or gemm takes its kept choice, else the
 * fastest of implicit's tiles and (algorithm auto) gemm, timed on the real
 * shape and kept (CLTRAIN_TUNE as for lanes). */
clt_status clt_conv_gpu_tune(clt_device *dev, clt_conv_plan *plan);
/* The one notice per device that its convolutions are being tuned (conv_tune.c). */
/* A pass's tensors for the tuners, zero-filled: x, w, y (dy) and the
 * pass's output (y, dx or dw); made whole or not at all (conv_common.c). */
typedef struct clt_conv_pass_bufs {
    cl_mem x, w, y, out;
} clt_conv_pass_bufs;
clt_status clt_conv_pass_bufs_make(clt_device *dev, const clt_conv_geom *g, int pass, clt_conv_pass_bufs *b);
void clt_conv_pass_bufs_free(clt_conv_pass_bufs *b);
/* Enqueues one run of pass as plan has it on those tensors. */
clt_status clt_conv_run_pass(clt_device *dev, const clt_conv_plan *plan, int pass, const clt_conv_pass_bufs *b);
/* Times pass of each plan t[i] whose ok[i] on zeros of the real shape
 * (conv_time.c; at most CLT_CONV_TIMED_MAX), logging each as names[i];
 * one that fails to build or run is logged and dropped (ok[i] = 0), a
 * lost device ends it. *best: the fastest, -1 where none ran, the tensors
 * did not fit or an interrupt cut it short. */
#define CLT_CONV_TIMED_MAX 12
clt_status clt_conv_time_plans(clt_device *dev, int pass, const clt_conv_plan *t, int *ok, const char *const *names,
                               int n, int *best);

/* Shared by the algorithms (conv_common.c). */
static inline size_t clt_conv_round_up(size_t v, size_t m) { return (v + m - 1) / m * m; }
/* Work-group width for `blocks` items along dimension 0 (at most the device's limit). */
size_t clt_conv_group_x(const clt_device *dev, size_t blocks);
/* "fwd", "bwd-data", "bwd-weights" (tuning keys and logs). */
extern const char *const clt_conv_pass_names[CLT_CONV_PASSES];
/* The device's compute units (at least 1). */
size_t clt_conv_units(const clt_device *dev);
/* Work-items that keep every compute unit busy (16 per unit). */
size_t clt_conv_items_wanted(const clt_device *dev);
/* Slices of a product's K (k long) for `tiles` result tiles: about four
 * tiles per compute unit, each slice at least 256 long, at most 256
 * slices, at least 1 (split-K of the weight gradients). */
size_t clt_conv_k_slices(const clt_device *dev, size_t tiles, size_t k);
/* Bytes of work buffer a convolution may use on dev: the settings' budget,
 * else the device's largest allocation, at most default_cap. */
size_t clt_conv_budget(const clt_device *dev, size_t default_cap);
/* Whether a work buffer of `bytes` can exist on dev (within that budget). */
int clt_conv_fits(const clt_device *dev, size_t bytes);
/* Register block height for `ch` channels: the variant (4, 8, 10) that
 * pads the fewest channels, 8 on a tie. */
int clt_conv_pick_rm(int ch);
/* out[e] = sum over chunks of part[off + chunk*n + e], chunks in order. */
clt_status clt_conv_sum_chunks(clt_device *dev, int n, int chunks, cl_mem part, cl_ulong off,
                               cl_mem out);
/* db = sum of dy over images and pixels, a fixed order (through epi's
 * ReLU derivative; with a fused pooling dy is the pooling's, spread as its
 * backward does). */
clt_status clt_conv_bias_grad(clt_device *dev, const clt_conv_geom *g, cl_mem dy, const clt_epilogue *epi,
                              cl_mem db);

#endif
