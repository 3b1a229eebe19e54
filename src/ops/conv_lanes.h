/* What the lanes algorithm's files share, and the tests use: its kernels'
 * configuration space (conv_lanes_cfg.c), the copies into and out of its
 * layouts (conv_lanes_copy.c), its plan and passes (conv_lanes.c) and its
 * tuner (conv_tune.c). */
#ifndef CLT_OPS_CONV_LANES_H
#define CLT_OPS_CONV_LANES_H

#include "ops/conv_algo.h"

/* Floats from one row of a lanes layout to the next: pixel-major rows (the
 * forward's x and y, backward-data's dy) have the gap of lp->np,
 * channel-major ones (the weight gradient's x and dy, backward-data's dx)
 * none. */
static inline int clt_conv_lanes_row_stride(const clt_conv_lanes_params *lp, int pixel_major)
{
    return pixel_major ? lp->np : lp->nl;
}
/* The register blocks A x B of the backward-weights kernel
 * (kernels/conv_lanes.cl's WA x WB): the ones the settings may force
 * (CLTRAIN_CONV_BWDW, conv_algos.c), and the ones the rule and the tuner
 * choose among. */
#define CLT_CONV_BWDW_BLOCKS {{5, 5}, {4, 6}, {6, 4}, {5, 4}, {4, 5}, {4, 4}, {3, 4}, {4, 3}, {2, 6}, {6, 2}}
/* The weight gradient's chunk target, KiB, of the rule (cfg.ck 0), and
 * the ones the tuner times besides it (conv_lanes.c says why). */
#define CLT_CONV_LANES_CHUNK_KIB_RULE 512
#define CLT_CONV_LANES_CHUNK_KIB {256, 128}
/* Whether lp's weight gradient may read x in stride phases (cfg.ph). */
int clt_conv_lanes_can_phase(const clt_conv_lanes_params *lp);
/* Whether the kernels can run configuration c for `pass` of lp. */
int clt_conv_lanes_cfg_ok(const clt_conv_lanes_params *lp, int pass, const clt_conv_lanes_cfg *c);
/* The rule-based configuration of `pass` (CLTRAIN_TUNE=0, and the tuner's
 * first candidate). */
clt_conv_lanes_cfg clt_conv_lanes_rule(const clt_device *dev, const clt_conv_lanes_params *lp, int pass);
/* Up to max configurations to time for `pass`: the rule-based one first,
 * then the ones of least modelled cost within the register budget.
 * Returns the count. */
int clt_conv_lanes_candidates(const clt_device *dev, const clt_conv_lanes_params *lp, int pass,
                              clt_conv_lanes_cfg *out, int max);
/* Padding and chunks from lp->cfg for `passes`; 0 when the work buffers
 * would not fit the device. */
int clt_conv_lanes_derive(const clt_device *dev, clt_conv_lanes_params *lp, unsigned passes);
/* Runs one pass's kernel alone on scratch laid out as the pass lays it out
 * (contents irrelevant: for timing); *bytes is the size it needs, and with
 * scratch NULL only that is computed. */
clt_status clt_conv_lanes_time_pass(clt_device *dev, const clt_conv_lanes_params *lp, int pass, cl_mem scratch,
                                    size_t *bytes);
/* The program spec (clt_device_kernel's) that runs `pass` with c. */
void clt_conv_lanes_program(int pass, const clt_conv_lanes_cfg *c, char *spec, size_t cap);
/* Measures, or takes from the tuning cache, the configuration of each pass
 * the plan runs with lanes (conv_tune.c); a no-op when tuning is off. */
clt_status clt_conv_lanes_tune(clt_device *dev, clt_conv_plan *plan);
/* "vw8 rm6 nv2" / "vw8 wa3 wb4 ck512" (" ph": phased, " tr": rows of taps), plus " tuned" when
 * measured or cached. */
void clt_conv_lanes_describe(const clt_conv_plan *plan, int pass, char *buf, size_t cap);


/* The copies (conv_lanes_copy.c), into a lanes layout at `off` floats of
 * dst, or from one at `off` of src: pixel_major picks the forward's and
 * backward-data's layout, else the weight gradient's (channel-major). */
/* x in the layout of the kernels' geometry (a strided 1x1 layer copies
 * only the pixels it reads; the weight gradient's in stride phases where
 * its cfg.ph says). */
clt_status clt_conv_lanes_x_to(clt_device *dev, const clt_conv_plan *plan, cl_mem x, int pixel_major, cl_mem dst,
                               cl_ulong off);
/* dy through epi's ReLU derivative, or spread from its fused pooling's dy;
 * cm_off (a pooling only; else NULL): the channel-major layout at *cm_off
 * too, from the same pass. */
clt_status clt_conv_lanes_dy_to(clt_device *dev, const clt_conv_lanes_params *lp, cl_mem dy, const clt_epilogue *epi,
                                int pixel_major, cl_mem dst, cl_ulong off, const cl_ulong *cm_off);
/* The weights of the forward (fwd = 1) or backward-data in blocks of qb
 * of their first dimension, padded to qp. */
clt_status clt_conv_lanes_weights_to(clt_device *dev, const clt_conv_geom *g, int fwd, int qp, int qb, cl_mem w,
                                     cl_mem dst, cl_ulong off);
/* y (b: the bias or NULL; w: any valid buffer in place of a missing one)
 * with epi's ReLU and pooling. */
clt_status clt_conv_lanes_y_from(clt_device *dev, const clt_conv_lanes_params *lp, cl_mem src, cl_ulong off, cl_mem b,
                                 cl_mem w, const clt_epilogue *epi, cl_mem y);
/* dx from the channel-major layout. */
clt_status clt_conv_lanes_dx_from(clt_device *dev, const clt_conv_plan *plan, cl_mem src, cl_ulong off, cl_mem dx);
/* db from dy's channel-major copy. */
clt_status clt_conv_lanes_bias_from(clt_device *dev, const clt_conv_plan *plan, cl_mem src, cl_ulong off, cl_mem db);

#endif
